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

Warm-up samples (the first ``num_warmup`` of each series: JIT compilation,
cache fills, lazy initialisation) are dropped before any statistic. Both
tests are implemented with numpy and the standard library (scipy is not a
dependency): the exact null distribution of U for small samples without ties,
the normal approximation with tie and continuity corrections otherwise.

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
from dataclasses import dataclass, replace
from typing import Any, Final, Literal

import numpy as np

from lightspeed.errors import UserInputError
from lightspeed.records import Record
from lightspeed.stats import Alternative, mann_whitney_u

Verdict = Literal["regression", "improvement", "unchanged", "not significant", "too few samples"]

DEFAULT_THRESHOLD_FRACTION: Final = 0.05
DEFAULT_ALPHA: Final = 0.05
DEFAULT_NUM_RESAMPLES: Final = 2000
_BOOTSTRAP_CHUNK: Final = 256


@dataclass(frozen=True)
class MetricSamples(Record):
    """Repeated measurements of one metric, in the metric's own unit.

    ``num_warmup`` leading samples are warm-up and are excluded from every
    statistic; ``source`` says where the samples came from (a path, a run id).
    """

    metric: str
    unit: str
    lower_is_better: bool
    samples: tuple[float, ...]
    num_warmup: int = 0
    source: str = ""

    def measured(self) -> tuple[float, ...]:
        """The samples after the warm-up ones."""
        return self.samples[self.num_warmup :]


