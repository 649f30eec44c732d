"""``lightspeed results list|show|export`` on a store filled through the public API."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from expect import one_line_error
from lightspeed.store import NewRecord, default_store_path, open_store

FINGERPRINT = {"host_name": "bench-host", "cpu_model": "Test CPU"}


def _fill() -> tuple[str, str]:
    with open_store() as store:
        bench = store.add_records(
            kind="benchmark",
            label="membw",
            fingerprint=FINGERPRINT,
            records=[
                NewRecord(
                    name="membw stream triad fp64 1048576",
                    metric="bytes_per_s",
                    value=2e10,
                    unit="B/s",
                    sol=4e10,
                    payload={"samples": [1.9e10, 2e10]},
                ),
                NewRecord(name="=HYPERLINK(1)", metric="bytes_per_s", value=1.0, unit="B/s"),
            ],
        )
        predicted = store.add_records(
            kind="prediction",
            fingerprint=FINGERPRINT,
            records=[NewRecord(name="gpt step", metric="step_time_s", value=0.25, unit="s")],
        )
    return bench, predicted


def test_list_newest_first(run_cli) -> None:  # type: ignore[no-untyped-def]
    bench, predicted = _fill()
    result = run_cli("results", "list", "--json")
    assert result.code == 0
    runs = json.loads(result.out)
    assert {run["run_id"] for run in runs} == {bench, predicted}
    assert [run["num_records"] for run in runs if run["run_id"] == bench] == [2]
    table = run_cli("results", "list", "--kind", "benchmark")
    assert bench in table.out
    assert predicted not in table.out
    assert str(default_store_path()) in table.out.replace("\n", "")


def test_show_by_prefix_with_sol_and_environment(run_cli) -> None:  # type: ignore[no-untyped-def]
    bench, _ = _fill()
    result = run_cli("results", "show", bench[:-1])
    assert result.code == 0, result.err
    assert "membw stream triad" in result.out
    assert "50.0%" in result.out  # 2e10 of 4e10
    assert "bench-host" in result.out
    data = json.loads(run_cli("results", "show", bench, "--json").out)
    assert data["run"]["run_id"] == bench
    assert data["records"][0]["payload"]["samples"] == [1.9e10, 2e10]
    # the JSON carries the fraction the table and the CSV export show: 2e10 of 4e10
    exported = json.loads(run_cli("results", "export", bench, "--json").out)
    assert exported[0]["fraction_of_sol"] == 0.5
    assert exported[1]["fraction_of_sol"] is None  # no SOL


def test_export_csv_escapes_formulas(run_cli) -> None:  # type: ignore[no-untyped-def]
    bench, _ = _fill()
    result = run_cli("results", "export", bench, "--csv")
    assert result.code == 0, result.err
    rows = list(csv.DictReader(io.StringIO(result.out)))
    assert [row["name"] for row in rows] == ["membw stream triad fp64 1048576", "'=HYPERLINK(1)"]
    assert float(rows[0]["fraction_of_sol"]) == 0.5
    assert json.loads(rows[0]["payload"]) == {"samples": [1.9e10, 2e10]}
    assert rows[1]["sol"] == ""


def test_export_json_to_file_with_filters(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _fill()
    target = tmp_path / "out.json"
    result = run_cli("results", "export", "--kind", "prediction", "--json", "--output", str(target))
    assert result.code == 0, result.err
    records = json.loads(target.read_text())
    assert [(r["name"], r["value"], r["unit"]) for r in records] == [("gpt step", 0.25, "s")]
    assert "wrote 1 records" in result.err


def test_bad_input_is_one_line(run_cli, monkeypatch, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _fill()
    for args, message in (
        (("results", "show", "nope"), "no run 'nope'"),
        (("results", "export", "--json", "--csv"), "one of --json and --csv"),
    ):
        result = run_cli(*args)
        assert result.code == 2
        assert message in result.err
        assert result.err.count("\n") == 1
    corrupt = tmp_path / "corrupt-home"
    corrupt.mkdir()
    (corrupt / "results.sqlite").write_bytes(b"garbage" * 500)
    monkeypatch.setenv("LIGHTSPEED_HOME", str(corrupt))
    result = run_cli("results", "list")
    assert result.code == 2
    assert "not a readable lightspeed store" in result.err


def test_empty_store_says_how_to_fill_it(run_cli) -> None:  # type: ignore[no-untyped-def]
    with open_store():  # created empty
        pass
    result = run_cli("results", "list")
    assert result.code == 0
    assert "no runs yet" in result.out


def test_a_missing_store_is_named_with_how_to_create_it_and_not_created(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("results", "list")
    one_line_error(result, "does not exist", str(default_store_path()), "results push --to")
    assert not default_store_path().exists()


def test_labels_holding_markup_are_shown_as_written(run_cli) -> None:  # type: ignore[no-untyped-def]
    # After one run labelled like this, every 'results list' used to crash (rich.errors.MarkupError).
    with open_store() as store:
        run_id = store.add_records(
            kind="benchmark",
            label="[/bold] x [red]",
            fingerprint={"host_name": "[/]", "cpu_model": "[bold]"},
            records=[NewRecord(name="[/] y", metric="[b]m", value=1.0, unit="s")],
        )
    listed = run_cli("results", "list")
    assert listed.code == 0, listed.err
    assert "[/bold] x [red]" in listed.out
    shown = run_cli("results", "show", run_id)
    assert shown.code == 0, shown.err
    assert "[/] y" in shown.out
    assert "[b]m" in shown.out


def _bench_run(store: object, label: str, values: list[float]) -> str:
    return store.add_records(  # type: ignore[attr-defined, no-any-return]
        kind="benchmark",
        label=label,
        fingerprint=FINGERPRINT,
        records=[
            NewRecord(
                name="membw stream triad fp64 1048576 B",
                metric="bytes_per_s",
                value=max(values),
                unit="B/s",
                payload={"samples": values},
            )
        ],
    )


def test_push_moves_runs_between_sqlite_and_postgres(  # type: ignore[no-untyped-def]
    run_cli, postgres_url: str, tmp_path: Path, monkeypatch
) -> None:
    bench, predicted = _fill()
    with open_store() as local:
        unfinished = local.start_run(kind="goodput", fingerprint=FINGERPRINT)
    first = run_cli("results", "push", "--to", postgres_url, "--json")
    assert first.code == 0, first.err
    pushed = json.loads(first.out)
    assert set(pushed["copied"]) == {bench, predicted}
    assert pushed["incomplete"] == [unfinished]
    assert pushed["num_records_copied"] == 3
    assert postgres_url not in first.out  # the password never shows
    again = run_cli("results", "push", "--to", postgres_url)
    assert again.code == 0
    assert "pushed 0 runs (0 records)" in again.out
    assert "2 already there" in again.out
    # the shared store holds the same runs under the same ids, with their environment
    monkeypatch.setenv("LIGHTSPEED_STORE", postgres_url)
    listed = json.loads(run_cli("results", "list", "--json").out)
    assert {run["run_id"] for run in listed} == {bench, predicted}
    shown = json.loads(run_cli("results", "show", bench, "--json").out)
    names = [record["name"] for record in shown["records"]]
    assert names == ["membw stream triad fp64 1048576", "=HYPERLINK(1)"]
    assert shown["run"]["host_name"] == "bench-host"
    # and back from PostgreSQL into another file
    back = run_cli("results", "push", "--to", str(tmp_path / "copy.sqlite"), "--kind", "prediction", "--json")
    assert json.loads(back.out)["copied"] == [predicted]
    with open_store(tmp_path / "copy.sqlite") as copy:
        (record,) = copy.records()
    assert (record.run_id, record.name, record.value) == (predicted, "gpt step", 0.25)


def test_gate_compares_runs_stored_on_postgres(run_cli, postgres_url: str, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    with open_store(postgres_url) as shared:
        baseline = _bench_run(shared, "before", [20.0e9, 20.1e9, 19.9e9, 20.2e9, 20.0e9, 19.8e9])
        current = _bench_run(shared, "after", [15.0e9, 15.1e9, 14.9e9, 15.2e9, 15.0e9, 14.8e9])
    monkeypatch.setenv("LIGHTSPEED_STORE", postgres_url)
    result = run_cli("compare", f"run:{baseline}", f"run:{current}", "--json")
    assert result.code == 1, result.err  # a 25% drop in bandwidth is a regression
    verdicts = [row["verdict"] for row in json.loads(result.out)["comparisons"]]
    assert verdicts == ["regression"]


def test_push_to_a_bad_or_unreachable_store_is_one_line(run_cli) -> None:  # type: ignore[no-untyped-def]
    _fill()
    result = run_cli("results", "push", "--to", "postgresql://ci:hunter2@127.0.0.1:9/perf")
    assert result.code == 2
    assert result.err.count("\n") == 1
    assert "hunter2" not in result.err
    assert "cannot be reached" in result.err
    same = run_cli("results", "push", "--to", str(default_store_path()))
    assert same.code == 2
    assert "the same store" in same.err
