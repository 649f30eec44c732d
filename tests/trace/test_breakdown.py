"""Temporal breakdown, kind overlaps, comm/comp overlap and step times on traces worked out by hand."""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lightspeed.errors import TraceError
from lightspeed.trace import load_trace, summarize


def _hand_trace(kineto: Any) -> dict[str, Any]:
    k = kineto
    events = [
        k.step(1, 0, 100),
        k.step(2, 100, 100),
        k.launch(0, 2, 1),
        k.launch(1, 2, 2),
        k.launch(2, 2, 3),
        k.launch(150, 2, 4),
        k.kernel("gemm", 10, 10, correlation=1),  # computation [10, 20)
        k.kernel("ncclKernel_AllReduce_RING_LL_Sum_float", 15, 15, correlation=2, stream=20),  # [15, 30)
        k.kernel("Memcpy HtoD (Pageable -> Device)", 40, 5, correlation=3, cat="gpu_memcpy"),  # [40, 45)
        k.kernel("gemm", 160, 10, correlation=4),  # launched in step 2, the last one
        k.cpu_op("aten::mm", 3, 1, flops=7e9),
    ]
    return k.document(events)


def test_breakdown_by_hand(write_trace: Any, kineto: Any) -> None:
    summary = summarize(load_trace(write_trace("rank-0.json", _hand_trace(kineto))))
    rank = summary.ranks[0]
    assert summary.last_step_excluded
    # span [10, 45) = 35 us; busy [10, 30) + [40, 45) = 25 us; idle 10 us
    assert rank.kernel_span_s == pytest.approx(35e-6)
    assert rank.idle_s == pytest.approx(10e-6)
    assert rank.compute_s == pytest.approx(10e-6)
    assert rank.non_compute_s == pytest.approx(15e-6)  # communication alone 10 + memory 5
    assert rank.idle_pct == pytest.approx(100 * 10 / 35)
    assert rank.compute_pct == pytest.approx(100 * 10 / 35)
    # computing during [15, 20) of the 15 us of communication
    assert rank.comm_comp_overlap_pct == pytest.approx(100 * 5 / 15)
    overlaps = {row.kinds: row.time_s for row in rank.kind_overlaps}
    assert overlaps == pytest.approx(
        {
            ("computation",): 5e-6,
            ("computation", "communication"): 5e-6,
            ("communication",): 10e-6,
            ("memory",): 5e-6,
        }
    )
    assert sum(row.share_pct for row in rank.kind_overlaps) == pytest.approx(100.0)


def test_steps_by_hand(write_trace: Any, kineto: Any) -> None:
    rank = summarize(load_trace(write_trace("rank-0.json", _hand_trace(kineto)))).ranks[0]
    first, last = rank.steps
    assert (first.step, first.counted, last.step, last.counted) == (1, True, 2, False)
    assert first.cpu_s == pytest.approx(100e-6)
    assert first.gpu_busy_s == pytest.approx(25e-6)
    assert (first.compute_s, first.communication_s, first.memory_s) == pytest.approx((10e-6, 15e-6, 5e-6))
    # the left-out step's GPU work is not analysed: unknown (NaN; "-" and null), not 0 s of busy
    # time although its kernel ran 10 us (this asserted 0.0 before, a step that looked idle)
    assert all(math.isnan(v) for v in (last.gpu_busy_s, last.compute_s, last.communication_s, last.memory_s))
    assert last.cpu_s == pytest.approx(100e-6)


def test_last_step_kept_on_request(write_trace: Any, kineto: Any) -> None:
    trace = load_trace(write_trace("rank-0.json", _hand_trace(kineto)))
    rank = summarize(trace, include_last_step=True).ranks[0]
    # span [10, 170) = 160; busy 25 + 10 = 35; idle 125
    assert rank.kernel_span_s == pytest.approx(160e-6)
    assert rank.idle_s == pytest.approx(125e-6)
    assert rank.compute_s == pytest.approx(20e-6)
    assert rank.steps[1].counted


