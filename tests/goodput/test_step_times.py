"""Median and MAD of step times, worked by hand; the MAD is unscaled, as
``scipy.stats.median_abs_deviation`` (scale=1.0, its default) and Google's ml-goodput-measurement use it."""

from __future__ import annotations

import pytest

from lightspeed.goodput.step_times import ideal_step_time, median_mad


def test_median_and_unscaled_mad_by_hand() -> None:
    # median 2; absolute deviations 1, 1, 0, 0, 2, 4, 7 -> sorted 0, 0, 1, 1, 2, 4, 7 -> median 1
    # (scipy 1.17.1: median_abs_deviation([1, 1, 2, 2, 4, 6, 9]) == 1.0)
    assert median_mad([1.0, 1.0, 2.0, 2.0, 4.0, 6.0, 9.0]) == (2.0, 1.0)
    # an even count: median (2 + 4) / 2 = 3; deviations 2, 1, 1, 3 -> median (1 + 2) / 2 = 1.5
    assert median_mad([1.0, 2.0, 4.0, 6.0]) == (3.0, 1.5)


def test_ideal_step_time_drops_what_lies_above_median_plus_three_mads() -> None:
    # median 1.0; deviations 0, 0, 0.1, 0.1, 4.0 -> MAD 0.1
    steps = [1.0, 1.0, 1.1, 0.9, 5.0]
    # line = 1.0 + 3 x 0.1 = 1.3: the 5 s step is an outlier; the ideal is the mean of the other four
    assert ideal_step_time(steps) == pytest.approx((1.0 + 1.0 + 1.1 + 0.9) / 4)
