"""Conditions on stored payloads: ``results list --where key=value``, the same on both backends.

A condition ``key=value`` matches a record whose payload holds ``value`` at
``key`` (a dotted path into nested objects: ``plan.tp=8``), or whose run's
environment fingerprint holds it there (``git_commit=1a2b3c``: the commit of
the checkout a run was made in); ``env.KEY`` matches the run's environment
only (``env.host_name=node-7``); ``kind`` and ``label`` match the run's own
columns. The value is read as JSON
when it is a number, ``true``, ``false``, ``null`` or a quoted string
(``model="8"``), else as text, and is compared with its type: ``tp=8`` does not
match a payload that holds the text ``"8"``; numbers by value, as PostgreSQL
compares them (``tp=100000000000000000000`` matches ``1e20``). An integer beyond
64 bits is compared exactly, by its digits. A list at the path matches when one
of its items is the value (``env.gpus=H100`` matches ``"gpus": ["H100"]``). A run
matches when one of its records matches every payload condition.

SQLite answers with its JSON1 functions on the TEXT payload (``json_each`` for a
list; a row that is not valid JSON matches nothing rather than failing the query);
PostgreSQL with JSONB containment (``@>``, of the value or of a list holding it),
which its GIN index serves. Keys and values are
always query parameters, never SQL text.

>>> conditions = parse_conditions(["model=llama-3-8b", "plan.tp=8", "env.host_name=n1"])
>>> [(c.scope, c.path, c.value) for c in conditions]
[('record', ('model',), 'llama-3-8b'), ('record', ('plan', 'tp'), 8), ('fingerprint', ('host_name',), 'n1')]
"""

from __future__ import annotations

import json
import math
import re
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Final

from lightspeed.errors import UserInputError

JsonScalar = str | int | float | bool | None
RUN_COLUMNS: Final = ("kind", "label")
FINGERPRINT_PREFIX: Final = "env."
# SQLite stores integers in 64 bits; a larger one is compared by its JSON text (the -> operator,
# SQLite 3.38+), or as a float where the library is older.
_INT64_MIN: Final = -(2**63)
_INT64_MAX: Final = 2**63 - 1
_SQLITE_HAS_ARROW: Final = sqlite3.sqlite_version_info >= (3, 38, 0)
_KEY: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]*(\.[A-Za-z0-9_][A-Za-z0-9_\-]*)*$")


@dataclass(frozen=True)
class Condition:
    """One ``key=value``: where to look (``run``, ``record`` or ``fingerprint``), the path and the value."""

    scope: str
    path: tuple[str, ...]
    value: JsonScalar
    text: str


def parse_conditions(items: Sequence[str]) -> tuple[Condition, ...]:
    """Parse ``key=value`` texts; a malformed one is a :class:`UserInputError` naming it."""
    return tuple(_parse(item) for item in items)


def _parse(item: str) -> Condition:
    key, separator, raw = item.partition("=")
    key = key.strip()
    if not separator or not _KEY.match(key):
        raise UserInputError(
            f"--where {item!r} is not key=value with a key of letters, digits, '_' or '-' "
            "(dots for nested fields); e.g. --where model=llama-3-8b --where plan.tp=8"
        )
    if key in RUN_COLUMNS:
        return Condition(scope="run", path=(key,), value=raw, text=item)
    if key.startswith(FINGERPRINT_PREFIX):
        return Condition(
            scope="fingerprint",
            path=tuple(key[len(FINGERPRINT_PREFIX) :].split(".")),
            value=_value(raw),
            text=item,
        )
    return Condition(scope="record", path=tuple(key.split(".")), value=_value(raw), text=item)


def _value(raw: str) -> JsonScalar:
    try:
        value = json.loads(raw)
    except ValueError:
        return raw
    if isinstance(value, float) and not math.isfinite(value):  # NaN, Infinity: not JSON; keep the text
        return raw
    return value if isinstance(value, str | int | float | bool) or value is None else raw


def _nested(path: tuple[str, ...], value: JsonScalar | list[JsonScalar]) -> str:
    document: Any = value
    for part in reversed(path):
        document = {part: document}
    return json.dumps(document)


def payload_match(
    backend: str, column: str, condition: Condition, *, text_payloads: bool = False
) -> tuple[str, list[Any]]:
    """SQL (``?`` placeholders) true when ``column`` holds the condition's value at its path, or a
    list there holds it (``gpus=H100`` matches ``"gpus": ["H100", "H100"]``).

    ``text_payloads``: on PostgreSQL, the column is still TEXT (a store at schema 2, read
    without migrating it) and is cast to JSONB.
    """
    if backend == "postgresql":
        cast = "::jsonb" if text_payloads else ""
        nested = [_nested(condition.path, condition.value), _nested(condition.path, [condition.value])]
        return f"({column}{cast} @> ?::jsonb OR {column}{cast} @> ?::jsonb)", nested
    json_path = "$." + ".".join(f'"{part}"' for part in condition.path)
    # CASE fixes the order: a row that is not valid JSON is skipped, not an error for the query
    whole = _SqliteValue(
        kind=f"CASE WHEN json_valid({column}) THEN json_type({column}, ?) END",
        kind_values=[json_path],
        value=f"json_extract({column}, ?)",
        value_values=[json_path],
        text=f"({column} -> ?)",
        text_values=[json_path],
    )
    item = _SqliteValue(
        kind="item.type", value="item.value", text=f"({column} -> item.fullkey)"
    )  # one element of the list at the path (json_each)
    whole_sql, whole_values = _sqlite_scalar_match(whole, condition.value)
    item_sql, item_values = _sqlite_scalar_match(item, condition.value)
    in_list = (
        f"CASE WHEN json_valid({column}) AND json_type({column}, ?) = 'array' THEN EXISTS "
        f"(SELECT 1 FROM json_each({column}, ?) AS item WHERE {item_sql}) END"
    )
    return f"(({whole_sql}) OR ({in_list}))", [*whole_values, json_path, json_path, *item_values]