def test_sol_from_flop_counts_and_the_catalog(write_trace: Any, kineto: Any) -> None:
    rank = summarize(load_trace(write_trace("rank-0.json", _hand_trace(kineto)))).ranks[0]
    assert rank.accelerator == "h100-sxm"
    # 7e9 FLOP over the 35 us span = 2e14 FLOP/s; H100 SXM dense bf16 989.5 TFLOP/s (datasheet)
    assert rank.achieved_flop_per_s == pytest.approx(2e14)
    assert rank.peak_flop_per_s == pytest.approx(989.5e12)
    assert rank.sol_pct == pytest.approx(100 * 2e14 / 989.5e12)


def test_unknown_device_says_no_sol(write_trace: Any, kineto: Any) -> None:
    content = _hand_trace(kineto)
    content["deviceProperties"][0]["name"] = "Mystery GPU 9000"
    rank = summarize(load_trace(write_trace("rank-0.json", content))).ranks[0]
    assert rank.accelerator is None
    assert math.isnan(rank.sol_pct)
    assert any("no SOL for Mystery GPU 9000" in note for note in rank.notes)


def test_rank_without_gpu_events_is_partial(write_trace: Any, kineto: Any) -> None:
    gpu = write_trace("r0.json", kineto.document([kineto.kernel("gemm", 0, 10)], rank=0))
    cpu = write_trace("r1.json", kineto.document([kineto.cpu_op("aten::add", 0, 10)], rank=1))
    summary = summarize(load_trace([gpu, cpu]))
    assert summary.partial
    assert not summary.ranks[0].partial
    assert summary.ranks[1].partial
    assert math.isnan(summary.ranks[1].idle_pct)
    assert any("rank 1: no GPU events" in note for note in summary.notes)


def test_real_cpu_only_rank_beside_a_gpu_rank_is_partial(real_trace: Any, tmp_path: Path) -> None:
    # rank_non_gpu (HTA's negative case) carries rank 0; give it rank 1 to sit beside a GPU rank
    import gzip

    source = next(real_trace("rank_non_gpu").glob("*.json.gz"))
    data = json.loads(gzip.decompress(source.read_bytes()))
    data["distributedInfo"] = {"rank": 1}
    (tmp_path / "rank1.json").write_text(json.dumps(data), encoding="utf-8")
    gpu_rank = next(real_trace("trace_filter").glob("*rank-0.json.gz"))
    summary = summarize(load_trace([gpu_rank, tmp_path / "rank1.json"]))
    assert [r.partial for r in summary.ranks] == [False, True]


def test_cpu_only_trace_is_one_clear_error(real_trace: Any) -> None:
    with pytest.raises(TraceError, match="CPU-only trace"):
        summarize(load_trace(real_trace("cpu_only")))


_KERNEL_NAMES = ["gemm", "ncclKernel_AllReduce", "Memcpy DtoD", "Stream Sync"]


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    spans=st.lists(
        st.tuples(st.integers(0, 3), st.integers(0, 500), st.integers(1, 60), st.integers(0, 2)),
        min_size=1,
        max_size=30,
    )
)
def test_time_is_conserved(spans: list[tuple[int, int, int, int]], kineto: Any) -> None:
    events = [
        kineto.kernel(_KERNEL_NAMES[kind], start, duration, stream=stream)
        for kind, start, duration, stream in spans
    ]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "rank-0.json"
        path.write_text(json.dumps(kineto.document(events)), encoding="utf-8")
        rank = summarize(load_trace(path)).ranks[0]
    assert rank.idle_s + rank.compute_s + rank.non_compute_s == pytest.approx(rank.kernel_span_s)
    assert min(rank.idle_s, rank.compute_s, rank.non_compute_s) >= -1e-15
    assert rank.idle_pct + rank.compute_pct + rank.non_compute_pct == pytest.approx(100.0)
    busy = sum(row.time_s for row in rank.kind_overlaps)
    # kind overlaps cover the busy time except "other" kernels running alone
    assert busy <= rank.kernel_span_s - rank.idle_s + 1e-12
    if not math.isnan(rank.comm_comp_overlap_pct):
        assert 0.0 <= rank.comm_comp_overlap_pct <= 100.0
