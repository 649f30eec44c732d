"""The two database backends of the results store: SQLite (stdlib) and PostgreSQL (psycopg 3).

Both run the same SQL, written once with ``?`` placeholders (psycopg's ``%s``
is substituted for PostgreSQL); what differs lives here: how to connect, how
a write transaction takes its lock, the column types of the DDL, and how a
driver error becomes a :class:`~lightspeed.errors.StoreError` that says what
happened and how to fix it. Transactions are explicit: a connection is in
autocommit mode and :meth:`Backend.transaction` opens and ends each one.

The PostgreSQL driver is the ``postgres`` extra (``pip install
'lightspeed[postgres]'``), imported only when a ``postgresql://`` store is
opened.
"""

from __future__ import annotations

import contextlib
import sqlite3
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Final

from lightspeed.errors import StoreError
from lightspeed.extras import import_extra
from lightspeed.store.location import StoreLocation

# Serialises schema migrations between processes and machines (pg_advisory_xact_lock key).
MIGRATION_LOCK_KEY: Final = 0x6C5F_5354_4F52  # "l_STOR"
_NOTHING_SAVED: Final = "nothing was saved by this call"


class Backend(ABC):
    """One open connection to a store; subclasses adapt one database."""

    name: str = ""
    # DDL words: a float column, an auto-numbered primary key
    real_type: str = ""
    identity_type: str = ""
    # appended to a SELECT that must hold a run row steady until the transaction ends
    share_lock: str = ""

    def __init__(self, location: StoreLocation) -> None:
        self.location = location

    # -- statements ----------------------------------------------------------

    @abstractmethod
    def execute(self, sql: str, parameters: Sequence[Any] = ()) -> Any:
        """Run one statement (``?`` placeholders) and return the driver's cursor."""

    @abstractmethod
    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run one statement for each row of parameters."""

    def read(self, sql: str, parameters: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """All rows of a query; a driver error becomes a :class:`StoreError`."""
        try:
            return [tuple(row) for row in self.execute(sql, parameters).fetchall()]
        except self.driver_errors() as error:
            raise self.describe(error, read=True) from None

    @contextmanager
    def transaction(self, *, exclusive: bool = False) -> Iterator[Backend]:
        """One write transaction: committed at the end of the block, rolled back on any error.

        ``exclusive`` also serialises it against every other migrating writer.
        A driver error becomes a :class:`StoreError`; other errors propagate
        after the rollback.
        """
        try:
            self._begin(exclusive=exclusive)
        except self.driver_errors() as error:
            raise self.describe(error) from None
        try:
            yield self
            self.execute("COMMIT")
        except self.driver_errors() as error:
            self._rollback()
            raise self.describe(error) from None
        except BaseException:
            self._rollback()
            raise

    @abstractmethod
    def _begin(self, *, exclusive: bool) -> None:
        """Start a write transaction (holding the migration lock when ``exclusive``)."""

    @abstractmethod
    def _rollback(self) -> None:
        """Roll the open transaction back, if any."""

    @abstractmethod
    def close(self) -> None:
        """Close the connection (idempotent)."""

    # -- errors --------------------------------------------------------------

    @abstractmethod
    def driver_errors(self) -> type[Exception] | tuple[type[Exception], ...]:
        """The driver's base error class(es)."""

    @abstractmethod
    def is_unique_violation(self, error: BaseException) -> bool:
        """Whether ``error`` is a primary-key or unique-constraint violation."""

    @abstractmethod
    def describe(self, error: BaseException, *, read: bool = False) -> StoreError:
        """A one-line :class:`StoreError` for a driver error."""

    def store_error(self, problem: str, fix: str, *, read: bool = False) -> StoreError:
        """``results store <where> <problem>; nothing was saved by this call; fix: <fix>``."""
        saved = "" if read else f"; {_NOTHING_SAVED}"
        text = f"results store {self.location.display} {problem}{saved}; fix: {fix}"
        return StoreError(self.location.scrub(text))


