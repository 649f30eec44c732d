"""Reliability: expected ETTR over checkpoint intervals, optimal intervals, failure rates.

Expected effective training time ratio (Kokolis et al. 2024, "Revisiting
Reliability in Large-Scale Machine Learning Research Clusters")::

    ETTR ~ (1 - N r_f (u0 + dt/2)) / (1 + w/dt)

with ``N`` nodes, ``r_f`` failures per node per unit time, ``u0`` the restart
overhead, ``dt`` the checkpoint interval and ``w`` the checkpoint write time.
Each failure costs the restart plus, on average, half an interval of lost
progress; every interval pays one checkpoint write.

Optimal intervals with ``M = 1 / (N r_f)`` the job's mean time to failure:
Young (1974) ``sqrt(2 w M)``; Daly (2006, first order) ``sqrt(2 w M) - w``;
and the exact maximum of the ETTR expression above,
``sqrt(w^2 + 2 (1 - N r_f u0) w M) - w`` (set its derivative to zero).

At the edges: with no failures (``r_f = 0``) the best interval is infinite
(never checkpoint for failures) and ETTR tends to 100%; Daly's first-order
rule is only meaningful while ``M > w / 2`` (it is ``None`` below); and when
failures come faster than the job restarts (``N r_f u0 >= 1``) no interval
makes progress: the plan says so in ``statement`` and every ETTR is 0.

>>> plan = plan_checkpoints(num_nodes=128, failures_per_node_day=6.5e-3,
...                         checkpoint_write_s=60, restart_s=600)
>>> round(plan.young_interval_s)
3530
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lightspeed.errors import UserInputError
from lightspeed.goodput.reader import read_run, reference_rank
from lightspeed.records import Record
from lightspeed.units import SECONDS_PER_DAY

DEFAULT_NUM_INTERVALS = 13


@dataclass(frozen=True)
class IntervalRow(Record):
    """Expected ETTR at one checkpoint interval, and where the rest of the wall time goes.

    The three are shares of the wall time that add to 1: ``lost_to_failures`` (restarts and
    the work redone since the last checkpoint), ``lost_to_checkpoints`` (writing them) and
    ``ettr`` (the time that trains).
    """

    interval_s: float
    ettr: float
    lost_to_failures: float
    lost_to_checkpoints: float


@dataclass(frozen=True)
class FailureEstimate(Record):
    """Failures per node-day observed in run directories (restarts after a crash)."""

    num_failures: int
    node_days: float
    failures_per_node_day: float
    num_runs: int
    num_segments: int
    runs: tuple[str, ...]


@dataclass(frozen=True)
class CheckpointPlan(Record):
    """Expected ETTR over checkpoint intervals and the optimal interval by three rules."""

    num_nodes: int
    failures_per_node_day: float
    checkpoint_write_s: float
    restart_s: float
    job_mttf_s: float
    young_interval_s: float
    daly_interval_s: float | None
    optimal_interval_s: float
    optimal_ettr: float
    rows: tuple[IntervalRow, ...]
    failure_estimate: FailureEstimate | None = None
    statement: str = ""


def expected_ettr(
    *,
    num_nodes: int,
    failures_per_node_day: float,
    checkpoint_write_s: float,
    restart_s: float,
    interval_s: float,
) -> float:
    """Expected ETTR (0..1) of a job checkpointing every ``interval_s`` seconds (Kokolis et al.).

    ``interval_s`` may be ``inf`` (never checkpoint): 100% without failures, else 0.

    >>> expected_ettr(num_nodes=1, failures_per_node_day=0, checkpoint_write_s=60, restart_s=600,
    ...               interval_s=math.inf)
    1.0
    """
    rate_per_s = num_nodes * failures_per_node_day / SECONDS_PER_DAY
    lost = rate_per_s * (restart_s + interval_s / 2.0) if rate_per_s > 0 else 0.0
    value = (1.0 - lost) / (1.0 + checkpoint_write_s / interval_s)
    return min(1.0, max(0.0, value))


def plan_checkpoints(
    *,
    num_nodes: int,
    failures_per_node_day: float,
    checkpoint_write_s: float,
    restart_s: float,
    intervals_s: Sequence[float] | None = None,
    failure_estimate: FailureEstimate | None = None,
) -> CheckpointPlan:
    """Expected ETTR over checkpoint intervals (default: a log-spaced sweep around the optimum)."""
    _check_inputs(num_nodes, failures_per_node_day, checkpoint_write_s, restart_s)
    rate_per_s = num_nodes * failures_per_node_day / SECONDS_PER_DAY
    mttf_s = 1.0 / rate_per_s if rate_per_s > 0 else math.inf
    young = math.sqrt(2.0 * checkpoint_write_s * mttf_s)
    daly = young - checkpoint_write_s if mttf_s > checkpoint_write_s / 2.0 else None
    headroom = 1.0 - rate_per_s * restart_s
    optimal = (
        math.sqrt(checkpoint_write_s**2 + 2.0 * headroom * checkpoint_write_s * mttf_s) - checkpoint_write_s
        if headroom > 0
        else 0.0
    )
    if intervals_s is None:
        intervals_s = _sweep(optimal if math.isfinite(optimal) and optimal > 0 else SECONDS_PER_DAY)
    rows = tuple(
        _row(interval, num_nodes, failures_per_node_day, checkpoint_write_s, restart_s)
        for interval in intervals_s
    )
    ettr = functools.partial(
        expected_ettr,
        num_nodes=num_nodes,
        failures_per_node_day=failures_per_node_day,
        checkpoint_write_s=checkpoint_write_s,
        restart_s=restart_s,
    )
    return CheckpointPlan(
        num_nodes=num_nodes,
        failures_per_node_day=failures_per_node_day,
        checkpoint_write_s=checkpoint_write_s,
        restart_s=restart_s,
        job_mttf_s=mttf_s,
        young_interval_s=young,
        daly_interval_s=daly,
        optimal_interval_s=optimal,
        optimal_ettr=ettr(interval_s=optimal) if optimal > 0 else 0.0,
        rows=rows,
        failure_estimate=failure_estimate,
        statement=_statement(mttf_s, restart_s, checkpoint_write_s, headroom),
    )


def _statement(mttf_s: float, restart_s: float, write_s: float, headroom: float) -> str:
    """What the plan means at its edges ('' in the ordinary case)."""
    if math.isinf(mttf_s):
        return (
            "no failures: never checkpointing for failures is best (ETTR tends to 100% as the interval grows)"
        )
    if headroom <= 0:
        return (
            f"the job fails every {_seconds(mttf_s)} on average, sooner than it restarts "
            f"({_seconds(restart_s)}): no checkpoint interval makes progress; "
            "reduce the failure rate or the restart time"
        )
    if mttf_s <= write_s / 2.0:
        return (
            f"the job fails every {_seconds(mttf_s)} on average, faster than half a checkpoint write "
            f"({_seconds(write_s)}): Daly's first-order rule does not apply; the exact optimum is shown"
        )
    return ""


def _seconds(value_s: float) -> str:
    return f"{value_s:.3g} s"


def _check_inputs(
    num_nodes: int, failures_per_node_day: float, checkpoint_write_s: float, restart_s: float
) -> None:
    if num_nodes < 1:
        raise UserInputError(f"--nodes must be >= 1, got {num_nodes}")
    if not failures_per_node_day >= 0 or not math.isfinite(failures_per_node_day):
        raise UserInputError(f"failures per node-day must be a number >= 0, got {failures_per_node_day}")
    if not checkpoint_write_s > 0 or not math.isfinite(checkpoint_write_s):
        raise UserInputError(f"checkpoint write time must be a finite number > 0 s, got {checkpoint_write_s}")
    if not restart_s >= 0 or not math.isfinite(restart_s):
        raise UserInputError(f"restart time must be a finite number >= 0 s, got {restart_s}")


def _sweep(center_s: float) -> list[float]:
    """Log-spaced intervals from center/8 to center*8, with the center itself."""
    points = np.geomspace(center_s / 8.0, center_s * 8.0, DEFAULT_NUM_INTERVALS)
    return [float(point) for point in points]


def _row(interval_s: float, num_nodes: int, rate: float, write_s: float, restart_s: float) -> IntervalRow:
    if not interval_s > 0 or not math.isfinite(interval_s):
        raise UserInputError(f"checkpoint interval must be a finite number > 0 s, got {interval_s}")
    rate_per_s = num_nodes * rate / SECONDS_PER_DAY
    # Shares of the wall time that add to 1: failures take r (u0 + dt/2) of it; of the rest,
    # checkpoint writes take w / (dt + w) and the remainder is ETTR (Kokolis et al.'s expression).
    lost_to_failures = min(1.0, rate_per_s * (restart_s + interval_s / 2.0)) if rate_per_s > 0 else 0.0
    ettr = expected_ettr(
        num_nodes=num_nodes,
        failures_per_node_day=rate,
        checkpoint_write_s=write_s,
        restart_s=restart_s,
        interval_s=interval_s,
    )
    return IntervalRow(
        interval_s=interval_s,
        ettr=ettr,
        lost_to_failures=lost_to_failures,
        lost_to_checkpoints=max(0.0, 1.0 - lost_to_failures - ettr),
    )


def estimate_failure_rate(*, runs: Iterable[str | Path], num_nodes: int | None = None) -> FailureEstimate:
    """Failures per node-day from tracker run directories.

    A failure is a job segment that ended without a clean job end (killed,
    crashed, or an exception) and was followed by a restart, plus a last
    segment that ended with an error. Exposure is each segment's wall time
    times the run's node count (``num_nodes`` overrides what the tracker recorded).
    """
    failures = 0
    node_seconds = 0.0
    names = []
    num_segments = 0
    for path in runs:
        run = read_run(path)
        names.append(run.path)
        nodes = num_nodes if num_nodes is not None else run.num_nodes
        segments = reference_rank(run).segments
        num_segments += len(segments)
        failures += sum(segment.status in ("crashed", "error") for segment in segments[:-1])
        failures += segments[-1].status == "error"
        node_seconds += nodes * sum(segment.end_s - segment.start_s for segment in segments)
    if not names:
        raise UserInputError("--from needs at least one run directory")
    node_days = node_seconds / SECONDS_PER_DAY
    if node_days <= 0:
        raise UserInputError("the runs given cover no time; cannot estimate a failure rate")
    return FailureEstimate(
        num_failures=failures,
        node_days=node_days,
        failures_per_node_day=failures / node_days,
        num_runs=len(names),
        num_segments=num_segments,
        runs=tuple(names),
    )
