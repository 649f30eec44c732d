"""Mann-Whitney U, Benjamini-Hochberg and distributions against scipy's output and hand calculations.

Golden p-values were produced by scipy 1.17.1 (a peer implementation, not
this code) with::

    python3 -c "from scipy.stats import mannwhitneyu; print(mannwhitneyu(b, a, alternative='two-sided'))"

for the samples below (statistic = U of b, the second sample here).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lightspeed.trace.effect_sizes import benjamini_hochberg, distribution, hodges_lehmann, mann_whitney_u

SCIPY_CASES = [
    # (a, b, U of b, p) from scipy 1.17.1
    ([1.1, 2.5, 3.3, 7.2, 0.4], [4.0, 5.0, 6.0, 2.0, 8.8, 9.1], 24.0, 0.12554112554112554),
    ([1, 2, 2, 3, 5, 5, 5], [2, 4, 5, 6, 6, 7, 8], 39.5, 0.059557102626682276),
]


def test_exact_p_by_hand() -> None:
    # 3 vs 3, every b above every a: U_b = 9, the most extreme of C(6,3) = 20 arrangements,
    # two-sided p = 2 / 20 = 0.1
    result = mann_whitney_u([1.0, 2.0, 3.0], [4.0, 5.0, 6.0])
    assert result.u_b == 9.0
    assert result.p_value == pytest.approx(0.1)
    assert result.method == "exact"
    assert result.rank_biserial == 1.0
    assert result.shift == 3.0  # median of the nine differences 1..5


@pytest.mark.parametrize(("a", "b", "u_b", "p_value"), SCIPY_CASES)
def test_matches_scipy(a: list[float], b: list[float], u_b: float, p_value: float) -> None:
    result = mann_whitney_u(a, b)
    assert result.u_b == u_b
    assert result.p_value == pytest.approx(p_value, rel=1e-9)


def test_large_samples_use_the_normal_approximation_as_scipy() -> None:
    rng = np.random.default_rng(1)
    a, b = rng.normal(0.0, 1.0, 80), rng.normal(0.5, 1.0, 70)
    result = mann_whitney_u(a, b)
    assert result.method == "asymptotic"
    assert result.u_b == 3676.0  # scipy 1.17.1: statistic 3676.0, p 0.0009734023180437029
    assert result.p_value == pytest.approx(0.0009734023180437029, rel=1e-9)


def test_empty_sample_gives_no_p_value() -> None:
    assert math.isnan(mann_whitney_u([], [1.0]).p_value)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.floats(-1e3, 1e3), min_size=1, max_size=12),
    st.lists(st.floats(-1e3, 1e3), min_size=1, max_size=12),
)
def test_swapping_samples_mirrors_the_statistic(a: list[float], b: list[float]) -> None:
    forward, backward = mann_whitney_u(a, b), mann_whitney_u(b, a)
    assert forward.u_b + backward.u_b == pytest.approx(len(a) * len(b))
    assert forward.p_value == pytest.approx(backward.p_value)
    assert 0.0 <= forward.p_value <= 1.0
    assert forward.rank_biserial == pytest.approx(-backward.rank_biserial)


def test_benjamini_hochberg_by_hand() -> None:
    # sorted p: 0.01 (x4/1 = 0.04), 0.03 (x4/2 = 0.06), 0.04 (x4/3 = 0.0533), 0.2 (x4/4)
    # step-up minimum from the top: 0.2, 0.0533, min(0.06, 0.0533) = 0.0533, 0.04
    q = benjamini_hochberg([0.01, 0.04, 0.03, 0.2, math.nan])
    assert q[:4] == pytest.approx([0.04, 4 * 0.04 / 3, 4 * 0.04 / 3, 0.2])
    assert math.isnan(q[4])


def test_hodges_lehmann_is_the_median_pairwise_difference() -> None:
    # differences of [10, 11, 12] - [1, 2]: 9, 8, 10, 9, 11, 10 -> median 9.5
    assert hodges_lehmann(np.array([1.0, 2.0]), np.array([10.0, 11.0, 12.0])) == 9.5


def test_distribution() -> None:
    summary = distribution([1.0, 2.0, 3.0, 10.0])
    assert summary.count == 4
    assert summary.total_s == 16.0
    assert summary.median_s == 2.5
    assert summary.max_s == 10.0
    assert distribution([]).count == 0
