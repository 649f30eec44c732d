"""The load-over-time series: a record counts in every slice it covers, by its overlap."""

from __future__ import annotations

import numpy as np
import pytest

from lightspeed.sol.serve.run_metrics import MAX_SERIES_POINTS, time_series


def test_a_record_longer_than_a_slice_counts_in_every_slice_it_covers() -> None:
    # merged iterations: 10 running from 0 to 1.6 s, then 4 running from 1.6 to 1.7 s, the run 2 s
    # long; the second slice was the second record's alone (4), the first record's 0.6 s in it lost
    starts, durations = np.array([0.0, 1.6]), np.array([1.6, 0.1])
    series = time_series(
        arrival_s=np.zeros(10), finish_s=np.full(10, 1.7), start_s=starts, duration_s=durations,
        queue=np.array([0.0, 0.0]), running=np.array([10.0, 4.0]), kv_use=np.array([0.5, 0.2]),
        end_s=2.0,
    )  # fmt: skip
    assert MAX_SERIES_POINTS >= 2
    assert series.time_s == pytest.approx((0.0, 1.0))  # two records: two slices of 1 s
    # slice [0, 1): 10 throughout; [1, 2): 0.6 s of 10 and 0.1 s of 4 over the 0.7 s covered
    assert series.running == pytest.approx((10.0, (10 * 0.6 + 4 * 0.1) / 0.7))
    assert series.kv_use == pytest.approx((0.5, (0.5 * 0.6 + 0.2 * 0.1) / 0.7))


def test_slices_no_record_covers_read_zero() -> None:
    series = time_series(
        arrival_s=np.array([0.0, 3.0]), finish_s=np.array([0.5, 3.5]),
        start_s=np.array([0.0, 3.0, 3.2, 3.4]), duration_s=np.array([0.5, 0.2, 0.2, 0.1]),
        queue=np.zeros(4), running=np.ones(4), kv_use=np.full(4, 0.1), end_s=4.0,
    )  # fmt: skip
    # 4 slices of 1 s: [0, 1) covered 0.5 s at 1; [1, 2) and [2, 3) idle; [3, 4) covered at 1
    assert series.running == pytest.approx((1.0, 0.0, 0.0, 1.0))
