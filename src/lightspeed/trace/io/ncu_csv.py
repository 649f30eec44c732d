"""The text of ``ncu --csv`` output: header, rows, numbers and units, read strictly.

``ncu --csv`` writes to the same stream as the profiled program, so a saved
file may start with ``==PROF==`` messages and program output, and may carry
either page: ``details`` (one row per metric and per rule finding, with a
"Metric Unit" column) or ``raw`` (one row per kernel launch, one column per
metric, the second row holding the units). Every CSV row ncu writes is
quoted, so a line that does not start with ``"`` is a message or program
output and is skipped (and counted); a quoted line with the wrong number of
cells is an error, and at the end of the file it means the file was cut.

Numbers may carry thousands separators (``1,024``: ncu's default); units are
per metric and scale as ncu prints them: decimal byte prefixes (``Kbyte`` =
1,000 bytes), ``usecond``, ``Ghz``, ``cycle/nsecond``.

>>> parse_number("1,215,000,000")
1215000000.0
>>> to_base(406.24, "usecond", "s"), to_base(233.47, "Kbyte", "bytes"), to_base(1.24, "Ghz", "hz")
(0.00040624, 233470.0, 1240000000.0)
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Final

from lightspeed.errors import TraceError
from lightspeed.files import MAX_LINE_BYTES, bounded_lines, check_input, open_input
from lightspeed.trace.io.formats import NCU_CSV, TRACE_FORMATS, sniff_format, wrong_format
from lightspeed.units import GIB

DEFAULT_MAX_CSV_BYTES: Final = 1 * GIB
DETAILS: Final = "details"
RAW: Final = "raw"
_HEADER_START: Final = '"ID",'
_THOUSANDS: Final = re.compile(r"[+-]?\d{1,3}(?:,\d{3})+(?:\.\d+)?")
_TRIPLE: Final = re.compile(r"\(\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\)")
_FIX_CSV: Final = "save ncu's output again: ncu --csv --page details ... > FILE.csv"
# units per second (a time is divided by these, so 406240 ns is exactly 0.00040624 s)
_PER_SECOND: Final = {"ns": 1e9, "nsecond": 1e9, "us": 1e6, "usecond": 1e6, "ms": 1e3, "msecond": 1e3}
_PER_SECOND_BASE: Final = {"s": 1.0, "second": 1.0, "sec": 1.0}
_HZ: Final = {"hz": 1.0, "khz": 1e3, "mhz": 1e6, "ghz": 1e9, "thz": 1e12}
_BYTE_PREFIX: Final = {
    "": 1.0,
    "k": 1e3,
    "m": 1e6,
    "g": 1e9,
    "t": 1e12,
    "ki": 2.0**10,
    "mi": 2.0**20,
    "gi": 2.0**30,
}


@dataclass(frozen=True)
class CsvRow:
    """One CSV row: its line number in the file and its cells by header name."""

    line: int
    cells: dict[str, str]


@dataclass(frozen=True)
class CsvPage:
    """The rows of one ncu CSV file, with the page they come from and the units of the raw page."""

    path: Path
    page: str
    header: tuple[str, ...]
    units: dict[str, str]
    rows: tuple[CsvRow, ...]
    num_skipped_lines: int


def read_ncu_csv(path: Path, *, max_bytes: float = DEFAULT_MAX_CSV_BYTES) -> CsvPage:
    """The header and rows of an ``ncu --csv`` file; :class:`TraceError` for anything malformed.

    The file is read line by line (each at most ``MAX_LINE_BYTES``), so memory follows what
    the file holds, not its size: a file of garbage is refused at its first overlong line.
    """
    what = "Nsight Compute CSV (ncu --csv)"
    size = check_input(path, what=what, error=TraceError).st_size
    if size > max_bytes:
        raise TraceError(
            path,
            f"the file is {size / GIB:.3g} GiB, over the {max_bytes / GIB:.3g} GiB limit",
            fix="raise it with --max-bytes if the file is trusted",
        )
    found = sniff_format(path)
    if found not in (None, NCU_CSV):  # a trace or a log handed to the wrong command
        also = (
            f"or join it with ncu's: 'lightspeed kernels report NCU.csv --trace {path}'"
            if found in TRACE_FORMATS
            else ""
        )
        raise wrong_format(path, found, "Nsight Compute CSV output (ncu --csv)", also=also)
    with open_input(path, what=what, error=TraceError) as handle:
        lines = _text_lines(path, handle)
        header, skipped = _header(path, lines)
        page = DETAILS if {"Metric Name", "Metric Value"} <= set(header) else RAW
        rows, units, after = _rows(path, lines, header, page)
    if not rows:
        raise TraceError(path, "no kernel launches in this CSV (a header and nothing else)", fix=_FIX_CSV)
    return CsvPage(
        path=path, page=page, header=header, units=units, rows=tuple(rows), num_skipped_lines=skipped + after
    )


def _text_lines(path: Path, handle: BinaryIO) -> Iterator[tuple[int, str, bool]]:
    """(line number, text without its end, whether the line was cut short) of each line."""
    offset = 0
    for number, raw in bounded_lines(handle, path, MAX_LINE_BYTES, error=TraceError):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise TraceError(
                path,
                f"not UTF-8 text (byte {offset + error.start})",
                line=number,
                fix="is this ncu --csv output?",
            ) from None
        offset += len(raw)
        yield number, text.rstrip("\r\n"), not raw.endswith(b"\n")


def _header(path: Path, lines: Iterator[tuple[int, str, bool]]) -> tuple[tuple[str, ...], int]:
    """The header's cells and how many non-empty lines came before it."""
    skipped = 0
    for number, line, _ in lines:
        if line.startswith(_HEADER_START):
            header = tuple(_cells(path, number, line))
            if len(set(header)) != len(header):
                raise TraceError(path, "the CSV header names a column twice", line=number, fix=_FIX_CSV)
            return header, skipped
        skipped += bool(line.strip())  # ==PROF== messages, program output
    raise TraceError(
        path,
        'no Nsight Compute CSV header (a line starting with "ID","Process ID")',
        fix="write it with ncu --csv --page details (or --page raw) and save all of its output",
    )


