"""An export of a run its writer has not finished is refused by the gate, as ``run:ID`` of that run
is: ``results export`` says so on stderr and marks each record ``"run_complete": false``."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from expect import one_line_error
from lightspeed.errors import DataFileError
from lightspeed.gate import load_metric_samples
from lightspeed.store import NewRecord, open_store

LATENCY = NewRecord(
    name="lat",
    metric="lat",
    value=1.0,
    unit="s",
    payload={"lower_is_better": True, "samples": [1, 1, 1, 1, 1]},
)
CURRENT = [{"metric": "lat", "unit": "s", "lower_is_better": True, "samples": [1, 1.01, 0.99, 1, 1.02, 0.98]}]


def _runs(store_path: Path) -> tuple[str, str]:
    """One run left unfinished (started, one record appended, never finished) and one complete."""
    with open_store(store_path) as store:
        unfinished = store.start_run(kind="benchmark")
        store.append_records(unfinished, [LATENCY])
        complete = store.add_records(kind="benchmark", records=[LATENCY])
    return unfinished, complete


def _export(run_cli, run_id: str, target: Path):  # type: ignore[no-untyped-def]
    result = run_cli("results", "export", run_id, "--json")
    target.write_text(result.out, encoding="utf-8")
    return result


def test_export_of_an_incomplete_run_is_marked_and_refused_by_compare(
    run_cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    store_path = tmp_path / "results.sqlite"
    monkeypatch.setenv("LIGHTSPEED_STORE", str(store_path))
    unfinished, _ = _runs(store_path)
    current = tmp_path / "c.json"
    current.write_text(json.dumps(CURRENT), encoding="utf-8")
    part = tmp_path / "part.json"
    exported = _export(run_cli, unfinished, part)
    assert exported.code == 0, exported.err
    assert [record["run_complete"] for record in json.loads(exported.out)] == [False]
    assert f"run {unfinished} is incomplete" in exported.err
    assert "run_complete" in exported.err
    by_run = run_cli("compare", f"run:{unfinished}", str(current))
    one_line_error(by_run, f"run:{unfinished} is incomplete")
    by_file = run_cli("compare", str(part), str(current))
    one_line_error(by_file, f"the export of run {unfinished} is incomplete", "'run_complete'")


def test_export_of_a_complete_run_is_marked_complete_and_compared(
    run_cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    store_path = tmp_path / "results.sqlite"
    monkeypatch.setenv("LIGHTSPEED_STORE", str(store_path))
    _, complete = _runs(store_path)
    current = tmp_path / "c.json"
    current.write_text(json.dumps(CURRENT), encoding="utf-8")
    whole = tmp_path / "whole.json"
    exported = _export(run_cli, complete, whole)
    assert exported.code == 0, exported.err
    assert exported.err == ""  # nothing to say about a complete run
    assert [record["run_complete"] for record in json.loads(exported.out)] == [True]
    # every complete run (no RUN_IDs): the unfinished run's record is not exported at all
    everything = json.loads(run_cli("results", "export", "--json").out)
    assert [(record["run_id"], record["run_complete"]) for record in everything] == [(complete, True)]
    result = run_cli("compare", str(whole), str(current))
    assert result.code == 0, result.err


def _record(**extra: object) -> dict[str, object]:
    return {
        "record_id": 1,
        "run_id": "r1",
        "name": "lat",
        "metric": "lat",
        "unit": "s",
        "value": 1.0,
        "payload": {"lower_is_better": True, "samples": [1.0, 1.0, 1.0]},
        **extra,
    }


def test_the_gate_reads_run_complete_strictly(tmp_path: Path) -> None:
    path = tmp_path / "e.json"
    path.write_text(json.dumps([_record(run_complete=True), _record(record_id=2, run_complete=False)]))
    with pytest.raises(DataFileError, match=r"the export of run r1 is incomplete.*field 'run_complete'"):
        load_metric_samples(path)
    path.write_text(json.dumps([_record(run_complete="no")]))
    with pytest.raises(DataFileError, match=r"entry \[0\] needs true or false; field 'run_complete'"):
        load_metric_samples(path)
    path.write_text(json.dumps([_record()]))  # written before the key existed: read as before
    assert [series.samples for series in load_metric_samples(path)] == [(1.0, 1.0, 1.0)]


def test_csv_export_marks_each_record_with_its_run_complete(
    run_cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    """The CSV export carries the same mark as the JSON one, so a spreadsheet of an unfinished run
    cannot pass for a whole one: false on the unfinished run's row, true on the complete run's."""
    store_path = tmp_path / "results.sqlite"
    monkeypatch.setenv("LIGHTSPEED_STORE", str(store_path))
    unfinished, complete = _runs(store_path)
    exported = run_cli("results", "export", unfinished, complete, "--csv")
    assert exported.code == 0, exported.err
    rows = list(csv.DictReader(io.StringIO(exported.out)))
    marks = [(row["run_id"], row["run_complete"]) for row in rows]
    assert marks == [(unfinished, "false"), (complete, "true")]
    assert f"run {unfinished} is incomplete" in exported.err
    assert "run_complete=false" in exported.err
