"""Regression statistics: is the current run really worse than the baseline?

A benchmark that is 6% slower on one noisy CI runner is not a regression; a
benchmark that is 6% slower in every one of twenty repetitions is. The gate
therefore calls a change a **regression** only when all three hold:

1. the relative change of the median, in the metric's bad direction, exceeds
   the threshold (5% by default);
2. a one-sided Mann-Whitney U test says the current samples are worse than the
   baseline's with p < alpha (0.05 by default);
3. the bootstrap confidence interval (level ``1 - alpha``) of the relative
   change of the median excludes zero on the bad side.

A baseline whose median is 0 (no findings, no errors) has no relative change:
such a metric is compared by its absolute change instead (any move off 0 is
beyond a relative threshold; the test and the interval of the absolute change
decide). Warm-up samples (the first ``num_warmup`` of each series: JIT
compilation, cache fills, lazy initialisation) are dropped before any
statistic. Both tests are implemented with numpy and the standard library
(scipy is not a dependency): the exact null distribution of U for small
samples without ties, the normal approximation with tie and continuity
corrections otherwise.

This module judges one metric (:func:`compare_samples`); two whole runs, every metric they
share, are compared by :func:`~lightspeed.gate.run_compare.compare_runs`.

Example:
    >>> base = MetricSamples(metric="step_time_s", unit="s", lower_is_better=True,
    ...                      samples=tuple(1.00 + 0.01 * (i % 5) for i in range(20)))
    >>> slow = MetricSamples(metric="step_time_s", unit="s", lower_is_better=True,
    ...                      samples=tuple(1.20 + 0.01 * (i % 5) for i in range(20)))
    >>> compare_samples(baseline=base, current=slow).verdict
    'regression'
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, cast

import numpy as np

from lightspeed.errors import UserInputError
from lightspeed.limits import check_kind, check_number, check_whole
from lightspeed.records import Record
from lightspeed.stats import Alternative, mann_whitney_u
from lightspeed.units import unit_direction

Verdict = Literal["regression", "improvement", "unchanged", "not significant", "too few samples"]
TOO_FEW_SAMPLES: Final = "too few samples"  # the verdict of a metric the gate could not judge
# What the threshold and the interval measure: the median's relative change, or its change in the
# metric's unit when the baseline median is 0 (a relative change from 0 is undefined).
ChangeBasis = Literal["relative", "absolute"]

DEFAULT_THRESHOLD_FRACTION: Final = 0.05
# A move "more than the threshold" must exceed it by more than float rounding (relative to it)
THRESHOLD_RELATIVE_TOLERANCE: Final = 1e-9
DEFAULT_ALPHA: Final = 0.05
DEFAULT_NUM_RESAMPLES: Final = 2000
# The fields of an environment fingerprint the gate compares: (key, what it is, hardware?).
# Timings from different hardware say nothing about a change, so a hardware difference is
# refused unless allowed; a software difference (often the change under test) is a warning.
ENVIRONMENT_FIELDS: Final = (
    ("gpus", "GPU model", True),
    ("cpu_model", "CPU model", True),
    ("torch_version", "torch", False),
    ("cuda_version", "CUDA", False),
    ("gpu_driver_version", "GPU driver", False),
)


@dataclass(frozen=True)
class MetricSamples(Record):
    """Repeated measurements of one metric, in the metric's own unit.

    ``num_warmup`` leading samples are warm-up and are excluded from every
    statistic; ``source`` says where the samples came from (a path, a run id).
    ``direction_assumed`` is true when nothing said which way is better (no
    ``lower_is_better`` stored, a unit that does not decide it) and
    ``lower_is_better`` is a guess. ``environment`` holds ``(key, value)`` pairs of
    :data:`ENVIRONMENT_FIELDS` known for the machine that measured the samples.
    """

    metric: str
    unit: str
    lower_is_better: bool
    samples: tuple[float, ...]
    num_warmup: int = 0
    source: str = ""
    direction_assumed: bool = False
    environment: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        _check_text("metric", self.metric, "the metric's name, e.g. 'step_time_s'")
        _check_text("unit", self.unit, "e.g. 's', 'B/s', or '1' for a fraction")
        check_kind(
            f"lower_is_better of {self.metric!r}", self.lower_is_better, bool,
            "True for times and sizes, False for throughputs", what="True or False",
        )  # fmt: skip
        object.__setattr__(self, "samples", _checked_samples(self.samples, self.metric))
        check_whole(f"num_warmup of {self.metric!r}", self.num_warmup, minimum=0)

    def measured(self) -> tuple[float, ...]:
        """The samples after the warm-up ones."""
        return self.samples[self.num_warmup :]


SAMPLES_HINT: Final = "ls.MetricSamples(metric=..., unit=..., lower_is_better=..., samples=...)"


def _check_text(field: str, value: object, hint: str) -> None:
    """Refuse a ``MetricSamples`` field that is not a non-empty string."""
    check_kind(f"MetricSamples {field}", value, str, hint, what="text")
    if not str(value).strip():
        raise UserInputError(f"MetricSamples {field} must be non-empty text ({hint}), not {value!r}")


def _checked_samples(samples: object, metric: str) -> tuple[float, ...]:
    """``samples`` as a tuple of floats: a list, a tuple or a 1-D NumPy array (not text) of finite
    real numbers (not bools)."""
    label = f"{metric!r} samples"
    if isinstance(samples, np.ndarray):
        samples = samples.tolist()
    check_kind(label, samples, (list, tuple), "e.g. (1.02, 0.98, 1.01)", what="a list or tuple of numbers")
    values = cast("list[object] | tuple[object, ...]", samples)
    if all(type(value) is float for value in values) and bool(np.isfinite(np.asarray(values)).all()):
        return tuple(cast("list[float] | tuple[float, ...]", values))  # the common case, in one pass
    return tuple(check_number(f"{label}[{index}]", value) for index, value in enumerate(values))


@dataclass(frozen=True)
class MetricComparison(Record):
    """The gate's decision for one metric, with every number behind it.

    ``change_fraction`` is ``(median(current) - median(baseline)) / |median(baseline)|``
    (signed: positive when the value grew; infinite, ``null`` in JSON, when the baseline
    median is 0 and the current one is not); ``ci_low_fraction``/``ci_high_fraction``
    bound it at ``confidence`` (infinite, ``null`` in JSON, when resampled baselines have
    median 0: the interval is unbounded on that side). ``change_absolute`` and
    ``ci_low_absolute``/``ci_high_absolute`` are the same in the metric's unit;
    ``change_basis`` says which of the two the threshold and the interval were judged on
    (``'absolute'`` only for a baseline median of 0). ``p_value_worse`` and
    ``p_value_better`` are one-sided Mann-Whitney p-values that the current run is worse /
    better. ``num_warmup_*`` count the samples dropped as warm-up on each side (summed
    over the series of a side).
    """

    metric: str
    unit: str
    lower_is_better: bool
    num_baseline: int
    num_current: int
    num_warmup_baseline: int
    num_warmup_current: int
    baseline_median: float
    current_median: float
    change_fraction: float
    ci_low_fraction: float
    ci_high_fraction: float
    confidence: float
    p_value_worse: float
    p_value_better: float
    test_method: str
    threshold_fraction: float
    alpha: float
    verdict: Verdict
    reason: str
    change_basis: ChangeBasis = "relative"
    change_absolute: float = 0.0
    ci_low_absolute: float = 0.0
    ci_high_absolute: float = 0.0
    direction_assumed: bool = False


def bootstrap_median_change(
    *,
    baseline: Sequence[float],
    current: Sequence[float],
    confidence: float = 1.0 - DEFAULT_ALPHA,
    num_resamples: int = DEFAULT_NUM_RESAMPLES,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap interval of the relative change of the median,
    ``(median(current) - median(baseline)) / |median(baseline)|``.

    Each side's bootstrap medians are drawn ``num_resamples`` times from their exact
    distribution (:func:`bootstrap_medians`: the same law as resampling with replacement,
    at a cost that does not grow with the number of samples); the seed makes the interval
    reproducible from run to run (a gate must not flip on the same inputs). A bound is
    infinite when resampled baselines have median 0. Returns ``(low_fraction, high_fraction)``.
    """
    intervals = _bootstrap_intervals(
        baseline=np.asarray(baseline, dtype=float),
        current=np.asarray(current, dtype=float),
        confidence=confidence,
        num_resamples=num_resamples,
        seed=seed,
    )
    return intervals.relative


