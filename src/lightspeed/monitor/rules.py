"""Rules that explain a run from its counters; every finding names its evidence.

Each :class:`Finding` says what was seen, on which device, over which window
(seconds since the first capture started), against which threshold, and what
to try. The rules follow the seed's performance engineer: utilisation low
for long means idle time (suspect data loading or synchronisation); a GPU idle
while the job waits for data is loader starvation; link throughput near the
link's SOL from the catalog means communication is the culprit; clock event
reasons say when power or heat slowed a busy GPU; one rank or GPU slower than
the rest is a straggler. A badput bucket that takes a large share of the wall
time is named with what the machine did during it. Without GPUs, the host
rules say whether the steps were bound by the host's CPU and whether other
processes took CPU from them (:mod:`lightspeed.monitor.rules_ledger` holds the
rules that need a goodput run). Thresholds are a
:class:`~lightspeed.monitor.findings.Thresholds` record.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lightspeed.catalog import Catalog
from lightspeed.errors import UserInputError
from lightspeed.monitor.backend import DeviceInfo
from lightspeed.monitor.capture import Capture
from lightspeed.monitor.findings import Diagnosis, Evidence, Finding, Thresholds
from lightspeed.monitor.findings import fact as _fact
from lightspeed.monitor.findings import label as _label
from lightspeed.monitor.findings import where as _where
from lightspeed.monitor.join import CounterLedger
from lightspeed.monitor.metrics import THROTTLE_BITS, throttle_names
from lightspeed.monitor.rules_ledger import badput_hotspots, host_rules, rank_stragglers, starvation
from lightspeed.units import format_duration, format_percent

__all__ = ["Diagnosis", "Finding", "Thresholds", "diagnose"]

Span = tuple[float, float]  # seconds since a capture started


def diagnose(
    *,
    captures: Sequence[Capture],
    joined: CounterLedger | None = None,
    catalog: Catalog | None = None,
    thresholds: Thresholds | None = None,
) -> Diagnosis:
    """Apply every rule to ``captures`` (and to their join with a goodput run, when given).

    Example::

        diagnose(captures=[read_capture(path)]).findings
        # -> (Finding(rule='idle_gpu', ...),)
    """
    limits = thresholds or Thresholds()
    if not captures:
        raise UserInputError("diagnose needs at least one capture")
    origin = min(capture.start_epoch_s for capture in captures)
    findings: list[Finding] = []
    notes: list[str] = []
    run_window = None
    if joined is not None:
        run_start = joined.origin_epoch_s - origin
        run_window = (run_start, run_start + joined.ledger.total_s)
    for capture in captures:
        shift = capture.start_epoch_s - origin
        for device in capture.devices:
            if device.kind != "gpu":
                continue
            findings.extend(_idle(capture, device, shift, limits, run_window))
            findings.extend(_throttling(capture, device, shift, limits))
            found, note = _links(capture, device, shift, limits, catalog, run_window=run_window)
            findings.extend(found)
            notes.extend(note)
    findings.extend(_gpu_stragglers(captures, origin, limits))
    if joined is not None:
        run_shift = joined.origin_epoch_s - origin
        findings.extend(starvation(joined, run_shift, limits))
        findings.extend(badput_hotspots(joined, run_shift, limits))
        findings.extend(rank_stragglers(joined, run_shift))
        if joined.num_gpus == 0:
            findings.extend(host_rules(joined, captures, run_shift, limits))
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


@dataclass(frozen=True)
class _IdleView:
    """One GPU's busy counter in one capture, with the capture's shift onto the first capture's
    clock and the thresholds."""

    capture: Capture
    device: DeviceInfo
    shift: float
    limits: Thresholds
    metric: str
    values: Any

    def window(self, start: float, end: float) -> tuple[float, float]:
        """``(start, end)`` capture seconds on the first capture's clock."""
        return start + self.shift, end + self.shift


