"""What the left-out last step takes away, worked out by hand: its GPU events and FLOPs, nothing
else. GPU events without a launch call go by their own start; a rank that lacks the collection's
last step number keeps all its steps; the left-out step's GPU time is unknown, not 0."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from lightspeed.records import to_jsonable
from lightspeed.trace import load_trace, stragglers, stragglers_ranks, summarize, summarize_ranks, top_kernels

H100_DENSE_BF16_FLOP_PER_S = 989.5e12  # NVIDIA H100 SXM datasheet, dense bf16
NCCL = "ncclKernel_AllReduce_RING_LL_Sum_float"


def _three_steps(kineto: Any) -> dict[str, Any]:
    """Steps 1-3 at 0, 1000, 2000 us (1000 us each); in each an aten::mm of 1e9 FLOP at +5 us
    launching a 100 us gemm at +100 us; a copy with no launch call at [500, 550) (step 1) and
    another at [2500, 2520) (in the last step)."""
    k = kineto
    events: list[dict[str, Any]] = []
    for number, start in ((1, 0), (2, 1000), (3, 2000)):
        events += [
            k.step(number, start, 1000),
            k.cpu_op("aten::mm", start + 5, 20, flops=1e9),
            k.launch(start + 10, 5, number),
            k.kernel("gemm", start + 100, 100, correlation=number),
        ]
    events.append(k.kernel("Memcpy DtoD (Device -> Device)", 500, 50, cat="gpu_memcpy"))
    events.append(k.kernel("Memcpy DtoD (Device -> Device)", 2500, 20, cat="gpu_memcpy"))
    return k.document(events)


def test_flop_of_the_left_out_step_are_not_counted(write_trace: Any, kineto: Any) -> None:
    rank = summarize(load_trace(write_trace("rank-0.json", _three_steps(kineto)))).ranks[0]
    # counted: the gemms of steps 1 and 2 and the step-1 copy: span [100, 1200) = 1100 us;
    # FLOPs of the two aten::mm ops that began before step 3 (2000 us): 2e9
    assert rank.kernel_span_s == pytest.approx(1100e-6)
    assert rank.flop == pytest.approx(2e9)
    assert rank.achieved_flop_per_s == pytest.approx(2e9 / 1100e-6)  # 1.818e12
    assert rank.sol_pct == pytest.approx(100 * (2e9 / 1100e-6) / H100_DENSE_BF16_FLOP_PER_S)  # 0.184 %


def test_flop_of_every_step_with_the_last_step_kept(write_trace: Any, kineto: Any) -> None:
    trace = load_trace(write_trace("rank-0.json", _three_steps(kineto)))
    rank = summarize(trace, include_last_step=True).ranks[0]
    # span [100, 2520) = 2420 us (the last copy ends last); 3e9 FLOP
    assert rank.kernel_span_s == pytest.approx(2420e-6)
    assert rank.flop == pytest.approx(3e9)
    assert rank.achieved_flop_per_s == pytest.approx(3e9 / 2420e-6)


def test_gpu_events_without_a_launch_go_by_their_own_start(write_trace: Any, kineto: Any) -> None:
    path = write_trace("rank-0.json", _three_steps(kineto))
    parsed = load_trace(path, cache=False)
    rank = summarize(parsed).ranks[0]
    # 2 gemms + the copy at 500 us (before step 3 began); the copy at 2500 us is in the last step
    assert rank.num_gpu_events == 3
    first, second, _ = rank.steps
    assert first.memory_s == pytest.approx(50e-6)  # the copy's own start (500 us) is in step 1
    assert first.gpu_busy_s == pytest.approx(150e-6)
    assert second.memory_s == 0.0
    kernels = {(k.kind, k.name): k for k in top_kernels(parsed).kernels}
    copy = kernels[("memory", "Memcpy DtoD (Device -> Device)")]
    assert (copy.count, copy.total_s) == (1, pytest.approx(50e-6))
    kept = {(k.kind, k.name): k for k in top_kernels(parsed, include_last_step=True).kernels}
    assert kept[("memory", "Memcpy DtoD (Device -> Device)")].count == 2
    # a table read back from the cache keeps the same events (its stored launch times)
    load_trace(path)
    cached = load_trace(path)
    assert cached.ranks[0].events.stored_num_gpu_events() == 5  # read from the cache entry
    assert to_jsonable(summarize(cached)) == to_jsonable(summarize(parsed))
    assert to_jsonable(top_kernels(cached)) == to_jsonable(top_kernels(parsed))


def test_the_left_out_step_has_no_gpu_time_rather_than_zero(
    write_trace: Any, kineto: Any, run_cli: Any
) -> None:
    path = write_trace("rank-0.json", _three_steps(kineto))
    last = summarize(load_trace(path)).ranks[0].steps[2]
    assert (last.step, last.counted) == (3, False)
    assert last.cpu_s == pytest.approx(1000e-6)
    assert all(math.isnan(v) for v in (last.gpu_busy_s, last.compute_s, last.communication_s, last.memory_s))
    result = run_cli("trace", "summary", str(path), "--json")
    assert result.code == 0, result.err
    step = json.loads(result.out)[0]["steps"][2]
    assert step == {
        "step": 3,
        "cpu_us": 1000.0,
        "gpu_busy_us": None,
        "compute_us": None,
        "communication_us": None,
        "memory_us": None,
        "counted": False,
    }
    kept = summarize(load_trace(path), include_last_step=True).ranks[0].steps[2]
    assert kept.counted
    assert kept.gpu_busy_s == pytest.approx(120e-6)  # gemm 100 us + copy 20 us


def _ragged(write_trace: Any, kineto: Any) -> list[Path]:
    """Rank 0 records steps 1-3, rank 1 only step 1. Each step: a 100 us gemm launched at +10 us,
    then an all-reduce launched at +20 us that runs from +250 us, 150 us on rank 0 and 100 us on
    rank 1 (rank 1 arrived 50 us late)."""
    k = kineto
    paths = []
    for rank, steps, nccl_us in ((0, (1, 2, 3), 150), (1, (1,), 100)):
        events: list[dict[str, Any]] = []
        for number in steps:
            start = (number - 1) * 1000
            events += [
                k.step(number, start, 1000),
                k.launch(start + 10, 5, 2 * number),
                k.kernel("gemm", start + 100, 100, correlation=2 * number),
                k.launch(start + 20, 5, 2 * number + 1),
                k.kernel(NCCL, start + 250, nccl_us, correlation=2 * number + 1, stream=13),
            ]
        paths.append(write_trace(f"rank-{rank}.json", k.document(events, rank=rank, world_size=2)))
    return paths


def test_a_rank_with_fewer_steps_keeps_them(write_trace: Any, kineto: Any) -> None:
    paths = _ragged(write_trace, kineto)
    summary = summarize(load_trace(paths))
    assert summary.last_step_excluded  # the collection's step 3
    rank0, rank1 = summary.ranks
    # rank 0 leaves out step 3: gemm [100, 200) .. all-reduce of step 2 ends at 1400: 1300 us
    assert rank0.kernel_span_s == pytest.approx(1300e-6)
    assert [s.counted for s in rank0.steps] == [True, True, False]
    # rank 1 has no step 3 and keeps its step 1: gemm [100, 200), all-reduce [250, 350)
    assert not rank1.partial
    assert rank1.num_gpu_events == 2
    assert rank1.kernel_span_s == pytest.approx(250e-6)
    assert [s.counted for s in rank1.steps] == [True]
    assert rank1.steps[0].gpu_busy_s == pytest.approx(200e-6)
    assert not any("no GPU events" in note for note in summary.notes)
    # the parallel path (a worker sees one rank) decides the same way
    assert to_jsonable(summarize_ranks(paths, jobs=1)) == to_jsonable(summary)


def test_stragglers_match_the_steps_a_shorter_rank_has(write_trace: Any, kineto: Any) -> None:
    paths = _ragged(write_trace, kineto)
    report = stragglers(load_trace(paths))
    # step 1's all-reduce is on both ranks: rank 1 ran 100 us, rank 0 150 us, so rank 1 is
    # 150 - 100 = 50 us late; step 2 is on rank 0 only
    lateness = {row.rank: row.total_lateness_s for row in report.ranks}
    assert lateness == pytest.approx({0: 0.0, 1: 50e-6})
    assert report.num_matched_collectives == 1
    assert to_jsonable(stragglers_ranks(paths, jobs=1)) == to_jsonable(report)
