"""Result records: statistics, headline choice, keys and store conversion."""

from __future__ import annotations

import pytest

from lightspeed.bench import BenchResult, Stats, make_result
from lightspeed.gate import benchmark_records


def test_stats_of_samples() -> None:
    assert Stats.of([4.0, 1.0, 3.0, 2.0]) == Stats(min=1.0, median=2.5, max=4.0)


@pytest.mark.parametrize(("best", "expected"), [("max", 30.0), ("min", 10.0), ("median", 20.0)])
def test_headline_value_and_fraction(best: str, expected: float) -> None:
    result = make_result(
        suite="membw",
        name="stream triad",
        dtype="fp64",
        size_bytes=1024,
        samples=[10.0, 30.0, 20.0],
        unit="B/s",
        best=best,
        sol=40.0,
        sol_note="",
        correct=True,
    )
    assert result.value == expected
    assert result.fraction_of_sol == pytest.approx(expected / 40.0)
    assert result.samples == (10.0, 30.0, 20.0)


def test_unknown_sol_gives_no_fraction() -> None:
    result = make_result(
        suite="launch",
        name="dispatch",
        dtype=None,
        num_ops_per_sample=100,
        samples=[1e-6],
        unit="s",
        best="median",
        sol=None,
        sol_note="none",
        correct=True,
    )
    assert result.fraction_of_sol is None
    assert result.key == "launch dispatch 100 ops"
    assert result.metric == "seconds"


def test_json_has_the_documented_keys() -> None:
    result = make_result(
        suite="gemm",
        name="gemm 8x8x8",
        dtype="fp32",
        flop_per_call=1024,
        samples=[1e9],
        unit="FLOP/s",
        best="median",
        sol=2e9,
        sol_note="",
        correct=True,
    )
    data = result.to_dict()
    required = {
        "suite",
        "name",
        "dtype",
        "size",
        "value",
        "unit",
        "sol",
        "fraction_of_sol",
        "stats",
        "correct",
    }
    assert required <= set(data)
    assert set(data["stats"]) == {"min", "median", "max"}
    # the swept size carries its unit; 'size' stays as the old key's alias
    assert (data["flop_per_call"], data["size_bytes"], data["num_ops_per_sample"]) == (1024, None, None)
    assert data["size"] == 1024


def test_exactly_one_size_field() -> None:
    common = {"suite": "membw", "name": "stream triad", "dtype": "fp64", "samples": [1.0], "unit": "B/s",
              "best": "max", "sol": None, "sol_note": "", "correct": True}  # fmt: skip
    with pytest.raises(ValueError, match="exactly one of flop_per_call, size_bytes, num_ops_per_sample"):
        make_result(**common)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="got flop_per_call, size_bytes"):
        make_result(**common, size_bytes=8, flop_per_call=8)  # type: ignore[arg-type]


def test_store_records_carry_samples_and_direction() -> None:
    latency = make_result(
        suite="launch", name="dispatch", dtype=None, num_ops_per_sample=10, samples=[2e-6, 1e-6],
        unit="s", best="median", sol=None, sol_note="", correct=True,
    )  # fmt: skip
    (record,) = benchmark_records([latency])
    assert isinstance(latency, BenchResult)
    assert record.name == "launch dispatch 10 ops"
    assert record.metric == "seconds"
    assert record.payload["samples"] == [2e-6, 1e-6]
    assert record.payload["lower_is_better"] is True