@dataclass(frozen=True)
class _Intervals:
    """Bootstrap intervals of the median's change: relative (fractions) and absolute (the unit)."""

    relative: tuple[float, float]
    absolute: tuple[float, float]


def bootstrap_medians(
    sorted_values: np.ndarray, *, num_resamples: int, rng: np.random.Generator
) -> np.ndarray:
    """``num_resamples`` draws of the median of a bootstrap resample of ``sorted_values`` (ascending).

    A resample of n draws with replacement from the n values is ``x[ceil(n U_i) - 1]`` for n
    uniform ``U_i``; sorting is monotone, so its k-th smallest value is ``x[ceil(n U_(k)) - 1]``
    with ``U_(k) ~ Beta(k, n - k + 1)``, and given ``U_(k) = u`` the next order statistic is
    ``u + (1 - u) Beta(1, n - k)``. Drawing those order statistics gives exactly the
    distribution that resampling whole series gives, in O(num_resamples) time and memory
    instead of O(num_resamples x n) (200,000 samples a side: milliseconds, not tens of seconds
    and 900 MB). The median of an even count is the mean of the two middle values, as
    ``numpy.median``.
    """
    count = len(sorted_values)
    if count % 2:
        middle = (count + 1) // 2
        picked = sorted_values[_order_index(rng.beta(middle, count - middle + 1, num_resamples), count)]
        return np.asarray(picked, dtype=np.float64)
    half = count // 2
    lower = rng.beta(half, count - half + 1, num_resamples)
    upper = lower + (1.0 - lower) * rng.beta(1, count - half, num_resamples)
    middle_pair = sorted_values[_order_index(lower, count)] + sorted_values[_order_index(upper, count)]
    return np.asarray(0.5 * middle_pair, dtype=np.float64)


