"""Statistics for trace analyses: distributions and the Mann-Whitney U test, in numpy.

The two-sided Mann-Whitney U test (shared with the regression gate, in
:mod:`lightspeed.stats`) compares per-step samples of two traces without
assuming a distribution; this module adds the effect sizes trace diffs report.

>>> result = mann_whitney_u([1.0, 2.0, 3.0], [4.0, 5.0, 6.0])
>>> result.u_b, round(result.p_value, 3), result.rank_biserial
(9.0, 0.1, 1.0)
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from lightspeed.records import Record
from lightspeed.stats import mann_whitney_u as shared_mann_whitney_u
from lightspeed.stats import midranks

HODGES_LEHMANN_MAX_PAIRS: Final = 4_000_000
# A test with ties whose smaller sample has at most this many steps is exact by enumeration (the
# normal approximation can give 2 vs 4 steps a p under the 2/15 that the most extreme split has);
# larger ones keep scipy's asymptotic p, which is close there. Bounded by the number of splits.
EXACT_MAX_SMALLER_SAMPLE: Final = 4
EXACT_MAX_ARRANGEMENTS: Final = 200_000

F64 = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Distribution(Record):
    """Summary of a sample of durations (seconds)."""

    count: int
    total_s: float
    mean_s: float
    min_s: float
    median_s: float
    p95_s: float
    max_s: float


def distribution(values_s: npt.ArrayLike) -> Distribution:
    """Count, total, mean, min, median, 95th percentile and max of ``values_s`` (seconds)."""
    values = np.asarray(values_s, dtype=np.float64)
    if values.size == 0:
        nan = math.nan
        return Distribution(count=0, total_s=0.0, mean_s=nan, min_s=nan, median_s=nan, p95_s=nan, max_s=nan)
    return Distribution(
        count=int(values.size),
        total_s=float(values.sum()),
        mean_s=float(values.mean()),
        min_s=float(values.min()),
        median_s=float(np.median(values)),
        p95_s=float(np.percentile(values, 95)),
        max_s=float(values.max()),
    )


@dataclass(frozen=True)
class MannWhitney(Record):
    """Result of a two-sided Mann-Whitney U test of sample A against sample B.

    ``u_b`` counts pairs (a, b) with b > a (ties count one half);
    ``rank_biserial`` = 2 u_b / (n_a n_b) - 1 is the effect size in [-1, 1]
    (+1: every b above every a); ``shift`` is the Hodges-Lehmann estimate of
    b - a (the median of pairwise differences; the difference of medians
    when there are too many pairs). ``method`` is ``exact`` or ``asymptotic``.
    """

    num_a: int
    num_b: int
    u_b: float
    p_value: float
    rank_biserial: float
    shift: float
    method: str


def mann_whitney_u(sample_a: Sequence[float] | F64, sample_b: Sequence[float] | F64) -> MannWhitney:
    """Two-sided Mann-Whitney U test (``lightspeed.stats``); NaN p-value when a sample is empty."""
    a = np.asarray(sample_a, dtype=np.float64)
    b = np.asarray(sample_b, dtype=np.float64)
    n_a, n_b = int(a.size), int(b.size)
    if n_a == 0 or n_b == 0:
        return MannWhitney(n_a, n_b, math.nan, math.nan, math.nan, math.nan, "none")
    test = shared_mann_whitney_u(first=b, second=a, alternative="two-sided")
    p_value, method = test.p_value, test.method
    if (
        method != "exact"
        and min(n_a, n_b) <= EXACT_MAX_SMALLER_SAMPLE
        and math.comb(n_a + n_b, n_b) <= EXACT_MAX_ARRANGEMENTS
    ):
        p_value, method = exact_tied_p_value(a, b), "exact"
    return MannWhitney(
        num_a=n_a,
        num_b=n_b,
        u_b=test.u_statistic,
        p_value=p_value,
        rank_biserial=2.0 * test.u_statistic / (n_a * n_b) - 1.0,
        shift=hodges_lehmann(a, b),
        method=method,
    )


def exact_tied_p_value(a: F64, b: F64) -> float:
    """Two-sided p of the Mann-Whitney U test by enumeration, ties included: the share of the ways
    to split the pooled mid-ranks into ``len(b)`` and ``len(a)`` whose U is at least as far from its
    mean as the observed one (for few steps only: there are C(n_a + n_b, n_b) ways).

    >>> round(exact_tied_p_value(np.array([1.0, 2.0]), np.array([3.0, 3.0, 4.0, 5.0])), 4)  # 2 of 15
    0.1333
    """
    small, large = (a, b) if a.size <= b.size else (b, a)  # enumerated by the smaller one's places
    ranks, _ = midranks(np.concatenate((small, large)))
    k = int(small.size)
    centre = k * (k + 1) / 2.0 + k * large.size / 2.0  # its rank sum when U is at its mean
    observed = abs(float(ranks[:k].sum()) - centre)
    places = np.fromiter(
        itertools.chain.from_iterable(itertools.combinations(range(ranks.size), k)), dtype=np.int64
    ).reshape(-1, k)
    sums = ranks[places].sum(axis=1)
    return float(np.mean(np.abs(sums - centre) >= observed - 1e-9))


def hodges_lehmann(a: F64, b: F64) -> float:
    """Median of all differences b_j - a_i (difference of medians for very large samples)."""
    if a.size == 0 or b.size == 0:
        return math.nan
    if a.size * b.size > HODGES_LEHMANN_MAX_PAIRS:
        return float(np.median(b) - np.median(a))
    return float(np.median(np.subtract.outer(b, a)))


def benjamini_hochberg(p_values: Sequence[float]) -> list[float]:
    """False-discovery-rate adjusted p-values (q-values); NaN stays NaN."""
    values = np.asarray(p_values, dtype=np.float64)
    finite = np.flatnonzero(np.isfinite(values))
    result = np.full(values.size, math.nan)
    if finite.size == 0:
        return result.tolist()
    order = finite[np.argsort(values[finite], kind="stable")]
    m = order.size
    scaled = values[order] * m / np.arange(1, m + 1)
    adjusted = np.minimum.accumulate(scaled[::-1])[::-1]
    result[order] = np.minimum(adjusted, 1.0)
    return result.tolist()
