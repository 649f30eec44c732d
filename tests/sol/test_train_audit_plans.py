"""The training audit's engine defects: a "plan that fits" that runs as written, one GPU-count rule
for plan and search, schedules that need what they use, no collective for nothing, explanations that
add up, one row per distinct plan, and the bound named by the largest share."""

from __future__ import annotations

import re

import numpy as np
import pytest

from lightspeed.catalog import Catalog
from lightspeed.errors import InvalidPlanError, PlanDoesNotFitError, PlanMismatchError
from lightspeed.jobs import run
from lightspeed.sol.config import TrainingConfig
from lightspeed.sol.core.hardware import hardware_for
from lightspeed.sol.core.stacks import load_stack
from lightspeed.sol.train import TrainingPlan, estimate_training, search_training
from lightspeed.sol.train.grid import SCHEDULE_CODES, grid_from_plans
from lightspeed.sol.train.plan import validate_plan
from lightspeed.sol.train.result import bound_sentence
from lightspeed.sol.train.schedules import activations_in_flight
from lightspeed.sol.train.search import _product, _valid, default_space
from lightspeed.sol.train.step import BREAKDOWN_PARTS
from lightspeed.workload import ModelRegistry

# --- defect 1: the suggestion runs as written ---------------------------------------------------


def _suggestion(config: TrainingConfig) -> dict[str, int | str | bool]:
    with pytest.raises(PlanDoesNotFitError) as caught:
        run(config)
    assert caught.value.nearest_plan is not None, str(caught.value)
    return caught.value.nearest_plan


def test_the_plan_that_fits_keeps_the_gpus_asked_for() -> None:
    # 4 GPUs asked: the suggestion used to be tp=2 dp=4 = 8 GPUs, refused when run with --gpus 4
    config = TrainingConfig(model="llama-3-8b", system="dgx-h100", global_batch_size=64, num_gpus=4)
    suggested = _suggestion(config)
    assert suggested["tp"] * suggested["pp"] * suggested["dp"] * suggested["cp"] == 4  # type: ignore[operator]
    estimate = run(config.changed(**suggested)).estimate  # as written: fits, or run() raised
    assert estimate.num_gpus == 4
    assert estimate.fits


def test_the_plan_that_fits_keeps_the_schedule_and_fits_under_it() -> None:
    # DualPipe holds two copies of the stage's parameters and p + 1 micro-batches: a plan sized for
    # 1F1B did not fit under it, and the tool suggested it again and again
    config = TrainingConfig(
        model="deepseek-v3", system="dgx-h800", num_gpus=2048, tp=1, pp=16, ep=64, schedule="dualpipe",
        global_batch_size=15360, seq_len=4096, precision="fp8", stack="deepseek-2024", uneven_pipeline=True,
    )  # fmt: skip
    suggested = _suggestion(config)
    assert suggested["schedule"] == "dualpipe"
    estimate = run(config.changed(**suggested)).estimate
    assert estimate.fits
    assert estimate.plan.effective_schedule == "dualpipe"
    assert estimate.num_gpus == 2048


# --- defect 2: one GPU-count rule ---------------------------------------------------------------


def test_part_of_one_node_need_not_divide_it() -> None:
    # 6 of a node's 8 GPUs: search ranks tp=2 dp=3, and plan train runs it (it said "not the 8")
    config = TrainingConfig(
        model="llama-3-8b", system="dgx-h100", global_batch_size=48, num_gpus=6, tp=2, dp=3
    )
    assert run(config).estimate.num_gpus == 6
    with pytest.raises(PlanMismatchError, match="not the 7 requested"):  # the request, not the node
        run(config.changed(num_gpus=7))


def test_plan_and_search_refuse_part_of_several_nodes_alike(catalog: Catalog, models: ModelRegistry) -> None:
    config = TrainingConfig(
        model="llama-3-8b", system="dgx-h100", global_batch_size=48, num_gpus=12, tp=2, dp=6
    )
    with pytest.raises(PlanMismatchError) as planned:
        run(config)
    with pytest.raises(PlanMismatchError) as searched:
        search_training(
            model=models.get("llama-3-8b"),
            cluster=catalog.resolve_cluster("dgx-h100", num_accelerators=12),
            global_batch_size=48,
            seq_len=4096,
            num_gpus=12,
        )
    assert "12 GPUs are not a whole number of dgx-h100 nodes (8 GPUs each)" in str(planned.value)
    assert str(planned.value) == str(searched.value)
    assert planned.value.nearest_plan == {"gpus": 16}


