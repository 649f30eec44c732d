"""Expert tensor parallelism (Megatron-Core's --expert-tensor-parallel-size): each routed expert's
weights split over ``etp`` GPUs, which compute it for the tokens their group gathers. NVIDIA's
Grok-1 run on 128 GB200 (dgxc-benchmarking v25.05: TP4, EP8, ETP4) fits only so."""

from __future__ import annotations

import pytest

from lightspeed.catalog import Catalog
from lightspeed.errors import InvalidPlanError
from lightspeed.sol import TrainingPlan, estimate_training, search_training
from lightspeed.sol.core.stacks import load_stack
from lightspeed.sol.train.search import SearchSpace, default_space
from lightspeed.sol.validation.published import PublishedRow
from lightspeed.sol.validation.rows import read_plan
from lightspeed.workload import ModelRegistry


def _grok(catalog: Catalog, models: ModelRegistry, etp: int):  # type: ignore[no-untyped-def]
    plan = TrainingPlan(tp=4, ep=8, etp=etp, dp=32, global_batch_size=256, seq_len=8192, recompute="none")
    cluster = catalog.cluster("gb200-nvl72", num_accelerators=128)
    return estimate_training(
        model=models.get("grok-1"), cluster=cluster, plan=plan, stack="megatron-core-2025"
    )


def test_a_quarter_of_the_expert_weights_per_gpu(catalog: Catalog, models: ModelRegistry) -> None:
    whole, split = _grok(catalog, models, 1), _grok(catalog, models, 4)
    # Grok-1 by hand: 64 MoE layers, 8 experts over EP8 = 1 a GPU, each 3 x 6144 x 32768 weights
    # (gated: up, gate, down) = 603,979,776; 38,654,705,664 expert weights a GPU without ETP,
    # a quarter with ETP4; 16-bit weights kept whole (ZeRO-1): 3/4 x 2 bytes x that fewer
    expert_weights = 64 * 3 * 6144 * 32768
    saved = whole.memory_bytes["weights"] - split.memory_bytes["weights"]
    assert saved == pytest.approx(0.75 * 2 * expert_weights, rel=1e-9)
    assert split.fits
    assert not whole.fits  # 263+ GiB against 185 usable: why the run used ETP
    # the same FLOPs, spread differently: HFU x step is the hardware FLOP per GPU
    assert split.hfu * split.step_time_s == pytest.approx(whole.hfu * whole.step_time_s, rel=1e-9)
    # the gathers inside each group of 4 cost time on NVLink
    assert split.breakdown_s["ep_comm"] > whole.breakdown_s["ep_comm"]


@pytest.mark.parametrize(
    ("model", "changes", "message"),
    [
        ("llama-3-8b", {"etp": 2}, "etp=2 needs a mixture-of-experts model"),
        ("grok-1", {"tp": 4, "ep": 8, "etp": 3, "dp": 32}, "etp=3 does not divide the expert size 32768"),
        ("grok-1", {"tp": 4, "ep": 8, "etp": 8, "dp": 4}, "ep x etp = 8 x 8 must divide tp x cp x dp = 16"),
    ],
)
def test_impossible_expert_splits_are_refused(
    catalog: Catalog, models: ModelRegistry, model: str, changes: dict[str, int], message: str
) -> None:
    plan = TrainingPlan(global_batch_size=256, seq_len=4096, **changes)
    cluster = catalog.cluster("gb200-nvl72", num_accelerators=plan.num_gpus)
    with pytest.raises(InvalidPlanError, match=message):
        estimate_training(model=models.get(model), cluster=cluster, plan=plan, stack="megatron-core-2025")


def test_a_row_reads_the_etp_written_beside_ep(models: ModelRegistry) -> None:
    cells = {
        "TP": "4",
        "PP": "1",
        "CP": "1",
        "EP": "8 (ETP 4)",
        "DP": "32",
        "global_batch": "256",
        "seq": "8192",
    }

    def read(ep: str) -> tuple[int, int]:
        row = PublishedRow(row_id="X", kind="train", line=2, cells={**cells, "EP": ep})
        plan, _ = read_plan(row, models.get("grok-1"), 128, load_stack("megatron-core-2025"))
        return plan.ep, plan.etp

    assert read("8 (ETP 4)") == (8, 4)
    assert read("64 (ETP 1)") == (64, 1)
    assert read("8") == (8, 1)


def test_the_search_splits_experts_over_tp_when_whole_ones_do_not_fit(
    catalog: Catalog, models: ModelRegistry
) -> None:
    """Narrowed to NVIDIA's degrees (TP4, EP8, ZeRO-1, no recompute), only the plan with the
    experts split over the TP group fits: the search must try it; a dense model never gets ETP."""
    grok = models.get("grok-1")
    assert default_space(grok, 128, 8192).expert_tensor_parallel == (False, True)
    assert default_space(models.get("llama-3-8b"), 128, 8192).expert_tensor_parallel == (False,)
    space = SearchSpace(
        tp=(4,), cp=(1,), pp=(1,), ep=(8,), vpp=(1,), micro_batch=(1,), recompute=("none",),
        zero_stage=(1,), schedules=("1f1b",), expert_tensor_parallel=(False, True),
    )  # fmt: skip
    result = search_training(
        model=grok,
        cluster=catalog.cluster("gb200-nvl72", num_accelerators=128),
        global_batch_size=256,
        seq_len=8192,
        space=space,
        stack="megatron-core-2025",
    )
    assert (result.num_plans_evaluated, result.num_plans_fitting) == (2, 1)
    best = result.plans[0]
    assert (best.plan.ep, best.plan.etp, best.fits) == (8, 4, True)
