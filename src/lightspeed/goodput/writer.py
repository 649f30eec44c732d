"""The background writer: events leave the training thread as tuples on a queue.

The caller's cost per event is one ``SimpleQueue.put`` of a tuple. A daemon
thread turns tuples into JSON lines, appends them to the rank's file, and
flushes when the flush interval has passed or an important phase ended
(``flush=True``). Everything that touches the disk, including creating the run
directory and agreeing on the run id, happens on that thread.

A process killed with SIGKILL loses only what was still buffered: at most one
flush interval of events (a flushed write is in the OS page cache, which
survives the process). ``fsync=True`` also survives a machine crash, at the
cost of one fsync per flush.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Final

import msgspec

from lightspeed.goodput.schema import RUN_FILE, SCHEMA_VERSION

# Queue items: (kind, payload, flush). kind "event" carries a dict; "stop" ends the thread.
_STOP: Final = ("stop", None, True)
_ENCODER: Final = msgspec.json.Encoder()


class EventWriter:
    """Append JSON lines to ``path`` from a background thread.

    ``anchor_ns`` converts the caller's ``time.perf_counter_ns()`` stamps into
    epoch nanoseconds (``epoch = anchor_ns + perf_counter_ns``); the conversion
    happens here, off the caller's thread.
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
    ) -> None:
        self.path = path
        self.segment_id = segment_id
        self.anchor_ns = anchor_ns
        self.flush_interval_s = flush_interval_s
        self.fsync = fsync
        self.error: str | None = None
        self.num_written = 0
        self._run_id = run_id
        self._queue: queue.SimpleQueue[tuple[str, Any, bool]] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="lightspeed-goodput-writer", daemon=True)
        self._thread.start()

    def put(self, item: tuple[str, Any, bool]) -> None:
        """Hand one ``(kind, payload, flush)`` item to the writer thread (no I/O here)."""
        self._queue.put(item)

    def close(self, timeout_s: float = 30.0) -> None:
        """Flush everything, close the file and stop the thread (waits up to ``timeout_s``)."""
        if self._thread.is_alive():
            self._queue.put(_STOP)
            self._thread.join(timeout_s)

    # -- writer thread -------------------------------------------------------

    def _run(self) -> None:
        handle = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            run_id = resolve_run_id(self.path.parent, self._run_id)
            handle = self.path.open("ab")
            _terminate_partial_line(handle, self.path)
            self._loop(handle, run_id)
        except OSError as error:  # disk full, permissions: the training job must go on
            self.error = f"{self.path}: {error.strerror or error}"
            self._drain()
        finally:
            if handle is not None:
                with contextlib.suppress(OSError):
                    handle.close()

    def _loop(self, handle: Any, run_id: str) -> None:
        buffer: list[bytes] = []
        next_flush = time.monotonic() + self.flush_interval_s
        while True:
            timeout = max(0.0, next_flush - time.monotonic()) if buffer else None
            try:
                kind, payload, flush = self._queue.get(timeout=timeout)
            except queue.Empty:
                self._flush(handle, buffer)
                next_flush = time.monotonic() + self.flush_interval_s
                continue
            if kind == "stop":
                self._flush(handle, buffer)
                return
            buffer.append(self._encode(payload, run_id))
            if flush or time.monotonic() >= next_flush:
                self._flush(handle, buffer)
                next_flush = time.monotonic() + self.flush_interval_s

    def _encode(self, payload: dict[str, Any], run_id: str) -> bytes:
        line: dict[str, Any] = {"v": SCHEMA_VERSION, "seg": self.segment_id}
        for key, value in payload.items():
            if key.endswith("_ns") and isinstance(value, int) and key != "anchor_ns":
                value = self.anchor_ns + value
            line[key] = value
        if line.get("type") == "job_start":
            line["run_id"] = run_id
        return _ENCODER.encode(line) + b"\n"

    def _flush(self, handle: Any, buffer: list[bytes]) -> None:
        if not buffer:
            return
        handle.write(b"".join(buffer))
        handle.flush()
        if self.fsync:
            os.fsync(handle.fileno())
        self.num_written += len(buffer)
        buffer.clear()

    def _drain(self) -> None:
        while True:
            kind, _, _ = self._queue.get()
            if kind == "stop":
                return


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
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    run_id = data.get("run_id") if isinstance(data, dict) else None
    return run_id if isinstance(run_id, str) and run_id else None
