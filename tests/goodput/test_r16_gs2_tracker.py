"""The tracker takes NumPy's numbers as the numbers they hold, puts the job start on disk before the
training starts, raises (once) what its writer thread could not write, and refuses a rank or world
size that is not a whole number with one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lightspeed.errors import LightspeedError, UserInputError
from lightspeed.goodput import Tracker, build_ledger, read_run
from lightspeed.goodput.events import rank_file_name

HOUR_S = 3600.0  # a flush interval no test waits for: only the tracker's own flushes write


def _lines(run_dir: Path, rank: int = 0) -> list[dict[str, Any]]:
    text = (run_dir / rank_file_name(rank)).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line]


def test_numpy_numbers_are_recorded_as_plain_numbers(tmp_path: Path) -> None:
    tracker = Tracker(tmp_path, seq_len=np.int64(8192), flush_interval_s=HOUR_S)
    with tracker.step(tokens=np.int64(4096), samples=np.float32(2.0)):
        pass
    start_ns = np.int64(tracker.now_ns())
    tracker.record_step(
        start_ns=start_ns, end_ns=np.int64(tracker.now_ns()), tokens=np.float32(5), step=np.int64(3)
    )
    tracker.set_step(np.int64(7))
    with tracker.step(tokens=1):
        pass
    tracker.close()
    lines = _lines(tmp_path)
    assert [line["type"] for line in lines] == ["job_start", "step", "step", "step", "job_end"]
    assert lines[0]["seq_len"] == 8192
    steps = [(line["step"], line["tokens"], line["samples"]) for line in lines if line["type"] == "step"]
    assert steps == [(0, 4096, 2.0), (3, 5.0, 0), (7, 1, 0)]
    assert build_ledger(run=read_run(tmp_path)).steps.count == 3  # before: 0 lines, "no job_start event"


def test_numpy_values_in_meta_are_written(tmp_path: Path) -> None:
    with Tracker(tmp_path, meta={"lr": np.float32(0.5), "batch": np.int32(64)}, flush_interval_s=HOUR_S):
        pass
    assert _lines(tmp_path)[0]["meta"] == {"lr": 0.5, "batch": 64}


def test_meta_that_is_not_json_is_refused_at_construction(tmp_path: Path) -> None:
    with pytest.raises(UserInputError, match=r"meta=\.\.\.\) must hold JSON values"):
        Tracker(tmp_path, meta={"handle": object()})


def test_the_job_start_is_on_disk_when_the_tracker_is_built(tmp_path: Path) -> None:
    tracker = Tracker(tmp_path, flush_interval_s=HOUR_S)
    try:
        assert [line["type"] for line in _lines(tmp_path)] == ["job_start"]
    finally:
        tracker.close()


def test_an_event_the_writer_cannot_encode_is_raised_once_and_the_rest_is_written(tmp_path: Path) -> None:
    tracker = Tracker(tmp_path, flush_interval_s=HOUR_S)
    now_ns = tracker.now_ns()
    tracker._append(("phase", "custom", object(), 0, now_ns, now_ns))  # a value no JSON holds
    with tracker.step(tokens=8):
        pass
    with pytest.raises(LightspeedError, match="a phase event could not be written"):
        tracker.close()  # before: the writer thread died, close() said nothing, the log was empty
    tracker.close()  # raised once
    assert [line["type"] for line in _lines(tmp_path)] == ["job_start", "step", "job_end"]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"rank": "0", "world_size": 2}, r"rank must be a whole number >= 0, got '0' \(str\)"),
        ({"rank": 1.5, "world_size": 4}, r"rank must be a whole number >= 0, got 1.5 \(float\)"),
        ({"rank": 0, "world_size": True}, r"world_size must be a whole number >= 1, got True \(bool\)"),
        ({"rank": 0, "world_size": "4"}, r"world_size must be a whole number >= 1, got '4' \(str\)"),
        ({"rank": 4, "world_size": 4}, r"rank 4 is not in 0..world_size-1 \(world_size 4\)"),
    ],
)
def test_rank_and_world_size_must_be_whole_numbers(
    tmp_path: Path, arguments: dict[str, object], message: str
) -> None:
    with pytest.raises(UserInputError, match=message):
        Tracker(tmp_path, **arguments)  # type: ignore[arg-type]


def test_numpy_rank_and_world_size_are_taken(tmp_path: Path) -> None:
    with Tracker(tmp_path, rank=np.int64(1), world_size=np.int64(2), flush_interval_s=HOUR_S) as tracker:
        assert (tracker.rank, tracker.world_size) == (1, 2)
    start = _lines(tmp_path, rank=1)[0]
    assert (start["rank"], start["world_size"]) == (1, 2)
