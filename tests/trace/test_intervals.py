"""Interval unions, overlaps and sweeps, against hand examples and a brute-force timeline."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from lightspeed.trace.intervals import (
    is_sorted,
    measure,
    overlap_measure,
    sweep_states,
    union,
    union_measure,
    union_measures,
)


def _arrays(pairs: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    starts = np.array([s for s, _ in pairs], dtype=np.int64)
    ends = np.array([s + d for s, d in pairs], dtype=np.int64)
    return starts, ends


def _covered(pairs: list[tuple[int, int]], size: int) -> np.ndarray:
    """Brute force: which unit cells [t, t+1) any interval covers."""
    cells = np.zeros(size, dtype=bool)
    for start, duration in pairs:
        cells[start : start + duration] = True
    return cells


def test_union_merges_overlapping_and_touching_intervals() -> None:
    starts, ends = union(np.array([20, 0, 5, 12]), np.array([30, 10, 12, 15]))
    # [0,10) and [5,12) overlap, [12,15) touches 12: one interval [0,15); [20,30) stays apart
    assert starts.tolist() == [0, 20]
    assert ends.tolist() == [15, 30]
    assert measure(starts, ends) == 25


def test_overlap_of_two_unions_by_hand() -> None:
    first = union(np.array([0, 20]), np.array([10, 30]))
    second = union(np.array([5]), np.array([25]))
    # [5,10) and [20,25): 5 + 5
    assert overlap_measure(first, second) == 10


def test_sweep_states_by_hand() -> None:
    compute = (np.array([0]), np.array([10]))
    communication = (np.array([5]), np.array([15]))
    # compute alone [0,5), both [5,10), communication alone [10,15)
    assert sweep_states([compute, communication]) == {1: 5, 3: 5, 2: 5}


def test_empty_union() -> None:
    starts, ends = union(np.zeros(0, np.int64), np.zeros(0, np.int64))
    assert starts.size == 0
    assert ends.size == 0
    assert sweep_states([]) == {}


_PAIRS = st.lists(st.tuples(st.integers(0, 60), st.integers(0, 15)), max_size=25)


@settings(max_examples=200, deadline=None)
@given(_PAIRS, _PAIRS)
def test_union_and_overlap_match_a_brute_force_timeline(first: list, second: list) -> None:
    size = 80
    covered_first, covered_second = _covered(first, size), _covered(second, size)
    assert union_measure(*_arrays(first)) == covered_first.sum()
    overlap = overlap_measure(union(*_arrays(first)), union(*_arrays(second)))
    assert overlap == (covered_first & covered_second).sum()


@settings(max_examples=200, deadline=None)
@given(_PAIRS, _PAIRS, _PAIRS)
def test_sweep_states_partition_the_busy_time(a: list, b: list, c: list) -> None:
    size = 80
    layers = [_covered(pairs, size) for pairs in (a, b, c)]
    states = sweep_states([union(*_arrays(pairs)) for pairs in (a, b, c)])
    state_of_cell = sum(layer.astype(int) << bit for bit, layer in enumerate(layers))
    expected = {int(s): int((state_of_cell == s).sum()) for s in np.unique(state_of_cell) if s > 0}
    assert states == expected
    # conservation: the states add up to the union of all layers
    assert sum(states.values()) == (layers[0] | layers[1] | layers[2]).sum()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(-50, 60), st.integers(0, 15)), max_size=40))
def test_union_measures_equal_one_union_per_group_by_brute_force(rows: list) -> None:
    """Every group's union at once (groups shifted apart in time) equals each group's own
    union and the covered cells of a brute-force timeline; input in any order."""
    groups = np.array([g for g, _, _ in rows], dtype=np.int64)
    starts = np.array([s for _, s, _ in rows], dtype=np.int64)
    ends = starts + np.array([d for _, _, d in rows], dtype=np.int64)
    result = union_measures(groups, starts, ends, 6)
    for group in range(6):
        chosen = groups == group
        cells = _covered([(s + 50, e - s) for s, e in zip(starts[chosen], ends[chosen], strict=True)], 130)
        assert result[group] == union_measure(starts[chosen], ends[chosen]) == cells.sum()


def test_union_measures_by_hand_and_where_a_shift_would_overflow() -> None:
    groups = np.array([1, 0, 1, 0])
    starts = np.array([30, 0, 35, 5], dtype=np.int64)
    ends = np.array([40, 10, 45, 8], dtype=np.int64)
    # group 0: [0,10) holds [5,8): 10; group 1: [30,40) and [35,45) merge into [30,45): 15
    assert union_measures(groups, starts, ends, 3).tolist() == [10, 15, 0]
    far = 2**61  # times this large cannot be moved apart by group: merged one group at a time
    assert union_measures(groups, starts + far, ends + far, 3).tolist() == [10, 15, 0]
    assert union_measures(groups[:0], starts[:0], ends[:0], 2).tolist() == [0, 0]


def test_a_sorted_union_skips_the_sort_and_gives_the_same_answer() -> None:
    starts, ends = np.array([0, 5, 5, 20]), np.array([10, 3, 12, 30])
    assert is_sorted(starts)
    assert is_sorted(starts[:1])
    assert not is_sorted(starts[::-1])
    forward, backward = union(starts, ends), union(starts[::-1], ends[::-1])
    assert [a.tolist() for a in forward] == [b.tolist() for b in backward] == [[0, 20], [12, 30]]


@settings(max_examples=100, deadline=None)
@given(_PAIRS, _PAIRS, _PAIRS, st.sampled_from([-1_000, -(2**59), 2**58, 2**60]))
def test_sweep_states_are_the_same_wherever_the_clock_starts(a: list, b: list, c: list, shift: int) -> None:
    """The sweep packs each boundary's layer into the low bits of its time: negative times, and
    times too large to shift (from 2**59 for three layers), which are swept by an argsort instead,
    give the states of the brute-force-checked sweep near zero."""
    layers = [union(*_arrays(pairs)) for pairs in (a, b, c)]
    moved = [(starts + shift, ends + shift) for starts, ends in layers]
    assert sweep_states(moved) == sweep_states(layers)