def _idle(
    capture: Capture,
    device: DeviceInfo,
    shift: float,
    limits: Thresholds,
    run_window: Span | None = None,
) -> list[Finding]:
    """Stretches of at least ``idle_min_s`` below ``idle_busy_ratio``. With a goodput run joined
    (``run_window``: its start and end, seconds since the first capture started), the parts of a
    stretch outside the run are start-up or teardown the tracker did not see, not a stall of the
    job's steps: they make their own finding, ``idle_outside_run``."""
    busy = _busy(capture, device.device_id)
    if busy is None:
        return []
    view = _IdleView(capture, device, shift, limits, *busy)
    stretches = _runs(capture.times_s, view.values < limits.idle_busy_ratio, capture.interval_s)
    findings = []
    inside: list[Span] = stretches
    before: list[Span] = []
    after: list[Span] = []
    if run_window is not None:
        inside, before, after = _split_by_window(stretches, (run_window[0] - shift, run_window[1] - shift))
    long = _at_least(inside, limits.idle_min_s)
    if long:
        findings.append(_idle_in_run(view, long))
    long_before, long_after = _at_least(before, limits.idle_min_s), _at_least(after, limits.idle_min_s)
    if run_window is not None and (long_before or long_after):
        findings.append(_idle_outside_run(view, long_before, long_after, run_window))
    return findings


def _at_least(stretches: Sequence[Span], seconds: float) -> list[Span]:
    return [(start, end) for start, end in stretches if end - start >= seconds]


def _split_by_window(stretches: Sequence[Span], window: Span) -> tuple[list[Span], list[Span], list[Span]]:
    """Each stretch cut at ``window``'s edges: (the parts inside it, before it, after it)."""
    inside: list[Span] = []
    before: list[Span] = []
    after: list[Span] = []
    for start, end in stretches:
        for part, (a, b) in (
            (before, (start, min(end, window[0]))),
            (inside, (max(start, window[0]), min(end, window[1]))),
            (after, (max(start, window[1]), end)),
        ):
            if b > a:
                part.append((a, b))
    return inside, before, after


def _stayed_below(view: _IdleView, total: float) -> tuple[str, str]:
    """(device label, "<label> (<name>) stayed below <ratio> <metric> for <total>"): how both idle
    findings open their message."""
    label = _label(view.device, view.capture)
    ratio = format_percent(view.limits.idle_busy_ratio)
    lasted = format_duration(total)
    return label, f"{label} ({view.device.name}) stayed below {ratio} {view.metric} for {lasted}"


def _longest_idle(view: _IdleView, long: Sequence[Span]) -> tuple[float, float, Any, Evidence]:
    """The longest of ``long`` (capture seconds), its idle samples and the evidence of its mean."""
    start, end = max(long, key=lambda span: span[1] - span[0])
    times = view.capture.times_s
    inside = (times > start) & (times <= end) & (view.values < view.limits.idle_busy_ratio)
    evidence = _fact(
        view.metric,
        _where(view.device, view.capture),
        view.window(start, end),
        float(np.nanmean(view.values[inside])),
        view.limits.idle_busy_ratio,
        comparison="<",
    )
    return start, end, inside, evidence


def _idle_in_run(view: _IdleView, long: Sequence[Span]) -> Finding:
    start, end, inside, longest = _longest_idle(view, long)
    total = sum(e - s for s, e in long)
    host = _host_mean(view.capture, "cpu_util_ratio", inside)
    evidence = [longest]
    hint = "suspect data loading or synchronisation"
    if host is not None:
        evidence.append(
            _fact(
                "cpu_util_ratio",
                _where(None, view.capture),
                view.window(start, end),
                host,
                0.0,
                comparison="info",
            )
        )
        hint = "the host was busy then: suspect data loading" if host >= 0.5 else hint
    label, below = _stayed_below(view, total)
    return Finding(
        rule="idle_gpu",
        title=f"{label} idle for {format_duration(total)}",
        message=(
            f"{below} in {len(long)} stretch(es) of at least "
            f"{format_duration(view.limits.idle_min_s)}; "
            f"the longest, {format_duration(end - start)} from t={start + view.shift:.1f} s, averaged "
            f"{format_percent(longest.observed)}: {hint}"
        ),
        evidence=tuple(evidence),
        fix="overlap data loading with compute (more loader workers, prefetch, pinned memory); "
        "look for host-side synchronisation (.item(), logging) in the step",
        device=label,
    )