def _order_index(uniform: np.ndarray, count: int) -> np.ndarray:
    """The 0-based index ``ceil(count * u) - 1`` of the value a uniform draw ``u`` picks."""
    return np.asarray(np.clip(np.ceil(uniform * count).astype(np.int64) - 1, 0, count - 1), dtype=np.int64)


def _bootstrap_intervals(
    *, baseline: np.ndarray, current: np.ndarray, confidence: float, num_resamples: int, seed: int
) -> _Intervals:
    rng = np.random.default_rng(seed)
    base_medians = bootstrap_medians(np.sort(baseline), num_resamples=num_resamples, rng=rng)
    cur_medians = bootstrap_medians(np.sort(current), num_resamples=num_resamples, rng=rng)
    with np.errstate(divide="ignore", invalid="ignore"):
        # equal medians are no change, 0 / 0 included
        relative = np.where(cur_medians == base_medians, 0.0, _relative_change(cur_medians, base_medians))
    tail = (1.0 - confidence) / 2.0
    levels = [tail, 1.0 - tail]
    # a resample whose baseline median is 0 has an unbounded change: pick, never interpolate, then
    method: Literal["linear", "nearest"] = "linear" if np.isfinite(relative).all() else "nearest"
    low, high = np.quantile(relative, levels, method=method)
    absolute_low, absolute_high = np.quantile(cur_medians - base_medians, levels)
    return _Intervals((float(low), float(high)), (float(absolute_low), float(absolute_high)))


def _relative_change(current: Any, baseline: Any) -> Any:
    """``(current - baseline) / |baseline|``: positive when the value grew, whatever its sign."""
    return (current - baseline) / np.abs(baseline)


def _median_change(current: float, baseline: float) -> float:
    """The relative change of the median; from a baseline of 0 it is 0 (no move) or infinite."""
    if baseline == 0.0:
        return 0.0 if current == 0.0 else math.copysign(math.inf, current)
    return float(_relative_change(current, baseline))


def _min_exact_p(num_first: int, num_second: int) -> float:
    """The smallest one-sided p-value any data can give: 1 / C(n1 + n2, n1)."""
    return 1.0 / math.comb(num_first + num_second, num_first)


