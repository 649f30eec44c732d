"""Defects from the expert check of the results store (items 3, 4, 5, 11, 12, 14, 15).

Each test fails on the store as it was before the fix: a string or damaged payload read or
pushed, a non-JSON row migrated on SQLite, an integer beyond 64 bits in --where, the documented
--where git_commit, the fraction of SOL of a time, reading commands that changed files, run ids
and push conflicts, and a read-only PostgreSQL role reading an older schema.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest

from expect import one_line_error
from lightspeed.environment import environment_fingerprint
from lightspeed.errors import StoreError, UserInputError
from lightspeed.store import NewRecord, new_run_id, open_store, push_runs
from lightspeed.store.records import UnusablePayloadError

FINGERPRINT = {"host_name": "node-7"}


def _record(name: str = "n", value: float = 1.0, payload: dict[str, Any] | None = None) -> NewRecord:
    return NewRecord(name=name, metric="m", value=value, unit="s", payload=payload or {"k": 1})


def _one_run(location: str | Path, **payload: Any) -> str:
    with open_store(location, create=True) as store:
        return store.add_records(
            kind="benchmark", records=[_record(payload=payload or {"k": 1})], fingerprint=FINGERPRINT
        )


def _sql(path: Path, *statements: str) -> None:
    connection = sqlite3.connect(path)
    for statement in statements:
        connection.execute(statement)
    connection.commit()
    connection.close()


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _files(folder: Path) -> set[str]:
    return {path.name for path in folder.iterdir()}


# -- 3: payloads that are JSON strings, or not JSON at all ---------------------------------------


def test_a_string_payload_and_a_damaged_fingerprint_are_read_shown_and_pushed_whole(
    tmp_path: Path, run_cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    local, shared = tmp_path / "local.sqlite", tmp_path / "shared.sqlite"
    run_id = _one_run(local, samples=[1, 2])
    # what PostgreSQL's migration 3 keeps a non-JSON row as, and a fingerprint damaged by hand
    _sql(
        local, "UPDATE records SET payload = json_quote(payload)", "UPDATE fingerprints SET payload = '{oops'"
    )
    monkeypatch.setenv("LIGHTSPEED_STORE", str(local))
    listed = run_cli("results", "list", "--json")
    assert listed.code == 0, listed.err
    assert [run["run_id"] for run in json.loads(listed.out)] == [run_id]
    shown = run_cli("results", "show", run_id)
    assert shown.code == 0, shown.err
    assert "{oops" in shown.out  # the damaged environment is shown as it is
    exported = json.loads(run_cli("results", "export", run_id).out)
    assert exported[0]["payload"] == '{"samples": [1, 2]}'  # the JSON string, whole
    assert exported[0]["fingerprint"] == "{oops"
    pushed = run_cli("results", "push", "--to", str(shared))
    assert pushed.code == 0, pushed.err
    with open_store(shared, create=False) as store:
        record = store.records(run_id=run_id)[0]
        assert store.fingerprint(record.fingerprint_id) == "{oops"
    assert record.stored_payload == '{"samples": [1, 2]}'
    assert run_cli("results", "push", "--to", str(shared)).code == 0  # again: the same, skipped


def test_a_payload_that_is_not_an_object_names_the_run_and_record_when_used_as_one(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite"
    run_id = _one_run(path)
    _sql(path, "UPDATE records SET payload = json_quote('not JSON')")
    with open_store(path, create=False) as store:
        record = store.records(run_id=run_id)[0]
    with pytest.raises(UnusablePayloadError, match=rf"run {run_id} record {record.record_id} \(n\)"):
        record.payload.get("samples")
    assert isinstance(UnusablePayloadError("x"), StoreError)  # one line, exit 2 in the CLI


def test_where_skips_a_damaged_fingerprint_on_sqlite(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite"
    _one_run(path)
    kept = _one_run(path)
    _sql(path, "UPDATE fingerprints SET payload = '{oops'")
    _sql(path, f"UPDATE runs SET fingerprint_id = 'other' WHERE run_id = '{kept}'")
    _sql(path, "INSERT INTO fingerprints VALUES ('other', '{\"host_name\": \"node-7\"}')")
    with open_store(path, create=False) as store:
        assert [run.run_id for run in store.runs(where=["env.host_name=node-7"])] == [kept]


# -- 4: migration 3 on SQLite with a row that is not JSON ----------------------------------------


def test_a_non_json_row_does_not_stop_migration_3_on_sqlite(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite"
    run_id = _one_run(path)
    # back to schema 2: without migration 3's indexes (they refuse a row that is not JSON)
    _sql(
        path,
        "DELETE FROM schema_version WHERE version = 3",
        "DROP INDEX records_by_system",
        "DROP INDEX records_by_model",
        "DROP INDEX records_by_git_commit",
        "DROP INDEX runs_by_kind",
        "PRAGMA user_version = 2",
        "UPDATE records SET payload = '{\"value\": NaN, broken'",
    )
    with open_store(path, create=True) as store:  # a writer migrates
        assert store.schema_version() == 3
        assert store.records(run_id=run_id)[0].stored_payload == '{"value": NaN, broken'  # kept whole


def test_a_json_error_is_not_called_a_corrupt_store(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite"
    _one_run(path)
    with open_store(path, create=False) as store:
        error = store._backend.describe(sqlite3.OperationalError("malformed JSON"))  # type: ignore[attr-defined]
    assert "not valid JSON" in str(error)
    assert "move the file away" not in str(error)


# -- 5: integers beyond 64 bits in --where --------------------------------------------------------


def test_where_compares_integers_beyond_64_bits_exactly(
    store_url: str, run_cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    big = 2**63  # 9223372036854775808: one past SQLite's largest integer
    with open_store(store_url) as store:
        over = store.add_records(kind="benchmark", records=[_record(payload={"x": big})], fingerprint={})
        store.add_records(kind="benchmark", records=[_record(payload={"x": big - 1})], fingerprint={})
        store.add_records(kind="benchmark", records=[_record(payload={"x": big + 1})], fingerprint={})
    with open_store(store_url, create=False) as store:
        assert [run.run_id for run in store.runs(where=[f"x={big}"])] == [over]
    monkeypatch.setenv("LIGHTSPEED_STORE", store_url)
    listed = run_cli("results", "list", "--where", "x=9223372036854775808", "--json")
    assert listed.code == 0, listed.err
    assert [run["run_id"] for run in json.loads(listed.out)] == [over]
    exported = run_cli("results", "export", "--where", "x=-99999999999999999999999")
    assert (exported.code, json.loads(exported.out)) == (0, [])


# -- 11: the documented queries, --kind, the empty caption ----------------------------------------


def _git_checkout(folder: Path) -> str:
    """A repository with one commit; its id read from the ref file git wrote, not from lightspeed."""
    folder.mkdir()
    environment = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                   "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin"}  # fmt: skip
    for arguments in (["init", "-q", "-b", "main"], ["commit", "-q", "--allow-empty", "-m", "one"]):
        subprocess.run(["git", *arguments], cwd=folder, env=environment, check=True)
    return (folder / ".git" / "refs" / "heads" / "main").read_text().strip()


def test_a_run_records_the_git_commit_and_where_finds_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_cli: Any
) -> None:
    commit = _git_checkout(tmp_path / "repo")
    path = tmp_path / "r.sqlite"
    monkeypatch.chdir(tmp_path / "repo")
    with open_store(path) as store:
        in_checkout = store.add_records(kind="benchmark", records=[_record()])  # the default fingerprint
    monkeypatch.chdir(tmp_path)
    with open_store(path) as store:
        outside = store.add_records(kind="benchmark", records=[_record()])
        assert store.fingerprint(store.run(in_checkout).fingerprint_id)["git_commit"] == commit
        fingerprint = store.fingerprint(store.run(outside).fingerprint_id)
        assert "git_commit" not in fingerprint
        # outside a checkout the fingerprint id is the environment's own, as before
        assert store.run(outside).fingerprint_id == environment_fingerprint().fingerprint_id
    monkeypatch.setenv("LIGHTSPEED_STORE", str(path))
    for where in (f"git_commit={commit}", f"env.git_commit={commit}"):
        listed = run_cli("results", "list", "--where", where, "--json")
        assert [run["run_id"] for run in json.loads(listed.out)] == [in_checkout], where
    exported = json.loads(run_cli("results", "export", "--where", f"git_commit={commit}").out)
    assert [record["run_id"] for record in exported] == [in_checkout]


def test_an_unknown_kind_is_refused_and_lists_the_kinds(
    tmp_path: Path, run_cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "r.sqlite"
    with open_store(path) as store:
        store.add_records(kind="custom", records=[_record()], fingerprint={})
    monkeypatch.setenv("LIGHTSPEED_STORE", str(path))
    for command in (["list"], ["export"], ["push", "--to", str(tmp_path / "x.sqlite")]):
        one_line_error(
            run_cli("results", *command, "--kind", "Benchmark"), "'Benchmark'", "benchmark", "custom"
        )
    assert run_cli("results", "list", "--kind", "custom").code == 0  # a kind in the store is one
    assert run_cli("results", "list", "--kind", "trace").code == 0  # and so is one lightspeed writes


def test_the_empty_caption_tells_an_empty_store_from_a_filter_that_matched_nothing(
    tmp_path: Path, run_cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "r.sqlite"
    open_store(path).close()
    monkeypatch.setenv("LIGHTSPEED_STORE", str(path))
    assert "no runs yet" in run_cli("results", "list").out
    _one_run(path)
    filtered = run_cli("results", "list", "--where", "model=none", "--kind", "prediction").out
    assert "no runs yet" not in filtered
    assert "no run matches --kind prediction --where model=none" in " ".join(filtered.split())


# -- 12: the fraction of SOL of a time ------------------------------------------------------------


def test_the_fraction_of_sol_of_a_time_is_sol_over_value(
    tmp_path: Path, run_cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "r.sqlite"
    step = NewRecord(name="step", metric="step_time_s", value=0.42, unit="s", sol=0.30)
    rate = NewRecord(name="triad", metric="bytes_per_s", value=2e10, unit="B/s", sol=4e10)
    with open_store(path) as store:
        run_id = store.add_records(kind="prediction", records=[step, rate], fingerprint={})
        fractions = [record.fraction_of_sol for record in store.records(run_id=run_id)]
    # by hand: 300 ms of SOL against 420 ms taken is 30/42 = 5/7 of the speed of light
    assert fractions == [pytest.approx(5 / 7), pytest.approx(0.5)]
    monkeypatch.setenv("LIGHTSPEED_STORE", str(path))
    assert "71.4%" in run_cli("results", "show", run_id).out
    csv_rows = run_cli("results", "export", "--csv").out.splitlines()
    column = csv_rows[0].split(",").index("fraction_of_sol")
    assert float(csv_rows[1].split(",")[column]) == pytest.approx(5 / 7)


# -- 14: reading commands change nothing ----------------------------------------------------------


def test_reading_an_empty_file_leaves_it_empty(
    tmp_path: Path, run_cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "empty.sqlite"
    path.touch()
    monkeypatch.setenv("LIGHTSPEED_STORE", str(path))
    result = run_cli("results", "list")
    assert path.stat().st_size == 0
    one_line_error(result, "holds no lightspeed results yet")
    assert _files(tmp_path) == {"empty.sqlite"}


def test_another_programs_database_is_named_so_and_left_as_it_is(
    tmp_path: Path, run_cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "foreign.sqlite"
    _sql(path, "CREATE TABLE runs (x INTEGER)", "INSERT INTO runs VALUES (1)")
    before = _digest(path)
    monkeypatch.setenv("LIGHTSPEED_STORE", str(path))
    line = one_line_error(run_cli("results", "list"), "is not a lightspeed store", "runs")
    assert "no tables yet" not in line
    _one_run(tmp_path / "local.sqlite")
    pushed = run_cli("results", "push", "--from", str(tmp_path / "local.sqlite"), "--to", str(path))
    one_line_error(pushed, "is not a lightspeed store")
    assert _digest(path) == before
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    assert _files(tmp_path) == {"foreign.sqlite", "local.sqlite"}


def test_reading_a_garbage_file_does_not_speak_of_saving(
    tmp_path: Path, run_cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "garbage.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    monkeypatch.setenv("LIGHTSPEED_STORE", str(path))
    line = one_line_error(run_cli("results", "list"), "not a SQLite database")
    assert "nothing was saved" not in line
    assert "move the file away" not in line


def test_reading_a_store_changes_no_byte_and_leaves_no_file(
    tmp_path: Path, run_cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "r.sqlite"
    run_id = _one_run(path)
    before = _digest(path)
    monkeypatch.setenv("LIGHTSPEED_STORE", str(path))
    for command in (["list"], ["show", run_id], ["export", "--csv"], ["list", "--where", "k=1"]):
        assert run_cli("results", *command).code == 0
    assert _digest(path) == before
    assert _files(tmp_path) == {"r.sqlite"}


def test_a_reader_reads_an_older_sqlite_schema_without_migrating_it(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite"
    run_id = _one_run(path, model="m1")
    _sql(path, "DELETE FROM schema_version WHERE version = 3", "PRAGMA user_version = 2")
    before = _digest(path)
    with open_store(path, create=False) as store:
        assert store.schema_version() == 2
        assert [run.run_id for run in store.runs(where=["model=m1"])] == [run_id]
    assert _digest(path) == before


def test_a_read_only_postgres_role_reads_an_older_schema(postgres_url: str) -> None:
    import psycopg

    run_id = _one_run(postgres_url, model="m1")
    role, password = "reader_" + secrets.token_hex(4), "pw-" + secrets.token_hex(6)
    with psycopg.connect(postgres_url, autocommit=True) as connection:  # back to schema 2: TEXT payloads
        connection.execute("DELETE FROM schema_version WHERE version = 3")
        for index in ("records_payload", "records_by_system", "records_by_model", "records_by_git_commit"):
            connection.execute(f"DROP INDEX {index}")  # names written here, not input
        connection.execute("ALTER TABLE records ALTER COLUMN payload TYPE TEXT USING payload::text")
        connection.execute("ALTER TABLE fingerprints ALTER COLUMN payload TYPE TEXT USING payload::text")
        connection.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{password}'")  # names made here
        connection.execute(f"GRANT USAGE ON SCHEMA public TO {role}")
        connection.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}")
    reader_url = re.sub(r"//lightspeed:[^@]*@", f"//{role}:{password}@", postgres_url)
    with open_store(reader_url, create=False) as store:
        assert store.schema_version() == 2
        assert [record.payload for record in store.records(run_id=run_id)] == [{"model": "m1"}]
        assert [run.run_id for run in store.runs(where=["model=m1"])] == [run_id]


# -- 15: run ids, push conflicts, push RUN_ID --kind ---------------------------------------------


def test_new_run_ids_carry_48_random_bits_and_stay_sortable() -> None:
    run_id = new_run_id()
    assert re.fullmatch(r"\d{8}T\d{6}-[0-9a-f]{12}", run_id), run_id


def test_a_generated_run_id_that_is_taken_is_drawn_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "r.sqlite"
    with open_store(path) as store:
        taken = store.add_records(
            kind="benchmark", records=[_record()], fingerprint={}, run_id="20260101T000000-aaaa"
        )
        drawn = iter([taken, "20260101T000000-bbbb"])
        monkeypatch.setattr("lightspeed.store.database.new_run_id", lambda: next(drawn))
        assert (
            store.add_records(kind="benchmark", records=[_record()], fingerprint={}) == "20260101T000000-bbbb"
        )
        with pytest.raises(UserInputError) as caught:
            store.add_records(kind="benchmark", records=[_record()], fingerprint={}, run_id=taken)
    assert "omit run_id" not in str(caught.value)
    assert "give another run_id" in str(caught.value)


def test_push_reports_a_different_run_under_the_same_id_and_changes_neither(
    tmp_path: Path, store_url: str, run_cli: Any
) -> None:
    local = tmp_path / "local.sqlite"
    with open_store(local) as store:
        store.add_records(kind="benchmark", records=[_record(value=1.0)], fingerprint={}, run_id="same-id")
        store.add_records(kind="benchmark", records=[_record(value=3.0)], fingerprint={}, run_id="other-id")
    with open_store(store_url) as store:
        store.add_records(kind="benchmark", records=[_record(value=2.0)], fingerprint={}, run_id="same-id")
    result = run_cli("results", "push", "--from", str(local), "--to", store_url)
    one_line_error(result, "1 run(s) not pushed", "same-id", "different run")
    with open_store(store_url, create=False) as store:
        assert [record.value for record in store.records(run_id="same-id")] == [2.0]
        assert [record.value for record in store.records(run_id="other-id")] == [3.0]  # the others went
    with open_store(local, create=False) as source, open_store(store_url) as destination:
        again = push_runs(source=source, destination=destination, run_ids=["other-id"])
    assert (again.skipped, again.conflicting) == (("other-id",), ())


def test_push_run_ids_with_kind_applies_both(tmp_path: Path, run_cli: Any) -> None:
    local = tmp_path / "local.sqlite"
    run_id = _one_run(local)  # a benchmark run
    shared = str(tmp_path / "shared.sqlite")
    refused = run_cli("results", "push", "--from", str(local), "--to", shared, run_id, "--kind", "prediction")
    one_line_error(refused, run_id, "not of kind prediction")
    pushed = run_cli(
        "results", "push", "--from", str(local), "--to", shared, run_id, "--kind", "benchmark", "--json"
    )
    assert json.loads(pushed.out)["copied"] == [run_id]
