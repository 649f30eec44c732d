"""Stragglers: per step and per rank, how late each rank arrives at collectives.

Collectives are matched across ranks by (step, kernel name, order within the
step). All ranks leave a collective together, so the rank that arrives last
runs the shortest kernel and the others wait for it. The lateness of rank r
at one collective is therefore

    lateness_r = max over ranks of duration - duration_r

which needs no clock synchronisation between hosts (unlike comparing start
times). A rank's lateness in a step is the sum over the step's collectives;
the step's straggler is the rank with the largest.

Where the trace gives collectives' sizes (see :mod:`lightspeed.trace.comms`), a
match is checked: every rank must name the same collective, and, for collectives
whose buffer is the same size on every rank (all-reduce, all-gather,
reduce-scatter, broadcast, reduce), the same size. A match that fails is not
the same call on every rank (the order within the step differs, or a rank's
trace lost a call): it is left out of the lateness and counted in a note. An
all-to-all, send/recv, gather or scatter may carry different sizes on different
ranks: it is kept, and a note counts those whose sizes differ (their lateness
includes the time the larger buffers took), unless it is an all-to-all whose
sizes are more than :data:`MAX_UNEVEN_SIZE_RATIO` apart: that is two different
calls paired by their order, and is left out like a mismatch (with its own note).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final, NamedTuple

import numpy as np

from lightspeed.errors import TraceError
from lightspeed.records import Record
from lightspeed.trace.breakdown import NS, require_gpu_events
from lightspeed.trace.comms import ParamFinder, described
from lightspeed.trace.gpu import dropped_step, gpu_events
from lightspeed.trace.kinds import COMMUNICATION
from lightspeed.trace.model import RankTrace, Trace


@dataclass(frozen=True)
class RankStep(Record):
    """One rank in one step: total and largest lateness over the matched collectives."""

    step: int
    rank: int
    lateness_s: float
    max_lateness_s: float
    num_collectives: int
    is_straggler: bool


@dataclass(frozen=True)
class RankLateness(Record):
    """One rank over all steps."""

    rank: int
    total_lateness_s: float
    mean_lateness_per_step_s: float
    num_steps: int
    num_steps_straggler: int


@dataclass(frozen=True)
class StragglerReport(Record):
    """Lateness per step and rank, ranks ordered from most to least late."""

    steps: tuple[RankStep, ...]
    ranks: tuple[RankLateness, ...]
    num_matched_collectives: int
    num_unmatched_collectives: int
    last_step_excluded: bool
    partial: bool
    notes: tuple[str, ...]
    # matched on every rank but not the same call: another collective or, where every rank's buffer
    # is the same size, another size on some rank; left out of the lateness
    num_mismatched_collectives: int = 0
    # kept, though their sizes differ across ranks (all-to-all, send/recv, gather, scatter may)
    num_uneven_collectives: int = 0


_Key = tuple[int, str, int]  # (step, kernel name, order within the step)
# collectives whose buffer may differ in size from rank to rank (uneven all-to-all splits, a pair's
# two ends, a root's gathered or scattered buffer); every other collective's is the same on every rank
UNEVEN_SIZES: Final = frozenset({"all_to_all", "send_recv", "gather", "scatter"})
# How far apart (largest / smallest known size) the ranks' buffers of one all-to-all may be and still
# be one call. Uneven splits come from token routing: a rank's share differs from the others' by the
# routing's imbalance, a small factor (MoE load max/mean is typically under 2-4, and bounded by the
# group size, a few hundred at most, even when every token goes to one rank); 1000x is beyond that,
# and a 1e5x pair (3 kB against 340 MB) is two different calls. Gather and scatter are not checked:
# the root's buffer is group-size times the others'.
MAX_UNEVEN_SIZE_RATIO: Final = 1000.0
_RATIO_CHECKED: Final = frozenset({"all_to_all"})


class Arrival(NamedTuple):
    """One rank's call of one matched collective: its duration, and what it was (the collective's
    name, and its size S in bytes, NaN where the trace does not give it)."""

    duration_ns: int
    collective: str
    size_bytes: float


def stragglers(trace: Trace, *, include_last_step: bool = False) -> StragglerReport:
    """Per-step, per-rank lateness of collectives across ranks (needs two or more ranks).

    Example::

        report = stragglers(load_trace("traces/"))
        report.ranks[0].rank  # the latest rank
        # -> 1
    """
    if len(trace.ranks) < 2:
        raise TraceError(
            trace.ranks[0].path,
            "straggler analysis compares ranks, and this trace has one",
            fix="pass a folder (or several files) holding every rank's trace",
        )
    require_gpu_events(trace)
    dropped = dropped_step(trace, include_last_step=include_last_step)
    durations: dict[_Key, dict[int, Arrival]] = defaultdict(dict)
    notes = list(trace.notes)
    for rank in trace.ranks:
        for key, duration in _collective_durations(rank, dropped).items():
            durations[key][rank.rank] = duration
        if rank.steps.num_steps == 0:
            notes.append(f"rank {rank.rank}: no ProfilerStep annotations; its collectives cannot be matched")
    return straggler_report(durations, trace.rank_ids, notes, drop_last=dropped is not None)


def straggler_report(
    durations: dict[_Key, dict[int, Arrival]], rank_ids: tuple[int, ...], notes: list[str], *, drop_last: bool
) -> StragglerReport:
    """The report of every rank's collective calls (shared with the parallel analysis in ``ranks``)."""
    on_every_rank = {key: by_rank for key, by_rank in durations.items() if len(by_rank) == len(rank_ids)}
    unmatched = sum(len(by_rank) for key, by_rank in durations.items() if key not in on_every_rank)
    mismatched = {key: by_rank for key, by_rank in on_every_rank.items() if _mismatch(by_rank.values())}
    matched = {key: by_rank for key, by_rank in on_every_rank.items() if key not in mismatched}
    uneven = sum(1 for by_rank in matched.values() if _sizes_differ(by_rank.values()))
    if not matched:
        notes.append("no collective appears on every rank in the same step: nothing to compare")
    if unmatched:
        notes.append(f"{unmatched} collective calls are missing on some ranks and were left out")
    apart = {key: by_rank for key, by_rank in mismatched.items() if _far_apart(by_rank.values())}
    if len(apart) < len(mismatched):
        notes.append(_mismatch_note({k: v for k, v in mismatched.items() if k not in apart}))
    if apart:
        notes.append(_apart_note(apart))
    if uneven:
        notes.append(
            f"{uneven} matched collective(s) ({_names(matched, uneven_only=True)}) carry different sizes on "
            "different ranks, as all-to-all and send/recv may: kept, and their lateness includes the "
            "time the larger buffers took"
        )
    durations_ns = {
        key: {rank: arrival.duration_ns for rank, arrival in by_rank.items()}
        for key, by_rank in matched.items()
    }
    steps = _rank_steps(durations_ns, rank_ids)
    return StragglerReport(
        steps=steps,
        ranks=_rank_totals(steps),
        num_matched_collectives=len(matched),
        num_unmatched_collectives=unmatched,
        last_step_excluded=drop_last,
        partial=unmatched > 0 or not matched or bool(mismatched),
        notes=tuple(notes),
        num_mismatched_collectives=len(mismatched),
        num_uneven_collectives=uneven,
    )