def check_series(samples: MetricSamples, role: str, num_warmup: int) -> np.ndarray:
    """The samples of ``samples`` after ``num_warmup`` warm-up ones, as an array; refused when none
    is left, when one is outside the magnitudes any measurement has, or when a unit that cannot be
    negative (:func:`is_non_negative_unit`) holds a negative sample (warm-up included)."""
    if num_warmup < 0:
        raise UserInputError(f"--warmup must be 0 or more, got {num_warmup}")
    measured = np.asarray(samples.samples[num_warmup:], dtype=float)
    if not len(measured):
        raise UserInputError(
            f"{role} {samples.metric!r} ({samples.source or 'input'}) has {len(samples.samples)} "
            f"sample(s) and {num_warmup} warm-up sample(s): nothing is left to compare; "
            "record more samples or lower --warmup"
        )
    magnitude = np.abs(measured)
    odd = measured[
        (measured != 0) & ~((magnitude >= 1.0 / MAX_SAMPLE_MAGNITUDE) & (magnitude <= MAX_SAMPLE_MAGNITUDE))
    ]
    if len(odd):
        raise UserInputError(
            f"{role} {samples.metric!r} ({samples.source or 'input'}) holds a sample of {odd[0]:g}, outside "
            f"the 1e-100 .. 1e100 any measurement falls in (ratios of such values overflow); check the input"
        )
    every = np.asarray(samples.samples, dtype=float)  # warm-up included: a negative time is never measured
    negative = every[every < 0]
    if len(negative) and is_non_negative_unit(samples.unit):
        raise UserInputError(
            f"{role} {samples.metric!r} ({samples.source or 'input'}) holds a sample of {negative[0]:g} "
            f"{samples.unit}: a time, size or rate is 0 or more; give the measurements themselves "
            "(a change is what the gate computes from two runs)"
        )
    return measured


# Units whose values cannot be negative, besides those whose unit decides the direction (durations,
# energies, their quotients per unit of work, rates: unit_direction): sizes in bytes.
_BYTE_UNITS: Final = ("B", "KB", "MB", "GB", "TB", "PB", "KiB", "MiB", "GiB", "TiB", "PiB", "bytes")


def is_non_negative_unit(unit: str) -> bool:
    """Whether a measurement in ``unit`` is 0 or more: a duration or energy (also per unit of work,
    ``ms/token``), a size in bytes or a rate (``.../s``). A unitless value (``1``, ``ratio``, a
    count of a change) may be negative.

    >>> is_non_negative_unit("ms"), is_non_negative_unit("GB/s"), is_non_negative_unit("1")
    (True, True, False)
    """
    return unit in _BYTE_UNITS or unit_direction(unit) is not None


# No measured quantity in base SI comes near these (FLOP totals of training runs are ~1e27,
# times ~1e-9 s): ratios and sums of values between them stay finite.
MAX_SAMPLE_MAGNITUDE = 1e100


