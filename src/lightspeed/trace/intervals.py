"""Interval arithmetic on numpy arrays: unions, measures, overlaps, sweeps.

Intervals are half-open ``[start, end)`` in integer nanoseconds. A union
merges intervals that overlap or touch, as HTA's ``merge_kernel_intervals``
does (an interval joins the group when it starts at or before the running
maximum end).

>>> import numpy as np
>>> starts, ends = union(np.array([0, 5, 20]), np.array([10, 12, 30]))
>>> starts.tolist(), ends.tolist()
([0, 20], [12, 30])
>>> measure(starts, ends)
22
>>> union_measures(np.array([1, 0, 1]), np.array([0, 5, 20]), np.array([10, 12, 30]), 3).tolist()
[7, 20, 0]
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]


def union(starts: I64, ends: I64) -> tuple[I64, I64]:
    """Merge intervals into sorted, disjoint ones (touching intervals merge)."""
    if starts.size == 0:
        return starts.astype(np.int64), ends.astype(np.int64)
    if is_sorted(starts):  # a stable sort of sorted starts would keep their order: skip it
        sorted_starts, sorted_ends = starts, ends
    else:
        order = np.argsort(starts, kind="stable")
        sorted_starts, sorted_ends = starts[order], ends[order]
    running_end = np.maximum.accumulate(sorted_ends)
    first = np.ones(sorted_starts.size, dtype=bool)
    first[1:] = sorted_starts[1:] > running_end[:-1]
    group_starts = np.flatnonzero(first)
    # the largest end within each group (as HTA: max of the group, not the running maximum)
    return sorted_starts[group_starts], np.maximum.reduceat(sorted_ends, group_starts)


def is_sorted(values: I64) -> bool:
    """Whether ``values`` never decrease (one pass, no sort)."""
    return bool(values.size < 2 or (values[1:] >= values[:-1]).all())


def union_measures(groups: I64, starts: I64, ends: I64, num_groups: int) -> I64:
    """Length of the union of each group's intervals (ns): ``result[g]`` equals
    ``union_measure(starts[groups == g], ends[groups == g])`` for ``g`` in ``range(num_groups)``,
    with one sort for all groups instead of one per group.

    Each group is moved in time by ``g`` times a width larger than all the intervals span, so
    groups never touch and one union of the moved intervals is every group's union (the move
    cancels in each length). Where that would overflow int64, the groups are merged one by one.
    """
    result = np.zeros(num_groups, dtype=np.int64)
    if starts.size == 0:
        return result
    low, high = min(int(starts.min()), int(ends.min())), max(int(starts.max()), int(ends.max()))
    width = high - low + 1
    if max(abs(low), abs(high)) + num_groups * width >= 2**62:
        for group in range(num_groups):
            chosen = groups == group
            result[group] = union_measure(starts[chosen], ends[chosen])
        return result
    moved = groups.astype(np.int64) * width
    moved_starts, moved_ends = union(starts + moved, ends + moved)
    np.add.at(result, (moved_starts - low) // width, moved_ends - moved_starts)
    return result


def measure(starts: I64, ends: I64) -> int:
    """Total length of disjoint intervals (ns)."""
    return int(ends.sum() - starts.sum())


def union_measure(starts: I64, ends: I64) -> int:
    """Length of the union of possibly overlapping intervals (ns)."""
    return measure(*union(starts, ends))


def overlap_measure(first: tuple[I64, I64], second: tuple[I64, I64]) -> int:
    """Length of the intersection of two unions of disjoint intervals (ns).

    |A ∩ B| = |A| + |B| - |A ∪ B| for disjoint-interval sets A and B.
    """
    both = union(np.concatenate([first[0], second[0]]), np.concatenate([first[1], second[1]]))
    return measure(*first) + measure(*second) - measure(*both)


def gaps(starts: I64, ends: I64) -> tuple[I64, I64]:
    """The gaps between consecutive disjoint intervals (start, end of each gap)."""
    return ends[:-1], starts[1:]


def sweep_states(layers: list[tuple[I64, I64]]) -> dict[int, int]:
    """Time spent in each combination of layers (bit ``i`` set = layer ``i`` active).

    Each layer is a union of disjoint intervals. Returns ``{bitmask: ns}`` for
    every non-empty combination seen, as HTA's kernel-type overlap breakdown.
    """
    times: list[I64] = []
    deltas: list[I64] = []
    for bit, (starts, ends) in enumerate(layers):
        value = 1 << bit
        times.extend([starts, ends])
        deltas.extend([np.full(starts.size, value, np.int64), np.full(ends.size, -value, np.int64)])
    if not times:
        return {}
    time = np.concatenate(times)
    delta = np.concatenate(deltas)
    order = np.argsort(time, kind="stable")
    time, delta = time[order], delta[order]
    state = np.cumsum(delta)
    spans = np.diff(time)
    result: dict[int, int] = {}
    active = state[:-1]
    # the states' sums by bincount (np.unique would load numpy.ma, ~13 ms of a cached command)
    positive = active > 0
    totals = np.bincount(active[positive].astype(np.int64), weights=spans[positive])
    for combination in np.flatnonzero(totals).tolist():
        result[combination] = int(totals[combination])
    return result
