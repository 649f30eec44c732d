"""The rules that need a goodput run: loader starvation, badput hotspots, straggling ranks, and,
without GPUs, CPU-bound steps and host contention (see :mod:`lightspeed.monitor.rules`)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from lightspeed.monitor.capture import Capture
from lightspeed.monitor.findings import Finding, Thresholds
from lightspeed.monitor.findings import fact as _fact
from lightspeed.monitor.join import BucketCounters, CounterLedger
from lightspeed.units import format_duration, format_percent


def _run_window(joined: CounterLedger, shift: float) -> tuple[float, float]:
    """The whole run (seconds since the capture started): the window of a share of its wall time."""
    return shift, shift + joined.ledger.total_s


def _bucket_window(item: BucketCounters, shift: float) -> tuple[tuple[float, float], str]:
    """Where a bucket's counters were measured: from its first piece to its last, and, when it has
    gaps, the scope that says only the bucket's own time inside counts."""
    window = (shift + item.start_s, shift + item.end_s)
    if item.num_pieces <= 1:
        return window, ""
    return window, f"{item.bucket} time only: {item.num_pieces} stretches, {format_duration(item.union_s)}"


def _steps_window(joined: CounterLedger, rank: int, shift: float) -> tuple[tuple[float, float], str]:
    """Where a rank's step figures come from: its steps, from the first one's start to the last one's end."""
    steps = [step for step in joined.steps if step.rank == rank]
    if not steps:
        return _run_window(joined, shift), ""
    start = min(step.start_s for step in steps)
    end = max(step.end_s for step in steps)
    busy = sum(step.end_s - step.start_s for step in steps)
    scope = f"rank {rank}'s {len(steps)} steps only, {format_duration(busy)}" if busy < end - start else ""
    return (shift + start, shift + end), scope


