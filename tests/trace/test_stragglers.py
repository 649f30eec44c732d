"""Lateness of ranks at collectives, worked out by hand."""

from __future__ import annotations

from typing import Any

import pytest

from lightspeed.errors import TraceError
from lightspeed.trace import load_trace, stragglers


def _rank(kineto: Any, rank: int, durations: list[float], extra: bool = False) -> dict[str, Any]:
    k = kineto
    events = [k.step(1, 0, 1000), k.step(2, 1000, 1000)]
    for index, duration in enumerate(durations):
        events += [
            k.launch(10 + index, 1, index + 1),
            k.kernel(
                "ncclKernel_AllReduce_RING_LL_Sum_float", 100 * (index + 1), duration, correlation=index + 1
            ),
        ]
    events += [
        k.launch(1100, 1, 50),
        k.kernel("ncclKernel_AllReduce_RING_LL_Sum_float", 1200, 9, correlation=50),
    ]
    if extra:
        events += [k.launch(20, 1, 60), k.kernel("ncclKernel_Broadcast_RING_LL", 500, 3, correlation=60)]
    return k.document(events, rank=rank, world_size=3)


def test_lateness_by_hand(write_trace: Any, kineto: Any) -> None:
    paths = [
        write_trace("r0.json", _rank(kineto, 0, [10, 20])),
        write_trace("r1.json", _rank(kineto, 1, [4, 20])),
        write_trace("r2.json", _rank(kineto, 2, [7, 5], extra=True)),
    ]
    report = stragglers(load_trace(paths))
    # collective 1: longest 10 -> lateness 0, 6, 3; collective 2: longest 20 -> 0, 0, 15
    late = {(row.step, row.rank): row for row in report.steps}
    assert late[(1, 0)].lateness_s == pytest.approx(0.0)
    assert late[(1, 1)].lateness_s == pytest.approx(6e-6)
    assert late[(1, 2)].lateness_s == pytest.approx(18e-6)
    assert late[(1, 2)].max_lateness_s == pytest.approx(15e-6)
    assert late[(1, 2)].is_straggler
    assert not late[(1, 1)].is_straggler
    assert [r.rank for r in report.ranks] == [2, 1, 0]
    assert report.num_matched_collectives == 2  # step 2 is the last one, left out
    # rank 2's extra broadcast has no partner on the other ranks
    assert report.num_unmatched_collectives == 1
    assert report.partial


def test_last_step_counted_on_request(write_trace: Any, kineto: Any) -> None:
    paths = [write_trace(f"r{r}.json", _rank(kineto, r, [10])) for r in range(3)]
    report = stragglers(load_trace(paths), include_last_step=True)
    assert report.num_matched_collectives == 2
    assert {row.step for row in report.steps} == {1, 2}


def test_one_rank_is_not_enough(write_trace: Any, kineto: Any) -> None:
    with pytest.raises(TraceError, match="compares ranks"):
        stragglers(load_trace(write_trace("r0.json", _rank(kineto, 0, [10]))))


def test_real_two_rank_trace(real_trace: Any) -> None:
    report = stragglers(load_trace(real_trace("trace_filter")))
    # each rank ran five SendRecv kernels in step 551 (552 is the last step); one all_reduce pair
    # differs in size (107,822,144 B on one rank, 105,033,720 B on the other), and one all_to_all
    # pair is 3,072 B against 339,738,624 B (110,592x apart: two different calls, not an uneven
    # split), so both are left out
    assert report.num_matched_collectives == 3
    assert report.num_mismatched_collectives == 2
    assert {row.step for row in report.steps} == {551}
    assert sum(row.is_straggler for row in report.steps) == 1
