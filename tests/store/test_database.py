"""The results store on both backends: round trips, hidden incomplete runs, concurrent writers, failures.

Tests taking ``store_url`` run twice: on a SQLite file and on a fresh database
of a real PostgreSQL server started for the session (``tests/conftest.py``).
"""

from __future__ import annotations

import math
import multiprocessing
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lightspeed.errors import StoreError, UserInputError
from lightspeed.store import NewRecord, default_store_path, open_store

FINGERPRINT = {"host_name": "test-host", "cpu_model": "test cpu"}
# every character but NUL and lone surrogates (which NewRecord refuses)
TEXT_ANY_BACKEND_STORES = st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")


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
    monkeypatch.delenv("LIGHTSPEED_STORE", raising=False)
    assert default_store_path() == tmp_path / "home" / "results.sqlite"
    with open_store() as store:
        store.add_records(kind="benchmark", records=[_record(0)], fingerprint=FINGERPRINT)
    assert (tmp_path / "home" / "results.sqlite").is_file()


def test_lightspeed_store_chooses_the_backend(
    monkeypatch: pytest.MonkeyPatch, postgres_url: str, tmp_path: Path
) -> None:
    monkeypatch.setenv("LIGHTSPEED_STORE", postgres_url)
    with open_store() as store:
        assert store.backend == "postgresql"
        assert store.path is None
        assert "***" in store.location
        assert postgres_url not in store.location
        run_id = store.add_records(kind="benchmark", records=[_record(0)], fingerprint=FINGERPRINT)
    with open_store(postgres_url) as again:
        assert again.run(run_id).num_records == 1
    monkeypatch.setenv("LIGHTSPEED_STORE", str(tmp_path / "plain.sqlite"))
    with open_store() as store:
        assert (store.backend, store.path) == ("sqlite", tmp_path / "plain.sqlite")


def test_round_trip_keeps_every_field(store_url: str) -> None:
    with open_store(store_url) as store:
        run_id = store.add_records(
            kind="benchmark", records=[_record(0), _record(1)], label="nightly", fingerprint=FINGERPRINT
        )
        records = store.records(run_id=run_id)
        (run,) = store.runs()
        assert store.schema_version() == 3
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
    with open_store(tmp_path / "r.sqlite") as store:
        run_id = store.add_records(kind="prediction", records=[_record(0)])
        (record,) = store.records(run_id=run_id)
    assert record.fingerprint["num_logical_cpus"] == os.cpu_count()
    assert store.path == tmp_path / "r.sqlite"


def test_filters_and_run_lookup(store_url: str) -> None:
    with open_store(store_url) as store:
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
        with pytest.raises(UserInputError, match="matches 2 runs"):
            store.run(bench[:4])  # both runs start with this year
        # '%' and '_' are not wildcards in a prefix
        assert store.has_run(bench)
        assert not store.has_run("%")
        with pytest.raises(UserInputError, match="no run"):
            store.run("2_")


def test_non_finite_values_are_stored_as_unknown(store_url: str) -> None:
    with open_store(store_url) as store:
        record = NewRecord(name="x", metric="m", value=math.nan, unit="s", sol=math.inf)
        run_id = store.add_records(kind="benchmark", records=[record], fingerprint=FINGERPRINT)
        (stored,) = store.records(run_id=run_id)
    assert stored.value is None
    assert stored.sol is None
    assert stored.fraction_of_sol is None


def test_bad_kind_payload_and_text_are_user_errors(store_url: str) -> None:
    with open_store(store_url) as store:
        with pytest.raises(UserInputError, match="kind"):
            store.add_records(kind="Bench Mark", records=[_record(0)], fingerprint=FINGERPRINT)
        bad = NewRecord(name="x", metric="m", value=1.0, unit="s", payload={"obj": object()})
        with pytest.raises(UserInputError, match="payload"):
            store.add_records(kind="benchmark", records=[bad], fingerprint=FINGERPRINT)
        with pytest.raises(UserInputError, match="NUL"):
            store.add_records(kind="benchmark", records=[_record(0)], label="a\x00b", fingerprint=FINGERPRINT)
        assert store.runs(include_incomplete=True) == []
    with pytest.raises(UserInputError, match="NUL"):
        NewRecord(name="gemm\x00", metric="m", value=1.0, unit="s")
    with pytest.raises(UserInputError, match="surrogate"):
        NewRecord(name="gemm \udc80", metric="m", value=1.0, unit="s")


def test_duplicate_run_id_is_refused_and_writes_nothing(store_url: str) -> None:
    with open_store(store_url) as store:
        store.add_records(kind="benchmark", records=[_record(0)], run_id="run-a", fingerprint=FINGERPRINT)
        with pytest.raises(UserInputError, match="already exists"):
            store.add_records(kind="benchmark", records=[_record(1)], run_id="run-a", fingerprint=FINGERPRINT)
        assert [record.name for record in store.records()] == ["triad 0"]


