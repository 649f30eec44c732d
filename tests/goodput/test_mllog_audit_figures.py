"""FLOP and accelerator figures that cannot be right: refused at the Tracker call, and in a log
either refused (num_accelerators) or left out with the reason (FLOP figures)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from lightspeed.errors import DataFileError, UserInputError
from lightspeed.goodput import Tracker, build_ledger, plan_checkpoints, read_run
from lightspeed.goodput.reliability import FailureEstimate
from lightspeed.report.goodput import render_checkpoint_plan


@pytest.mark.parametrize(
    ("keyword", "value"),
    [
        ("peak_flop_per_s", -5),
        ("peak_flop_per_s", math.nan),
        ("peak_flop_per_s", math.inf),
        ("model_flop_per_token", -1),
        ("hardware_flop_per_token", 0),
        ("sol_tokens_per_s_per_accelerator", -2.0),
        ("num_accelerators", 0),
        ("num_accelerators", 2.5),
        ("num_accelerators", True),
        ("num_nodes", 0),
    ],
)
def test_the_tracker_refuses_a_figure_that_cannot_be_right(
    tmp_path: Path, keyword: str, value: object
) -> None:
    with pytest.raises(UserInputError, match=keyword):
        Tracker(tmp_path / "run", **{keyword: value})  # type: ignore[arg-type]


def test_the_tracker_keeps_valid_figures(tmp_path: Path) -> None:
    with Tracker(tmp_path / "run", num_accelerators=8, peak_flop_per_s=1e15, model_flop_per_token=6e9):
        pass


def test_build_ledger_refuses_bad_overrides(hand_log) -> None:  # type: ignore[no-untyped-def]
    log = hand_log().start(0.0).step(0, 1.0, 2.0, tokens=1000).end(3.0)
    run = read_run(log.write().parent)
    with pytest.raises(UserInputError, match="num_accelerators must be a whole number >= 1, got 0"):
        build_ledger(run=run, num_accelerators=0)
    with pytest.raises(UserInputError, match="peak_flop_per_s must be a finite number > 0"):
        build_ledger(run=run, peak_flop_per_s=-5.0)


def test_a_logged_negative_peak_leaves_mfu_out_saying_why(hand_log) -> None:  # type: ignore[no-untyped-def]
    log = hand_log().start(0.0, peak_flop_per_s=-5, model_flop_per_token=1e9, num_accelerators=1)
    ledger = build_ledger(run=read_run(log.step(0, 1.0, 2.0, tokens=1000).end(3.0).write().parent))
    assert ledger.mfu is None
    assert "peak_flop_per_s must be a finite number > 0, got -5" in ledger.utilization.reason
    # with a valid peak the same log gives MFU = 1000 tokens x 1e9 FLOP / (3 s x 1 x 1e12 FLOP/s)
    log = hand_log(run_id="run-b")
    log.path = log.path.parent.parent / "run-b" / log.path.name
    log.start(0.0, peak_flop_per_s=1e12, model_flop_per_token=1e9, num_accelerators=1)
    valid = build_ledger(run=read_run(log.step(0, 1.0, 2.0, tokens=1000).end(3.0).write().parent))
    assert valid.mfu == pytest.approx(1000 * 1e9 / (3.0 * 1e12))


def test_a_logged_negative_sol_leaves_efficiency_out_with_a_note(hand_log) -> None:  # type: ignore[no-untyped-def]
    log = hand_log().start(0.0, sol_tokens_per_s_per_accelerator=-100.0, num_accelerators=1)
    ledger = build_ledger(run=read_run(log.step(0, 1.0, 2.0, tokens=1000).end(3.0).write().parent))
    assert ledger.efficiency is None
    assert any(
        "sol_tokens_per_s_per_accelerator must be a finite number > 0" in note for note in ledger.notes
    )


def test_a_logged_zero_accelerator_count_is_refused_in_one_line(hand_log, run_cli) -> None:  # type: ignore[no-untyped-def]
    log = hand_log().start(0.0, num_accelerators=0).step(0, 1.0, 2.0, tokens=1000).end(3.0)
    run_dir = log.write().parent
    with pytest.raises(DataFileError, match=r"rank-00000.jsonl:1: job_start: num_accelerators must be"):
        build_ledger(run=read_run(run_dir))
    result = run_cli("goodput", "report", str(run_dir))
    assert result.code == 2
    assert len(result.err.strip().splitlines()) == 1
    # an explicit count replaces the logged one
    assert run_cli("goodput", "report", str(run_dir), "--num-accelerators", "2").code == 0


@pytest.mark.parametrize(("failures", "words"), [(1, "1 failure in"), (2, "2 failures in")])
def test_the_observed_failure_count_is_pluralised(capsys, failures: int, words: str) -> None:  # type: ignore[no-untyped-def]
    estimate = FailureEstimate(
        num_failures=failures,
        node_days=10.0,
        failures_per_node_day=failures / 10.0,
        num_runs=1,
        num_segments=failures + 1,
        runs=("run",),
    )
    plan = plan_checkpoints(
        num_nodes=1,
        failures_per_node_day=failures / 10.0,
        checkpoint_write_s=60.0,
        restart_s=600.0,
        failure_estimate=estimate,
    )
    render_checkpoint_plan(plan)
    assert f"Observed: {words} 10 node-days" in capsys.readouterr().out
