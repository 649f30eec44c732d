"""Per-step statistical comparison of two traces, worked out by hand."""

from __future__ import annotations

import math
from typing import Any

import pytest

from lightspeed.errors import TraceError, UserInputError
from lightspeed.trace import diff_traces, load_trace


def _trace(kineto: Any, gemm_us: list[float]) -> dict[str, Any]:
    k = kineto
    events = []
    for index, duration in enumerate([*gemm_us, 1.0]):  # one more step: the last, left out
        start = index * 1000
        events += [
            k.step(index + 1, start, 1000),
            k.launch(start + 1, 1, 2 * index + 1),
            k.launch(start + 2, 1, 2 * index + 2),
            k.kernel("gemm", start + 100, duration, correlation=2 * index + 1),
            k.kernel("ncclKernel_AllReduce_RING_LL", start + 300, 5, correlation=2 * index + 2, stream=20),
        ]
    return k.document(events)


def test_slower_kernel_is_found_with_an_exact_p_value(write_trace: Any, kineto: Any) -> None:
    before = load_trace(write_trace("a/rank-0.json", _trace(kineto, [10, 11, 12, 13, 14, 15])))
    after = load_trace(write_trace("b/rank-0.json", _trace(kineto, [20, 21, 22, 23, 24, 25])))
    result = diff_traces(before, after)
    rows = {row.metric: row for row in result.rows}
    gemm = rows["gemm"]
    assert (gemm.num_a, gemm.num_b) == (6, 6)
    # every B step above every A step: the most extreme of C(12, 6) = 924 splits, two-sided
    assert gemm.p_value == pytest.approx(2 / 924)
    assert gemm.effect_size == 1.0
    assert gemm.shift_s == pytest.approx(10e-6)  # median of the 36 differences 5..15 us
    assert gemm.change_pct == pytest.approx(100 * (22.5 / 12.5 - 1))
    assert gemm.verdict == "slower"
    assert rows["computation"].verdict == "slower"
    # untouched: communication and the CPU step time
    assert rows["communication"].verdict == "no significant change"
    assert rows["step time (CPU)"].verdict == "no significant change"
    # Benjamini-Hochberg over 7 metrics, 3 of them at 2/924 (GPU busy, computation, gemm)
    assert gemm.q_value == pytest.approx(2 / 924 * 7 / 3)


def test_same_trace_has_no_change(write_trace: Any, kineto: Any) -> None:
    trace = load_trace(write_trace("rank-0.json", _trace(kineto, [10, 11, 12, 13, 14, 15])))
    result = diff_traces(trace, trace)
    assert {row.verdict for row in result.rows} == {"no significant change"}


def test_too_few_steps_cannot_be_significant(write_trace: Any, kineto: Any) -> None:
    before = load_trace(write_trace("a/rank-0.json", _trace(kineto, [10, 11, 12])))
    after = load_trace(write_trace("b/rank-0.json", _trace(kineto, [20, 21, 22])))
    result = diff_traces(before, after)
    # 3 vs 3 steps: the smallest possible two-sided p is 2/20 = 0.1 > 0.05
    assert {row.verdict for row in result.rows} == {"too few steps"}


def test_a_trace_without_steps_is_refused(write_trace: Any, kineto: Any) -> None:
    trace = load_trace(write_trace("rank-0.json", kineto.document([kineto.kernel("gemm", 0, 5)])))
    with pytest.raises(TraceError, match="per-step samples"):
        diff_traces(trace, trace)


def test_bad_parameters(write_trace: Any, kineto: Any) -> None:
    trace = load_trace(write_trace("rank-0.json", _trace(kineto, [10, 11])))
    with pytest.raises(UserInputError):
        diff_traces(trace, trace, alpha=1.5)


def test_real_trace_against_itself(real_trace: Any) -> None:
    trace = load_trace(real_trace("trace_filter"))
    result = diff_traces(trace, trace, top=3)
    assert len(result.rows) == 5 + 3
    assert result.num_samples_a == 2  # two ranks x one counted step
    assert all(math.isclose(row.shift_s, 0.0, abs_tol=1e-12) for row in result.rows)
