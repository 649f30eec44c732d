"""Step-time statistics and robust outliers (median, p90, MAD).

The ideal step time follows Google's ml-goodput-measurement: the mean of the
step times at or below ``median + 3 * MAD`` (MAD unscaled, as
``scipy.stats.median_abs_deviation`` defaults to). Steps above that line are
outliers; ``excess_s`` is the time all steps spent above the ideal.

>>> stats = step_stats(durations_s=[1.0, 1.0, 1.1, 0.9, 5.0], steps=[0, 1, 2, 3, 4])
>>> stats.median_s, stats.ideal_s, stats.num_outliers
(1.0, 1.0, 1)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lightspeed.records import Record

MAX_LISTED_OUTLIERS = 10
OUTLIER_MADS = 3.0
# The least excess over the median that counts, as a share of it (outliers, stragglers).
MIN_RELATIVE_EXCESS = 0.05


@dataclass(frozen=True)
class Outlier(Record):
    """A step (or MLPerf block) slower than the outlier line."""

    step: int
    rank: int
    duration_s: float
    excess_s: float


@dataclass(frozen=True)
class StepStats(Record):
    """Distribution of step durations (``unit`` is ``step``, or ``block`` for MLPerf logs)."""

    unit: str
    count: int
    total_s: float
    mean_s: float | None = None
    median_s: float | None = None
    p90_s: float | None = None
    min_s: float | None = None
    max_s: float | None = None
    mad_s: float | None = None
    ideal_s: float | None = None
    outlier_threshold_s: float | None = None
    excess_s: float = 0.0
    mean_deviation: float | None = None
    num_outliers: int = 0
    outliers: tuple[Outlier, ...] = ()


def median_mad(values: Sequence[float] | np.ndarray[Any, Any]) -> tuple[float, float]:
    """Median and (unscaled) median absolute deviation of ``values``."""
    array = np.asarray(values, dtype=float)
    median = float(np.median(array))
    return median, float(np.median(np.abs(array - median)))


def ideal_step_time(durations_s: Sequence[float]) -> float | None:
    """Mean of the durations at or below median + 3 MAD (``None`` without steps)."""
    if len(durations_s) == 0:
        return None
    array = np.asarray(durations_s, dtype=float)
    return float(array[array <= outlier_threshold(*median_mad(array))].mean())


def outlier_threshold(median: float, mad: float) -> float:
    """Above this a step is an outlier: median + 3 MAD, and at least 5% above the median (identical
    steps have a MAD of 0, and a few ns of timer jitter is no outlier)."""
    return median + max(OUTLIER_MADS * mad, MIN_RELATIVE_EXCESS * abs(median))


def step_stats(
    *,
    durations_s: Sequence[float],
    steps: Sequence[int],
    ranks: Sequence[int] | None = None,
    unit: str = "step",
) -> StepStats:
    """Summarize step durations in seconds; ``steps``/``ranks`` label the outliers."""
    count = len(durations_s)
    if count == 0:
        return StepStats(unit=unit, count=0, total_s=0.0)
    array = np.asarray(durations_s, dtype=float)
    median, mad = median_mad(array)
    threshold = outlier_threshold(median, mad)
    ideal = float(array[array <= threshold].mean())
    mean = float(array.mean())
    outlier_index = np.nonzero(array > threshold)[0]
    worst = outlier_index[np.argsort(-array[outlier_index], kind="stable")][:MAX_LISTED_OUTLIERS]
    labels = ranks if ranks is not None else [0] * count
    return StepStats(
        unit=unit,
        count=count,
        total_s=float(array.sum()),
        mean_s=mean,
        median_s=median,
        p90_s=float(np.percentile(array, 90)),
        min_s=float(array.min()),
        max_s=float(array.max()),
        mad_s=mad,
        ideal_s=ideal,
        outlier_threshold_s=threshold,
        excess_s=float(np.clip(array - ideal, 0.0, None).sum()),
        mean_deviation=(mean - ideal) / ideal if ideal > 0 else None,
        num_outliers=len(outlier_index),
        outliers=tuple(
            Outlier(
                step=int(steps[i]),
                rank=int(labels[i]),
                duration_s=float(array[i]),
                excess_s=float(array[i] - ideal),
            )
            for i in worst
        ),
    )


def robust_high(
    values: Sequence[float], *, min_relative: float = MIN_RELATIVE_EXCESS, floor: float = 0.0
) -> list[bool]:
    """Which values lie above ``median + max(3 MAD, min_relative * |median|, floor)``.

    The floors keep ranks with a tiny spread from being flagged. Two values have no spread to judge
    by: the higher is flagged when it exceeds the lower by ``max(min_relative * |lower|, floor)``.

    >>> robust_high([1.0, 1.5]), robust_high([1.0, 1.04])
    ([False, True], [False, False])
    """
    if len(values) < 2:
        return [False] * len(values)
    if len(values) == 2:
        low, high = sorted(values)
        line = low + max(min_relative * abs(low), floor)
        return [value == high and value > line for value in values]
    median, mad = median_mad(values)
    line = median + max(OUTLIER_MADS * mad, min_relative * abs(median), floor)
    return [value > line for value in values]