def compare_samples(
    *,
    baseline: MetricSamples,
    current: MetricSamples,
    threshold_fraction: float = DEFAULT_THRESHOLD_FRACTION,
    alpha: float = DEFAULT_ALPHA,
    num_warmup: int | None = None,
    num_resamples: int = DEFAULT_NUM_RESAMPLES,
    seed: int = 0,
) -> MetricComparison:
    """Compare one metric of two runs; ``verdict`` is ``'regression'`` only when the
    median moved the bad way by more than ``threshold_fraction`` (0.05 = 5%) and the
    move is significant at ``alpha`` (Mann-Whitney U and bootstrap CI agree).

    A baseline median of 0 is judged on the absolute change (``change_basis``
    ``'absolute'``): any move off 0 is beyond the threshold, and the test and the
    interval of the absolute change decide. ``num_warmup`` overrides both series' own
    warm-up counts when given.
    """
    for role, side in (("baseline", baseline), ("current", current)):
        check_kind(role, side, MetricSamples, SAMPLES_HINT)
    lower_is_better, direction_assumed = check_compatible(baseline, current)
    check_number("alpha", alpha)  # a number first: the bounds below say what it may be
    check_number("threshold_fraction", threshold_fraction)
    if not 0.0 < alpha < 1.0:
        raise UserInputError(f"alpha must be between 0 and 1 (e.g. 0.05), got {alpha}")
    if threshold_fraction < 0.0:
        raise UserInputError(f"the threshold must be 0% or more, got {threshold_fraction:.1%}")
    _refuse_threshold_out_of_reach(baseline.metric, threshold_fraction, lower_is_better=lower_is_better)
    warm_base = baseline.num_warmup if num_warmup is None else num_warmup
    warm_cur = current.num_warmup if num_warmup is None else num_warmup
    base = check_series(baseline, "baseline", warm_base)
    cur = check_series(current, "current", warm_cur)
    base_median, cur_median = float(np.median(base)), float(np.median(cur))
    worse_alternative: Alternative = "greater" if lower_is_better else "less"
    better_alternative: Alternative = "less" if lower_is_better else "greater"
    worse = mann_whitney_u(first=cur, second=base, alternative=worse_alternative)
    better = mann_whitney_u(first=cur, second=base, alternative=better_alternative)
    intervals = _bootstrap_intervals(
        baseline=base, current=cur, confidence=1.0 - alpha, num_resamples=num_resamples, seed=seed
    )
    change = _Change(
        basis="absolute" if base_median == 0.0 else "relative",
        fraction=_median_change(cur_median, base_median),
        absolute=cur_median - base_median,
        intervals=intervals,
        unit=baseline.unit,
    )
    verdict, reason = _decide(
        change=change,
        p_values=(worse.p_value, better.p_value),
        lower_is_better=lower_is_better,
        threshold_fraction=threshold_fraction,
        alpha=alpha,
        counts=(len(base), len(cur)),
    )
    if direction_assumed:
        reason += f" (direction assumed: {'lower' if lower_is_better else 'higher'} is better)"
    return MetricComparison(
        metric=baseline.metric,
        unit=baseline.unit,
        lower_is_better=lower_is_better,
        num_baseline=len(base),
        num_current=len(cur),
        num_warmup_baseline=warm_base,
        num_warmup_current=warm_cur,
        baseline_median=base_median,
        current_median=cur_median,
        change_fraction=change.fraction,
        ci_low_fraction=intervals.relative[0],
        ci_high_fraction=intervals.relative[1],
        confidence=1.0 - alpha,
        p_value_worse=worse.p_value,
        p_value_better=better.p_value,
        test_method=f"Mann-Whitney U ({worse.method}) + bootstrap CI of the median",
        threshold_fraction=threshold_fraction,
        alpha=alpha,
        verdict=verdict,
        reason=reason,
        change_basis=change.basis,
        change_absolute=change.absolute,
        ci_low_absolute=intervals.absolute[0],
        ci_high_absolute=intervals.absolute[1],
        direction_assumed=direction_assumed,
    )


# A metric that is better higher can fall by 100% of its baseline at most (to 0).
MAX_FALL_FRACTION: Final = 1.0


def _refuse_threshold_out_of_reach(metric: str, threshold_fraction: float, *, lower_is_better: bool) -> None:
    """A threshold of 100% or more could never flag a throughput that fell: refuse it."""
    if lower_is_better or threshold_fraction < MAX_FALL_FRACTION:
        return
    raise UserInputError(
        f"the threshold {threshold_fraction:.1%} can never flag {metric!r}: it is better higher, so it "
        f"can fall by {MAX_FALL_FRACTION:.0%} at most (to 0); choose a threshold below 100% (e.g. 50%)"
    )


@dataclass(frozen=True)
class _Change:
    """The median's change both ways, and the basis the gate judges it on."""

    basis: ChangeBasis
    fraction: float
    absolute: float
    intervals: _Intervals
    unit: str

    @property
    def moved(self) -> float:
        return self.fraction if self.basis == "relative" else self.absolute

    @property
    def interval(self) -> tuple[float, float]:
        return self.intervals.relative if self.basis == "relative" else self.intervals.absolute

    def moved_text(self, direction: str = "") -> str:
        """The move, with its direction (``worse``/``better``) when given."""
        if self.basis == "relative":
            return f"{self.fraction:+.1%}" + (f" ({direction})" if direction else "")
        judged = "from a baseline median of 0, judged by the absolute change"
        return f"{self.absolute:+.4g} {self.unit} ({direction}; {judged})"

    def interval_text(self) -> str:
        low, high = self.interval
        if self.basis == "relative":
            return f"CI [{fraction_text(low)}, {fraction_text(high)}]"
        return f"CI [{low:+.4g}, {high:+.4g}] {self.unit}"


def fraction_text(fraction: float, digits: int = 1) -> str:
    """A signed percentage; an infinite bound (resampled baselines of median 0) is ``unbounded``,
    as JSON, which cannot hold infinity, writes ``null``."""
    return f"{fraction:+.{digits}%}" if math.isfinite(fraction) else "unbounded"


