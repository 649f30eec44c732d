"""Play a recorded capture back as if its devices were here (tests, shared captures, demos).

``pace="samples"`` returns the next recorded sample on every read (a test
drives each tick); ``pace="time"`` returns the sample recorded at the same
time since the start as has passed since :meth:`ReplayBackend.open` (a live
view or an exporter replays at the recorded speed). ``loop=True`` starts
over after the last sample; otherwise the last sample repeats and
:attr:`ReplayBackend.exhausted` turns true.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np

from lightspeed.errors import UserInputError
from lightspeed.monitor.backend import Backend, DeviceInfo, Reading
from lightspeed.monitor.capture import Capture, read_capture


class ReplayBackend(Backend):
    """The devices and samples of a capture file (or a :class:`Capture` already read).

    Example::

        backend = ReplayBackend(capture_path)
        backend.open()[0].device_id, backend.read()["gpu0"]["power_w"]
        # -> ('gpu0', 612.0)
    """

    name = "replay"
    min_interval_s = 0.0

    def __init__(self, source: str | Path | Capture, *, pace: str = "samples", loop: bool = False) -> None:
        if pace not in ("samples", "time"):
            raise UserInputError(f"replay pace {pace!r} is not one of samples, time")
        self.source = source
        self.pace = pace
        self.loop = loop
        self.exhausted = False
        self._capture: Capture | None = None
        self._next = 0
        self._start_s = 0.0

    @property
    def capture(self) -> Capture:
        """The capture being replayed (read on :meth:`open`)."""
        if self._capture is None:
            raise UserInputError("open the replay backend before reading it")
        return self._capture

    @property
    def host(self) -> str:
        """The host that recorded the capture (``''`` before :meth:`open`, or when it names none)."""
        return self._capture.host if self._capture is not None else ""

    @property
    def device_ids(self) -> tuple[str, ...]:
        """The capture's device ids (none before :meth:`open`)."""
        return tuple(device.device_id for device in self._capture.devices) if self._capture else ()

    def open(self) -> tuple[DeviceInfo, ...]:
        capture = self.source if isinstance(self.source, Capture) else read_capture(self.source)
        if capture.num_samples == 0:
            raise UserInputError(f"{capture.path}: the capture holds no sample to replay")
        self._capture = capture
        self._next = 0
        self._start_s = time.perf_counter()
        return tuple(
            DeviceInfo(**{**device.to_dict(), "backend": f"replay:{device.backend}"})
            for device in capture.devices
        )

    def read(self) -> Reading:
        capture = self.capture
        index = self._index(capture)
        reading: Reading = {}
        for device, metrics in capture.series.items():
            reading[device] = {metric: _value(values[index]) for metric, values in metrics.items()}
        return reading

    def _index(self, capture: Capture) -> int:
        count = capture.num_samples
        if self.pace == "samples":
            index = self._next
            self._next += 1
        else:
            elapsed = time.perf_counter() - self._start_s
            span = capture.duration_s + capture.interval_s
            if self.loop and span > 0:
                elapsed = math.fmod(elapsed, span)
            index = int(np.searchsorted(capture.times_s - capture.times_s[0], elapsed, side="right")) - 1
        if index >= count:
            if self.loop:
                index %= count
            else:
                self.exhausted = True
                index = count - 1
        elif not self.loop and index == count - 1:
            self.exhausted = True  # the last recorded sample: a sampler stops after it
        return max(index, 0)


def _value(value: float) -> float | None:
    return None if math.isnan(value) else float(value)
