"""The tracker refuses, at the ``with`` line, a step its own reader would refuse: a step inside
another step's block and a step index this job segment already logged. What it wrote stays readable."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lightspeed.errors import UserInputError
from lightspeed.goodput import Tracker, build_ledger, read_run
from lightspeed.goodput.tracker import _StepIndices


def _steps(tracker: Tracker, count: int, **given: int) -> None:
    for _ in range(count):
        with tracker.step(tokens=128, **given):
            pass


def _nested(tracker: Tracker, ran: list[str]) -> None:
    """A step whose block opens another, e.g. a helper that also wraps its work in tracker.step."""
    with tracker.step(tokens=128), tracker.step(tokens=128):
        ran.append("inner")


def _record_inside(tracker: Tracker) -> None:
    with tracker.step(tokens=1):
        tracker.record_step(start_ns=tracker.now_ns(), end_ns=tracker.now_ns())


def _failing(tracker: Tracker) -> None:
    with tracker.step(tokens=1):
        raise RuntimeError("out of memory")


def test_a_nested_step_is_refused_and_the_run_stays_readable(tmp_path: Path) -> None:
    ran: list[str] = []
    with Tracker(tmp_path, flush_interval_s=0.05) as tracker:
        _steps(tracker, 100)
        with pytest.raises(UserInputError, match=r"inside the block of step 100: steps do not nest") as error:
            _nested(tracker, ran)
        _steps(tracker, 100)
    assert "\n" not in str(error.value)
    assert not ran  # refused at its with line: the inner block never ran
    steps = read_run(tmp_path).ranks[0].segments[0].steps
    # steps 0..99, step 100 that raised (logged as failed), then 101..200: 201 events
    assert len(steps) == 201
    assert [step.step for step in steps if step.error] == [100]
    assert steps[-1].step == 200
    assert build_ledger(run=read_run(tmp_path)).steps.count == 200  # the 200 that did not raise


def test_an_index_logged_twice_is_refused(tmp_path: Path) -> None:
    with Tracker(tmp_path, flush_interval_s=0.05) as tracker:
        _steps(tracker, 1, step=0)
        for _ in range(2):
            with pytest.raises(UserInputError, match=r"step 0 is already logged in this job segment"):
                _steps(tracker, 1, step=0)
        start_ns = tracker.now_ns()
        with pytest.raises(UserInputError, match=r"record_step\(\): step 0 is already logged"):
            tracker.record_step(start_ns=start_ns, end_ns=tracker.now_ns(), step=0)
        tracker.set_step(0)  # a rollback inside one segment: refused at the next step's with line
        with pytest.raises(UserInputError, match=r"close this Tracker and open a new one"):
            _steps(tracker, 1)
    assert [step.step for step in read_run(tmp_path).ranks[0].segments[0].steps] == [0]


def test_a_step_that_raised_may_run_again_and_a_new_segment_may_repeat_steps(tmp_path: Path) -> None:
    with Tracker(tmp_path, flush_interval_s=0.05) as tracker:
        with pytest.raises(RuntimeError):
            _failing(tracker)
        _steps(tracker, 1, step=0)  # the failed step 0 again: the reader allows it
        with pytest.raises(UserInputError, match=r"inside the block of step 1"):
            _record_inside(tracker)
    with Tracker(tmp_path, flush_interval_s=0.05) as restarted:  # the fix the message gives
        _steps(restarted, 1, step=0)
    segments = read_run(tmp_path).ranks[0].segments
    assert [[(step.step, step.error) for step in segment.steps] for segment in segments] == [
        [(0, True), (0, False), (1, True)],
        [(0, False)],
    ]


@given(st.lists(st.integers(min_value=0, max_value=40), max_size=60))
def test_step_indices_hold_what_a_set_holds(indices: list[int]) -> None:
    kept, reference = _StepIndices(), set()
    for index in indices:
        kept.add(index)
        reference.add(index)
        assert all((probe in kept) == (probe in reference) for probe in range(-1, 43))
    ranges = kept.ranges()
    assert all(end > start for start, end in ranges)
    assert all(before[1] < after[0] for before, after in itertools.pairwise(ranges))  # disjoint, apart
    assert sum(end - start for start, end in ranges) == len(reference)
