"""What the rules return: findings with their evidence, and the thresholds that made them fire."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

from lightspeed.errors import UserInputError
from lightspeed.monitor.backend import DeviceInfo
from lightspeed.monitor.capture import Capture
from lightspeed.monitor.metrics import METRICS
from lightspeed.records import Record


@dataclass(frozen=True)
class Thresholds(Record):
    """When a rule fires. Ratios are 0..1; seconds are seconds; cores are CPU seconds per second."""

    idle_busy_ratio: float = 0.10  # a GPU this busy or less is idle ...
    idle_min_s: float = 5.0  # ... when it stays so for this long
    starvation_share: float = 0.05  # data waits above this share of the wall time ...
    starvation_busy_ratio: float = 0.30  # ... with the GPUs this busy or less during them
    link_sol_ratio: float = 0.80  # link throughput at this share of the catalog SOL ...
    link_min_share: float = 0.25  # ... in this share of the samples
    throttle_busy_ratio: float = 0.50  # samples this busy count for throttling ...
    throttle_min_share: float = 0.10  # ... and throttled in this share of them
    straggler_ratio: float = 0.90  # a GPU's SM clock below this share of the median GPU's
    cpu_bound_cores: float = 0.80  # a job keeping this many cores busy during steps is CPU-bound
    contention_cores: float = 0.50  # other processes using this many cores during steps
    badput_share: float = 0.20  # one badput bucket taking this share of the wall time

    def __post_init__(self) -> None:
        for item in fields(self):
            value = getattr(self, item.name)
            if not math.isfinite(value) or value <= 0:
                raise UserInputError(f"threshold {item.name} must be a finite number > 0, got {value}")
            if item.name.endswith(("_ratio", "_share")) and value > 1:
                raise UserInputError(f"threshold {item.name} is a ratio in (0, 1], got {value}")


@dataclass(frozen=True)
class Evidence(Record):
    """One measured fact behind a finding: ``observed`` compared with ``threshold``.

    ``observed`` was measured over ``window_start_s`` .. ``window_end_s``
    (seconds since the capture started) or, when ``scope`` says so, over only
    part of it: e.g. *"data_stall time only: 4 stretches, 4 s"* for a ledger
    bucket, whose pieces lie between the window's ends.
    """

    counter: str
    device: str
    window_start_s: float
    window_end_s: float
    observed: float
    threshold: float
    comparison: str
    unit: str
    scope: str = ""


@dataclass(frozen=True)
class Finding(Record):
    """A rule that fired: what it says, the evidence, and what to try."""

    rule: str
    title: str
    message: str
    evidence: tuple[Evidence, ...]
    fix: str
    device: str = ""
    rank: int | None = None


@dataclass(frozen=True)
class Diagnosis(Record):
    """Every finding of a run, and why some rules could not be applied."""

    findings: tuple[Finding, ...]
    thresholds: Thresholds
    notes: tuple[str, ...] = ()


def fact(
    counter: str,
    device: str,
    window: tuple[float, float],
    observed: float,
    threshold: float,
    *,
    comparison: str,
    unit: str | None = None,
    scope: str = "",
) -> Evidence:
    spec = METRICS.get(counter)
    start_s, end_s = capture_window(window)
    return Evidence(
        counter=counter,
        device=device,
        window_start_s=start_s,
        window_end_s=end_s,
        observed=observed,
        threshold=threshold,
        comparison=comparison,
        unit=unit if unit is not None else (spec.unit if spec is not None else "ratio"),
        scope=scope,
    )


def capture_window(window: tuple[float, float]) -> tuple[float, float]:
    """``window`` (seconds since the capture started) cut at the capture's start: the first sample
    describes the interval before it, which can reach back before t=0, when nothing was captured.

    >>> capture_window((-0.2, 20.4))
    (0.0, 20.4)
    """
    start_s, end_s = window
    return max(start_s, 0.0), max(end_s, 0.0)


def where(device: DeviceInfo | None, capture: Capture) -> str:
    return label(device, capture) if device is not None else f"{capture.host}:host"


def label(device: DeviceInfo, capture: Capture) -> str:
    return f"{capture.host}:{device.device_id}" if capture.host else device.device_id
