"""Profiler traces: PyTorch (Kineto) and Nsight Systems timelines in one table; Nsight Compute kernels.

Example::

    from lightspeed.trace import load_trace, summarize
    # a file, or a folder of per-rank files:
    trace = load_trace("traces/")
    [rank.idle_pct for rank in summarize(trace).ranks]
    # -> [53.56, 54.72]

Every analysis takes a :class:`Trace` and keywords and returns a frozen
record (``to_dict()`` gives JSON); :func:`summarize_ranks`,
:func:`collectives_ranks` and :func:`stragglers_ranks` give the same records
for many rank files analysed in parallel worker processes. Definitions follow
HTA's (Holistic Trace Analysis) so that numbers agree with it; see
``docs/trace.md``. Readers live in :mod:`lightspeed.trace.io`. :func:`read_ncu`
reads Nsight Compute CSV and :func:`kernel_report` puts its kernels against
their SOL, joined with a trace's GPU time (``docs/kernels.md``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lightspeed.lazy import attach

if TYPE_CHECKING:
    from lightspeed.trace.breakdown import KindTime, RankSummary, StepTime, TraceSummary, summarize
    from lightspeed.trace.cache import CacheInfo, TraceCache
    from lightspeed.trace.comms import CollectiveCall, CollectiveGroup, CommsReport, collectives
    from lightspeed.trace.diff import DiffRow, TraceDiff, diff_traces
    from lightspeed.trace.effect_sizes import Distribution, MannWhitney, mann_whitney_u
    from lightspeed.trace.idle import IdleReport, IdleSplit, idle_breakdown
    from lightspeed.trace.integrity import BadEvent
    from lightspeed.trace.io.formats import FORMATS, MLPERF_LOG, NCU_REP, detect_format, wrong_format
    from lightspeed.trace.io.ncu import (
        LaunchConfig,
        NcuLaunch,
        NcuMetric,
        NcuReport,
        NcuRule,
        Occupancy,
        SpeedOfLight,
        read_ncu,
    )
    from lightspeed.trace.io.source import DEFAULT_MAX_BYTES
    from lightspeed.trace.kernel_sol import (
        BOUNDS,
        Finding,
        GemmShape,
        KernelSol,
        KernelSolReport,
        Thresholds,
        TraceKernelTime,
        classify_bound,
        kernel_report,
        parse_gemm_shape,
    )
    from lightspeed.trace.kernels import KernelReport, KernelStats, shorten_name, top_kernels
    from lightspeed.trace.kinds import KIND_NAMES, classify_name
    from lightspeed.trace.lateness import RankLateness, RankStep, StragglerReport, stragglers
    from lightspeed.trace.launch import LaunchReport, LaunchStats, launch_stats
    from lightspeed.trace.loader import TIME_UNITS, load_trace
    from lightspeed.trace.model import RankTrace, StepTable, Trace
    from lightspeed.trace.ranks import (
        LoadOptions,
        collectives_ranks,
        stragglers_ranks,
        summarize_ranks,
    )
    from lightspeed.trace.ray_engine import ENGINES
    from lightspeed.trace.table import EventTable


__all__ = [
    "BOUNDS",
    "DEFAULT_MAX_BYTES",
    "ENGINES",
    "FORMATS",
    "KIND_NAMES",
    "MLPERF_LOG",
    "NCU_REP",
    "TIME_UNITS",
    "BadEvent",
    "CacheInfo",
    "CollectiveCall",
    "CollectiveGroup",
    "CommsReport",
    "DiffRow",
    "Distribution",
    "EventTable",
    "Finding",
    "GemmShape",
    "IdleReport",
    "IdleSplit",
    "KernelReport",
    "KernelSol",
    "KernelSolReport",
    "KernelStats",
    "KindTime",
    "LaunchConfig",
    "LaunchReport",
    "LaunchStats",
    "LoadOptions",
    "MannWhitney",
    "NcuLaunch",
    "NcuMetric",
    "NcuReport",
    "NcuRule",
    "Occupancy",
    "RankLateness",
    "RankStep",
    "RankSummary",
    "RankTrace",
    "SpeedOfLight",
    "StepTable",
    "StepTime",
    "StragglerReport",
    "Thresholds",
    "Trace",
    "TraceCache",
    "TraceDiff",
    "TraceKernelTime",
    "TraceSummary",
    "classify_bound",
    "classify_name",
    "collectives",
    "collectives_ranks",
    "detect_format",
    "diff_traces",
    "idle_breakdown",
    "kernel_report",
    "launch_stats",
    "load_trace",
    "mann_whitney_u",
    "parse_gemm_shape",
    "read_ncu",
    "shorten_name",
    "stragglers",
    "stragglers_ranks",
    "summarize",
    "summarize_ranks",
    "top_kernels",
    "wrong_format",
]

if not TYPE_CHECKING:
    __getattr__, __dir__ = attach(__name__, __file__)
