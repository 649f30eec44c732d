"""A large Kineto file's chunks decoded in worker processes while this one reads the next.

Decoding JSON (msgspec) and building columns hold the GIL: one process parses
at one core's speed whatever the machine has. For a large file (at least
``MIN_PARALLEL_BYTES`` on disk) the reader hands each chunk's bytes, cut between
two events, to a small pool of worker processes; each decodes its chunk and
builds its part of the columns with the same :class:`TableBuilder` code the
serial read runs, and this process merges the parts in file order (names
renumbered, rows offset), so the table is the serial table, column for
column. The first chunk is read here (it settles the time unit) and so is
the last (with the keys after the array).

Anything unusual sends the whole file back to the serial read, which then
gives its exact answer or error message: a cut that fell inside a string, a
damaged byte, an unexpected field type, or thread/stream ids written as text.
How many workers: ``LIGHTSPEED_PARSE_WORKERS=N`` asks for N (``0``: never); ``auto``, as many as
the machine has idle cores (the cores this process may use minus the 1-minute load average,
rounded), at most :data:`MAX_WORKERS`, and none unless at least 1.5 are idle: with no idle core
the pool measured slower than the serial read (pickling and merging cost more than the second
core gave back), with the second core of a 2-core machine free 2 workers read the 2M-event
tiled trace in 3.3-4.1 s against 4.2-4.8 s (docs/benchmarks.md). The trace commands set ``auto`` unless
the variable is set; a Python program that leaves it unset reads serially, because worker
processes import the program's main module (``multiprocessing``'s rule: it must guard its top
level with ``if __name__ == "__main__":``). Never inside the workers of ``--jobs`` or Ray.

With the compiled scanner (:mod:`~lightspeed.trace.io.kineto_columns`) ``auto`` means no worker
processes: the scanner releases the GIL, so :func:`read_pipelined` scans each chunk in a thread
while this thread cuts the next and builds columns from the one before, with the gzip thread
beside them; on the 2M-event tiled trace that measured faster than both the serial read and
2 worker processes (docs/benchmarks.md).
"""

from __future__ import annotations

import atexit
import logging
import multiprocessing
import os
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

import msgspec

from lightspeed.errors import UserInputError
from lightspeed.files import excerpt
from lightspeed.trace.io.kineto_columns import ChunkColumns, compiled_scanner, decode_chunk
from lightspeed.trace.io.kineto_stream import EventStream
from lightspeed.trace.io.kineto_table import TableBuilder

_LOG = logging.getLogger(__name__)
WORKERS_VARIABLE: Final = "LIGHTSPEED_PARSE_WORKERS"
MIN_PARALLEL_BYTES: Final = 16 << 20  # on disk; below this the pool's start costs more than it saves
MAX_WORKERS: Final = 4
AUTO: Final = "auto"  # what the CLI asks for (see the module docs)
MIN_IDLE_CORES: Final = 1.5  # rounded to the two workers the pool needs to beat the serial read
_POOL: dict[str, Any] = {}
_IN_WORKER: dict[str, bool] = {}


class ParallelReadError(Exception):
    """This file is read serially instead (its answer or its error is the serial one)."""


def forbid_in_this_process() -> None:
    """Called in worker processes of ``--jobs`` and Ray: they never start a pool of their own."""
    _IN_WORKER["yes"] = True


def num_workers(path: Path) -> int:
    """How many worker processes to read ``path`` with (0: read it serially)."""
    if _IN_WORKER or multiprocessing.current_process().daemon:
        return 0
    asked = asked_workers()  # checked whatever the file's size: a typo is said at once
    try:
        large = path.stat().st_size >= MIN_PARALLEL_BYTES
    except OSError:
        return 0
    if not large:
        return 0
    if asked is not None:
        return asked
    if compiled_scanner() is not None:
        _LOG.info("%s read in this process: the compiled scanner is faster than worker processes", path.name)
        return 0
    idle = idle_cores()
    workers = min(MAX_WORKERS, round(idle)) if idle >= MIN_IDLE_CORES else 0
    _LOG.info("parallel read of %s: %d workers (%.1f idle cores)", path.name, workers, idle)
    return workers


def asked_workers() -> int | None:
    """The workers ``$LIGHTSPEED_PARSE_WORKERS`` asks for (at most :data:`MAX_WORKERS`; unset: 0),
    ``None`` for ``auto``; anything else is a :class:`UserInputError` naming the variable."""
    asked = os.environ.get(WORKERS_VARIABLE, "").strip().lower()
    if asked == AUTO:
        return None
    if not asked:
        return 0
    if not (asked.isascii() and asked.isdigit()):
        raise UserInputError(
            f"{WORKERS_VARIABLE}={excerpt(asked)!r} is not a number of worker processes; "
            f"give 0 (read here), 1-{MAX_WORKERS} (more read as {MAX_WORKERS}), or auto"
        )
    digits = asked.lstrip("0")
    return MAX_WORKERS if len(digits) > len(str(MAX_WORKERS)) else min(MAX_WORKERS, int(digits or 0))


