"""The background writer: events leave the training thread as tuples on a deque.

The caller's cost per event is one ``deque.append`` of a tuple: no lock, no
thread wake-up, no I/O. A daemon thread sleeps until the flush interval has
passed or an important phase ended (``flush=True`` sets an event), then
drains the deque in one batch, encodes JSON lines, appends them to the rank's
file and flushes. Everything that touches the disk, including creating the
run directory and agreeing on the run id, happens on that thread.

Numbers are written as JSON numbers whatever their Python type (NumPy's scalars included). An
event that still cannot be encoded is left out, the events around it are written, and the
reason is kept in :attr:`EventWriter.failure` for the tracker to raise at its next call.

A process killed with SIGKILL loses only what was still pending: at most one
flush interval of events (a flushed write is in the OS page cache, which
survives the process). ``fsync=True`` also survives a machine crash, at the
cost of one fsync per flush.

Pending items are tuples (epoch times are ``anchor_ns + perf_counter_ns``)::

    ("step", step, start_ns, end_ns, tokens, samples, error)
    ("phase", phase, name, step, start_ns, end_ns)
    ("job_start", t_ns, fields)
    ("job_end", t_ns, status)
"""

from __future__ import annotations

import collections
import contextlib
import json
import logging
import numbers
import os
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final

import msgspec

from lightspeed.datafile import load_json
from lightspeed.errors import DataFileError
from lightspeed.goodput.events import RUN_FILE, SCHEMA_VERSION

_STOP: Final = ("stop",)
_LOG = logging.getLogger(__name__)


def plain_number(value: object) -> int | float:
    """A number of any numeric type (NumPy's ``int64``, ``float32`` ...) as the ``int`` or ``float``
    JSON can hold; the encoder's hook for the types it does not know.

    >>> import numpy as np
    >>> plain_number(np.int64(4096)), plain_number(np.float32(0.5))
    (4096, 0.5)
    """
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    raise TypeError(f"objects of type {type(value).__name__} are not JSON values")


ENCODER: Final = msgspec.json.Encoder(enc_hook=plain_number)


