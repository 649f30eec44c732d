"""Trace cut-offs between two whole nanoseconds are refused, not rounded: a trace's times are whole
ns, so ``--delay-cutoff 0.5ns`` was silently 1 ns (or 0) and ``1.5ns`` 2 ns, counting other events
than the ones asked for. A cut-off that is a whole number of ns, however written, is kept."""

from __future__ import annotations

import json
from typing import Any

import pytest

from expect import one_line_error
from lightspeed.errors import UserInputError
from lightspeed.trace import idle_breakdown, launch_stats, load_trace


def _launches(kineto: Any) -> dict[str, Any]:
    k = kineto
    return k.document([k.launch(0, 50, 1), k.kernel("gemm", 150, 10, correlation=1)])


# (option, value, the whole ns a refusal suggests): 0.5 ns is under 1 ns; 1.5 ns lies between 1 and
# 2; 100.0005 us is 100,000.5 ns, between 100,000 and 100,001
REFUSED = [
    ("--delay-cutoff", "0.5ns", "1ns"),
    ("--delay-cutoff", "1.5ns", "1ns or 2ns"),
    ("--runtime-cutoff", "100.0005us", "100000ns or 100001ns"),
    ("--short-kernel", "0.25ns", "1ns"),
]


@pytest.mark.parametrize(("option", "value", "suggested"), REFUSED)
def test_launch_cutoff_between_whole_ns_is_refused(
    run_cli: Any, write_trace: Any, kineto: Any, *, option: str, value: str, suggested: str
) -> None:
    path = str(write_trace("rank-0.json", _launches(kineto)))
    result = run_cli("trace", "launch", path, option, value, "--no-cache")
    one_line_error(result, option, "whole nanoseconds", f"e.g. {suggested}")


def test_idle_threshold_between_whole_ns_is_refused(run_cli: Any, write_trace: Any, kineto: Any) -> None:
    path = str(write_trace("rank-0.json", _launches(kineto)))
    result = run_cli("trace", "idle", path, "--kernel-wait-threshold", "2.5ns", "--no-cache")
    one_line_error(result, "--kernel-wait-threshold", "whole nanoseconds", "e.g. 2ns or 3ns")


@pytest.mark.parametrize("value", ["1ns", "0", "100us", "0.1ms", "100000ns"])
def test_whole_ns_cutoffs_are_kept(run_cli: Any, write_trace: Any, kineto: Any, value: str) -> None:
    # 100us parses to 9.999999999999999e-05 s, 99,999.99999999999 ns: the same 100,000 ns as 0.1ms
    path = str(write_trace("rank-0.json", _launches(kineto)))
    result = run_cli("trace", "launch", path, "--delay-cutoff", value, "--json", "--no-cache")
    assert result.code == 0, result.err
    expected_s = {"1ns": 1e-9, "0": 0.0}.get(value, 1e-4)
    assert json.loads(result.out)["launch_delay_cutoff_s"] == pytest.approx(expected_s, rel=1e-12)


def test_library_refuses_a_fractional_ns_cutoff(write_trace: Any, kineto: Any) -> None:
    trace = load_trace(write_trace("rank-0.json", _launches(kineto)))
    with pytest.raises(UserInputError, match="whole nanoseconds"):
        launch_stats(trace, launch_delay_cutoff_s=1.5e-9)
    with pytest.raises(UserInputError, match="whole nanoseconds"):
        idle_breakdown(trace, kernel_wait_threshold_s=0.5e-9)
