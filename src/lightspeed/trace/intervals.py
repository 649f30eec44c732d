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
        sorted_starts, running_end = starts, np.maximum.accumulate(ends)
    else:  # each temporary is fresh memory, slow to touch first: the running maximum in place
        order = np.argsort(starts, kind="stable")
        sorted_starts, running_end = starts[order], ends[order]
        del order
        np.maximum.accumulate(running_end, out=running_end)
    first = np.empty(sorted_starts.size, dtype=bool)
    first[0] = True
    np.greater(sorted_starts[1:], running_end[:-1], out=first[1:])
    group_starts = np.flatnonzero(first)
    # the largest end within each group (as HTA: max of the group) is the running maximum at its
    # last interval: the group's first interval ends after every earlier group (end >= start)
    group_ends = np.empty_like(group_starts)
    group_ends[:-1] = group_starts[1:]
    group_ends[-1] = sorted_starts.size
    group_ends -= 1
    return sorted_starts[group_starts], running_end[group_ends]


def is_sorted(values: I64) -> bool:
    """Whether ``values`` never decrease (one pass, no sort)."""
    return bool(values.size < 2 or (values[1:] >= values[:-1]).all())


def union_measures(groups: I64, starts: I64, ends: I64, num_groups: int) -> I64:
    """Length of the union of each group's intervals (ns): ``result[g]`` equals
    ``union_measure(starts[groups == g], ends[groups == g])`` for ``g`` in ``range(num_groups)``,
    with one sort for all groups instead of one per group.

    Each group is moved in time by ``g`` times a width larger than all the intervals span, so
    groups never touch and one sort orders every group's intervals. In that order, interval
    ``i`` adds ``max(e_i, r) - max(s_i, r)`` to its group's union, ``r`` the largest end before
    it (``r`` is below a group's first start: no interval of another group counts). Where the
    move would overflow int64, the groups are merged one by one.
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
    # in place wherever it can be: each temporary is fresh memory, slow to touch first
    moved_starts = groups.astype(np.int64)
    moved_starts *= width
    moved_starts += starts
    moved_ends = ends - starts
    moved_ends += moved_starts
    order = np.argsort(moved_starts, kind="stable")
    sorted_starts, running_end = moved_starts[order], moved_ends[order]
    del moved_starts, moved_ends
    np.maximum.accumulate(running_end, out=running_end)  # r after each interval
    np.maximum(running_end[:-1], sorted_starts[1:], out=sorted_starts[1:])  # max(s_i, r before i)
    running_end -= sorted_starts  # what each interval adds
    np.add.at(result, groups[order], running_end)
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

    Every boundary is one sort key, its time shifted left with the boundary's code (layer,
    start or end) in the low bits: one sort of one array, no argsort and gathers (the memory
    they take is most of the sweep's time in a fresh process). The order of boundaries at equal
    times does not matter: the time between them is zero.
    """
    if not layers:
        return {}
    code_bits = (2 * len(layers) - 1).bit_length()
    times = [part for pair in layers for part in pair]
    largest = max((max(abs(int(t.min())), abs(int(t.max()))) for t in times if t.size), default=0)
    if largest >= 1 << (62 - code_bits):  # a clock no trace keeps (~18 years in ns): sorted by value
        return _sweep_by_argsort(layers)
    keys = np.empty(sum(t.size for t in times), dtype=np.int64)
    offset = 0
    for code, part in enumerate(times):  # code 2i: layer i starts, 2i + 1: it ends
        chosen = keys[offset : offset + part.size]
        np.left_shift(part, code_bits, out=chosen)
        chosen |= code
        offset += part.size
    keys.sort(kind="stable")  # runs of sorted boundaries: a merge
    step = np.array([(1 << (code // 2)) * (1 if code % 2 == 0 else -1) for code in range(2 * len(layers))])
    spans = np.diff(keys >> code_bits)
    keys &= (1 << code_bits) - 1
    state = step[keys]
    np.cumsum(state, out=state)
    return _state_totals(state[:-1], spans)


def _sweep_by_argsort(layers: list[tuple[I64, I64]]) -> dict[int, int]:
    times: list[I64] = []
    deltas: list[I64] = []
    for bit, (starts, ends) in enumerate(layers):
        value = 1 << bit
        times.extend([starts, ends])
        deltas.extend([np.full(starts.size, value, np.int64), np.full(ends.size, -value, np.int64)])
    time = np.concatenate(times)
    order = np.argsort(time, kind="stable")
    return _state_totals(np.cumsum(np.concatenate(deltas)[order])[:-1], np.diff(time[order]))


def _state_totals(active: I64, spans: I64) -> dict[int, int]:
    """``{state: total span}`` over the states other than 0 (no layer)."""
    # the states' sums by bincount (np.unique would load numpy.ma, ~13 ms of a cached command)
    totals = np.bincount(active, weights=spans) if active.size else np.zeros(0)
    seen = np.flatnonzero(totals[1:]) + 1
    return {combination: int(totals[combination]) for combination in seen.tolist()}
