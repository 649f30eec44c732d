"""Statistics for trace analyses: distributions and the Mann-Whitney U test, in numpy.

The two-sided Mann-Whitney U test compares two samples without assuming a
distribution (step times are skewed by stragglers and hiccups). For small
samples without ties the p-value is exact (the null distribution of U
counted by dynamic programming); otherwise it uses the normal approximation
with tie and continuity corrections, as ``scipy.stats.mannwhitneyu`` does.

>>> result = mann_whitney_u([1.0, 2.0, 3.0], [4.0, 5.0, 6.0])
>>> result.u_b, round(result.p_value, 3), result.rank_biserial
(9.0, 0.1, 1.0)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from lightspeed.records import Record

EXACT_MAX_SAMPLES: Final = 60  # n_a + n_b up to which the exact null distribution is used
HODGES_LEHMANN_MAX_PAIRS: Final = 4_000_000

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
    when there are too many pairs). ``method`` is ``exact`` or ``normal``.
    """

    num_a: int
    num_b: int
    u_b: float
    p_value: float
    rank_biserial: float
    shift: float
    method: str


def mann_whitney_u(sample_a: Sequence[float] | F64, sample_b: Sequence[float] | F64) -> MannWhitney:
    """Two-sided Mann-Whitney U test; NaN p-value when a sample is empty."""
    a = np.asarray(sample_a, dtype=np.float64)
    b = np.asarray(sample_b, dtype=np.float64)
    n_a, n_b = int(a.size), int(b.size)
    if n_a == 0 or n_b == 0:
        return MannWhitney(n_a, n_b, math.nan, math.nan, math.nan, math.nan, "none")
    pooled = np.concatenate([a, b])
    ranks = _midranks(pooled)
    u_b = float(ranks[n_a:].sum() - n_b * (n_b + 1) / 2.0)
    has_ties = np.unique(pooled).size < pooled.size
    if not has_ties and n_a + n_b <= EXACT_MAX_SAMPLES:
        p_value, method = _exact_p(u_b, n_a, n_b), "exact"
    else:
        p_value, method = _normal_p(u_b, n_a, n_b, pooled), "normal"
    return MannWhitney(
        num_a=n_a,
        num_b=n_b,
        u_b=u_b,
        p_value=p_value,
        rank_biserial=2.0 * u_b / (n_a * n_b) - 1.0,
        shift=hodges_lehmann(a, b),
        method=method,
    )


def _midranks(values: F64) -> F64:
    """Ranks 1..n with ties given their average rank."""
    order = np.argsort(values, kind="mergesort")
    sorted_values = values[order]
    first = np.ones(values.size, dtype=bool)
    first[1:] = sorted_values[1:] != sorted_values[:-1]
    starts = np.flatnonzero(first)
    ends = np.append(starts[1:], values.size)
    average = (starts + 1 + ends) / 2.0  # mean of ranks start+1 .. end
    ranks = np.empty(values.size, dtype=np.float64)
    ranks[order] = np.repeat(average, ends - starts)
    return ranks


def _u_counts(n_a: int, n_b: int) -> npt.NDArray[np.float64]:
    """Number of arrangements giving each U = 0 .. n_a n_b (no ties).

    f(m, n)(u) = f(m-1, n)(u - n) + f(m, n-1)(u): the largest value belongs
    either to sample A (adding n to U) or to sample B.
    """
    # row[n] holds f(m, n) for the current m; start with m = 0: f(0, n) = [1]
    row = [np.ones(1) for _ in range(n_b + 1)]
    for m in range(1, n_a + 1):
        new_row = [np.ones(1)]  # f(m, 0) = [1]
        for n in range(1, n_b + 1):
            counts = np.zeros(m * n + 1)
            counts[: new_row[n - 1].size] += new_row[n - 1]
            counts[n : n + row[n].size] += row[n]
            new_row.append(counts)
        row = new_row
    return row[n_b]


def _exact_p(u_b: float, n_a: int, n_b: int) -> float:
    counts = _u_counts(n_a, n_b)
    total = counts.sum()
    u = round(u_b)
    lower = counts[: u + 1].sum() / total
    upper = counts[u:].sum() / total
    return float(min(1.0, 2.0 * min(lower, upper)))


def _normal_p(u_b: float, n_a: int, n_b: int, pooled: F64) -> float:
    mean = n_a * n_b / 2.0
    _, tie_counts = np.unique(pooled, return_counts=True)
    n = n_a + n_b
    tie_term = float((tie_counts**3 - tie_counts).sum()) / (n * (n - 1)) if n > 1 else 0.0
    variance = n_a * n_b / 12.0 * ((n + 1) - tie_term)
    if variance <= 0:
        return 1.0
    z = (abs(u_b - mean) - 0.5) / math.sqrt(variance)
    return float(min(1.0, math.erfc(max(z, 0.0) / math.sqrt(2.0))))


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
