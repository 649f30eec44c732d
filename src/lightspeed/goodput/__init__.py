"""Goodput: useful throughput against what the hardware could do, and where the rest went.

A :class:`Tracker` in the training loop writes crash-safe event logs;
:func:`read_run` reads them back and :func:`build_ledger` splits the wall time
into productive steps and badput buckets, with tokens/s, MFU/HFU and ETTR.
:func:`read_mllog` and :func:`mllog_ledger` do the same for MLPerf Training
result logs; :func:`plan_checkpoints` predicts ETTR over checkpoint intervals.
Sinks (:class:`TensorBoardSink`, :class:`MlflowSink`, :class:`WandbSink`) put
the tracker's and the ledger's figures into those dashboards.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lightspeed.lazy import attach

if TYPE_CHECKING:
    from lightspeed.goodput.callbacks import hf_trainer_callback, lightning_callback
    from lightspeed.goodput.events import BUCKETS, MONITOR_RUN_ENV, PHASES, SCHEMA_VERSION, TRACKERS_FOLDER
    from lightspeed.goodput.ledger import (
        Ledger,
        RankTimeline,
        RankView,
        SegmentView,
        bucket_timeline,
        build_ledger,
        ledger_from_buckets,
    )
    from lightspeed.goodput.mllog import (
        MlperfBenchmark,
        MlperfBlock,
        MlperfEval,
        MlperfLog,
        MlperfSystem,
        is_mllog,
        load_benchmarks,
        read_mllog,
        read_system_json,
    )
    from lightspeed.goodput.mlperf import mllog_ledger
    from lightspeed.goodput.reader import (
        PhaseEvent,
        RankLog,
        RunLog,
        Segment,
        StepEvent,
        TruncatedLogWarning,
        Workload,
        read_run,
    )
    from lightspeed.goodput.reliability import (
        CheckpointPlan,
        FailureEstimate,
        IntervalRow,
        estimate_failure_rate,
        expected_ettr,
        plan_checkpoints,
    )
    from lightspeed.goodput.sinks import (
        MetricSink,
        MlflowSink,
        SinkError,
        TensorBoardSink,
        WandbSink,
        ledger_figures,
        publish_ledger,
        publish_run,
        step_figures,
    )
    from lightspeed.goodput.step_times import Outlier, StepStats, step_stats
    from lightspeed.goodput.tracker import Tracker, cuda_synchronizer
    from lightspeed.goodput.utilization import FlopsPerTokenFigures, Utilization, resolve_accelerator


__all__ = [
    "BUCKETS",
    "MONITOR_RUN_ENV",
    "PHASES",
    "SCHEMA_VERSION",
    "TRACKERS_FOLDER",
    "CheckpointPlan",
    "FailureEstimate",
    "FlopsPerTokenFigures",
    "IntervalRow",
    "Ledger",
    "MetricSink",
    "MlflowSink",
    "MlperfBenchmark",
    "MlperfBlock",
    "MlperfEval",
    "MlperfLog",
    "MlperfSystem",
    "Outlier",
    "PhaseEvent",
    "RankLog",
    "RankTimeline",
    "RankView",
    "RunLog",
    "Segment",
    "SegmentView",
    "SinkError",
    "StepEvent",
    "StepStats",
    "TensorBoardSink",
    "Tracker",
    "TruncatedLogWarning",
    "Utilization",
    "WandbSink",
    "Workload",
    "bucket_timeline",
    "build_ledger",
    "cuda_synchronizer",
    "estimate_failure_rate",
    "expected_ettr",
    "hf_trainer_callback",
    "is_mllog",
    "ledger_figures",
    "ledger_from_buckets",
    "lightning_callback",
    "load_benchmarks",
    "mllog_ledger",
    "plan_checkpoints",
    "publish_ledger",
    "publish_run",
    "read_mllog",
    "read_run",
    "read_system_json",
    "resolve_accelerator",
    "step_figures",
    "step_stats",
]

if not TYPE_CHECKING:
    __getattr__, __dir__ = attach(__name__, __file__)
