"""One clock per host (lightspeed.clock): a tracker started after a wall-clock step (an NTP step, a
paused and resumed VM) still stamps its steps on the monitor's timeline, because both read the one
system-wide monotonic clock through the anchor ``monitor run`` hands down."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from lightspeed.clock import CLOCK_ANCHOR_ENV, anchor_env_value, boot_id, clock_anchor_ns
from lightspeed.goodput import Tracker

needs_boot_id = pytest.mark.skipif(boot_id() is None, reason="the system gives no boot id (not Linux)")
SIX_MINUTES_NS = 360 * 10**9


def _own_anchor_ns() -> int:
    return time.time_ns() - time.perf_counter_ns()


def test_without_a_handed_down_anchor_the_process_takes_its_own() -> None:
    assert abs(clock_anchor_ns({}) - _own_anchor_ns()) < 10**9


@needs_boot_id
def test_an_anchor_from_this_boot_is_taken_as_it_is() -> None:
    stepped = _own_anchor_ns() - SIX_MINUTES_NS  # the monitor anchored before a 6-minute clock step
    assert clock_anchor_ns({CLOCK_ANCHOR_ENV: anchor_env_value(stepped)}) == stepped


@pytest.mark.parametrize(
    "value",
    [
        "0f1e2d3c-another-boot:12345",  # another host or boot: its monotonic clock has another origin
        "no-colon-at-all",
        "BOOT:12ab",
        "BOOT:" + "9" * 400,  # huge
        "BOOT:",
    ],
)
def test_anchors_from_elsewhere_or_malformed_are_ignored(value: str) -> None:
    value = value.replace("BOOT", boot_id() or "none")
    assert abs(clock_anchor_ns({CLOCK_ANCHOR_ENV: value}) - _own_anchor_ns()) < 10**9


@needs_boot_id
def test_a_tracker_started_after_a_clock_step_stamps_on_the_monitors_timeline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the sampler's anchor, taken before the wall clock jumped 6 minutes ahead
    monitor_anchor = _own_anchor_ns() - SIX_MINUTES_NS
    monkeypatch.setenv(CLOCK_ANCHOR_ENV, anchor_env_value(monitor_anchor))
    before = monitor_anchor + time.perf_counter_ns()
    with Tracker(tmp_path / "run", world_size=1, rank=0) as tracker, tracker.step(tokens=8):
        pass
    after = monitor_anchor + time.perf_counter_ns()
    lines = [json.loads(line) for line in (tmp_path / "run" / "rank-00000.jsonl").read_text().splitlines()]
    step = next(line for line in lines if line["type"] == "step")
    # on the monitor's timeline, not 6 minutes later where the tracker's own anchor would put it
    assert before <= step["start_ns"] <= step["end_ns"] <= after


@needs_boot_id
def test_monitor_run_hands_its_anchor_to_the_command(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "mon"
    seen = tmp_path / "anchor.txt"
    code = f"import os, pathlib; pathlib.Path({str(seen)!r}).write_text(os.environ[{CLOCK_ANCHOR_ENV!r}])"
    result = run_cli(
        "monitor",
        "run",
        "--out",
        str(out),
        "--backend",
        "host",
        "--no-save",
        "--",
        sys.executable,
        "-c",
        code,
    )
    assert result.code == 0, result.err
    boot, _, anchor = seen.read_text().rpartition(":")
    assert boot == boot_id()
    assert abs(int(anchor) - _own_anchor_ns()) < 60 * 10**9  # the monitor's own, taken moments ago
