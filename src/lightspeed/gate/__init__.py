"""The regression gate: did this change slow things down?

Samples come from sample files, ``lightspeed bench --json`` output, stored
benchmark runs, goodput runs and profiler traces (:mod:`~lightspeed.gate.inputs`);
a metric regresses only when its median moved past the threshold *and* a
one-sided Mann-Whitney U test and a bootstrap interval agree
(:mod:`~lightspeed.gate.compare`); :mod:`~lightspeed.gate.run_compare` compares every metric two
runs share. :mod:`~lightspeed.gate.history` turns measurements into store records and back.

>>> from lightspeed.gate import MetricSamples, compare_samples
>>> def step_times(scale):
...     return MetricSamples(metric="step_s", unit="s", lower_is_better=True,
...                          samples=tuple(scale * (1.0 + 0.01 * (i % 3)) for i in range(12)))
>>> compare_samples(baseline=step_times(1.0), current=step_times(1.3)).verdict
'regression'
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lightspeed.lazy import attach

if TYPE_CHECKING:
    from lightspeed.gate.compare import MetricComparison, MetricSamples, compare_samples
    from lightspeed.gate.history import (
        benchmark_payloads,
        benchmark_records,
        calibration_inputs,
        check_result_files,
    )
    from lightspeed.gate.inputs import (
        HistoryPoint,
        MetricHistory,
        load_metric_samples,
        metric_history,
        read_sample_file,
        samples_from_records,
    )
    from lightspeed.gate.run_compare import GateResult, compare_runs


__all__ = [
    "GateResult",
    "HistoryPoint",
    "MetricComparison",
    "MetricHistory",
    "MetricSamples",
    "benchmark_payloads",
    "benchmark_records",
    "calibration_inputs",
    "check_result_files",
    "compare_runs",
    "compare_samples",
    "load_metric_samples",
    "metric_history",
    "read_sample_file",
    "samples_from_records",
]

if not TYPE_CHECKING:
    __getattr__, __dir__ = attach(__name__, __file__)
