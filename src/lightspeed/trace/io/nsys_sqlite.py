"""Safe, read-only access to an Nsight Systems SQLite export: header checks, schema, queries.

Exports come from other machines: the file is opened read-only through a
``file:`` URI (``mode=ro``), with ``query_only`` and ``trusted_schema=OFF``
so nothing the file defines can run; only tables (never views) are read, by
name, and every column is looked up by name first. A truncated file is
caught from its header (the page count times the page size must fit in the
file) before SQLite sees it; any other damage becomes a :class:`TraceError`.
"""

from __future__ import annotations

import os
import sqlite3
import struct
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from itertools import chain
from pathlib import Path
from typing import Final

import numpy as np
import numpy.typing as npt

from lightspeed.errors import TraceError
from lightspeed.files import open_input
from lightspeed.trace.io.formats import SQLITE_MAGIC
from lightspeed.units import GIB

HEADER_BYTES: Final = 100
FETCH_ROWS: Final = 1 << 16
_FIX_EXPORT: Final = "export the report again: nsys export --type sqlite --output FILE.sqlite FILE.nsys-rep"


def check_header(path: Path, *, max_bytes: float) -> None:
    """Refuse files over ``max_bytes``, without the SQLite magic, or cut short (from the header)."""
    try:
        with open_input(path, what="Nsight Systems SQLite export", error=TraceError) as handle:
            size = os.fstat(handle.fileno()).st_size
            header = handle.read(HEADER_BYTES)
    except OSError as error:
        raise TraceError(
            path, f"cannot read file ({error.strerror or error})", fix="check the path and permissions"
        ) from None
    if size > max_bytes:
        raise TraceError(
            path,
            f"the export is {size / GIB:.3g} GiB, over the {max_bytes / GIB:.3g} GiB limit",
            fix="raise it with --max-bytes (e.g. --max-bytes 32GiB) if the file is trusted",
        )
    if not header.startswith(SQLITE_MAGIC):
        raise TraceError(path, "not an SQLite database (no 'SQLite format 3' header)", fix=_FIX_EXPORT)
    if len(header) < HEADER_BYTES:
        raise TraceError(path, f"SQLite file is truncated: {size} bytes, not even a header", fix=_FIX_EXPORT)
    page_bytes = struct.unpack(">H", header[16:18])[0]
    page_bytes = 65536 if page_bytes == 1 else page_bytes
    num_pages = struct.unpack(">I", header[28:32])[0]
    # the in-header page count is valid when its change counter matches (SQLite file format 1.3.8)
    if header[24:28] == header[92:96] and num_pages * page_bytes > size:
        raise TraceError(
            path,
            f"SQLite file is truncated: its header says {num_pages * page_bytes} bytes, the file has {size}",
            fix="the copy was cut short; copy or export it again",
        )


@contextmanager
def open_export(path: Path) -> Iterator[Export]:
    """The export at ``path``, opened read-only; closed on exit. SQLite errors become TraceError."""
    try:
        connection = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True)
    except sqlite3.Error as error:
        raise TraceError(path, f"cannot open the SQLite file ({error})", fix=_FIX_EXPORT) from None
    try:
        connection.execute("PRAGMA query_only = ON")
        connection.execute("PRAGMA trusted_schema = OFF")
        yield Export(path, connection)
    except sqlite3.Error as error:
        raise TraceError(path, f"corrupt SQLite file ({error})", fix=_FIX_EXPORT) from None
    finally:
        connection.close()


