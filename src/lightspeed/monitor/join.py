"""Counters joined to a goodput run: every step and every ledger bucket gets its counters.

The tracker's events and the monitor's samples carry wall-clock times from
the same host clock, so a capture lines up with a run by subtracting the
run's start. Each rank is matched to the capture of its host (the host name
in its job start) and to that host's GPU with the rank's local index (ranks on
one host in order, one GPU each; with more ranks than GPUs they wrap around,
and ranks that share a GPU share its energy evenly, so a GPU's energy is
counted once however many ranks ran on it). The
ledger's own timeline (:func:`lightspeed.goodput.bucket_timeline`) says which
bucket each instant went to, so the counters of a bucket are measured over
exactly the time the ledger gives it.

Energy is the increase of the GPUs' energy counter (NVML's total energy,
interpolated between samples; after a drop, a reset, the counter counts from
0) and, without it, the integral of power. A window's power is its energy
over the seconds that energy describes (per GPU), so power x time = energy
in every row: NVML's ``power_w`` is a lagging average of the last second or
so, whose mean over a short window misses its start and end; the mean of
``power_w`` stands in only where there is no energy at all. Energy
per step divides productive energy by the number of optimizer steps (steps of
one rank; all GPUs' energy), energy per token by the tokens the ledger
counts. "Busy" is SM activity when DCGM sampled it, else NVML utilisation.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final

import numpy as np

from lightspeed.goodput import BUCKETS, Ledger, RankTimeline, RunLog, bucket_timeline
from lightspeed.monitor.capture import Capture
from lightspeed.monitor.windows import Series
from lightspeed.records import Record

PRODUCTIVE: Final = "productive"
# Counters summarised per window: metric -> how ("mean", "peak" or "increase").
_HOW: Final[dict[str, str]] = {
    "gpu_util_ratio": "mean",
    "sm_active_ratio": "mean",
    "power_w": "mean",
    "memory_used_bytes": "peak",
    "nvlink_tx_bytes_per_s": "mean",
    "nvlink_rx_bytes_per_s": "mean",
    "pcie_tx_bytes_per_s": "mean",
    "pcie_rx_bytes_per_s": "mean",
    "sm_clock_hz": "mean",
}
_HOST_HOW: Final[dict[str, str]] = {
    "cpu_util_ratio": "mean",
    "process_cpu_cores": "mean",
    "host_memory_used_bytes": "peak",
}


@dataclass(frozen=True)
class Counters(Record):
    """Counters over a window (means are time-weighted; ``None``: not sampled there).

    ``gpu_busy_ratio`` is SM activity when DCGM sampled it, else NVML
    utilisation; ``energy_j`` sums the GPUs involved; ``power_w`` is that
    energy over the seconds it describes, per GPU (the mean of the samples'
    power only without energy); ``memory_peak_bytes``
    is the largest device memory in use; ``covered_s`` the seconds samples
    describe (less than ``duration_s`` at the edges of a capture).
    """

    duration_s: float
    covered_s: float
    gpu_busy_ratio: float | None = None
    gpu_util_ratio: float | None = None
    sm_active_ratio: float | None = None
    sm_clock_hz: float | None = None
    power_w: float | None = None
    energy_j: float | None = None
    memory_peak_bytes: float | None = None
    nvlink_tx_bytes_per_s: float | None = None
    nvlink_rx_bytes_per_s: float | None = None
    pcie_tx_bytes_per_s: float | None = None
    pcie_rx_bytes_per_s: float | None = None
    cpu_util_ratio: float | None = None
    process_cpu_cores: float | None = None
    host_memory_peak_bytes: float | None = None


@dataclass(frozen=True)
class StepCounters(Record):
    """One step of one rank with its counters (times in seconds since the run's start)."""

    rank: int
    step: int
    start_s: float
    end_s: float
    tokens: float
    wasted: bool
    counters: Counters


@dataclass(frozen=True)
class BucketCounters(Record):
    """One ledger bucket: its seconds (mean over ranks, as in the ledger) and its counters.

    The counters are measured over the bucket's own time only: the union of its
    pieces on every rank, ``num_pieces`` stretches (``union_s`` seconds in all)
    from ``start_s`` to ``end_s`` (seconds since the run's start).
    """

    bucket: str
    seconds: float
    counters: Counters
    start_s: float = 0.0
    end_s: float = 0.0
    num_pieces: int = 0
    union_s: float = 0.0


@dataclass(frozen=True)
class CounterLedger(Record):
    """A goodput ledger with counters: per bucket, per step, energy per step and per token.

    ``timeline`` is the lowest rank's time cut into ``(bucket, start_s, end_s)``
    pieces (seconds since the run's start), for plots. ``productive_busy_ratio``
    is how busy the GPUs were during productive time (``busy_counter`` names
    the counter); without GPUs,
    ``productive_process_cpu_cores`` says how many host cores the job kept
    busy then. ``coverage_ratio`` is the share of the run's span the samples
    describe.
    """

    ledger: Ledger
    origin_epoch_s: float
    coverage_ratio: float
    num_gpus: int
    buckets: tuple[BucketCounters, ...]
    steps: tuple[StepCounters, ...]
    energy_j: float | None
    productive_energy_j: float | None
    energy_per_step_j: float | None
    energy_per_token_j: float | None
    energy_per_token_all_in_j: float | None
    productive_busy_ratio: float | None
    busy_counter: str
    productive_cpu_util_ratio: float | None
    productive_process_cpu_cores: float | None
    timeline: tuple[tuple[str, float, float], ...] = ()
    notes: tuple[str, ...] = ()

    def bucket(self, name: str) -> BucketCounters | None:
        """The counters of one bucket (``productive``, ``data_stall`` ...), if it has time."""
        return next((item for item in self.buckets if item.bucket == name), None)


@dataclass(frozen=True)
class _Sources:
    """What one rank reads: its GPU's series and its host's series, on the run's clock."""

    gpu: dict[str, Series]
    host: dict[str, Series]
    gpu_id: str | None
    gpu_share: float = 1.0  # of the GPU's energy: 1 / the number of ranks on that GPU


def join_counters(*, run: RunLog, ledger: Ledger, captures: Sequence[Capture]) -> CounterLedger:
    """The ledger of ``run`` with the counters of ``captures`` over each step and bucket.

    Example::

        joined = join_counters(run=read_run("runs/tiny"), ledger=ledger, captures=[capture])
        joined.energy_per_token_j
        # -> 0.0021
    """
    timelines = bucket_timeline(run=run)
    sources = _rank_sources(run, captures)
    gpus = {source.gpu_id for source in sources.values() if source.gpu_id is not None}
    steps = tuple(step for timeline in timelines for step in _step_counters(timeline, sources[timeline.rank]))
    buckets = _bucket_counters(timelines, sources, ledger)
    span = (
        min(s.start_s for r in run.ranks for s in r.segments),
        max(s.end_s for r in run.ranks for s in r.segments),
    )
    total = _aggregate([(sources[t.rank], np.array([span[0]]), np.array([span[1]])) for t in timelines])
    productive = next((item.counters for item in buckets if item.bucket == PRODUCTIVE), None)
    num_steps = max((len(t.productive_steps) for t in timelines), default=0)
    productive_energy = productive.energy_j if productive is not None else None
    tokens = ledger.tokens
    busy_counter = (
        "sm_active_ratio"
        if productive is not None and productive.sm_active_ratio is not None
        else "gpu_util_ratio"
    )
    return CounterLedger(
        ledger=ledger,
        origin_epoch_s=run.start_epoch_s,
        coverage_ratio=total.covered_s / total.duration_s if total.duration_s > 0 else 0.0,
        num_gpus=len(gpus),
        buckets=buckets,
        steps=steps,
        energy_j=total.energy_j,
        productive_energy_j=productive_energy,
        energy_per_step_j=productive_energy / num_steps
        if productive_energy is not None and num_steps
        else None,
        energy_per_token_j=productive_energy / tokens if productive_energy is not None and tokens else None,
        energy_per_token_all_in_j=total.energy_j / tokens if total.energy_j is not None and tokens else None,
        productive_busy_ratio=productive.gpu_busy_ratio if productive is not None else None,
        busy_counter=busy_counter if gpus else "",
        productive_cpu_util_ratio=productive.cpu_util_ratio if productive is not None else None,
        productive_process_cpu_cores=productive.process_cpu_cores if productive is not None else None,
        timeline=tuple((piece[0], piece[2], piece[3]) for piece in timelines[0].pieces) if timelines else (),
        notes=_join_notes(run, captures, sources, total),
    )


def _rank_sources(run: RunLog, captures: Sequence[Capture]) -> dict[int, _Sources]:
    by_host: dict[str, list[int]] = {}
    for rank in run.ranks:
        host = rank.segments[0].host if rank.segments else ""
        by_host.setdefault(host, []).append(rank.rank)
    sources: dict[int, _Sources] = {}
    for host, numbers in by_host.items():
        capture = _capture_of(host, captures)
        for local, number in enumerate(sorted(numbers)):
            sources[number] = _sources(capture, local, run.start_epoch_s)
    sharing = _ranks_per_gpu(sources)
    return {
        rank: replace(source, gpu_share=1.0 / len(sharing[source.gpu_id]))
        if source.gpu_id is not None
        else source
        for rank, source in sources.items()
    }


def _ranks_per_gpu(sources: Mapping[int, _Sources]) -> dict[str, list[int]]:
    """The ranks reading each GPU (more than one when ranks share it)."""
    ranks: dict[str, list[int]] = {}
    for rank, source in sorted(sources.items()):
        if source.gpu_id is not None:
            ranks.setdefault(source.gpu_id, []).append(rank)
    return ranks


def _capture_of(host: str, captures: Sequence[Capture]) -> Capture | None:
    same = [capture for capture in captures if capture.host == host]
    if same:
        return same[0]
    return captures[0] if len(captures) == 1 else None


def _sources(capture: Capture | None, local_rank: int, origin_epoch_s: float) -> _Sources:
    if capture is None:
        return _Sources(gpu={}, host={}, gpu_id=None)
    times = capture.times_s + (capture.start_epoch_s - origin_epoch_s)
    gpus = sorted(
        (d for d in capture.devices if d.kind == "gpu"), key=lambda d: (d.index is None, d.index, d.device_id)
    )
    gpu = gpus[local_rank % len(gpus)] if gpus else None

    def series(device: str, metrics: Mapping[str, str]) -> dict[str, Series]:
        found = {}
        for metric in (*metrics, "energy_j"):
            values = capture.values(device, metric)
            if values is not None:
                built = Series(times_s=times, values=values, interval_s=capture.interval_s)
                if not built.empty:
                    found[metric] = built
        return found

    host_ids = [d.device_id for d in capture.devices if d.kind == "host"]
    return _Sources(
        gpu=series(gpu.device_id, _HOW) if gpu is not None else {},
        host=series(host_ids[0], _HOST_HOW) if host_ids else {},
        gpu_id=f"{capture.host}:{gpu.device_id}" if gpu is not None else None,
    )


def _step_counters(timeline: RankTimeline, source: _Sources) -> list[StepCounters]:
    events = [(step, False) for step in timeline.productive_steps] + [
        (step, True) for step in timeline.wasted_steps
    ]
    events.sort(key=lambda item: item[0].start_s)
    if not events:
        return []
    starts = np.array([step.start_s for step, _ in events])
    ends = np.array([step.end_s for step, _ in events])
    columns = _columns(source, starts, ends)
    rows = []
    for index, (step, wasted) in enumerate(events):
        rows.append(
            StepCounters(
                rank=timeline.rank,
                step=step.step,
                start_s=step.start_s,
                end_s=step.end_s,
                tokens=step.tokens,
                wasted=wasted,
                counters=_counters_at(columns, index, step.end_s - step.start_s),
            )
        )
    return rows


def _columns(source: _Sources, starts: Any, ends: Any) -> dict[str, Any]:
    """Per window: each metric's summary, the covered seconds and the energy."""
    columns: dict[str, Any] = {}
    for group, how in ((source.gpu, _HOW), (source.host, _HOST_HOW)):
        for metric, method in how.items():
            series = group.get(metric)
            if series is None:
                continue
            if method == "mean":
                area, covered = series.integral(starts, ends)
                columns[metric] = series.mean(starts, ends)
                columns[f"{metric}:area"] = area
                columns[f"{metric}:covered"] = covered
            else:
                columns[metric] = series.peak(starts, ends)
    columns["covered"] = _covered(source, starts, ends)
    columns["energy"], columns["energy_s"] = _energy(source, starts, ends)
    return columns


def _covered(source: _Sources, starts: Any, ends: Any) -> Any:
    spans = [series.integral(starts, ends)[1] for series in (*source.gpu.values(), *source.host.values())]
    return np.max(spans, axis=0) if spans else np.zeros(len(starts))


def _energy(source: _Sources, starts: Any, ends: Any) -> tuple[Any, Any]:
    """This rank's share of its GPU's energy over each window (the GPU's, split among its ranks),
    and the seconds it describes weighted by the same share (GPU-seconds: energy / them = power)."""
    counter = source.gpu.get("energy_j")
    if counter is not None:
        share = source.gpu_share
        return counter.increase(starts, ends) * share, counter.counter_span(starts, ends) * share
    power = source.gpu.get("power_w")
    if power is not None:
        area, covered = power.integral(starts, ends)
        return np.where(covered > 0, area, np.nan) * source.gpu_share, covered * source.gpu_share
    return np.full(len(starts), np.nan), np.zeros(len(starts))


def _counters_at(columns: Mapping[str, Any], index: int, duration_s: float) -> Counters:
    def value(name: str) -> float | None:
        column = columns.get(name)
        if column is None:
            return None
        number = float(column[index])
        return None if np.isnan(number) else number

    return _counters(
        value,
        duration_s=duration_s,
        covered_s=float(columns["covered"][index]),
        energy_j=value("energy"),
        energy_s=float(columns["energy_s"][index]),
    )


def _counters(
    value: Callable[[str], float | None],
    *,
    duration_s: float,
    covered_s: float,
    energy_j: float | None,
    energy_s: float,
) -> Counters:
    """Counters from ``value(metric)`` (a window's mean or peak of each summarised metric) and the
    window's energy over ``energy_s`` GPU-seconds (its power when there are any)."""
    sm_active = value("sm_active_ratio")
    power = energy_j / energy_s if energy_j is not None and energy_s > 0 else value("power_w")
    return Counters(
        duration_s=duration_s,
        covered_s=covered_s,
        gpu_busy_ratio=sm_active if sm_active is not None else value("gpu_util_ratio"),
        gpu_util_ratio=value("gpu_util_ratio"),
        sm_active_ratio=sm_active,
        sm_clock_hz=value("sm_clock_hz"),
        power_w=power,
        energy_j=energy_j,
        memory_peak_bytes=value("memory_used_bytes"),
        nvlink_tx_bytes_per_s=value("nvlink_tx_bytes_per_s"),
        nvlink_rx_bytes_per_s=value("nvlink_rx_bytes_per_s"),
        pcie_tx_bytes_per_s=value("pcie_tx_bytes_per_s"),
        pcie_rx_bytes_per_s=value("pcie_rx_bytes_per_s"),
        cpu_util_ratio=value("cpu_util_ratio"),
        process_cpu_cores=value("process_cpu_cores"),
        host_memory_peak_bytes=value("host_memory_used_bytes"),
    )


def _bucket_counters(
    timelines: Sequence[RankTimeline], sources: Mapping[int, _Sources], ledger: Ledger
) -> tuple[BucketCounters, ...]:
    seconds = {PRODUCTIVE: ledger.productive_s, **ledger.badput_s}
    rows = []
    for bucket in (PRODUCTIVE, *BUCKETS):
        windows = []
        for timeline in timelines:
            pieces = [piece for piece in timeline.pieces if piece[0] == bucket]
            if pieces:
                windows.append(
                    (
                        sources[timeline.rank],
                        np.array([p[2] for p in pieces]),
                        np.array([p[3] for p in pieces]),
                    )
                )
        if windows and seconds.get(bucket, 0.0) > 1e-9:
            starts = np.concatenate([window[1] for window in windows])
            ends = np.concatenate([window[2] for window in windows])
            num_pieces, union_s = _union(starts, ends)
            rows.append(
                BucketCounters(
                    bucket=bucket,
                    seconds=seconds[bucket],
                    counters=_aggregate(windows),
                    start_s=float(starts.min()),
                    end_s=float(ends.max()),
                    num_pieces=num_pieces,
                    union_s=union_s,
                )
            )
    return tuple(rows)


def _union(starts: Any, ends: Any) -> tuple[int, float]:
    """(number of separate stretches, seconds) of the union of the windows ``[starts, ends]``."""
    order = np.argsort(starts, kind="stable")
    count, total = 0, 0.0
    low = high = -np.inf
    for start, end in zip(starts[order].tolist(), ends[order].tolist(), strict=True):
        if start > high:
            if count:
                total += high - low
            count, low, high = count + 1, start, end
        else:
            high = max(high, end)
    return count, total + (high - low if count else 0.0)


def _aggregate(windows: Sequence[tuple[_Sources, Any, Any]]) -> Counters:
    """Counters over the union of many windows of many ranks (means weighted by covered time)."""
    areas: dict[str, float] = {}
    covers: dict[str, float] = {}
    peaks: dict[str, float] = {}
    energy = energy_s = 0.0
    energy_seen = False
    duration = covered = 0.0
    for source, starts, ends in windows:
        columns = _columns(source, starts, ends)
        duration += float(np.sum(ends - starts))
        covered += float(np.sum(columns["covered"]))
        for name, column in columns.items():
            if name.endswith(":area"):
                metric = name.removesuffix(":area")
                areas[metric] = areas.get(metric, 0.0) + float(np.sum(column))
                covers[metric] = covers.get(metric, 0.0) + float(np.sum(columns[f"{metric}:covered"]))
            elif name in ("memory_used_bytes", "host_memory_used_bytes") and np.any(~np.isnan(column)):
                peaks[name] = max(peaks.get(name, 0.0), float(np.nanmax(column)))
        known = ~np.isnan(columns["energy"])
        if known.any():
            energy += float(np.sum(columns["energy"][known]))
            energy_s += float(np.sum(columns["energy_s"][known]))
            energy_seen = True

    def summary(metric: str) -> float | None:
        if metric in peaks or metric in ("memory_used_bytes", "host_memory_used_bytes"):
            return peaks.get(metric)
        return areas[metric] / covers[metric] if covers.get(metric, 0.0) > 0 else None

    return _counters(
        summary,
        duration_s=duration,
        covered_s=covered,
        energy_j=energy if energy_seen else None,
        energy_s=energy_s,
    )


def _join_notes(
    run: RunLog, captures: Sequence[Capture], sources: Mapping[int, _Sources], total: Counters
) -> tuple[str, ...]:
    notes = []
    unmatched = sorted(rank for rank, source in sources.items() if not source.gpu and not source.host)
    if unmatched:
        hosts = ", ".join(sorted({capture.host for capture in captures})) or "none"
        notes.append(f"rank(s) {unmatched} ran on a host without a capture (captures from: {hosts})")
    if total.duration_s > 0 and total.covered_s < 0.9 * total.duration_s:
        notes.append(
            f"samples describe {total.covered_s:.1f} s of the run's {total.duration_s:.1f} s: "
            "start the monitor before the job and stop it after"
        )
    if all(not source.gpu for source in sources.values()):
        notes.append("no GPU counters: no energy or GPU activity for this run (host counters only)")
    elif any("energy_j" in source.gpu for source in sources.values()):
        notes.append(
            "power per bucket and step = the energy counter's increase / the time, per GPU (NVML's "
            "power reading is a lagging average): power x time = energy"
        )
    for gpu_id, ranks in _ranks_per_gpu(sources).items():
        if len(ranks) > 1:
            notes.append(f"ranks {ranks} share {gpu_id}: its energy is counted once, split evenly among them")
    return tuple(notes)
