"""Run HTA (Holistic Trace Analysis) on one trace folder and print its numbers as JSON.

This script runs inside the separate HTA virtual environment (see
``trace_vs_hta.py``), never inside lightspeed's: HTA is a peer tool, not a
dependency. Modes:

- ``summary``: what ``lightspeed trace summary`` computes (temporal
  breakdown, comm/comp overlap, kernel-type overlaps), for timing;
- ``golden``: every analysis lightspeed is compared with in its tests.

Usage: ``/work/venvs/hta/bin/python benchmarks/trace_hta_worker.py MODE TRACE_DIR``

Run by a Python without HTA it says so in one line and exits with code 2.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import math
import resource
import sys
import time
import warnings
from pathlib import Path
from typing import Any

from _peers import HTA, PeerUnavailableError, run_main  # a sibling script (standard library only)


def hta_module(name: str) -> Any:
    """HTA's module ``name``; :class:`PeerUnavailableError` when this Python lacks HTA."""
    try:
        return importlib.import_module(name)
    except ImportError as error:
        raise PeerUnavailableError(
            f"HTA cannot be imported by {sys.executable} ({error}); run this worker with the python of "
            f"HTA's environment (python benchmarks/trace_vs_hta.py makes it), or install it with "
            f"`{sys.executable} -m pip install '{HTA.requirement}'`"
        ) from error


def import_hta() -> str:
    """Import the HTA modules the analyses use (before any clock starts) and return HTA's version."""
    hta_module("hta.common.trace")
    hta_module("hta.trace_analysis")
    return ".".join(str(part) for part in hta_module("hta.version").__version_tuple__)


def _number(value: Any) -> Any:
    if value is None:
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _load(trace_dir: str) -> Any:
    """HTA's TraceAnalysis, parsed in this process only (no fork pool), so one RSS measures it."""
    trace = hta_module("hta.common.trace").Trace(trace_dir=trace_dir)
    trace.load_traces(include_last_profiler_step=False, use_multiprocessing=False)
    trace_analysis = hta_module("hta.trace_analysis").TraceAnalysis
    analysis = trace_analysis.__new__(trace_analysis)
    analysis.t = trace
    return analysis


def _guarded(results: dict[str, Any], errors: dict[str, str], key: str, function: Any) -> None:
    try:
        results[key] = function()
    except Exception as error:  # HTA fails on some inputs (CPU-only traces): record how
        errors[key] = f"{type(error).__name__}: {error}"[:300]


def temporal(analysis: Any) -> list[dict[str, Any]]:
    frame = analysis.get_temporal_breakdown(visualize=False)
    return [
        {
            "rank": int(row["rank"]),
            "idle_us": _number(row["idle_time(us)"]),
            "compute_us": _number(row["compute_time(us)"]),
            "non_compute_us": _number(row["non_compute_time(us)"]),
            "kernel_span_us": _number(row["kernel_time(us)"]),
            "idle_pct": _number(row["idle_time_pctg"]),
            "compute_pct": _number(row["compute_time_pctg"]),
            "non_compute_pct": _number(row["non_compute_time_pctg"]),
        }
        for _, row in frame.iterrows()
    ]


def overlap(analysis: Any) -> list[dict[str, Any]]:
    frame = analysis.get_comm_comp_overlap(visualize=False)
    return [
        {"rank": int(row["rank"]), "comm_comp_overlap_pct": _number(row["comp_comm_overlap_pctg"])}
        for _, row in frame.iterrows()
    ]


def kernel_types(analysis: Any) -> dict[str, Any]:
    breakdown = hta_module("hta.analyzers.breakdown_analysis").BreakdownAnalysis
    types, kernels = breakdown.get_gpu_kernel_breakdown(
        analysis.t, visualize=False, duration_ratio=1.0, num_kernels=10**9, include_memory_kernels=True
    )
    return {
        "kernel_types": [
            {"kernel_type": str(row["kernel_type"]), "sum_us": _number(row["sum"])}
            for _, row in types.iterrows()
        ],
        "kernels": [
            {
                "rank": int(row["rank"]),
                "kernel_type": str(row["kernel_type"]),
                "name": str(row["name"]),
                "sum_us": _number(row["sum (us)"]),
                "max_us": _number(row["max (us)"]),
                "min_us": _number(row["min (us)"]),
                "mean_us": _number(row["mean (us)"]),
            }
            for _, row in kernels.iterrows()
        ],
    }


def idle(analysis: Any) -> list[dict[str, Any]]:
    frame, _ = analysis.get_idle_time_breakdown(ranks=analysis.t.get_ranks(), visualize=False)
    return [
        {
            "rank": int(row["rank"]),
            "stream": int(row["stream"]),
            "idle_category": str(row["idle_category"]),
            "idle_us": _number(row["idle_time"]),
        }
        for _, row in frame.iterrows()
    ]


def launch(analysis: Any) -> list[dict[str, Any]]:
    frames = analysis.get_cuda_kernel_launch_stats(ranks=analysis.t.get_ranks(), visualize=False)
    rows = []
    for rank, frame in frames.items():
        rows.append(
            {
                "rank": int(rank),
                "count": len(frame),
                "cpu_duration_sum_us": _number(frame["cpu_duration"].sum()),
                "gpu_duration_sum_us": _number(frame["gpu_duration"].sum()),
                "launch_delay_sum_us": _number(frame["launch_delay"].sum()),
                "launch_delay_max_us": _number(frame["launch_delay"].max()) if len(frame) else None,
                "runtime_over_50us": int((frame["cpu_duration"] > 50).sum()),
                "launch_delay_over_100us": int((frame["launch_delay"] > 100).sum()),
                "gpu_shorter_than_cpu": int((frame["gpu_duration"] < frame["cpu_duration"]).sum()),
            }
        )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "mode", choices=("summary", "golden"), help="summary: the analyses timed; golden: every analysis"
    )
    parser.add_argument("trace_dir", type=Path, help="a folder of one trace's rank files")
    args = parser.parse_args()
    mode, trace_dir = args.mode, str(args.trace_dir)
    warnings.filterwarnings("ignore")  # HTA's, from its import on
    logging.disable(logging.CRITICAL)
    version = import_hta()  # before the clock; without HTA, one line and exit 2
    started = time.perf_counter()
    results: dict[str, Any] = {"hta_version": version}
    errors: dict[str, str] = {}
    try:
        analysis = _load(trace_dir)
    except Exception as error:
        errors["load"] = f"{type(error).__name__}: {error}"[:300]
        analysis = None
    if analysis is not None:
        _guarded(results, errors, "temporal_breakdown", lambda: temporal(analysis))
        _guarded(results, errors, "comm_comp_overlap", lambda: overlap(analysis))
        _guarded(results, errors, "kernel_breakdown", lambda: kernel_types(analysis))
        if mode == "golden":
            _guarded(results, errors, "idle_breakdown", lambda: idle(analysis))
            _guarded(results, errors, "launch_stats", lambda: launch(analysis))
    results["errors"] = errors
    results["wall_s"] = time.perf_counter() - started
    results["max_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    json.dump(results, sys.stdout, indent=1)
    return 0


if __name__ == "__main__":
    run_main(main)