class EventWriter:
    """Append JSON lines to ``path`` from a background thread.

    ``anchor_ns`` converts the caller's ``time.perf_counter_ns()`` stamps into
    epoch nanoseconds; the conversion happens here, off the caller's thread.
    ``append`` is the caller's fast path (a bound ``deque.append``).
    ``on_written``, when given, receives each batch of items after it was
    written (on this thread): the tracker's feed into metric sinks.
    """

    def __init__(
        self,
        *,
        path: Path,
        run_id: str | None,
        segment_id: str,
        anchor_ns: int,
        flush_interval_s: float,
        fsync: bool,
        announce_dir: Path | None = None,
        rank: int = 0,
        on_written: Callable[[Sequence[tuple[Any, ...]]], None] | None = None,
    ) -> None:
        self.path = path
        self.announce_dir = announce_dir
        self.rank = rank
        self.on_written = on_written
        self.segment_id = segment_id
        self.anchor_ns = anchor_ns
        self.flush_interval_s = flush_interval_s
        self.fsync = fsync
        self.error: str | None = None  # why the file cannot be written (the training goes on)
        self.failure: str | None = None  # why an event was left out (the tracker raises it)
        self.num_written = 0
        self._run_id = run_id
        self._pending: collections.deque[tuple[Any, ...]] = collections.deque()
        self.append = self._pending.append
        self._wake = threading.Event()
        self._first_write = threading.Event()  # set once the first batch is on disk or the writer gave up
        self._thread = threading.Thread(target=self._run, name="lightspeed-goodput-writer", daemon=True)
        self._thread.start()

    def request_flush(self) -> None:
        """Wake the writer now (after an important phase) instead of at the next interval."""
        self._wake.set()

    def wait_first_write(self, timeout_s: float = 30.0) -> None:
        """Wait (up to ``timeout_s``) until the first batch (the job start) is written, or writing failed."""
        self._first_write.wait(timeout_s)

    def close(self, timeout_s: float = 30.0) -> None:
        """Write everything pending, close the file and stop the thread (waits up to ``timeout_s``)."""
        if self._thread.is_alive():
            self._pending.append(_STOP)
            self._wake.set()
            self._thread.join(timeout_s)

    # -- writer thread -------------------------------------------------------

    def _run(self) -> None:
        handle = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            run_id = resolve_run_id(self.path.parent, self._run_id)
            self._announce(run_id)
            handle = self.path.open("ab")
            _terminate_partial_line(handle, self.path)
            while not self._write_pending(handle, run_id):
                self._wake.wait(self.flush_interval_s)
                self._wake.clear()
        except OSError as error:  # disk full, permissions: the training job must go on
            self.error = f"{self.path}: {error.strerror or error}"
            _report_write_error(self.error)
            self._first_write.set()
            self._drop_until_stop()
        except Exception as error:  # a bug: kept for the tracker to raise, never a silently dead thread
            self.failure = f"the event writer stopped ({type(error).__name__}: {error})"
            _LOG.exception("goodput tracker: %s", self.failure)
            self._first_write.set()
            self._drop_until_stop()
        finally:
            self._first_write.set()
            if handle is not None:
                with contextlib.suppress(OSError):
                    handle.close()

    def _drop_until_stop(self) -> None:
        """After a write failure, drop each batch as it comes until ``close``: the training keeps
        recording, and what it records must not pile up in memory for the rest of the job."""
        pending = self._pending
        while True:
            while pending:
                if pending.popleft() is _STOP:
                    return
            self._wake.wait(self.flush_interval_s)
            self._wake.clear()

    def _announce(self, run_id: str) -> None:
        """Tell the ``lightspeed monitor run`` that launched this job where its log is.

        One small file per segment in the monitor's folder; a monitor folder
        that cannot be written never stops the training job.
        """
        if self.announce_dir is None:
            return
        note = {
            "run_dir": str(self.path.parent.resolve()),
            "run_id": run_id,
            "rank": self.rank,
            "pid": os.getpid(),
            "segment": self.segment_id,
        }
        with contextlib.suppress(OSError):
            self.announce_dir.mkdir(parents=True, exist_ok=True)
            target = self.announce_dir / f"{self.segment_id}.json"
            target.write_text(json.dumps(note), encoding="utf-8")

    def _write_pending(self, handle: Any, run_id: str) -> bool:
        """Encode and write everything pending; ``True`` once the stop item was reached."""
        lines: list[bytes] = []
        items: list[tuple[Any, ...]] = []
        stop = False
        pending = self._pending
        while pending:
            item = pending.popleft()
            if item is _STOP:
                stop = True
                break
            line = self._encode_or_note(item, run_id)
            if line is not None:
                lines.append(line)
                items.append(item)
        if lines:
            handle.write(b"".join(lines))
            handle.flush()
            if self.fsync:
                os.fsync(handle.fileno())
            self.num_written += len(lines)
        if lines or self.failure is not None:
            self._first_write.set()
        if items and self.on_written is not None:
            self.on_written(items)
        return stop

    def _encode_or_note(self, item: tuple[Any, ...], run_id: str) -> bytes | None:
        """The line of ``item``, or ``None`` with the reason kept in :attr:`failure` (the first one):
        one event that cannot be encoded must not take the batch around it down with it."""
        try:
            return self._encode(item, run_id)
        except (TypeError, ValueError, OverflowError) as error:
            if self.failure is None:
                self.failure = f"a {item[0]} event could not be written ({type(error).__name__}: {error})"
                _LOG.error("goodput tracker: %s; the events around it are written", self.failure)
            return None

    def _encode(self, item: tuple[Any, ...], run_id: str) -> bytes:
        anchor = self.anchor_ns
        kind = item[0]
        line: dict[str, Any] = {"v": SCHEMA_VERSION, "seg": self.segment_id, "type": kind}
        if kind == "step":
            _, step, start_ns, end_ns, tokens, samples, error = item
            line.update(
                step=step, start_ns=anchor + start_ns, end_ns=anchor + end_ns, tokens=tokens, samples=samples
            )
            if error:
                line["error"] = True
        elif kind == "phase":
            _, phase, name, step, start_ns, end_ns = item
            line.update(phase=phase, step=step, start_ns=anchor + start_ns, end_ns=anchor + end_ns)
            if name:
                line["name"] = name
        elif kind == "job_start":
            line.update(t_ns=anchor + item[1], **item[2], run_id=run_id)
        else:
            line.update(t_ns=anchor + item[1], status=item[2])
        return ENCODER.encode(line) + b"\n"


def _report_write_error(reason: str) -> None:
    """Log once, when the writer stops, that the run's events are lost (a log record, not a Python
    warning: this runs on the writer thread, where a warning turned into an error would be lost
    and ``warnings.catch_warnings`` in the training loop does not reach)."""
    _LOG.warning(
        "goodput tracker: cannot write the event log (%s); the training goes on but its steps and "
        "phases are not recorded; give the Tracker a run_dir it can write",
        reason,
    )


def _terminate_partial_line(handle: Any, path: Path) -> None:
    """End a line cut by a crash so that the new segment starts on its own line."""
    size = path.stat().st_size
    if size == 0:
        return
    with path.open("rb") as reader:
        reader.seek(size - 1)
        if reader.read(1) != b"\n":
            handle.write(b"\n")
            handle.flush()


def resolve_run_id(run_dir: Path, given: str | None) -> str:
    """The run id of ``run_dir``: ``given``, else the one in ``run.json``, else a new one.

    Ranks and restarts race to create ``run.json``; a hard link of a complete
    temporary file is atomic and never overwrites, so every writer reads the
    same id.
    """
    target = run_dir / RUN_FILE
    if given is not None:
        return given
    existing = _read_run_id(target)
    if existing is not None:
        return existing
    fresh = uuid.uuid4().hex[:16]
    fd, temporary = tempfile.mkstemp(dir=run_dir, prefix=".run-", suffix=".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump({"run_id": fresh, "created_ns": time.time_ns()}, handle)
        with contextlib.suppress(FileExistsError):  # another rank won the race
            os.link(temporary, target)
    finally:
        os.unlink(temporary)
    found = _read_run_id(target)
    return found if found is not None else fresh


def _read_run_id(path: Path) -> str | None:
    try:
        data = load_json(path, max_bytes=1 << 20, what="run.json")
    except DataFileError:
        return None
    run_id = data.get("run_id") if isinstance(data, dict) else None
    return run_id if isinstance(run_id, str) and run_id else None
