"""A Prometheus exporter (prometheus_client) with dcgm-exporter's metric names, plus lightspeed's own.

GPU counters keep the names, units and labels of NVIDIA's dcgm-exporter
(``DCGM_FI_DEV_GPU_UTIL`` in percent, ``DCGM_FI_DEV_POWER_USAGE`` in W,
``DCGM_FI_DEV_FB_USED`` in MiB, ``DCGM_FI_DEV_SM_CLOCK`` in MHz,
``DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION`` in mJ, ``DCGM_FI_PROF_*`` ratios and
bytes per second; labels ``gpu``, ``UUID``, ``device``, ``modelName``,
``Hostname``), so dashboards built for it read these unchanged. Every series
is exposed as a gauge (the energy counter too, as its value; ``rate()``
works on it). Host counters are ``lightspeed_host_*`` and
``lightspeed_process_*``. With a goodput run folder the exporter also reads its
ledger (again at most every ``refresh_s`` seconds) and exposes
``lightspeed_step_seconds`` (the last productive step, per rank),
``lightspeed_goodput_ratio``, ``lightspeed_mfu_ratio`` (when the run records
a peak), ``lightspeed_tokens_per_second`` and ``lightspeed_steps_total``.

Values come from the sampler's latest sample: a scrape never waits for a
device.
"""

from __future__ import annotations

import math
import threading
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from lightspeed.errors import DataFileError
from lightspeed.extras import import_extra
from lightspeed.goodput import Ledger, build_ledger, read_run
from lightspeed.monitor.backend import DeviceInfo
from lightspeed.monitor.metrics import METRICS
from lightspeed.monitor.sampler import Monitor
from lightspeed.records import Record

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric

DEFAULT_REFRESH_S: Final = 5.0


def import_prometheus() -> Any:
    """The prometheus_client module, or one clear error naming the extra."""
    return import_extra("prometheus_client", extra="monitor", purpose="the Prometheus exporter")


class _GoodputSource:
    """A goodput run's ledger, rebuilt when its files change (at most every ``refresh_s``)."""

    def __init__(self, run_dir: Path, refresh_s: float) -> None:
        self.run_dir = run_dir
        self.refresh_s = refresh_s
        self._lock = threading.Lock()
        self._checked_s = -math.inf
        self._stamp: tuple[tuple[str, float, int], ...] = ()
        self._ledger: Ledger | None = None
        self.error = ""

    def ledger(self) -> Ledger | None:
        with self._lock:
            now = time.monotonic()
            if now - self._checked_s >= self.refresh_s:
                self._checked_s = now
                stamp = tuple(
                    (path.name, path.stat().st_mtime, path.stat().st_size)
                    for path in sorted(self.run_dir.glob("rank-*.jsonl"))
                )
                if stamp != self._stamp:
                    self._stamp = stamp
                    self._rebuild()
            return self._ledger

    def _rebuild(self) -> None:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # a live run's last line may be half written
                self._ledger = build_ledger(run=read_run(self.run_dir))
            self.error = ""
        except DataFileError as error:
            self.error = str(error)


class MonitorCollector:
    """A prometheus_client collector over a running :class:`Monitor` (and a goodput run)."""

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

    def describe(self) -> list[Metric]:
        return []  # families depend on what the devices report: no registration-time collect

    def collect(self) -> Iterator[Metric]:
        import_prometheus()
        from prometheus_client.core import GaugeMetricFamily as gauge  # noqa: N813 - a factory

        sample = self.monitor.latest()
        devices = {device.device_id: device for device in self.monitor.devices}
        families: dict[str, Any] = {}
        if sample is not None:
            for device_id, values in sample.reading.items():
                device = devices.get(device_id)
                if device is None:
                    continue
                labels = self._labels(device)
                for metric, value in values.items():
                    spec = METRICS.get(metric)
                    if spec is None or value is None or not math.isfinite(value):
                        continue
                    family = families.get(spec.exporter_name)
                    if family is None:
                        help_text = f"{spec.description} ({spec.unit}; lightspeed {metric})"
                        family = families[spec.exporter_name] = gauge(
                            spec.exporter_name, help_text, labels=list(labels)
                        )
                    family.add_metric(list(labels.values()), spec.to_exporter(value))
        yield from families.values()
        yield from self._goodput(gauge)

    def _labels(self, device: DeviceInfo) -> dict[str, str]:
        if device.kind != "gpu":
            return {"Hostname": self.hostname}
        index = "" if device.index is None else str(device.index)
        return {
            "gpu": index,
            "UUID": device.uuid,
            "device": f"nvidia{index}",
            "modelName": device.name,
            "Hostname": self.hostname,
        }

    def _goodput(self, gauge: Any) -> Iterator[Any]:
        if self.goodput is None:
            return
        ledger = self.goodput.ledger()
        if ledger is None:
            return
        run = ledger.run_id
        yield _single(
            gauge,
            "lightspeed_goodput_ratio",
            "productive share of the run's wall time",
            run,
            ledger.goodput_fraction,
        )
        if ledger.mfu is not None:
            yield _single(
                gauge, "lightspeed_mfu_ratio", "model FLOP utilisation over the wall time", run, ledger.mfu
            )
        if ledger.tokens_per_s is not None:
            yield _single(
                gauge,
                "lightspeed_tokens_per_second",
                "tokens per second of wall time",
                run,
                ledger.tokens_per_s,
            )
        yield _single(
            gauge,
            "lightspeed_steps_total",
            "productive optimizer steps so far",
            run,
            float(ledger.steps.count),
        )
        steps = gauge(
            "lightspeed_step_seconds", "duration of the last productive step", labels=["run_id", "rank"]
        )
        for rank, seconds in _last_steps(self.goodput.run_dir).items():
            steps.add_metric([run, str(rank)], seconds)
        yield steps


def _single(gauge: Any, name: str, help_text: str, run_id: str, value: float) -> Any:
    family = gauge(name, help_text, labels=["run_id"])
    family.add_metric([run_id], value)
    return family


def _last_steps(run_dir: Path) -> dict[int, float]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            run = read_run(run_dir)
        except DataFileError:
            return {}
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
        """The metrics address Prometheus scrapes."""
        return f"http://{self.host}:{self.port}/metrics"


class ExporterServer:
    """An HTTP server for one collector (its own registry: no global state)."""

    def __init__(self, collector: MonitorCollector, *, host: str, port: int) -> None:
        prometheus = import_prometheus()
        self.registry = prometheus.CollectorRegistry(auto_describe=False)
        self.registry.register(collector)
        try:
            self._server, self._thread = prometheus.start_http_server(port, addr=host, registry=self.registry)
        except OSError as error:
            from lightspeed.errors import UserInputError

            raise UserInputError(
                f"cannot listen on {host}:{port} ({error.strerror or error}); choose another --port"
            ) from None
        self.exporter = Exporter(host=host, port=int(self._server.server_port))

    def metrics_text(self) -> str:
        """What a scrape returns now (the Prometheus text format)."""
        prometheus = import_prometheus()
        return str(prometheus.generate_latest(self.registry).decode("utf-8"))

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
