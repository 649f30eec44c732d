"""``lightspeed plan train``, ``search train`` and ``validate`` from the command line."""

from __future__ import annotations

import json
from pathlib import Path

PLAN = [
    "plan",
    "train",
    "--model",
    "llama-3-70b",
    "--system",
    "dgx-h100",
    "--gpus",
    "64",
    "--tp",
    "8",
    "--pp",
    "2",
    "--global-batch",
    "64",
    "--seq",
    "4096",
]


def test_plan_train_json_has_the_plan_object_and_breakdowns(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(*PLAN, "--tokens", "1T", "--json")
    assert result.code == 0, result.err
    payload = json.loads(result.out)
    for key in (
        "tp",
        "pp",
        "dp",
        "ep",
        "cp",
        "vpp",
        "zero_stage",
        "micro_batch_size",
        "recompute",
        "schedule",
        "step_time_s",
        "mfu",
        "tokens_per_s",
        "memory_per_gpu_bytes",
        "bound",
    ):
        assert key in payload
    assert (payload["tp"], payload["pp"], payload["dp"]) == (8, 2, 4)
    assert abs(sum(payload["breakdown_s"].values()) - payload["step_time_s"]) < 1e-9 * payload["step_time_s"]
    assert set(payload["memory_bytes"]) == {"weights", "gradients", "optimizer", "activations", "reserved"}
    assert payload["gpu_hours"] > 0


def test_plan_train_table(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(*PLAN)
    assert result.code == 0, result.err
    assert "step breakdown" in result.out
    assert "bound:" in result.out


def test_impossible_plan_is_one_line_exit_2(run_cli) -> None:  # type: ignore[no-untyped-def]
    args = [
        "plan",
        "train",
        "--model",
        "llama-3-70b",
        "--system",
        "dgx-h100",
        "--gpus",
        "48",
        "--tp",
        "3",
        "--pp",
        "2",
        "--global-batch",
        "64",
    ]
    result = run_cli(*args)
    assert result.code == 2
    assert result.err.count("\n") == 1
    assert "does not divide the 64 attention heads" in result.err
    split = run_cli(*[("6" if arg == "8" else arg) for arg in PLAN])
    assert split.code == 2
    assert "64 GPUs do not split into tp x pp x cp = 12" in split.err


def test_unknown_model_lists_the_closest(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(*[("llama-3-70" if arg == "llama-3-70b" else arg) for arg in PLAN])
    assert result.code == 2
    assert "llama-3-70b" in result.err


def test_search_train_json_contract(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(
        "search",
        "train",
        "--model",
        "llama-3-8b",
        "--system",
        "dgx-h100",
        "--gpus",
        "16",
        "--global-batch",
        "64",
        "--seq",
        "4096",
        "--top",
        "3",
        "--json",
    )
    assert result.code == 0, result.err
    payload = json.loads(result.out)
    assert set(payload) >= {"num_plans_evaluated", "num_plans_fitting", "elapsed_s", "plans"}
    assert len(payload["plans"]) == 3
    assert payload["plans"][0]["step_time_s"] <= payload["plans"][1]["step_time_s"]
    assert max(plan["tp"] for plan in payload["plans"]) <= 8


def test_validate_json_contract(run_cli, shared: Path) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("validate", str(shared / "validation/published-dev.tsv"), "--json")
    assert result.code == 0, result.err
    payload = json.loads(result.out)
    assert set(payload) == {"rows", "summary", "summary_by_metric"}
    assert {"id", "kind", "metric", "measured", "predicted", "rel_error"} <= set(payload["rows"][0])
    assert set(payload["summary"]["train"]) >= {"n", "median_abs_error", "p90_abs_error", "num_within"}
    # the one TTFT row of the file (I14) is its own metric, counted within 20% or not
    ttft = payload["summary_by_metric"]["infer/ttft_s"]
    assert ttft["n"] == 1
    assert ttft["num_within"] == int(ttft["max_abs_error"] <= 0.20)


def test_validate_missing_file_is_exit_2(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("validate", str(tmp_path / "nope.tsv"))
    assert result.code == 2
    assert "nope.tsv" in result.err


def test_mtp_modules_are_the_models_unless_the_plan_says(run_cli) -> None:  # type: ignore[no-untyped-def]
    """DeepSeek-V3's file declares one MTP module (its report trained depth 1): trained by default,
    dropped with --mtp-modules 0; a dense model trained with one pays a block, a projection and
    the head again, which a PP1 plan cannot hide on a lighter stage."""

    def estimate(*args: str) -> dict:  # type: ignore[type-arg]
        result = run_cli(*args, "--json")
        assert result.code == 0, result.err
        return json.loads(result.out)  # type: ignore[no-any-return]

    base = ("plan", "train", "--system", "dgx-h100", "--gpus", "8", "--no-fit-check")
    deepseek = (*base, "--model", "deepseek-v3", "--ep", "8", "--global-batch", "8")
    trained, dropped = estimate(*deepseek), estimate(*deepseek, "--mtp-modules", "0")
    assert any("1 multi-token-prediction module trained" in line for line in trained["assumptions"])
    assert not any("multi-token" in line for line in dropped["assumptions"])
    assert trained["step_time_s"] > dropped["step_time_s"]
    assert trained["mfu"] < dropped["mfu"]  # same model FLOPs, more time
    assert dropped["config"]["mtp_modules"] == 0
    dense = (*base, "--model", "llama-3-8b", "--global-batch", "64")
    assert estimate(*dense, "--mtp-modules", "1")["step_time_s"] > estimate(*dense)["step_time_s"]
    bad = run_cli(*dense, "--mtp-modules", "-1")
    assert bad.code == 2
    assert bad.err.count("\n") == 1
    assert "--mtp-modules" in bad.err
