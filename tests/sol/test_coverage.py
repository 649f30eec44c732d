"""Issue 28, point 9: fit suggestions name every parallel dimension; a batch that does not split
over DP searches the dimension left free."""

from __future__ import annotations

import pytest

from lightspeed.catalog import Catalog
from lightspeed.errors import PlanDoesNotFitError
from lightspeed.sol import TrainingPlan, estimate_training
from lightspeed.workload import ModelRegistry


def test_a_moe_fit_suggestion_names_ep_and_runs_as_written(catalog: Catalog, models: ModelRegistry) -> None:
    model = models.get("mixtral-8x7b")
    cluster = catalog.cluster("dgx-h100", num_nodes=2)
    plan = TrainingPlan(dp=16, zero_stage=0, global_batch_size=16, seq_len=4096)
    with pytest.raises(PlanDoesNotFitError) as raised:
        estimate_training(model=model, cluster=cluster, plan=plan, check_fit=True)
    nearest = raised.value.nearest_plan
    assert nearest is not None
    assert {"tp", "pp", "dp", "cp", "ep", "vpp", "zero_stage"} <= set(nearest)
    assert nearest["ep"] > 1  # eight experts of 5.6B parameters do not fit unsplit
    suggested = TrainingPlan(global_batch_size=16, seq_len=4096, **nearest)  # type: ignore[arg-type]
    estimate = estimate_training(model=model, cluster=cluster, plan=suggested, check_fit=True)
    assert estimate.fits


def test_a_dense_fit_suggestion_leaves_ep_out(catalog: Catalog, models: ModelRegistry) -> None:
    plan = TrainingPlan(dp=64, zero_stage=0, global_batch_size=64, seq_len=4096)
    with pytest.raises(PlanDoesNotFitError) as raised:
        estimate_training(
            model=models.get("llama-3-70b"),
            cluster=catalog.cluster("dgx-h100", num_nodes=8),
            plan=plan,
            check_fit=True,
        )
    assert raised.value.nearest_plan is not None
    assert "ep" not in raised.value.nearest_plan


def test_the_cli_turns_the_suggestion_into_flags_with_ep(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(
        "plan", "train", "--model", "mixtral-8x7b", "--system", "dgx-h100", "--gpus", "16",
        "--global-batch", "16", "--zero", "0",
    )  # fmt: skip
    assert result.code == 2
    assert "a plan that fits: --tp " in result.err
    assert " --ep " in result.err