# --- defect 3: schedules need what they use ------------------------------------------------------

_PLAN = TrainingPlan(tp=8, pp=8, dp=1, global_batch_size=64, seq_len=4096)


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"schedule": "interleaved"}, "needs vpp=2 or more"),
        ({"schedule": "interleaved", "pp": 1, "dp": 8}, "pp=1 has one"),
        ({"schedule": "gpipe", "pp": 1, "dp": 8}, "pp=1 has one"),
        ({"schedule": "zb1p", "vpp": 2}, "zb1p would ignore them"),
        ({"schedule": "gpipe", "vpp": 2}, "gpipe would ignore them"),
        ({"schedule": "dualpipe", "vpp": 2}, "dualpipe would ignore them"),
    ],
)
def test_a_schedule_is_refused_without_what_it_orders(
    models: ModelRegistry, changes: dict[str, object], words: str
) -> None:
    with pytest.raises(InvalidPlanError, match=words):
        validate_plan(_PLAN.with_changes(**changes), models.get("llama-3-70b"))


def test_interleaving_holds_what_megatron_holds() -> None:
    # p = 8 stages, m = 64 micro-batches. With one chunk a GPU there is nothing to interleave: 1F1B
    # holds min(p, m) = 8 (the interleaved warm-up formula gave 2p - 1 = 15); with v = 2 chunks,
    # p (1 + (p - 1) / (p v)) = 8 x (1 + 7/16) = 11.5 (Korthikanti et al. 2022).
    one = grid_from_plans([_PLAN.with_changes(schedule="interleaved")])
    two = grid_from_plans([_PLAN.with_changes(schedule="interleaved", vpp=2)])
    assert float(np.asarray(activations_in_flight(one))[0]) == pytest.approx(8.0)
    assert float(np.asarray(activations_in_flight(two))[0]) == pytest.approx(11.5)


def test_search_tries_virtual_chunks_under_1f1b_only(models: ModelRegistry) -> None:
    model = models.get("llama-3-70b")
    space = default_space(model, 64, 4096, ("1f1b", "gpipe", "zb1p", "dualpipe"))
    columns = _product(space)
    valid = _valid(columns, model, 64, 64, 4096)
    chunked = columns["vpp"][valid] > 1
    assert chunked.any()  # interleaving is still searched, through 1F1B
    assert set(columns["schedule"][valid][chunked]) == {SCHEDULE_CODES["1f1b"]}
    assert (columns["pp"][valid][columns["schedule"][valid] != SCHEDULE_CODES["1f1b"]] > 1).all()


# --- defect 9: no collective for nothing; explanations that add up; one row per plan ------------


def test_a_dense_model_on_one_replica_has_no_data_parallel_traffic(
    catalog: Catalog, models: ModelRegistry
) -> None:
    # dp = 1: no gradient to reduce across replicas; a dense model has no experts to reduce either
    plan = TrainingPlan(tp=8, pp=4, dp=1, global_batch_size=64, seq_len=4096)
    estimate = estimate_training(
        model=models.get("llama-3-70b"), cluster=catalog.cluster("dgx-h100", num_nodes=4), plan=plan
    )
    assert estimate.breakdown_s["dp_comm"] == 0.0


_SECONDS = re.compile(r"([+-]\d[\d.e+-]*) s\b")


@pytest.fixture(scope="module")
def llama70b_search(catalog: Catalog, models: ModelRegistry):  # type: ignore[no-untyped-def]
    return search_training(
        model=models.get("llama-3-70b"),
        cluster=catalog.cluster("dgx-h100", num_nodes=4),
        global_batch_size=64,
        seq_len=4096,
        num_tokens=1e12,
    )


def test_why_the_best_wins_adds_up_to_the_difference(llama70b_search) -> None:  # type: ignore[no-untyped-def]
    result = llama70b_search
    for rank, sentence in enumerate(result.why_best, start=2):
        difference = result.plans[0].step_time_s - result.plans[rank - 1].step_time_s
        head, _, reasons = sentence.partition("): ")
        total = float(_SECONDS.findall(head)[-1])  # "by 0.0% per step (-0.000566 s)"
        parts = [float(value) for value in _SECONDS.findall(reasons)]
        assert total == pytest.approx(difference, rel=5e-3, abs=1e-9)
        # each figure has 3 significant digits: their sum is the difference within their rounding
        assert sum(parts) == pytest.approx(difference, abs=5e-3 * max(abs(part) for part in parts))


