"""Stragglers: per step and per rank, how late each rank arrives at collectives.

Collectives are matched across ranks by (step, kernel name, order within the
step). All ranks leave a collective together, so the rank that arrives last
runs the shortest kernel and the others wait for it. The lateness of rank r
at one collective is therefore

    lateness_r = max over ranks of duration - duration_r

which needs no clock synchronisation between hosts (unlike comparing start
times). A rank's lateness in a step is the sum over the step's collectives;
the step's straggler is the rank with the largest.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from lightspeed.errors import TraceError
from lightspeed.records import Record
from lightspeed.trace.breakdown import NS, require_gpu_events
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


_Key = tuple[int, str, int]  # (step, kernel name, order within the step)


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
    durations: dict[_Key, dict[int, int]] = defaultdict(dict)
    notes = list(trace.notes)
    for rank in trace.ranks:
        for key, duration in _collective_durations(rank, dropped).items():
            durations[key][rank.rank] = duration
        if rank.steps.num_steps == 0:
            notes.append(f"rank {rank.rank}: no ProfilerStep annotations; its collectives cannot be matched")
    return straggler_report(durations, trace.rank_ids, notes, drop_last=dropped is not None)


def straggler_report(
    durations: dict[_Key, dict[int, int]], rank_ids: tuple[int, ...], notes: list[str], *, drop_last: bool
) -> StragglerReport:
    """The report of every rank's collective durations (shared with the parallel analysis in ``ranks``)."""
    matched = {key: by_rank for key, by_rank in durations.items() if len(by_rank) == len(rank_ids)}
    unmatched = sum(len(by_rank) for key, by_rank in durations.items() if key not in matched)
    if not matched:
        notes.append("no collective appears on every rank in the same step: nothing to compare")
    if unmatched:
        notes.append(f"{unmatched} collective calls are missing on some ranks and were left out")
    steps = _rank_steps(matched, rank_ids)
    return StragglerReport(
        steps=steps,
        ranks=_rank_totals(steps),
        num_matched_collectives=len(matched),
        num_unmatched_collectives=unmatched,
        last_step_excluded=drop_last,
        partial=unmatched > 0 or not matched,
        notes=tuple(notes),
    )


def _collective_durations(rank: RankTrace, dropped: int | None) -> dict[_Key, int]:
    events = gpu_events(rank, dropped_step=dropped)
    comm = events.subset((events.kind == COMMUNICATION) & (events.step >= 0))
    order = np.lexsort((comm.start_ns, comm.name_id, comm.step))
    seen: dict[tuple[int, int], int] = defaultdict(int)
    result: dict[_Key, int] = {}
    names = rank.events.names
    for index in order.tolist():
        step, name_id = int(comm.step[index]), int(comm.name_id[index])
        ordinal = seen[(step, name_id)]
        seen[(step, name_id)] += 1
        result[(step, names[name_id], ordinal)] = int(comm.end_ns[index] - comm.start_ns[index])
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
