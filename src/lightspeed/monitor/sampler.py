"""The sampler: a background thread reads every backend once per interval, never blocking the caller.

>>> import tempfile
>>> from pathlib import Path
>>> from lightspeed.monitor import HostBackend, Monitor, read_capture
>>> path = Path(tempfile.mkdtemp()) / "capture.jsonl"
>>> with Monitor(backends=[HostBackend()], interval_s=0.05, capture_path=path) as monitor:
...     monitor.wait_ready()[0].device_id
'host'
>>> read_capture(path).num_samples >= 1
True

:meth:`Monitor.start` returns at once: the backends are opened on the
sampler's thread (NVML start-up can take a second), and :meth:`Monitor.wait_ready`
waits for that when the caller wants the devices. Memory is bounded: the last
``max_samples`` samples stay in a ring for live views and exporters; the rest
live only in the capture file, which the thread flushes once a second. A tick
that comes late (the machine was busy) is counted in ``num_late`` and the
missed ticks are skipped rather than bunched. An error on the thread (a
backend that cannot open, a bug) stops sampling and is raised by
:meth:`Monitor.stop` in the caller's thread; optional backends (``auto``) that
cannot open are left out with a note instead.
"""

from __future__ import annotations

import collections
import math
import os
import socket
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Final

from lightspeed.clock import clock_anchor_ns
from lightspeed.errors import LightspeedError, UserInputError
from lightspeed.monitor.backend import Backend, DeviceInfo, Reading
from lightspeed.monitor.capture import CaptureWriter, Note
from lightspeed.records import JsonObject, Record

MAX_INTERVAL_S: Final = 3600.0
FLUSH_INTERVAL_S: Final = 1.0
DEFAULT_MAX_SAMPLES: Final = 86_400


@dataclass(frozen=True)
class Sample(Record):
    """One tick: when (seconds since the Unix epoch) and every device's values."""

    t_epoch_s: float
    reading: Mapping[str, Mapping[str, float | None]]


