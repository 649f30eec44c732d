"""Counters over windows: backward-held means, counter increases, peaks (hand-calculated)."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from lightspeed.monitor import Series

# Samples at 1, 2, 3 s (interval 1 s): 0.2 describes (0, 1], 0.4 (1, 2], 0.8 (2, 3].
UTIL = Series(times_s=np.array([1.0, 2.0, 3.0]), values=np.array([0.2, 0.4, 0.8]), interval_s=1.0)


def test_mean_of_a_window_inside_one_period_is_that_sample() -> None:
    means = UTIL.mean(np.array([1.2, 0.1]), np.array([1.3, 0.9]))
    np.testing.assert_allclose(means, [0.4, 0.2])


def test_mean_across_periods_is_time_weighted() -> None:
    # [0.5, 2.5]: 0.5 s of 0.2, 1 s of 0.4, 0.5 s of 0.8 -> (0.1 + 0.4 + 0.4) / 2 = 0.45
    np.testing.assert_allclose(UTIL.mean(np.array([0.5]), np.array([2.5])), [0.45])


def test_window_outside_the_samples_is_nan_and_partial_windows_use_the_covered_part() -> None:
    means = UTIL.mean(np.array([5.0, 2.5]), np.array([6.0, 9.0]))
    assert math.isnan(means[0])
    np.testing.assert_allclose(means[1], 0.8)  # only (2.5, 3] is covered
    area, covered = UTIL.integral(np.array([2.5]), np.array([9.0]))
    np.testing.assert_allclose(covered, [0.5])
    np.testing.assert_allclose(area, [0.4])


def test_nan_samples_are_skipped() -> None:
    series = Series(times_s=np.array([1.0, 2.0, 3.0]), values=np.array([0.2, np.nan, 0.8]), interval_s=1.0)
    # without the middle sample, 0.8 describes (1, 3]
    np.testing.assert_allclose(series.mean(np.array([1.5]), np.array([2.0])), [0.8])


def test_counter_increase_interpolates_between_samples() -> None:
    energy = Series(
        times_s=np.array([0.0, 1.0, 2.0]), values=np.array([1000.0, 1300.0, 1500.0]), interval_s=1.0
    )
    # 0.5 -> 1150 J, 1.5 -> 1400 J: 250 J; 1.0 -> 2.0: 200 J
    np.testing.assert_allclose(energy.increase(np.array([0.5, 1.0]), np.array([1.5, 2.0])), [250.0, 200.0])


def test_peak_takes_every_sample_whose_period_meets_the_window() -> None:
    np.testing.assert_allclose(UTIL.peak(np.array([0.5, 1.5]), np.array([0.8, 2.2])), [0.2, 0.8])


@settings(max_examples=60, deadline=None)
@given(
    values=st.lists(st.floats(min_value=0, max_value=1), min_size=2, max_size=30),
    cuts=st.lists(st.floats(min_value=0, max_value=1), min_size=1, max_size=8),
)
def test_means_over_parts_add_up_to_the_mean_over_the_whole(values: list[float], cuts: list[float]) -> None:
    times = np.arange(1, len(values) + 1, dtype=float)
    series = Series(times_s=times, values=np.array(values), interval_s=1.0)
    edges = np.sort(np.concatenate(([0.0, float(len(values))], np.array(cuts) * len(values))))
    area, covered = series.integral(edges[:-1], edges[1:])
    whole_area, whole_covered = series.integral(np.array([0.0]), np.array([float(len(values))]))
    np.testing.assert_allclose(area.sum(), whole_area[0], atol=1e-9)
    np.testing.assert_allclose(covered.sum(), whole_covered[0], atol=1e-9)
    np.testing.assert_allclose(whole_area[0], sum(values), atol=1e-9)  # each value held for 1 s
