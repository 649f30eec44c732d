"""One definition of the share of the SOL reached, for benchmark results and stored records."""

from __future__ import annotations

import pytest

from lightspeed.bench.results import make_result
from lightspeed.store.records import lower_is_better
from lightspeed.units import fraction_of_sol


def _result(unit: str, value: float, sol: float) -> tuple[float | None, bool | None]:
    result = make_result(
        suite="launch", name="x", dtype=None, samples=[value], unit=unit, best="min", sol=sol,
        sol_note="", correct=True, num_ops_per_sample=1,
    )  # fmt: skip
    return result.fraction_of_sol, result.above_sol


def test_a_time_reaches_sol_over_value() -> None:
    # 5 us taken where the SOL is 2 us: 40% of the speed of light, not 250%
    assert _result("s", 5e-6, 2e-6) == (pytest.approx(0.4), False)
    # 1.6 us where the SOL is 2 us beats it: 125%
    assert _result("s", 1.6e-6, 2e-6) == (pytest.approx(1.25), True)


def test_a_rate_reaches_value_over_sol() -> None:
    assert _result("FLOP/s", 50e12, 100e12) == (pytest.approx(0.5), False)


def test_the_store_and_the_benchmarks_agree() -> None:
    # a stored record's fraction (StoredRecord.fraction_of_sol) takes its direction from its unit
    for unit, value, sol in (("s", 5e-6, 2e-6), ("B/s", 2e12, 3.35e12), ("kWh", 12.0, 10.0)):
        stored = fraction_of_sol(value, sol, lower_better=lower_is_better(unit))
        assert stored == pytest.approx(_result(unit, value, sol)[0])
