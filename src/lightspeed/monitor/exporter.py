"""A Prometheus exporter (prometheus_client) with dcgm-exporter's metric names, plus lightspeed's own.

GPU counters keep the names, units and labels of NVIDIA's dcgm-exporter
(``DCGM_FI_DEV_GPU_UTIL`` in percent, ``DCGM_FI_DEV_POWER_USAGE`` in W,
``DCGM_FI_DEV_FB_USED`` in MiB, ``DCGM_FI_DEV_SM_CLOCK`` in MHz,
``DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION`` in mJ, ``DCGM_FI_PROF_*`` ratios and
bytes per second; labels ``gpu``, ``UUID``, ``device``, ``modelName``,
``Hostname``), so dashboards built for it read these unchanged; each HELP line
names the unit of the value exported (``(in MiB; ...)``, as dcgm-exporter's
do). Every series is exposed as a gauge (the energy counter too, as its value;
``rate()`` works on it). Host counters are ``lightspeed_host_*`` and
``lightspeed_process_*``. A GPU without an NVML index is labelled by its
device id, so no two series share their labels; a replayed capture is
labelled with the host that recorded it. With a goodput run folder the
exporter also reads its logs (again when they change, at most every
``refresh_s`` seconds, on a thread of its own) and exposes
``lightspeed_step_seconds`` (the last productive step, per rank),
``lightspeed_goodput_ratio``, ``lightspeed_mfu_ratio`` (when the run records
a peak), ``lightspeed_tokens_per_second`` and ``lightspeed_productive_steps``
(a gauge: a restart can turn steps already counted into lost progress).

Values come from the sampler's latest sample and the last read of the goodput
run: a scrape never waits for a device or for the run's logs (only the very
first scrape waits for the run's first read). A run whose first read fails is
refused (:meth:`MonitorCollector.check_goodput`: ``monitor serve`` exits 2 before
it listens); a later read that fails keeps the last values exported and warns once
(:class:`GoodputReadWarning`) until a read succeeds again.
"""

from __future__ import annotations

import errno
import math
import socket
import threading
import time
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from lightspeed.errors import DataFileError, UserInputError, first_line
from lightspeed.extras import import_extra
from lightspeed.goodput import Ledger, RunLog, build_ledger, read_run
from lightspeed.monitor.backend import Backend, DeviceInfo
from lightspeed.monitor.metrics import METRICS, MIB, MetricSpec
from lightspeed.monitor.replay import ReplayBackend
from lightspeed.monitor.sampler import Monitor
from lightspeed.records import Record

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric

DEFAULT_REFRESH_S: Final = 5.0
# A sample older than this many intervals (and STALE_FLOOR_S) is not exported: the sampler is alive
# but a backend call hangs (an NVML call that blocks), and a dashboard must not show it as live.
STALE_AFTER_INTERVALS: Final = 3
STALE_FLOOR_S: Final = 5.0
SAMPLE_AGE_METRIC: Final = "lightspeed_sample_age_seconds"

# (lightspeed's SI unit, exporter scale) -> the unit of the exported value, as dcgm-exporter's
# HELP lines name it (default-counters.csv: "GPU utilization (in %)", "SM clock frequency (in MHz)",
# "Framebuffer memory used (in MiB)", "Total energy consumption since boot (in mJ)").
_SCALED_UNITS: Final[dict[tuple[str, float], str]] = {
    ("ratio", 100.0): "%",
    ("Hz", 1e-6): "MHz",
    ("B", 1 / MIB): "MiB",
    ("J", 1e3): "mJ",
}


def exporter_unit(spec: MetricSpec) -> str:
    """The unit of ``spec``'s value as exported (``spec.exporter_unit`` when set).

    >>> exporter_unit(METRICS["memory_used_bytes"]), exporter_unit(METRICS["power_w"])
    ('MiB', 'W')
    """
    if spec.exporter_unit:
        return spec.exporter_unit
    if spec.exporter_scale == 1.0:
        return spec.unit
    return _SCALED_UNITS.get((spec.unit, spec.exporter_scale), f"{spec.unit} x {spec.exporter_scale:g}")


def _unit_phrase(unit: str) -> str:
    """``(in MiB)`` for a unit, ``(ratio, 0 to 1)`` for a share, ``(bitmask)`` for what has none."""
    if unit == "ratio":
        return "ratio, 0 to 1"
    return unit if unit in ("bitmask", "count", "code") else f"in {unit}"


