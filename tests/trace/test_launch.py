"""Launch delay, runtime call and short-kernel statistics, worked out by hand."""

from __future__ import annotations

from typing import Any

import pytest

from lightspeed.trace import launch_stats, load_trace


def test_launch_statistics_by_hand(write_trace: Any, kineto: Any) -> None:
    k = kineto
    events = [
        k.launch(0, 5, 1),  # cudaLaunchKernel [0, 5)
        k.kernel("gemm", 12, 3, correlation=1),  # delay 12 - 5 = 7, GPU 3 < runtime 5, short
        k.launch(20, 60, 2, name="cudaMemcpyAsync"),  # runtime 60 > 50 us cut-off
        k.kernel("Memcpy HtoD", 200, 100, correlation=2, cat="gpu_memcpy"),  # delay 200 - 80 = 120 > 100
        k.launch(300, 1, 3, name="cudaGraphLaunch"),  # not a one-kernel launch: not paired
        k.kernel("graph_kernel", 310, 4, correlation=3),
    ]
    report = launch_stats(load_trace(write_trace("rank-0.json", k.document(events))))
    (stats,) = report.ranks
    assert stats.num_launches == 2
    assert stats.launch_delay.mean_s == pytest.approx((7e-6 + 120e-6) / 2)
    assert stats.launch_delay.max_s == pytest.approx(120e-6)
    assert stats.runtime.total_s == pytest.approx(65e-6)
    assert stats.gpu_duration.total_s == pytest.approx(103e-6)
    assert stats.num_runtime_over_cutoff == 1
    assert stats.num_launch_delay_over_cutoff == 1
    assert stats.num_gpu_shorter_than_launch == 1
    assert stats.num_short_kernels == 1
    without_memory = launch_stats(load_trace(write_trace("r.json", k.document(events))), include_memory=False)
    assert without_memory.ranks[0].num_launches == 1
