"""Shared non-parametric statistics (numpy and the standard library only).

The Mann-Whitney U test compares two samples without assuming a distribution:
step times are skewed by stragglers and hiccups, so a t-test would mislead. The
p-value is exact (the null distribution of U counted in exact integers) for
small samples without ties, else the normal approximation with tie and
continuity corrections, as ``scipy.stats.mannwhitneyu(method="asymptotic")``.
The regression gate (one-sided) and trace diffs (two-sided) both use it.

>>> mann_whitney_u(first=[4, 5, 6], second=[1, 2, 3]).p_value  # 1 / C(6, 3)
0.05
>>> mann_whitney_u(first=[4, 5, 6], second=[1, 2, 3], alternative="two-sided").p_value
0.1
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Final, Literal

import numpy as np
import numpy.typing as npt

from lightspeed.errors import UserInputError
from lightspeed.records import Record

Alternative = Literal["greater", "less", "two-sided"]

# Exact U distributions cost O(n1 * n1 * n2) integer operations; beyond this
# product of sample counts the normal approximation is accurate to ~1e-3.
_EXACT_MAX_PRODUCT: Final = 2500


@dataclass(frozen=True)
class MannWhitneyResult(Record):
    """U statistic of the first sample and the p-value of the chosen alternative."""

    u_statistic: float
    p_value: float
    method: Literal["exact", "asymptotic"]


def midranks(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mid-ranks (1-based, ties averaged) and the sizes of the tie groups."""
    order = np.argsort(values, kind="mergesort")
    sorted_values = values[order]
    boundaries = np.flatnonzero(np.diff(sorted_values)) + 1
    starts = np.concatenate(([0], boundaries))
    ends = np.concatenate((boundaries, [len(values)]))
    mid = (starts + ends + 1) / 2.0  # average of 1-based ranks start+1 .. end
    ranks = np.empty(len(values))
    ranks[order] = np.repeat(mid, ends - starts)
    return ranks, ends - starts


@lru_cache(maxsize=256)
def _exact_u_counts(num_first: int, num_second: int) -> tuple[int, ...]:
    """Number of orderings giving each U in 0..n1*n2 (coefficients of a Gaussian binomial).

    The generating function of U is ``prod_{i=1..n1} (1 - q^(n2+i)) / (1 - q^i)``;
    multiplying by ``1 - q^k`` is a shifted subtraction and dividing by
    ``1 - q^i`` a strided prefix sum, all in exact Python integers.
    """
    size = num_first * num_second + 1
    counts = [0] * size
    counts[0] = 1
    for i in range(1, num_first + 1):
        shift = num_second + i
        for u in range(size - 1, shift - 1, -1):
            counts[u] -= counts[u - shift]
        for u in range(i, size):
            counts[u] += counts[u - i]
    return tuple(counts)


def _exact_upper_tail(u_statistic: float, num_first: int, num_second: int) -> float:
    """P(U >= u) under the null hypothesis, exactly."""
    counts = _exact_u_counts(num_first, num_second)
    start = math.ceil(u_statistic - 1e-9)
    total = sum(counts)
    return sum(counts[start:]) / total


def _normal_upper_tail(z: float) -> float:
    return 0.5 * math.erfc(z / math.sqrt(2.0))


def mann_whitney_u(
    *,
    first: Sequence[float] | npt.NDArray[np.float64],
    second: Sequence[float] | npt.NDArray[np.float64],
    alternative: Alternative = "greater",
) -> MannWhitneyResult:
    """Mann-Whitney U test of ``first`` against ``second`` (any unit, same for both).

    ``alternative="greater"`` tests whether ``first`` tends to be larger. The
    p-value is exact when there are no ties and ``len(first) * len(second) <=
    2500``; otherwise the normal approximation with tie and continuity
    corrections (as in scipy's ``method="asymptotic"``).

    >>> mann_whitney_u(first=[4, 5, 6], second=[1, 2, 3]).p_value  # 1 / C(6, 3)
    0.05
    """
    x = np.asarray(first, dtype=float)
    y = np.asarray(second, dtype=float)
    if len(x) == 0 or len(y) == 0:
        raise UserInputError("the Mann-Whitney U test needs at least one sample on each side")
    n1, n2 = len(x), len(y)
    ranks, tie_sizes = midranks(np.concatenate((x, y)))
    u1 = float(ranks[:n1].sum() - n1 * (n1 + 1) / 2.0)
    has_ties = bool((tie_sizes > 1).any())
    if not has_ties and n1 * n2 <= _EXACT_MAX_PRODUCT:
        greater = _exact_upper_tail(u1, n1, n2)
        less = _exact_upper_tail(n1 * n2 - u1, n1, n2)
        return MannWhitneyResult(u1, _choose_tail(greater, less, alternative), "exact")
    n = n1 + n2
    tie_term = float((tie_sizes**3 - tie_sizes).sum()) / (n * (n - 1))
    variance = n1 * n2 / 12.0 * ((n + 1) - tie_term)
    if variance <= 0.0:  # every value tied: no evidence either way
        return MannWhitneyResult(u1, 1.0, "asymptotic")
    sigma = math.sqrt(variance)
    mean = n1 * n2 / 2.0
    greater = _normal_upper_tail((u1 - mean - 0.5) / sigma)
    less = _normal_upper_tail((mean - u1 - 0.5) / sigma)
    return MannWhitneyResult(u1, _choose_tail(greater, less, alternative), "asymptotic")


def _choose_tail(greater: float, less: float, alternative: Alternative) -> float:
    if alternative == "greater":
        return min(1.0, greater)
    if alternative == "less":
        return min(1.0, less)
    return min(1.0, 2.0 * min(greater, less))
