"""The regression gate's fixes after the expert check: a zero baseline, directions stated by the
writers, crashes that are not verdicts, environments that differ, an ambiguous threshold, metrics
missing from the current run, large sample files, exported records, warm-up per series, and
unbounded intervals.

Golden values are hand calculations written beside each assertion.
"""

from __future__ import annotations

import itertools
import json
import os
import sqlite3
import subprocess
import sys
import tracemalloc
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from expect import one_line_error
from lightspeed.catalog import load_catalog
from lightspeed.errors import LightspeedError, UserInputError
from lightspeed.gate import compare_runs, load_metric_samples, metric_history, samples_from_records
from lightspeed.gate.compare import (
    MetricSamples,
    bootstrap_median_change,
    bootstrap_medians,
    compare_samples,
    fraction_text,
)
from lightspeed.gate.inputs import unit_direction
from lightspeed.monitor import store_records
from lightspeed.store import NewRecord, open_store
from lightspeed.tour.seed import deepseek_v3_on_h800, h100_vs_h800, memory_100t
from lightspeed.workload import load_models

REPO = Path(__file__).resolve().parents[2]


def _series(values: list[float], metric: str = "t", unit: str = "s", **fields: Any) -> MetricSamples:
    return MetricSamples(
        metric=metric,
        unit=unit,
        lower_is_better=fields.pop("lower_is_better", True),
        samples=tuple(float(v) for v in values),
        source=fields.pop("source", "test"),
        **fields,
    )


def _write(path: Path, entries: object) -> Path:
    path.write_text(json.dumps(entries), encoding="utf-8")
    return path


def _entry(samples: list[float], metric: str = "step_time_s", **fields: object) -> dict[str, object]:
    return {"metric": metric, "unit": "s", "lower_is_better": True, "samples": samples, **fields}


def _steady(mean: float, count: int = 20) -> list[float]:
    """``count`` samples spread +-1% around ``mean`` (5 distinct values repeated)."""
    return [mean * (1.0 + 0.005 * ((i % 5) - 2)) for i in range(count)]


# --- 1: a baseline median of 0 ---------------------------------------------------


def test_zero_baseline_median_is_judged_by_its_absolute_change() -> None:
    result = compare_samples(
        baseline=_series([0.0] * 8, "n", "count"), current=_series([3.0] * 8, "n", "count")
    )
    assert result.change_basis == "absolute"
    assert result.change_absolute == 3.0  # 3 - 0
    assert result.change_fraction == float("inf")  # relative change from 0: unbounded (JSON null)
    assert (result.ci_low_absolute, result.ci_high_absolute) == (3.0, 3.0)  # every resample: 3 - 0
    assert result.verdict == "regression"  # lower is better, and 8 vs 8 can reach p < 0.05
    still = compare_samples(
        baseline=_series([0.0] * 8, "n", "count"), current=_series([0.0] * 8, "n", "count")
    )
    assert still.verdict == "unchanged"
    assert "stayed at 0" in still.reason


def _monitor_report(num_findings: int, energy_per_token_j: float, duration_s: float) -> Any:
    """What monitor/runs.py:store_records reads from a report (duck-typed)."""
    finding = SimpleNamespace(to_dict=lambda: {"rule": "idle_gpu"})
    return SimpleNamespace(
        joined=SimpleNamespace(
            energy_j=100.0,
            energy_per_step_j=10.0,
            energy_per_token_j=energy_per_token_j,
            productive_busy_ratio=0.9,
            productive_process_cpu_cores=2.0,
            ledger=SimpleNamespace(goodput_fraction=0.8),
        ),
        run=SimpleNamespace(command=["python", "train.py"], start_epoch_s=0.0, end_epoch_s=duration_s),
        path="monitor-run",
        goodput_run=None,
        findings=tuple(finding for _ in range(num_findings)),
    )


def _monitor_run(store_path: Path, report: Any, fingerprint: dict[str, object] | None = None) -> str:
    with open_store(store_path) as store:
        return store.add_records(
            kind="monitor",
            fingerprint=fingerprint or {"host_name": "test"},
            records=[NewRecord(**item) for item in store_records(report)],
        )


