"""Impossible events stop the analysis naming the event, or are skipped and counted."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from lightspeed.errors import TraceError
from lightspeed.trace import load_trace, summarize, top_kernels
from lightspeed.trace.integrity import impossible_events, subset

T0 = 1_700_000_000_000_000.0  # us since the epoch, as Kineto writes


def _kernels(kineto: Any, count: int = 10) -> list[dict[str, Any]]:
    """``count`` kernels of 10 us, one every 20 us: a 50% busy GPU."""
    return [kineto.kernel(f"gemm{i}", T0 + 20 * i, 10) for i in range(count)]


@pytest.mark.parametrize(
    ("change", "field", "problem"),
    [
        ({"dur": -5}, "dur", "negative duration"),
        ({"dur": 1e300}, "dur", "no clock holds"),
        ({"ts": 1e300}, "ts", "no clock holds"),
        ({"ts": T0 - 1e13}, "ts", "span away"),  # 116 days early in a 200-us trace
        ({"dur": 5e12}, "dur", "over 1000x"),
    ],
)
def test_an_impossible_event_is_named_with_its_index_and_field(
    write_trace: Any, kineto: Any, change: dict[str, float], field: str, problem: str
) -> None:
    events = _kernels(kineto)
    events[4].update(change)
    path = write_trace("rank-0.json", kineto.document(events))
    # the document's first event is process_name metadata, so kernel 4 is traceEvents[5]
    with pytest.raises(TraceError, match=rf"{problem}.*traceEvents\[5\]\.{field}.*--skip-bad-events"):
        load_trace(path)


def test_a_kernel_without_ts_is_not_dropped_silently(write_trace: Any, kineto: Any) -> None:
    events = _kernels(kineto)
    del events[2]["ts"]
    with pytest.raises(TraceError, match=r"without a ts.*traceEvents\[3\]\.ts"):
        load_trace(write_trace("rank-0.json", kineto.document(events)))


def test_a_kernel_without_dur_is_not_dropped_silently(write_trace: Any, kineto: Any) -> None:
    # it used to vanish from every table: a kernel the GPU ran, left out without a word
    events = _kernels(kineto)
    del events[6]["dur"]
    path = write_trace("rank-0.json", kineto.document(events))
    with pytest.raises(TraceError, match=r"a GPU event without a dur.*traceEvents\[7\]\.dur"):
        load_trace(path)
    rank = load_trace(path, skip_bad_events=True).ranks[0]
    assert (rank.num_skipped_events, rank.events.num_events) == (1, 9)


def test_a_kernel_without_dur_among_flows_is_named_by_its_own_index(write_trace: Any, kineto: Any) -> None:
    # events without a dur (flows, instants) are set aside before their categories are read; the
    # kernel among them must still be found, at its own position in traceEvents
    events = _kernels(kineto)
    flow = {"ph": "f", "cat": "ac2g", "name": "ac2g", "pid": 0, "tid": 7, "ts": T0, "id": 1, "bp": "e"}
    instant = {"ph": "i", "cat": "cpu_instant_event", "name": "mark", "pid": 0, "tid": 1, "ts": T0}
    events[2:2] = [flow, instant, dict(flow, id=2)]
    del events[8]["dur"]  # kernel 5
    path = write_trace("rank-0.json", kineto.document(events))
    with pytest.raises(TraceError, match=r"a GPU event without a dur.*traceEvents\[9\]\.dur"):
        load_trace(path)
    rank = load_trace(path, skip_bad_events=True).ranks[0]
    assert [bad.event_index for bad in rank.skipped_events] == [9]
    assert rank.events.num_events == 9


def test_skipped_events_are_counted_and_the_rest_analysed(write_trace: Any, kineto: Any) -> None:
    events = _kernels(kineto)
    events[3]["dur"] = -500  # would make idle above 100% if kept
    events[7]["ts"] = 1e300  # would make the whole trace read as ns if it decided the unit
    trace = load_trace(write_trace("rank-0.json", kineto.document(events)), skip_bad_events=True)
    rank = trace.ranks[0]
    assert rank.time_unit == "us"
    assert rank.num_skipped_events == 2
    assert [event.event_index for event in rank.skipped_events] == [4, 8]
    assert rank.events.num_events == 8
    summary = summarize(trace)
    # 8 kernels of 10 us left; the first starts at 0, the last (kernel 9) ends at 190 us.
    assert summary.ranks[0].kernel_span_s == pytest.approx(190e-6)
    assert summary.ranks[0].idle_pct == pytest.approx(100 * (190 - 80) / 190, abs=0.01)
    assert any("2 impossible events skipped" in note for note in summary.notes)
    kernels = top_kernels(trace)
    assert any("2 impossible events skipped" in note for note in kernels.notes)


def test_a_negative_rank_is_refused(write_trace: Any, kineto: Any) -> None:
    path = write_trace("trace.json", kineto.document(_kernels(kineto), rank=-1, world_size=8))
    with pytest.raises(TraceError, match=r"impossible rank.*distributedInfo.rank.*-1"):
        load_trace(path)
    beyond = write_trace("other.json", kineto.document(_kernels(kineto), rank=8, world_size=8))
    with pytest.raises(TraceError, match="world size of 8"):
        load_trace(beyond)


def test_sub_microsecond_events_rounded_by_hta_are_not_impossible(write_trace: Any, kineto: Any) -> None:
    # HTA rounds starts up and ends down: a 0.4-us kernel at .3 becomes [1, 0], -1 us long in HTA;
    # lightspeed keeps such an end at its start (0 us), never below
    events = [*_kernels(kineto), kineto.kernel("tiny", T0 + 300.3, 0.4)]
    rank = load_trace(write_trace("rank-0.json", kineto.document(events))).ranks[0]
    assert rank.num_skipped_events == 0
    assert int(rank.events.duration_ns.min()) == 0  # never below: a rounded end before its start is 0


def test_the_column_check_applies_to_any_reader() -> None:
    # A table from another reader: exact ns, no rounding; a tenth event starts a year away.
    start = np.array([*range(0, 9000, 1000), 31_536_000 * 10**9], dtype=np.int64)
    duration = np.full(10, 500, dtype=np.int64)
    duration[2] = -1
    assert impossible_events(start_ns=start, duration_ns=duration) == [
        (2, "dur", "a negative duration"),
        (9, "ts", "1000x the span away from the rest"),
    ]


def test_subset_keeps_sparse_columns_pointing_at_their_rows(write_trace: Any, kineto: Any) -> None:
    events = _kernels(kineto, 4)
    events[1]["args"]["flops"] = 111
    events[3]["args"]["flops"] = 333
    table = load_trace(write_trace("rank-0.json", kineto.document(events))).ranks[0].events
    kept = subset(table, np.array([True, False, True, True]))
    assert kept.num_events == 3
    assert kept.flop_row.tolist() == [2]  # row 3 became row 2; row 1 (flops 111) is gone
    assert kept.flop.tolist() == [333.0]
    assert kept.event_index is not None
    assert kept.event_index.tolist() == [1, 3, 4]
