"""Issue 28, point 9: fit suggestions name every parallel dimension; a batch that does not split
over DP searches the dimension left free."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lightspeed.catalog import Catalog
from lightspeed.errors import InvalidPlanError, PlanDoesNotFitError
from lightspeed.sol import TrainingPlan, estimate_training, validate_published
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


def test_a_batch_that_does_not_split_searches_the_degrees_left_free(
    catalog: Catalog, models: ModelRegistry
) -> None:
    # 12 sequences over 16 replicas do not split. With PP and DP left free, PP=4 leaves DP=4:
    # 3 sequences each (CP=4 would too, but a pipeline stage costs less than a ring per layer).
    plan = TrainingPlan(dp=16, global_batch_size=12, seq_len=4096)
    estimate = estimate_training(
        model=models.get("llama-3-8b"),
        cluster=catalog.cluster("dgx-h100", num_nodes=2),
        plan=plan,
        free_settings=("pp", "cp", "dp"),
    )
    assert (estimate.plan.pp, estimate.plan.dp, estimate.plan.cp) == (4, 4, 1)
    assert "global batch 12 does not split over dp=16" in estimate.assumptions[0]
    assert "chose pp=4, dp=4" in estimate.assumptions[0]
    with pytest.raises(InvalidPlanError, match=r"no parallel degree was left free"):
        estimate_training(
            model=models.get("llama-3-8b"), cluster=catalog.cluster("dgx-h100", num_nodes=2), plan=plan,
            free_settings=("micro_batch_size",),
        )  # fmt: skip


def test_the_cli_searches_only_the_degrees_the_user_did_not_give(run_cli) -> None:  # type: ignore[no-untyped-def]
    base = ("plan", "train", "--model", "llama-3-70b", "--system", "dgx-h100", "--gpus", "64", "--tp", "8",
            "--global-batch", "36", "--json")  # fmt: skip
    chosen = run_cli(*base)
    assert chosen.code == 0, chosen.err
    payload = json.loads(chosen.out)
    assert (payload["tp"], payload["pp"], payload["dp"]) == (8, 2, 4)  # 36 / 4 = 9 per replica
    assert "chose pp=2, dp=4" in payload["assumptions"][0]
    pinned = run_cli(*base, "--pp", "1", "--cp", "1")
    assert pinned.code == 2
    assert "no value of the settings left free (dp, micro_batch_size)" in pinned.err


def test_a_published_row_that_leaves_dp_and_pp_unstated_is_predicted(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    table = tmp_path / "rows.tsv"
    header = "id\tkind\tsource\tmodel\tGPUs\thardware\tmetric\tmeasured\tseq\tglobal_batch\tTP\tDP"
    row = "Z5\ttrain\tnone\tllama-3-8b\t16\tH100\titeration time (s)\t1.0\t4096\t12\t1\t-"
    table.write_text(f"{header}\n{row}\n")
    report = validate_published(path=table, catalog=catalog, models=models)
    (result,) = report.rows
    assert result.status != "error", result.reason
    assert result.plan is not None
    # PP (and CP, DP) unstated: a split of the 16 GPUs at the stated TP 1 whose DP divides the
    # batch of 12 (dp=16 does not), the fastest that fits among them
    plan = result.plan
    assert plan["tp"] == 1
    assert plan["pp"] * plan["cp"] * plan["dp"] == 16
    assert 12 % plan["dp"] == 0
    assert any("TP/PP not reported" in note for note in result.assumptions)