def test_two_monitor_runs_with_zero_findings_first_are_compared(tmp_path: Path) -> None:
    store_path = tmp_path / "results.sqlite"
    first = _monitor_run(store_path, _monitor_report(0, 2.0, 100.0))
    second = _monitor_run(store_path, _monitor_report(3, 3.0, 100.0))
    result = compare_runs(
        baseline=load_metric_samples(f"run:{first}", store_path=store_path),
        current=load_metric_samples(f"run:{second}", store_path=store_path),
    )
    by_metric = {item.metric.rsplit("[", 1)[-1].rstrip("]"): item for item in result.comparisons}
    findings = by_metric["num_findings"]
    assert findings.change_basis == "absolute"
    assert findings.change_absolute == 3.0  # 3 findings - 0
    assert findings.verdict == "too few samples"  # one value a run
    energy = by_metric["energy_per_token_j"]
    assert energy.change_fraction == pytest.approx(0.5)  # (3 - 2) / 2
    assert energy.lower_is_better is True  # stated by the writer: "+50% (worse)", not "(better)"
    assert "(worse)" in energy.reason
    assert len(result.comparisons) == 8  # every figure is still compared
    with open_store(store_path) as store:
        history = metric_history(store=store, metric="num_findings")
    assert [point.value for point in history.points] == [0.0, 3.0]


# --- 2: the direction is stated by the writers, and a guess is said ------------


def test_monitor_records_state_which_way_is_better() -> None:
    records = {
        item["metric"]: item["payload"]["lower_is_better"]
        for item in store_records(_monitor_report(1, 2.0, 5.0))
    }
    assert records == {
        "duration_s": True,
        "num_findings": True,
        "energy_j": True,
        "energy_per_step_j": True,
        "energy_per_token_j": True,
        "productive_busy_ratio": False,
        "productive_process_cpu_cores": True,
        "goodput_ratio": False,
    }


def test_tour_seed_records_state_which_way_is_better() -> None:
    catalog, models = load_catalog(), load_models()
    directions = {
        record.metric: record.payload.get("lower_is_better")
        for scenario in (memory_100t, h100_vs_h800, deepseek_v3_on_h800)
        for record in scenario(catalog, models).records
    }
    assert directions == {
        "flop": True,
        "gpus_needed": True,
        "ratio": False,
        "gpu_hours": True,
        "step_time_s": True,
    }


def test_the_unit_decides_only_times_energies_and_rates() -> None:
    assert [unit_direction(unit) for unit in ("s", "h", "J", "kWh", "FLOP/s", "tokens/s")] == [
        True, True, True, True, False, False,
    ]  # fmt: skip
    assert [unit_direction(unit) for unit in ("count", "GPU", "ratio", "FLOP", "B")] == [None] * 5
    old = NewRecord(name="monitor job", metric="num_findings", value=0.0, unit="count")  # no direction stored
    (series,) = samples_from_records([old], source="old")
    assert (series.lower_is_better, series.direction_assumed) == (False, True)
    energy = NewRecord(name="monitor job", metric="energy_per_token_j", value=2.0, unit="J")
    assert samples_from_records([energy], source="old")[0].lower_is_better is True