def test_incomplete_run_stays_hidden_until_finished(store_url: str) -> None:
    with open_store(store_url) as store:
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
        with pytest.raises(UserInputError, match="no run"):
            store.append_records("never-started", [_record(1)])


def _write_runs(location: str, writer: int, num_runs: int, num_records: int) -> None:
    with open_store(location, timeout_s=120.0) as store:
        for run in range(num_runs):
            records = [_record(writer * 10_000 + run * 100 + index) for index in range(num_records)]
            store.add_records(kind="benchmark", records=records, label=f"w{writer}", fingerprint=FINGERPRINT)


def _append_to_run(location: str, run_id: str, writer: int, num_batches: int) -> None:
    with open_store(location, timeout_s=120.0) as store:
        for batch in range(num_batches):
            store.append_records(run_id, [_record(writer * 1000 + batch)])


def _run_processes(target: object, arguments: list[tuple[object, ...]]) -> list[int | None]:
    context = multiprocessing.get_context("spawn")
    processes = [context.Process(target=target, args=args) for args in arguments]  # type: ignore[arg-type]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=180)
    return [process.exitcode for process in processes]


@pytest.mark.slow
def test_concurrent_writers_lose_nothing(store_url: str) -> None:
    """Four processes write 20 runs of 25 records each at once: 2,000 records, all intact."""
    open_store(store_url).close()  # create the schema once so that writers race on data, not DDL
    codes = _run_processes(_write_runs, [(store_url, w, 20, 25) for w in range(4)])
    assert codes == [0, 0, 0, 0]
    with open_store(store_url) as store:
        runs = store.runs()
        records = store.records()
    assert len(runs) == 80
    assert all(run.num_records == 25 for run in runs)
    assert len(records) == 2000
    assert len({record.payload["index"] for record in records}) == 2000
    assert len({record.record_id for record in records}) == 2000
    if not store_url.startswith("postgresql://"):
        check = sqlite3.connect(store_url).execute("PRAGMA integrity_check").fetchone()[0]
        assert check == "ok"


@pytest.mark.slow
def test_concurrent_ranks_append_to_one_run(store_url: str) -> None:
    with open_store(store_url) as store:
        run_id = store.start_run(kind="goodput", fingerprint=FINGERPRINT)
    codes = _run_processes(_append_to_run, [(store_url, run_id, w, 30) for w in range(3)])
    assert codes == [0, 0, 0]
    with open_store(store_url) as store:
        store.finish_run(run_id)
        indices = sorted(record.payload["index"] for record in store.records(run_id=run_id))
    assert indices == sorted(w * 1000 + b for w in range(3) for b in range(30))


def _open_and_write(location: str, writer: int) -> None:
    with open_store(location, timeout_s=120.0) as store:
        store.add_records(kind="benchmark", records=[_record(writer)], fingerprint=FINGERPRINT)


@pytest.mark.slow
def test_many_machines_opening_a_fresh_store_migrate_it_once(postgres_url: str) -> None:
    codes = _run_processes(_open_and_write, [(postgres_url, w) for w in range(5)])
    assert codes == [0] * 5
    import psycopg

    with psycopg.connect(postgres_url) as connection:
        versions = connection.execute("SELECT version FROM schema_version ORDER BY version").fetchall()
    assert versions == [(1,), (2,), (3,)]
    with open_store(postgres_url) as store:
        assert len(store.runs()) == 5


def test_full_disk_saves_nothing_and_says_so(tmp_path: Path) -> None:
    path = tmp_path / "full.sqlite"
    with open_store(path) as store:
        store.add_records(kind="benchmark", records=[_record(0)], fingerprint=FINGERPRINT)
        connection = store._backend.connection  # type: ignore[attr-defined]
        pages = connection.execute("PRAGMA page_count").fetchone()[0]
        # SQLite's page limit stands in for a full disk: the same SQLITE_FULL error.
        connection.execute(f"PRAGMA max_page_count = {pages + 2}")
        big = [_record(index, payload_bytes=4000) for index in range(1, 200)]
        with pytest.raises(StoreError, match="is full") as caught:
            store.add_records(kind="benchmark", records=big, fingerprint=FINGERPRINT)
        assert "nothing was saved" in str(caught.value)
        assert "LIGHTSPEED_HOME" in str(caught.value)
    with open_store(path) as store:
        assert len(store.runs(include_incomplete=True)) == 1
        assert [record.name for record in store.records()] == ["triad 0"]


