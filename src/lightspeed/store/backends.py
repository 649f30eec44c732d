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
import logging
import os
import sqlite3
import stat
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final
from urllib.parse import quote

from lightspeed.errors import StoreError
from lightspeed.extras import import_extra
from lightspeed.files import excerpt, kind_of, name_problem
from lightspeed.paths import HOME_ENVIRONMENT_VARIABLE, configured_path
from lightspeed.store.location import STORE_ENVIRONMENT_VARIABLE, StoreLocation, default_store_path

_LOG = logging.getLogger(__name__)
MEMORY_STORE: Final = ":memory:"  # a SQLite store that lives in memory only (nothing on disk)
_HOW_TO_CREATE: Final = (
    "check the path or LIGHTSPEED_STORE; a store is created by the commands that save results "
    "('lightspeed bench', 'lightspeed monitor run', 'lightspeed tour') or by "
    "'lightspeed results push --to PATH_OR_URL'"
)


class StoreMissingError(StoreError):
    """A store that a reading command was pointed at does not exist (nothing is created for it)."""


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
    # opened without write access (a read-only SQLite file or folder)
    read_only: bool = False

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

    def prepare_for_writing(self) -> None:
        """Settings a writer needs, applied once the store is known to be lightspeed's (none here)."""
        return  # PostgreSQL needs none

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
    """A SQLite file in write-ahead-log mode; writers queue on its lock for ``timeout_s``.

    Opened without ``create`` (a command that only reads) the file is never changed: it is
    opened with ``query_only`` (or ``mode=ro`` when this process may not write it), and no
    pragma that writes (the journal mode) is set; a writer sets write-ahead logging in
    :meth:`prepare_for_writing`, after the schema was checked.
    """

    name = "sqlite"
    real_type = "REAL"
    identity_type = "INTEGER PRIMARY KEY AUTOINCREMENT"
    share_lock = ""  # BEGIN IMMEDIATE already holds the whole database

    def __init__(self, location: StoreLocation, *, timeout_s: float, create: bool = True) -> None:
        super().__init__(location)
        assert location.path is not None, "a SQLite location has a path"
        path = location.path
        memory = str(path) == MEMORY_STORE
        exists = memory or _stat_store(location, creating=create) is not None
        if exists and not memory:
            _refuse_special(location)
        if not exists and not create:
            raise StoreMissingError(f"results store {location.display} does not exist; fix: {_HOW_TO_CREATE}")
        # a store this process may not write (file or folder read-only) is opened read-only, so
        # that reading it works and a write says "read-only" rather than failing obscurely
        self.read_only = exists and not memory and not _writable(path)
        self.reading = not create and not memory  # a reading command: nothing may change
        if not exists:
            self._make_folder(path)
        try:
            # isolation_level=None: transactions are explicit (BEGIN IMMEDIATE in _begin).
            self.connection = sqlite3.connect(
                self._target(path),
                timeout=timeout_s,
                isolation_level=None,
                uri=self.reading or self.read_only,
            )
        except sqlite3.Error as error:
            raise self.describe(error, read=self.reading) from None
        try:
            if self.reading and not self.read_only:
                self.connection.execute("PRAGMA query_only=ON")  # no statement of this connection writes
            self.connection.execute("PRAGMA foreign_keys=ON")  # a connection setting: the file is untouched
        except sqlite3.Error as error:
            self.connection.close()
            raise self.describe(error, read=self.reading) from None
        if not exists:
            _LOG.info("created the results store %s", location.display)

    def _target(self, path: Any) -> str:
        """The file to open: a URI that never creates it (``mode=rw``, ``mode=ro``) for a reader."""
        if self.read_only:
            return f"file:{quote(str(path))}?mode=ro"
        if self.reading:
            return f"file:{quote(str(path))}?mode=rw"
        return str(path)

    def prepare_for_writing(self) -> None:
        """Write-ahead logging (readers and one writer at once), set once the file is known to be a
        lightspeed store or empty."""
        if self.read_only or self.reading or str(self.location.path) == MEMORY_STORE:
            return
        try:
            self.connection.execute("PRAGMA journal_mode=WAL")
            self.connection.execute("PRAGMA synchronous=NORMAL")
        except sqlite3.Error as error:
            raise self.describe(error) from None

    @staticmethod
    def _make_folder(path: Path) -> None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise StoreError(
                f"cannot create the results store folder {path.parent} ({error.strerror}); "
                f"fix: {_where_to_store(path)}"
            ) from None

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
        if "not a database" in lowered:
            return self.store_error(
                "is not a readable lightspeed store: not a SQLite database (another kind of file, or a "
                "damaged one)",
                "check the path (LIGHTSPEED_STORE, --to, --from); lightspeed leaves this file as it is",
                read=read,
            )
        if "malformed json" in lowered:
            return self.store_error(
                "holds a payload that is not valid JSON, which SQLite's JSON functions refuse",
                "find it with SELECT record_id FROM records WHERE NOT json_valid(payload), and keep it "
                "whole as a JSON string: UPDATE records SET payload = json_quote(payload) WHERE NOT "
                "json_valid(payload)",
                read=read,
            )
        if "malformed" in lowered:  # "database disk image is malformed": damaged pages
            return self.store_error(
                f"is damaged ({error})",
                "restore it from a backup, or recover its rows with: sqlite3 FILE .recover | sqlite3 NEW",
                read=read,
            )
        if "full" in lowered:
            return self.store_error(
                "is full (no space left on the disk, or its size limit reached)",
                "free disk space or set LIGHTSPEED_HOME to a folder on another disk",
                read=read,
            )
        if "readonly" in lowered or "read-only" in lowered or "permission" in lowered or self.read_only:
            return self.store_error(
                "is read-only (a read-only file or folder, or missing permission)",
                "make the folder writable or set LIGHTSPEED_HOME to a writable folder",
                read=read,
            )
        if "locked" in lowered or "busy" in lowered:
            return self.store_error(
                "stayed locked by another writer past the timeout",
                "retry when the other writer finishes, or raise the timeout",
                read=read,
            )
        return self.store_error(f"failed ({error})", "check the path and the disk", read=read)


