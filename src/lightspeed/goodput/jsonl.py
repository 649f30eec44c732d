"""Bounded JSON-lines reading shared by the event logs and the monitor's captures (untrusted files).

>>> import io
>>> lines = json_lines(io.BytesIO(b'{"a": 1}\\n[2]\\n'), "x")
>>> [(n, decode_object(line, path="x", number=n)) for n, line in lines]
[(1, {'a': 1}), (2, None)]
"""

from __future__ import annotations

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