def _decide(
    *,
    change: _Change,
    p_values: tuple[float, float],
    lower_is_better: bool,
    threshold_fraction: float,
    alpha: float,
    counts: tuple[int, int],
) -> tuple[Verdict, str]:
    """The verdict and a one-line reason; 'worse' is the metric's bad direction."""
    sign = 1.0 if lower_is_better else -1.0
    worse_moved = sign * change.moved
    # Interval of the change in the bad direction (positive = worse).
    worse_low, worse_high = sorted((sign * change.interval[0], sign * change.interval[1]))
    if change.basis == "absolute" and change.absolute == 0.0:
        return "unchanged", f"median stayed at 0 {change.unit}"
    if change.basis == "relative" and _within_threshold(worse_moved, threshold_fraction):
        return (
            "unchanged",
            f"median moved {change.moved_text()}, within the {threshold_fraction:.1%} threshold",
        )
    direction = "worse" if worse_moved > 0 else "better"
    p_value = p_values[0] if worse_moved > 0 else p_values[1]
    excludes_zero = worse_low > 0.0 if worse_moved > 0 else worse_high < 0.0
    if _min_exact_p(*counts) >= alpha:
        return "too few samples", (
            f"median {change.moved_text(direction)}, but {counts[0]} baseline and {counts[1]} "
            f"current samples cannot reach significance at alpha={alpha:g}; record more repetitions"
        )
    if p_value >= alpha or not excludes_zero:
        return "not significant", (
            f"median {change.moved_text(direction)} is within the noise: p={p_value:.3g}, "
            f"{change.interval_text()}"
        )
    verdict: Verdict = "regression" if worse_moved > 0 else "improvement"
    beyond = f" beyond {threshold_fraction:.1%}" if change.basis == "relative" else ""
    return verdict, (
        f"median {change.moved_text(direction)}{beyond}: p={p_value:.3g}, {change.interval_text()}"
    )


def _within_threshold(moved_fraction: float, threshold_fraction: float) -> bool:
    """Whether a relative move is not *more* than the threshold, up to float rounding: 1.0 -> 1.05
    computes as +5.0000000000000044%, and a move of exactly the threshold must read the same
    whatever the magnitudes (1.0 -> 1.05 as 100 -> 105).

    >>> _within_threshold(1.05 / 1.0 - 1.0, 0.05), _within_threshold(0.0501, 0.05)
    (True, False)
    """
    return abs(moved_fraction) <= threshold_fraction * (1.0 + THRESHOLD_RELATIVE_TOLERANCE)


def check_compatible(
    baseline: MetricSamples, current: MetricSamples, *, places: tuple[str, str] | None = None
) -> tuple[bool, bool]:
    """Refuse two series that are not the same metric in the same unit; return the direction
    (``lower_is_better``) and whether it is assumed. ``places`` says where each series is, for
    the messages (default: the baseline and the current run, with their sources)."""
    if baseline.metric != current.metric:
        raise UserInputError(
            f"cannot compare metric {baseline.metric!r} with {current.metric!r}; "
            "pass results of the same metric (or choose one with --metric)"
        )
    first_place, second_place = places or (
        f"the baseline ({baseline.source})",
        f"the current run ({current.source})",
    )
    if baseline.unit != current.unit:
        raise UserInputError(
            f"metric {baseline.metric!r} is in {baseline.unit!r} in {first_place} "
            f"but in {current.unit!r} in {second_place}; convert one to the other's unit"
        )
    return _direction(baseline, current, (first_place, second_place))


def _direction(first: MetricSamples, second: MetricSamples, places: tuple[str, str]) -> tuple[bool, bool]:
    """``lower_is_better`` of two series of one metric and whether it is assumed: a stated
    direction wins over a guess (an old record without one beside a new record with one)."""
    if first.direction_assumed != second.direction_assumed:
        stated = second if first.direction_assumed else first
        return stated.lower_is_better, False
    if first.lower_is_better != second.lower_is_better:
        raise UserInputError(
            f"metric {first.metric!r} says lower_is_better={first.lower_is_better} in {places[0]} "
            f"but {second.lower_is_better} in {places[1]}; make both agree"
        )
    return first.lower_is_better, first.direction_assumed
