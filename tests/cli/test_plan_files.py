"""Plan files and the options generated from one configuration: a plan saved as TOML (or the JSON a
command printed) runs again to the same JSON as the command line; the command line overrides the file;
a bad file is one line and exit 2."""

from __future__ import annotations

import json
import typing
from pathlib import Path
from typing import Any

import click
import pytest

from expect import one_line_error
from lightspeed.cli.plan import command as plan_group
from lightspeed.cli.search import command as search_group
from lightspeed.sol import ServingConfig, ServingSearchConfig, TrainingConfig, TrainingSearchConfig

TRAIN = ("plan", "train", "--model", "llama-3-8b", "--system", "dgx-h100", "--tp", "2",
         "--global-batch", "64", "--recompute", "selective", "--no-tp-overlap")  # fmt: skip
INFER = ("plan", "infer", "--model", "llama-3-70b", "--system", "dgx-h100", "--tp", "4", "--precision", "fp8",
         "--isl", "2000", "--osl", "200", "--concurrency", "16")  # fmt: skip
SEARCH_TRAIN = ("search", "train", "--model", "llama-3-8b", "--system", "dgx-h100", "--global-batch", "64",
                "--top", "2")  # fmt: skip
SEARCH_INFER = ("search", "infer", "--model", "llama-3-8b", "--system", "dgx-h100", "--gpus", "2",
                "--max-ttft", "1s", "--isl", "512", "--osl", "128")  # fmt: skip
# the simulated parts (requests, seed, SLO, rate, finalists) are plan fields too: a file keeps them
INFER_UNDER_LOAD = (*INFER, "--requests", "300", "--seed", "3")
SEARCH_AT_SLO = (*SEARCH_INFER, "--slo", "ttft=2s,tpot=50ms", "--rate", "2", "--finalists", "2",
                 "--requests", "200", "--seed", "5")  # fmt: skip


def _json(run_cli: Any, *args: str) -> dict[str, Any]:
    result = run_cli(*args, "--json")
    assert result.code == 0, result.err
    payload: dict[str, Any] = json.loads(result.out)
    return payload


@pytest.mark.parametrize(
    "args",
    [TRAIN, INFER, SEARCH_TRAIN, SEARCH_INFER, INFER_UNDER_LOAD, SEARCH_AT_SLO],
    ids=["plan train", "plan infer", "search train", "search infer", "plan infer load", "search infer slo"],
)
def test_a_saved_plan_runs_to_the_same_json(run_cli: Any, tmp_path: Path, args: tuple[str, ...]) -> None:
    saved = tmp_path / "plan.toml"
    first = _json(run_cli, *args, "--save-config", str(saved))
    assert saved.is_file()
    again = _json(run_cli, *args[:2], "--config", str(saved))
    assert _without_wall_times(again) == _without_wall_times(first)
    printed = tmp_path / "out.json"  # the JSON output is a plan file too
    printed.write_text(json.dumps(first), encoding="utf-8")
    from_json = _json(run_cli, *args[:2], "--config", str(printed))
    assert _without_wall_times(from_json) == _without_wall_times(first)


def _without_wall_times(payload: Any) -> Any:
    """``payload`` less every ``elapsed_s`` (a search's or a simulation's wall time), at any depth."""
    if isinstance(payload, dict):
        return {key: _without_wall_times(value) for key, value in payload.items() if key != "elapsed_s"}
    if isinstance(payload, list):
        return [_without_wall_times(item) for item in payload]
    return payload


def test_the_command_line_wins_over_the_file(run_cli: Any, tmp_path: Path) -> None:
    saved = tmp_path / "plan.toml"
    _json(run_cli, *TRAIN, "--save-config", str(saved))
    assert 'recompute = "selective"' in saved.read_text(encoding="utf-8")
    payload = _json(run_cli, "plan", "train", "--config", str(saved), "--recompute", "full")
    assert payload["config"]["recompute"] == "full"
    assert payload["config"]["tp"] == 2  # from the file
    assert payload["recompute"] == "full"