@dataclass(frozen=True)
class MetricComparison(Record):
    """The gate's decision for one metric, with every number behind it.

    ``change_fraction`` is ``(median(current) - median(baseline)) / |median(baseline)|``
    (signed: positive when the value grew); ``ci_low_fraction``/``ci_high_fraction``
    bound it at ``confidence``; ``p_value_worse`` and ``p_value_better`` are
    one-sided Mann-Whitney p-values that the current run is worse / better.
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


@dataclass(frozen=True)
class GateResult(Record):
    """Every compared metric; ``num_regressions > 0`` fails the gate."""

    baseline_source: str
    current_source: str
    comparisons: tuple[MetricComparison, ...]
    num_regressions: int
    num_improvements: int
    skipped_metrics: tuple[str, ...]


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

    Both series are resampled with replacement ``num_resamples`` times; the
    seed makes the interval reproducible from run to run (a gate must not flip
    on the same inputs). Returns ``(low_fraction, high_fraction)``.
    """
    base = np.asarray(baseline, dtype=float)
    cur = np.asarray(current, dtype=float)
    rng = np.random.default_rng(seed)
    changes: list[np.ndarray] = []
    for start in range(0, num_resamples, _BOOTSTRAP_CHUNK):
        rows = min(_BOOTSTRAP_CHUNK, num_resamples - start)
        base_medians = np.median(base[rng.integers(0, len(base), size=(rows, len(base)))], axis=1)
        cur_medians = np.median(cur[rng.integers(0, len(cur), size=(rows, len(cur)))], axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            changes.append(_relative_change(cur_medians, base_medians))
    distribution = np.concatenate(changes)
    tail = (1.0 - confidence) / 2.0
    # a resample whose baseline median is 0 has an unbounded change: pick, never interpolate, then
    if np.isfinite(distribution).all():
        low, high = np.quantile(distribution, [tail, 1.0 - tail])
    else:
        low, high = np.quantile(distribution, [tail, 1.0 - tail], method="nearest")
    return float(low), float(high)


def _relative_change(current: Any, baseline: Any) -> Any:
    """``(current - baseline) / |baseline|``: positive when the value grew, whatever its sign."""
    return (current - baseline) / np.abs(baseline)


def _min_exact_p(num_first: int, num_second: int) -> float:
    """The smallest one-sided p-value any data can give: 1 / C(n1 + n2, n1)."""
    return 1.0 / math.comb(num_first + num_second, num_first)


def _check_series(samples: MetricSamples, role: str, num_warmup: int) -> tuple[float, ...]:
    if num_warmup < 0:
        raise UserInputError(f"--warmup must be 0 or more, got {num_warmup}")
    measured = samples.samples[num_warmup:]
    if not measured:
        raise UserInputError(
            f"{role} {samples.metric!r} ({samples.source or 'input'}) has {len(samples.samples)} "
            f"sample(s) and {num_warmup} warm-up sample(s): nothing is left to compare; "
            "record more samples or lower --warmup"
        )
    odd = [v for v in measured if v != 0 and not 1.0 / MAX_SAMPLE_MAGNITUDE <= abs(v) <= MAX_SAMPLE_MAGNITUDE]
    if odd:
        raise UserInputError(
            f"{role} {samples.metric!r} ({samples.source or 'input'}) holds a sample of {odd[0]:g}, outside "
            f"the 1e-100 .. 1e100 any measurement falls in (ratios of such values overflow); check the input"
        )
    return measured


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

    ``num_warmup`` overrides both series' own warm-up counts when given.
    """
    _check_compatible(baseline, current)
    if not 0.0 < alpha < 1.0:
        raise UserInputError(f"alpha must be between 0 and 1 (e.g. 0.05), got {alpha}")
    if threshold_fraction < 0.0:
        raise UserInputError(f"the threshold must be 0% or more, got {threshold_fraction:.1%}")
    warm_base = baseline.num_warmup if num_warmup is None else num_warmup
    warm_cur = current.num_warmup if num_warmup is None else num_warmup
    base = _check_series(baseline, "baseline", warm_base)
    cur = _check_series(current, "current", warm_cur)
    base_median, cur_median = float(np.median(base)), float(np.median(cur))
    if base_median == 0.0:
        raise UserInputError(
            f"baseline {baseline.metric!r} has median 0 {baseline.unit}: a relative change is undefined; "
            "compare a metric whose baseline is not zero"
        )
    change = float(_relative_change(cur_median, base_median))
    worse_alternative: Alternative = "greater" if baseline.lower_is_better else "less"
    better_alternative: Alternative = "less" if baseline.lower_is_better else "greater"
    worse = mann_whitney_u(first=cur, second=base, alternative=worse_alternative)
    better = mann_whitney_u(first=cur, second=base, alternative=better_alternative)
    low, high = bootstrap_median_change(
        baseline=base, current=cur, confidence=1.0 - alpha, num_resamples=num_resamples, seed=seed
    )
    verdict, reason = _decide(
        change_fraction=change,
        interval=(low, high),
        p_values=(worse.p_value, better.p_value),
        lower_is_better=baseline.lower_is_better,
        threshold_fraction=threshold_fraction,
        alpha=alpha,
        counts=(len(base), len(cur)),
    )
    return MetricComparison(
        metric=baseline.metric,
        unit=baseline.unit,
        lower_is_better=baseline.lower_is_better,
        num_baseline=len(base),
        num_current=len(cur),
        num_warmup_baseline=warm_base,
        num_warmup_current=warm_cur,
        baseline_median=base_median,
        current_median=cur_median,
        change_fraction=change,
        ci_low_fraction=low,
        ci_high_fraction=high,
        confidence=1.0 - alpha,
        p_value_worse=worse.p_value,
        p_value_better=better.p_value,
        test_method=f"Mann-Whitney U ({worse.method}) + bootstrap CI of the median",
        threshold_fraction=threshold_fraction,
        alpha=alpha,
        verdict=verdict,
        reason=reason,
    )


def _decide(
    *,
    change_fraction: float,
    interval: tuple[float, float],
    p_values: tuple[float, float],
    lower_is_better: bool,
    threshold_fraction: float,
    alpha: float,
    counts: tuple[int, int],
) -> tuple[Verdict, str]:
    """The verdict and a one-line reason; 'worse' is the metric's bad direction."""
    sign = 1.0 if lower_is_better else -1.0
    worse_fraction = sign * change_fraction
    # Interval of the change in the bad direction (positive = worse).
    worse_low, worse_high = sorted((sign * interval[0], sign * interval[1]))
    if abs(worse_fraction) <= threshold_fraction:
        return (
            "unchanged",
            f"median moved {change_fraction:+.1%}, within the {threshold_fraction:.1%} threshold",
        )
    direction = "worse" if worse_fraction > 0 else "better"
    p_value = p_values[0] if worse_fraction > 0 else p_values[1]
    excludes_zero = worse_low > 0.0 if worse_fraction > 0 else worse_high < 0.0
    if _min_exact_p(*counts) >= alpha:
        return "too few samples", (
            f"median {change_fraction:+.1%} ({direction}), but {counts[0]} baseline and {counts[1]} "
            f"current samples cannot reach significance at alpha={alpha:g}; record more repetitions"
        )
    if p_value >= alpha or not excludes_zero:
        return "not significant", (
            f"median {change_fraction:+.1%} ({direction}) is within the noise: p={p_value:.3g}, "
            f"CI [{interval[0]:+.1%}, {interval[1]:+.1%}]"
        )
    verdict: Verdict = "regression" if worse_fraction > 0 else "improvement"
    return verdict, (
        f"median {change_fraction:+.1%} ({direction}) beyond {threshold_fraction:.1%}: "
        f"p={p_value:.3g}, CI [{interval[0]:+.1%}, {interval[1]:+.1%}]"
    )


def _check_compatible(baseline: MetricSamples, current: MetricSamples) -> None:
    if baseline.metric != current.metric:
        raise UserInputError(
            f"cannot compare metric {baseline.metric!r} with {current.metric!r}; "
            "pass results of the same metric (or choose one with --metric)"
        )
    if baseline.unit != current.unit:
        raise UserInputError(
            f"metric {baseline.metric!r} is in {baseline.unit!r} in the baseline ({baseline.source}) "
            f"but in {current.unit!r} in the current run ({current.source}); convert one to the other's unit"
        )
    if baseline.lower_is_better != current.lower_is_better:
        raise UserInputError(
            f"metric {baseline.metric!r} says lower_is_better={baseline.lower_is_better} in the baseline "
            f"but {current.lower_is_better} in the current run; make both agree"
        )


def compare_runs(
    *,
    baseline: Sequence[MetricSamples],
    current: Sequence[MetricSamples],
    metrics: Sequence[str] = (),
    threshold_fraction: float = DEFAULT_THRESHOLD_FRACTION,
    alpha: float = DEFAULT_ALPHA,
    num_warmup: int | None = None,
    num_resamples: int = DEFAULT_NUM_RESAMPLES,
    seed: int = 0,
) -> GateResult:
    """Compare every metric the two runs share (or only ``metrics``).

    A metric named in ``metrics`` but missing on either side is an error; with
    no ``metrics`` the runs must share at least one metric. Metrics present on
    one side only are listed in ``skipped_metrics``.
    """
    base_by_name = _by_metric(baseline, "baseline")
    cur_by_name = _by_metric(current, "current")
    shared = [name for name in base_by_name if name in cur_by_name]
    if metrics:
        for name in metrics:
            for role, table in (("baseline", base_by_name), ("current", cur_by_name)):
                if name not in table:
                    raise UserInputError(
                        f"metric {name!r} is not in the {role} run; it has: {', '.join(sorted(table))}"
                    )
        selected = list(dict.fromkeys(metrics))
    elif not shared:
        raise UserInputError(
            f"the runs share no metric: baseline has {', '.join(sorted(base_by_name))}; "
            f"current has {', '.join(sorted(cur_by_name))}"
        )
    else:
        selected = shared
    comparisons = tuple(
        compare_samples(
            baseline=base_by_name[name],
            current=cur_by_name[name],
            threshold_fraction=threshold_fraction,
            alpha=alpha,
            num_warmup=num_warmup,
            num_resamples=num_resamples,
            seed=seed,
        )
        for name in selected
    )
    skipped = tuple(sorted((set(base_by_name) ^ set(cur_by_name)) - set(selected)))
    return GateResult(
        baseline_source=_sources(baseline),
        current_source=_sources(current),
        comparisons=comparisons,
        num_regressions=sum(c.verdict == "regression" for c in comparisons),
        num_improvements=sum(c.verdict == "improvement" for c in comparisons),
        skipped_metrics=skipped,
    )


def _by_metric(series: Sequence[MetricSamples], role: str) -> dict[str, MetricSamples]:
    if not series:
        raise UserInputError(f"the {role} input holds no metric samples")
    table: dict[str, MetricSamples] = {}
    for item in series:
        previous = table.get(item.metric)
        if previous is None:
            table[item.metric] = item
        else:  # the same metric twice (e.g. two files): pool the measured samples
            _check_compatible(previous, item)
            table[item.metric] = replace(
                previous,
                samples=previous.measured() + item.measured(),
                num_warmup=0,
                source=f"{previous.source}+{item.source}",
            )
    return table


def _sources(series: Sequence[MetricSamples]) -> str:
    return ", ".join(dict.fromkeys(item.source for item in series if item.source))
