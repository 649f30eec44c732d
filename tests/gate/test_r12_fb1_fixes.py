"""The regression gate and the metric direction after the r12 expert check (helper FB1).

Golden values are hand calculations written beside each assertion.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from expect import one_line_error
from lightspeed.gate import compare_runs, read_sample_file
from lightspeed.gate.compare import MetricSamples
from lightspeed.store import NewRecord, open_store
from lightspeed.store.records import known_direction
from lightspeed.units import unit_direction

REPO = Path(__file__).resolve().parents[2]

# --- 1: a duration or energy per unit of work is better lower --------------------------------

PER_WORK_UNITS = ("ms/token", "s/step", "ns/op", "J/token")


def test_a_duration_or_energy_per_unit_of_work_is_lower_is_better() -> None:
    assert [unit_direction(unit) for unit in PER_WORK_UNITS] == [True] * 4
    assert unit_direction("ms / token") is True  # spaces around the slash
    # a rate stays higher-is-better; a count per unit of energy or a price per hour is not decided
    assert [unit_direction(unit) for unit in ("tokens/s", "B/s", "tokens/J", "USD/h")] == [
        False,
        False,
        None,
        None,
    ]
    assert known_direction("count") is None
    assert known_direction("ms/token", {"lower_is_better": False}) is False  # the payload wins


def _two_runs(path: Path, unit: str, base: float, current: float, sol: float = 30.0) -> tuple[str, str]:
    ids = []
    with open_store(path) as store:
        for value in (base, current):
            record = NewRecord(
                name="d", metric="tpot", value=value, unit=unit, sol=sol, payload={"samples": [value] * 10}
            )
            ids.append(store.add_records(kind="benchmark", records=[record], fingerprint={}))
    return ids[0], ids[1]


@pytest.mark.parametrize("unit", PER_WORK_UNITS)
def test_of_sol_of_a_latency_per_token_is_sol_over_value(
    unit: str, tmp_path: Path, run_cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "r.sqlite"
    base_id, _ = _two_runs(path, unit, 42.0, 50.4)
    with open_store(path) as store:
        (record,) = store.records(run_id=base_id)
    # by hand: 30 of SOL against 42 taken is 30/42 = 5/7 = 71.4% of the speed of light, not 140%
    assert record.fraction_of_sol == pytest.approx(5 / 7)
    monkeypatch.setenv("LIGHTSPEED_STORE", str(path))
    shown = run_cli("results", "show", base_id).out
    assert "71.4%" in shown
    assert "140.0%" not in shown


def test_of_sol_is_unknown_when_nothing_decides_the_direction(
    tmp_path: Path, run_cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "r.sqlite"
    base_id, _ = _two_runs(path, "count", 42.0, 50.4)
    with open_store(path) as store:
        (record,) = store.records(run_id=base_id)
    assert record.fraction_of_sol is None
    monkeypatch.setenv("LIGHTSPEED_STORE", str(path))
    row = next(line for line in run_cli("results", "show", base_id).out.splitlines() if "tpot" in line)
    assert row.rstrip(" │|").endswith("-"), row
    exported = json.loads(run_cli("results", "export", base_id, "--json").out)
    assert exported[0]["fraction_of_sol"] is None


@pytest.mark.parametrize("unit", PER_WORK_UNITS)
def test_a_longer_latency_per_token_is_a_regression(
    unit: str, tmp_path: Path, run_cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "r.sqlite"
    base_id, current_id = _two_runs(path, unit, 42.0, 50.4)  # 50.4 / 42 = 1.2: +20%
    monkeypatch.setenv("LIGHTSPEED_STORE", str(path))
    result = run_cli("compare", f"run:{base_id}", f"run:{current_id}", "--json")
    assert result.code == 1, result.err
    (metric,) = json.loads(result.out)["comparisons"]
    assert metric["verdict"] == "regression"
    assert metric["lower_is_better"] is True
    assert metric["direction_assumed"] is False
    assert metric["change_fraction"] == pytest.approx(0.2)


# --- 2: a metric with too few samples is not judged, and says so ---------------------------------


def _sample_file(path: Path, samples: list[float], **fields: object) -> Path:
    entry = {"metric": "t", "unit": "s", "lower_is_better": True, "samples": samples, **fields}
    path.write_text(json.dumps(entry), encoding="utf-8")
    return path


def test_too_few_samples_passes_with_a_warning_and_a_note(tmp_path: Path, run_cli: Any) -> None:
    base = _sample_file(tmp_path / "b.json", [1.0])
    current = _sample_file(tmp_path / "c.json", [3.0])  # (3 - 1) / 1 = +200%
    result = run_cli("compare", str(base), str(current), "--json")
    assert result.code == 0  # documented: too few samples does not fail the gate
    data = json.loads(result.out)
    assert data["comparisons"][0]["verdict"] == "too few samples"
    assert data["num_not_judged"] == 1
    (note,) = data["notes"]
    assert note.startswith("t: not judged (too few samples)")
    assert "lightspeed: warning: t: not judged (too few samples)" in result.err
    table = run_cli("compare", str(base), str(current))
    assert "PASS: no regression (1 metric could not be judged: too few samples)" in table.out


# --- 3: an export of several runs is refused, not pooled ----------------------------------------


def test_an_export_of_two_runs_is_refused(
    tmp_path: Path, run_cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "r.sqlite"
    base_id, current_id = _two_runs(path, "s", 1.0, 1.0)
    monkeypatch.setenv("LIGHTSPEED_STORE", str(path))
    both = tmp_path / "both.json"
    both.write_text(run_cli("results", "export", base_id, current_id, "--json").out, encoding="utf-8")
    line = one_line_error(
        run_cli("compare", str(both), f"run:{current_id}"), "holds 2 runs", base_id, current_id
    )
    assert "export one run" in line
    assert "run:ID" in line
    one = tmp_path / "one.json"
    one.write_text(run_cli("results", "export", base_id, "--json").out, encoding="utf-8")
    data = json.loads(run_cli("compare", str(one), f"run:{current_id}", "--json").out)
    assert data["comparisons"][0]["num_baseline"] == 10  # one run's 10 samples, as run:ID gives


# --- 4: a move of exactly the threshold is within it, whatever the magnitudes --------------------


@pytest.mark.parametrize(("base", "current"), [(1.0, 1.05), (100.0, 105.0)])
def test_a_move_of_exactly_the_threshold_is_unchanged(base: float, current: float) -> None:
    # (1.05 - 1.0) / 1.0 computes as 0.050000000000000044 but is 5% by hand, as (105 - 100) / 100
    result = compare_runs(
        baseline=[_series([base] * 10)], current=[_series([current] * 10)], threshold_fraction=0.05
    )
    assert result.comparisons[0].verdict == "unchanged"
    assert result.passed


def test_a_move_just_past_the_threshold_still_regresses() -> None:
    result = compare_runs(
        baseline=[_series([1.0] * 10)], current=[_series([1.0501] * 10)], threshold_fraction=0.05
    )
    assert result.comparisons[0].verdict == "regression"


def _series(values: list[float], metric: str = "t") -> MetricSamples:
    return MetricSamples(metric=metric, unit="s", lower_is_better=True, samples=tuple(values), source="test")


# --- 5: a misspelled key of a sample file is refused ---------------------------------------------


def test_a_misspelled_sample_file_key_is_refused(tmp_path: Path, run_cli: Any) -> None:
    good = _sample_file(tmp_path / "good.json", [1.0, 1.0, 1.0])
    bad = _sample_file(tmp_path / "bad.json", [1.0, 1.0, 1.0], warmups=3)
    one_line_error(run_cli("compare", str(good), str(bad)), "'warmups'", "warmup, environment")
    gpu = _sample_file(tmp_path / "gpu.json", [1.0, 1.0, 1.0], environment={"gpu": ["H100"]})
    one_line_error(run_cli("compare", str(good), str(gpu)), "environment", "'gpu'", "gpus, cpu_model")
    # every documented key, and a whole exported fingerprint as environment, still load
    full = _sample_file(
        tmp_path / "full.json", [1.0, 1.0, 1.0], warmup=1,
        environment={"gpus": ["H100"], "cpu_model": "x", "host_name": "node1", "os": "Linux"},
    )  # fmt: skip
    (series,) = read_sample_file(full)
    assert series.num_warmup == 1
    assert dict(series.environment)["gpus"] == "H100"


def test_the_documented_sample_file_loads(tmp_path: Path) -> None:
    doc = (REPO / "docs" / "regression-gate.md").read_text(encoding="utf-8")
    block = doc.split("### Sample file schema", 1)[1].split("```json", 1)[1].split("```", 1)[0]
    path = tmp_path / "doc.json"
    path.write_text(block, encoding="utf-8")
    (series,) = read_sample_file(path)
    assert series.metric == "step_time_s"
    assert len(series.samples) == 5


# --- 6: --metric METRIC names the one stored series of that metric -------------------------------


def test_a_plain_metric_names_the_one_stored_series(
    tmp_path: Path, run_cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "r.sqlite"
    ids = []
    with open_store(path) as store:
        for value in (0.5, 0.6):  # 0.6 / 0.5 = 1.2: +20%
            records = [
                NewRecord(name=name, metric=metric, value=value, unit="s", payload={"samples": [value] * 10})
                for name, metric in (("step", "step_time_s"), ("x", "lat"), ("y", "lat"))
            ]
            ids.append(store.add_records(kind="benchmark", records=records, fingerprint={}))
    monkeypatch.setenv("LIGHTSPEED_STORE", str(path))
    result = run_cli("compare", f"run:{ids[0]}", f"run:{ids[1]}", "--metric", "step_time_s", "--json")
    assert result.code == 1, result.err
    (item,) = json.loads(result.out)["comparisons"]
    assert item["metric"] == "step [step_time_s]"
    assert item["change_fraction"] == pytest.approx(0.2)
    one_line_error(
        run_cli("compare", f"run:{ids[0]}", f"run:{ids[1]}", "--metric", "lat"),
        "names 2 series", "x [lat], y [lat]", "NAME [METRIC]",
    )  # fmt: skip
    assert run_cli("compare", f"run:{ids[0]}", f"run:{ids[1]}", "--metric", "x [lat]").code == 1