def _json_text(data: str | bytes | memoryview) -> str:
    """A JSON(B) value from PostgreSQL as its text (decoded by the store, like SQLite's TEXT)."""
    return data if isinstance(data, str) else bytes(data).decode("utf-8")


def _import_psycopg() -> Any:
    psycopg = import_extra("psycopg", extra="postgres", purpose="a postgresql:// results store")
    # set_json_loads, used per connection
    import_extra("psycopg.types.json", extra="postgres", purpose="a postgresql:// results store")
    return psycopg


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
        # JSONB payloads arrive as their text, as SQLite's do: one decoding path for both
        self._psycopg.types.json.set_json_loads(_json_text, self.connection)
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
    (
        "22P02",  # only --where on a schema-2 store (TEXT payloads, read without migrating) casts
        "holds a payload that is not valid JSON, which --where cannot read before migration 3",
        "migrate the store as a role that may write it (any command that writes to it does, e.g. "
        "'lightspeed results push --to URL'); such payloads are then kept as JSON strings",
    ),
)


def _connection_problem(text: str) -> tuple[str, str] | None:
    """(problem, fix) for a libpq connection error, which carries no SQLSTATE, from its message."""
    missing = " does not exist" in text
    if "authentication failed" in text or "no password supplied" in text or ("role " in text and missing):
        return _POSTGRES_PROBLEMS[1][1], _POSTGRES_PROBLEMS[1][2]
    if "database " in text and missing:
        return _POSTGRES_PROBLEMS[2][1], _POSTGRES_PROBLEMS[2][2]
    return None