def _mismatch(arrivals: Iterable[Arrival]) -> bool:
    """Whether the ranks' calls matched by position are not one collective: another collective
    name, or, for one whose buffer is the same on every rank, another known size."""
    calls = list(arrivals)
    if len({call.collective for call in calls}) > 1:
        return True
    return _far_apart(calls) or (calls[0].collective not in UNEVEN_SIZES and _sizes_differ(calls))


def _far_apart(arrivals: Iterable[Arrival]) -> bool:
    """Whether one all-to-all's known sizes are more than :data:`MAX_UNEVEN_SIZE_RATIO` apart."""
    calls = list(arrivals)
    same = len({call.collective for call in calls}) == 1
    return same and calls[0].collective in _RATIO_CHECKED and _size_ratio(calls) > MAX_UNEVEN_SIZE_RATIO


def _size_ratio(arrivals: Iterable[Arrival]) -> float:
    """Largest over smallest known size (1 with fewer than two; inf when the smallest is 0)."""
    sizes = [call.size_bytes for call in arrivals if not math.isnan(call.size_bytes)]
    if len(sizes) < 2 or max(sizes) == 0:
        return 1.0
    return max(sizes) / min(sizes) if min(sizes) > 0 else math.inf


def _sizes_differ(arrivals: Iterable[Arrival]) -> bool:
    """Whether two of the known sizes differ (an unknown size, NaN, is not compared)."""
    sizes = {call.size_bytes for call in arrivals if not math.isnan(call.size_bytes)}
    return len(sizes) > 1


def _names(found: dict[_Key, dict[int, Arrival]], *, uneven_only: bool = False) -> str:
    """The collectives of ``found`` with their counts: ``all_reduce x 2, all_to_all x 1``."""
    counts: dict[str, int] = defaultdict(int)
    for by_rank in found.values():
        if not uneven_only or _sizes_differ(by_rank.values()):
            counts[" / ".join(sorted({call.collective for call in by_rank.values()}))] += 1
    return ", ".join(f"{name} x {count}" for name, count in sorted(counts.items()))