def test_a_file_of_another_command_names_the_right_one(run_cli: Any, tmp_path: Path) -> None:
    saved = tmp_path / "plan.toml"
    _json(run_cli, *TRAIN, "--save-config", str(saved))
    one_line_error(
        run_cli("plan", "infer", "--config", str(saved)),
        "is a 'training-plan' file, not a 'serving-plan'",
        "run it with 'lightspeed plan train --config",
    )


@pytest.mark.parametrize(
    ("line", "fragments"),
    [
        ("tpp = 2", ("unknown key 'tpp'", "did you mean 'tp'")),
        ('tp = "two"', ("Expected `int | null`, got `str`",)),
        ("tp = 100000000000", ("--tp", "above the limit")),  # the option's own bound applies to files
        ("expert_imbalance = nan", ("--expert-imbalance", "not a finite number")),
        ("seq_len = 1.5", ("Expected `int`, got `float`",)),
    ],
)
def test_a_bad_plan_file_is_one_line(
    run_cli: Any, tmp_path: Path, line: str, fragments: tuple[str, ...]
) -> None:
    path = tmp_path / "plan.toml"
    path.write_text(f'kind = "training-plan"\nmodel = "llama-3-8b"\nsystem = "dgx-h100"\n'
                    f"global_batch_size = 64\n{line}\n", encoding="utf-8")  # fmt: skip
    one_line_error(run_cli("plan", "train", "--config", str(path)), *fragments)


@pytest.mark.parametrize(
    ("line", "fragments"),
    [
        ('slo = "ttft=nan"', ("--slo", "cannot read 'nan' as a duration")),
        ('slo = ""', ("--slo", "give a TTFT or a TPOT limit")),
        ("rate_per_s = 0.0", ("--rate", "below the minimum")),  # one request a century at least
        ("finalists = 0", ("--finalists", "below the minimum")),
        ("num_requests = -1", ("--requests", "below the minimum")),
    ],
)
def test_a_bad_simulated_load_in_a_plan_file_is_one_line(
    run_cli: Any, tmp_path: Path, line: str, fragments: tuple[str, ...]
) -> None:
    """The simulated load's fields are checked in a file as their options are on the command line."""
    path = tmp_path / "plan.toml"
    path.write_text(f'kind = "serving-search"\nmodel = "llama-3-8b"\nsystem = "dgx-h100"\n{line}\n',
                    encoding="utf-8")  # fmt: skip
    one_line_error(run_cli("search", "infer", "--config", str(path)), *fragments)


def test_a_model_config_still_goes_to_config(run_cli: Any, tmp_path: Path) -> None:
    hf = Path(__file__).resolve().parents[1] / "fixtures" / "hf_configs" / "llama-3-8b" / "config.json"
    job = ("--system", "dgx-h100", "--tp", "2", "--global-batch", "64")
    by_file = _json(run_cli, "plan", "train", "--config", str(hf), *job)
    by_name = _json(run_cli, "plan", "train", "--model", "llama-3-8b", *job)
    assert by_file["step_time_s"] == pytest.approx(by_name["step_time_s"], rel=1e-9)
    assert by_file["config"]["model_config"] == str(hf)


def _params(group: click.Group, name: str) -> dict[str, click.Parameter]:
    command = group.commands[name]
    return {param.name: param for param in command.params if param.name}


@pytest.mark.parametrize(
    ("group", "name", "config"),
    [
        (plan_group, "train", TrainingConfig),
        (plan_group, "infer", ServingConfig),
        (search_group, "train", TrainingSearchConfig),
        (search_group, "infer", ServingSearchConfig),
    ],
)
def test_every_field_is_an_option_of_its_command(group: click.Group, name: str, config: Any) -> None:
    params = _params(group, name)
    hints = typing.get_type_hints(config)
    for item in config.settings():
        assert item.name in params, f"{name}: no option for {item.name}"
        if hints[item.name] is bool and not item.metadata.get("negative_flag"):
            assert getattr(params[item.name], "is_flag", False)
    assert set(params) - {item.name for item in config.settings()} <= {
        "config_file", "save_config", "as_json", "plot_path",
    }  # fmt: skip
