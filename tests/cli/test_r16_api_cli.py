"""Round 16, CLI: a bare group's help, model files for compare systems, token lengths, the
simulated run of ls.run, option synonyms."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest

import lightspeed as ls

REPO = Path(__file__).resolve().parents[2]
SERVING_PLAN = REPO / "examples" / "plans" / "llama-3-70b-fp8-serving.toml"
TRAINING_PLAN = REPO / "examples" / "plans" / "llama-3-70b-64xh100.toml"
BLOOM = REPO / "src" / "lightspeed" / "workload" / "data" / "models" / "bloom-176b.toml"
# click 8.2+ answers a bare group with its help on stderr and exit status 2 (8.1: stdout, 0)
NO_ARGS_STATUS = 2 if hasattr(click.exceptions, "NoArgsIsHelpError") else 0


@pytest.mark.parametrize("group", [(), ("plan",), ("hw",)])
def test_a_bare_group_prints_its_help_laid_out(run_cli, group: tuple[str, ...]) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(*group)
    assert result.code == NO_ARGS_STATUS
    text = result.err + result.out
    assert text.startswith(f"Usage: lightspeed {' '.join(group)}".rstrip() + " [OPTIONS] COMMAND")
    assert "lightspeed: error" not in text
    assert "\nCommands:\n" in text  # laid out over lines, not squashed into one


def test_compare_systems_reads_a_model_toml_with_model_config(run_cli) -> None:  # type: ignore[no-untyped-def]
    common = ("compare", "systems", "--workload", "train", "--systems", "8xdgx-h100", "--global-batch", "256")
    result = run_cli(*common, "--model-config", str(BLOOM), "--json")
    assert result.code == 0, result.err
    assert json.loads(result.out)["model"] == "bloom-176b"
    old = run_cli(*common, "--config", str(BLOOM), "--json")  # still read, with a note
    assert old.code == 0, old.err
    assert json.loads(old.out)["model"] == "bloom-176b"
    assert "deprecated" in old.err
    assert "--model-config" in old.err


def test_compare_systems_refuses_a_plan_file_given_as_the_model(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(
        "compare", "systems", "--workload", "train", "--systems", "dgx-h100", "--global-batch", "256",
        "--config", str(TRAINING_PLAN),
    )  # fmt: skip
    assert result.code == 2
    assert result.err.count("\n") == 1
    assert "lightspeed plan train --config" in result.err


def test_token_lengths_on_the_command_line_read_k_as_1024(run_cli) -> None:  # type: ignore[no-untyped-def]
    train = run_cli(
        "plan", "train", "--model", "llama-3-8b", "--system", "dgx-h100", "--tp", "8",
        "--global-batch", "8", "--seq", "8k", "--json",
    )  # fmt: skip
    assert train.code == 0, train.err
    assert json.loads(train.out)["config"]["seq_len"] == 8192  # Llama 3's "8K context"
    infer = run_cli(
        "plan", "infer", "--model", "llama-3-8b", "--system", "dgx-h100", "--isl", "1k", "--osl", "128",
        "--json",
    )  # fmt: skip
    assert infer.code == 0, infer.err
    assert json.loads(infer.out)["config"]["input_tokens"] == 1024  # MLPerf's "ISL 1K"


def test_run_simulates_a_deployment_under_load_as_plan_infer_does(run_cli) -> None:  # type: ignore[no-untyped-def]
    prediction = ls.run(ls.ServingConfig.from_file(SERVING_PLAN))  # concurrency = 50 in the file
    assert prediction.simulated is not None
    assert prediction.not_simulated is None
    result = run_cli("plan", "infer", "--config", str(SERVING_PLAN), "--json")
    assert result.code == 0, result.err
    shown = json.loads(result.out)["simulated"]
    for key in ("ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s"):
        assert prediction.simulated.summary()[key] == shown[key], key
    assert prediction.to_dict()["simulated"]["num_requests"] == shown["num_requests"]


def test_run_says_why_a_deployment_without_a_load_is_not_simulated() -> None:
    prediction = ls.run(ls.ServingConfig(model="llama-3-8b", system="dgx-h100"))
    assert prediction.simulated is None
    assert prediction.not_simulated is not None
    assert "--concurrency" in prediction.not_simulated


@pytest.mark.parametrize(
    ("command", "given", "meant"),
    [(("simulate",), "--rate", "--arrival-rate"), (("plan", "infer"), "--rate", "--arrival-rate")],
)
def test_an_option_of_another_name_is_suggested(run_cli, command, given, meant) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(*command, "--model", "llama-3-8b", "--system", "dgx-h100", given, "10")
    assert result.code == 2
    assert f"Did you mean '{meant}'?" in result.err
    assert "--force" not in result.err
