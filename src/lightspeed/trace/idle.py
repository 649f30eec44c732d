"""Idle GPU time split into host wait, kernel wait and other.

A gap before a GPU event is

- **host wait** when the CPU call that launched the event started after the
  gap began: the GPU waited for the host to enqueue work;
- **kernel wait** otherwise, when the gap is shorter than
  ``kernel_wait_threshold_s`` (back-to-back launch overhead);
- **other** otherwise (e.g. waiting on an event from another stream).

Two views: per stream, as HTA's ``get_idle_time_breakdown`` (gaps between
consecutive events of one stream), and per rank over the whole GPU (gaps in
the union of all streams), whose three parts add up to the idle time of
:func:`lightspeed.trace.summarize`.

A CUDA stream runs its work in order, one item after another, so events that
overlap on one stream (an event nested in an earlier one; exact duplicate
rows are already left out by :func:`~lightspeed.trace.gpu.gpu_events`) come
from the trace, not the GPU: a stream's gap is measured from the latest end
seen so far on it, so an overlapping event adds no gap (never a negative
one), and a note counts them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np

from lightspeed.records import Record
from lightspeed.trace.breakdown import NS, require_gpu_events, whole_ns
from lightspeed.trace.gpu import GpuEvents, devices_note, dropped_step, duplicates_note, gpu_events
from lightspeed.trace.intervals import union
from lightspeed.trace.model import RankTrace, Trace
from lightspeed.trace.table import I64

DEFAULT_KERNEL_WAIT_THRESHOLD_S: Final = 30e-6  # HTA's consecutive_kernel_delay (30, in trace us)


@dataclass(frozen=True)
class IdleSplit(Record):
    """Idle time of one rank (``stream`` None: the whole GPU) or one of its streams."""

    rank: int
    stream: int | None
    idle_s: float
    host_wait_s: float
    kernel_wait_s: float
    other_s: float
    num_gaps: int


@dataclass(frozen=True)
class IdleReport(Record):
    """Idle splits per rank (whole GPU) and per stream."""

    ranks: tuple[IdleSplit, ...]
    streams: tuple[IdleSplit, ...]
    kernel_wait_threshold_s: float
    last_step_excluded: bool
    partial: bool
    notes: tuple[str, ...]


def idle_breakdown(
    trace: Trace,
    *,
    kernel_wait_threshold_s: float = DEFAULT_KERNEL_WAIT_THRESHOLD_S,
    include_last_step: bool = False,
) -> IdleReport:
    """Split each rank's and each stream's idle time into host wait, kernel wait and other.

    Example::

        report = idle_breakdown(load_trace("rank-0.json.gz"))
        report.ranks[0].host_wait_s
        # -> 0.0087
    """
    threshold_ns = whole_ns(
        kernel_wait_threshold_s, what="the kernel-wait threshold (--kernel-wait-threshold)"
    )
    require_gpu_events(trace)
    dropped = dropped_step(trace, include_last_step=include_last_step)
    ranks: list[IdleSplit] = []
    streams: list[IdleSplit] = []
    notes = list(trace.notes)
    for rank in trace.ranks:
        events = gpu_events(rank, dropped_step=dropped)
        if events.size == 0:
            notes.append(f"rank {rank.rank}: no GPU events")
            continue
        rank_streams, num_overlapping = _per_stream(rank, events, threshold_ns)
        found = (devices_note(rank), duplicates_note(events), _overlap_note(rank.rank, num_overlapping))
        notes.extend(note for note in found if note is not None)
        ranks.append(_whole_gpu(rank, events, threshold_ns))
        streams.extend(rank_streams)
    return IdleReport(
        ranks=tuple(ranks),
        streams=tuple(streams),
        kernel_wait_threshold_s=kernel_wait_threshold_s,
        last_step_excluded=dropped is not None,
        partial=len(ranks) < len(trace.ranks),
        notes=tuple(notes),
    )


def _launch_start(rank: RankTrace, events: GpuEvents) -> I64:
    """Start of each event's launching CPU call; events without one never count as host wait."""
    never = np.iinfo(np.int64).min
    starts = rank.events.start_ns[np.maximum(events.launch, 0)]
    return np.where(events.launch >= 0, starts, never)


def _split(
    rank: int, stream: int | None, gaps_ns: I64, *, gap_starts: I64, launches: I64, threshold_ns: int
) -> IdleSplit:
    host = launches > gap_starts
    kernel = ~host & (gaps_ns < threshold_ns)
    other = ~host & ~kernel
    return IdleSplit(
        rank=rank,
        stream=stream,
        idle_s=float(gaps_ns.sum()) * NS,
        host_wait_s=float(gaps_ns[host].sum()) * NS,
        kernel_wait_s=float(gaps_ns[kernel].sum()) * NS,
        other_s=float(gaps_ns[other].sum()) * NS,
        num_gaps=int(gaps_ns.size),
    )


def _whole_gpu(rank: RankTrace, events: GpuEvents, threshold_ns: int) -> IdleSplit:
    """Gaps in the union of every stream; the event that ends each gap decides its kind."""
    starts, ends = union(events.start_ns, events.end_ns)
    order = np.argsort(events.start_ns, kind="stable")
    # the first event (by start) of each merged interval after the first one
    first_in_group = np.searchsorted(events.start_ns[order], starts[1:], side="left")
    next_events = order[first_in_group]
    launches = _launch_start(rank, events)[next_events]
    gap_starts = ends[:-1]
    return _split(
        rank.rank,
        None,
        starts[1:] - gap_starts,
        gap_starts=gap_starts,
        launches=launches,
        threshold_ns=threshold_ns,
    )


def _per_stream(rank: RankTrace, events: GpuEvents, threshold_ns: int) -> tuple[list[IdleSplit], int]:
    """HTA's per-stream view: the gap before each event since the latest end of the earlier events
    of its stream; with the number of events that overlap an earlier one (they end no gap)."""
    launches_all = _launch_start(rank, events)
    rows: list[IdleSplit] = []
    num_overlapping = 0
    for stream in np.unique(events.stream).tolist():
        chosen = np.flatnonzero(events.stream == stream)
        order = chosen[np.argsort(events.start_ns[chosen], kind="stable")]
        latest_end = np.maximum.accumulate(events.end_ns[order])[:-1]
        following = order[1:]
        gaps = events.start_ns[following] - latest_end
        gap = gaps >= 0
        num_overlapping += int(gap.size - np.count_nonzero(gap))
        rows.append(
            _split(
                rank.rank,
                int(stream),
                gaps[gap],
                gap_starts=latest_end[gap],
                launches=launches_all[following[gap]],
                threshold_ns=threshold_ns,
            )
        )
    return rows, num_overlapping


def _overlap_note(rank: int, num_overlapping: int) -> str | None:
    if not num_overlapping:
        return None
    return (
        f"rank {rank}: {num_overlapping} GPU event(s) start before an earlier event on the same CUDA "
        "stream has ended, which a stream cannot run (nested or repeated rows in the trace): their "
        "stream's gaps are measured from the latest end so far, so they add no idle time"
    )
