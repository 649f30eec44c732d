"""Versioned schema migrations, the same on SQLite and PostgreSQL.

``schema_version(version, applied_s, description)`` holds one row per applied
migration; the store's version is the largest. Opening a store applies the
missing migrations in one transaction that also holds the migration lock
(SQLite's write lock; ``pg_advisory_xact_lock`` on PostgreSQL), so many
machines opening a fresh shared store at once create it exactly once, and a
failed migration leaves the previous version intact. A store newer than this
lightspeed is refused rather than misread. SQLite files also keep ``PRAGMA
user_version`` equal to the version, which is how lightspeed before schema 2
recognised (and refuses) a newer file.

Migrations are frozen: once released, one never changes (a later migration
corrects it); data migrations carry their own copy of what they need rather
than importing code that may change.

1. the tables (fingerprints, runs, records) and their indexes;
2. benchmark records: the swept ``size`` (FLOP per call in ``gemm``, bytes in
   ``membw``/``copy``/``collectives``, operations per sample in ``launch``) is
   split into ``flop_per_call``, ``size_bytes`` and ``num_ops_per_sample`` in
   the payload (``size`` kept as an alias), and the record name (the key runs
   are compared by) carries the unit: ``membw stream triad fp64 134217728 B``;
3. payloads queryable: on PostgreSQL the ``payload`` columns become JSONB (a
   payload that is not JSON is kept whole as a JSON string, so nothing is
   lost), with a GIN index for ``results list --where`` and expression indexes
   on the fields teams filter by (``system``, ``model``, ``git_commit``); on
   SQLite (TEXT read by JSON1) the same expression indexes, after the same
   keeping of non-JSON payloads as JSON strings (an expression index refuses
   a row that is not JSON; this step, added after release, changes nothing
   in a store that migrated, since such a store held no such row). Both get
   ``runs(kind)``.

A database that is not a lightspeed store (another program's SQLite file, a
PostgreSQL database with its own ``runs`` table) is refused by
:func:`current_version` before anything is written to it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from lightspeed.errors import StoreError
from lightspeed.store.backends import Backend, SqliteBackend


@dataclass(frozen=True)
class Migration:
    """One schema step: DDL templates (``{real}``, ``{identity}``) and an optional data step."""

    version: int
    description: str
    statements: tuple[str, ...] = ()
    data: Callable[[Backend], None] | None = None


_SCHEMA_VERSION_TABLE: Final = """
CREATE TABLE IF NOT EXISTS schema_version (
    version INTEGER PRIMARY KEY,
    applied_s {real} NOT NULL,
    description TEXT NOT NULL
)"""

_TABLES: Final = (
    """CREATE TABLE IF NOT EXISTS fingerprints (
    fingerprint_id TEXT PRIMARY KEY,
    payload TEXT NOT NULL
)""",
    """CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    label TEXT NOT NULL,
    created_s {real} NOT NULL,
    completed_s {real},
    fingerprint_id TEXT NOT NULL REFERENCES fingerprints(fingerprint_id)
)""",
    """CREATE TABLE IF NOT EXISTS records (
    record_id {identity},
    run_id TEXT NOT NULL REFERENCES runs(run_id),
    kind TEXT NOT NULL,
    created_s {real} NOT NULL,
    name TEXT NOT NULL,
    metric TEXT NOT NULL,
    value {real},
    unit TEXT NOT NULL,
    sol {real},
    fingerprint_id TEXT NOT NULL REFERENCES fingerprints(fingerprint_id),
    payload TEXT NOT NULL
)""",
    "CREATE INDEX IF NOT EXISTS records_by_run ON records(run_id)",
    "CREATE INDEX IF NOT EXISTS records_by_kind_name ON records(kind, name)",
)

# -- migration 2: the benchmark size split (frozen copy of the rules at schema 2) --

_SIZE_FIELD_BY_SUITE: Final = {
    "gemm": "flop_per_call",
    "membw": "size_bytes",
    "copy": "size_bytes",
    "collectives": "size_bytes",
    "launch": "num_ops_per_sample",
}
_SIZE_UNIT: Final = {"flop_per_call": "FLOP", "size_bytes": "B", "num_ops_per_sample": "ops"}
_SIZE_FIELDS: Final = tuple(_SIZE_UNIT)


def split_benchmark_size(payload: dict[str, Any]) -> tuple[dict[str, Any], str] | None:
    """The schema-2 payload and record name of a schema-1 benchmark payload, or ``None`` to keep it.

    >>> payload, name = split_benchmark_size({"suite": "membw", "name": "stream triad",
    ...                                       "dtype": "fp64", "size": 134217728})
    >>> (payload["size_bytes"], payload["flop_per_call"], name)
    (134217728, None, 'membw stream triad fp64 134217728 B')
    """
    suite, size = payload.get("suite"), payload.get("size")
    field = _SIZE_FIELD_BY_SUITE.get(suite) if isinstance(suite, str) else None
    if field is None or isinstance(size, bool) or not isinstance(size, int | float):
        return None
    if any(payload.get(name) is not None for name in _SIZE_FIELDS):
        return None  # already split
    updated = dict(payload)
    for name in _SIZE_FIELDS:
        updated[name] = int(size) if name == field else None
    name_text = str(payload.get("name", "")).removeprefix(f"{suite} ")
    parts = [suite, name_text, str(payload.get("dtype") or ""), f"{int(size)} {_SIZE_UNIT[field]}"]
    return updated, " ".join(part for part in parts if part)


def _split_benchmark_sizes(backend: Backend) -> None:
    rows = backend.execute("SELECT record_id, payload FROM records WHERE kind = 'benchmark'").fetchall()
    updates: list[tuple[str, str, int]] = []
    for record_id, text in rows:
        try:
            payload = json.loads(text)
        except ValueError:
            continue  # not ours to repair: readers report it
        split = split_benchmark_size(payload) if isinstance(payload, dict) else None
        if split is not None:
            new_payload, name = split
            updates.append((name, json.dumps(new_payload, sort_keys=True, allow_nan=False), record_id))
    backend.executemany("UPDATE records SET name = ?, payload = ? WHERE record_id = ?", updates)


# -- migration 3: payloads as JSONB on PostgreSQL, indexes on the fields people filter by --

INDEXED_PAYLOAD_FIELDS: Final = ("system", "model", "git_commit")


def _queryable_payloads(backend: Backend) -> None:
    backend.execute("CREATE INDEX IF NOT EXISTS runs_by_kind ON runs(kind)")
    if isinstance(backend, SqliteBackend):
        for table, key in (("records", "record_id"), ("fingerprints", "fingerprint_id")):
            _keep_non_json_as_strings(backend, table, key)
        for field in INDEXED_PAYLOAD_FIELDS:  # constant names, not input
            expression = f"json_extract(payload, '$.{field}')"
            backend.execute(f"CREATE INDEX IF NOT EXISTS records_by_{field} ON records({expression})")
        return
    for table, key in (("records", "record_id"), ("fingerprints", "fingerprint_id")):
        _keep_non_json_as_strings(backend, table, key)
        backend.execute(f"ALTER TABLE {table} ALTER COLUMN payload TYPE JSONB USING payload::jsonb")
    backend.execute(
        "CREATE INDEX IF NOT EXISTS records_payload ON records USING GIN (payload jsonb_path_ops)"
    )
    for field in INDEXED_PAYLOAD_FIELDS:
        backend.execute(f"CREATE INDEX IF NOT EXISTS records_by_{field} ON records ((payload ->> '{field}'))")


def _keep_non_json_as_strings(backend: Backend, table: str, key: str) -> None:
    """Rows whose payload text is not JSON (hand-edited, damaged) become a JSON string of that
    exact text, so the conversion to JSONB neither fails nor loses them."""
    rows = backend.execute(f"SELECT {key}, payload FROM {table}").fetchall()  # constant names
    updates: list[tuple[str, Any]] = []
    for row_key, text in rows:
        try:
            json.loads(text, parse_constant=_refuse_constant)
        except ValueError:
            updates.append((json.dumps(text), row_key))
    backend.executemany(f"UPDATE {table} SET payload = ? WHERE {key} = ?", updates)


def _refuse_constant(name: str) -> Any:
    """NaN and Infinity parse in Python's json but not in PostgreSQL's."""
    raise ValueError(f"{name} is not JSON")


MIGRATIONS: Final = (
    Migration(1, "fingerprints, runs and records tables", statements=_TABLES),
    Migration(
        2,
        "benchmark size split into flop_per_call / size_bytes / num_ops_per_sample; unit in the name",
        data=_split_benchmark_sizes,
    ),
    Migration(
        3,
        "payloads as JSONB on PostgreSQL; indexes on runs.kind and payload system, model, git_commit",
        data=_queryable_payloads,
    ),
)
SCHEMA_VERSION: Final = MIGRATIONS[-1].version


def _ddl(backend: Backend, template: str) -> str:
    return template.format(real=backend.real_type, identity=backend.identity_type)


def _legacy_version(backend: Backend) -> int:
    """The version of a store without a schema_version table: SQLite's user_version (0 or 1)."""
    if isinstance(backend, SqliteBackend):
        return int(backend.execute("PRAGMA user_version").fetchone()[0])
    return 0