class Export:
    """The tables of one export and their columns, with typed query helpers."""

    def __init__(self, path: Path, connection: sqlite3.Connection) -> None:
        self.path = path
        self.connection = connection
        rows = connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
        self.tables = frozenset(str(name) for (name,) in rows)
        self._columns: dict[str, frozenset[str]] = {}

    def fetchall(self, sql: str, parameters: Sequence[object] = ()) -> list[tuple[object, ...]]:
        """All rows of ``sql``. Text is decoded as UTF-8 by SQLite (fast); should a value not be
        valid UTF-8 (exports hold user strings: NVTX text, host names), the query runs again with
        undecodable bytes as U+FFFD, never an exception."""
        try:
            return self.connection.execute(sql, tuple(parameters)).fetchall()
        except sqlite3.OperationalError as error:
            if "decode" not in str(error):
                raise
        self.connection.text_factory = lambda data: data.decode("utf-8", "replace")
        try:
            return self.connection.execute(sql, tuple(parameters)).fetchall()
        finally:
            self.connection.text_factory = str

    def has(self, table: str) -> bool:
        """Whether the export holds ``table`` (a table, not a view)."""
        return table in self.tables

    def columns(self, table: str) -> frozenset[str]:
        """The column names of ``table`` (empty when the table is absent)."""
        if table not in self._columns:
            found = (
                self.connection.execute(f'PRAGMA table_info("{table}")').fetchall() if self.has(table) else []
            )
            self._columns[table] = frozenset(str(row[1]) for row in found)
        return self._columns[table]

    def require(self, table: str, columns: Sequence[str]) -> None:
        """Raise the one-line unknown-schema error when ``table`` lacks any of ``columns``."""
        missing = [column for column in columns if column not in self.columns(table)]
        if missing:
            raise TraceError(
                self.path,
                f"unknown Nsight Systems export schema: table {table} has no column " + ", ".join(missing),
                fix="lightspeed reads the tables and columns listed in docs/trace.md; export the report "
                "again with a current nsys (nsys export --type sqlite)",
            )

    def integers(self, table: str, columns: Sequence[tuple[str, int]], where: str) -> npt.NDArray[np.int64]:
        """``SELECT columns FROM table WHERE where`` as an (n, k) int64 array.

        ``columns`` are (SQL expression, value for NULL). The rows are read
        as they are (the fast path: no per-value function call in SQLite) and
        only when one holds a NULL read again with ``COALESCE``.
        """
        plain = ", ".join(expression for expression, _ in columns)
        try:
            return self._integer_rows(f'SELECT {plain} FROM "{table}" WHERE {where}', len(columns))
        except TypeError:  # a NULL: np.fromiter cannot take None
            pass
        filled = ", ".join(f"COALESCE({expression}, {default})" for expression, default in columns)
        try:
            return self._integer_rows(f'SELECT {filled} FROM "{table}" WHERE {where}', len(columns))
        except (TypeError, ValueError, OverflowError):
            raise TraceError(
                self.path,
                f"a column of {table} that should hold integers holds something else",
                fix=_FIX_EXPORT,
            ) from None

    def _integer_rows(self, sql: str, width: int) -> npt.NDArray[np.int64]:
        cursor = self.connection.execute(sql)
        parts = []
        while rows := cursor.fetchmany(FETCH_ROWS):
            flat = np.fromiter(chain.from_iterable(rows), dtype=np.int64, count=len(rows) * width)
            parts.append(flat.reshape(-1, width))
        return np.concatenate(parts) if parts else np.zeros((0, width), dtype=np.int64)

    def strings(self, sql: str) -> dict[int, str]:
        """``id -> value`` pairs of ``sql`` (two columns: an integer id and a text)."""
        found: dict[int, str] = {}
        for key, value in self.fetchall(sql):
            if isinstance(key, int):
                found[key] = value if isinstance(value, str) else str(value)
        return found

    def meta(self, name: str) -> str | None:
        """A value of ``EXPORT_META_DATA`` (``EXPORT_SCHEMA_VERSION`` ...), else None."""
        if not {"name", "value"} <= self.columns("EXPORT_META_DATA"):
            return None
        rows = self.fetchall("SELECT value FROM EXPORT_META_DATA WHERE name = ? LIMIT 1", (name,))
        return None if not rows or rows[0][0] is None else str(rows[0][0])
