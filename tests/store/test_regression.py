"""Regression statistics: Mann-Whitney U against scipy, bootstrap CI, the gate's decisions.

Golden p-values come from scipy 1.17.1 (``scipy.stats.mannwhitneyu``), a peer
implementation, or from hand counts written in the test.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lightspeed.errors import DataFileError, LightspeedError, UserInputError
from lightspeed.gate.compare import (
    MetricSamples,
    bootstrap_median_change,
    compare_samples,
    mann_whitney_u,
)
from lightspeed.gate.inputs import load_metric_samples, read_sample_file
from lightspeed.gate.run_compare import compare_runs


def _series(
    values: object, metric: str = "step_time_s", unit: str = "s", lower: bool = True, warmup: int = 0
) -> MetricSamples:
    return MetricSamples(
        metric=metric,
        unit=unit,
        lower_is_better=lower,
        samples=tuple(float(v) for v in np.asarray(values, dtype=float)),
        num_warmup=warmup,
        source="test",
    )


# --- Mann-Whitney U ---------------------------------------------------------


def test_exact_p_value_by_hand_count() -> None:
    # All 3 of the first sample above all 3 of the second: U = 9, and exactly
    # one of the C(6, 3) = 20 equally likely orderings is that extreme.
    result = mann_whitney_u(first=[4, 5, 6], second=[1, 2, 3], alternative="greater")
    assert result.u_statistic == 9.0
    assert result.method == "exact"
    assert result.p_value == pytest.approx(1 / 20)
    # U >= 11 of 3 vs 4 samples: orderings with U in {11, 12} are 2 of C(7, 3) = 35.
    hand = mann_whitney_u(first=[3.5, 5, 6], second=[1, 2, 3, 4], alternative="greater")
    assert hand.u_statistic == 11.0
    assert hand.p_value == pytest.approx(2 / 35)


SCIPY_CASES = [
    # (first, second, {alternative: (U, p)}) from scipy.stats.mannwhitneyu 1.17.1
    (
        [1.1, 2.3, 3.5, 4.2, 5.9, 6.1, 7.7, 8.4, 9.0, 10.6],
        [3.3, 4.4, 5.5, 6.6, 7.9, 8.8, 9.9, 11.2, 12.1, 13.4, 14.5, 15.6],
        "exact",
        {
            "greater": (30.0, 0.9787147836683441),
            "less": (30.0, 0.0251621443571908),
            "two-sided": (30.0, 0.0503242887143816),
        },
    ),
    (
        [1, 2, 2, 3, 3, 3, 4, 5],
        [2, 3, 4, 4, 5, 5, 6, 7, 8],
        "asymptotic",
        {
            "greater": (13.5, 0.987571816135011),
            "less": (13.5, 0.01593335271351583),
            "two-sided": (13.5, 0.03186670542703166),
        },
    ),
    (
        [0.5, 0.52, 0.49, 0.51, 0.53, 0.50, 0.55, 0.48, 0.47, 0.56] * 6,
        [0.51, 0.54, 0.52, 0.53, 0.56, 0.57, 0.50, 0.55, 0.58, 0.49] * 6,
        "asymptotic",
        {
            "greater": (1008.0, 0.9999854473541482),
            "less": (1008.0, 1.4893987421500582e-05),
            "two-sided": (1008.0, 2.9787974843001164e-05),
        },
    ),
]


@pytest.mark.parametrize(("first", "second", "method", "expected"), SCIPY_CASES)
def test_mann_whitney_matches_scipy(
    first: list[float], second: list[float], method: str, expected: dict[str, tuple[float, float]]
) -> None:
    for alternative, (u_statistic, p_value) in expected.items():
        result = mann_whitney_u(first=first, second=second, alternative=alternative)  # type: ignore[arg-type]
        assert result.method == method
        assert result.u_statistic == u_statistic
        assert result.p_value == pytest.approx(p_value, rel=1e-9)


def test_all_tied_gives_no_evidence() -> None:
    assert mann_whitney_u(first=[1.0] * 5, second=[1.0] * 7).p_value == 1.0


def test_mann_whitney_needs_samples() -> None:
    with pytest.raises(UserInputError):
        mann_whitney_u(first=[], second=[1.0])


@settings(max_examples=60, deadline=None)
@given(
    first=st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=30),
    second=st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=30),
)
def test_u_statistics_of_both_sides_sum_to_n1_n2(first: list[float], second: list[float]) -> None:
    forward = mann_whitney_u(first=first, second=second)
    backward = mann_whitney_u(first=second, second=first)
    assert forward.u_statistic + backward.u_statistic == pytest.approx(len(first) * len(second))
    # "first is greater" and "second is greater" are the same one-sided question.
    assert forward.p_value == pytest.approx(
        mann_whitney_u(first=second, second=first, alternative="less").p_value
    )
    assert 0.0 <= forward.p_value <= 1.0


# --- bootstrap ------------------------------------------------------------


def test_bootstrap_interval_brackets_the_true_change_and_is_reproducible() -> None:
    rng = np.random.default_rng(7)
    base = rng.normal(1.0, 0.02, 40)
    cur = rng.normal(1.10, 0.02, 40)  # +10% in truth
    low, high = bootstrap_median_change(baseline=base, current=cur, seed=3)
    assert low < 0.10 < high
    assert high - low < 0.05
    assert (low, high) == bootstrap_median_change(baseline=base, current=cur, seed=3)


def test_bootstrap_of_identical_constant_series_is_zero() -> None:
    assert bootstrap_median_change(baseline=[2.0] * 5, current=[2.0] * 9) == (0.0, 0.0)


# --- the gate's decisions ---------------------------------------------------


def test_real_slowdown_is_a_regression() -> None:
    rng = np.random.default_rng(1)
    base = _series(rng.normal(0.500, 0.01, 20))
    cur = _series(rng.normal(0.550, 0.01, 20))  # 10% slower, 2% noise
    result = compare_samples(baseline=base, current=cur)
    assert result.verdict == "regression"
    assert result.change_fraction == pytest.approx(0.10, abs=0.02)
    assert result.p_value_worse < 1e-6
    assert result.ci_low_fraction > 0.05


def test_throughput_drop_is_a_regression_and_rise_an_improvement() -> None:
    rng = np.random.default_rng(2)
    base = _series(rng.normal(1000.0, 10.0, 15), metric="tokens_per_s", unit="tokens/s", lower=False)
    drop = _series(rng.normal(900.0, 10.0, 15), metric="tokens_per_s", unit="tokens/s", lower=False)
    assert compare_samples(baseline=base, current=drop).verdict == "regression"
    assert compare_samples(baseline=drop, current=base).verdict == "improvement"


def test_change_below_threshold_is_unchanged_even_when_significant() -> None:
    base = _series(np.linspace(1.00, 1.01, 30))
    cur = _series(np.linspace(1.03, 1.04, 30))  # +3%, perfectly separated
    result = compare_samples(baseline=base, current=cur, threshold_fraction=0.05)
    assert result.p_value_worse < 1e-6
    assert result.verdict == "unchanged"
    assert compare_samples(baseline=base, current=cur, threshold_fraction=0.01).verdict == "regression"


def test_noisy_shift_beyond_threshold_is_not_significant() -> None:
    # A noisy CI runner: 30% spread, five samples each, current median 8% higher.
    base = _series([1.00, 0.70, 1.30, 0.85, 1.20])
    cur = _series([1.08, 0.75, 1.35, 0.80, 1.25])
    result = compare_samples(baseline=base, current=cur)
    assert result.change_fraction == pytest.approx(0.08)
    assert result.verdict == "not significant"


def test_one_outlier_in_current_does_not_trigger() -> None:
    rng = np.random.default_rng(4)
    base = rng.normal(1.0, 0.02, 25)
    cur = rng.normal(1.0, 0.02, 25)
    cur[[3, 17]] = [5.0, 9.0]  # two hiccups (GC pause, noisy neighbour)
    assert compare_samples(baseline=_series(base), current=_series(cur)).verdict == "unchanged"


def test_too_few_samples_cannot_fail_the_gate() -> None:
    # 3 vs 3: the smallest one-sided p is 1/C(6,3) = 0.05, never below alpha = 0.05.
    result = compare_samples(baseline=_series([1.0, 1.01, 1.02]), current=_series([2.0, 2.01, 2.02]))
    assert result.verdict == "too few samples"
    single = compare_samples(baseline=_series([1.0]), current=_series([3.0]))
    assert single.verdict == "too few samples"


def test_warmup_samples_are_excluded() -> None:
    rng = np.random.default_rng(5)
    base = _series(rng.normal(1.0, 0.01, 20))
    # 12 slow warm-up steps (compilation), then 12 steps as fast as the baseline.
    cur_values = np.concatenate((rng.normal(3.0, 0.1, 12), rng.normal(1.0, 0.01, 12)))
    assert compare_samples(baseline=base, current=_series(cur_values)).verdict == "regression"
    excluded = compare_samples(baseline=base, current=_series(cur_values, warmup=12))
    assert excluded.verdict == "unchanged"
    assert excluded.num_current == 12
    overridden = compare_samples(baseline=base, current=_series(cur_values), num_warmup=12)
    assert overridden.verdict == "unchanged"
    assert overridden.num_warmup_baseline == 12


def test_warmup_leaving_nothing_is_an_error() -> None:
    with pytest.raises(UserInputError, match="nothing is left"):
        compare_samples(baseline=_series([1.0, 2.0]), current=_series([1.0, 2.0]), num_warmup=2)


def test_negative_metric_keeps_direction() -> None:
    # A metric below zero (e.g. a loss delta): growing from -2 to -1 is +50%.
    base = _series(np.linspace(-2.02, -1.98, 12), metric="delta", unit="1")
    cur = _series(np.linspace(-1.02, -0.98, 12), metric="delta", unit="1")
    result = compare_samples(baseline=base, current=cur)
    assert result.change_fraction == pytest.approx(0.5)
    assert result.verdict == "regression"
    assert result.ci_low_fraction > 0


def test_zero_baseline_is_compared_by_its_absolute_change() -> None:
    # A relative change from a median of 0 is undefined: the absolute change (0 -> 1) is judged.
    result = compare_samples(baseline=_series([0.0] * 5), current=_series([1.0] * 5))
    assert result.change_basis == "absolute"
    assert result.change_absolute == 1.0
    assert result.verdict == "regression"


@pytest.mark.parametrize(
    ("current", "message"),
    [
        (_series([1.0], unit="ms"), "convert one"),
        (_series([1.0], metric="tokens_per_s"), "cannot compare metric"),
        (_series([1.0], lower=False), "lower_is_better"),
    ],
)
def test_incompatible_series_are_refused(current: MetricSamples, message: str) -> None:
    with pytest.raises(UserInputError, match=message):
        compare_samples(baseline=_series([1.0]), current=current)


def test_bad_parameters_are_refused() -> None:
    with pytest.raises(UserInputError, match="alpha"):
        compare_samples(baseline=_series([1.0]), current=_series([1.0]), alpha=1.5)
    with pytest.raises(UserInputError, match="threshold"):
        compare_samples(baseline=_series([1.0]), current=_series([1.0]), threshold_fraction=-0.1)


def test_compare_runs_matches_metrics_and_counts_regressions() -> None:
    rng = np.random.default_rng(6)
    base = [
        _series(rng.normal(1.0, 0.01, 10)),
        _series(rng.normal(50, 1, 10), metric="mem_gb", unit="GB"),
        _series([1.0], metric="only_base"),
    ]
    cur = [_series(rng.normal(1.2, 0.01, 10)), _series(rng.normal(50, 1, 10), metric="mem_gb", unit="GB")]
    result = compare_runs(baseline=base, current=cur)
    assert [c.metric for c in result.comparisons] == ["step_time_s", "mem_gb"]
    assert result.num_regressions == 1
    assert result.skipped_metrics == ("only_base",)
    chosen = compare_runs(baseline=base, current=cur, metrics=["mem_gb"])
    assert chosen.num_regressions == 0
    with pytest.raises(UserInputError, match="not in the current run"):
        compare_runs(baseline=base, current=cur, metrics=["only_base"])
    with pytest.raises(UserInputError, match="share no metric"):
        compare_runs(baseline=[_series([1.0], metric="a")], current=[_series([1.0], metric="b")])
    with pytest.raises(UserInputError, match="no metric samples"):
        compare_runs(baseline=[], current=cur)


def test_duplicate_metric_series_are_pooled_after_warmup() -> None:
    first = _series([9.0, 1.0, 1.0], warmup=1)
    second = _series([9.0, 1.0, 1.0, 1.0], warmup=1)
    result = compare_runs(baseline=[first, second], current=[_series([1.0] * 5)])
    assert result.comparisons[0].num_baseline == 5
    assert result.comparisons[0].baseline_median == 1.0


# --- false positives and power over many draws -------------------------------


def _null_draws(rng: np.random.Generator, shape: str, size: tuple[int, int]) -> np.ndarray:
    if shape == "normal":
        return rng.normal(1.0, 0.2, size)
    if shape == "lognormal":  # heavy right tail, as step times on shared runners
        return rng.lognormal(0.0, 0.5, size)
    # bimodal: 20% of steps hit a slow path
    return np.where(rng.random(size) < 0.2, 2.0, 1.0) * rng.normal(1.0, 0.05, size)


@settings(max_examples=8, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    shape=st.sampled_from(["normal", "lognormal", "bimodal"]),
    num_samples=st.integers(5, 25),
)
def test_false_positive_rate_stays_near_alpha(seed: int, shape: str, num_samples: int) -> None:
    """Under the null (same distribution), threshold 0: regressions at most ~alpha."""
    rng = np.random.default_rng(seed)
    num_draws = 120
    draws = _null_draws(rng, shape, (num_draws, 2 * num_samples))
    regressions = 0
    for row in draws:
        result = compare_samples(
            baseline=_series(row[:num_samples]),
            current=_series(row[num_samples:]),
            threshold_fraction=0.0,
            num_resamples=300,
        )
        regressions += result.verdict == "regression"
    # Binomial(120, 0.05): mean 6, sd 2.4; 15 is past the 99.9th percentile.
    assert regressions <= 15, f"{regressions}/{num_draws} false regressions ({shape}, n={num_samples})"


def test_default_threshold_keeps_noisy_null_draws_quiet() -> None:
    rng = np.random.default_rng(11)
    draws = rng.lognormal(0.0, 0.3, (150, 20))  # ~30% spread, no real change
    verdicts = [
        compare_samples(baseline=_series(r[:10]), current=_series(r[10:]), num_resamples=300).verdict
        for r in draws
    ]
    assert verdicts.count("regression") <= 150 * 0.05


def test_power_against_a_real_ten_percent_shift() -> None:
    rng = np.random.default_rng(12)
    detected = 0
    for _ in range(60):
        base = rng.normal(1.0, 0.03, 12)
        cur = rng.normal(1.1, 0.03, 12)
        detected += (
            compare_samples(baseline=_series(base), current=_series(cur), num_resamples=300).verdict
            == "regression"
        )
    assert detected >= 57


@settings(max_examples=40, deadline=None)
@given(
    values=st.lists(st.floats(0.1, 10.0), min_size=2, max_size=15),
    other=st.lists(st.floats(0.1, 10.0), min_size=2, max_size=15),
    exponent=st.integers(-20, 20),
)
def test_verdict_does_not_depend_on_the_unit(values: list[float], other: list[float], exponent: int) -> None:
    # A power of two scales floats exactly, so order and ties survive the change of unit.
    scale = 2.0**exponent
    plain = compare_samples(baseline=_series(values), current=_series(other), num_resamples=200)
    scaled = compare_samples(
        baseline=_series(np.asarray(values) * scale),
        current=_series(np.asarray(other) * scale),
        num_resamples=200,
    )
    assert plain.p_value_worse == pytest.approx(scaled.p_value_worse)
    assert plain.change_fraction == pytest.approx(scaled.change_fraction, abs=1e-9)
    if not math.isclose(abs(plain.change_fraction), 0.05, abs_tol=1e-6):
        assert plain.verdict == scaled.verdict


@settings(max_examples=40, deadline=None)
@given(values=st.lists(st.floats(0.1, 10.0), min_size=1, max_size=20))
def test_identical_runs_never_regress(values: list[float]) -> None:
    result = compare_samples(baseline=_series(values), current=_series(values), num_resamples=200)
    assert result.verdict == "unchanged"
    assert result.change_fraction == 0.0


# --- sample files -------------------------------------------------------------


def _write(tmp_path: Path, payload: object, name: str = "samples.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(payload), encoding="utf-8")
    return path


def test_read_sample_file_single_and_list(tmp_path: Path) -> None:
    one = {"metric": "step_time_s", "unit": "s", "lower_is_better": True, "samples": [0.5, 0.51], "warmup": 1}
    path = _write(tmp_path, one)
    (series,) = read_sample_file(path)
    assert series.samples == (0.5, 0.51)
    assert series.num_warmup == 1
    assert series.source == str(path)
    two = _write(
        tmp_path,
        [one, {**one, "metric": "tokens_per_s", "unit": "tokens/s", "lower_is_better": False}],
        "two.json",
    )
    assert [s.metric for s in load_metric_samples(two)] == ["step_time_s", "tokens_per_s"]


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"unit": "s", "lower_is_better": True, "samples": [1]}, "metric"),
        ({"metric": "t", "lower_is_better": True, "samples": [1]}, "unit"),
        ({"metric": "t", "unit": "s", "lower_is_better": "yes", "samples": [1]}, "lower_is_better"),
        ({"metric": "t", "unit": "s", "lower_is_better": True, "samples": []}, "samples"),
        ({"metric": "t", "unit": "s", "lower_is_better": True, "samples": [1, True]}, "finite number"),
        ({"metric": "t", "unit": "s", "lower_is_better": True, "samples": [1], "warmup": -1}, "warmup"),
        ([], "empty list"),
        ([3], "not a JSON object"),
    ],
)
def test_bad_sample_files_name_the_problem(tmp_path: Path, payload: object, field: str) -> None:
    path = _write(tmp_path, payload)
    with pytest.raises(DataFileError, match=field) as raised:
        read_sample_file(path)
    assert str(path) in str(raised.value)


def test_unreadable_sample_files(tmp_path: Path) -> None:
    nan = tmp_path / "nan.json"
    nan.write_text('{"metric": "t", "unit": "s", "lower_is_better": true, "samples": [NaN]}')
    with pytest.raises(DataFileError, match="not valid JSON"):
        read_sample_file(nan)
    empty = tmp_path / "empty.json"
    empty.write_text("")
    with pytest.raises(DataFileError, match="empty"):
        read_sample_file(empty)
    binary = tmp_path / "binary.json"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(DataFileError, match="UTF-8"):
        read_sample_file(binary)
    with pytest.raises(DataFileError, match="no such file"):
        load_metric_samples(tmp_path / "missing.json")


@settings(max_examples=80, deadline=None)
@given(text=st.text(max_size=200))
def test_any_text_parses_or_raises_a_user_error(text: str) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "fuzz.json"
        path.write_text(text, encoding="utf-8")
        try:
            series = read_sample_file(path)
        except LightspeedError:
            return
        assert all(s.samples for s in series)
