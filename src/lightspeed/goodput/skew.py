"""Clock offsets between the hosts of a multi-rank run.

Each rank stamps its events with its own host's wall clock, so a host whose
clock runs ahead makes its rank look late at every step. A rank is read as
*offset* (not straggling) when it enters the steps it shares with the other
ranks late (or early) by the same amount throughout, ends them late by that
amount too (its steps are neither longer nor shorter: it neither waits for the
others nor makes them wait), and no rank on its host enters them on time (ranks
of one host share a clock). Its events are then shifted by the offset, so the
offset neither flags it as a straggler nor stretches the run's span; a note
says so. A lag that grows, or steps of another length, stays a straggler.

(Not :mod:`lightspeed.moe.skew`, how skewed an expert load is.)
"""

from __future__ import annotations

from dataclasses import replace
from typing import Final

import numpy as np

from lightspeed.goodput.reader import RankLog, RunLog, Segment
from lightspeed.goodput.step_times import median_mad

# A lag or lag change below this share of the typical step is noise (as the straggler test's floor).
RELATIVE_FLOOR: Final = 0.05
MIN_SHARED_STEPS: Final = 4


def align_clocks(run: RunLog) -> tuple[RunLog, tuple[str, ...]]:
    """``run`` with each clock-offset rank's events shifted onto the other ranks' clock; a note per rank."""
    if len(run.ranks) < 2:
        return run, ()
    starts = [_step_stamps(rank, end=False) for rank in run.ranks]
    ends = [_step_stamps(rank, end=True) for rank in run.ranks]
    medians = [_median_step_s(rank) for rank in run.ranks]
    typical_step_s = float(np.median([m for m in medians if m > 0])) if any(m > 0 for m in medians) else 0.0
    floor_s = RELATIVE_FLOOR * typical_step_s
    if floor_s <= 0:
        return run, ()
    offsets = _offsets(starts, ends, floor_s)
    on_time_hosts = {
        rank.segments[0].host
        for rank, offset in zip(run.ranks, offsets, strict=True)
        if offset is None or abs(offset) <= floor_s
    }
    shifted: list[RankLog] = []
    notes: list[str] = []
    for rank, offset in zip(run.ranks, offsets, strict=True):
        host = rank.segments[0].host
        is_offset = offset is not None and abs(offset) > floor_s and not (host and host in on_time_hosts)
        if not is_offset:
            shifted.append(rank)
            continue
        assert offset is not None
        shifted.append(_shift(rank, -offset))
        direction, when = ("ahead of", "late") if offset > 0 else ("behind", "early")
        notes.append(
            f"rank {rank.rank}'s clock{f' (host {host})' if host else ''} reads {abs(offset):.4g} s "
            f"{direction} the other ranks': it enters every step that much {when} at a constant lag and its "
            "steps end that much later too, so it is a clock offset between hosts, not a straggler; "
            "its events are shifted by it"
        )
    if not notes:
        return run, ()
    return replace(run, ranks=tuple(shifted)), tuple(notes)


def _offsets(
    starts: list[dict[tuple[int, int], float]], ends: list[dict[tuple[int, int], float]], floor_s: float
) -> list[float | None]:
    """Per rank, its constant lag when its steps' starts and ends both lag by it (a shifted clock);
    ``None`` when a lag varies, or the ends lag otherwise than the starts (its steps are longer or
    shorter: it waits or makes the others wait)."""
    start_reference, end_reference = _reference(starts), _reference(ends)
    offsets: list[float | None] = []
    for rank_starts, rank_ends in zip(starts, ends, strict=True):
        start_lag = _constant_lag(rank_starts, start_reference, floor_s)
        end_lag = _constant_lag(rank_ends, end_reference, floor_s)
        same = start_lag is not None and end_lag is not None and abs(start_lag - end_lag) <= floor_s
        offsets.append(start_lag if same else None)
    return offsets


def _step_stamps(rank: RankLog, *, end: bool) -> dict[tuple[int, int], float]:
    return {
        (index, step.step): step.end_s if end else step.start_s
        for index, segment in enumerate(rank.segments)
        for step in segment.steps
        if not step.error
    }


def _median_step_s(rank: RankLog) -> float:
    durations = [
        step.end_s - step.start_s for segment in rank.segments for step in segment.steps if not step.error
    ]
    return median_mad(durations)[0] if durations else 0.0


def _reference(stamps: list[dict[tuple[int, int], float]]) -> dict[tuple[int, int], float]:
    """Per shared step, the median stamp over the ranks that ran it (the majority's clock)."""
    values: dict[tuple[int, int], list[float]] = {}
    for series in stamps:
        for key, start in series.items():
            values.setdefault(key, []).append(start)
    return {key: float(np.median(found)) for key, found in values.items() if len(found) > 1}


def _constant_lag(
    series: dict[tuple[int, int], float], reference: dict[tuple[int, int], float], floor_s: float
) -> float | None:
    """The rank's lag behind the reference when it is the same at every shared step (else ``None``):
    its spread (MAD) and the change between the first and second half of the run both under ``floor_s``."""
    lags = [
        start - reference[key]
        for key, start in sorted(series.items(), key=lambda item: item[1])
        if key in reference
    ]
    if len(lags) < MIN_SHARED_STEPS:
        return None
    median, mad = median_mad(lags)
    half = len(lags) // 2
    growth = median_mad(lags[half:])[0] - median_mad(lags[:half])[0]
    if mad > floor_s or abs(growth) > floor_s:
        return None
    return median


def _shift(rank: RankLog, by_s: float) -> RankLog:
    return replace(rank, segments=tuple(_shift_segment(segment, by_s) for segment in rank.segments))


def _shift_segment(segment: Segment, by_s: float) -> Segment:
    return replace(
        segment,
        start_s=segment.start_s + by_s,
        end_s=segment.end_s + by_s,
        steps=tuple(
            replace(step, start_s=step.start_s + by_s, end_s=step.end_s + by_s) for step in segment.steps
        ),
        phases=tuple(
            replace(phase, start_s=phase.start_s + by_s, end_s=phase.end_s + by_s) for phase in segment.phases
        ),
    )