@dataclass(frozen=True)
class _SqliteValue:
    """SQL for a JSON value on SQLite: its JSON type, its SQL value and its JSON text, each with
    the parameters its placeholders take."""

    kind: str
    value: str
    text: str
    kind_values: list[Any] = field(default_factory=list)
    value_values: list[Any] = field(default_factory=list)
    text_values: list[Any] = field(default_factory=list)


def _sqlite_scalar_match(target: _SqliteValue, value: JsonScalar) -> tuple[str, list[Any]]:
    """SQL true when ``target`` is ``value``, compared as PostgreSQL compares JSONB: by type, and a
    number by its exact value (``1e20`` is the integer 100000000000000000000)."""
    kind, kinds = target.kind, target.kind_values
    if isinstance(value, bool) or value is None:
        return f"{kind} = ?", [*kinds, json.dumps(value)]
    if isinstance(value, float):
        return f"{kind} IN ('integer', 'real') AND {target.value} = ?", [*kinds, *target.value_values, value]
    if isinstance(value, int):
        return _sqlite_integer_match(target, value)
    return f"{kind} = 'text' AND {target.value} = ?", [*kinds, *target.value_values, value]


def _sqlite_integer_match(target: _SqliteValue, value: int) -> tuple[str, list[Any]]:
    """An integer condition: a stored integer equal to it (beyond 64 bits, by its digits), or a
    stored real that is exactly it. A real is held as a double, written as its shortest decimal
    (Python's ``repr``), which PostgreSQL reads exactly: only the double nearest ``value``, and
    only when that decimal is ``value`` itself, can be equal to it."""
    kind, kinds = target.kind, target.kind_values
    if _INT64_MIN <= value <= _INT64_MAX:
        integer = (f"{kind} = 'integer' AND {target.value} = ?", [*kinds, *target.value_values, value])
    elif _SQLITE_HAS_ARROW:
        integer = (f"{kind} = 'integer' AND {target.text} = ?", [*kinds, *target.text_values, str(value)])
    else:  # an old SQLite: compared as the nearest float
        integer = (f"{kind} = 'integer' AND {target.value} = ?", [*kinds, *target.value_values, float(value)])
    nearest = _nearest_float(value)
    if nearest is None or Decimal(repr(nearest)) != value:
        return integer
    real = (f"{kind} = 'real' AND {target.value} = ?", [*kinds, *target.value_values, nearest])
    return f"({integer[0]}) OR ({real[0]})", [*integer[1], *real[1]]


def _nearest_float(value: int) -> float | None:
    """The double nearest ``value`` (``None`` beyond the doubles' range)."""
    try:
        return float(value)
    except OverflowError:
        return None


def record_or_run_match(
    backend: str, condition: Condition, *, text_payloads: bool = False
) -> tuple[str, list[Any]]:
    """SQL true when record ``r``'s payload, or its run's environment ``f``, holds a plain condition."""
    record_sql, record_values = payload_match(backend, "r.payload", condition, text_payloads=text_payloads)
    run_sql, run_values = payload_match(backend, "f.payload", condition, text_payloads=text_payloads)
    return f"(({record_sql}) OR ({run_sql}))", [*record_values, *run_values]


def run_filters(
    backend: str, conditions: Sequence[Condition], *, text_payloads: bool = False
) -> tuple[list[str], list[Any]]:
    """WHERE clauses (on runs ``u`` joined to fingerprints ``f``) for ``conditions``."""
    clauses: list[str] = []
    parameters: list[Any] = []
    records: list[Condition] = []
    for condition in conditions:
        if condition.scope == "run":
            clauses.append(f"u.{condition.path[0]} = ?")  # a name from RUN_COLUMNS, not input
            parameters.append(condition.value)
        elif condition.scope == "fingerprint":
            sql, values = payload_match(backend, "f.payload", condition, text_payloads=text_payloads)
            clauses.append(sql)
            parameters.extend(values)
        else:
            records.append(condition)
    if records:
        parts = [
            record_or_run_match(backend, condition, text_payloads=text_payloads) for condition in records
        ]
        clauses.append(
            "EXISTS (SELECT 1 FROM records r WHERE r.run_id = u.run_id AND "
            + " AND ".join(sql for sql, _ in parts)
            + ")"
        )
        parameters.extend(value for _, values in parts for value in values)
    return clauses, parameters
