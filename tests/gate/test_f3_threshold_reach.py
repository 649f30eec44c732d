"""A threshold of 100% or more can never flag a metric that is better higher (it falls by 100% at
most): refused with one line, exit 2, instead of passing a throughput that fell 1000 -> 1."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from expect import one_line_error
from lightspeed.errors import UserInputError
from lightspeed.gate import MetricSamples, compare_samples


def _write(path: Path, samples: list[float], *, lower: bool, unit: str) -> str:
    metric = "step_time_s" if lower else "tokens_per_s"
    path.write_text(
        json.dumps({"metric": metric, "unit": unit, "lower_is_better": lower, "samples": samples}),
        encoding="utf-8",
    )
    return str(path)


def test_a_threshold_of_150_percent_is_refused_for_a_throughput(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    before = _write(
        tmp_path / "t1.json", [1000.0, 1001.0, 999.0, 1002.0, 998.0], lower=False, unit="tokens/s"
    )
    after = _write(tmp_path / "t2.json", [1.0, 1.1, 0.9, 1.05, 0.95], lower=False, unit="tokens/s")
    one_line_error(
        run_cli("compare", before, after, "--threshold", "150%"), "150.0%", "tokens_per_s", "below 100%"
    )
    one_line_error(run_cli("compare", before, after, "--threshold", "100%"), "100.0%")
    # below 100% the fall of 99.9% is a regression (1000 -> 1: (1 - 1000) / 1000 = -99.9%)
    assert run_cli("compare", before, after, "--threshold", "99%").code == 1


def test_a_threshold_of_150_percent_still_works_for_a_time(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    before = _write(tmp_path / "s1.json", [1.0, 1.01, 0.99, 1.02, 0.98], lower=True, unit="s")
    after = _write(tmp_path / "s2.json", [3.0, 3.03, 2.97, 3.06, 2.94], lower=True, unit="s")
    # a time tripled: +200%, beyond 150%
    assert run_cli("compare", before, after, "--threshold", "150%").code == 1


def test_the_library_refuses_it_too() -> None:
    base = MetricSamples("rate", "B/s", False, (10.0, 11.0, 9.0))
    with pytest.raises(UserInputError, match="can never flag 'rate'"):
        compare_samples(baseline=base, current=base, threshold_fraction=1.5)