class Monitor:
    """Sample ``backends`` every ``interval_s`` seconds on a background thread.

    ``capture_path`` (optional) receives the capture file
    (:mod:`lightspeed.monitor.capture`); ``optional`` names backends that
    may fail to open (they are left out with a note); ``meta`` is stored in
    the capture's header.
    """

    def __init__(
        self,
        *,
        backends: Sequence[Backend],
        interval_s: float = 1.0,
        capture_path: str | Path | None = None,
        optional: frozenset[str] = frozenset(),
        max_samples: int = DEFAULT_MAX_SAMPLES,
        meta: JsonObject | None = None,
    ) -> None:
        if not backends:
            raise UserInputError("a monitor needs at least one backend (host, nvml, dcgm or replay)")
        _check_interval(interval_s, backends)
        if max_samples < 1:
            raise UserInputError(f"max_samples must be >= 1, got {max_samples}")
        self.backends = list(backends)
        self.interval_s = float(interval_s)
        self.capture_path = Path(capture_path) if capture_path is not None else None
        self.optional = optional
        self.meta = dict(meta or {})
        self.devices: tuple[DeviceInfo, ...] = ()
        self.notes: list[Note] = []
        self.num_samples = 0
        self.num_late = 0
        self._ring: collections.deque[Sample] = collections.deque(maxlen=max_samples)
        self._anchor_ns = clock_anchor_ns()
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._said: set[tuple[str, str]] = set()
        self._start_ns = 0
        self._open: list[Backend] = []
        self._writer: CaptureWriter | None = None
        self._tick_lock = threading.Lock()  # the thread's ticks and sample_now() read the backends
        self._ended = False  # the capture is closed: no more samples
        self._thread = threading.Thread(target=self._run, name="lightspeed-monitor", daemon=True)

    # -- the caller's side -------------------------------------------------------

    def start(self) -> Monitor:
        """Start sampling on the background thread and return at once."""
        if self._thread.ident is not None:
            raise UserInputError("this monitor was already started; make a new one")
        self._thread.start()
        return self

    def wait_ready(self, timeout_s: float = 60.0) -> tuple[DeviceInfo, ...]:
        """Wait until the backends are open; the devices, or the error that stopped the thread."""
        if not self._ready.wait(timeout_s):
            raise UserInputError(f"the monitor's backends did not open within {timeout_s:g} s")
        if self._error is not None and not self.devices:
            self._raise()
        return self.devices

    def sample_now(self) -> bool:
        """Take one sample now, outside the thread's schedule (a watched command has just ended:
        its last moments get a reading); ``False`` when the monitor is not sampling."""
        if not self._ready.is_set() or self._stop.is_set() or not self._thread.is_alive() or not self._open:
            return False
        self._tick()
        return True

    def stop(self, timeout_s: float = 30.0) -> None:
        """Stop sampling, close the capture and the backends; raise what stopped the thread early."""
        self._stop.set()
        if self._thread.ident is not None:
            self._thread.join(timeout_s)
        if self._error is not None:
            self._raise()

    @property
    def anchor_ns(self) -> int:
        """Epoch ns of ``time.perf_counter_ns() == 0`` in this monitor's stamps (``lightspeed.clock``)."""
        return self._anchor_ns

    @property
    def running(self) -> bool:
        """Whether the thread is sampling."""
        return self._thread.is_alive()

    @property
    def error(self) -> BaseException | None:
        """What stopped the sampler's thread, if anything did."""
        return self._error

    def latest(self) -> Sample | None:
        """The newest sample (``None`` before the first)."""
        ring = self._ring
        return ring[-1] if ring else None

    def samples(self) -> list[Sample]:
        """The samples still in the ring, oldest first (at most ``max_samples``)."""
        return list(self._ring)

    def __enter__(self) -> Monitor:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def _raise(self) -> None:
        error = self._error
        assert error is not None
        raise error

    # -- the sampler's thread ------------------------------------------------------

    def _run(self) -> None:
        try:
            self._open_backends()
        except BaseException as error:  # reported to the caller by wait_ready()/stop()
            self._error = error
            self._close()
            self._ready.set()
            return
        self._ready.set()
        try:
            self._loop()
        except BaseException as error:
            self._error = error
        finally:
            with self._tick_lock:  # after any sample_now() in flight, and none after it
                self._ended = True
                if self._writer is not None:
                    self._writer.end(self._now_ns(), num_samples=self.num_samples, num_late=self.num_late)
            self._close()

    def _open_backends(self) -> None:
        devices: dict[str, DeviceInfo] = {}
        for backend in self.backends:
            try:
                opened = backend.open()
            except LightspeedError as error:
                if backend.name not in self.optional:
                    raise
                self.notes.append(Note(device="", metric="", text=f"{backend.name} left out: {error}"))
                continue
            self._open.append(backend)
            for device in opened:
                devices[device.device_id] = _merge_device(devices.get(device.device_id), device)
        if not self._open:
            raise UserInputError("no backend could be opened; see the notes")
        self.devices = tuple(devices.values())
        self._start_ns = self._now_ns()
        if self.capture_path is not None:
            self._writer = CaptureWriter(self.capture_path)
            self._writer.start(
                t_ns=self._start_ns,
                host=socket.gethostname(),
                pid=os.getpid(),
                interval_s=self.interval_s,
                backends=tuple(backend.name for backend in self._open),
                devices=self.devices,
                meta=self.meta,
            )
            for note in self.notes:
                self._writer.note(self._now_ns(), note)

    def _loop(self) -> None:
        clock = time.perf_counter
        interval = self.interval_s
        # The first tick comes one interval after the backends opened: rates (CPU share, network,
        # process cores) are measured from one reading to the next, and open() took the first.
        next_tick = clock() + interval
        last_flush = clock()
        while True:
            stopped = self._stop.wait(max(0.0, next_tick - clock()))
            if stopped and self.num_samples:
                return
            self._tick()  # stopped before the first tick: one sample still, over the time since open
            if stopped or all(getattr(backend, "exhausted", False) for backend in self._open):
                return  # stopped, or a replay that reached its end
            next_tick += interval
            now = clock()
            if next_tick < now:
                missed = math.floor((now - next_tick) / interval) + 1
                self.num_late += missed
                next_tick += missed * interval
            if now - last_flush >= FLUSH_INTERVAL_S and self._writer is not None:
                self._writer.flush()
                last_flush = now

    def _tick(self) -> None:
        with self._tick_lock:
            if self._ended:
                return
            t_ns = self._now_ns()
            reading: Reading = {}
            for backend in self._open:
                for device, values in backend.read().items():
                    merged = reading.setdefault(device, {})
                    for metric, value in values.items():
                        if value is not None or metric not in merged:
                            merged[metric] = value
            self._say_missing(t_ns, reading)
            self._ring.append(Sample(t_epoch_s=t_ns / 1e9, reading=reading))
            self.num_samples += 1
            if self._writer is not None:
                self._writer.sample(t_ns, reading)

    def _say_missing(self, t_ns: int, reading: Reading) -> None:
        for device, values in reading.items():
            for metric, value in values.items():
                if value is None and (device, metric) not in self._said:
                    self._said.add((device, metric))
                    reasons = (backend.why_missing(device, metric) for backend in self._open)
                    note = Note(
                        device=device,
                        metric=metric,
                        text=next(
                            (reason for reason in reasons if reason),
                            "no value: the device does not report it (said once)",
                        ),
                        t_s=(t_ns - self._start_ns) / 1e9,
                    )
                    self.notes.append(note)
                    if self._writer is not None:
                        self._writer.note(t_ns, note)

    def _close(self) -> None:
        for backend in self._open:
            backend.close()
        self._open = []
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def _now_ns(self) -> int:
        return self._anchor_ns + time.perf_counter_ns()


def _merge_device(known: DeviceInfo | None, new: DeviceInfo) -> DeviceInfo:
    """One device seen by two backends (NVML and DCGM): NVML's name and ids, both backends named."""
    if known is None:
        return new
    details = {**new.details, **known.details}
    return DeviceInfo(
        device_id=known.device_id,
        kind=known.kind,
        name=known.name,
        backend=f"{known.backend}+{new.backend}",
        index=known.index if known.index is not None else new.index,
        uuid=known.uuid or new.uuid,
        details=details,
    )


def _check_interval(interval_s: float, backends: Sequence[Backend]) -> None:
    if not math.isfinite(interval_s) or interval_s <= 0 or interval_s > MAX_INTERVAL_S:
        raise UserInputError(
            f"the sampling interval must be in (0, {MAX_INTERVAL_S:g}] seconds, got {interval_s}"
        )
    floor = max(backend.min_interval_s for backend in backends)
    if interval_s < floor:
        slowest = max(backends, key=lambda backend: backend.min_interval_s)
        raise UserInputError(
            f"the {slowest.name} backend samples at most every {floor * 1e3:g} ms; "
            f"got an interval of {interval_s * 1e3:g} ms"
        )
