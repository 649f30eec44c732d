"""Monitoring: GPU and host counters sampled beside a job, joined to its steps, explained, exported.

A :class:`Monitor` samples backends (:class:`NvmlBackend` for NVIDIA GPUs,
:class:`DcgmBackend` for DCGM's profiling fields, :class:`HostBackend` for
the host through psutil, :class:`ReplayBackend` for a recorded capture) on a
background thread and writes a capture file (:mod:`lightspeed.monitor.capture`).
:func:`join_counters` gives every step and ledger bucket of a goodput run its
counters (energy per step and per token, how busy the GPUs were while
productive); :func:`diagnose` applies the rules (idle GPU, loader
starvation, communication-bound, throttling, stragglers, CPU-bound steps,
host contention); :func:`run_command` and :func:`analyze_run` are what
``lightspeed monitor run`` and ``monitor report`` call; :class:`MonitorCollector`
is the Prometheus exporter with dcgm-exporter's metric names.

NVML needs ``nvidia-ml-py``, the host backend ``psutil`` and the exporter
``prometheus_client`` (all in the ``monitor`` extra); each is imported when
used, and a missing one is one clear error naming the extra.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lightspeed.lazy import attach

if TYPE_CHECKING:
    from lightspeed.monitor.backend import Backend, DeviceInfo, rate
    from lightspeed.monitor.capture import CAPTURE_VERSION, Capture, CaptureWriter, Note, read_capture
    from lightspeed.monitor.dcgm import DcgmBackend
    from lightspeed.monitor.exporter import Exporter, ExporterServer, MonitorCollector
    from lightspeed.monitor.findings import Diagnosis, Evidence, Finding, Thresholds
    from lightspeed.monitor.host import HostBackend
    from lightspeed.monitor.join import BucketCounters, CounterLedger, Counters, StepCounters, join_counters
    from lightspeed.monitor.metrics import METRICS, THROTTLE_BITS, MetricSpec, throttle_names
    from lightspeed.monitor.nvml import NvmlBackend
    from lightspeed.monitor.replay import ReplayBackend
    from lightspeed.monitor.rules import diagnose
    from lightspeed.monitor.runs import (
        BACKEND_NAMES,
        MetricSummary,
        MonitorReport,
        MonitorRun,
        analyze_run,
        capture_files,
        is_monitor_folder,
        make_backends,
        monitor_folders_of,
        read_monitor_run,
        run_command,
        store_records,
        summarize_capture,
    )
    from lightspeed.monitor.sampler import Monitor, Sample
    from lightspeed.monitor.windows import Series


__all__ = [
    "BACKEND_NAMES",
    "CAPTURE_VERSION",
    "METRICS",
    "THROTTLE_BITS",
    "Backend",
    "BucketCounters",
    "Capture",
    "CaptureWriter",
    "CounterLedger",
    "Counters",
    "DcgmBackend",
    "DeviceInfo",
    "Diagnosis",
    "Evidence",
    "Exporter",
    "ExporterServer",
    "Finding",
    "HostBackend",
    "MetricSpec",
    "MetricSummary",
    "Monitor",
    "MonitorCollector",
    "MonitorReport",
    "MonitorRun",
    "Note",
    "NvmlBackend",
    "ReplayBackend",
    "Sample",
    "Series",
    "StepCounters",
    "Thresholds",
    "analyze_run",
    "capture_files",
    "diagnose",
    "is_monitor_folder",
    "join_counters",
    "make_backends",
    "monitor_folders_of",
    "rate",
    "read_capture",
    "read_monitor_run",
    "run_command",
    "store_records",
    "summarize_capture",
    "throttle_names",
]

if not TYPE_CHECKING:
    __getattr__, __dir__ = attach(__name__, __file__)