def starvation(joined: CounterLedger, shift: float, limits: Thresholds) -> list[Finding]:
    stall = joined.bucket("data_stall")
    total = joined.ledger.total_s
    if stall is None or total <= 0:
        return []
    share = stall.seconds / total
    if share < limits.starvation_share:
        return []
    counters = stall.counters
    window, scope = _bucket_window(stall, shift)
    evidence = [
        _fact(
            "ledger data_stall share",
            "run",
            _run_window(joined, shift),
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
                window,
                busy,
                limits.starvation_busy_ratio,
                comparison="<=",
                unit="ratio",
                scope=scope,
            )
        )
        where = f"the GPUs were {format_percent(busy)} busy while the job waited for data"
    else:
        where = "no GPU: the host waited for the loader"
    cpu, cores = counters.cpu_util_ratio, counters.process_cpu_cores
    if cpu is not None:
        evidence.append(
            _fact("cpu_util_ratio", "host", window, cpu, 0.0, comparison="info", unit="ratio", scope=scope)
        )
    if cores is not None:
        evidence.append(
            _fact(
                "process_cpu_cores",
                "host",
                window,
                cores,
                limits.cpu_bound_cores,
                comparison="info",
                scope=scope,
            )
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


# What to try when one badput bucket takes a large share of the wall time.
_BADPUT_FIXES = {
    "init": "import and build lazily, cache compiled kernels (torch.compile cache), load weights in parallel",
    "startup": "warm up once and cache compilation; keep the first step's shapes the steady-state ones",
    "checkpoint_save": "save asynchronously (torch.distributed.checkpoint.async_save) or less often",
    "checkpoint_restore": "restore from local disk or a peer's memory instead of remote storage",
    "eval": "evaluate less often or on a subset, or on separate accelerators",
    "wasted_progress": "checkpoint more often: see 'lightspeed goodput plan-checkpoints'",
    "recovery": "restart faster: keep processes warm, detect failures sooner, restart in place",
    "custom": "look at what the named badput does",
}


def badput_hotspots(joined: CounterLedger, shift: float, limits: Thresholds) -> list[Finding]:
    """A badput bucket that takes a large share of the wall time, with what the machine did then."""
    total = joined.ledger.total_s
    findings = []
    for item in joined.buckets:
        if item.bucket not in _BADPUT_FIXES or total <= 0:
            continue
        share = item.seconds / total
        if share < limits.badput_share:
            continue
        counters = item.counters
        window, scope = _bucket_window(item, shift)
        evidence = [
            _fact(
                f"ledger {item.bucket} share",
                "run",
                _run_window(joined, shift),
                share,
                limits.badput_share,
                comparison=">=",
                unit="ratio",
            )
        ]
        said = []
        if joined.num_gpus and counters.gpu_busy_ratio is not None:
            evidence.append(
                _fact(
                    joined.busy_counter,
                    "gpus",
                    window,
                    counters.gpu_busy_ratio,
                    0.0,
                    comparison="info",
                    unit="ratio",
                    scope=scope,
                )
            )
            said.append(f"the GPUs were {format_percent(counters.gpu_busy_ratio)} busy")
        if counters.process_cpu_cores is not None:
            evidence.append(
                _fact(
                    "process_cpu_cores",
                    "host",
                    window,
                    counters.process_cpu_cores,
                    limits.cpu_bound_cores,
                    comparison="info",
                    scope=scope,
                )
            )
            cores = counters.process_cpu_cores
            if cores >= limits.cpu_bound_cores:
                verdict = "it computes on the host then"
            elif cores < 0.3:
                verdict = "it mostly waits then: I/O, restarts, sleeps"
            else:
                verdict = "it partly computes, partly waits then"
            said.append(f"the job kept {cores:.2f} cores busy ({verdict})")
        if counters.cpu_util_ratio is not None:
            evidence.append(
                _fact(
                    "cpu_util_ratio",
                    "host",
                    window,
                    counters.cpu_util_ratio,
                    0.0,
                    comparison="info",
                    unit="ratio",
                    scope=scope,
                )
            )
            said.append(f"the host's CPUs were {format_percent(counters.cpu_util_ratio)} busy")
        findings.append(
            Finding(
                rule="badput_hotspot",
                title=f"{item.bucket} takes {format_percent(share)} of the wall time",
                message=(
                    f"{item.bucket} took {format_duration(item.seconds)}, {format_percent(share)} of the "
                    f"{format_duration(total)} wall time (threshold {format_percent(limits.badput_share)})"
                    + (f"; during it {', '.join(said)}" if said else "")
                ),
                evidence=tuple(evidence),
                fix=_BADPUT_FIXES[item.bucket],
            )
        )
    return findings


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


def rank_stragglers(joined: CounterLedger, shift: float) -> list[Finding]:
    views = {view.rank: view for view in joined.ledger.ranks}
    findings = []
    for rank in joined.ledger.stragglers:
        view = views.get(rank)
        if view is None:
            continue
        window, scope = _steps_window(joined, rank, shift)
        others = [
            v.median_step_s for v in joined.ledger.ranks if v.rank != rank and v.median_step_s is not None
        ]
        typical = statistics.median(others) if others else math.nan
        evidence = [
            _fact(
                "median step time",
                f"rank {rank}",
                window,
                view.median_step_s or math.nan,
                typical,
                comparison=">",
                unit="s",
                scope=scope,
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
                        window,
                        clock,
                        typical_clock,
                        comparison="info",
                        unit="Hz",
                        scope=scope,
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


def host_rules(
    joined: CounterLedger, captures: Sequence[Capture], shift: float, limits: Thresholds
) -> list[Finding]:
    productive = joined.bucket("productive")
    if productive is None or productive.seconds <= 0:
        return []
    num_cpus = _num_cpus(captures)
    window, scope = _bucket_window(productive, shift)
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
                        window,
                        cores,
                        limits.cpu_bound_cores,
                        comparison=">=",
                        unit="cores",
                        scope=scope,
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
                            "cpu_util_ratio",
                            "host",
                            window,
                            cpu,
                            0.0,
                            comparison="info",
                            unit="ratio",
                            scope=scope,
                        ),
                        _fact(
                            "other processes' cores",
                            "host",
                            window,
                            others,
                            limits.contention_cores,
                            comparison=">=",
                            unit="cores",
                            scope=scope,
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