def _mismatch_note(mismatched: dict[_Key, dict[int, Arrival]]) -> str:
    """The note on matches that are not one call: how many, which, and the first one's sizes."""
    (step, _, _), first = min(mismatched.items())
    shown = ", ".join(
        f"rank {rank} {call.collective} {_size_text(call.size_bytes)}" for rank, call in sorted(first.items())
    )
    return (
        f"{len(mismatched)} collective(s) matched by their order in the step are not the same call on "
        f"every rank ({_names(mismatched)}; e.g. step {step}: {shown}): left out of the lateness"
    )


def _apart_note(apart: dict[_Key, dict[int, Arrival]]) -> str:
    """The note on all-to-alls whose sizes are too far apart to be one call: how many, the first."""
    (step, _, _), first = min(apart.items())
    shown = ", ".join(f"rank {rank} {_size_text(call.size_bytes)}" for rank, call in sorted(first.items()))
    return (
        f"{len(apart)} collective(s) ({_names(apart)}) matched by their order in the step carry sizes "
        f"more than {MAX_UNEVEN_SIZE_RATIO:g}x apart (e.g. step {step}: {shown}, "
        f"{_size_ratio(first.values()):,.0f}x), beyond any uneven split: not the same call on every "
        "rank, left out of the lateness"
    )


def _size_text(size_bytes: float) -> str:
    return "size unknown" if math.isnan(size_bytes) else f"{size_bytes:,.0f} B"


def _collective_durations(rank: RankTrace, dropped: int | None) -> dict[_Key, Arrival]:
    events = gpu_events(rank, dropped_step=dropped)
    comm = events.subset((events.kind == COMMUNICATION) & (events.step >= 0))
    order = np.lexsort((comm.start_ns, comm.name_id, comm.step))
    seen: dict[tuple[int, int], int] = defaultdict(int)
    result: dict[_Key, Arrival] = {}
    names = rank.events.names
    finder = ParamFinder(rank)
    ignored: list[str] = []  # the notes of comms (an assumed group size) are its to give
    for index in order.tolist():
        step, name_id = int(comm.step[index]), int(comm.name_id[index])
        ordinal = seen[(step, name_id)]
        seen[(step, name_id)] += 1
        kernel = names[name_id]
        params = finder.find(int(comm.row[index]), int(comm.launch[index]), kernel)
        kind, _, size = described(rank, params, ignored)
        result[(step, kernel, ordinal)] = Arrival(
            duration_ns=int(comm.end_ns[index] - comm.start_ns[index]),
            collective=kind.name if kind is not None else (params.collective or kernel),
            size_bytes=size,
        )
    return result


def _rank_steps(matched: dict[_Key, dict[int, int]], ranks: tuple[int, ...]) -> tuple[RankStep, ...]:
    total: dict[tuple[int, int], float] = defaultdict(float)
    largest: dict[tuple[int, int], float] = defaultdict(float)
    count: dict[tuple[int, int], int] = defaultdict(int)
    for (step, _, _), by_rank in matched.items():
        longest = max(by_rank.values())
        for rank, duration in by_rank.items():
            late = (longest - duration) * NS
            total[(step, rank)] += late
            largest[(step, rank)] = max(largest[(step, rank)], late)
            count[(step, rank)] += 1
    rows: list[RankStep] = []
    for step in sorted({step for step, _ in total}):
        worst = max(ranks, key=lambda r: (total[(step, r)], -r))
        rows.extend(
            RankStep(
                step=step,
                rank=rank,
                lateness_s=total[(step, rank)],
                max_lateness_s=largest[(step, rank)],
                num_collectives=count[(step, rank)],
                is_straggler=rank == worst and total[(step, rank)] > 0,
            )
            for rank in ranks
        )
    return tuple(rows)


def _rank_totals(steps: tuple[RankStep, ...]) -> tuple[RankLateness, ...]:
    by_rank: dict[int, list[RankStep]] = defaultdict(list)
    for row in steps:
        by_rank[row.rank].append(row)
    totals = [
        RankLateness(
            rank=rank,
            total_lateness_s=sum(r.lateness_s for r in rows),
            mean_lateness_per_step_s=sum(r.lateness_s for r in rows) / len(rows),
            num_steps=len(rows),
            num_steps_straggler=sum(1 for r in rows if r.is_straggler),
        )
        for rank, rows in by_rank.items()
    ]
    return tuple(sorted(totals, key=lambda r: (-r.total_lateness_s, r.rank)))