def import_prometheus() -> Any:
    """The prometheus_client module, or one clear error naming the extra."""
    return import_extra("prometheus_client", extra="monitor", purpose="the Prometheus exporter")


class GoodputReadWarning(UserWarning):
    """A goodput run the exporter read before cannot be read now (its series keep their last values)."""


@dataclass(frozen=True)
class _Goodput:
    """What one read of a goodput run gives the exporter."""

    ledger: Ledger
    last_step_s: dict[int, float]  # per rank: the duration of its last productive step


class _GoodputSource:
    """A goodput run read again when its files change, at most every ``refresh_s``, on a thread.

    :meth:`latest` returns the last read at once (only the first call waits for the first read),
    so a scrape never waits for a long run's logs to be parsed.
    """

    def __init__(self, run_dir: Path, refresh_s: float) -> None:
        self.run_dir = run_dir
        self.refresh_s = refresh_s
        self.error = ""  # why the last read failed ("" when it succeeded)
        self._first_error: DataFileError | None = None
        self._warned = False  # the current run of failed reads was warned about
        self._lock = threading.Lock()
        self._checked_s = -math.inf
        self._stamp: tuple[tuple[str, int, int], ...] = ()
        self._latest: _Goodput | None = None
        self._thread: threading.Thread | None = None
        self._refresh_if_due()  # the first read starts now, before the first scrape
        self._first: threading.Thread | None = self._thread

    def latest(self) -> _Goodput | None:
        """The last read of the run (``None`` when it cannot be read); starts a due refresh."""
        first, self._first = self._first, None
        if first is not None:
            first.join()  # nothing to show before the first read: only the first scrape waits
        self._refresh_if_due()
        return self._latest

    def check_first_read(self) -> None:
        """Wait for the first read and raise why it failed (:class:`DataFileError`), if it did."""
        first, self._first = self._first, None
        if first is not None:
            first.join()
        if self._latest is None and self._first_error is not None:
            raise self._first_error

    def wait(self, timeout_s: float | None = None) -> None:
        """Wait for a refresh in flight (tests, and a clean shutdown)."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout_s)

    def _refresh_if_due(self) -> None:
        with self._lock:
            now = time.monotonic()
            busy = self._thread is not None and self._thread.is_alive()
            if busy or now - self._checked_s < self.refresh_s:
                return
            self._checked_s = now
            self._thread = threading.Thread(target=self._refresh, name="lightspeed-goodput", daemon=True)
            self._thread.start()

    def _refresh(self) -> None:
        try:
            stamp = tuple(
                (path.name, stat.st_mtime_ns, stat.st_size)
                for path in sorted(self.run_dir.glob("rank-*.jsonl"))
                for stat in (path.stat(),)
            )
        except OSError as error:  # the folder was removed or cannot be read
            self._failed(DataFileError(self.run_dir, f"cannot be read ({error.strerror or error})"))
            return
        if stamp == self._stamp and (self._latest is not None or self.error):
            return
        try:
            run = read_run(self.run_dir, quiet=True)  # a live run's last line may be half written
            self._latest = _Goodput(ledger=build_ledger(run=run), last_step_s=_last_steps(run))
            self.error, self._warned = "", False
        except DataFileError as error:  # a log that is not one
            self._failed(error)
        except OSError as error:  # one removed while read
            self._failed(DataFileError(self.run_dir, f"cannot be read ({error.strerror or error})"))
        self._stamp = stamp

    def _failed(self, error: DataFileError) -> None:
        """Keep why a read failed: the first read's error is raised by :meth:`check_first_read`,
        a later one warned about once (until a read succeeds again)."""
        self.error = str(error)
        if self._latest is None:
            self._first_error = self._first_error or error
            return
        if not self._warned:
            self._warned = True
            warnings.warn(
                f"the goodput run can no longer be read ({first_line(error)}); its series keep "
                "the values of the last read until it can be read again",
                GoodputReadWarning,
                stacklevel=1,
            )


class MonitorCollector:
    """A prometheus_client collector over a running :class:`Monitor` (and a goodput run).

    ``hostname`` labels the devices sampled here; a replayed capture's devices carry the host
    that recorded them.
    """

    def __init__(
        self,
        monitor: Monitor,
        *,
        hostname: str,
        goodput_run: Path | None = None,
        refresh_s: float = DEFAULT_REFRESH_S,
    ) -> None:
        self.monitor = monitor
        self.hostname = hostname
        self.goodput = _GoodputSource(goodput_run, refresh_s) if goodput_run is not None else None

    def check_goodput(self) -> None:
        """Wait for the goodput run's first read; raise :class:`DataFileError` (naming the folder and
        the fix) when it cannot be read: an empty folder, logs that are not goodput logs."""
        if self.goodput is not None:
            self.goodput.check_first_read()

    def describe(self) -> list[Metric]:
        return []  # families depend on what the devices report: no registration-time collect

    def collect(self) -> Iterator[Metric]:
        import_prometheus()
        from prometheus_client.core import GaugeMetricFamily as gauge  # noqa: N813 - a factory

        sample = self.monitor.latest()
        age_s = None if sample is None else max(0.0, time.time() - sample.t_epoch_s)
        if age_s is not None and age_s > max(STALE_AFTER_INTERVALS * self.monitor.interval_s, STALE_FLOOR_S):
            sample = None  # stale: the device series go (Prometheus marks them stale), the age stays
        devices = {device.device_id: device for device in self.monitor.devices}
        labels_of = device_labels(
            self.monitor.devices, hostname=self.hostname, hosts=_replay_hosts(self.monitor.backends)
        )
        families: dict[str, Any] = {}
        if sample is not None:
            for device_id, values in sample.reading.items():
                if device_id not in devices:
                    continue
                labels = labels_of[device_id]
                for metric, value in values.items():
                    spec = METRICS.get(metric)
                    if spec is None or value is None or not math.isfinite(value):
                        continue
                    family = families.get(spec.exporter_name)
                    if family is None:
                        help_text = (
                            f"{spec.description} ({_unit_phrase(exporter_unit(spec))}; lightspeed {metric})"
                        )
                        family = families[spec.exporter_name] = gauge(
                            spec.exporter_name, help_text, labels=list(labels)
                        )
                    family.add_metric(list(labels.values()), spec.to_exporter(value))
        yield from families.values()
        if age_s is not None:
            age = gauge(
                SAMPLE_AGE_METRIC,
                f"Seconds since the last sample (in s); device series are left out once it passes "
                f"{STALE_AFTER_INTERVALS} sampling intervals (at least {STALE_FLOOR_S:g} s): a backend hangs",
                labels=["Hostname"],
            )
            age.add_metric([self.hostname], age_s)
            yield age
        yield from self._goodput(gauge)

    def _goodput(self, gauge: Any) -> Iterator[Any]:
        if self.goodput is None:
            return
        latest = self.goodput.latest()
        if latest is None:
            return
        ledger = latest.ledger
        run = ledger.run_id
        yield _single(
            gauge,
            "lightspeed_goodput_ratio",
            "productive share of the run's wall time (ratio)",
            run,
            ledger.goodput_fraction,
        )
        if ledger.mfu is not None:
            yield _single(
                gauge,
                "lightspeed_mfu_ratio",
                "model FLOP utilisation over the wall time (ratio)",
                run,
                ledger.mfu,
            )
        if ledger.tokens_per_s is not None:
            yield _single(
                gauge,
                "lightspeed_tokens_per_second",
                "tokens per second of wall time (in tokens/s)",
                run,
                ledger.tokens_per_s,
            )
        yield _single(
            gauge,
            "lightspeed_productive_steps",
            "productive optimizer steps so far (a count; a restart can turn some into lost progress)",
            run,
            float(ledger.steps.count),
        )
        steps = gauge(
            "lightspeed_step_seconds",
            "duration of the last productive step (in s)",
            labels=["run_id", "rank"],
        )
        for rank, seconds in latest.last_step_s.items():
            steps.add_metric([run, str(rank)], seconds)
        yield steps


def device_labels(
    devices: Sequence[DeviceInfo], *, hostname: str, hosts: Mapping[str, str] | None = None
) -> dict[str, dict[str, str]]:
    """dcgm-exporter's labels per device id, distinct for every device.

    ``gpu`` is the NVML index; a GPU without one (or sharing one with another) gets its device
    id instead, so that no two series of a family carry the same labels. ``hosts`` overrides
    ``hostname`` per device (a replayed capture's own host).

    >>> gpus = [DeviceInfo(device_id=f"gpu{i}", kind="gpu", name="H100", backend="nvml") for i in (0, 1)]
    >>> [labels["gpu"] for labels in device_labels(gpus, hostname="node1").values()]
    ['gpu0', 'gpu1']
    """
    hosts = hosts or {}
    gpus = [device for device in devices if device.kind == "gpu"]
    indexes = [device.index for device in gpus if device.index is not None]
    labels: dict[str, dict[str, str]] = {}
    for device in devices:
        host = hosts.get(device.device_id) or hostname
        if device.kind != "gpu":
            labels[device.device_id] = {"Hostname": host}
            continue
        unique = device.index is not None and indexes.count(device.index) == 1
        gpu = str(device.index) if unique else device.device_id
        labels[device.device_id] = {
            "gpu": gpu,
            "UUID": device.uuid,
            "device": f"nvidia{device.index}" if unique else device.device_id,
            "modelName": device.name,
            "Hostname": host,
        }
    return labels


def _replay_hosts(backends: Sequence[Backend]) -> dict[str, str]:
    """device id -> the host that recorded it, for replayed captures."""
    hosts: dict[str, str] = {}
    for backend in backends:
        if isinstance(backend, ReplayBackend) and backend.host:
            hosts.update(dict.fromkeys(backend.device_ids, backend.host))
    return hosts


def _single(gauge: Any, name: str, help_text: str, run_id: str, value: float) -> Any:
    family = gauge(name, help_text, labels=["run_id"])
    family.add_metric([run_id], value)
    return family


def _last_steps(run: RunLog) -> dict[int, float]:
    last = {}
    for rank in run.ranks:
        steps = [step for segment in rank.segments for step in segment.steps if not step.error]
        if steps:
            last[rank.rank] = steps[-1].end_s - steps[-1].start_s
    return last


@dataclass(frozen=True)
class Exporter(Record):
    """A running exporter: where it listens."""

    host: str
    port: int

    @property
    def url(self) -> str:
        """The metrics address Prometheus scrapes (an IPv6 host in brackets).

        >>> Exporter(host="::1", port=9400).url
        'http://[::1]:9400/metrics'
        """
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/metrics"


# errors of bind() that are the address's fault, not the port's
_HOST_ERRNOS: Final = frozenset({errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT})


class ExporterServer:
    """An HTTP server for one collector (its own registry: no global state)."""

    def __init__(self, collector: MonitorCollector, *, host: str, port: int) -> None:
        prometheus = import_prometheus()
        self.registry = prometheus.CollectorRegistry(auto_describe=False)
        self.registry.register(collector)
        try:
            self._server, self._thread = prometheus.start_http_server(port, addr=host, registry=self.registry)
        except (OSError, UnicodeError) as error:  # UnicodeError: a host name IDNA cannot encode (a..b)
            raise UserInputError(_listen_error(host, port, error)) from None
        self.exporter = Exporter(host=host, port=int(self._server.server_port))

    def metrics_text(self) -> str:
        """What a scrape returns now (the Prometheus text format)."""
        prometheus = import_prometheus()
        return str(prometheus.generate_latest(self.registry).decode("utf-8"))

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def _listen_error(host: str, port: int, error: OSError | UnicodeError) -> str:
    """One line for a failed listen that blames the host or the port, whichever is at fault (a host
    name IDNA cannot encode, with an empty label or one over 63 characters, is the host's)."""
    reason = _bad_name(error) if isinstance(error, UnicodeError) else error.strerror or str(error)
    if isinstance(error, UnicodeError | socket.gaierror) or error.errno in _HOST_ERRNOS:
        return (
            f"cannot listen on --host {host} ({reason}); give an address of this machine "
            "(127.0.0.1, 0.0.0.0 for every interface, ::1 or :: for IPv6)"
        )
    where = f"[{host}]" if ":" in host else host
    return f"cannot listen on {where}:{port} ({reason}); choose another --port"


def _bad_name(error: UnicodeError) -> str:
    """Why IDNA refused a host name, from Python's "encoding with 'idna' codec failed (UnicodeError:
    label empty or too long)".

    >>> _bad_name(UnicodeError("encoding with 'idna' codec failed (UnicodeError: label empty or too long)"))
    'not a valid host name: label empty or too long'
    """
    text = str(error)
    inner = text[text.find("(") + 1 : -1] if text.endswith(")") and "(" in text else text
    return f"not a valid host name: {inner.removeprefix('UnicodeError: ')}"