class SqliteBackend(Backend):
    """A SQLite file in write-ahead-log mode; writers queue on its lock for ``timeout_s``."""

    name = "sqlite"
    real_type = "REAL"
    identity_type = "INTEGER PRIMARY KEY AUTOINCREMENT"
    share_lock = ""  # BEGIN IMMEDIATE already holds the whole database

    def __init__(self, location: StoreLocation, *, timeout_s: float) -> None:
        super().__init__(location)
        assert location.path is not None, "a SQLite location has a path"
        path = location.path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise StoreError(
                f"cannot create the results store folder {path.parent} ({error.strerror}); "
                "fix: set LIGHTSPEED_HOME to a writable folder"
            ) from None
        try:
            # isolation_level=None: transactions are explicit (BEGIN IMMEDIATE in _begin).
            self.connection = sqlite3.connect(str(path), timeout=timeout_s, isolation_level=None)
        except sqlite3.Error as error:
            raise self.describe(error) from None
        try:
            self.connection.execute("PRAGMA journal_mode=WAL")
            self.connection.execute("PRAGMA synchronous=NORMAL")
            self.connection.execute("PRAGMA foreign_keys=ON")
        except sqlite3.Error as error:
            self.connection.close()
            raise self.describe(error) from None

    def execute(self, sql: str, parameters: Sequence[Any] = ()) -> Any:
        return self.connection.execute(sql, tuple(parameters))

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self.connection.executemany(sql, rows)

    def _begin(self, *, exclusive: bool) -> None:
        self.connection.execute("BEGIN IMMEDIATE")  # every SQLite writer holds the one write lock

    def _rollback(self) -> None:
        if self.connection.in_transaction:
            self.connection.execute("ROLLBACK")

    def close(self) -> None:
        self.connection.close()

    def driver_errors(self) -> type[Exception]:
        return sqlite3.Error

    def is_unique_violation(self, error: BaseException) -> bool:
        return isinstance(error, sqlite3.IntegrityError) and "UNIQUE" in str(error).upper()

    def describe(self, error: BaseException, *, read: bool = False) -> StoreError:
        lowered = str(error).lower()
        if "full" in lowered:
            return self.store_error(
                "is full (no space left on the disk, or its size limit reached)",
                "free disk space or set LIGHTSPEED_HOME to a folder on another disk",
                read=read,
            )
        if "readonly" in lowered or "read-only" in lowered or "permission" in lowered:
            return self.store_error(
                "cannot be written (read-only location or missing permission)",
                "make the folder writable or set LIGHTSPEED_HOME to a writable folder",
                read=read,
            )
        if "locked" in lowered or "busy" in lowered:
            return self.store_error(
                "stayed locked by another writer past the timeout",
                "retry when the other writer finishes, or raise the timeout",
                read=read,
            )
        if "not a database" in lowered or "malformed" in lowered:
            return self.store_error(
                "is not a readable lightspeed store (corrupt or another kind of file)",
                "move the file away; a new store is created in its place",
                read=read,
            )
        return self.store_error(f"failed ({error})", "check the path and the disk", read=read)


def _import_psycopg() -> Any:
    return import_extra("psycopg", extra="postgres", purpose="a postgresql:// results store")


