"""Split a span of wall time among overlapping labelled intervals.

Each instant goes to exactly one bucket: the highest-priority interval active
then (:data:`lightspeed.goodput.events.PRIORITY`, e.g. a data wait timed inside
a step counts as a data stall), or ``other`` when none is. So the buckets sum
to the span by construction; ``other`` absorbs floating-point rounding.

>>> buckets, custom = attribute([("productive", "", 0.0, 10.0), ("data_stall", "", 2.0, 3.0)],
...                             start_s=0.0, end_s=12.0)
>>> buckets["productive"], buckets["data_stall"], buckets["other"]
(9.0, 1.0, 2.0)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from lightspeed.goodput.events import BUCKETS, PRIORITY, PRODUCTIVE

# Recovery gaps lie between segments and never overlap other intervals.
_ORDER: Final[dict[str, int]] = {bucket: index for index, bucket in enumerate((*PRIORITY, "recovery"))}

Interval = tuple[str, str, float, float]  # (bucket, custom name or "", start_s, end_s)


def attribute(
    intervals: Iterable[Interval], *, start_s: float, end_s: float
) -> tuple[dict[str, float], dict[str, float]]:
    """Seconds per bucket (productive + every badput bucket) and per custom badput name.

    Intervals are clipped to ``[start_s, end_s]``; time no interval covers is ``other``.
    """
    seconds: dict[tuple[str, str], float] = {}
    for bucket, name, begin, finish in partition(intervals, start_s=start_s, end_s=end_s):
        if bucket != "other":
            seconds[(bucket, name)] = seconds.get((bucket, name), 0.0) + (finish - begin)
    return _totals(seconds, end_s - start_s)


def partition(intervals: Iterable[Interval], *, start_s: float, end_s: float) -> list[Interval]:
    """The span cut into disjoint, time-ordered pieces, each labelled with the bucket that wins it.

    Pieces no interval covers are labelled ``other``; together the pieces tile
    ``[start_s, end_s]`` (what the monitor needs to give each bucket its counters).

    >>> cut = partition([("productive", "", 0.0, 4.0), ("data_stall", "", 1.0, 2.0)], start_s=0.0, end_s=5.0)
    >>> [(bucket, start, end) for bucket, _, start, end in cut]
    [('productive', 0.0, 1.0), ('data_stall', 1.0, 2.0), ('productive', 2.0, 4.0), ('other', 4.0, 5.0)]
    """
    boundaries: list[tuple[float, int, str, str]] = []
    for bucket, name, begin, finish in intervals:
        begin, finish = max(begin, start_s), min(finish, end_s)
        if finish > begin:
            boundaries.append((begin, 1, bucket, name))
            boundaries.append((finish, -1, bucket, name))
    boundaries.sort(key=lambda item: item[0])
    pieces: list[Interval] = []
    active: dict[tuple[str, str], int] = {}
    previous = start_s
    for time_s, delta, bucket, name in (*boundaries, (end_s, 0, "", "")):
        if time_s > previous:
            winner = min(active, key=lambda key: (_ORDER[key[0]], key[1])) if active else ("other", "")
            _append_piece(pieces, (winner[0], winner[1], previous, time_s))
        previous = max(previous, time_s)
        if not delta:
            continue
        key = (bucket, name)
        count = active.get(key, 0) + delta
        if count:
            active[key] = count
        else:
            del active[key]
    return pieces


def _append_piece(pieces: list[Interval], piece: Interval) -> None:
    """Add ``piece``, merging it into the previous one when they share a label and touch."""
    if pieces and pieces[-1][:2] == piece[:2] and pieces[-1][3] == piece[2]:
        pieces[-1] = (piece[0], piece[1], pieces[-1][2], piece[3])
    else:
        pieces.append(piece)


def _totals(
    seconds: dict[tuple[str, str], float], span_s: float
) -> tuple[dict[str, float], dict[str, float]]:
    buckets = {PRODUCTIVE: 0.0, **dict.fromkeys(BUCKETS, 0.0)}
    custom: dict[str, float] = {}
    for (bucket, name), value in seconds.items():
        buckets[bucket] += value
        if bucket == "custom":
            custom[name] = custom.get(name, 0.0) + value
    covered = sum(value for bucket, value in buckets.items() if bucket != "other")
    buckets["other"] = span_s - covered
    return buckets, custom
