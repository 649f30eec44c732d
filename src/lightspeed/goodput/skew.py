"""Clock offsets between the hosts of a multi-rank run.

Each rank stamps its events with its own host's wall clock, so a host whose
clock runs ahead makes its ranks look late at every step. Ranks of one host
share a clock, so offsets are per host and ranks of one host are never shifted
against each other (a run on one host is never shifted). A host is read as
*offset* (its ranks are not straggling) when every one of its ranks enters the
steps it shares with the other ranks late (or early) by the same amount
throughout and ends them late by that amount too (its steps are neither longer
nor shorter: it neither waits for the others nor makes them wait); a rank of
the host that runs on time shows the clock is right. The host's events are then
shifted by the offset, so the offset neither flags its ranks as stragglers nor
stretches the run's span; a note says so. A lag that grows, or steps of
another length, stays a straggler.

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
    """``run`` with each clock-offset host's events shifted onto the other hosts' clock; a note per host.

    Ranks of one host share its clock, so offsets are per host: a host is shifted only when every one
    of its ranks lags the others by the same constant amount, and all its ranks by that amount. A run
    on one host (or whose ranks share one clock) is never shifted.
    """
    clocks = _clocks(run.ranks)
    if len(clocks) < 2:
        return run, ()
    medians = [_median_step_s(rank) for rank in run.ranks]
    typical_step_s = float(np.median([m for m in medians if m > 0])) if any(m > 0 for m in medians) else 0.0
    floor_s = RELATIVE_FLOOR * typical_step_s
    if floor_s <= 0:
        return run, ()
    starts = [_step_stamps(rank, end=False) for rank in run.ranks]
    ends = [_step_stamps(rank, end=True) for rank in run.ranks]
    rank_offsets = _offsets(starts, ends, floor_s)
    shift_by_s = [0.0] * len(run.ranks)
    notes: list[str] = []
    for members in clocks:
        offset = _clock_offset([rank_offsets[index] for index in members], floor_s)
        if offset is None:
            continue
        for index in members:
            shift_by_s[index] = -offset
        notes.append(_offset_note([run.ranks[index] for index in members], offset))
    if not notes:
        return run, ()
    shifted = tuple(
        _shift(rank, by_s) if by_s else rank for rank, by_s in zip(run.ranks, shift_by_s, strict=True)
    )
    return replace(run, ranks=shifted), tuple(notes)


def _clocks(ranks: tuple[RankLog, ...]) -> list[list[int]]:
    """Indices of ``ranks`` grouped by the clock they share: one group per host, one per rank of no host."""
    groups: dict[tuple[str, int], list[int]] = {}
    for index, rank in enumerate(ranks):
        host = rank.segments[0].host if rank.segments else ""
        groups.setdefault((host, -1) if host else ("", index), []).append(index)
    return list(groups.values())


def _clock_offset(offsets: list[float | None], floor_s: float) -> float | None:
    """One clock's offset from its ranks' constant lags: their median when every rank lags by it
    (within ``floor_s`` of each other) and it exceeds ``floor_s``; else ``None`` (a rank of the host
    that runs on time, or at another lag, shows the clock is right and the others are slow)."""
    if any(offset is None for offset in offsets):
        return None
    known = [offset for offset in offsets if offset is not None]
    if max(known) - min(known) > floor_s:
        return None
    offset = float(np.median(known))
    return offset if abs(offset) > floor_s else None


def _offset_note(ranks: list[RankLog], offset_s: float) -> str:
    host = ranks[0].segments[0].host if ranks[0].segments else ""
    if len(ranks) == 1:
        whose = f"rank {ranks[0].rank}'s clock"
    else:
        whose = "the clock of ranks " + ", ".join(str(rank.rank) for rank in ranks)
    direction, when, end_when = (
        ("ahead of", "late", "later") if offset_s > 0 else ("behind", "early", "earlier")
    )
    they_enter, its = ("it enters", "its") if len(ranks) == 1 else ("they enter", "their")
    return (
        f"{whose}{f' (host {host})' if host else ''} reads {abs(offset_s):.4g} s {direction} the other "
        f"hosts': {they_enter} every step that much {when} at a constant lag and {its} steps end that much "
        f"{end_when} too, so it is a clock offset between hosts, not a straggler; "
        f"{its} events are shifted by it"
    )


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
