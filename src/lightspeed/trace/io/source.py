"""Trace files on disk: which files a path names, bounded reading, ranks in file names.

Traces are untrusted input: a gzip file may claim to expand to anything, so
decompression stops at ``max_bytes`` with an error that says how to raise the
limit, and a truncated or corrupt stream is named as such.

gzip is inflated by the fastest inflater installed: python-isal (Intel's ISA-L)
or zlib-ng (both in the ``trace`` extra), else the standard library's zlib;
``$LIGHTSPEED_INFLATER`` (``isal``, ``zlib-ng`` or ``zlib``) picks one
(``docs/benchmarks.md`` has the measurement behind the order).
"""

from __future__ import annotations

import logging
import os
import queue
import re
import threading
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, BinaryIO, Final

from lightspeed.errors import MissingExtraError, TraceError, UserInputError
from lightspeed.extras import import_extra
from lightspeed.files import check_input, open_input
from lightspeed.units import GIB

_LOG = logging.getLogger(__name__)

DEFAULT_MAX_BYTES: Final = 4 * GIB  # decompressed size of one trace file
BLOCK_BYTES: Final = 1 << 22  # 4 MiB read or inflated at a time
_GZIP_MAGIC: Final = b"\x1f\x8b"
_TRACE_SUFFIXES: Final = (".json", ".json.gz", ".gz", ".sqlite", ".nsys-rep", ".qdrep")
# rank-3.json, rank_3.pt.trace.json.gz, sampled_rank-1.json.gz, trace_rank3.json ...
_RANK_IN_NAME: Final = re.compile(r"(?:^|[^a-z])rank[-_]?(\d+)", re.IGNORECASE)
INFLATER_ENVIRONMENT_VARIABLE: Final = "LIGHTSPEED_INFLATER"
# name -> module with zlib's decompressobj API; fastest first (benchmarks/trace_vs_hta.py --inflaters)
INFLATERS: Final = {"isal": "isal.isal_zlib", "zlib-ng": "zlib_ng.zlib_ng", "zlib": "zlib"}


@dataclass(frozen=True)
class Inflater:
    """A gzip inflater: its name, a ``decompressobj`` factory and the error it raises."""

    name: str
    module: Any

    def decompressor(self) -> Any:
        """A decompressor of gzip members (``wbits=31``) with zlib's streaming API."""
        return self.module.decompressobj(wbits=31)

    @property
    def error(self) -> type[Exception]:
        """The exception class of corrupt data."""
        error: type[Exception] = self.module.error
        return error


@lru_cache(maxsize=4)
def inflater(name: str | None = None) -> Inflater:
    """The inflater ``name`` (``isal``, ``zlib-ng``, ``zlib``), else ``$LIGHTSPEED_INFLATER``, else the
    fastest installed.

    >>> inflater("zlib").name
    'zlib'
    """
    wanted = name or os.environ.get(INFLATER_ENVIRONMENT_VARIABLE, "").strip() or None
    if wanted is not None and wanted not in INFLATERS:
        raise UserInputError(
            f"unknown inflater {wanted!r} (${INFLATER_ENVIRONMENT_VARIABLE}); allowed: {', '.join(INFLATERS)}"
        )
    for candidate in [wanted] if wanted else list(INFLATERS):
        try:
            module = import_extra(INFLATERS[candidate], extra="trace", purpose=f"the {candidate} inflater")
        except MissingExtraError as error:  # not installed, or installed but failing to import
            if wanted:
                install = (
                    "pip install 'lightspeed[trace]'" if candidate == "isal" else f"pip install {candidate}"
                )
                state = (
                    "is not installed" if error.problem is None else f"cannot be imported ({error.problem})"
                )
                raise UserInputError(f"inflater {wanted!r} {state}; {install}") from None
            continue
        _LOG.debug("gzip inflater: %s", candidate)
        return Inflater(name=candidate, module=module)
    return Inflater(name="zlib", module=zlib)  # not reached: zlib is always there


