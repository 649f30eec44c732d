"""Open, never create, for reading (issue 29): every command that takes a store, and the files it leaves.

Each command that only reads a store, pointed at one that does not exist, must
say so in one line (exit 2) and leave no file behind; each that writes may
create the store, and must say where (stderr, or the INFO log of
``lightspeed.store``). The static test keeps the list honest: every call of
``open_store`` outside the store package states whether it may create.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

import pytest

from expect import one_line_error
from lightspeed.errors import StoreError
from lightspeed.store import NewRecord, open_store
from lightspeed.store.backends import SqliteBackend, StoreMissingError

SRC = Path(__file__).resolve().parents[2] / "src" / "lightspeed"

# Every command that reads a store, with what makes it read one.
READERS: dict[str, tuple[str, ...]] = {
    "results list": ("results", "list"),
    "results list --where": ("results", "list", "--where", "model=x"),
    "results show": ("results", "show", "latest"),
    "results export": ("results", "export"),
    "results export --csv": ("results", "export", "--csv"),
    "results push --from": ("results", "push", "--from", "typo.sqlite", "--to", "elsewhere.sqlite"),
    "report (the store's latest runs)": ("report", "--output", "report.html"),
    "compare run:latest": ("compare", "run:latest", "run:latest"),
    "calibrate": ("calibrate",),
    "monitor report RUN": ("monitor", "report", "abc123"),
}


def _record(value: float) -> NewRecord:
    return NewRecord(name="n", metric="m", value=value, unit="s")


def _files(*roots: Path) -> set[Path]:
    return {path for root in roots for path in root.rglob("*")}


@pytest.fixture
def places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """An empty working folder and an empty LIGHTSPEED_HOME."""
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    home.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("LIGHTSPEED_HOME", str(home))
    return work, home


@pytest.mark.parametrize("store", ["default", "garbage", "sqlite:///typo.sqlite"])
@pytest.mark.parametrize("name", list(READERS))
def test_a_reading_command_never_creates_the_store(
    name: str, store: str, places: tuple[Path, Path], run_cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    if store != "default":
        monkeypatch.setenv("LIGHTSPEED_STORE", store)
    result = run_cli(*READERS[name])
    line = one_line_error(result, "does not exist")
    assert "how" in line or "created by" in line  # says how to create one
    assert _files(*places) == set(), f"{name} left files behind"


def test_garbage_store_names_the_file(
    places: tuple[Path, Path], run_cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LIGHTSPEED_STORE", "garbage")
    one_line_error(run_cli("results", "list"), "results store garbage does not exist")
    assert not Path("garbage").exists()


def test_a_writing_command_creates_and_says_where(
    places: tuple[Path, Path], run_cli: Any, caplog: pytest.LogCaptureFixture
) -> None:
    work, home = places
    # what a command that saves results (bench, monitor run, tour) does
    with caplog.at_level(logging.INFO, logger="lightspeed.store"), open_store(create=True) as store:
        store.add_records(kind="benchmark", records=[_record(1.0)])
    assert f"created the results store {home / 'results.sqlite'}" in caplog.text
    before = _files(work, home)
    result = run_cli("results", "push", "--to", "shared.sqlite")
    assert result.code == 0
    assert "created the results store shared.sqlite" in result.err
    created = {path.name for path in _files(work, home) - before}
    assert created <= {"shared.sqlite", "shared.sqlite-wal", "shared.sqlite-shm"}
    assert "shared.sqlite" in created
    again = run_cli("results", "push", "--to", "shared.sqlite")  # exists now: nothing announced
    assert again.code == 0
    assert "created" not in again.err


def test_every_open_store_call_says_whether_it_may_create() -> None:
    """A new command that opens the store must decide (and be added above when it reads)."""
    calls = []
    for path in SRC.rglob("*.py"):
        if path.parent.name == "store":
            continue
        text = path.read_text(encoding="utf-8")
        for match in re.finditer(r"open_store\(([^()]*(?:\([^()]*\)[^()]*)*)\)", text):
            calls.append((path.relative_to(SRC).as_posix(), match.group(1)))
    assert calls, "the scan found no open_store call"
    undecided = [
        (where, arguments)
        for where, arguments in calls
        if "create=" not in arguments and arguments != "MEMORY"
    ]
    assert undecided == []


def test_an_invalid_postgres_url_is_one_line(places: tuple[Path, Path], run_cli: Any) -> None:
    one_line_error(run_cli("results", "push", "--to", "postgresql://u@[::1/db"), "not a valid URL", "[::1]")
    one_line_error(run_cli("results", "push", "--to", "postgresql://u:secret@[::1/db"), "u:***@")


def test_a_read_only_store_is_read_and_refuses_writes_as_read_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "results.sqlite"
    with open_store(path) as store:
        run_id = store.add_records(
            kind="benchmark", records=[NewRecord(name="n", metric="m", value=2.0, unit="s")]
        )
    # what a read-only file or folder looks like to this process (root ignores permission bits)
    monkeypatch.setattr("lightspeed.store.backends._writable", lambda _path: False)
    with open_store(path, create=False) as store:
        assert store.records(run_id=run_id)[0].value == 2.0
        with pytest.raises(StoreError, match="is read-only") as caught:
            store.add_records(
                kind="benchmark", records=[NewRecord(name="x", metric="m", value=1.0, unit="s")]
            )
    assert "corrupt" not in str(caught.value)
    with open_store(path) as store:  # a writing command on it: opens, and the write says read-only
        assert isinstance(store._backend, SqliteBackend)  # type: ignore[attr-defined]
        assert store._backend.read_only  # type: ignore[attr-defined]


def test_a_database_without_tables_is_not_created_by_a_reader(postgres_url: str) -> None:
    with pytest.raises(StoreMissingError, match="holds no lightspeed results"):
        open_store(postgres_url, create=False)
    import psycopg

    with psycopg.connect(postgres_url) as connection:
        tables = connection.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'").fetchall()
    assert tables == []


def test_a_report_from_files_needs_no_store_and_creates_none(
    places: tuple[Path, Path], run_cli: Any, shared: Path
) -> None:
    work, home = places
    trace = shared / "data" / "traces" / "trace_filter"
    result = run_cli("report", "--from", str(trace), "--output", "report.html")
    assert result.code == 0, result.err
    # why the history is missing: a report of given files draws no stored history unless named
    assert "not drawn beside --from inputs" in result.err + result.out
    created = {path for path in _files(work, home) if home / "cache" not in path.parents}
    assert {path.name for path in created} == {"report.html", "cache"}  # the trace cache may fill