def test_a_write_that_fails_half_way_on_postgres_leaves_nothing(postgres_url: str) -> None:
    """Another session locks the records table: the run row is written, the records wait past the
    timeout, and the whole transaction (run row included) is rolled back."""
    import psycopg

    with open_store(postgres_url, timeout_s=1.0) as store:
        with psycopg.connect(postgres_url) as blocker:
            blocker.execute("LOCK TABLE records IN EXCLUSIVE MODE")
            with pytest.raises(StoreError, match="stayed locked") as caught:
                store.add_records(kind="benchmark", records=[_record(0)], fingerprint=FINGERPRINT)
            blocker.rollback()
        assert "nothing was saved" in str(caught.value)
        assert store.runs(include_incomplete=True) == []
        assert store.add_records(kind="benchmark", records=[_record(1)], fingerprint=FINGERPRINT)


def test_unwritable_location_is_a_store_error(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(StoreError, match="cannot create the results store folder"):
        open_store(blocker / "sub" / "results.sqlite")


def test_read_only_database_is_a_store_error(store_url: str) -> None:
    with open_store(store_url) as store:
        connection = store._backend.connection  # type: ignore[attr-defined]
        if store.backend == "sqlite":
            connection.execute("PRAGMA query_only = ON")  # what a read-only file system reports
        else:
            connection.execute("SET default_transaction_read_only = on")  # what a standby reports
        with pytest.raises(StoreError, match="nothing was saved") as caught:
            store.add_records(kind="benchmark", records=[_record(0)], fingerprint=FINGERPRINT)
    assert "cannot be written" in str(caught.value) or "read-only" in str(caught.value)


def test_corrupt_file_is_a_store_error(tmp_path: Path) -> None:
    path = tmp_path / "corrupt.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError, match="not a readable lightspeed store"):
        open_store(path)


def test_newer_sqlite_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "future.sqlite"
    connection = sqlite3.connect(str(path))
    connection.execute("PRAGMA user_version = 99")
    connection.close()
    with pytest.raises(StoreError, match="newer than this lightspeed"):
        open_store(path)


def test_newer_postgres_schema_is_refused(postgres_url: str) -> None:
    open_store(postgres_url).close()
    import psycopg

    with psycopg.connect(postgres_url) as connection:
        connection.execute("INSERT INTO schema_version VALUES (99, 0, 'from the future')")
    with pytest.raises(StoreError, match="schema version 99, newer than this lightspeed"):
        open_store(postgres_url)


def test_unreachable_server_and_wrong_password_never_show_the_password(postgres_server: object) -> None:
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    secret = "Tops3cret-pw"
    with pytest.raises(StoreError, match="cannot be reached") as unreachable:
        open_store(f"postgresql://me:{secret}@127.0.0.1:{closed_port}/db", timeout_s=2)
    wrong = postgres_server.url("postgres", password=secret)  # type: ignore[attr-defined]
    with pytest.raises(StoreError, match="refused the login") as refused:
        open_store(wrong)
    for caught in (unreachable, refused):
        assert secret not in str(caught.value)
        assert "me:***@" in str(caught.value) or "lightspeed:***@" in str(caught.value)
        assert "\n" not in str(caught.value)


def test_missing_database_says_how_to_create_it(postgres_server: object) -> None:
    url = postgres_server.url("no_such_database")  # type: ignore[attr-defined]
    with pytest.raises(StoreError, match=r"database that does not exist.*createdb"):
        open_store(url)


@pytest.mark.parametrize(
    ("location", "message"),
    [
        ("mysql://me@host/db", "scheme 'mysql' is not supported"),
        ("postgresql://me:pw@host:port/db", "invalid port"),
        ("sqlite://", "names no file"),
    ],
)
def test_bad_store_urls_are_one_line_errors(location: str, message: str) -> None:
    with pytest.raises(UserInputError, match=message) as caught:
        open_store(location)
    assert ":pw@" not in str(caught.value)


def test_missing_driver_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)  # as if the extra were not installed
    with pytest.raises(ImportError, match=r"pip install 'lightspeed\[postgres\]'"):
        open_store("postgresql://me@127.0.0.1/db")


def test_importing_the_store_loads_no_driver() -> None:
    code = "import sys, lightspeed.store; print('psycopg' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    values=st.lists(
        st.tuples(
            st.text(min_size=1, max_size=20, alphabet=TEXT_ANY_BACKEND_STORES),
            st.floats(allow_nan=False, allow_infinity=False),
        ),
        min_size=1,
        max_size=10,
    )
)
def test_any_finite_values_round_trip(store_url: str, values: list[tuple[str, float]]) -> None:
    with open_store(store_url) as store:
        records = [NewRecord(name=name, metric="m", value=value, unit="s") for name, value in values]
        run_id = store.add_records(kind="benchmark", records=records, fingerprint=FINGERPRINT)
        stored = store.records(run_id=run_id)
    assert [(record.name, record.value) for record in stored] == values
