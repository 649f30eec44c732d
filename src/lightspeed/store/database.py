"""The results store: one SQLite file, safe for several writing processes.

Layout (``PRAGMA user_version`` = :data:`SCHEMA_VERSION`)::

    fingerprints(fingerprint_id PK, payload JSON)
    runs(run_id PK, kind, label, created_s, completed_s NULL until complete, fingerprint_id)
    records(record_id PK, run_id, kind, created_s, name, metric, value, unit, sol,
            fingerprint_id, payload JSON)

Write-ahead logging lets readers and one writer work at once; writers queue on
SQLite's lock (``timeout_s``) and every write is one ``BEGIN IMMEDIATE``
transaction, so concurrent ranks neither corrupt the file nor lose records.
A run written with :meth:`ResultsStore.add_records` appears complete or not at
all; a run written piece by piece (:meth:`~ResultsStore.start_run`,
:meth:`~ResultsStore.append_records`, :meth:`~ResultsStore.finish_run`) stays
hidden as incomplete until finished. A full disk, a read-only location or a
corrupt file raises :class:`~lightspeed.errors.StoreError` and rolls back.

>>> import tempfile, pathlib
>>> with open_store(pathlib.Path(tempfile.mkdtemp()) / "r.sqlite") as store:
...     run_id = store.add_records(kind="benchmark", records=[
...         NewRecord(name="triad", metric="bytes_per_s", value=2e10, unit="B/s", sol=4e10)])
...     store.records(run_id=run_id)[0].fraction_of_sol
0.5
"""

from __future__ import annotations

import hashlib
import json
import math
import secrets
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any, Final

from lightspeed.environment import EnvironmentFingerprint, environment_fingerprint
from lightspeed.errors import StoreError, UserInputError
from lightspeed.paths import lightspeed_home
from lightspeed.records import JsonObject, to_jsonable
from lightspeed.store.records import NewRecord, RunSummary, StoredRecord, check_kind

