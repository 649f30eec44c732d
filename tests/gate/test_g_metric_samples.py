"""MetricSamples checks its fields where it is made (docs/python-api.md: a string where a number
belongs raises UserInputError, never a TypeError), and the gate refuses a negative time, size or
rate instead of calling it an improvement."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import lightspeed as ls
from lightspeed.errors import UserInputError
from lightspeed.gate import MetricSamples, compare_runs, compare_samples

GOOD: dict[str, Any] = {"metric": "s", "unit": "s", "lower_is_better": True, "samples": (1.0,) * 12}


def test_a_string_of_samples_is_a_user_error() -> None:
    """The reported call: ``samples="123456789012"`` gave ``TypeError: len() of unsized object``."""
    with pytest.raises(UserInputError, match=r"'s' samples must be a list or tuple of numbers .* str"):
        ls.compare_samples(
            baseline=ls.MetricSamples(**GOOD),
            current=ls.MetricSamples(metric="s", unit="s", lower_is_better=True, samples="123456789012"),
        )


@pytest.mark.parametrize(
    ("field", "value", "fragment"),
    [
        ("samples", b"\x01\x02", "list or tuple of numbers"),
        ("samples", 5.0, "list or tuple of numbers"),
        ("samples", (1.0, True), r"samples\[1\] must be a finite number \(got True, a bool\)"),
        ("samples", [1.0, "2"], r"samples\[1\] must be a finite number"),
        ("samples", (1.0, float("nan")), r"samples\[1\] must be a finite number \(got nan\)"),
        ("samples", (float("inf"),), r"samples\[0\] must be a finite number"),
        ("metric", "", "metric must be non-empty text"),
        ("metric", 3, "metric must be text"),
        ("unit", None, "unit must be text"),
        ("lower_is_better", 1, "lower_is_better of 's' must be True or False"),
        ("num_warmup", -1, "num_warmup of 's' must be a whole number >= 0"),
        ("num_warmup", 1.0, "num_warmup of 's' must be a whole number"),
    ],
)
def test_bad_fields_are_refused_at_construction(field: str, value: object, fragment: str) -> None:
    with pytest.raises(UserInputError, match=fragment):
        MetricSamples(**{**GOOD, field: value})


def test_numbers_of_any_real_type_become_floats() -> None:
    series = MetricSamples(**{**GOOD, "samples": np.array([1, 2, 3])})
    assert series.samples == (1.0, 2.0, 3.0)
    assert all(type(value) is float for value in series.samples)
    assert MetricSamples(**{**GOOD, "samples": [1, np.float32(2.5)]}).samples == (1.0, 2.5)


def test_compare_refuses_what_is_not_a_series_or_a_number() -> None:
    with pytest.raises(UserInputError, match="current must be a MetricSamples"):
        compare_samples(baseline=MetricSamples(**GOOD), current={"samples": [1.0]})  # type: ignore[arg-type]
    with pytest.raises(UserInputError, match="alpha must be a finite number"):
        compare_samples(baseline=MetricSamples(**GOOD), current=MetricSamples(**GOOD), alpha="0.05")  # type: ignore[arg-type]
    with pytest.raises(UserInputError, match="each current series must be a MetricSamples"):
        compare_runs(baseline=[MetricSamples(**GOOD)], current=["s"])  # type: ignore[list-item]


@pytest.mark.parametrize("unit", ["s", "ms", "B", "GB", "B/s", "tokens/s"])
def test_a_negative_time_size_or_rate_is_refused(unit: str) -> None:
    """The reported case: baseline 1.0 s x 12, current -1.0 s x 12 was judged an 'improvement'."""
    base = MetricSamples(metric="m", unit=unit, lower_is_better=True, samples=(1.0,) * 12)
    cur = MetricSamples(metric="m", unit=unit, lower_is_better=True, samples=(-1.0,) * 12)
    with pytest.raises(UserInputError, match=rf"current 'm' \(input\) holds a sample of -1 {unit}"):
        compare_samples(baseline=base, current=cur)
    warm = MetricSamples(
        metric="m", unit=unit, lower_is_better=True, samples=(-1.0, *(1.0,) * 11), num_warmup=1
    )
    with pytest.raises(UserInputError, match="baseline 'm'"):
        compare_runs(baseline=[warm], current=[base])  # a negative warm-up sample is no measurement either


def test_a_unitless_change_may_be_negative() -> None:
    """A delta in unit '1' is signed: -1.0 against -1.0 is no change (by hand: equal medians)."""
    base = MetricSamples(metric="delta", unit="1", lower_is_better=True, samples=(-1.0,) * 12)
    assert compare_samples(baseline=base, current=base).verdict == "unchanged"
