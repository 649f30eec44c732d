"""Plans that cannot exist fail with the reason and a valid alternative."""

from __future__ import annotations

import pytest

from lightspeed.catalog import Catalog
from lightspeed.errors import InvalidPlanError, PlanDoesNotFitError
from lightspeed.sol import TrainingPlan, estimate_training, validate_plan
from lightspeed.workload import ModelRegistry


def _plan(**changes: object) -> TrainingPlan:
    return TrainingPlan(
        tp=8, pp=4, dp=2, micro_batch_size=1, global_batch_size=64, seq_len=4096
    ).with_changes(**changes)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"tp": 3}, r"tp=3 does not divide the 64 attention heads .* try tp=2"),
        ({"pp": 3}, r"pp x vpp = 3 does not divide the 80 layers .* try pp=2, or allow uneven stages"),
        (
            {"micro_batch_size": 3},
            r"micro-batch 3 does not divide the 32 sequences per replica; try micro-batch size 2",
        ),
        ({"global_batch_size": 65}, r"global batch 65 does not split over dp=2 .* e.g. 64"),
        ({"ep": 2}, r"ep=2 needs a mixture-of-experts model"),
        ({"schedule": "dualpipe", "pp": 5, "global_batch_size": 640}, r"even pipeline size .* try pp=6"),
        ({"cp": 3}, r"cp=3 needs seq_len divisible by 2 x cp = 6"),
        # the library priced it as written (the CLI refused it): one stage has nothing to interleave
        (
            {"pp": 1, "vpp": 2, "dp": 8},
            r"vpp=2 .* pp=1 has one stage, .* give pp=2 or more with it, or vpp=1",
        ),
    ],
)
def test_impossible_plans_name_the_reason_and_an_alternative(
    changes: dict[str, object], message: str, models: ModelRegistry
) -> None:
    with pytest.raises(InvalidPlanError, match=message):
        validate_plan(_plan(**changes), models.get("llama-3-70b"))


def test_gpu_count_must_match_the_cluster(catalog: Catalog, models: ModelRegistry) -> None:
    with pytest.raises(
        InvalidPlanError, match=r"= 64 GPUs, not the 128 requested; the plan that matches: dp=4"
    ):
        estimate_training(
            model=models.get("llama-3-70b"), cluster=catalog.cluster("dgx-h100", num_nodes=16), plan=_plan()
        )


def test_plan_that_does_not_fit_names_one_that_does(catalog: Catalog, models: ModelRegistry) -> None:
    # 70.6B parameters x 18 bytes (DDP, no sharding) = 1.27 TB per GPU: cannot fit in 80 GB.
    plan = TrainingPlan(tp=1, dp=64, micro_batch_size=1, global_batch_size=64, seq_len=4096, zero_stage=0)
    cluster = catalog.cluster("dgx-h100", num_nodes=8)
    with pytest.raises(
        PlanDoesNotFitError,
        match=r"plan does not fit: 1.\d+ TiB per GPU needed, 79.65 GiB usable"  # nvidia-smi: 81,559 MiB
        r".* a plan that fits: tp=\d+ pp=\d+",
    ) as raised:
        estimate_training(model=models.get("llama-3-70b"), cluster=cluster, plan=plan, check_fit=True)
    nearest = raised.value.nearest_plan
    assert nearest is not None
    assert raised.value.nearest_memory_bytes is not None
    assert raised.value.nearest_memory_bytes <= 81559 * 2**20  # the suggestion itself fits
    assert nearest["tp"] * nearest["pp"] * nearest["dp"] * nearest["cp"] == 64
    small = TrainingPlan(tp=1, dp=8, micro_batch_size=1, global_batch_size=8, seq_len=4096, zero_stage=0)
    with pytest.raises(InvalidPlanError, match=r"no plan on 8 GPUs fits: use more GPUs"):
        estimate_training(
            model=models.get("llama-3-70b"),
            cluster=catalog.cluster("dgx-h100", num_nodes=1),
            plan=small,
            check_fit=True,
        )


def test_a_partial_node_is_allowed(catalog: Catalog, models: ModelRegistry) -> None:
    plan = TrainingPlan(tp=2, dp=1, micro_batch_size=1, global_batch_size=4, seq_len=2048)
    estimate = estimate_training(
        model=models.get("llama-3-8b"), cluster=catalog.cluster("dgx-h100", num_nodes=1), plan=plan
    )
    assert estimate.num_gpus == 2
