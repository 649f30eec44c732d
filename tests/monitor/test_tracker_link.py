"""How a Tracker finds the monitor that launched it, and how the ledger's timeline feeds the join."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lightspeed.goodput import MONITOR_RUN_ENV, Tracker, bucket_timeline, build_ledger, read_run
from lightspeed.monitor import monitor_folders_of
from lightspeed.monitor.runs import announced_runs


def test_a_tracker_under_monitor_run_announces_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "mon"
    folder.mkdir()
    (folder / "monitor.json").write_text("{}")
    monkeypatch.setenv(MONITOR_RUN_ENV, str(folder))
    run_dir = tmp_path / "run"
    with Tracker(run_dir, flush_interval_s=0.05, rank=0, world_size=1) as tracker, tracker.step(tokens=1):
        pass
    (note,) = [json.loads(path.read_text()) for path in (folder / "trackers").glob("*.json")]
    assert note["run_dir"] == str(run_dir.resolve())
    assert note["rank"] == 0
    assert announced_runs(folder) == (str(run_dir.resolve()),)
    run = read_run(run_dir)
    assert run.monitor_runs == (str(folder.resolve()),)
    assert monitor_folders_of(run_dir) == (folder.resolve(),)


def test_an_old_log_without_the_key_still_reads(hand_run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A version-1 log written before ``monitor_run`` existed (no such key anywhere)."""
    run_dir = hand_run(tmp_path / "old").start(0.0).step(0, 1.0, 2.0, tokens=5).end(3.0)
    assert "monitor_run" not in (run_dir / "rank-00000.jsonl").read_text()
    run = read_run(run_dir)
    assert run.monitor_runs == ()
    assert build_ledger(run=run).productive_s == pytest.approx(1.0)
    assert monitor_folders_of(run_dir) == ()


def test_the_timeline_pieces_add_up_to_the_ledgers_buckets(hand_run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    log = hand_run(tmp_path / "run").start(0.0).phase("init", 0.0, 1.0)
    log.phase("data_wait", 1.0, 1.5).step(0, 1.5, 2.5).phase("checkpoint_save", 2.5, 3.0)
    log.step(1, 3.0, 4.0).phase("data_wait", 3.2, 3.4)  # a wait inside a step is a data stall
    run = read_run(log.end(5.0))
    ledger = build_ledger(run=run)
    (timeline,) = bucket_timeline(run=run)
    totals: dict[str, float] = {}
    for bucket, _name, start, end in timeline.pieces:
        totals[bucket] = totals.get(bucket, 0.0) + end - start
    assert totals["productive"] == pytest.approx(ledger.productive_s)
    for bucket, seconds in ledger.badput_s.items():
        assert totals.get(bucket, 0.0) == pytest.approx(seconds, abs=1e-9)
    starts = [piece[2] for piece in timeline.pieces]
    assert starts == sorted(starts)  # disjoint, in time order
    assert [step.step for step in timeline.productive_steps] == [0, 1]