class PostgresBackend(Backend):
    """A PostgreSQL database; each write is one transaction, many writers commit concurrently.

    ``timeout_s`` bounds the connection attempt and how long a statement
    waits for a lock (``lock_timeout``).
    """

    name = "postgresql"
    real_type = "DOUBLE PRECISION"
    identity_type = "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY"
    share_lock = " FOR SHARE"

    def __init__(self, location: StoreLocation, *, timeout_s: float) -> None:
        super().__init__(location)
        assert location.url is not None, "a PostgreSQL location has a URL"
        self._psycopg = _import_psycopg()
        self._sql: dict[str, str] = {}
        try:
            self.connection = self._psycopg.connect(
                location.url, autocommit=True, connect_timeout=max(1, round(timeout_s))
            )
        except self._psycopg.Error as error:
            raise self.describe(error) from None
        except ValueError as error:  # a malformed connection string
            raise self.store_error(
                f"has a URL libpq cannot read ({location.scrub(str(error))})",
                "use postgresql://user@host:5432/database",
            ) from None
        try:
            self.connection.execute(
                "SELECT set_config('lock_timeout', %s, false)", (f"{int(timeout_s * 1000)}ms",)
            )
        except self._psycopg.Error as error:
            self.connection.close()
            raise self.describe(error) from None

    def _convert(self, sql: str) -> str:
        converted = self._sql.get(sql)
        if converted is None:
            # Our SQL is constant text with no '%' and no '?' inside literals.
            converted = self._sql[sql] = sql.replace("?", "%s")
        return converted

    def execute(self, sql: str, parameters: Sequence[Any] = ()) -> Any:
        return self.connection.execute(self._convert(sql), tuple(parameters) or None)

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if rows:
            with self.connection.cursor() as cursor:
                cursor.executemany(self._convert(sql), rows)

    def _begin(self, *, exclusive: bool) -> None:
        self.connection.execute("BEGIN")
        if exclusive:
            self.connection.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK_KEY,))

    def _rollback(self) -> None:
        if self.connection.closed:
            return
        with contextlib.suppress(self._psycopg.Error):  # a broken connection: the server rolls back
            self.connection.execute("ROLLBACK")

    def close(self) -> None:
        self.connection.close()

    def driver_errors(self) -> type[Exception]:
        error_class: type[Exception] = self._psycopg.Error
        return error_class

    def is_unique_violation(self, error: BaseException) -> bool:
        return getattr(error, "sqlstate", None) == "23505"

    def describe(self, error: BaseException, *, read: bool = False) -> StoreError:
        state = str(getattr(error, "sqlstate", None) or "")
        first_line = self.location.scrub(str(error).strip().splitlines()[0] if str(error).strip() else "")
        for prefix, problem, fix in _POSTGRES_PROBLEMS:
            if state.startswith(prefix):
                return self.store_error(f"{problem} ({first_line})", fix, read=read)
        if not state:  # a connection error: libpq gives no SQLSTATE, only its message
            known = _connection_problem(first_line)
            if known is not None:
                return self.store_error(f"{known[0]} ({first_line})", known[1], read=read)
            return self.store_error(
                f"cannot be reached ({first_line})",
                "check the host, port and that the server runs; set LIGHTSPEED_STORE to the right URL",
                read=read,
            )
        return self.store_error(f"failed (SQLSTATE {state}: {first_line})", "see the server's log", read=read)


# SQLSTATE prefix (class or code), what it means for the store, and the fix.
_POSTGRES_PROBLEMS: Final = (
    ("08", "cannot be reached", "check the host, port and network, and that the server runs"),
    ("28", "refused the login", "check the user and password (PGPASSWORD or ~/.pgpass, not the URL)"),
    ("3D000", "names a database that does not exist", "create it (createdb NAME) or fix the URL"),
    ("53", "is full (no space or memory left on the server)", "free space on the database server"),
    ("42501", "cannot be written (missing permission)", "grant the user CREATE and INSERT on the database"),
    ("25006", "cannot be written (a read-only server or standby)", "point LIGHTSPEED_STORE at the primary"),
    ("55P03", "stayed locked by another writer past the timeout", "retry, or raise the timeout"),
    ("57014", "took longer than the timeout", "retry, or raise the timeout"),
    ("40", "rolled the transaction back (deadlock or serialization)", "retry the command"),
)


def _connection_problem(text: str) -> tuple[str, str] | None:
    """(problem, fix) for a libpq connection error, which carries no SQLSTATE, from its message."""
    missing = " does not exist" in text
    if "authentication failed" in text or "no password supplied" in text or ("role " in text and missing):
        return _POSTGRES_PROBLEMS[1][1], _POSTGRES_PROBLEMS[1][2]
    if "database " in text and missing:
        return _POSTGRES_PROBLEMS[2][1], _POSTGRES_PROBLEMS[2][2]
    return None


def connect(location: StoreLocation, *, timeout_s: float) -> Backend:
    """Open the backend for ``location``."""
    if location.backend == "postgresql":
        return PostgresBackend(location, timeout_s=timeout_s)
    return SqliteBackend(location, timeout_s=timeout_s)