def test_an_assumed_direction_is_said_and_a_stated_one_wins(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    assumed = _series([1.0] * 6, "n", "count", lower_is_better=False, direction_assumed=True)
    result = compare_runs(baseline=[assumed], current=[assumed])
    assert result.comparisons[0].direction_assumed
    assert "direction assumed" in result.comparisons[0].reason
    assert any("does not decide it" in note for note in result.notes)
    stated = _series([1.0] * 6, "n", "count", lower_is_better=True)
    mixed = compare_runs(baseline=[assumed], current=[stated])  # an old record beside a new one
    assert mixed.comparisons[0].lower_is_better is True
    assert not mixed.comparisons[0].direction_assumed


# --- 3: crashes are not verdicts --------------------------------------------------


def test_a_payload_kept_as_a_json_string_is_one_line(
    run_cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    store_path = tmp_path / "results.sqlite"
    first = _monitor_run(store_path, _monitor_report(0, 2.0, 100.0))
    second = _monitor_run(store_path, _monitor_report(0, 2.0, 100.0))
    with sqlite3.connect(store_path) as connection:  # what migration 3 keeps for text that was not JSON
        connection.execute(
            "UPDATE records SET payload = ? WHERE run_id = ?", (json.dumps("{damaged"), second)
        )
    monkeypatch.setenv("LIGHTSPEED_STORE", str(store_path))
    one_line_error(run_cli("compare", f"run:{first}", f"run:{second}"), second, "not a JSON object")


def test_output_that_cannot_be_written_is_one_line_exit_2(tmp_path: Path) -> None:
    if not Path("/dev/full").exists():
        pytest.skip("needs /dev/full")
    sample = _write(tmp_path / "s.json", _entry(_steady(1.0)))
    code = "import sys; from lightspeed.cli.main import main; sys.exit(main())"
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-c", code, "compare", str(sample), str(sample)],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "COLUMNS": "120"},
            check=False,
        )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [done.stderr.strip()]
    assert done.stderr.startswith("lightspeed: error: cannot write the output:")


def test_an_unexpected_exception_is_exit_70_not_a_verdict(
    run_cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    import lightspeed.cli.compare as compare_cli

    def broken(**_: object) -> None:
        raise RuntimeError("boom\nsecond line")

    monkeypatch.setattr(compare_cli, "compare_runs", broken)
    sample = _write(tmp_path / "s.json", _entry(_steady(1.0)))
    crashed = run_cli("compare", str(sample), str(sample))
    assert crashed.code == 70
    assert crashed.err.count("\n") == 1, crashed.err
    assert crashed.err.startswith("lightspeed: internal error: RuntimeError: boom second line")
    assert "bug in lightspeed" in crashed.err
    assert "-vv" in crashed.err
    assert "Traceback" not in crashed.err
    verbose = run_cli("-vv", "compare", str(sample), str(sample))
    assert verbose.code == 70
    assert "Traceback" in verbose.err  # the debug log carries it


# --- 6: environments that differ --------------------------------------------------


def test_another_gpu_is_refused_unless_allowed(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    base = _write(tmp_path / "a100.json", _entry(_steady(1.0), environment={"gpus": ["NVIDIA A100"]}))
    cur = _write(tmp_path / "h100.json", _entry(_steady(1.0), environment={"gpus": ["NVIDIA H100"]}))
    one_line_error(
        run_cli("compare", str(base), str(cur)), "GPU model", "NVIDIA A100", "--allow-different-hardware"
    )
    allowed = run_cli("compare", str(base), str(cur), "--allow-different-hardware", "--json")
    assert allowed.code == 0, allowed.err
    (difference,) = json.loads(allowed.out)["environment_differences"]
    assert difference == {
        "key": "gpus", "label": "GPU model", "baseline": "NVIDIA A100", "current": "NVIDIA H100",
        "hardware": True,
    }  # fmt: skip
    assert "environments differ: GPU model" in allowed.err


def test_another_torch_is_a_warning(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    base = _write(tmp_path / "old.json", _entry(_steady(1.0), environment={"torch_version": "2.4.0"}))
    cur = _write(tmp_path / "new.json", _entry(_steady(1.0), environment={"torch_version": "2.5.1"}))
    result = run_cli("compare", str(base), str(cur), "--json")
    assert result.code == 0
    (difference,) = json.loads(result.out)["environment_differences"]
    assert (difference["label"], difference["hardware"]) == ("torch", False)
    assert "lightspeed: warning: environments differ: torch is '2.4.0' in the baseline" in result.err


def test_store_fingerprints_are_compared(tmp_path: Path) -> None:
    store_path = tmp_path / "results.sqlite"
    report = _monitor_report(0, 2.0, 100.0)
    first = _monitor_run(store_path, report, {"cpu_model": "AMD EPYC 9654", "torch_version": "2.4.0"})
    second = _monitor_run(store_path, report, {"cpu_model": "Intel Xeon 8480+", "torch_version": "2.4.0"})
    base = load_metric_samples(f"run:{first}", store_path=store_path)
    cur = load_metric_samples(f"run:{second}", store_path=store_path)
    with pytest.raises(UserInputError, match="CPU model 'AMD EPYC 9654' in the baseline"):
        compare_runs(baseline=base, current=cur)
    allowed = compare_runs(baseline=base, current=cur, allow_different_hardware=True)
    assert [d.key for d in allowed.environment_differences] == ["cpu_model"]  # torch is the same


# --- 7: an ambiguous threshold ----------------------------------------------------


@pytest.mark.parametrize("bare", ["5", "1", "10.0"])
def test_a_bare_threshold_of_1_or_more_is_refused(run_cli, tmp_path: Path, bare: str) -> None:  # type: ignore[no-untyped-def]
    sample = _write(tmp_path / "s.json", _entry(_steady(1.0)))
    one_line_error(run_cli("compare", str(sample), str(sample), "--threshold", bare), "ambiguous", f"{bare}%")


def test_unambiguous_thresholds_are_read(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    sample = _write(tmp_path / "s.json", _entry(_steady(1.0)))
    for text, fraction in (("5%", 0.05), ("0.05", 0.05), ("500%", 5.0), ("0.5", 0.5)):
        result = run_cli("compare", str(sample), str(sample), "--threshold", text, "--json")
        assert result.code == 0, result.err
        assert json.loads(result.out)["comparisons"][0]["threshold_fraction"] == pytest.approx(fraction)


# --- 8: a metric missing from the current run -------------------------------------


def test_a_metric_missing_from_the_current_run_fails_unless_allowed(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    base = _write(tmp_path / "base.json", [_entry(_steady(1.0)), _entry(_steady(1.0), metric="crashed")])
    cur = _write(tmp_path / "cur.json", [_entry(_steady(1.0)), _entry(_steady(1.0), metric="new")])
    failed = run_cli("compare", str(base), str(cur), "--json")
    assert failed.code == 1
    payload = json.loads(failed.out)
    assert payload["missing_from_current"] == ["crashed"]
    assert payload["missing_from_baseline"] == ["new"]
    assert payload["skipped_metrics"] == ["crashed", "new"]  # the old key, both sides
    assert (payload["num_regressions"], payload["num_missing"], payload["passed"]) == (0, 1, False)
    assert "crashed: in the baseline but missing from the current run" in failed.err
    allowed = run_cli("compare", str(base), str(cur), "--allow-missing", "--json")
    assert allowed.code == 0
    assert json.loads(allowed.out)["passed"] is True
    base_without_crashed = _write(tmp_path / "base2.json", [_entry(_steady(1.0))])
    only_new = run_cli("compare", str(base_without_crashed), str(cur), "--json")
    assert only_new.code == 0  # a metric only in the current run is a note
    assert json.loads(only_new.out)["missing_from_baseline"] == ["new"]
    assert "new: only in the current run" in only_new.err
    chosen = run_cli("compare", str(base), str(cur), "--metric", "step_time_s")  # named: only that is gated
    assert chosen.code == 0


# --- 9: large sample files --------------------------------------------------------


def _exact_bootstrap_median_law(values: list[float]) -> dict[float, float]:
    """The distribution of the median of a resample, by enumerating all n^n resamples."""
    counts = Counter(float(np.median(draw)) for draw in itertools.product(values, repeat=len(values)))
    total = len(values) ** len(values)
    return {value: count / total for value, count in counts.items()}


@pytest.mark.parametrize("values", [[1.0, 2.0, 4.0, 8.0, 16.0], [1.0, 2.0, 4.0, 8.0]])
def test_bootstrap_medians_follow_the_law_of_resampling(values: list[float]) -> None:
    exact = _exact_bootstrap_median_law(values)
    draws = bootstrap_medians(np.array(values), num_resamples=200_000, rng=np.random.default_rng(1))
    drawn = Counter(draws.tolist())
    assert set(drawn) <= set(exact)
    for value, probability in exact.items():
        assert drawn[value] / len(draws) == pytest.approx(probability, abs=0.005), value
    if len(values) == 5:  # P(median = smallest) = P(3 or more of 5 draws are it) = (10*4^2 + 5*4 + 1) / 5^5
        assert exact[1.0] == pytest.approx(181 / 3125)


def test_the_bootstrap_memory_does_not_grow_with_the_samples() -> None:
    rng = np.random.default_rng(2)
    base, cur = rng.normal(1.0, 0.05, 50_000), rng.normal(1.01, 0.05, 50_000)
    tracemalloc.start()
    low, high = bootstrap_median_change(baseline=base, current=cur)
    _, peak_bytes = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak_bytes < 16 * 2**20  # resampling whole series held 256 x 50,000 indices and values: 200 MB
    assert low < 0.01 < high  # the true change of the median: +1%


# --- 10: the store's own export ---------------------------------------------------


def test_results_export_json_is_read_like_the_run(
    run_cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    store_path = tmp_path / "results.sqlite"
    monkeypatch.setenv("LIGHTSPEED_STORE", str(store_path))
    fingerprint = {"gpus": ["NVIDIA H100"]}
    first = _monitor_run(store_path, _monitor_report(0, 2.0, 100.0), fingerprint)
    second = _monitor_run(store_path, _monitor_report(0, 2.0, 100.0), fingerprint)
    exported = run_cli("results", "export", first, "--json")
    assert exported.code == 0, exported.err
    export = tmp_path / "e.json"
    export.write_text(exported.out, encoding="utf-8")
    from_file = {s.metric: s for s in load_metric_samples(export)}
    from_store = {s.metric: s for s in load_metric_samples(f"run:{first}", store_path=store_path)}
    assert from_file.keys() == from_store.keys()
    for name, series in from_store.items():
        assert (from_file[name].samples, from_file[name].lower_is_better) == (
            series.samples,
            series.lower_is_better,
        )
        assert from_file[name].environment == (("gpus", "NVIDIA H100"),)
    result = run_cli("compare", str(export), f"run:{second}")
    assert result.code == 0, result.err


def test_an_exported_record_with_a_damaged_payload_is_named(tmp_path: Path) -> None:
    record = {
        "record_id": 7,
        "run_id": "r1",
        "name": "x",
        "metric": "t",
        "unit": "s",
        "value": 1.0,
        "payload": "{bad",
    }
    with pytest.raises(
        LightspeedError, match=r"entry \[0\] \(run r1\) has a payload that is not a JSON object"
    ):
        load_metric_samples(_write(tmp_path / "e.json", [record]))


# --- 13: warm-up per series -------------------------------------------------------


def test_warmup_is_dropped_from_each_series_before_pooling() -> None:
    first, second = _series([9.0, 1.0, 1.0, 1.0]), _series([9.0, 1.0, 1.0, 1.0])
    result = compare_runs(baseline=[first, second], current=[_series([1.0] * 6)], num_warmup=1)
    item = result.comparisons[0]
    assert item.num_warmup_baseline == 2  # one from each of the two series
    assert item.num_baseline == 6  # 2 x (4 - 1)
    assert item.baseline_median == 1.0  # no 9.0 left
    assert item.num_warmup_current == 1
    assert item.num_current == 5
    own = compare_runs(
        baseline=[_series([9.0, 1.0, 1.0], num_warmup=1), _series([9.0, 1.0, 1.0, 1.0], num_warmup=1)],
        current=[_series([1.0] * 5)],
    )
    assert (own.comparisons[0].num_warmup_baseline, own.comparisons[0].num_baseline) == (2, 5)


# --- 15: an unbounded interval ----------------------------------------------------


def test_an_unbounded_interval_is_said_so_not_inf() -> None:
    # baseline median 1 (5 of 9 values are 1), but a resample with 5 or more zeros has median 0:
    # its relative change is infinite, so the interval is unbounded above (JSON null).
    result = compare_samples(
        baseline=_series([0.0] * 4 + [1.0] * 5, "x", "1"), current=_series([2.0] * 9, "x", "1")
    )
    assert result.ci_high_fraction == float("inf")
    assert result.to_dict()["ci_high_fraction"] is None
    assert "unbounded" in result.reason
    assert "inf%" not in result.reason
    assert fraction_text(float("inf")) == "unbounded"
    assert fraction_text(0.0976, 2) == "+9.76%"
