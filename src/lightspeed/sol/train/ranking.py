"""How much the best plan of a search is worth: margins, ties within the model's error, a named plan.

Two plans of one search share the model, the stack, the cluster and the publisher, so the engine's
error on published runs (the 80% band of :mod:`lightspeed.sol.core.uncertainty`, dominated by
what differs between runs) overstates how badly it ranks one plan against another. The tie
tolerance is half that band's width, capped at :data:`MAX_TIE_TOLERANCE`, the error on the
*differences* between published plans of one source: plans whose step is within it of the best
are *ties*, and among ties the simplest (fewest parallelism techniques and tricks) is the one to
start from. A plan the user names
(``--compare-plan``) is placed in the same ranking: its rank among the
fitting plans and the best plan's margin over it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from lightspeed.errors import InvalidPlanError, PlanDoesNotFitError, PlanMismatchError, format_setting
from lightspeed.records import Record
from lightspeed.sol.core.uncertainty import Band
from lightspeed.sol.train.grid import RECOMPUTE_CODES, SCHEDULE_CODES
from lightspeed.sol.train.result import TrainingEstimate

Array = Any
MAX_TIES = 5
# The most two predicted steps of one search may differ and still be a tie. Pairs of published
# training rows of one source, model, cluster and software release that differ only in the plan
# differ in log(measured / predicted) by 0.058 and 0.076 (Korthikanti et al. 2022, Table 5: GPT 22B
# and 175B, full vs selective recompute), 0.119 (torchtitan's DeepSeek-V3 256-GPU report, PP1 vs
# PP2/VPP8) and 0.213 (transformers' EP-only vs EP+FSDP2 on 8 H100): about 0.1 in the middle, so
# plans 10% apart are told apart, where a family's band (+-0.71 for MoE on Hopper) would call a
# plan twice as slow a tie.
MAX_TIE_TOLERANCE = 0.10


@dataclass(frozen=True)
class PlanComparison(Record):
    """A named plan set against the search's best.

    ``margin`` is its step time over the best's, minus one (0.05: the best is 5%
    faster); ``rank`` its place among the fitting plans (1 is the best; ``None``
    when it does not fit); ``within_uncertainty`` whether the difference is
    smaller than the model can resolve.
    """

    estimate: TrainingEstimate
    margin: float
    rank: int | None
    within_uncertainty: bool


def tolerance_of(band: Band) -> float:
    """Relative step-time difference the model cannot resolve between two plans of one search: half
    the width of its 80% band, at most :data:`MAX_TIE_TOLERANCE`.

    >>> round(tolerance_of(Band("train", 0.8, -0.05, 0.05, 40)), 4)
    0.0513
    >>> tolerance_of(Band("train/moe/hopper", 0.8, -0.7071, 0.7071, 40))
    0.1
    """
    return min(float(np.expm1((band.high - band.low) / 2.0)), MAX_TIE_TOLERANCE)


def complexity(columns: dict[str, Array]) -> Array:
    """How many techniques each plan uses beyond plain data parallelism (lower is simpler):
    TP, PP, CP, EP, interleaving, ZeRO-2/3, recomputation, a schedule other than 1F1B."""
    plain = np.isin(columns["schedule"], [SCHEDULE_CODES["1f1b"], SCHEDULE_CODES["interleaved"]])
    return (
        (columns["tp"] > 1).astype(int)
        + (columns["pp"] > 1)
        + (columns["cp"] > 1)
        + (columns["ep"] > 1)
        + (columns["vpp"] > 1)
        + (columns["zero"] >= 2)
        + (columns["recompute"] != RECOMPUTE_CODES["none"])
        + ~plain
    )


def tie_indices(columns: dict[str, Array], steps: Array, fits: Array, tolerance: float) -> Array:
    """Indices of the fitting plans within ``tolerance`` of the fastest, simplest first."""
    if not fits.any():
        return np.zeros(0, dtype=np.int64)
    best = float(np.min(np.where(fits, steps, np.inf)))
    tied = np.flatnonzero(fits & (steps <= best * (1.0 + tolerance)))
    order = np.lexsort((steps[tied], complexity(columns)[tied]))
    return tied[order][:MAX_TIES]


def margin_over_runner_up(steps: Array, fits: Array) -> float | None:
    """The second-fastest fitting plan's step over the fastest's, minus one."""
    fitting = np.sort(steps[fits])
    if fitting.size < 2:
        return None
    return float(fitting[1] / fitting[0] - 1.0)


def compare(estimate: TrainingEstimate, steps: Array, fits: Array, tolerance: float) -> PlanComparison:
    """Place ``estimate`` (a plan the user names) in the ranking of a search."""
    best = float(np.min(np.where(fits, steps, np.inf))) if fits.any() else estimate.step_time_s
    margin = estimate.step_time_s / best - 1.0
    rank = int(np.count_nonzero(fits & (steps < estimate.step_time_s * (1.0 - 1e-9)))) + 1
    return PlanComparison(
        estimate=estimate,
        margin=margin,
        rank=rank if estimate.fits else None,
        within_uncertainty=abs(margin) <= tolerance,
    )


# the plan train flags a refusal may name that a --compare-plan writes as key=value (its keys)
COMPARE_PLAN_FLAGS = (
    "tp",
    "pp",
    "dp",
    "cp",
    "ep",
    "etp",
    "vpp",
    "zero",
    "micro-batch",
    "recompute",
    "schedule",
)
_FLAG = re.compile(rf"--({'|'.join(COMPARE_PLAN_FLAGS)}) ([\w.]+)")


def compare_plan_reason(error: InvalidPlanError) -> str:
    """Why a named plan cannot run, its fix written as ``--compare-plan`` writes a plan
    (``dp=16``, ``zero=1``), not as the ``plan train`` flags the engine's messages name.

    >>> compare_plan_reason(InvalidPlanError("with PP use --zero 1, or --pp 1 with ZeRO-3"))
    'with PP use zero=1, or pp=1 with ZeRO-3'
    """
    if isinstance(error, PlanMismatchError | PlanDoesNotFitError):
        return error.describe(format_setting)
    return _FLAG.sub(r"\1=\2", str(error))


__all__ = [
    "COMPARE_PLAN_FLAGS",
    "MAX_TIE_TOLERANCE",
    "PlanComparison",
    "compare",
    "compare_plan_reason",
    "complexity",
    "margin_over_runner_up",
    "tie_indices",
    "tolerance_of",
]
