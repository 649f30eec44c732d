"""Bounded JSON-lines reading shared by the event logs and the monitor's captures (untrusted files).

>>> import io
>>> lines = json_lines(io.BytesIO(b'{"a": 1}\\n[2]\\n'), "x")
>>> [(n, decode_object(line, path="x", number=n)) for n, line in lines]
[(1, {'a': 1}), (2, None)]
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import msgspec

from lightspeed.datafile import check_nesting
from lightspeed.files import MAX_LINE_BYTES, bounded_lines


def json_lines(
    handle: BinaryIO, path: str | Path, max_line_bytes: int = MAX_LINE_BYTES
) -> Iterator[tuple[int, bytes]]:
    """``(line number, line)`` of every line; a line over ``max_line_bytes`` is a :class:`DataFileError`."""
    return bounded_lines(handle, path, max_line_bytes)


def decode_object(line: bytes, *, path: str | Path, number: int) -> dict[str, Any] | None:
    """The JSON object on ``line``, or ``None`` when it is not one (cut short, garbage, a list);
    a line nested too deeply is a :class:`DataFileError` naming ``path`` and line ``number``."""
    check_nesting(line, path=path, line=number)
    try:
        value = msgspec.json.decode(line)
    except (msgspec.DecodeError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


class _Literal(str):
    """A number JSON does not allow (``NaN``, ``Infinity``) or one too large for a float (``1e400``)."""


def _float_or_literal(text: str) -> float | _Literal:
    number = float(text)
    return number if math.isfinite(number) else _Literal(text)


def non_finite_number(line: bytes) -> tuple[str, str] | None:
    """``(field, literal)`` of the first ``NaN``, ``Infinity`` or too-large number on a line that is
    otherwise a JSON object (``field`` dotted, e.g. ``d.gpu0.power_w``), else ``None``; for a line
    :func:`decode_object` refused, to say what is wrong with it (call it after ``decode_object``:
    the nesting is checked there).

    >>> non_finite_number(b'{"d": {"gpu0": {"power_w": NaN}}}')
    ('d.gpu0.power_w', 'NaN')
    >>> non_finite_number(b'{"t": 1e400}'), non_finite_number(b'{"t": 1'), non_finite_number(b'{"t": 1}')
    (('t', '1e400'), None, None)
    """
    try:
        value = json.loads(line, parse_constant=_Literal, parse_float=_float_or_literal)
    except (ValueError, RecursionError):  # not JSON at all (UnicodeDecodeError is a ValueError)
        return None
    return _find_literal(value, "") if isinstance(value, dict) else None


def _find_literal(value: Any, where: str) -> tuple[str, str] | None:
    if isinstance(value, _Literal):
        return where, str(value)
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        found = _find_literal(item, f"{where}.{key}" if where else str(key))
        if found is not None:
            return found
    return None
