"""What every counter source implements: NVML, DCGM, the host (psutil), and replay.

A backend is opened once (it finds its devices and takes the first reading
that rates need), read once per tick, and closed. :meth:`Backend.read` returns
``{device_id: {metric: value}}`` in base SI units with ``None`` for a metric
the device lacks; the sampler records that once per device and metric
(:class:`~lightspeed.monitor.capture.Note`) and keeps sampling the rest.
Backends never print; an import that needs a missing extra raises
:class:`~lightspeed.errors.MissingExtraError`, a machine that cannot do it
(no driver, no DCGM host engine) :class:`~lightspeed.errors.UnsupportedError`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TypeAlias

from lightspeed.records import JsonObject, Record

Values: TypeAlias = dict[str, float | None]
Reading: TypeAlias = dict[str, Values]


@dataclass(frozen=True)
class DeviceInfo(Record):
    """One sampled device: ``gpu0`` ... or ``host``.

    ``index`` is the NVML index (``None`` for the host); ``details`` holds
    what does not change while sampling (``num_cpus``, ``pci_bus_id``,
    ``mig_mode``, ``num_nvlinks``, ``driver_version`` ...).
    """

    device_id: str
    kind: str
    name: str
    backend: str
    index: int | None = None
    uuid: str = ""
    details: JsonObject = field(default_factory=dict)


class Backend(ABC):
    """A counter source. Subclasses set ``name`` and ``min_interval_s``."""

    name: str = "backend"
    min_interval_s: float = 0.01

    @abstractmethod
    def open(self) -> tuple[DeviceInfo, ...]:
        """Find the devices and take the first reading (rates need a previous one)."""

    @abstractmethod
    def read(self) -> Reading:
        """One reading of every device: ``{device_id: {metric: value or None}}``."""

    def close(self) -> None:  # noqa: B027 - most backends hold nothing to release
        """Release what :meth:`open` took (NVML handles, DCGM connections)."""

    def why_missing(self, device: str, metric: str) -> str | None:
        """Why the last reading has no value for ``metric`` of ``device``, when it is not that the
        device lacks the counter (the default, ``None``)."""
        return None

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def rate(previous: float | None, current: float | None, elapsed_s: float) -> float | None:
    """Increase per second of a cumulative counter; ``None`` when unknown or reset.

    >>> rate(100.0, 300.0, 2.0)
    100.0
    >>> rate(300.0, 100.0, 2.0) is None  # the counter wrapped or was reset
    True
    """
    if previous is None or current is None or elapsed_s <= 0 or current < previous:
        return None
    return (current - previous) / elapsed_s