def idle_cores() -> float:
    """Cores this process may use minus the 1-minute load average (0 where it is unknown)."""
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = os.cpu_count() or 1
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        return 0.0
    return max(0.0, usable - load)


def _pool(workers: int) -> ProcessPoolExecutor:
    pool = _POOL.get("pool")
    if pool is None or _POOL.get("workers") != workers:
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
        context: Any = multiprocessing.get_context("forkserver" if os.name == "posix" else "spawn")
        if os.name == "posix":
            context.set_forkserver_preload([__name__])
        pool = ProcessPoolExecutor(
            max_workers=workers, mp_context=context, initializer=forbid_in_this_process
        )
        _POOL.update(pool=pool, workers=workers)
    return pool


@atexit.register
def _shutdown() -> None:
    for name in ("pool", "thread"):
        pool = _POOL.pop(name, None)
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)


def _decode_part(blob: bytes, time_unit: str, round_to_us: bool) -> dict[str, Any] | None:
    """Worker: one chunk's columns (``None``: the chunk does not decode cleanly; read serially)."""
    try:
        chunk = decode_chunk(blob)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None
    builder = TableBuilder(time_unit=time_unit, round_to_us=round_to_us)
    builder.add(chunk)
    return builder.export()


def read_parallel(path: Path, *, max_bytes: float, builder: TableBuilder, workers: int) -> EventStream:
    """Fill ``builder`` from ``path`` with ``workers`` processes; return the stream (its document).

    Raises :class:`ParallelReadError` when the file must be read serially (``builder`` is then spoiled),
    including for any error: the serial read finds the first one and words it exactly.
    """
    stream = EventStream(path, max_bytes=max_bytes)
    pending: deque[Future[dict[str, Any] | None]] = deque()
    with _serial_on_failure(path, "parallel", pending):
        pool = _pool(workers)
        first = True
        for piece in stream.pieces():
            if not isinstance(piece, bytes):  # the last chunk, read by the stream
                _drain(pending, builder, 0)
                builder.add(piece)
            elif first:  # read here: it settles the time unit before any worker needs it
                builder.add(decode_chunk(piece))
                first = False
            else:
                pending.append(pool.submit(_decode_part, piece, builder.time_unit, builder.round_to_us))
                _drain(pending, builder, 2 * workers)
        _drain(pending, builder, 0)
    _LOG.debug("read %s with %d worker processes", path, workers)
    return stream


def read_pipelined(path: Path, *, max_bytes: float, builder: TableBuilder) -> EventStream:
    """Fill ``builder`` from ``path``, each chunk scanned in a thread (the compiled scanner releases
    the GIL) while this thread cuts the next one and builds the columns of the one before.

    Raises :class:`ParallelReadError` like :func:`read_parallel` (a cut inside a string, damage:
    anything at all), and the file is then read serially for its exact answer.
    """
    stream = EventStream(path, max_bytes=max_bytes)
    pending: deque[Future[ChunkColumns]] = deque()
    with _serial_on_failure(path, "pipelined", pending):
        pool = _scanning_thread()
        for piece in stream.pieces():
            if isinstance(piece, bytes):
                pending.append(pool.submit(decode_chunk, piece))
            while pending and (len(pending) > 1 or not isinstance(piece, bytes)):
                builder.add(pending.popleft().result())
            if not isinstance(piece, bytes):  # the last chunk, read by the stream
                builder.add(piece)
    return stream


@contextmanager
def _serial_on_failure(path: Path, how: str, pending: deque[Future[Any]]) -> Iterator[None]:
    """Any failure of a ``how`` read becomes :class:`ParallelReadError` (the serial read then gives
    the answer or the exact error); chunks still pending are cancelled either way."""
    try:
        yield
    except ParallelReadError:
        _LOG.debug("%s read of %s falls back to serial: a chunk did not decode cleanly", how, path)
        raise
    except Exception as error:  # anything at all: the serial read gives the answer
        _LOG.debug("%s read of %s falls back to serial: %r", how, path, error)
        raise ParallelReadError from None
    finally:
        for future in pending:
            future.cancel()


def _scanning_thread() -> ThreadPoolExecutor:
    """One scanning thread per process (a forked child gets its own: threads do not survive a fork)."""
    pool = _POOL.get("thread")
    if pool is None or _POOL.get("thread_pid") != os.getpid():
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lightspeed-scan")
        _POOL.update(thread=pool, thread_pid=os.getpid())
    return pool


def _drain(pending: deque[Future[dict[str, Any] | None]], builder: TableBuilder, keep: int) -> None:
    """Merge finished parts in file order until at most ``keep`` are in flight."""
    while len(pending) > keep:
        _merge(pending.popleft().result(), builder)


def _merge(part: dict[str, Any] | None, builder: TableBuilder) -> None:
    if part is None:
        raise ParallelReadError
    builder.merge(part)
