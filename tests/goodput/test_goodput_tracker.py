"""The tracker end to end: background writer, restarts, and a real SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lightspeed.errors import UserInputError
from lightspeed.goodput import Tracker, TruncatedLogWarning, build_ledger, read_run


def test_records_steps_and_phases_in_order(tmp_path: Path) -> None:
    with Tracker(tmp_path, flush_interval_s=0.05, model="m", system="h100-sxm", seq_len=128) as tracker:
        with tracker.init():
            pass
        for batch in tracker.wrap_loader([1, 2, 3]):
            with tracker.step(tokens=batch * 10, samples=batch):
                pass
        with tracker.eval():
            pass
        with tracker.badput("gc"):
            pass
    run = read_run(tmp_path)
    segment = run.ranks[0].segments[0]
    assert segment.status == "ok"
    assert [step.step for step in segment.steps] == [0, 1, 2]
    assert [step.tokens for step in segment.steps] == [10, 20, 30]
    assert [phase.phase for phase in segment.phases] == [
        "init",
        "data_wait",
        "data_wait",
        "data_wait",
        "eval",
        "custom",
    ]
    assert segment.phases[-1].name == "gc"
    times = (
        [segment.start_s]
        + [t for step in segment.steps for t in (step.start_s, step.end_s)]
        + [segment.end_s]
    )
    assert times == sorted(times)
    assert (run.workload.model, run.workload.system, run.workload.seq_len) == ("m", "h100-sxm", 128)
    assert json.loads((tmp_path / "run.json").read_text())["run_id"] == run.run_id


def test_restart_in_the_same_run_dir_marks_wasted_steps(tmp_path: Path) -> None:
    first = Tracker(tmp_path, flush_interval_s=0.05)
    for _ in range(4):  # steps 0..3; pretend a checkpoint exists after step 1
        with first.step(tokens=1):
            pass
    first.close(status="error")
    with Tracker(tmp_path, flush_interval_s=0.05) as second:
        with second.checkpoint_restore(step=2):
            pass
        for _ in range(3):  # steps 2..4
            with second.step(tokens=1):
                pass
    run = read_run(tmp_path)
    assert len({rank.path for rank in run.ranks}) == 1
    ledger = build_ledger(run=run)
    assert ledger.num_restarts == 1
    assert ledger.segments[0].num_wasted_steps == 2  # steps 2 and 3 of the first segment
    assert ledger.tokens == 2 + 3
    assert ledger.steps.count == 5


def test_step_that_raises_is_recorded_as_an_error(tmp_path: Path) -> None:
    tracker = Tracker(tmp_path, flush_interval_s=0.05)
    with pytest.raises(RuntimeError), tracker.step(tokens=5):
        raise RuntimeError("out of memory")
    tracker.close()
    step = read_run(tmp_path).ranks[0].segments[0].steps[0]
    assert step.error


def test_sync_calls_the_synchronizer_once_per_synced_step(tmp_path: Path) -> None:
    calls: list[int] = []
    with Tracker(tmp_path, synchronize=lambda: calls.append(1)) as tracker:
        with tracker.step(sync=True):
            pass
        with tracker.step():
            pass
    assert calls == [1]


def test_bad_arguments_are_user_errors(tmp_path: Path) -> None:
    with pytest.raises(UserInputError, match="rank 3 is not in"):
        Tracker(tmp_path, rank=3, world_size=2)
    with pytest.raises(UserInputError, match="tokens_scope"):
        Tracker(tmp_path, tokens_scope="node")
    with Tracker(tmp_path) as tracker, pytest.raises(UserInputError, match="non-empty name"):
        tracker.badput("")


def test_unwritable_run_dir_does_not_stop_training(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    tracker = Tracker(blocker / "run", flush_interval_s=0.05)
    with tracker.step():
        pass
    tracker.close()
    assert tracker.write_error is not None


def test_new_segment_starts_on_a_fresh_line_after_a_cut_one(tmp_path: Path) -> None:
    (tmp_path / "rank-00000.jsonl").write_text(
        '{"v":1,"seg":"x","type":"job_start","t_ns":1,"run_id":"r","rank":0,"world_size":1}\n{"v":1,"se'
    )
    (tmp_path / "run.json").write_text('{"run_id": "r"}')
    with Tracker(tmp_path) as tracker, tracker.step():
        pass
    with pytest.warns(TruncatedLogWarning, match=":2"):
        run = read_run(tmp_path)
    assert [len(segment.steps) for segment in run.ranks[0].segments] == [0, 1]


_CHILD = textwrap.dedent(
    """
    import sys, time
    from lightspeed.goodput import Tracker
    tracker = Tracker(sys.argv[1], flush_interval_s=float(sys.argv[2]))
    for _ in range(5):
        with tracker.step(tokens=1):
            pass
    with tracker.checkpoint_save():  # a phase end forces a flush
        pass
    time.sleep(0.5)
    print("saved", flush=True)
    for _ in range(5):
        with tracker.step(tokens=1):
            pass
    print("stepped", flush=True)
    time.sleep(float(sys.argv[3]))
    print("idle", flush=True)
    time.sleep(600)
    """
)


def _run_child_until(run_dir: Path, flush_interval_s: float, idle_s: float, marker: str) -> None:
    with subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(run_dir), str(flush_interval_s), str(idle_s)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "RANK": "0", "WORLD_SIZE": "1"},
    ) as child:
        try:
            assert child.stdout is not None
            for line in child.stdout:
                if line.strip() == marker:
                    break
        finally:
            child.send_signal(signal.SIGKILL)  # no atexit, no flush: the process just dies
            child.wait(timeout=60)
    assert child.returncode == -signal.SIGKILL


def test_sigkill_loses_only_events_of_the_current_flush_interval(tmp_path: Path) -> None:
    # Flush interval far longer than the test: steps after the checkpoint are still
    # buffered when the child dies, everything up to the checkpoint was flushed.
    _run_child_until(tmp_path, flush_interval_s=3600.0, idle_s=0.0, marker="stepped")
    segment = read_run(tmp_path).ranks[0].segments[0]
    assert segment.status == "crashed"
    assert len(segment.steps) == 5
    assert [phase.phase for phase in segment.phases] == ["checkpoint_save"]


def test_sigkill_after_a_flush_interval_loses_nothing(tmp_path: Path) -> None:
    # The child idles for ten flush intervals before it is killed: all ten steps are on disk.
    _run_child_until(tmp_path, flush_interval_s=0.05, idle_s=0.5, marker="idle")
    run = read_run(tmp_path)
    assert len(run.ranks[0].segments[0].steps) == 10
    # A restart in the same run_dir appends a second segment to the same file.
    with Tracker(tmp_path) as tracker, tracker.step(step=10, tokens=1):
        pass
    ledger = build_ledger(run=read_run(tmp_path))
    assert ledger.num_restarts == 1
    assert ledger.num_failures == 1