STORE_TABLES: Final = ("fingerprints", "runs", "records", "schema_version")


def _tables(backend: Backend) -> set[str]:
    if isinstance(backend, SqliteBackend):
        sql = "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite%'"
    else:
        # pg_tables, not to_regclass(): a catalog-cache lookup can miss a table that another
        # migrating process committed while this one waited for the advisory lock.
        sql = "SELECT tablename FROM pg_catalog.pg_tables WHERE schemaname = current_schema()"
    return {str(row[0]) for row in backend.execute(sql).fetchall()}


def current_version(backend: Backend) -> int:
    """The schema version of the open store (0 for an empty database); reads only.

    A database that holds tables but is not a lightspeed store is a
    :class:`StoreError` saying so (on SQLite any table: the file is another
    program's; on PostgreSQL, shared with others, a table named like one of
    the store's).
    """
    tables = _tables(backend)  # one look: another process may create the tables meanwhile
    if "schema_version" in tables:
        found = backend.execute("SELECT MAX(version) FROM schema_version").fetchone()[0]
        return int(found or 0)
    ours = {"fingerprints", "runs", "records"}
    version = _legacy_version(backend)
    if (version and ours <= tables) or not tables:
        return version  # a schema-1 SQLite store; or an empty database
    foreign = sorted(tables if isinstance(backend, SqliteBackend) else tables & ours)
    if not foreign:
        return 0  # a PostgreSQL database holding other programs' tables only: the store goes beside them
    raise backend.store_error(
        f"is not a lightspeed store: a {backend.name} database with tables {', '.join(foreign)} "
        "that lightspeed did not create",
        "point LIGHTSPEED_STORE (or --to, --from) at a lightspeed store or a new path; "
        "lightspeed leaves this database as it is",
        read=True,
    )