def _rows(
    path: Path, lines: Iterator[tuple[int, str, bool]], header: tuple[str, ...], page: str
) -> tuple[list[CsvRow], dict[str, str], int]:
    """The kernel rows after the header, the raw page's units, and the non-CSV lines skipped."""
    rows: list[CsvRow] = []
    units: dict[str, str] = {}
    skipped = 0
    # metric rows of the details page stop after "Metric Value" (the rule cells are left off)
    fewest = header.index("Metric Value") + 1 if page == DETAILS else len(header)
    for number, line, cut in lines:
        if not line.startswith('"'):
            skipped += bool(line.strip())
            continue
        cells = _cells(path, number, line, cut=cut)
        if not fewest <= len(cells) <= len(header):
            problem = "the file is truncated" if cut else "a row does not match the header"
            raise TraceError(
                path,
                f"{problem}: {len(cells)} cells where the header has {len(header)}",
                line=number,
                fix=_FIX_CSV,
            )
        cells += [""] * (len(header) - len(cells))
        named = dict(zip(header, cells, strict=True))
        if page == RAW and not rows and not units and not named["ID"].strip():
            units = named  # the raw page's second row: each metric's unit
            continue
        if not named["ID"].strip().isdigit():
            raise TraceError(
                path,
                "the ID of a kernel launch is not a number",
                line=number,
                value=named["ID"],
                fix=_FIX_CSV,
            )
        rows.append(CsvRow(line=number, cells=named))
    return rows, units, skipped


def _cells(path: Path, line_number: int, line: str, *, cut: bool = False) -> list[str]:
    try:
        return next(csv.reader([line], strict=True))
    except (csv.Error, StopIteration) as error:
        problem = "the file is truncated" if cut else f"malformed CSV ({error})"
        raise TraceError(path, problem, line=line_number, fix=_FIX_CSV) from None


def parse_number(text: str) -> float | None:
    """A number as ncu prints it (``1,024``, ``3995313115.40``), else None (text, n/a, nan, inf)."""
    cleaned = text.strip()
    if _THOUSANDS.fullmatch(cleaned):
        cleaned = cleaned.replace(",", "")
    try:
        value = float(cleaned)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def parse_triple(text: str) -> tuple[int, int, int] | None:
    """``(384, 1, 1)`` as a tuple, else None."""
    match = _TRIPLE.fullmatch(text.strip())
    return (int(match.group(1)), int(match.group(2)), int(match.group(3))) if match else None


def to_base(value: float, unit: str, kind: str) -> float | None:
    """``value`` in ``unit`` as base units of ``kind`` (s, pct, hz, bytes, count); None if not understood."""
    key = unit.strip().lower()
    if kind == "count":
        return value
    if kind == "pct":
        return value if key in ("%", "") else None
    if kind == "s":
        per_second = _PER_SECOND.get(key, _PER_SECOND_BASE.get(key))
        return value / per_second if per_second else None
    if kind == "hz":
        if key.startswith("cycle/"):
            per = key.removeprefix("cycle/")
            per_second = _PER_SECOND.get(per, _PER_SECOND_BASE.get(per))
            return value * per_second if per_second else None
        scale = _HZ.get(key)
        return value * scale if scale else None
    if kind == "bytes":
        base = key.split("/", 1)[0]
        prefix = _BYTE_PREFIX.get(base.removesuffix("byte")) if base.endswith("byte") else None
        return value * prefix if prefix else None
    return None