def _stat_store(location: StoreLocation, *, creating: bool = False) -> os.stat_result | None:
    """The ``stat`` of a SQLite store's file, ``None`` when nothing is there; a path the system
    refuses by its name (too long, a loop of links) is a :class:`StoreError` naming the variable."""
    assert location.path is not None, "a SQLite location has a path"
    try:
        return location.path.stat()
    except NotADirectoryError:
        raise _under_a_file(location, creating=creating) from None
    except OSError as error:
        problem = name_problem(error)
        if problem is None:
            return None
        raise StoreError(
            f"results store {excerpt(location.display)}: {problem}; fix: {_where_to_store(location.path)}"
        ) from None


def _under_a_file(location: StoreLocation, *, creating: bool) -> StoreError:
    """The error for a SQLite store whose path runs through something that is not a folder
    (``$LIGHTSPEED_HOME`` naming a file): which one, and the variable that chose it; a writer
    (``creating``) says it cannot create the store's folder, a reader names the store."""
    assert location.path is not None, "a SQLite location has a path"
    subject = (
        f"cannot create the results store folder {location.path.parent}"
        if creating
        else f"results store {location.display}"
    )
    blocking = next((folder for folder in location.path.parents if _is_not_folder(folder)), None)
    kind = "a file"
    if blocking is not None:
        with contextlib.suppress(OSError):
            kind = (kind_of(blocking.stat().st_mode) or ("a file", ""))[0]
    where = str(blocking) if blocking is not None else "a folder on its path"
    home = configured_path(HOME_ENVIRONMENT_VARIABLE)
    if home is not None and location.path == default_store_path() and blocking == Path(home).expanduser():
        return StoreError(
            f"{subject}: {HOME_ENVIRONMENT_VARIABLE} {where} is {kind}, not a "
            f"folder; fix: set {HOME_ENVIRONMENT_VARIABLE} to a folder (or {STORE_ENVIRONMENT_VARIABLE} "
            "to the store's file)"
        )
    return StoreError(
        f"{subject}: {where} is {kind}, not a folder; fix: {_where_to_store(location.path, folder='folder')}"
    )


def _is_not_folder(path: Path) -> bool:
    """Whether something other than a folder (or a link to one) is at ``path``."""
    try:
        return not stat.S_ISDIR(path.stat().st_mode)
    except OSError:
        return False


def _refuse_special(location: StoreLocation) -> None:
    """A :class:`StoreError` when the store's path holds a folder, a FIFO, a device or a socket."""
    info = _stat_store(location)
    special = kind_of(info.st_mode) if info is not None else None
    if special is not None:
        raise StoreError(
            f"results store {location.display} is {special[0]}, not a SQLite file; fix: {_HOW_TO_CREATE}"
        )


def _where_to_store(path: Path, *, folder: str = "writable folder") -> str:
    """How to point the store at a path in a ``folder`` (a writable one): the variable that chose
    ``path``."""
    chosen = os.environ.get(STORE_ENVIRONMENT_VARIABLE, "").strip()
    if chosen and Path(chosen).expanduser() == path:
        return f"set {STORE_ENVIRONMENT_VARIABLE} to a path in a {folder}"
    if path == default_store_path():
        return f"set {HOME_ENVIRONMENT_VARIABLE} (or {STORE_ENVIRONMENT_VARIABLE}) to a {folder}"
    return f"give a path in a {folder}"


def _writable(path: Any) -> bool:
    """Whether this process may write the SQLite file and its folder (WAL needs both)."""
    return os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)


def connect(location: StoreLocation, *, timeout_s: float, create: bool = True) -> Backend:
    """Open the backend for ``location`` (a missing SQLite file is created only when ``create``;
    without it the file is opened for reading only and never changed)."""
    if location.backend == "postgresql":
        return PostgresBackend(location, timeout_s=timeout_s)
    return SqliteBackend(location, timeout_s=timeout_s, create=create)
