"""The results store: a SQLite file or a PostgreSQL database, safe for many writing processes.

Layout (versioned by :mod:`~lightspeed.store.migrations`, the same on both backends)::

    schema_version(version PK, applied_s, description)
    fingerprints(fingerprint_id PK, payload JSON)
    runs(run_id PK, kind, label, created_s, completed_s NULL until complete, fingerprint_id)
    records(record_id PK, run_id, kind, created_s, name, metric, value, unit, sol,
            fingerprint_id, payload JSON)

Every write is one transaction: on SQLite a ``BEGIN IMMEDIATE`` (write-ahead
logging lets readers and one writer work at once; writers queue on the lock
for ``timeout_s``), on PostgreSQL an ordinary transaction (writers on many
machines commit concurrently). A run written with
:meth:`ResultsStore.add_records` appears complete or not at all; a run written
piece by piece (:meth:`~ResultsStore.start_run`,
:meth:`~ResultsStore.append_records`, :meth:`~ResultsStore.finish_run`) stays
hidden as incomplete until finished. A full disk, a read-only location, a
corrupt file or an unreachable server raises
:class:`~lightspeed.errors.StoreError` and rolls back.

A store opened for reading (``create=False``) is never changed: no pragma,
no migration; an older schema is read as it is (schema-1 benchmark names and
payloads are converted in memory as migration 2 would). A payload that is
not JSON is returned whole, as a string (:class:`StoredRecord` says so when
it is read as an object).

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
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Final

from lightspeed.environment import EnvironmentFingerprint, environment_fingerprint
from lightspeed.errors import StoreError, UserInputError
from lightspeed.records import JsonObject, to_jsonable
from lightspeed.store.backends import MEMORY_STORE, Backend, StoreMissingError, connect
from lightspeed.store.location import StoreLocation, store_location
from lightspeed.store.migrations import (
    SCHEMA_VERSION,
    current_version,
    migrate,
    refuse_newer,
    split_benchmark_size,
)
from lightspeed.store.provenance import provenance
from lightspeed.store.query import (
    Condition,
    parse_conditions,
    payload_match,
    record_or_run_match,
    run_filters,
)
from lightspeed.store.records import (
    KNOWN_KINDS,
    NewRecord,
    RunSummary,
    StoredJson,
    StoredRecord,
    check_kind,
    check_label,
)

__all__ = ["SCHEMA_VERSION", "ResultsStore", "new_run_id", "open_store"]

DEFAULT_TIMEOUT_S: Final = 60.0

_RECORD_COLUMNS: Final = (
    "r.record_id, r.run_id, r.kind, r.created_s, r.name, r.metric, r.value, r.unit, r.sol, "
    "r.fingerprint_id, f.payload, r.payload"
)
_INSERT_RECORD: Final = (
    "INSERT INTO records(run_id, kind, created_s, name, metric, value, unit, sol, "
    "fingerprint_id, payload) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


RUN_ID_RANDOM_BYTES: Final = 6  # 48 random bits after the second: a collision is ~1 in 10^14 per pair
_RUN_ID_TRIES: Final = 5


def new_run_id() -> str:
    """A sortable, unique run id: UTC time then 12 random hex digits (``20260130T101500-1a2b3c4d5e6f``).

    Ids made before had 6 hex digits; every id stays valid (an id is any text).
    """
    return time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + "-" + secrets.token_hex(RUN_ID_RANDOM_BYTES)


class _RunIdTakenError(Exception):
    """The run id chosen for a new run is already in the store."""


def _fingerprint_payload(
    fingerprint: EnvironmentFingerprint | JsonObject | None,
) -> tuple[str, str]:
    if fingerprint is None:  # this machine, and the git commit it runs from
        fingerprint = {**environment_fingerprint().to_dict(), **provenance()}
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


# how a run comes to be in a store (the fix of a 'latest' that names none)
_SAVE_A_RUN: Final = (
    "save one first with a command that saves results ('lightspeed bench', 'lightspeed monitor run', "
    "'lightspeed tour'), or point LIGHTSPEED_STORE at the store that holds your runs"
)


class ResultsStore:
    """An open results store; use :func:`open_store` and close it (or use ``with``).

    ``location`` says where it is (a file path, or a URL with its password
    masked); ``path`` is the SQLite file, ``None`` on PostgreSQL; ``backend``
    is ``sqlite`` or ``postgresql``.
    """

    def __init__(self, backend: Backend, *, schema: int = SCHEMA_VERSION, created: bool = False) -> None:
        self._backend = backend
        self._schema = schema
        self.location = backend.location.display
        self.path: Path | None = backend.location.path
        self.backend = backend.name
        self.created = created  # this open created the store (its tables)

    def _where(self) -> str:
        """The store for a message: its location; for an in-memory store standing in for one
        that does not exist (a command that reads files too), the store it stands in for."""
        where, state = self._where_and_state()
        return where if state is None else f"{where}, which {state}"

    def _where_and_state(self) -> tuple[str, str | None]:
        """The store for a message and, for an in-memory store standing in for another, what
        that one is (``does not exist yet``), or ``None``."""
        if self.location != MEMORY_STORE:
            return f"the results store {self.location}", None
        stood_for = store_location(None)
        if stood_for.path is None:
            return f"the results store at the database URL {stood_for.display}", "holds no results"
        if str(stood_for.path) != MEMORY_STORE and not stood_for.path.exists():
            return f"the results store {stood_for.display}", "does not exist yet"
        return "the in-memory results store", None

    def _no_complete_run(self) -> str:
        """One sentence: the store holds no complete run (``latest`` names none), and the fix."""
        where, state = self._where_and_state()
        if state is not None:
            return f"{where} {state}, so it holds no run; fix: {_SAVE_A_RUN}"
        listed = "'lightspeed results list' shows the runs it holds"
        return f"{where} holds no complete run yet; fix: {_SAVE_A_RUN} ({listed})"

    def __enter__(self) -> ResultsStore:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection (idempotent)."""
        self._backend.close()

    def _read(self, sql: str, parameters: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self._backend.read(sql, parameters)

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

        ``fingerprint`` defaults to :func:`lightspeed.environment.environment_fingerprint`.
        """
        check_kind(kind)
        check_label(label)
        texts = [_payload_text(record) for record in records]
        fingerprint_id, fingerprint_text = _fingerprint_payload(fingerprint)
        now = time.time()

        def write(backend: Backend, run: str) -> None:
            self._insert_run(
                backend,
                run_id=run,
                kind=kind,
                label=label,
                created_s=now,
                fingerprint_id=fingerprint_id,
                fingerprint_text=fingerprint_text,
            )
            self._insert_records(
                backend,
                run_id=run,
                kind=kind,
                records=records,
                texts=texts,
                fingerprint_id=fingerprint_id,
                created_s=now,
            )
            backend.execute("UPDATE runs SET completed_s = ? WHERE run_id = ?", (time.time(), run))

        return self._new_run(write, run_id)

    def _new_run(self, write: Callable[[Backend, str], None], run_id: str | None) -> str:
        """Run ``write`` in one transaction under ``run_id``, or under a new id (drawn again in
        the unlikely case that it is taken)."""
        for _ in range(_RUN_ID_TRIES):
            run = run_id or new_run_id()
            try:
                with self._backend.transaction() as backend:
                    write(backend, run)
            except _RunIdTakenError:
                if run_id is not None:
                    raise UserInputError(
                        f"run id {run_id!r} already exists in {self._where()}; give another run_id, "
                        "or none for a new one"
                    ) from None
                continue
            return run
        raise StoreError(
            f"{self._where()} already held each of {_RUN_ID_TRIES} new run ids drawn; nothing was saved "
            "by this call; fix: check the system clock and random source, then retry"
        )

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
        check_label(label)
        fingerprint_id, fingerprint_text = _fingerprint_payload(fingerprint)

        def write(backend: Backend, run: str) -> None:
            self._insert_run(
                backend,
                run_id=run,
                kind=kind,
                label=label,
                created_s=time.time(),
                fingerprint_id=fingerprint_id,
                fingerprint_text=fingerprint_text,
            )

        return self._new_run(write, run_id)

    def append_records(self, run_id: str, records: Sequence[NewRecord]) -> None:
        """Add records to an unfinished run (one transaction; several processes may append)."""
        texts = [_payload_text(record) for record in records]
        with self._backend.transaction() as backend:
            # FOR SHARE on PostgreSQL: a concurrent finish_run waits for this append to commit.
            row = backend.execute(
                f"SELECT kind, fingerprint_id, completed_s FROM runs WHERE run_id = ?{backend.share_lock}",
                (run_id,),
            ).fetchone()
            if row is None:
                raise UserInputError(f"no run {run_id!r} in {self._where()}; start it with start_run()")
            if row[2] is not None:
                raise UserInputError(f"run {run_id!r} is already complete; start a new run")
            self._insert_records(
                backend,
                run_id=run_id,
                kind=row[0],
                records=records,
                texts=texts,
                fingerprint_id=row[1],
                created_s=time.time(),
            )

    def finish_run(self, run_id: str) -> None:
        """Mark a run complete so that it and its records become visible."""
        with self._backend.transaction() as backend:
            cursor = backend.execute(
                "UPDATE runs SET completed_s = ? WHERE run_id = ? AND completed_s IS NULL",
                (time.time(), run_id),
            )
            if cursor.rowcount != 1:
                raise UserInputError(f"no unfinished run {run_id!r} in {self._where()}")

    def copy_run(self, *, run: RunSummary, fingerprint: StoredJson, records: Sequence[StoredRecord]) -> bool:
        """Copy a complete run from another store, keeping its id and times, in one transaction.

        Returns ``False`` (and writes nothing) when a run with that id is
        already here. Record ids are this store's own. ``fingerprint`` and the
        payloads are copied as they were stored (one that is not a JSON
        object, or holds NaN, too: as a JSON string, so nothing is lost).
        """
        if run.completed_s is None:
            raise UserInputError(f"run {run.run_id!r} is not complete; only complete runs are copied")
        fingerprint_text = _stored_text(fingerprint)
        rows = [_copied_row(record) for record in records]
        with self._backend.transaction() as backend:
            backend.execute(
                "INSERT INTO fingerprints(fingerprint_id, payload) VALUES (?, ?) "
                "ON CONFLICT (fingerprint_id) DO NOTHING",
                (run.fingerprint_id, fingerprint_text),
            )
            cursor = backend.execute(
                "INSERT INTO runs(run_id, kind, label, created_s, completed_s, fingerprint_id) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (run_id) DO NOTHING",
                (run.run_id, run.kind, run.label, run.created_s, run.completed_s, run.fingerprint_id),
            )
            if cursor.rowcount != 1:
                return False  # already there (pushed before, or by another machine just now)
            backend.executemany(_INSERT_RECORD, rows)
        return True

    @staticmethod
    def _insert_run(
        backend: Backend,
        *,
        run_id: str,
        kind: str,
        label: str,
        created_s: float,
        fingerprint_id: str,
        fingerprint_text: str,
    ) -> None:
        backend.execute(
            "INSERT INTO fingerprints(fingerprint_id, payload) VALUES (?, ?) "
            "ON CONFLICT (fingerprint_id) DO NOTHING",
            (fingerprint_id, fingerprint_text),
        )
        try:
            backend.execute(
                "INSERT INTO runs(run_id, kind, label, created_s, completed_s, fingerprint_id) "
                "VALUES (?, ?, ?, ?, NULL, ?)",
                (run_id, kind, label, created_s, fingerprint_id),
            )
        except backend.driver_errors() as error:
            if backend.is_unique_violation(error):
                raise _RunIdTakenError(run_id) from None
            raise

    @staticmethod
    def _insert_records(
        backend: Backend,
        *,
        run_id: str,
        kind: str,
        records: Sequence[NewRecord],
        texts: Sequence[str],
        fingerprint_id: str,
        created_s: float,
    ) -> None:
        backend.executemany(
            _INSERT_RECORD,
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
        self,
        *,
        kind: str | None = None,
        limit: int | None = None,
        include_incomplete: bool = False,
        where: Sequence[str | Condition] = (),
    ) -> list[RunSummary]:
        """Runs, newest first; incomplete ones only when ``include_incomplete``.

        ``where`` holds ``key=value`` conditions on the records' payloads (a run matches when
        one of its records matches them all), ``env.KEY=value`` on the run's environment and
        ``kind=``/``label=`` on the run (see :mod:`lightspeed.store.query`).
        """
        self.check_kind_filter(kind)
        clauses, parameters = _run_filters(kind=kind, include_incomplete=include_incomplete)
        more, values = run_filters(self.backend, _conditions(where), text_payloads=self._text_payloads)
        return self._runs(clauses + more, parameters + values, limit)

    @property
    def _text_payloads(self) -> bool:
        """Whether payload columns are still TEXT on PostgreSQL (schema 2, read without migrating)."""
        return self.backend == "postgresql" and self._schema < 3

    def kinds(self) -> list[str]:
        """The kinds of the runs in this store, sorted."""
        return sorted(str(row[0]) for row in self._read("SELECT DISTINCT kind FROM runs"))

    def check_kind_filter(self, kind: str | None) -> None:
        """A kind to filter by must be one lightspeed writes or one in the store: a typo
        (``Benchmark``) would otherwise match nothing, silently."""
        if kind is None or kind in KNOWN_KINDS:
            return
        present = self.kinds()
        if kind not in present:
            choices = ", ".join(sorted({*KNOWN_KINDS, *present}))
            raise UserInputError(
                f"kind {kind!r} is not a kind of run in {self._where()}; use one of {choices}"
            )

    def _runs(self, clauses: list[str], parameters: list[Any], limit: int | None) -> list[RunSummary]:
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

    def is_empty(self) -> bool:
        """Whether the store holds no run at all (complete or not)."""
        return not self._read("SELECT 1 FROM runs LIMIT 1")

    def run(self, run_id: str) -> RunSummary:
        """One run by id, a unique id prefix, or ``latest``."""
        if run_id == "latest":
            found = self.runs(limit=1)
            if not found:
                raise UserInputError(self._no_complete_run())
            return found[0]
        # substr() rather than LIKE: a run id may hold '_' or '%', which LIKE would treat as wildcards
        matches = self._runs(["substr(u.run_id, 1, ?) = ?"], [len(run_id), run_id], limit=None)
        exact = [run for run in matches if run.run_id == run_id]
        if exact:
            return exact[0]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise UserInputError(f"no run {run_id!r} in {self._where()}; see 'lightspeed results list'")
        names = ", ".join(run.run_id for run in matches[:5])
        first = "first 5: " if len(matches) > 5 else ""
        raise UserInputError(
            f"run id prefix {run_id!r} matches {len(matches)} runs ({first}{names}); give more of it "
            "('lightspeed results list' shows the ids)"
        )

    def select_runs(self, run_ids: Sequence[str] | None, kind: str | None) -> list[RunSummary]:
        """The runs a push copies, complete or not: every run (oldest first), or the ``run_ids``
        named (ids, unique prefixes, ``latest``), of ``kind`` when given. A run named that is
        not of ``kind`` is a :class:`UserInputError`: both filters apply, none is ignored."""
        if not run_ids:
            runs = self.runs(kind=kind, include_incomplete=True)
            return sorted(runs, key=lambda run: (run.created_s, run.run_id))
        chosen = {run.run_id: run for run in (self.run(run_id) for run_id in run_ids)}
        if kind is not None:
            self.check_kind_filter(kind)
            other = [run for run in chosen.values() if run.kind != kind]
            if other:
                named = ", ".join(f"{run.run_id} ({run.kind})" for run in other)
                raise UserInputError(
                    f"--kind {kind} and the runs named disagree: {named} not of kind {kind}; nothing "
                    "was pushed; fix: drop --kind, or name only runs of that kind"
                )
        return list(chosen.values())

    def has_run(self, run_id: str) -> bool:
        """Whether a run with exactly this id exists (complete or not)."""
        return bool(self._read("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)))

    def records(
        self,
        *,
        run_id: str | None = None,
        kind: str | None = None,
        name: str | None = None,
        metric: str | None = None,
        limit: int | None = None,
        include_incomplete: bool = False,
        where: Sequence[str | Condition] = (),
    ) -> list[StoredRecord]:
        """Records matching every filter given, oldest first (exact matches; ``where`` as in
        :meth:`runs`, each record matched on its own payload)."""
        self.check_kind_filter(kind)
        clauses, parameters = _run_filters(kind=None, include_incomplete=include_incomplete)
        for condition in _conditions(where):
            if condition.scope == "run":
                clauses.append(f"u.{condition.path[0]} = ?")  # a name from RUN_COLUMNS, not input
                parameters.append(condition.value)
                continue
            if condition.scope == "fingerprint":
                sql, values = payload_match(
                    self.backend, "f.payload", condition, text_payloads=self._text_payloads
                )
            else:
                sql, values = record_or_run_match(self.backend, condition, text_payloads=self._text_payloads)
            clauses.append(sql)
            parameters.extend(values)
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
        return [_stored_record(row, schema=self._schema) for row in self._read(sql, parameters)]

    def fingerprint(self, fingerprint_id: str) -> StoredJson:
        """The environment stored under ``fingerprint_id``: a JSON object, or whatever else was
        stored (a string for text that is not JSON), returned whole."""
        rows = self._read("SELECT payload FROM fingerprints WHERE fingerprint_id = ?", (fingerprint_id,))
        if not rows:
            raise UserInputError(f"no environment fingerprint {fingerprint_id!r} in {self._where()}")
        return _json(rows[0][0])

    def schema_version(self) -> int:
        """The schema version of this store: :data:`SCHEMA_VERSION` once opened by a writer; a store
        opened for reading keeps the version it has."""
        return self._schema


def record_content(record: StoredRecord) -> tuple[Any, ...]:
    """What a copy of ``record`` into another store holds (all but the record id): two stores hold
    the same run when these agree."""
    return _copied_row(record)


def _stored_text(value: StoredJson) -> str:
    """A stored JSON value as the text to store again, whole: JSON when it is JSON; a value holding
    NaN or Infinity (not JSON) as a JSON string of its text, as migration 3 keeps it."""
    try:
        return json.dumps(value, sort_keys=True, allow_nan=False)
    except ValueError:
        return json.dumps(json.dumps(value, sort_keys=True))


def _copied_row(record: StoredRecord) -> tuple[Any, ...]:
    payload = _stored_text(record.stored_payload)
    return (
        record.run_id,
        record.kind,
        record.created_s,
        record.name,
        record.metric,
        _finite_or_none(record.value),
        record.unit,
        _finite_or_none(record.sol),
        record.fingerprint_id,
        payload,
    )


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


def _conditions(where: Sequence[str | Condition]) -> tuple[Condition, ...]:
    texts = [item for item in where if isinstance(item, str)]
    return (*parse_conditions(texts), *(item for item in where if isinstance(item, Condition)))


def _json(column: object) -> StoredJson:
    """A payload column's value (JSON text on SQLite; PostgreSQL's JSONB is fetched as text too).

    Text that is not JSON (hand-edited, damaged) is returned whole, as the string it is: what
    migration 3 keeps it as on PostgreSQL. Nothing is lost; readers that need an object say so.
    """
    text = column if isinstance(column, str) else str(column)  # a driver's own type: by its text
    try:
        loaded: StoredJson = json.loads(text)
    except ValueError:
        return text
    return loaded


def _run_summary(row: tuple[Any, ...]) -> RunSummary:
    fingerprint = _json(row[7])
    host_name = fingerprint.get("host_name", "") if isinstance(fingerprint, dict) else ""
    return RunSummary(
        run_id=row[0],
        kind=row[1],
        label=row[2],
        created_s=row[3],
        completed_s=row[4],
        num_records=int(row[5]),
        fingerprint_id=row[6],
        host_name=str(host_name),
    )


def _stored_record(row: tuple[Any, ...], *, schema: int) -> StoredRecord:
    name, payload = row[4], _json(row[11])
    if schema < 2 and row[2] == "benchmark" and isinstance(payload, dict):
        split = split_benchmark_size(payload)  # a schema-1 store read without migrating it
        if split is not None:
            payload, name = split
    return StoredRecord(
        record_id=int(row[0]),
        run_id=row[1],
        kind=row[2],
        created_s=row[3],
        name=name,
        metric=row[5],
        value=row[6],
        unit=row[7],
        sol=row[8],
        fingerprint_id=row[9],
        stored_fingerprint=_json(row[10]),
        stored_payload=payload,
    )


def open_store(
    location: str | Path | StoreLocation | None = None,
    *,
    create: bool = True,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> ResultsStore:
    """Open (migrating if needed) the results store at ``location``; create it only if ``create``.

    ``location`` is a file path, a ``postgresql://`` URL or a ``sqlite://``
    URL; default ``$LIGHTSPEED_STORE``, else ``$LIGHTSPEED_HOME/results.sqlite``
    (see :mod:`lightspeed.store.location`). Code that only reads passes
    ``create=False``: a missing store (a SQLite file that is not there, a
    database without lightspeed's tables) is then a
    :class:`~lightspeed.store.backends.StoreMissingError` and nothing is
    created; the store is opened for reading only and never changed (no
    pragma, no migration: an older schema is read as it is). A database that
    is not a lightspeed store is refused before anything touches it. A store
    this process may not write is opened read-only (reads work; a write says
    it is read-only). A store that is created is logged at
    INFO level with its location. ``timeout_s`` is how long a writer waits for
    another's lock (and, on PostgreSQL, for the connection).
    """
    where = location if isinstance(location, StoreLocation) else store_location(location)
    create = create or str(where.path) == MEMORY_STORE  # an in-memory store leaves nothing behind
    backend = connect(where, timeout_s=timeout_s, create=create)
    try:
        found, schema = _prepare(backend, create=create)
    except BaseException:
        backend.close()
        raise
    return ResultsStore(backend, schema=schema, created=create and found == 0)


def _prepare(backend: Backend, *, create: bool) -> tuple[int, int]:
    """Check that the store is lightspeed's, then migrate it, except one opened for reading or
    that cannot be written (read as it is). Returns (the version found, the version now)."""
    try:
        found = current_version(backend)  # reads only; refuses another program's database
    except backend.driver_errors() as error:
        raise backend.describe(error, read=True) from None
    refuse_newer(backend, found)
    if not create or backend.read_only:
        if found == 0:
            fix = (
                "check LIGHTSPEED_STORE; it is created by the first write to it "
                "('lightspeed results push --to URL', or any command that saves results)"
            )
            where = backend.location.display
            raise StoreMissingError(
                f"results store {where} holds no lightspeed results yet (an empty database); fix: {fix}"
            )
        return found, found  # read as it is: an older schema is not migrated by a reader
    backend.prepare_for_writing()
    migrate(backend)
    return found, SCHEMA_VERSION
