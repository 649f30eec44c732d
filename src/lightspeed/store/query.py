"""Conditions on stored payloads: ``results list --where key=value``, the same on both backends.

A condition ``key=value`` matches a record whose payload holds ``value`` at
``key`` (a dotted path into nested objects: ``plan.tp=8``); ``env.KEY``
matches the run's environment fingerprint instead (``env.host_name=node-7``);
``kind`` and ``label`` match the run's own columns. The value is read as JSON
when it is a number, ``true``, ``false``, ``null`` or a quoted string
(``model="8"``), else as text, and is compared with its type: ``tp=8`` does not
match a payload that holds the text ``"8"``. A run matches when one of its
records matches every payload condition.

SQLite answers with its JSON1 functions on the TEXT payload; PostgreSQL with
JSONB containment (``@>``), which its GIN index serves. Keys and values are
always query parameters, never SQL text.

>>> conditions = parse_conditions(["model=llama-3-8b", "plan.tp=8", "env.host_name=n1"])
>>> [(c.scope, c.path, c.value) for c in conditions]
[('record', ('model',), 'llama-3-8b'), ('record', ('plan', 'tp'), 8), ('fingerprint', ('host_name',), 'n1')]
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from lightspeed.errors import UserInputError

JsonScalar = str | int | float | bool | None
RUN_COLUMNS: Final = ("kind", "label")
FINGERPRINT_PREFIX: Final = "env."
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


def _nested(path: tuple[str, ...], value: JsonScalar) -> str:
    document: Any = value
    for part in reversed(path):
        document = {part: document}
    return json.dumps(document)


def payload_match(backend: str, column: str, condition: Condition) -> tuple[str, list[Any]]:
    """SQL (``?`` placeholders) true when ``column`` holds the condition's value at its path."""
    if backend == "postgresql":
        return f"{column} @> ?::jsonb", [_nested(condition.path, condition.value)]
    json_path = "$." + ".".join(f'"{part}"' for part in condition.path)
    value = condition.value
    if isinstance(value, bool) or value is None:
        return f"json_type({column}, ?) = ?", [json_path, json.dumps(value)]
    if isinstance(value, int | float):
        return (
            f"json_type({column}, ?) IN ('integer', 'real') AND json_extract({column}, ?) = ?",
            [json_path, json_path, value],
        )
    return f"json_type({column}, ?) = 'text' AND json_extract({column}, ?) = ?", [json_path, json_path, value]


def run_filters(backend: str, conditions: Sequence[Condition]) -> tuple[list[str], list[Any]]:
    """WHERE clauses (on runs ``u`` joined to fingerprints ``f``) for ``conditions``."""
    clauses: list[str] = []
    parameters: list[Any] = []
    records: list[Condition] = []
    for condition in conditions:
        if condition.scope == "run":
            clauses.append(f"u.{condition.path[0]} = ?")  # a name from RUN_COLUMNS, not input
            parameters.append(condition.value)
        elif condition.scope == "fingerprint":
            sql, values = payload_match(backend, "f.payload", condition)
            clauses.append(sql)
            parameters.extend(values)
        else:
            records.append(condition)
    if records:
        parts = [payload_match(backend, "r.payload", condition) for condition in records]
        clauses.append(
            "EXISTS (SELECT 1 FROM records r WHERE r.run_id = u.run_id AND "
            + " AND ".join(sql for sql, _ in parts)
            + ")"
        )
        parameters.extend(value for _, values in parts for value in values)
    return clauses, parameters
