"""Trace files on disk: which files a path names, bounded reading, ranks in file names.

Traces are untrusted input: a gzip file may claim to expand to anything, so
decompression stops at ``max_bytes`` with an error that says how to raise the
limit, and a truncated or corrupt stream is named as such.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO, Final

from lightspeed.errors import TraceError
from lightspeed.units import GIB

DEFAULT_MAX_BYTES: Final = 4 * GIB  # decompressed size of one trace file
_READ_CHUNK_BYTES: Final = 1 << 20
_GZIP_MAGIC: Final = b"\x1f\x8b"
_TRACE_SUFFIXES: Final = (".json", ".json.gz", ".gz")
# rank-3.json, rank_3.pt.trace.json.gz, sampled_rank-1.json.gz, trace_rank3.json ...
_RANK_IN_NAME: Final = re.compile(r"(?:^|[^a-z])rank[-_]?(\d+)", re.IGNORECASE)


def trace_files(paths: Iterable[Path | str]) -> list[Path]:
    """The trace files named by ``paths`` (files, or folders holding ``*.json``/``*.json.gz``)."""
    found: list[Path] = []
    for item in paths:
        path = Path(item)
        if path.is_dir():
            inside = sorted(p for p in path.iterdir() if p.is_file() and _is_trace_name(p.name))
            if not inside:
                raise TraceError(
                    path,
                    "no trace files in this folder",
                    fix="point at a folder holding the ranks' *.json or *.json.gz files",
                )
            found.extend(inside)
        elif path.is_file():
            found.append(path)
        else:
            raise TraceError(path, "no such file or folder", fix="check the path")
    if not found:
        raise TraceError("<none>", "no trace given", fix="name at least one trace file or folder")
    duplicates = {p for p in found if found.count(p) > 1}
    if duplicates:
        raise TraceError(sorted(duplicates)[0], "the same file is named twice", fix="name each file once")
    return found


def _is_trace_name(name: str) -> bool:
    return name.lower().endswith(_TRACE_SUFFIXES)


def rank_from_file_name(path: Path) -> int | None:
    """The rank written in a file name (``rank-3``, ``rank_3``, ``rank3``), else ``None``."""
    match = _RANK_IN_NAME.search(path.name)
    return int(match.group(1)) if match else None


def read_trace_bytes(path: Path, *, max_bytes: float = DEFAULT_MAX_BYTES) -> bytearray:
    """The (decompressed) bytes of one trace file, at most ``max_bytes``.

    gzip is recognised by its magic number, not the file name. Raises
    :class:`TraceError` for a file over the limit, a truncated or corrupt gzip
    stream, or a file that cannot be read.
    """
    limit = int(max_bytes)
    try:
        with path.open("rb") as handle:
            if handle.read(2) == _GZIP_MAGIC:
                handle.seek(0)
                return _gunzip(handle, path, limit)
            handle.seek(0)
            data = bytearray(handle.read(limit + 1))
    except OSError as error:
        raise TraceError(
            path, f"cannot read file ({error.strerror or error})", fix="check the path and permissions"
        ) from None
    if len(data) > limit:
        raise _too_big(path, limit)
    return data


def _too_big(path: Path, limit: int) -> TraceError:
    return TraceError(
        path,
        f"trace expands beyond the {limit / GIB:.3g} GiB limit",
        fix="raise it with --max-bytes (e.g. --max-bytes 32GiB) if the file is trusted",
    )


def _gunzip(handle: BinaryIO, path: Path, limit: int) -> bytearray:
    """Decompress every gzip member of ``handle``, stopping at ``limit`` bytes."""
    out = bytearray()
    decompressor = zlib.decompressobj(wbits=31)
    member_started = False
    while True:
        chunk = handle.read(_READ_CHUNK_BYTES)
        if not chunk:
            break
        while chunk:
            if decompressor.eof:  # a new gzip member (or zero padding) follows
                if not chunk.strip(b"\x00"):
                    break
                decompressor = zlib.decompressobj(wbits=31)
            member_started = True
            try:
                out += decompressor.decompress(chunk, limit + 1 - len(out))
            except zlib.error as error:
                raise TraceError(
                    path, f"corrupt gzip data ({error})", fix="re-copy or re-export the trace"
                ) from None
            if len(out) > limit:
                raise _too_big(path, limit)
            chunk = decompressor.unused_data if decompressor.eof else decompressor.unconsumed_tail
    if member_started and not decompressor.eof:
        raise TraceError(
            path,
            f"gzip stream is truncated after {len(out)} bytes",
            fix="the file was cut short (profiler killed while writing, or a partial copy); copy it again",
        )
    if not member_started:
        raise TraceError(path, "empty gzip file", fix="re-export the trace")
    return out
