"""The tour stores a trace's idle time as the store's writers must: a fraction (unit "1") with
lower_is_better, so the gate calls idle rising a regression; runs stored before as idle_pct in %
stay readable and compare with the new ones."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from lightspeed.catalog import load_catalog
from lightspeed.gate import compare_runs, load_metric_samples
from lightspeed.store import NewRecord, open_store
from lightspeed.tour import steps as tour


def test_the_tour_stores_idle_as_a_fraction_lower_is_better(tmp_path: Path) -> None:
    state = tour.TourState(out_dir=tmp_path, quick=True, catalog=load_catalog(), models=None)  # type: ignore[arg-type]
    step = tour.run_step("trace", "trace", tour.step_trace, state)
    assert step.status == "ok", step.reason
    with open_store(create=False) as store:
        records = store.records(kind="trace")
    assert {record.metric for record in records} == {"idle_fraction"}
    assert {record.unit for record in records} == {"1"}
    assert all(record.payload["lower_is_better"] is True for record in records)
    by_name = {record.name: record.value for record in records}
    # docs/tour.md: the shipped trace's rank 0 is idle 53.6%, rank 1 54.7% (HTA's definitions)
    assert by_name["sample trace rank 0"] == pytest.approx(0.536, abs=0.0006)
    assert by_name["sample trace rank 1"] == pytest.approx(0.547, abs=0.0006)


def _idle_run(metric: str, unit: str, values: list[float], *, lower: bool | None) -> str:
    payload = {} if lower is None else {"lower_is_better": lower}
    with open_store() as store:
        return store.add_records(
            kind="trace",
            records=[
                NewRecord(name=f"job rank {rank}", metric=metric, value=value, unit=unit, payload=payload)
                for rank, value in enumerate(values)
            ],
        )


def test_idle_rising_is_a_regression_old_runs_included() -> None:
    # four ranks each side, so that the rank-to-rank spread gives the gate samples to test
    old = _idle_run("idle_pct", "%", [53.6, 54.7, 53.9, 54.2], lower=None)  # as the tour stored it before
    new = _idle_run("idle_fraction", "1", [0.90, 0.91, 0.905, 0.895], lower=True)
    old_series = load_metric_samples(f"run:{old}")
    assert {series.unit for series in old_series} == {"1"}  # read in today's unit: 53.6% -> 0.536
    assert old_series[0].samples[0] == pytest.approx(0.536)
    assert all(series.lower_is_better and not series.direction_assumed for series in old_series)
    gate = compare_runs(baseline=old_series, current=load_metric_samples(f"run:{new}"))
    assert {c.metric for c in gate.comparisons} == {f"job rank {rank} [idle_fraction]" for rank in range(4)}
    # idle from about 54% to 90%: +68% of the baseline, worse; each rank's one value is too few
    # samples for a verdict, so compare the ranks pooled as one series too
    for comparison in gate.comparisons:
        assert comparison.change_fraction > 0.6
        assert comparison.lower_is_better
    pooled = compare_runs(
        baseline=[replace(series, metric="idle") for series in old_series],
        current=[replace(series, metric="idle") for series in load_metric_samples(f"run:{new}")],
    )
    assert pooled.comparisons[0].verdict == "regression"
    assert not pooled.passed
