"""Kernel launch statistics: launch delay, runtime call duration, short kernels.

Each GPU event is paired (by ``correlation``) with the CPU call that launched
it (``cudaLaunchKernel``, ``cudaMemcpyAsync``, ... see
``trace/data/launch_calls.toml``). As in HTA's
``get_cuda_kernel_launch_stats``:

- launch delay = GPU start - end of the CPU call, clipped at 0;
- a kernel shorter than its launch call means the GPU outruns the CPU:
  such kernels are launch-bound.

The same concept measured on purpose: :mod:`lightspeed.bench.launch` times launches on this machine.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Final

import numpy as np

from lightspeed.datafile import Fields, load_toml
from lightspeed.records import Record
from lightspeed.trace.breakdown import NS, NS_PER_S, require_gpu_events, whole_ns
from lightspeed.trace.effect_sizes import Distribution, distribution
from lightspeed.trace.gpu import dropped_step, gpu_events
from lightspeed.trace.model import RankTrace, Trace

LAUNCH_CALLS_FILE: Final = Path(__file__).resolve().parent / "data" / "launch_calls.toml"
DEFAULT_RUNTIME_CUTOFF_S: Final = 50e-6  # HTA's runtime_cutoff
DEFAULT_LAUNCH_DELAY_CUTOFF_S: Final = 100e-6  # HTA's launch_delay_cutoff
DEFAULT_SHORT_KERNEL_S: Final = 10e-6


@dataclass(frozen=True)
class LaunchStats(Record):
    """Launch statistics of one rank (durations in seconds)."""

    rank: int
    num_launches: int
    launch_delay: Distribution
    runtime: Distribution
    gpu_duration: Distribution
    num_runtime_over_cutoff: int
    num_launch_delay_over_cutoff: int
    num_gpu_shorter_than_launch: int
    num_short_kernels: int


@dataclass(frozen=True)
class LaunchReport(Record):
    """Launch statistics of every rank and the cut-offs used."""

    ranks: tuple[LaunchStats, ...]
    runtime_cutoff_s: float
    launch_delay_cutoff_s: float
    short_kernel_s: float
    last_step_excluded: bool
    notes: tuple[str, ...]
    include_memory: bool = True  # the GPU events counted: copies and memsets too, or kernels only


@lru_cache(maxsize=1)
def launch_call_names(include_memory: bool = True) -> frozenset[str]:
    """Names of the CPU calls that launch one GPU event each."""
    fields = Fields(str(LAUNCH_CALLS_FILE), load_toml(LAUNCH_CALLS_FILE))
    names = set(fields.strings("kernel_launches"))
    if include_memory:
        names |= set(fields.strings("memory_launches"))
    return frozenset(names)


def launch_stats(
    trace: Trace,
    *,
    runtime_cutoff_s: float = DEFAULT_RUNTIME_CUTOFF_S,
    launch_delay_cutoff_s: float = DEFAULT_LAUNCH_DELAY_CUTOFF_S,
    short_kernel_s: float = DEFAULT_SHORT_KERNEL_S,
    include_memory: bool = True,
    include_last_step: bool = False,
) -> LaunchReport:
    """Launch delay, runtime-call and GPU duration statistics of every rank.

    Cut-offs (seconds) count outliers: runtime calls longer than
    ``runtime_cutoff_s``, delays longer than ``launch_delay_cutoff_s``, GPU
    events shorter than ``short_kernel_s``. ``include_memory`` also pairs
    ``cudaMemcpyAsync``/``cudaMemsetAsync`` with their copies.

    Example::

        report = launch_stats(load_trace("rank-0.json.gz"))
        report.ranks[0].launch_delay.median_s
        # -> 1.2e-05
    """
    runtime_cutoff_ns = whole_ns(runtime_cutoff_s, what="the runtime cut-off (--runtime-cutoff)")
    delay_cutoff_ns = whole_ns(launch_delay_cutoff_s, what="the launch delay cut-off (--delay-cutoff)")
    short_kernel_ns = whole_ns(short_kernel_s, what="the short-kernel cut-off (--short-kernel)")
    require_gpu_events(trace)
    dropped = dropped_step(trace, include_last_step=include_last_step)
    calls = launch_call_names(include_memory)
    ranks = tuple(
        _rank_stats(
            rank,
            dropped,
            calls,
            runtime_cutoff_ns=runtime_cutoff_ns,
            delay_cutoff_ns=delay_cutoff_ns,
            short_kernel_ns=short_kernel_ns,
        )
        for rank in trace.ranks
    )
    return LaunchReport(
        ranks=ranks,
        runtime_cutoff_s=runtime_cutoff_ns / NS_PER_S,
        launch_delay_cutoff_s=delay_cutoff_ns / NS_PER_S,
        short_kernel_s=short_kernel_ns / NS_PER_S,
        last_step_excluded=dropped is not None,
        notes=trace.notes,
        include_memory=include_memory,
    )


def _rank_stats(
    rank: RankTrace,
    dropped: int | None,
    calls: frozenset[str],
    *,
    runtime_cutoff_ns: int,
    delay_cutoff_ns: int,
    short_kernel_ns: int,
) -> LaunchStats:
    table = rank.events
    events = gpu_events(rank, dropped_step=dropped)
    launched = events.launch >= 0
    is_call = table.name_mask(lambda name: name in calls)
    paired = launched.copy()
    paired[launched] = is_call[events.launch[launched]]
    launch = events.launch[paired]
    call_end = table.start_ns[launch] + table.duration_ns[launch]
    delay_ns = np.maximum(events.start_ns[paired] - call_end, 0)
    runtime_ns = table.duration_ns[launch]
    gpu_ns = events.end_ns[paired] - events.start_ns[paired]
    return LaunchStats(
        rank=rank.rank,
        num_launches=int(launch.size),
        launch_delay=distribution(delay_ns * NS),
        runtime=distribution(runtime_ns * NS),
        gpu_duration=distribution(gpu_ns * NS),
        num_runtime_over_cutoff=int((runtime_ns > runtime_cutoff_ns).sum()),
        num_launch_delay_over_cutoff=int((delay_ns > delay_cutoff_ns).sum()),
        num_gpu_shorter_than_launch=int((gpu_ns < runtime_ns).sum()),
        num_short_kernels=int((gpu_ns < short_kernel_ns).sum()),
    )
