"""The results store: round trips, hidden incomplete runs, concurrent writers, failures."""

from __future__ import annotations

import math
import multiprocessing
import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lightspeed.errors import StoreError, UserInputError
from lightspeed.store import NewRecord, default_store_path, open_store

FINGERPRINT = {"host_name": "test-host", "cpu_model": "test cpu"}


def _record(index: int, payload_bytes: int = 0) -> NewRecord:
    return NewRecord(
        name=f"triad {index}",
        metric="bytes_per_s",
        value=1.0e9 * (index + 1),
        unit="B/s",
        sol=4.0e10,
        payload={"index": index, "padding": "x" * payload_bytes},
    )


def test_default_path_is_under_lightspeed_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LIGHTSPEED_HOME", str(tmp_path / "home"))
    assert default_store_path() == tmp_path / "home" / "results.sqlite"
    with open_store() as store:
        store.add_records(kind="benchmark", records=[_record(0)], fingerprint=FINGERPRINT)
    assert (tmp_path / "home" / "results.sqlite").is_file()


def test_round_trip_keeps_every_field(tmp_path: Path) -> None:
    with open_store(tmp_path / "r.sqlite") as store:
        run_id = store.add_records(
            kind="benchmark", records=[_record(0), _record(1)], label="nightly", fingerprint=FINGERPRINT
        )
        records = store.records(run_id=run_id)
        (run,) = store.runs()
    assert [record.name for record in records] == ["triad 0", "triad 1"]
    first = records[0]
    assert (first.kind, first.metric, first.value, first.unit, first.sol) == (
        "benchmark",
        "bytes_per_s",
        1.0e9,
        "B/s",
        4.0e10,
    )
    assert first.fraction_of_sol == pytest.approx(1.0e9 / 4.0e10)
    assert first.payload["index"] == 0
    assert first.fingerprint["host_name"] == "test-host"
    assert (run.run_id, run.label, run.num_records, run.complete) == (run_id, "nightly", 2, True)
    assert run.host_name == "test-host"


def test_default_fingerprint_describes_this_machine(tmp_path: Path) -> None:
    import os

    with open_store(tmp_path / "r.sqlite") as store:
        run_id = store.add_records(kind="prediction", records=[_record(0)])
        (record,) = store.records(run_id=run_id)
    assert record.fingerprint["num_logical_cpus"] == os.cpu_count()
    assert store.path == tmp_path / "r.sqlite"


def test_filters_and_run_lookup(tmp_path: Path) -> None:
    with open_store(tmp_path / "r.sqlite") as store:
        bench = store.add_records(kind="benchmark", records=[_record(0)], fingerprint=FINGERPRINT)
        predicted = store.add_records(
            kind="prediction",
            records=[NewRecord(name="step", metric="step_time_s", value=0.5, unit="s")],
            fingerprint=FINGERPRINT,
        )
        assert [r.run_id for r in store.records(kind="prediction")] == [predicted]
        assert [r.run_id for r in store.records(name="triad 0")] == [bench]
        assert store.records(metric="nothing") == []
        assert [run.kind for run in store.runs(kind="benchmark")] == ["benchmark"]
        assert store.run(bench[:-2]).run_id == bench
        assert store.run("latest").run_id in {bench, predicted}
        with pytest.raises(UserInputError, match="no run"):
            store.run("19990101")


def test_non_finite_values_are_stored_as_unknown(tmp_path: Path) -> None:
    with open_store(tmp_path / "r.sqlite") as store:
        record = NewRecord(name="x", metric="m", value=math.nan, unit="s", sol=math.inf)
        run_id = store.add_records(kind="benchmark", records=[record], fingerprint=FINGERPRINT)
        (stored,) = store.records(run_id=run_id)
    assert stored.value is None
    assert stored.sol is None
    assert stored.fraction_of_sol is None


def test_bad_kind_and_payload_are_user_errors(tmp_path: Path) -> None:
    with open_store(tmp_path / "r.sqlite") as store:
        with pytest.raises(UserInputError, match="kind"):
            store.add_records(kind="Bench Mark", records=[_record(0)], fingerprint=FINGERPRINT)
        bad = NewRecord(name="x", metric="m", value=1.0, unit="s", payload={"obj": object()})
        with pytest.raises(UserInputError, match="payload"):
            store.add_records(kind="benchmark", records=[bad], fingerprint=FINGERPRINT)
        assert store.runs(include_incomplete=True) == []


def test_incomplete_run_stays_hidden_until_finished(tmp_path: Path) -> None:
    with open_store(tmp_path / "r.sqlite") as store:
        run_id = store.start_run(kind="benchmark", fingerprint=FINGERPRINT)
        store.append_records(run_id, [_record(0)])
        assert store.runs() == []
        assert store.records() == []
        assert [r.run_id for r in store.runs(include_incomplete=True)] == [run_id]
        assert store.runs(include_incomplete=True)[0].complete is False
        store.finish_run(run_id)
        assert [r.name for r in store.records()] == ["triad 0"]
        with pytest.raises(UserInputError, match="already complete"):
            store.append_records(run_id, [_record(1)])
        with pytest.raises(UserInputError, match="unfinished"):
            store.finish_run(run_id)


