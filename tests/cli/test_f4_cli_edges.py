"""The command line's side of F4: ``--schedule 1f1b`` with ``--vpp`` above 1 is refused (defect 7)
and ``simulate --save-config`` names ``simulate`` as the command that runs the file (defect 8)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from expect import one_line_error

TRAIN = ("plan", "train", "--model", "llama-3-8b", "--system", "dgx-h100", "--global-batch", "64")


def test_an_explicit_1f1b_with_vpp_is_refused(run_cli: Any) -> None:
    one_line_error(
        run_cli(*TRAIN, "--pp", "2", "--vpp", "4", "--schedule", "1f1b"),
        "schedule 1f1b runs one chunk per pipeline stage and vpp=4",
        "schedule interleaved",
    )


def test_vpp_without_a_schedule_still_runs_interleaved(run_cli: Any) -> None:
    result = run_cli(*TRAIN, "--pp", "2", "--vpp", "4", "--json")
    assert result.code == 0, result.err
    assert json.loads(result.out)["schedule"] == "interleaved"


def test_the_schedule_help_says_what_the_default_is(run_cli: Any) -> None:
    text = " ".join(run_cli("plan", "train", "--help").out.split())
    assert "interleaved when --vpp is above 1" in text
    assert "1f1b named with --vpp above 1 is refused" in text


def test_a_simulate_plan_file_names_simulate(run_cli: Any, tmp_path: Path) -> None:
    saved = tmp_path / "sim.toml"
    result = run_cli(
        "simulate", "--model", "llama-3-8b", "--system", "dgx-h100", "--requests", "20",
        "--save-config", str(saved),
    )  # fmt: skip
    assert result.code == 0, result.err
    first = saved.read_text(encoding="utf-8").splitlines()[0]
    assert first == "# lightspeed serving-plan: run it with 'lightspeed simulate --config FILE'"


def test_a_plan_file_value_out_of_bounds_is_said_as_its_option(run_cli: Any, tmp_path: Path) -> None:
    """The configuration refuses tp = 0 at construction; the file's error still names the option."""
    path = tmp_path / "plan.toml"
    path.write_text(
        'kind = "training-plan"\nmodel = "llama-3-8b"\nsystem = "dgx-h100"\nglobal_batch_size = 64\ntp = 0\n',
        encoding="utf-8",
    )
    result = run_cli("plan", "train", "--config", str(path))
    one_line_error(result, "tp = 0 (option --tp)", "below the minimum")
