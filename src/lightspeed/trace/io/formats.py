"""Which profiler wrote a file, told by its first bytes (the name only where content cannot tell).

>>> import tempfile, pathlib
>>> with tempfile.TemporaryDirectory() as folder:
...     path = pathlib.Path(folder, "trace.bin")
...     _ = path.write_bytes(b"SQLite format 3\\x00" + bytes(84))
...     detect_format(path)
'nsys-sqlite'
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Final

from lightspeed.errors import TraceError
from lightspeed.files import open_input

KINETO: Final = "kineto"
NSYS_SQLITE: Final = "nsys-sqlite"
NSYS_REP: Final = "nsys-rep"
NCU_CSV: Final = "ncu-csv"
NCU_REP: Final = "ncu-rep"
MLPERF_LOG: Final = "mlperf-log"  # no profiler's: told apart so that commands can say who reads it
MONITOR_CAPTURE: Final = "monitor-capture"  # lightspeed's own JSON-lines files, told apart likewise
GOODPUT_LOG: Final = "goodput-log"
FORMATS: Final = (KINETO, NSYS_SQLITE, NSYS_REP, NCU_CSV, NCU_REP, MLPERF_LOG, MONITOR_CAPTURE, GOODPUT_LOG)
TRACE_FORMATS: Final = (KINETO, NSYS_SQLITE, NSYS_REP)  # timelines load_trace reads

SQLITE_MAGIC: Final = b"SQLite format 3\x00"
GZIP_MAGIC: Final = b"\x1f\x8b"
_PEEK_BYTES: Final = 1 << 16
# The first header cells of `ncu --csv` (details and raw pages) and its message prefix.
_NCU_HEADER: Final = b'"ID","Process ID"'
_NCU_PREFIX: Final = b"==PROF=="
# An MLPerf Training result log holds one ``:::MLLOG {json}`` line per event.
_MLLOG: Final = b":::MLLOG "
# The first line of lightspeed's JSON-lines files: a monitor capture opens with its header event
# (monitor/capture.py), a goodput event log with the job_start of a segment, "seg" (goodput/writer.py).
_CAPTURE_FIRST_TYPE: Final = "capture_start"
_GOODPUT_FIRST_TYPE: Final = "job_start"
# The top-level keys of a PyTorch profiler (Kineto) trace, one of which opens every file it writes
# (schemaVersion and deviceProperties come first; older exports open with traceEvents), and the
# phase key of each event of a trace written as a bare list of events. Other JSON (a gate sample
# file, a capture whose first line is not its header) is no profiler's: its reader says what is
# wrong with it.
_KINETO_KEY: Final = re.compile(rb'"(?:traceEvents|schemaVersion|deviceProperties)"\s*:')
_EVENT_PHASE_KEY: Final = re.compile(rb'"ph"\s*:')
# Binary reports whose layout lightspeed does not read; they are known by their extension.
_NSYS_REPORT_SUFFIXES: Final = (".nsys-rep", ".qdrep")
_NCU_REPORT_SUFFIXES: Final = (".ncu-rep",)
# What each format is, and the command that reads it ({path}: the file; {stem}: its name less suffix).
READERS: Final = {
    KINETO: ("a PyTorch profiler (Kineto) trace", "lightspeed trace summary {path}"),
    NSYS_SQLITE: ("an Nsight Systems SQLite export", "lightspeed trace summary {path}"),
    NSYS_REP: ("an Nsight Systems report", "lightspeed trace summary {path}"),
    NCU_CSV: ("Nsight Compute CSV output", "lightspeed kernels report {path}"),
    NCU_REP: (
        "an Nsight Compute report (.ncu-rep, binary)",
        "ncu --import {path} --csv --page details > {stem}.csv; lightspeed kernels report {stem}.csv",
    ),
    MLPERF_LOG: ("an MLPerf Training result log", "lightspeed goodput report {path}"),
    MONITOR_CAPTURE: ("a lightspeed monitor capture", "lightspeed monitor report {path}"),
    GOODPUT_LOG: ("a lightspeed goodput event log", "lightspeed goodput report {path}"),
}


def detect_format(path: Path, *, unknown: str = KINETO) -> str:
    """One of :data:`FORMATS` for the file at ``path``.

    SQLite files are Nsight Systems exports (the reader checks their tables),
    gzip is Kineto, CSV with ncu's header or ``==PROF==`` lines is Nsight
    Compute, JSON lines that open with a ``capture_start`` are a lightspeed
    monitor capture and with a segment's ``job_start`` a goodput event log,
    other JSON with Kineto's keys (``traceEvents``, ``schemaVersion``,
    ``deviceProperties``; a list of events with their ``ph``) is Kineto,
    ``:::MLLOG`` lines are an MLPerf Training result log. ``.nsys-rep``/``.qdrep``
    and ``.ncu-rep`` reports are told by their extension. Anything else (other
    JSON included) is ``unknown``: by default Kineto, whose reader's errors say
    what is wrong with it (a reader of another format passes ``""`` and keeps
    its own errors).
    """
    return sniff_format(path) or unknown


def sniff_format(path: Path) -> str | None:
    """What :func:`detect_format` tells from the file, or None where neither content nor name tells."""
    try:
        with open_input(path, what="profiler trace or report", error=TraceError) as handle:
            head = handle.read(_PEEK_BYTES)
    except OSError as error:
        raise TraceError(
            path, f"cannot read file ({error.strerror or error})", fix="check the path and permissions"
        ) from None
    if head.startswith(SQLITE_MAGIC):
        return NSYS_SQLITE
    if head.startswith(GZIP_MAGIC):
        return KINETO
    stripped = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if stripped.startswith(_NCU_PREFIX) or _NCU_HEADER in head:
        return NCU_CSV  # before JSON: a profiled program may print JSON before ncu's table
    if stripped[:1] in (b"{", b"["):
        return _json_lines_format(stripped) or _kineto_json(stripped)
    if _MLLOG in head:
        return MLPERF_LOG
    name = path.name.lower()
    if name.endswith(_NSYS_REPORT_SUFFIXES):
        return NSYS_REP
    if name.endswith(_NCU_REPORT_SUFFIXES):
        return NCU_REP
    return None


def _json_lines_format(head: bytes) -> str | None:
    """:data:`MONITOR_CAPTURE` or :data:`GOODPUT_LOG` when the first line of ``head`` is the event
    either file opens with; None for anything else (Kineto JSON, whose first line is rarely a whole
    object)."""
    first, newline, _ = head.partition(b"\n")
    if not newline:
        return None  # one line, or a first line longer than the peek: not a JSON-lines log
    try:
        event = json.loads(first)
    except (ValueError, RecursionError):  # UnicodeDecodeError included; nesting past the stack
        return None
    if not isinstance(event, dict):
        return None
    if event.get("type") == _CAPTURE_FIRST_TYPE:
        return MONITOR_CAPTURE
    if event.get("type") == _GOODPUT_FIRST_TYPE and "seg" in event:
        return GOODPUT_LOG
    return None


def _kineto_json(head: bytes) -> str | None:
    """:data:`KINETO` when the JSON in ``head`` has a Kineto trace's keys (an object) or events (a
    list); None for other JSON, which no profiler wrote."""
    key = _EVENT_PHASE_KEY if head.startswith(b"[") else _KINETO_KEY
    return KINETO if key.search(head) else None


def wrong_format(path: Path, found: str, wanted: str, *, also: str = "") -> TraceError:
    """The error for a file of format ``found`` handed to a reader of ``wanted``: what it is, who reads
    it (``also``: another way, appended to the fix).

    >>> str(wrong_format(Path("result_0.txt"), MLPERF_LOG, "Nsight Compute CSV output"))
    "result_0.txt: this is an MLPerf Training result log, not Nsight Compute CSV output; \
fix: read it with 'lightspeed goodput report result_0.txt'"
    """
    what, command = READERS[found]
    stem = path.name.split(".")[0] or path.stem
    fix = f"read it with '{command.format(path=path, stem=stem)}'" + (f" {also}" if also else "")
    return TraceError(path, f"this is {what}, not {wanted}", fix=fix)
