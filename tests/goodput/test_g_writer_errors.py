"""A tracker that cannot write its run folder says so once, in the log, and keeps the training
going without piling the events it cannot write up in memory."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest

from lightspeed.goodput import Tracker

WRITER_LOG = "lightspeed.goodput.writer"
NUM_STEPS = 500
MAX_POLLS = 3000


def _failed_tracker(tmp_path: Path) -> Tracker:
    """A tracker whose run folder is under a file (mkdir fails: Not a directory), once its writer
    has given up (waits on the writer's own flag, asserts no duration)."""
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    tracker = Tracker(blocker / "run", model="llama-3-70b", seq_len=8192, flush_interval_s=0.05)
    for _ in range(MAX_POLLS):  # a bound on the wait, not a claim about how long the writer takes
        if tracker.write_error is not None:
            break
        time.sleep(0.01)
    assert tracker.write_error is not None
    return tracker


def test_the_first_write_failure_is_logged_once(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger=WRITER_LOG):
        tracker = _failed_tracker(tmp_path)
        with tracker.init():
            pass
        for _ in range(NUM_STEPS):
            with tracker.step(tokens=8192):
                pass
        tracker.close()
    records = [record for record in caplog.records if record.name == WRITER_LOG]
    assert len(records) == 1
    message = records[0].getMessage()
    assert records[0].levelno == logging.WARNING
    assert str(tmp_path / "file" / "run") in message
    assert "Not a directory" in message
    assert "training goes on" in message
    assert tracker.write_error is not None


def test_events_after_a_write_failure_are_dropped_not_kept(tmp_path: Path) -> None:
    tracker = _failed_tracker(tmp_path)
    for _ in range(NUM_STEPS):
        with tracker.step(tokens=8192):
            pass
    tracker.close()
    writer = tracker._writer
    assert not writer._thread.is_alive()
    assert len(writer._pending) == 0  # before: every event of the rest of the job stayed queued