def test_zero_stages_at_one_replica_are_one_plan(llama70b_search) -> None:  # type: ignore[no-untyped-def]
    shown = [*llama70b_search.plans, *llama70b_search.ties]
    keys = [
        (p.tp, p.pp, p.cp, p.ep, p.vpp, p.micro_batch_size, p.recompute, p.effective_schedule)
        for p in (estimate.plan for estimate in shown)
        if p.dp * p.cp == 1
    ]
    assert keys, "the search shows no plan of one replica: the case this test is about is gone"
    assert len(keys) == len(set(keys))


# --- defect 4: a token budget in the search -----------------------------------------------------


def test_each_searched_plan_has_its_time_to_train(llama70b_search) -> None:  # type: ignore[no-untyped-def]
    for estimate in llama70b_search.plans:
        summary = estimate.plan_summary()
        # 1e12 tokens in steps of 64 sequences x 4096 tokens, each step_time_s long, on 32 GPUs
        seconds = 1e12 / (64 * 4096) * estimate.step_time_s
        assert summary["time_to_train_s"] == pytest.approx(seconds)
        assert summary["gpu_hours"] == pytest.approx(seconds * 32 / 3600)


# --- defect 6: the bound names the largest share -------------------------------------------------


def _parts(**shares: float) -> dict[str, float]:
    return {name: shares.get(name, 0.0) for name in BREAKDOWN_PARTS}


@pytest.fixture(scope="module")
def h100(catalog: Catalog):  # type: ignore[no-untyped-def]
    return hardware_for(catalog.cluster("dgx-h100"), "bf16", None, False, load_stack())


def test_compute_larger_than_every_overhead_is_not_called_overhead(h100) -> None:  # type: ignore[no-untyped-def]
    plan = TrainingPlan(tp=2, pp=4, global_batch_size=8)
    # 58% compute, 27% bubble, 15% else: compute is the largest part though under 60%
    parts = _parts(compute=0.58, bubble=0.27, tp_comm=0.15)
    sentence, part = bound_sentence(parts, plan, h100, mfu=0.1, hfu=0.1)
    assert sentence.startswith("overhead-bound: compute (GEMMs and attention) takes 58% of the step")
    assert "the overheads 42%" in sentence
    assert "pipeline bubble (1f1b, pp=4" in sentence
    assert sentence.endswith(" 27%")
    assert part == "bubble"


def test_an_overhead_larger_than_compute_is_the_bound(h100) -> None:  # type: ignore[no-untyped-def]
    plan = TrainingPlan(tp=2, pp=4, global_batch_size=8)
    sentence, part = bound_sentence(
        _parts(compute=0.3, bubble=0.5, tp_comm=0.2), plan, h100, mfu=0.1, hfu=0.1
    )
    assert sentence.startswith("pipeline bubble")
    assert sentence.endswith(": 50% of the step")
    assert part == "bubble"


def test_compute_bound_by_small_kernels_says_so(h100) -> None:  # type: ignore[no-untyped-def]
    plan = TrainingPlan(tp=8, global_batch_size=8)
    ceiling = h100.efficiency.gemm_ceiling("bf16") * h100.stack.kernel_efficiency * h100.clock_fraction
    # 85% of the step computing at hfu 6.8%: 0.068 / 0.85 = 8% of peak while computing, under half
    # of any ceiling above 16%
    assert ceiling > 0.16
    slow, part = bound_sentence(_parts(compute=0.85, tp_comm=0.15), plan, h100, mfu=0.067, hfu=0.068)
    assert slow.startswith("compute-bound, kernels far below their ceiling: GEMMs and attention take 85%")
    assert "run at 8% of peak" in slow
    assert part == "compute"
    # the same share at 0.85 x ceiling: the kernels run as well as they can
    fast, _ = bound_sentence(_parts(compute=0.85, tp_comm=0.15), plan, h100, mfu=0.4, hfu=0.85 * ceiling)
    assert fast.startswith("compute-bound: GEMMs and attention take 85% of the step at ")
    assert "kernels far below" not in fast
