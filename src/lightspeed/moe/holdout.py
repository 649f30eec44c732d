"""A placement made on one window of expert load, scored on a later window: EPLB's real use.

A balancer places redundant experts on the load it saw (the window before a
rebalance) and the deployment then serves the next window with that placement.
Its busiest-GPU figure on the window it was fitted to is in-sample and
flatters: :func:`holdout_score` also scores the same placement on a later
window (out-of-sample), places that later window afresh (what perfect
foresight would reach), and keeps experts in order without replicas on it for
comparison. Windows come from two load files, or from one load with per-step
counts split in time (:func:`~lightspeed.moe.load.split_steps`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from lightspeed.errors import UserInputError
from lightspeed.moe.placement import (
    ExpertPlacement,
    as_load_array,
    balance_experts,
    contiguous_imbalance,
    gpu_loads,
    max_over_mean,
)
from lightspeed.records import Record


@dataclass(frozen=True)
class HoldoutScore(Record):
    """Busiest GPU over mean GPU per layer of a placement, on the window it was made on and on a
    later one, beside a fresh placement of the later window and experts in order without replicas.

    ``overall_*`` is the sum over layers of the busiest GPU's tokens over the sum of the mean
    GPU's (the slowdown of a pass through every layer); ``staleness`` is
    ``overall_out_of_sample / overall_refit``: what serving the later window with the earlier
    window's placement costs over placing it afresh.
    """

    num_steps_placed: int
    num_steps_scored: int
    in_sample_gpu_load_max_over_mean: tuple[float, ...]
    out_of_sample_gpu_load_max_over_mean: tuple[float, ...]
    refit_gpu_load_max_over_mean: tuple[float, ...]
    unbalanced_gpu_load_max_over_mean: tuple[float, ...] | None
    overall_in_sample: float
    overall_out_of_sample: float
    overall_refit: float
    overall_unbalanced: float | None
    staleness: float


def _overall(loads: npt.NDArray[np.float64]) -> float:
    mean = float(loads.mean(axis=1).sum())
    return float(loads.max(axis=1).sum()) / mean if mean else 1.0


def holdout_score(
    *,
    placement: ExpertPlacement,
    later: npt.ArrayLike,
    num_steps_placed: int = 1,
    num_steps_scored: int = 1,
) -> HoldoutScore:
    """Score ``placement`` (made on an earlier window) on the ``later`` window's load
    (``[layers, experts]``, the same layers and experts).

    >>> placement = balance_experts(load=[[6, 2, 4, 4]], num_replicas=4, num_gpus=2)
    >>> score = holdout_score(placement=placement, later=[[6, 6, 2, 2]])
    >>> score.overall_in_sample, score.overall_out_of_sample, score.overall_refit
    (1.0, 1.5, 1.0)
    """
    weights = as_load_array(later, what="later expert load")
    if weights.shape != (placement.num_layers, placement.num_logical_experts):
        raise UserInputError(
            f"the later window has {weights.shape[0]} layers x {weights.shape[1]} experts, the placement "
            f"{placement.num_layers} x {placement.num_logical_experts}: record both windows of one model"
        )
    loads = gpu_loads(weights, np.asarray(placement.phy2log, dtype=np.int64), placement.num_gpus)
    refit = balance_experts(
        load=weights,
        num_replicas=placement.num_replicas,
        num_gpus=placement.num_gpus,
        num_groups=placement.num_groups,
        num_nodes=placement.num_nodes,
    )
    unbalanced = contiguous_imbalance(weights, placement.num_gpus)
    in_order = None
    if unbalanced is not None:
        in_order = _overall(weights.reshape(weights.shape[0], placement.num_gpus, -1).sum(axis=2))
    out_of_sample = _overall(loads)
    return HoldoutScore(
        num_steps_placed=num_steps_placed,
        num_steps_scored=num_steps_scored,
        in_sample_gpu_load_max_over_mean=placement.gpu_load_max_over_mean,
        out_of_sample_gpu_load_max_over_mean=tuple(max_over_mean(loads).tolist()),
        refit_gpu_load_max_over_mean=refit.gpu_load_max_over_mean,
        unbalanced_gpu_load_max_over_mean=None if unbalanced is None else tuple(unbalanced.tolist()),
        overall_in_sample=placement.overall_gpu_load_max_over_mean,
        overall_out_of_sample=out_of_sample,
        overall_refit=refit.overall_gpu_load_max_over_mean,
        overall_unbalanced=in_order,
        staleness=out_of_sample / refit.overall_gpu_load_max_over_mean,
    )


__all__ = ["HoldoutScore", "holdout_score"]