def _idle_outside_run(
    view: _IdleView, before: Sequence[Span], after: Sequence[Span], run_window: Span
) -> Finding:
    long = [*before, *after]
    total = sum(end - start for start, end in long)
    where_text = (
        "outside the goodput run (before it began and after it ended)"
        if before and after
        else "before the goodput run began"
        if before
        else "after the goodput run ended"
    )
    start, end, _, longest = _longest_idle(view, long)
    label, below = _stayed_below(view, total)
    return Finding(
        rule="idle_outside_run",
        title=f"{label} idle for {format_duration(total)} outside the goodput run",
        message=(
            f"{below} {where_text} (the longest stretch {format_duration(end - start)} from "
            f"t={start + view.shift:.1f} s): start-up or teardown the tracker does not see (imports, "
            "building the model, moving it to the GPU, saving at exit), which the ledger's wall time "
            "leaves out"
        ),
        evidence=(
            longest,
            _fact(
                "goodput run",
                "run",
                run_window,
                run_window[1] - run_window[0],
                0.0,
                comparison="info",
                unit="s",
            ),
        ),
        fix="create the Tracker first thing in the script so start-up is counted as init badput; build the "
        "model on the GPU (a torch.device('cuda') context, or meta-device init then to_empty) rather than on "
        "the CPU and copying it",
        device=label,
    )


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
    capture: Capture,
    device: DeviceInfo,
    shift: float,
    limits: Thresholds,
    catalog: Catalog | None,
    *,
    run_window: Span | None = None,
) -> tuple[list[Finding], list[str]]:
    """Link throughput at ``link_sol_ratio`` of the catalog SOL in at least ``link_min_share`` of
    the samples: of those in the joined goodput run (``run_window``, as :func:`_idle` takes it) when
    the capture has some there, since idle start-up before the run would dilute a saturated run."""
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
        in_run = _in_window(capture, shift, run_window)
        if (valid & in_run).any():
            valid &= in_run
        else:
            in_run = None  # the capture has no sample in the run: judge it whole
        near = valid & (peak >= limits.link_sol_ratio)
        share = float(near.sum() / valid.sum()) if valid.any() else 0.0
        if share < limits.link_min_share:
            continue
        times = capture.times_s[near]
        # the period of the first sample, but never before the capture started (as _runs does)
        start, end = max(float(times[0] - capture.interval_s), 0.0), float(times[-1])
        observed = float(np.mean(peak[near]))
        label = _label(device, capture)
        name = "NVLink" if link == "nvlink" else "PCIe"
        during_run = run_window is not None and in_run is not None
        samples = "the samples during the goodput run" if during_run else "the samples"
        findings.append(
            Finding(
                rule="communication_bound",
                title=f"{label} {name} near its SOL",
                message=(
                    f"{label} ({device.name}) moved {format_percent(observed)} of its {name} SOL "
                    f"({sol / 1e9:.0f} GB/s per direction, catalog {accelerator.name}) in "
                    f"{format_percent(share)} of {samples} "
                    f"(threshold {format_percent(limits.link_sol_ratio)} of SOL in "
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


def _in_window(capture: Capture, shift: float, window: Span | None) -> Any:
    """Which samples of ``capture`` lie in ``window`` (seconds on the first capture's clock; all
    when None): those whose period, the interval before each sample, has its middle inside."""
    middles = capture.times_s - capture.interval_s / 2 + shift
    if window is None:
        return np.ones(middles.shape, dtype=bool)
    return (middles >= window[0]) & (middles <= window[1])


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
    findings = []
    for index, (capture, device, clock, mask) in enumerate(clocks):
        # compared with the others only: a slow GPU in the median it is held against would pull that
        # median down (with two GPUs it is half of it, and a GPU would be flagged only far below its peer)
        others = [other for position, (_, _, other, _) in enumerate(clocks) if position != index]
        typical = statistics.median(others)
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
                    f"{format_percent(clock / typical)} of {_others_text(len(others))} "
                    f"{typical / 1e6:.0f} MHz "
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


def _others_text(num_others: int) -> str:
    """Whose clock a GPU's is compared with: ``the other GPU's`` or ``the median of the other 7 GPUs'``."""
    return "the other GPU's" if num_others == 1 else f"the median of the other {num_others} GPUs'"


# -- rules over the joined ledger ---------------------------------------------------


# -- helpers ------------------------------------------------------------------------


def _runs(times: Any, condition: Any, interval_s: float) -> list[Span]:
    """Stretches of consecutive samples where ``condition`` holds, as (start, end) seconds.

    A stretch starts one interval before its first sample (the period that sample describes).
    """
    stretches = []
    start: float | None = None
    previous = math.nan
    for time_s, flag in zip(times.tolist(), condition.tolist(), strict=True):
        if flag and start is None:
            start = max(time_s - interval_s, 0.0)
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
