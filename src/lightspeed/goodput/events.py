"""The event log schema (version 1) and the ledger's bucket names.

Each rank appends one JSON object per line to ``<run_dir>/rank-<rank>.jsonl``.
Every line carries ``v`` (the schema version), ``type`` and ``seg`` (the id of
the job segment that wrote it: a restarted job appends a new segment to the
same file). Times are integer nanoseconds since the Unix epoch, taken from a
monotonic clock anchored to the wall clock once per segment, so they never go
backwards inside a segment.

``job_start``  ``t_ns``, ``run_id``, ``rank``, ``world_size``, ``num_nodes``,
               ``pid``, ``host``, ``tokens_scope`` ("rank" or "global") and the
               optional workload fields ``model``, ``system``, ``seq_len``,
               ``precision``, ``recompute``, ``num_accelerators``,
               ``model_flop_per_token``, ``hardware_flop_per_token``,
               ``peak_flop_per_s``, ``sol_tokens_per_s_per_accelerator``, ``meta``,
               and ``monitor_run`` (the folder of a ``lightspeed monitor run`` that
               launched the job, from the ``LIGHTSPEED_MONITOR_RUN`` variable).
``step``       ``start_ns``, ``end_ns``, ``step`` (index of the optimizer step),
               ``tokens``, ``samples``, ``error`` (true when the step raised).
``phase``      ``phase`` (one of :data:`PHASES`), ``name`` (custom badput only),
               ``start_ns``, ``end_ns``, ``step`` (the next step index).
``job_end``    ``t_ns``, ``status`` ("ok", "error" or "atexit").

Compatibility: readers ignore keys they do not know, so an optional key added
to an event (``monitor_run`` was) keeps the version; the version changes only
when a reader of the old version would misread a new log (a new event type, a
changed meaning). Readers accept every version in :data:`READABLE_VERSIONS`.
"""

from __future__ import annotations

from typing import Final

SCHEMA_VERSION: Final = 1
READABLE_VERSIONS: Final = frozenset({1})

# Set by ``lightspeed monitor run`` for the command it launches: a Tracker then
# records the folder in its job start and announces its run_dir there.
MONITOR_RUN_ENV: Final = "LIGHTSPEED_MONITOR_RUN"
TRACKERS_FOLDER: Final = "trackers"

EVENT_TYPES: Final = ("job_start", "step", "phase", "job_end")

# Phases a training loop can time; each maps to one badput bucket.
PHASES: Final[dict[str, str]] = {
    "init": "init",
    "data_wait": "data_stall",
    "checkpoint_save": "checkpoint_save",
    "checkpoint_restore": "checkpoint_restore",
    "eval": "eval",
    "custom": "custom",
}

# Phase ends that force the background writer to flush (rare, and worth keeping
# after a crash); data waits and steps are flushed on the interval only.
FLUSH_PHASES: Final = frozenset({"init", "checkpoint_save", "checkpoint_restore", "eval", "custom"})

PRODUCTIVE: Final = "productive"

# Badput buckets, in the order tables and charts show them.
BUCKETS: Final = (
    "init",
    "startup",
    "data_stall",
    "checkpoint_save",
    "checkpoint_restore",
    "eval",
    "wasted_progress",
    "recovery",
    "custom",
    "other",
)

# Which bucket wins when intervals overlap (a data wait timed inside a step is a
# data stall, not productive time): highest priority first.
PRIORITY: Final = (
    "custom",
    "checkpoint_save",
    "checkpoint_restore",
    "eval",
    "data_stall",
    "init",
    "startup",
    "wasted_progress",
    PRODUCTIVE,
)

# Buckets the ETTR of Kokolis et al. counts as lost: restart overhead,
# checkpointing and lost progress. Evaluation, data stalls and other time stay
# inside the job's runtime there.
ETTR_LOSSES: Final = frozenset(
    {"init", "startup", "checkpoint_save", "checkpoint_restore", "wasted_progress", "recovery"}
)

JOB_END_STATUSES: Final = ("ok", "error", "atexit")
TOKENS_SCOPES: Final = ("rank", "global")


def rank_file_name(rank: int) -> str:
    """The log file name of ``rank`` inside a run directory: ``rank-00003.jsonl``."""
    return f"rank-{rank:05d}.jsonl"


RUN_FILE: Final = "run.json"