SCHEMA_VERSION: Final = 1
STORE_FILE_NAME: Final = "results.sqlite"
DEFAULT_TIMEOUT_S: Final = 60.0

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS fingerprints (
    fingerprint_id TEXT PRIMARY KEY,
    payload TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    label TEXT NOT NULL,
    created_s REAL NOT NULL,
    completed_s REAL,
    fingerprint_id TEXT NOT NULL REFERENCES fingerprints(fingerprint_id)
);
CREATE TABLE IF NOT EXISTS records (
    record_id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL REFERENCES runs(run_id),
    kind TEXT NOT NULL,
    created_s REAL NOT NULL,
    name TEXT NOT NULL,
    metric TEXT NOT NULL,
    value REAL,
    unit TEXT NOT NULL,
    sol REAL,
    fingerprint_id TEXT NOT NULL REFERENCES fingerprints(fingerprint_id),
    payload TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS records_by_run ON records(run_id);
CREATE INDEX IF NOT EXISTS records_by_kind_name ON records(kind, name);
"""

_RECORD_COLUMNS: Final = (
    "r.record_id, r.run_id, r.kind, r.created_s, r.name, r.metric, r.value, r.unit, r.sol, "
    "r.fingerprint_id, f.payload, r.payload"
)


def default_store_path() -> Path:
    """``results.sqlite`` in :func:`lightspeed.paths.lightspeed_home` (``$LIGHTSPEED_HOME``)."""
    return lightspeed_home() / STORE_FILE_NAME


def new_run_id() -> str:
    """A sortable, unique run id: UTC time then 6 random hex digits (``20260130T101500-1a2b3c``)."""
    return time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + "-" + secrets.token_hex(3)


def _describe(error: BaseException, path: Path) -> StoreError:
    text = str(error)
    lowered = text.lower()
    if "full" in lowered:
        problem = "is full (no space left on the disk, or its size limit reached)"
        fix = "free disk space or set LIGHTSPEED_HOME to a folder on another disk"
    elif "readonly" in lowered or "read-only" in lowered or "permission" in lowered:
        problem = "cannot be written (read-only location or missing permission)"
        fix = "make the folder writable or set LIGHTSPEED_HOME to a writable folder"
    elif "locked" in lowered or "busy" in lowered:
        problem = "stayed locked by another writer past the timeout"
        fix = "retry when the other writer finishes, or raise the timeout"
    elif "not a database" in lowered or "malformed" in lowered:
        problem = "is not a readable lightspeed store (corrupt or another kind of file)"
        fix = "move the file away; a new store is created in its place"
    else:
        problem = f"failed ({text})"
        fix = "check the path and the disk"
    return StoreError(f"results store {path} {problem}; nothing was saved by this call; fix: {fix}")


def _fingerprint_payload(
    fingerprint: EnvironmentFingerprint | JsonObject | None,
) -> tuple[str, str]:
    if fingerprint is None:
        fingerprint = environment_fingerprint()
    if isinstance(fingerprint, EnvironmentFingerprint):
        return fingerprint.fingerprint_id, json.dumps(fingerprint.to_dict(), sort_keys=True)
    text = json.dumps(to_jsonable(dict(fingerprint)), sort_keys=True, allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16], text


def _payload_text(record: NewRecord) -> str:
    try:
        return json.dumps(to_jsonable(dict(record.payload)), sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise UserInputError(f"payload of record {record.name!r} is not JSON data ({error})") from None


def _finite_or_none(value: float | None) -> float | None:
    if value is None:
        return None
    number = float(value)
    return number if math.isfinite(number) else None


class ResultsStore:
    """An open results store; use :func:`open_store` and close it (or use ``with``)."""

    def __init__(self, path: Path, connection: sqlite3.Connection) -> None:
        self.path = path
        self._connection = connection

    def __enter__(self) -> ResultsStore:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection (idempotent)."""
        self._connection.close()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One ``BEGIN IMMEDIATE`` transaction; any failure rolls it back and raises StoreError."""
        connection = self._connection
        try:
            connection.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as error:
            raise _describe(error, self.path) from None
        try:
            yield connection
            connection.execute("COMMIT")
        except sqlite3.Error as error:
            self._rollback()
            raise _describe(error, self.path) from None
        except BaseException:
            self._rollback()
            raise

    def _rollback(self) -> None:
        if self._connection.in_transaction:
            self._connection.execute("ROLLBACK")

    def _read(self, sql: str, parameters: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        try:
            return list(self._connection.execute(sql, parameters).fetchall())
        except sqlite3.Error as error:
            raise _describe(error, self.path) from None

    def add_records(
        self,
        *,
        kind: str,
        records: Sequence[NewRecord],
        label: str = "",
        fingerprint: EnvironmentFingerprint | JsonObject | None = None,
        run_id: str | None = None,
    ) -> str:
        """Write a whole run in one transaction (all records or none); return its run id.

        ``fingerprint`` defaults to :func:`lightspeed.bench.environment_fingerprint`.
        """
        check_kind(kind)
        texts = [_payload_text(record) for record in records]
        fingerprint_id, fingerprint_text = _fingerprint_payload(fingerprint)
        run = run_id or new_run_id()
        now = time.time()
        with self._write() as connection:
            self._insert_run(
                connection,
                run_id=run,
                kind=kind,
                label=label,
                created_s=now,
                fingerprint_id=fingerprint_id,
                fingerprint_text=fingerprint_text,
            )
            self._insert_records(
                connection,
                run_id=run,
                kind=kind,
                records=records,
                texts=texts,
                fingerprint_id=fingerprint_id,
                created_s=now,
            )
            connection.execute("UPDATE runs SET completed_s = ? WHERE run_id = ?", (time.time(), run))
        return run

    def start_run(
        self,
        *,
        kind: str,
        label: str = "",
        fingerprint: EnvironmentFingerprint | JsonObject | None = None,
        run_id: str | None = None,
    ) -> str:
        """Open a run to write piece by piece; it stays hidden until :meth:`finish_run`."""
        check_kind(kind)
        fingerprint_id, fingerprint_text = _fingerprint_payload(fingerprint)
        run = run_id or new_run_id()
        with self._write() as connection:
            self._insert_run(
                connection,
                run_id=run,
                kind=kind,
                label=label,
                created_s=time.time(),
                fingerprint_id=fingerprint_id,
                fingerprint_text=fingerprint_text,
            )
        return run

    def append_records(self, run_id: str, records: Sequence[NewRecord]) -> None:
        """Add records to an unfinished run (one transaction; several processes may append)."""
        texts = [_payload_text(record) for record in records]
        with self._write() as connection:
            row = connection.execute(
                "SELECT kind, fingerprint_id, completed_s FROM runs WHERE run_id = ?", (run_id,)
            ).fetchone()
            if row is None:
                raise UserInputError(f"no run {run_id!r} in {self.path}; start it with start_run()")
            if row[2] is not None:
                raise UserInputError(f"run {run_id!r} is already complete; start a new run")
            self._insert_records(
                connection,
                run_id=run_id,
                kind=row[0],
                records=records,
                texts=texts,
                fingerprint_id=row[1],
                created_s=time.time(),
            )

    def finish_run(self, run_id: str) -> None:
        """Mark a run complete so that it and its records become visible."""
        with self._write() as connection:
            cursor = connection.execute(
                "UPDATE runs SET completed_s = ? WHERE run_id = ? AND completed_s IS NULL",
                (time.time(), run_id),
            )
            if cursor.rowcount != 1:
                raise UserInputError(f"no unfinished run {run_id!r} in {self.path}")

    @staticmethod
    def _insert_run(
        connection: sqlite3.Connection,
        *,
        run_id: str,
        kind: str,
        label: str,
        created_s: float,
        fingerprint_id: str,
        fingerprint_text: str,
    ) -> None:
        connection.execute(
            "INSERT OR IGNORE INTO fingerprints(fingerprint_id, payload) VALUES (?, ?)",
            (fingerprint_id, fingerprint_text),
        )
        try:
            connection.execute(
                "INSERT INTO runs(run_id, kind, label, created_s, completed_s, fingerprint_id) "
                "VALUES (?, ?, ?, ?, NULL, ?)",
                (run_id, kind, label, created_s, fingerprint_id),
            )
        except sqlite3.IntegrityError:
            raise UserInputError(f"run id {run_id!r} already exists; omit run_id for a new one") from None

    @staticmethod
    def _insert_records(
        connection: sqlite3.Connection,
        *,
        run_id: str,
        kind: str,
        records: Sequence[NewRecord],
        texts: Sequence[str],
        fingerprint_id: str,
        created_s: float,
    ) -> None:
        connection.executemany(
            "INSERT INTO records(run_id, kind, created_s, name, metric, value, unit, sol, "
            "fingerprint_id, payload) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    run_id,
                    kind,
                    created_s,
                    record.name,
                    record.metric,
                    _finite_or_none(record.value),
                    record.unit,
                    _finite_or_none(record.sol),
                    fingerprint_id,
                    text,
                )
                for record, text in zip(records, texts, strict=True)
            ],
        )

    def runs(
        self, *, kind: str | None = None, limit: int | None = None, include_incomplete: bool = False
    ) -> list[RunSummary]:
        """Runs, newest first; incomplete ones only when ``include_incomplete``."""
        clauses, parameters = _run_filters(kind=kind, include_incomplete=include_incomplete)
        sql = (
            "SELECT u.run_id, u.kind, u.label, u.created_s, u.completed_s, "
            "(SELECT COUNT(*) FROM records r WHERE r.run_id = u.run_id), u.fingerprint_id, f.payload "
            "FROM runs u JOIN fingerprints f ON f.fingerprint_id = u.fingerprint_id"
            f"{_where(clauses)} ORDER BY u.created_s DESC, u.run_id DESC"
        )
        if limit is not None:
            sql += " LIMIT ?"
            parameters.append(int(limit))
        return [_run_summary(row) for row in self._read(sql, parameters)]

    def run(self, run_id: str) -> RunSummary:
        """One run by id, a unique id prefix, or ``latest``."""
        if run_id == "latest":
            found = self.runs(limit=1)
            if not found:
                raise UserInputError(f"the results store {self.path} holds no complete run yet")
            return found[0]
        matches = [run for run in self.runs(include_incomplete=True) if run.run_id.startswith(run_id)]
        exact = [run for run in matches if run.run_id == run_id]
        if exact:
            return exact[0]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise UserInputError(f"no run {run_id!r} in {self.path}; see 'lightspeed results list'")
        names = ", ".join(run.run_id for run in matches[:5])
        raise UserInputError(f"run id prefix {run_id!r} matches several runs ({names}); give more of it")

    def records(
        self,
        *,
        run_id: str | None = None,
        kind: str | None = None,
        name: str | None = None,
        metric: str | None = None,
        limit: int | None = None,
        include_incomplete: bool = False,
    ) -> list[StoredRecord]:
        """Records matching every filter given, oldest first (exact matches)."""
        clauses, parameters = _run_filters(kind=None, include_incomplete=include_incomplete)
        for column, value in (("r.run_id", run_id), ("r.kind", kind), ("r.name", name), ("r.metric", metric)):
            if value is not None:
                clauses.append(f"{column} = ?")
                parameters.append(value)
        sql = (
            f"SELECT {_RECORD_COLUMNS} FROM records r JOIN runs u ON u.run_id = r.run_id "
            f"JOIN fingerprints f ON f.fingerprint_id = r.fingerprint_id{_where(clauses)} "
            "ORDER BY r.record_id"
        )
        if limit is not None:
            sql += " LIMIT ?"
            parameters.append(int(limit))
        return [_stored_record(row) for row in self._read(sql, parameters)]

    def fingerprint(self, fingerprint_id: str) -> JsonObject:
        """The environment stored under ``fingerprint_id``."""
        rows = self._read("SELECT payload FROM fingerprints WHERE fingerprint_id = ?", (fingerprint_id,))
        if not rows:
            raise UserInputError(f"no environment fingerprint {fingerprint_id!r} in {self.path}")
        loaded: JsonObject = json.loads(rows[0][0])
        return loaded


def _where(clauses: Sequence[str]) -> str:
    return f" WHERE {' AND '.join(clauses)}" if clauses else ""


def _run_filters(*, kind: str | None, include_incomplete: bool) -> tuple[list[str], list[Any]]:
    clauses: list[str] = []
    parameters: list[Any] = []
    if not include_incomplete:
        clauses.append("u.completed_s IS NOT NULL")
    if kind is not None:
        clauses.append("u.kind = ?")
        parameters.append(kind)
    return clauses, parameters


def _run_summary(row: tuple[Any, ...]) -> RunSummary:
    fingerprint = json.loads(row[7])
    return RunSummary(
        run_id=row[0],
        kind=row[1],
        label=row[2],
        created_s=row[3],
        completed_s=row[4],
        num_records=row[5],
        fingerprint_id=row[6],
        host_name=str(fingerprint.get("host_name", "")),
    )


def _stored_record(row: tuple[Any, ...]) -> StoredRecord:
    return StoredRecord(
        record_id=row[0],
        run_id=row[1],
        kind=row[2],
        created_s=row[3],
        name=row[4],
        metric=row[5],
        value=row[6],
        unit=row[7],
        sol=row[8],
        fingerprint_id=row[9],
        fingerprint=json.loads(row[10]),
        payload=json.loads(row[11]),
    )


def _connect(path: Path, timeout_s: float) -> sqlite3.Connection:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise StoreError(
            f"cannot create the results store folder {path.parent} ({error.strerror}); "
            "fix: set LIGHTSPEED_HOME to a writable folder"
        ) from None
    try:
        # isolation_level=None: transactions are explicit (BEGIN IMMEDIATE in _write).
        connection = sqlite3.connect(str(path), timeout=timeout_s, isolation_level=None)
    except sqlite3.Error as error:
        raise _describe(error, path) from None
    return connection


def _initialise(connection: sqlite3.Connection, path: Path) -> None:
    try:
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA synchronous=NORMAL")
        connection.execute("PRAGMA foreign_keys=ON")
        version = connection.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"results store {path} has schema version {version}, newer than this lightspeed "
                f"({SCHEMA_VERSION}); fix: upgrade lightspeed or use another LIGHTSPEED_HOME"
            )
        if version < SCHEMA_VERSION:
            # Statement by statement: executescript() would commit our transaction first.
            connection.execute("BEGIN IMMEDIATE")
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    connection.execute(statement)
            connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            connection.execute("COMMIT")
    except sqlite3.Error as error:
        if connection.in_transaction:
            connection.execute("ROLLBACK")
        connection.close()
        raise _describe(error, path) from None


def open_store(path: Path | None = None, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> ResultsStore:
    """Open (creating if needed) the results store at ``path`` (default :func:`default_store_path`).

    ``timeout_s`` is how long a writer waits for another process's lock.
    """
    target = Path(path) if path is not None else default_store_path()
    connection = _connect(target, timeout_s)
    _initialise(connection, target)
    return ResultsStore(target, connection)
