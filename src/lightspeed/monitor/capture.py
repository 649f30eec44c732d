"""The capture file: sampled counters as JSON lines, written by the sampler, read back untrusted.

Format, version 1 (``capture-<host>-<pid>.jsonl``; one object per line)::

    {"v": 1, "type": "capture_start", "t_ns": 1700000000000000000, "host": "node1", "pid": 42,
     "interval_s": 1.0, "backends": ["host", "nvml"], "meta": {...},
     "devices": [{"device_id": "gpu0", "kind": "gpu", "name": "NVIDIA H100 80GB HBM3",
                  "backend": "nvml", "index": 0, "uuid": "GPU-...", "details": {...}}, ...]}
    {"type": "sample", "t_ns": 1700000000100000000,
     "d": {"gpu0": {"gpu_util_ratio": 0.97, "power_w": 612.0, ...}, "host": {"cpu_util_ratio": 0.31}}}
    {"type": "note", "t_ns": ..., "device": "gpu0", "metric": "nvlink_tx_bytes_per_s",
     "text": "not reported by this device"}
    {"type": "capture_end", "t_ns": ..., "num_samples": 600, "num_late": 0}

Only the first line carries the version; it governs the file. Times are
integer nanoseconds since the Unix epoch (the sampler's monotonic clock
anchored to the wall clock once, like the goodput tracker's, so the two join
on one host). Metric names are those of :data:`lightspeed.monitor.metrics.METRICS`
in base SI units; a metric a sample lacks is absent (or ``null``). Readers keep
metrics they do not know (a newer writer's) and ignore unknown line types.
A last line cut short by a crash (no newline at its end) is skipped with a
warning; any other line that is not a JSON object, a number JSON does not
allow (``NaN``, ``Infinity``, ``1e400``), a sample timed before the capture
started and a capture without a sample are errors. A cumulative counter that
goes down (the energy counter after a driver reload or a GPU reset) is kept,
with a note: it restarted from 0.
"""

from __future__ import annotations

import array
import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Final

import msgspec
import numpy as np

from lightspeed.datafile import check_version, whole_number
from lightspeed.errors import DataFileError
from lightspeed.files import open_input
from lightspeed.goodput import TruncatedLogWarning
from lightspeed.goodput.jsonl import decode_object, json_lines, non_finite_number
from lightspeed.monitor.backend import DeviceInfo, Reading
from lightspeed.monitor.metrics import METRICS, out_of_range
from lightspeed.monitor.windows import FloatArray
from lightspeed.records import JsonDict, JsonObject, Record

CAPTURE_VERSION: Final = 1
READABLE_VERSIONS: Final = frozenset({1})
MAX_LINE_BYTES: Final = 1 << 20
MAX_SAMPLES: Final = 5_000_000  # ~14 hours at 10 ms
MAX_DEVICES: Final = 4096
MIN_INTERVAL_S: Final = 1e-6  # no sampler ticks faster (NVML's floor is 10 ms)
MAX_INTERVAL_S: Final = 86_400.0
NS_PER_S: Final = 1e9
_ENCODER: Final = msgspec.json.Encoder()
_FIX_WRITER: Final = (
    "pass a capture written by lightspeed monitor; a program that writes captures must follow its "
    "format (docs/monitor.md)"
)


@dataclass(frozen=True)
class Note(Record):
    """Something said once about a device's counter (``metric`` empty: about the device)."""

    device: str
    metric: str
    text: str
    t_s: float = 0.0


@dataclass(frozen=True, eq=False)
class Capture(Record):
    """One capture file read back: times in seconds since ``start_epoch_s``, one array per counter.

    ``series[device][metric]`` is a float64 array aligned with ``times_s``
    (NaN where a sample lacks the metric). ``complete`` is false when the
    capture has no end line (the sampler was killed, or is still running).
    """

    path: str
    version: int
    host: str
    pid: int
    start_epoch_s: float
    interval_s: float
    backends: tuple[str, ...]
    devices: tuple[DeviceInfo, ...]
    times_s: FloatArray
    series: Mapping[str, Mapping[str, FloatArray]]
    notes: tuple[Note, ...] = ()
    complete: bool = True
    num_late: int = 0
    meta: JsonObject = field(default_factory=dict)

    @property
    def num_samples(self) -> int:
        """How many samples the capture holds."""
        return len(self.times_s)

    @property
    def duration_s(self) -> float:
        """Seconds from the first to the last sample."""
        return float(self.times_s[-1] - self.times_s[0]) if self.num_samples > 1 else 0.0

    def values(self, device: str, metric: str) -> FloatArray | None:
        """The array of ``metric`` on ``device``, or ``None`` when it was never sampled."""
        return self.series.get(device, {}).get(metric)

    def device(self, device_id: str) -> DeviceInfo | None:
        """The device with this id, if the capture has it."""
        return next((device for device in self.devices if device.device_id == device_id), None)

    def to_dict(self) -> JsonDict:
        """A summary (the arrays stay out of JSON: read the file for them)."""
        return {
            "path": self.path,
            "version": self.version,
            "host": self.host,
            "pid": self.pid,
            "start_epoch_s": self.start_epoch_s,
            "interval_s": self.interval_s,
            "backends": list(self.backends),
            "devices": [device.to_dict() for device in self.devices],
            "num_samples": self.num_samples,
            "duration_s": self.duration_s,
            "metrics": {device: sorted(metrics) for device, metrics in self.series.items()},
            "notes": [note.to_dict() for note in self.notes],
            "complete": self.complete,
            "num_late": self.num_late,
        }


