"""Which profiler wrote a file, told by its first bytes (the name only where content cannot tell).

>>> import tempfile, pathlib
>>> with tempfile.TemporaryDirectory() as folder:
...     path = pathlib.Path(folder, "trace.bin")
...     _ = path.write_bytes(b"SQLite format 3\\x00" + bytes(84))
...     detect_format(path)
'nsys-sqlite'
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from lightspeed.errors import TraceError
from lightspeed.files import open_input

KINETO: Final = "kineto"
NSYS_SQLITE: Final = "nsys-sqlite"
NSYS_REP: Final = "nsys-rep"
NCU_CSV: Final = "ncu-csv"
NCU_REP: Final = "ncu-rep"
FORMATS: Final = (KINETO, NSYS_SQLITE, NSYS_REP, NCU_CSV, NCU_REP)

SQLITE_MAGIC: Final = b"SQLite format 3\x00"
GZIP_MAGIC: Final = b"\x1f\x8b"
_PEEK_BYTES: Final = 1 << 16
# The first header cells of `ncu --csv` (details and raw pages) and its message prefix.
_NCU_HEADER: Final = b'"ID","Process ID"'
_NCU_PREFIX: Final = b"==PROF=="
# Binary reports whose layout lightspeed does not read; they are known by their extension.
_NSYS_REPORT_SUFFIXES: Final = (".nsys-rep", ".qdrep")
_NCU_REPORT_SUFFIXES: Final = (".ncu-rep",)


def detect_format(path: Path) -> str:
    """One of :data:`FORMATS` for the file at ``path``.

    SQLite files are Nsight Systems exports (the reader checks their tables),
    gzip and JSON are Kineto, CSV with ncu's header or ``==PROF==`` lines is
    Nsight Compute. ``.nsys-rep``/``.qdrep`` and ``.ncu-rep`` reports are told
    by their extension. Anything else is handed to the Kineto reader, whose
    errors say what is wrong with it.
    """
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
    if stripped[:1] in (b"{", b"["):
        return KINETO
    if stripped.startswith(_NCU_PREFIX) or _NCU_HEADER in head:
        return NCU_CSV
    name = path.name.lower()
    if name.endswith(_NSYS_REPORT_SUFFIXES):
        return NSYS_REP
    if name.endswith(_NCU_REPORT_SUFFIXES):
        return NCU_REP
    return KINETO