def _write_runs(path: str, writer: int, num_runs: int, num_records: int) -> None:
    with open_store(Path(path), timeout_s=120.0) as store:
        for run in range(num_runs):
            records = [_record(writer * 10_000 + run * 100 + index) for index in range(num_records)]
            store.add_records(kind="benchmark", records=records, label=f"w{writer}", fingerprint=FINGERPRINT)


def _append_to_run(path: str, run_id: str, writer: int, num_batches: int) -> None:
    with open_store(Path(path), timeout_s=120.0) as store:
        for batch in range(num_batches):
            store.append_records(run_id, [_record(writer * 1000 + batch)])


def test_concurrent_writers_lose_nothing(tmp_path: Path) -> None:
    """Four processes write 20 runs of 25 records each at once: 2,000 records, all intact."""
    path = tmp_path / "shared.sqlite"
    open_store(path).close()  # create the schema once so that writers race on data, not DDL
    context = multiprocessing.get_context("spawn")
    processes = [context.Process(target=_write_runs, args=(str(path), w, 20, 25)) for w in range(4)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=120)
    assert [process.exitcode for process in processes] == [0, 0, 0, 0]
    with open_store(path) as store:
        runs = store.runs()
        records = store.records()
    assert len(runs) == 80
    assert all(run.num_records == 25 for run in runs)
    assert len(records) == 2000
    assert len({record.payload["index"] for record in records}) == 2000
    check = sqlite3.connect(str(path)).execute("PRAGMA integrity_check").fetchone()[0]
    assert check == "ok"


def test_concurrent_ranks_append_to_one_run(tmp_path: Path) -> None:
    path = tmp_path / "ranks.sqlite"
    with open_store(path) as store:
        run_id = store.start_run(kind="goodput", fingerprint=FINGERPRINT)
    context = multiprocessing.get_context("spawn")
    processes = [context.Process(target=_append_to_run, args=(str(path), run_id, w, 30)) for w in range(3)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=120)
    assert [process.exitcode for process in processes] == [0, 0, 0]
    with open_store(path) as store:
        store.finish_run(run_id)
        indices = sorted(record.payload["index"] for record in store.records(run_id=run_id))
    assert indices == sorted(w * 1000 + b for w in range(3) for b in range(30))


def test_full_disk_saves_nothing_and_says_so(tmp_path: Path) -> None:
    path = tmp_path / "full.sqlite"
    with open_store(path) as store:
        store.add_records(kind="benchmark", records=[_record(0)], fingerprint=FINGERPRINT)
        pages = store._connection.execute("PRAGMA page_count").fetchone()[0]
        # SQLite's page limit stands in for a full disk: the same SQLITE_FULL error.
        store._connection.execute(f"PRAGMA max_page_count = {pages + 2}")
        big = [_record(index, payload_bytes=4000) for index in range(1, 200)]
        with pytest.raises(StoreError, match="is full") as caught:
            store.add_records(kind="benchmark", records=big, fingerprint=FINGERPRINT)
        assert "nothing was saved" in str(caught.value)
        assert "LIGHTSPEED_HOME" in str(caught.value)
    with open_store(path) as store:
        assert len(store.runs(include_incomplete=True)) == 1
        assert [record.name for record in store.records()] == ["triad 0"]


def test_unwritable_location_is_a_store_error(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(StoreError, match="cannot create the results store folder"):
        open_store(blocker / "sub" / "results.sqlite")


def test_read_only_database_is_a_store_error(tmp_path: Path) -> None:
    path = tmp_path / "ro.sqlite"
    with open_store(path) as store:
        store._connection.execute("PRAGMA query_only = ON")  # what a read-only file system reports
        with pytest.raises(StoreError, match="nothing was saved"):
            store.add_records(kind="benchmark", records=[_record(0)], fingerprint=FINGERPRINT)


def test_corrupt_file_is_a_store_error(tmp_path: Path) -> None:
    path = tmp_path / "corrupt.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError, match="not a readable lightspeed store"):
        open_store(path)


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "future.sqlite"
    connection = sqlite3.connect(str(path))
    connection.execute("PRAGMA user_version = 99")
    connection.close()
    with pytest.raises(StoreError, match="newer than this lightspeed"):
        open_store(path)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    values=st.lists(
        st.tuples(st.text(min_size=1, max_size=20), st.floats(allow_nan=False, allow_infinity=False)),
        min_size=1,
        max_size=10,
    )
)
def test_any_finite_values_round_trip(tmp_path: Path, values: list[tuple[str, float]]) -> None:
    with open_store(tmp_path / "prop.sqlite") as store:
        records = [NewRecord(name=name, metric="m", value=value, unit="s") for name, value in values]
        run_id = store.add_records(kind="benchmark", records=records, fingerprint=FINGERPRINT)
        stored = store.records(run_id=run_id)
    assert [(record.name, record.value) for record in stored] == values
