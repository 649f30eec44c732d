"""Rules that explain a run from its counters; every finding names its evidence.

Each :class:`Finding` says what was seen, on which device, over which window
(seconds since the first capture started), against which threshold, and what
to try. The rules follow the seed's performance engineer: utilisation low
for long means idle time (suspect data loading or synchronisation); a GPU idle
while the job waits for data is loader starvation; link throughput near the
link's SOL from the catalog means communication is the culprit; clock event
reasons say when power or heat slowed a busy GPU; one rank or GPU slower than
the rest is a straggler. Without GPUs, the host rules say whether the steps
were bound by the host's CPU and whether other processes took CPU from them.
Thresholds are a :class:`Thresholds` record (the defaults are below).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from lightspeed.catalog import Catalog
from lightspeed.errors import UserInputError
from lightspeed.monitor.backend import DeviceInfo
from lightspeed.monitor.capture import Capture
from lightspeed.monitor.join import CounterLedger
from lightspeed.monitor.metrics import METRICS, THROTTLE_BITS, throttle_names
from lightspeed.records import Record
from lightspeed.units import format_duration, format_percent


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

    def __post_init__(self) -> None:
        for item in fields(self):
            value = getattr(self, item.name)
            if not math.isfinite(value) or value <= 0:
                raise UserInputError(f"threshold {item.name} must be a finite number > 0, got {value}")
            if item.name.endswith(("_ratio", "_share")) and value > 1:
                raise UserInputError(f"threshold {item.name} is a ratio in (0, 1], got {value}")


@dataclass(frozen=True)
class Evidence(Record):
    """One measured fact behind a finding: ``observed`` compared with ``threshold``."""

    counter: str
    device: str
    window_start_s: float
    window_end_s: float
    observed: float
    threshold: float
    comparison: str
    unit: str


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


def diagnose(
    *,
    captures: Sequence[Capture],
    joined: CounterLedger | None = None,
    catalog: Catalog | None = None,
    thresholds: Thresholds | None = None,
) -> Diagnosis:
    """Apply every rule to ``captures`` (and to their join with a goodput run, when given).

    >>> diagnose(captures=[read_capture(path)]).findings  # doctest: +SKIP
    (Finding(rule='idle_gpu', ...),)
    """
    limits = thresholds or Thresholds()
    if not captures:
        raise UserInputError("diagnose needs at least one capture")
    origin = min(capture.start_epoch_s for capture in captures)
    findings: list[Finding] = []
    notes: list[str] = []
    for capture in captures:
        shift = capture.start_epoch_s - origin
        for device in capture.devices:
            if device.kind != "gpu":
                continue
            findings.extend(_idle(capture, device, shift, limits))
            findings.extend(_throttling(capture, device, shift, limits))
            found, note = _links(capture, device, shift, limits, catalog)
            findings.extend(found)
            notes.extend(note)
    findings.extend(_gpu_stragglers(captures, origin, limits))
    if joined is not None:
        run_shift = joined.origin_epoch_s - origin
        findings.extend(_starvation(joined, run_shift, limits))
        findings.extend(_rank_stragglers(joined, run_shift))
        if joined.num_gpus == 0:
            findings.extend(_host_rules(joined, captures, run_shift, limits))
    elif not any(device.kind == "gpu" for capture in captures for device in capture.devices):
        notes.append("host counters only and no goodput run joined: the host rules need the tracker's steps")
    return Diagnosis(findings=tuple(findings), thresholds=limits, notes=tuple(dict.fromkeys(notes)))


# -- GPU rules --------------------------------------------------------------------


def _busy(capture: Capture, device: str) -> tuple[str, Any] | None:
    for metric in ("sm_active_ratio", "gpu_util_ratio"):
        values = capture.values(device, metric)
        if values is not None and np.any(~np.isnan(values)):
            return metric, values
    return None


def _label(device: DeviceInfo, capture: Capture) -> str:
    return f"{capture.host}:{device.device_id}" if capture.host else device.device_id


def _idle(capture: Capture, device: DeviceInfo, shift: float, limits: Thresholds) -> list[Finding]:
    busy = _busy(capture, device.device_id)
    if busy is None:
        return []
    metric, values = busy
    idle = values < limits.idle_busy_ratio
    stretches = _runs(capture.times_s, idle, capture.interval_s)
    long = [(start, end) for start, end in stretches if end - start >= limits.idle_min_s]
    if not long:
        return []
    start, end = max(long, key=lambda span: span[1] - span[0])
    inside = (capture.times_s > start) & (capture.times_s <= end) & idle
    observed = float(np.nanmean(values[inside]))
    total = sum(e - s for s, e in long)
    host = _host_mean(capture, "cpu_util_ratio", inside)
    evidence = [
        _fact(
            metric,
            _where(device, capture),
            (start + shift, end + shift),
            observed,
            limits.idle_busy_ratio,
            comparison="<",
        )
    ]
    hint = "suspect data loading or synchronisation"
    if host is not None:
        evidence.append(
            _fact(
                "cpu_util_ratio",
                _where(None, capture),
                (start + shift, end + shift),
                host,
                0.0,
                comparison="info",
            )
        )
        hint = "the host was busy then: suspect data loading" if host >= 0.5 else hint
    label = _label(device, capture)
    return [
        Finding(
            rule="idle_gpu",
            title=f"{label} idle for {format_duration(total)}",
            message=(
                f"{label} ({device.name}) stayed below {format_percent(limits.idle_busy_ratio)} {metric} for "
                f"{format_duration(total)} in {len(long)} stretch(es) of at least "
                f"{format_duration(limits.idle_min_s)}; "
                f"the longest, {format_duration(end - start)} from t={start + shift:.1f} s, averaged "
                f"{format_percent(observed)}: {hint}"
            ),
            evidence=tuple(evidence),
            fix="overlap data loading with compute (more loader workers, prefetch, pinned memory); "
            "look for host-side synchronisation (.item(), logging) in the step",
            device=label,
        )
    ]


def _throttling(capture: Capture, device: DeviceInfo, shift: float, limits: Thresholds) -> list[Finding]:
    reasons = capture.values(device.device_id, "clock_event_reasons")
    if reasons is None:
        return []
    valid = ~np.isnan(reasons)
    busy = _busy(capture, device.device_id)
    if busy is not None:
        valid &= np.nan_to_num(busy[1], nan=0.0) >= limits.throttle_busy_ratio
    if not valid.any():
        return []
    masks = reasons[valid].astype(np.int64)
    slowed = (masks & sum(THROTTLE_BITS)) != 0
    share = float(slowed.mean())
    if share < limits.throttle_min_share:
        return []
    names = sorted({name for mask in masks[slowed].tolist() for name in throttle_names(int(mask))})
    times = capture.times_s[valid][slowed]
    start, end = float(times[0] - capture.interval_s), float(times[-1])
    evidence = [
        _fact(
            "clock_event_reasons",
            _where(device, capture),
            (start + shift, end + shift),
            share,
            limits.throttle_min_share,
            comparison=">=",
        )
    ]
    clock_text = ""
    clocks = capture.values(device.device_id, "sm_clock_hz")
    top = capture.values(device.device_id, "max_sm_clock_hz")
    if clocks is not None:
        slowed_clock = float(np.nanmean(clocks[valid][slowed]))
        top_clock = float(np.nanmax(top)) if top is not None and np.any(~np.isnan(top)) else math.nan
        evidence.append(
            _fact(
                "sm_clock_hz",
                _where(device, capture),
                (start + shift, end + shift),
                slowed_clock,
                top_clock,
                comparison="info",
            )
        )
        if math.isfinite(top_clock) and top_clock > 0:
            clock_text = (
                f"; the SM clock averaged {slowed_clock / 1e6:.0f} MHz of {top_clock / 1e6:.0f} MHz then"
            )
    label = _label(device, capture)
    thermal = any("thermal" in name for name in names)
    return [
        Finding(
            rule="throttling",
            title=f"{label} throttled ({', '.join(names)})",
            message=(
                f"{label} ({device.name}) had its clocks held down by {', '.join(names)} in "
                f"{format_percent(share)} of its busy samples (threshold "
                f"{format_percent(limits.throttle_min_share)}), "
                f"t={start + shift:.1f}..{end + shift:.1f} s{clock_text}"
            ),
            evidence=tuple(evidence),
            fix="check cooling and inlet temperature"
            if thermal
            else "check the power limit (nvidia-smi -q -d POWER) and the node's power budget",
            device=label,
        )
    ]


def _links(
    capture: Capture, device: DeviceInfo, shift: float, limits: Thresholds, catalog: Catalog | None
) -> tuple[list[Finding], list[str]]:
    metrics = [
        m
        for m in (
            "nvlink_tx_bytes_per_s",
            "nvlink_rx_bytes_per_s",
            "pcie_tx_bytes_per_s",
            "pcie_rx_bytes_per_s",
        )
        if capture.values(device.device_id, m) is not None
    ]
    if not metrics:
        return [], []
    accelerator = catalog.find_device(device.name) if catalog is not None else None
    if accelerator is None:
        return [], [f"no catalog SOL for {device.name!r}: link throughput not compared with a SOL"]
    findings = []
    for link, attachment in (("nvlink", accelerator.scale_up), ("pcie", accelerator.host_link)):
        if attachment is None:
            continue
        sol = attachment.per_direction_bytes_per_s
        directions = [capture.values(device.device_id, f"{link}_{d}_bytes_per_s") for d in ("tx", "rx")]
        present = [values for values in directions if values is not None]
        if not present or sol <= 0:
            continue
        peak = np.nanmax(np.vstack(present), axis=0) / sol
        valid = ~np.isnan(peak)
        near = valid & (peak >= limits.link_sol_ratio)
        share = float(near.sum() / valid.sum()) if valid.any() else 0.0
        if share < limits.link_min_share:
            continue
        times = capture.times_s[near]
        start, end = float(times[0] - capture.interval_s), float(times[-1])
        observed = float(np.mean(peak[near]))
        label = _label(device, capture)
        name = "NVLink" if link == "nvlink" else "PCIe"
        findings.append(
            Finding(
                rule="communication_bound",
                title=f"{label} {name} near its SOL",
                message=(
                    f"{label} ({device.name}) moved {format_percent(observed)} of its {name} SOL "
                    f"({sol / 1e9:.0f} GB/s per direction, catalog {accelerator.name}) in "
                    f"{format_percent(share)} of "
                    f"the samples (threshold {format_percent(limits.link_sol_ratio)} of SOL in "
                    f"{format_percent(limits.link_min_share)}), t={start + shift:.1f}..{end + shift:.1f} s: "
                    "communication is the bottleneck there"
                ),
                evidence=(
                    _fact(
                        f"{link}_bytes_per_s / SOL",
                        _where(device, capture),
                        (start + shift, end + shift),
                        observed,
                        limits.link_sol_ratio,
                        comparison=">=",
                    ),
                ),
                fix="overlap communication with compute, shard differently (less tensor parallelism "
                "across links), or compress gradients"
                if link == "nvlink"
                else "keep data on the device; pin memory and batch copies",
                device=label,
            )
        )
    return findings, []


def _gpu_stragglers(captures: Sequence[Capture], origin: float, limits: Thresholds) -> list[Finding]:
    clocks = []
    for capture in captures:
        for device in capture.devices:
            values = capture.values(device.device_id, "sm_clock_hz")
            busy = _busy(capture, device.device_id)
            if values is None or busy is None:
                continue
            mask = (~np.isnan(values)) & (np.nan_to_num(busy[1], nan=0.0) >= limits.throttle_busy_ratio)
            if mask.sum() >= 3:
                clocks.append((capture, device, float(np.median(values[mask])), mask))
    if len(clocks) < 2:
        return []
    typical = statistics.median(clock for _, _, clock, _ in clocks)
    findings = []
    for capture, device, clock, mask in clocks:
        if clock >= limits.straggler_ratio * typical:
            continue
        shift = capture.start_epoch_s - origin
        start, end = float(capture.times_s[mask][0] - capture.interval_s), float(capture.times_s[mask][-1])
        label = _label(device, capture)
        findings.append(
            Finding(
                rule="straggler",
                title=f"{label} runs slower than the other GPUs",
                message=(
                    f"{label} ({device.name}) ran its busy time at a median SM clock of {clock / 1e6:.0f} "
                    "MHz, "
                    f"{format_percent(clock / typical)} of the median GPU's {typical / 1e6:.0f} MHz "
                    f"(threshold {format_percent(limits.straggler_ratio)}): every collective waits for it"
                ),
                evidence=(
                    _fact(
                        "sm_clock_hz",
                        _where(device, capture),
                        (start + shift, end + shift),
                        clock,
                        limits.straggler_ratio * typical,
                        comparison="<",
                    ),
                ),
                fix="look at this GPU's throttle reasons, temperature and power; drain the node if it "
                "persists",
                device=label,
            )
        )
    return findings


# -- rules over the joined ledger ---------------------------------------------------


def _run_window(joined: CounterLedger, shift: float) -> tuple[float, float]:
    return shift, shift + joined.ledger.total_s


def _starvation(joined: CounterLedger, shift: float, limits: Thresholds) -> list[Finding]:
    stall = joined.bucket("data_stall")
    total = joined.ledger.total_s
    if stall is None or total <= 0:
        return []
    share = stall.seconds / total
    if share < limits.starvation_share:
        return []
    start, end = _run_window(joined, shift)
    counters = stall.counters
    evidence = [
        _fact(
            "ledger data_stall share",
            "run",
            (start, end),
            share,
            limits.starvation_share,
            comparison=">=",
            unit="ratio",
        )
    ]
    if joined.num_gpus:
        busy = counters.gpu_busy_ratio
        if busy is None or busy > limits.starvation_busy_ratio:
            return []
        evidence.append(
            _fact(
                joined.busy_counter,
                "gpus",
                (start, end),
                busy,
                limits.starvation_busy_ratio,
                comparison="<=",
                unit="ratio",
            )
        )
        where = f"the GPUs were {format_percent(busy)} busy while the job waited for data"
    else:
        where = "no GPU: the host waited for the loader"
    cpu, cores = counters.cpu_util_ratio, counters.process_cpu_cores
    if cpu is not None:
        evidence.append(
            _fact("cpu_util_ratio", "host", (start, end), cpu, 0.0, comparison="info", unit="ratio")
        )
    if cores is not None:
        evidence.append(
            _fact("process_cpu_cores", "host", (start, end), cores, limits.cpu_bound_cores, comparison="info")
        )
    cpu_text = _loader_cpu_text(cpu, cores, limits)
    return [
        Finding(
            rule="loader_starvation",
            title=f"data loader starves the job ({format_percent(share)} of wall time)",
            message=(
                f"data waits took {format_duration(stall.seconds)}, {format_percent(share)} of the wall time "
                f"(threshold {format_percent(limits.starvation_share)}); {where}{cpu_text}"
            ),
            evidence=tuple(evidence),
            fix="more DataLoader workers, prefetch_factor, pin_memory, faster storage, or pre-tokenised data",
        )
    ]


def _loader_cpu_text(cpu: float | None, cores: float | None, limits: Thresholds) -> str:
    """What the host did while the job waited for data: load it (CPU-bound loader) or wait."""
    if cores is not None:
        verdict = (
            "the loader is CPU-bound"
            if cores >= limits.cpu_bound_cores
            else "the job's processes mostly waited: I/O or a slow source"
        )
        text = f"; the job kept {cores:.2f} cores busy during the waits ({verdict})"
        return text + (f", the host's CPUs {format_percent(cpu)} busy" if cpu is not None else "")
    if cpu is not None:
        verdict = "the loader is CPU-bound" if cpu >= 0.8 else "the loader waits on I/O or its source"
        return f"; host CPU {format_percent(cpu)} busy during the waits ({verdict})"
    return ""


def _rank_stragglers(joined: CounterLedger, shift: float) -> list[Finding]:
    views = {view.rank: view for view in joined.ledger.ranks}
    findings = []
    start, end = _run_window(joined, shift)
    for rank in joined.ledger.stragglers:
        view = views.get(rank)
        if view is None:
            continue
        others = [
            v.median_step_s for v in joined.ledger.ranks if v.rank != rank and v.median_step_s is not None
        ]
        typical = statistics.median(others) if others else math.nan
        evidence = [
            _fact(
                "median step time",
                f"rank {rank}",
                (start, end),
                view.median_step_s or math.nan,
                typical,
                comparison=">",
                unit="s",
            )
        ]
        clock = _rank_clock(joined, rank)
        clock_text = ""
        if clock is not None:
            other_clocks = [c for r in views if r != rank and (c := _rank_clock(joined, r)) is not None]
            if other_clocks:
                typical_clock = statistics.median(other_clocks)
                evidence.append(
                    _fact(
                        "sm_clock_hz",
                        f"rank {rank}",
                        (start, end),
                        clock,
                        typical_clock,
                        comparison="info",
                        unit="Hz",
                    )
                )
                clock_text = (
                    f"; its GPU's SM clock averaged {clock / 1e6:.0f} MHz vs {typical_clock / 1e6:.0f} MHz"
                )
        findings.append(
            Finding(
                rule="straggler",
                title=f"rank {rank} straggles",
                message=f"rank {rank}: {view.reason}{clock_text}",
                evidence=tuple(evidence),
                fix="compare that rank's GPU counters and host with the others; check input sharding balance",
                rank=rank,
            )
        )
    return findings


def _rank_clock(joined: CounterLedger, rank: int) -> float | None:
    values = [
        s.counters.sm_clock_hz for s in joined.steps if s.rank == rank and s.counters.sm_clock_hz is not None
    ]
    return statistics.fmean(values) if values else None


def _host_rules(
    joined: CounterLedger, captures: Sequence[Capture], shift: float, limits: Thresholds
) -> list[Finding]:
    productive = joined.bucket("productive")
    if productive is None or productive.seconds <= 0:
        return []
    num_cpus = _num_cpus(captures)
    start, end = _run_window(joined, shift)
    cores = joined.productive_process_cpu_cores
    cpu = joined.productive_cpu_util_ratio
    findings = []
    if cores is None and cpu is not None:
        cores = cpu * num_cpus  # no process tree watched: the whole host
    if cores is not None and cores >= limits.cpu_bound_cores:
        idle = num_cpus - cores
        findings.append(
            Finding(
                rule="cpu_bound_steps",
                title=f"steps are CPU-bound on {cores:.2f} of {num_cpus} cores",
                message=(
                    "no GPU counters: the steps ran on the host. During "
                    f"{format_duration(productive.seconds)} of "
                    f"productive steps the job kept {cores:.2f} cores busy (threshold "
                    f"{limits.cpu_bound_cores:g}) "
                    f"of the host's {num_cpus}"
                    + (f"; {idle:.2f} cores stayed free for it" if idle >= 0.5 else "; every core was in use")
                ),
                evidence=(
                    _fact(
                        "process_cpu_cores",
                        "host",
                        (start, end),
                        cores,
                        limits.cpu_bound_cores,
                        comparison=">=",
                        unit="cores",
                    ),
                ),
                fix=(
                    f"use the idle cores: more intra-op threads (torch.set_num_threads({num_cpus})) or "
                    "more data workers"
                    if idle >= 0.5
                    else "the host CPU is the limit: run the steps on an accelerator, or a smaller model"
                ),
                device="host",
            )
        )
    if cpu is not None and joined.productive_process_cpu_cores is not None:
        others = cpu * num_cpus - joined.productive_process_cpu_cores
        if others >= limits.contention_cores:
            findings.append(
                Finding(
                    rule="host_contention",
                    title=f"other processes took {others:.2f} cores during the steps",
                    message=(
                        f"while the steps ran the host's CPUs were {format_percent(cpu)} busy "
                        f"({cpu * num_cpus:.2f} of "
                        f"{num_cpus} cores) but the job used {joined.productive_process_cpu_cores:.2f}: "
                        "other processes "
                        f"used {others:.2f} cores (threshold {limits.contention_cores:g}), so step times "
                        "include contention"
                    ),
                    evidence=(
                        _fact(
                            "cpu_util_ratio", "host", (start, end), cpu, 0.0, comparison="info", unit="ratio"
                        ),
                        _fact(
                            "other processes' cores",
                            "host",
                            (start, end),
                            others,
                            limits.contention_cores,
                            comparison=">=",
                            unit="cores",
                        ),
                    ),
                    fix="run on a quiet machine (or pin the job to its own cores) before comparing "
                    "step times",
                    device="host",
                )
            )
    return findings


def _num_cpus(captures: Sequence[Capture]) -> int:
    for capture in captures:
        for device in capture.devices:
            if device.kind == "host" and isinstance(device.details.get("num_cpus"), int):
                return int(device.details["num_cpus"])
    return 1


# -- helpers ------------------------------------------------------------------------


def _runs(times: Any, condition: Any, interval_s: float) -> list[tuple[float, float]]:
    """Stretches of consecutive samples where ``condition`` holds, as (start, end) seconds.

    A stretch starts one interval before its first sample (the period that sample describes).
    """
    stretches = []
    start: float | None = None
    previous = math.nan
    for time_s, flag in zip(times.tolist(), condition.tolist(), strict=True):
        if flag and start is None:
            start = time_s - interval_s
        elif not flag and start is not None:
            stretches.append((start, previous))
            start = None
        previous = time_s
    if start is not None:
        stretches.append((start, previous))
    return stretches


def _host_mean(capture: Capture, metric: str, mask: Any) -> float | None:
    host = next((d.device_id for d in capture.devices if d.kind == "host"), None)
    values = capture.values(host, metric) if host is not None else None
    if values is None or not np.any(~np.isnan(values[mask])):
        return None
    return float(np.nanmean(values[mask]))


def _where(device: DeviceInfo | None, capture: Capture) -> str:
    return _label(device, capture) if device is not None else f"{capture.host}:host"


def _fact(
    counter: str,
    device: str,
    window: tuple[float, float],
    observed: float,
    threshold: float,
    *,
    comparison: str,
    unit: str | None = None,
) -> Evidence:
    spec = METRICS.get(counter)
    return Evidence(
        counter=counter,
        device=device,
        window_start_s=window[0],
        window_end_s=window[1],
        observed=observed,
        threshold=threshold,
        comparison=comparison,
        unit=unit if unit is not None else (spec.unit if spec is not None else "ratio"),
    )