def trace_files(paths: Iterable[Path | str]) -> list[Path]:
    """The trace files named by ``paths``: files, or folders of ``.json[.gz]``/``.sqlite``/``.nsys-rep``."""
    found: list[Path] = []
    for item in paths:
        path = Path(item)
        if path.is_dir():
            inside = sorted(p for p in path.iterdir() if p.is_file() and _is_trace_name(p.name))
            if not inside:
                raise TraceError(
                    path,
                    "no trace files in this folder",
                    fix="point at a folder holding the ranks' *.json, *.json.gz or *.sqlite files",
                )
            found.extend(inside)
        elif path.is_file():
            found.append(path)
        else:
            check_input(path, what="trace file or folder", folder_ok=True, error=TraceError)
            found.append(path)  # a regular file that appeared after is_file()
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
    """The whole (decompressed) content of one trace file, at most ``max_bytes``."""
    data = bytearray()
    for block in trace_blocks(path, max_bytes=max_bytes):
        data += block
    return data


def trace_blocks(path: Path, *, max_bytes: float = DEFAULT_MAX_BYTES) -> Iterator[bytes]:
    """The (decompressed) bytes of one trace file, block by block, at most ``max_bytes`` in all.

    gzip is recognised by its magic number, not the file name, and is
    decompressed in a background thread (zlib releases the GIL) so that the
    caller decodes one block while the next is inflated. Raises
    :class:`TraceError` for a file over the limit, a truncated or corrupt gzip
    stream, or a file that cannot be read.
    """
    limit = int(max_bytes)
    with open_input(path, what="trace", error=TraceError) as handle:
        if handle.read(2) == _GZIP_MAGIC:
            handle.seek(0)
            yield from _in_background(_gunzip(handle, path, limit))
            return
        handle.seek(0)
        total = 0
        while block := _read(handle, path):
            total += len(block)
            if total > limit:
                raise _too_big(path, limit)
            yield block


def _read(handle: BinaryIO, path: Path) -> bytes:
    try:
        return handle.read(BLOCK_BYTES)
    except OSError as error:
        raise _unreadable(path, error) from None


def _unreadable(path: Path, error: OSError) -> TraceError:
    return TraceError(
        path, f"cannot read file ({error.strerror or error})", fix="check the path and permissions"
    )


def _too_big(path: Path, limit: int) -> TraceError:
    return TraceError(
        path,
        f"trace expands beyond the {limit / GIB:.3g} GiB limit",
        fix="raise it with --max-bytes (e.g. --max-bytes 32GiB) if the file is trusted",
    )


def _gunzip(handle: BinaryIO, path: Path, limit: int) -> Iterator[bytes]:
    """Decompress every gzip member of ``handle`` in blocks of at most BLOCK_BYTES, up to ``limit``."""
    chosen = inflater()
    decompressor = chosen.decompressor()
    member_started = False
    total = 0
    while chunk := _read(handle, path):
        while chunk:
            if decompressor.eof:  # a new gzip member (or zero padding) follows
                if not chunk.strip(b"\x00"):
                    break
                decompressor = chosen.decompressor()
            member_started = True
            try:
                # max_length bounds what one small compressed input may expand to in memory
                block = decompressor.decompress(chunk, BLOCK_BYTES)
            except chosen.error as error:
                raise TraceError(
                    path, f"corrupt gzip data ({error})", fix="copy or export the trace again"
                ) from None
            total += len(block)
            if total > limit:
                raise _too_big(path, limit)
            if block:
                yield block
            chunk = decompressor.unused_data if decompressor.eof else decompressor.unconsumed_tail
    if member_started and not decompressor.eof:
        raise TraceError(
            path,
            f"gzip stream is truncated after {total} bytes",
            fix="the file was cut short (profiler killed while writing, or a partial copy); copy it again",
        )
    if not member_started:
        raise TraceError(path, "empty gzip file", fix="export the trace again")


_DONE: Final = object()


def _in_background(blocks: Iterator[bytes], depth: int = 4) -> Iterator[bytes]:
    """Run ``blocks`` in a thread, ``depth`` blocks ahead of the consumer; errors re-raise here."""
    results: queue.Queue[object] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def offer(item: object) -> bool:
        """Put ``item`` unless the consumer has gone; True when it was put."""
        while not stop.is_set():
            try:
                results.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for block in blocks:
                if not offer(block):
                    return
            offer(_DONE)
        except BaseException as error:  # handed to the consumer, which raises it
            offer(error)

    worker = threading.Thread(target=produce, name="lightspeed-gunzip", daemon=True)
    worker.start()
    try:
        while (item := results.get()) is not _DONE:
            if isinstance(item, BaseException):
                raise item
            assert isinstance(item, bytes)
            yield item
    finally:
        stop.set()
        worker.join(timeout=1.0)
