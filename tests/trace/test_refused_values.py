"""Values refused with one line that names them: a trace field of the wrong type (valid JSON, so
not "damaged") and a kernel-wait threshold without its unit."""

from __future__ import annotations

import json
from typing import Any

import pytest

from lightspeed.errors import TraceError
from lightspeed.trace import load_trace


@pytest.mark.parametrize("array_format", [False, True])
def test_a_field_of_the_wrong_type_is_named_not_called_damaged_json(
    write_trace: Any, kineto: Any, array_format: bool
) -> None:
    k = kineto
    launch = k.launch(0, 5, 1)
    launch["args"]["correlation"] = "x"  # valid JSON, the wrong type for a correlation id
    document = k.document([k.step(1, 0, 100), k.kernel("gemm", 10, 10, correlation=1), launch])
    # traceEvents: [process_name metadata, step, kernel, launch]: the launch is event 3
    path = write_trace("rank-0.json", document["traceEvents"] if array_format else document)
    with pytest.raises(TraceError) as caught:
        load_trace(path, cache=False)
    message = str(caught.value)
    assert "unexpected event (Expected `int`, got `str`)" in message
    assert "traceEvents[3].args.correlation" in message
    assert "not valid JSON" not in message
    assert "damaged" not in message


def test_the_cli_says_which_field_in_one_line(write_trace: Any, kineto: Any, run_cli: Any) -> None:
    k = kineto
    kernel = k.kernel("gemm", 10, 10, correlation=1)
    kernel["args"]["correlation"] = "x"
    path = write_trace("rank-0.json", k.document([k.step(1, 0, 100), kernel]))
    result = run_cli("trace", "summary", str(path), "--no-cache")
    assert result.code == 2
    assert result.err.count("\n") == 1
    assert "Traceback" not in result.err
    assert "field 'traceEvents[2].args.correlation'" in result.err


@pytest.mark.parametrize("bare", ["30", "0.5", "2e3"])
def test_a_kernel_wait_threshold_without_a_unit_is_refused(
    write_trace: Any, kineto: Any, run_cli: Any, bare: str
) -> None:
    # lightspeed's durations read a bare number as seconds, HTA's threshold is microseconds
    path = write_trace("rank-0.json", kineto.document([kineto.kernel("gemm", 10, 10)]))
    result = run_cli("trace", "idle", str(path), "--kernel-wait-threshold", bare)
    assert result.code == 2
    assert result.err.count("\n") == 1
    assert f"{bare}: give a unit ({bare}us or {bare}ms)" in result.err


def test_a_kernel_wait_threshold_with_its_unit_is_read(write_trace: Any, kineto: Any, run_cli: Any) -> None:
    k = kineto
    # gemm [10, 20), gemm [45, 55), both launched before the gap began (calls at 0 and 1 us): one
    # 25 us gap, kernel wait under a 30 us threshold, "other" under 20 us or 0
    events = [k.launch(0, 1, 1), k.launch(1, 1, 2), k.kernel("gemm", 10, 10, correlation=1)]
    events.append(k.kernel("gemm", 45, 10, correlation=2))
    path = write_trace("rank-0.json", k.document(events))
    for threshold, kernel_wait_us in (("30us", 25.0), ("20us", 0.0), ("0", 0.0)):
        result = run_cli(
            "trace", "idle", str(path), "--kernel-wait-threshold", threshold, "--json", "--no-cache"
        )
        assert result.code == 0, result.err
        (rank,) = json.loads(result.out)["ranks"]
        assert rank["kernel_wait_s"] * 1e6 == pytest.approx(kernel_wait_us), threshold