def refuse_newer(backend: Backend, version: int) -> None:
    """Refuse a store whose schema is newer than this lightspeed (it would be misread)."""
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"results store {backend.location.display} has schema version {version}, newer than this "
            f"lightspeed ({SCHEMA_VERSION}); fix: upgrade lightspeed or use another store"
        )


def migrate(backend: Backend) -> int:
    """Bring the store to :data:`SCHEMA_VERSION`; return the version it had before."""
    try:
        found = current_version(backend)
    except backend.driver_errors() as error:
        raise backend.describe(error, read=True) from None
    refuse_newer(backend, found)
    if found == SCHEMA_VERSION:
        return found  # the common case takes no lock
    with backend.transaction(exclusive=True):
        found = current_version(backend)  # another process may have migrated meanwhile
        refuse_newer(backend, found)
        backend.execute(_ddl(backend, _SCHEMA_VERSION_TABLE))
        if found and not backend.execute("SELECT 1 FROM schema_version").fetchall():
            _record(backend, found, "applied before the schema_version table existed")
        for migration in MIGRATIONS:
            if migration.version > found:
                _apply(backend, migration)
        if isinstance(backend, SqliteBackend):
            backend.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    return found


def _apply(backend: Backend, migration: Migration) -> None:
    for statement in migration.statements:
        backend.execute(_ddl(backend, statement))
    if migration.data is not None:
        migration.data(backend)
    _record(backend, migration.version, migration.description)


def _record(backend: Backend, version: int, description: str) -> None:
    backend.execute(
        "INSERT INTO schema_version(version, applied_s, description) VALUES (?, ?, ?)",
        (version, time.time(), description),
    )


def applied_migrations(backend: Backend) -> list[tuple[int, float, str]]:
    """``(version, applied_s, description)`` of every applied migration, oldest first."""
    rows = backend.read("SELECT version, applied_s, description FROM schema_version ORDER BY version")
    return [(int(version), float(applied), str(text)) for version, applied, text in rows]
