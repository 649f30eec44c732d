"""Split a span of wall time among overlapping labelled intervals.

Each instant goes to exactly one bucket: the highest-priority interval active
then (:data:`lightspeed.goodput.schema.PRIORITY`, e.g. a data wait timed inside
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

from lightspeed.goodput.schema import BUCKETS, PRIORITY, PRODUCTIVE

# Recovery gaps lie between segments and never overlap other intervals.
_ORDER: Final[dict[str, int]] = {bucket: index for index, bucket in enumerate((*PRIORITY, "recovery"))}

Interval = tuple[str, str, float, float]  # (bucket, custom name or "", start_s, end_s)


def attribute(
    intervals: Iterable[Interval], *, start_s: float, end_s: float
) -> tuple[dict[str, float], dict[str, float]]:
    """Seconds per bucket (productive + every badput bucket) and per custom badput name.

    Intervals are clipped to ``[start_s, end_s]``; time no interval covers is ``other``.
    """
    boundaries: list[tuple[float, int, str, str]] = []
    for bucket, name, begin, finish in intervals:
        begin, finish = max(begin, start_s), min(finish, end_s)
        if finish > begin:
            boundaries.append((begin, 1, bucket, name))
            boundaries.append((finish, -1, bucket, name))
    boundaries.sort(key=lambda item: item[0])
    seconds: dict[tuple[str, str], float] = {}
    active: dict[tuple[str, str], int] = {}
    previous = start_s
    for time_s, delta, bucket, name in boundaries:
        if active and time_s > previous:
            winner = min(active, key=lambda key: (_ORDER[key[0]], key[1]))
            seconds[winner] = seconds.get(winner, 0.0) + (time_s - previous)
        previous = time_s
        key = (bucket, name)
        count = active.get(key, 0) + delta
        if count:
            active[key] = count
        else:
            del active[key]
    return _totals(seconds, end_s - start_s)


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