class CaptureWriter:
    """Writes one capture file (used by the sampler's thread; never by the caller's)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._handle: BinaryIO = path.open("xb")  # never overwrite another capture
        self._lines: list[bytes] = []

    def start(
        self,
        *,
        t_ns: int,
        host: str,
        pid: int,
        interval_s: float,
        backends: tuple[str, ...],
        devices: tuple[DeviceInfo, ...],
        meta: JsonObject,
    ) -> None:
        header = {
            "v": CAPTURE_VERSION,
            "type": "capture_start",
            "t_ns": t_ns,
            "host": host,
            "pid": pid,
            "interval_s": interval_s,
            "backends": list(backends),
            "meta": dict(meta),
            "devices": [device.to_dict() for device in devices],
        }
        self._lines.append(_ENCODER.encode(header) + b"\n")
        self.flush()

    def sample(self, t_ns: int, reading: Reading) -> None:
        kept = {
            device: {
                metric: value
                for metric, value in values.items()
                if value is not None and math.isfinite(value)
            }
            for device, values in reading.items()
        }
        self._lines.append(_ENCODER.encode({"type": "sample", "t_ns": t_ns, "d": kept}) + b"\n")

    def note(self, t_ns: int, note: Note) -> None:
        line = {"type": "note", "t_ns": t_ns, "device": note.device, "metric": note.metric, "text": note.text}
        self._lines.append(_ENCODER.encode(line) + b"\n")

    def end(self, t_ns: int, *, num_samples: int, num_late: int) -> None:
        line = {"type": "capture_end", "t_ns": t_ns, "num_samples": num_samples, "num_late": num_late}
        self._lines.append(_ENCODER.encode(line) + b"\n")
        self.flush()

    def flush(self) -> None:
        if self._lines:
            self._handle.write(b"".join(self._lines))
            self._lines.clear()
            self._handle.flush()

    def close(self) -> None:
        self.flush()
        self._handle.close()


@dataclass
class _Parsed:
    header: dict[str, Any]
    devices: tuple[DeviceInfo, ...]
    times: array.array[int]
    columns: dict[tuple[str, str], array.array[float]]
    notes: list[Note]
    end: dict[str, Any] | None = None
    last_count: dict[tuple[str, str], float] = field(default_factory=dict)  # of cumulative counters
    restarted: set[tuple[str, str]] = field(default_factory=set)  # counters already said to restart


def read_capture(path: str | Path) -> Capture:
    """Read a capture file (untrusted input); every problem names the file and line.

    Example::

        read_capture("runs/monitor/capture-node1-42.jsonl").devices[0].device_id
        # -> 'host'
    """
    source = Path(path)
    with open_input(source, what="monitor capture (capture-*.jsonl)") as handle:
        parsed = _parse(source, handle)
    header = parsed.header
    origin_ns = int(header["t_ns"])
    times = (
        (np.frombuffer(parsed.times, dtype=np.int64) - origin_ns) / NS_PER_S if parsed.times else np.zeros(0)
    )
    count = len(parsed.times)
    series: dict[str, dict[str, Any]] = {}
    for (device, metric), column in parsed.columns.items():
        values = np.frombuffer(column, dtype=np.float64)
        padded = np.full(count, np.nan)
        padded[: len(values)] = values
        series.setdefault(device, {})[metric] = padded
    end = parsed.end or {}
    return Capture(
        path=str(source),
        version=int(header["v"]),
        host=str(header.get("host", "")),
        pid=int(header.get("pid", 0)) if isinstance(header.get("pid"), int) else 0,
        start_epoch_s=origin_ns / NS_PER_S,
        interval_s=float(header["interval_s"]),
        backends=tuple(str(name) for name in header.get("backends", ()) if isinstance(name, str)),
        devices=parsed.devices,
        times_s=times,
        series=series,
        notes=tuple(parsed.notes),
        complete=parsed.end is not None,
        num_late=int(end.get("num_late", 0)) if isinstance(end.get("num_late"), int) else 0,
        meta=dict(header.get("meta") or {}) if isinstance(header.get("meta"), dict) else {},
    )


def _parse(path: Path, handle: BinaryIO) -> _Parsed:
    parsed: _Parsed | None = None
    pending_bad: int | None = None
    for number, line in json_lines(handle, path, MAX_LINE_BYTES):
        if not line.strip():
            continue
        if pending_bad is not None:  # a bad line is allowed only as the very last one
            raise _bad_line(path, pending_bad)
        event = decode_object(line, path=path, number=number)
        if event is None:
            _refuse_non_finite(path, number, line)
            if line.endswith(b"\n"):  # a whole line: no crash cut it short
                raise _bad_line(path, number)
            pending_bad = number
            continue
        if parsed is None:
            parsed = _start(path, number, event)
        else:
            _apply(path, number, event, parsed)
    if parsed is None:
        if pending_bad is not None:
            raise _bad_line(path, pending_bad)
        raise DataFileError(path, "empty file", fix="pass a capture written by lightspeed monitor")
    if pending_bad is not None:
        warnings.warn(
            f"{path}:{pending_bad}: skipped a line cut short by a crash", TruncatedLogWarning, stacklevel=3
        )
    if not parsed.times:
        raise DataFileError(
            path,
            "the capture holds no sample (the monitor stopped before its first tick)",
            fix="pass a capture with samples, or sample for longer",
        )
    return parsed


def _refuse_non_finite(path: Path, number: int, line: bytes) -> None:
    """A line that is a JSON object but for a number JSON does not allow: say which field."""
    found = non_finite_number(line)
    if found is not None:
        where, literal = found
        raise DataFileError(
            path,
            f"{literal} is not a finite number",
            line=number,
            field=where,
            fix="a counter without a value is left out (or null); check the program that wrote this capture",
        )


def _bad_line(path: Path, line: int) -> DataFileError:
    return DataFileError(
        path,
        "not a JSON object (only a crashed capture's last line may be cut short)",
        line=line,
        fix="repair or delete that line",
    )


def _start(path: Path, number: int, event: dict[str, Any]) -> _Parsed:
    if event.get("type") != "capture_start":
        raise DataFileError(
            path,
            "the first line is not a capture_start",
            line=number,
            field="type",
            value=event.get("type"),
            fix="pass a capture written by lightspeed monitor (capture-*.jsonl)",
        )
    check_version(event, READABLE_VERSIONS, path=path, what="capture", line=number)
    _whole(path, number, event, "t_ns")
    interval = event.get("interval_s")
    if (
        isinstance(interval, bool)
        or not isinstance(interval, int | float)
        or not MIN_INTERVAL_S <= interval < MAX_INTERVAL_S
    ):
        raise DataFileError(
            path,
            f"expected seconds from {MIN_INTERVAL_S:g} to {MAX_INTERVAL_S:g}",
            line=number,
            field="interval_s",
            value=interval,
            fix="the header's interval_s is the sampling interval in seconds (lightspeed monitor writes it)",
        )
    devices = event.get("devices")
    if not isinstance(devices, list) or not 0 < len(devices) <= MAX_DEVICES:
        raise DataFileError(
            path,
            f"expected a list of 1 to {MAX_DEVICES} devices",
            line=number,
            field="devices",
            fix=_FIX_WRITER,
        )
    infos = tuple(_device(path, number, item) for item in devices)
    if len({info.device_id for info in infos}) != len(infos):
        raise DataFileError(path, "two devices share an id", line=number, field="devices", fix=_FIX_WRITER)
    return _Parsed(header=event, devices=infos, times=array.array("q"), columns={}, notes=[])


def _device(path: Path, number: int, item: Any) -> DeviceInfo:
    if not isinstance(item, dict):
        raise DataFileError(path, "a device is not an object", line=number, field="devices", fix=_FIX_WRITER)
    texts = {key: item.get(key, "") for key in ("device_id", "kind", "name", "backend", "uuid")}
    if not all(isinstance(value, str) for value in texts.values()) or not texts["device_id"]:
        raise DataFileError(
            path,
            "a device needs string device_id, kind, name, backend",
            line=number,
            field="devices",
            fix=_FIX_WRITER,
        )
    index = item.get("index")
    details = item.get("details", {})
    return DeviceInfo(
        device_id=texts["device_id"],
        kind=texts["kind"],
        name=texts["name"],
        backend=texts["backend"],
        index=index if isinstance(index, int) and not isinstance(index, bool) else None,
        uuid=texts["uuid"],
        details=details if isinstance(details, dict) else {},
    )


def _apply(path: Path, number: int, event: dict[str, Any], parsed: _Parsed) -> None:
    kind = event.get("type")
    if parsed.end is not None and kind in ("sample", "note", "capture_end"):
        raise DataFileError(
            path,
            f"{kind} after capture_end",
            line=number,
            fix="keep one capture per file: the lines after capture_end belong to another capture",
        )
    if kind == "sample":
        _sample(path, number, event, parsed)
    elif kind == "note":
        device, metric, text = (event.get(key) for key in ("device", "metric", "text"))
        if isinstance(device, str) and isinstance(metric, str) and isinstance(text, str):
            t_s = (_whole(path, number, event, "t_ns") - int(parsed.header["t_ns"])) / NS_PER_S
            parsed.notes.append(Note(device=device, metric=metric, text=text[:500], t_s=t_s))
    elif kind == "capture_end":
        parsed.end = event
    elif kind == "capture_start":
        raise DataFileError(
            path,
            "a second capture_start: two captures were joined",
            line=number,
            fix="keep one capture per file",
        )


def _sample(path: Path, number: int, event: dict[str, Any], parsed: _Parsed) -> None:
    t_ns = _whole(path, number, event, "t_ns")
    times = parsed.times
    if times and t_ns < times[-1]:
        raise DataFileError(
            path,
            f"sample time goes backwards (the sample before is at t_ns {times[-1]})",
            line=number,
            field="t_ns",
            value=t_ns,
            fix="lightspeed monitor writes samples in time order: keep one capture per file and do not "
            "reorder its lines (sort them by t_ns if they were)",
        )
    if t_ns < int(parsed.header["t_ns"]):
        raise DataFileError(
            path,
            f"sample timed before the capture started (capture_start t_ns {parsed.header['t_ns']})",
            line=number,
            field="t_ns",
            value=t_ns,
            fix="pass a capture written by lightspeed monitor; two captures may have been joined",
        )
    if len(times) >= MAX_SAMPLES:
        raise DataFileError(
            path,
            f"more than {MAX_SAMPLES} samples",
            line=number,
            fix="sample at a longer interval or split the capture",
        )
    data = event.get("d")
    if not isinstance(data, dict):
        raise DataFileError(
            path,
            "a sample needs an object 'd' of device values",
            line=number,
            field="d",
            fix='write each sample as {"type": "sample", "t_ns": ..., "d": {device: {metric: value}}}',
        )
    known = {device.device_id for device in parsed.devices}
    index = len(times)
    times.append(t_ns)
    for device, values in data.items():
        if device not in known:
            raise DataFileError(
                path,
                "sample of a device the header does not list",
                line=number,
                value=device,
                fix=f"list it in the capture_start header's devices, or {_FIX_WRITER}",
            )
        if not isinstance(values, dict):
            raise DataFileError(
                path,
                "device values must be an object",
                line=number,
                field=f"d.{device}",
                fix="write them as {metric: value}",
            )
        for metric, value in values.items():
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                raise DataFileError(
                    path,
                    "a counter must be a finite number",
                    line=number,
                    field=f"d.{device}.{metric}",
                    value=value,
                    fix="write null for a counter without a value (it is left out)",
                )
            problem = out_of_range(metric, value)
            if problem:
                raise DataFileError(
                    path,
                    problem,
                    line=number,
                    field=f"d.{device}.{metric}",
                    value=value,
                    fix="a sampler wrote an impossible value: check the backend that produced this capture",
                )
            _note_reset(parsed, device, metric, float(value), t_ns)
            column = parsed.columns.get((device, metric))
            if column is None:
                column = parsed.columns[(device, metric)] = array.array("d")
            if len(column) < index:
                column.extend([math.nan] * (index - len(column)))
            column.append(float(value))


def _note_reset(parsed: _Parsed, device: str, metric: str, value: float, t_ns: int) -> None:
    """A cumulative counter that goes down restarted (a driver reload, a GPU reset): said once."""
    spec = METRICS.get(metric)
    if spec is None or spec.kind != "counter":
        return
    key = (device, metric)
    last = parsed.last_count.get(key)
    parsed.last_count[key] = value
    if last is None or value >= last or key in parsed.restarted:
        return
    parsed.restarted.add(key)
    parsed.notes.append(
        Note(
            device=device,
            metric=metric,
            text=(
                f"the counter went down ({last:g} to {value:g} {spec.unit}): it restarted from 0 (a driver "
                "reload or a GPU reset); increases count its new value after a drop, as Prometheus's "
                "increase() does, so what it gained just before the reset is missed"
            ),
            t_s=(t_ns - int(parsed.header["t_ns"])) / NS_PER_S,
        )
    )


def _whole(path: Path, number: int, event: dict[str, Any], key: str) -> int:
    return whole_number(event, key, path=path, line=number)
