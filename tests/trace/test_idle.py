"""Idle time split into host wait, kernel wait and other, worked out by hand."""

from __future__ import annotations

from typing import Any

import pytest

from lightspeed.errors import UserInputError
from lightspeed.trace import idle_breakdown, load_trace, summarize


def _trace(kineto: Any) -> dict[str, Any]:
    k = kineto
    return k.document(
        [
            k.launch(90, 2, 1),
            k.launch(112, 2, 2),  # after kernel A ended (110): host wait before B
            k.launch(95, 2, 3),
            k.launch(96, 2, 4),
            k.launch(135, 2, 5),  # after C ended (130): host wait before E
            k.kernel("A", 100, 10, correlation=1),  # [100, 110)
            k.kernel("B", 115, 5, correlation=2),  # [115, 120): gap 5, host wait
            k.kernel("C", 122, 8, correlation=3),  # [122, 130): gap 2 < 30 us, kernel wait
            k.kernel("D", 200, 10, correlation=4),  # [200, 210): gap 70 on stream 7, other
            k.kernel("E", 140, 10, correlation=5, stream=20),  # [140, 150) on another stream
        ]
    )


def test_whole_gpu_split_by_hand(write_trace: Any, kineto: Any) -> None:
    report = idle_breakdown(load_trace(write_trace("rank-0.json", _trace(kineto))))
    (gpu,) = report.ranks
    # gaps of the union: 110-115 host (B), 120-122 kernel (C), 130-140 host (E), 150-200 other (D)
    assert gpu.host_wait_s == pytest.approx(15e-6)
    assert gpu.kernel_wait_s == pytest.approx(2e-6)
    assert gpu.other_s == pytest.approx(50e-6)
    assert gpu.num_gaps == 4


def test_whole_gpu_idle_is_the_summary_idle(write_trace: Any, kineto: Any) -> None:
    trace = load_trace(write_trace("rank-0.json", _trace(kineto)))
    gpu = idle_breakdown(trace).ranks[0]
    assert gpu.idle_s == pytest.approx(summarize(trace).ranks[0].idle_s)
    assert gpu.host_wait_s + gpu.kernel_wait_s + gpu.other_s == pytest.approx(gpu.idle_s)


def test_per_stream_split_by_hand(write_trace: Any, kineto: Any) -> None:
    report = idle_breakdown(load_trace(write_trace("rank-0.json", _trace(kineto))))
    streams = {s.stream: s for s in report.streams}
    # stream 7: A B C D -> gaps 5 host, 2 kernel, 70 other; stream 20 has one kernel, no gap
    assert (streams[7].host_wait_s, streams[7].kernel_wait_s, streams[7].other_s) == pytest.approx(
        (5e-6, 2e-6, 70e-6)
    )
    assert streams[20].num_gaps == 0


def test_threshold_moves_kernel_wait_to_other(write_trace: Any, kineto: Any) -> None:
    trace = load_trace(write_trace("rank-0.json", _trace(kineto)))
    gpu = idle_breakdown(trace, kernel_wait_threshold_s=1e-6).ranks[0]
    assert gpu.kernel_wait_s == 0.0
    assert gpu.other_s == pytest.approx(52e-6)
    with pytest.raises(UserInputError):
        idle_breakdown(trace, kernel_wait_threshold_s=-1.0)
