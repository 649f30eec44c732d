"""Profiler trace analysis: PyTorch (Kineto) traces into columnar tables, one module per analysis.

>>> from lightspeed.trace import load_trace, summarize
>>> # a file, or a folder of per-rank files:
>>> trace = load_trace("traces/")  # doctest: +SKIP
>>> [rank.idle_pct for rank in summarize(trace).ranks]  # doctest: +SKIP
[53.56, 54.72]

Every analysis takes a :class:`Trace` and keywords and returns a frozen
record (``to_dict()`` gives JSON); :func:`summarize_ranks`,
:func:`collectives_ranks` and :func:`stragglers_ranks` give the same records
for many rank files analysed in parallel worker processes. Definitions follow HTA's (Holistic Trace
Analysis) so that numbers agree with it; see ``docs/trace.md``.
"""

from lightspeed.trace.breakdown import KindTime, RankSummary, StepTime, TraceSummary, summarize
from lightspeed.trace.comms import CollectiveCall, CollectiveGroup, CommsReport, collectives
from lightspeed.trace.diff import DiffRow, TraceDiff, diff_traces
from lightspeed.trace.idle import IdleReport, IdleSplit, idle_breakdown
from lightspeed.trace.kernels import KernelReport, KernelStats, shorten_name, top_kernels
from lightspeed.trace.kinds import KIND_NAMES, classify_name
from lightspeed.trace.launch import LaunchReport, LaunchStats, launch_stats
from lightspeed.trace.loader import TIME_UNITS, RankTrace, StepTable, Trace, load_trace
from lightspeed.trace.ranks import LoadOptions, collectives_ranks, stragglers_ranks, summarize_ranks
from lightspeed.trace.source import DEFAULT_MAX_BYTES
from lightspeed.trace.stats import Distribution, MannWhitney, mann_whitney_u
from lightspeed.trace.stragglers import RankLateness, RankStep, StragglerReport, stragglers
from lightspeed.trace.table import EventTable

__all__ = [
    "DEFAULT_MAX_BYTES",
    "KIND_NAMES",
    "TIME_UNITS",
    "CollectiveCall",
    "CollectiveGroup",
    "CommsReport",
    "DiffRow",
    "Distribution",
    "EventTable",
    "IdleReport",
    "IdleSplit",
    "KernelReport",
    "KernelStats",
    "KindTime",
    "LaunchReport",
    "LaunchStats",
    "LoadOptions",
    "MannWhitney",
    "RankLateness",
    "RankStep",
    "RankSummary",
    "RankTrace",
    "StepTable",
    "StepTime",
    "StragglerReport",
    "Trace",
    "TraceDiff",
    "TraceSummary",
    "classify_name",
    "collectives",
    "collectives_ranks",
    "diff_traces",
    "idle_breakdown",
    "launch_stats",
    "load_trace",
    "mann_whitney_u",
    "shorten_name",
    "stragglers",
    "stragglers_ranks",
    "summarize",
    "summarize_ranks",
    "top_kernels",
]
