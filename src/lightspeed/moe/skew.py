"""How skewed an expert load is, which experts are hot, and what redundant experts buy.

(Not :mod:`lightspeed.goodput.skew`, the clock offsets between the hosts of a training run.)

>>> from lightspeed.moe.synthetic import synthetic_load
>>> stats = load_stats(load=synthetic_load(num_layers=2, num_experts=16, skew=1.2), num_gpus=4)
>>> [effect.num_replicas for effect in stats.replicas]
[16, 20, 24, 32]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np

from lightspeed.errors import UserInputError
from lightspeed.moe.load import ExpertLoad
from lightspeed.moe.placement import balance_experts, contiguous_imbalance
from lightspeed.records import Record

NUM_HOT_EXPERTS: Final = 10
REDUNDANCY_STEPS: Final = (0, 1, 2, 4)  # extra replicas per GPU tried by default


@dataclass(frozen=True)
class LayerSkew(Record):
    """One layer's load: the tokens routed through it and the token-expert pairs they make (a token
    routed to ``top_k`` experts is ``top_k`` pairs: the counts of a load), hottest expert over the
    mean expert, coefficient of variation, effective experts (``exp`` of the entropy of the shares:
    the number of equally loaded experts with the same spread), the share of the hottest eighth of
    the experts (:func:`_top_share`: E/8 experts, a part of one where E/8 is not whole, so 12.5% is
    an even load for any E), and the three hottest experts. ``num_tokens`` is the pairs over the
    load's ``top_k``, ``None`` when the load does not record its ``top_k``."""

    layer: str
    num_tokens: float | None
    num_token_expert_pairs: float
    hottest_over_mean: float
    coefficient_of_variation: float
    effective_experts: float
    top_eighth_share: float
    hottest_experts: tuple[int, ...]


@dataclass(frozen=True)
class HotExpert(Record):
    """An expert with its layer, share of the layer's tokens, and load over the mean expert."""

    layer: str
    expert: int
    share: float
    over_mean: float


@dataclass(frozen=True)
class ReplicaEffect(Record):
    """What ``num_replicas`` physical experts reach after balancing."""

    num_replicas: int
    num_redundant_experts: int
    overall_gpu_load_max_over_mean: float
    worst_layer_gpu_load_max_over_mean: float


@dataclass(frozen=True)
class LoadStats(Record):
    """Skew per layer, the hottest experts of all layers, and busiest-over-mean GPU load for
    experts placed in order (``unbalanced``; ``None`` when the GPUs do not divide the experts)
    and after balancing with each number of replicas."""

    num_layers: int
    num_experts: int
    num_gpus: int
    num_groups: int
    num_nodes: int
    num_steps: int
    top_k: int | None
    layers: tuple[LayerSkew, ...]
    hot_experts: tuple[HotExpert, ...]
    unbalanced_overall_gpu_load_max_over_mean: float | None
    unbalanced_worst_layer_gpu_load_max_over_mean: float | None
    replicas: tuple[ReplicaEffect, ...]


TOP_FRACTION: Final = 1 / 8  # LayerSkew.top_eighth_share: the hottest eighth of the experts


def _top_share(shares_hottest_first: np.ndarray, fraction: float) -> float:
    """The share of tokens the hottest ``fraction`` of the experts take: ``fraction x E`` experts,
    the last of them in part where that is not a whole number (the Lorenz curve read at
    ``1 - fraction``), so an even load gives ``fraction`` whatever E.

    >>> import numpy as np
    >>> _top_share(np.array([0.75, 0.25, 0.0, 0.0]), 1 / 8)  # half of the hottest of four
    0.375
    >>> _top_share(np.full(16, 1 / 16), 1 / 8)  # two of sixteen, even
    0.125
    """
    num_experts = fraction * shares_hottest_first.size
    whole = int(num_experts)
    part = num_experts - whole
    share = float(shares_hottest_first[:whole].sum())
    if part > 0 and whole < shares_hottest_first.size:
        share += part * float(shares_hottest_first[whole])
    return share


def _layer_skew(name: str, row: np.ndarray, top_k: int | None) -> LayerSkew:
    total = float(row.sum())
    tokens = total / top_k if top_k else None
    if total == 0:
        return LayerSkew(name, tokens, 0.0, 1.0, 0.0, float(row.size), 0.0, ())
    shares = row / total
    nonzero = shares[shares > 0]
    ordered = np.argsort(-row, kind="stable")
    return LayerSkew(
        layer=name,
        num_tokens=tokens,
        num_token_expert_pairs=total,
        hottest_over_mean=float(row.max() / row.mean()),
        coefficient_of_variation=float(row.std() / row.mean()),
        effective_experts=float(np.exp(-(nonzero * np.log(nonzero)).sum())),
        top_eighth_share=_top_share(shares[ordered], TOP_FRACTION),
        hottest_experts=tuple(int(e) for e in ordered[:3]),
    )


def _hot_experts(load: ExpertLoad, count: int) -> tuple[HotExpert, ...]:
    counts = load.array()
    totals = counts.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        over_mean = np.where(totals > 0, counts / (totals / counts.shape[1]), 0.0)
    flat = np.argsort(-over_mean, axis=None, kind="stable")[:count]
    layers, experts = np.unravel_index(flat, counts.shape)
    return tuple(
        HotExpert(
            layer=load.layer_names[int(layer)],
            expert=int(expert),
            share=float(over_mean[layer, expert] / counts.shape[1]),
            over_mean=float(over_mean[layer, expert]),
        )
        for layer, expert in zip(layers, experts, strict=True)
    )


def default_replicas(num_experts: int, num_gpus: int) -> tuple[int, ...]:
    """The fewest replicas that split over the GPUs, then 1, 2 and 4 more per GPU.

    >>> default_replicas(256, 32)
    (256, 288, 320, 384)
    """
    base = -(-num_experts // num_gpus) * num_gpus
    return tuple(base + extra * num_gpus for extra in REDUNDANCY_STEPS)


def load_stats(
    *,
    load: ExpertLoad,
    num_gpus: int,
    num_replicas: Sequence[int] | None = None,
    num_groups: int = 1,
    num_nodes: int = 1,
    num_hot: int = NUM_HOT_EXPERTS,
) -> LoadStats:
    """Skew of every layer of ``load``, its ``num_hot`` hottest experts, and the busiest GPU over
    the mean GPU on ``num_gpus`` GPUs for each of ``num_replicas`` (default
    :func:`default_replicas`) after :func:`~lightspeed.moe.placement.balance_experts`."""
    if num_gpus < 1:
        raise UserInputError(f"the number of GPUs must be >= 1 (got {num_gpus})")
    counts = load.array()
    replicas = tuple(num_replicas) if num_replicas else default_replicas(load.num_experts, num_gpus)
    effects = []
    for total in replicas:
        placement = balance_experts(
            load=counts, num_replicas=total, num_gpus=num_gpus, num_groups=num_groups, num_nodes=num_nodes
        )
        effects.append(
            ReplicaEffect(
                num_replicas=total,
                num_redundant_experts=total - load.num_experts,
                overall_gpu_load_max_over_mean=placement.overall_gpu_load_max_over_mean,
                worst_layer_gpu_load_max_over_mean=max(placement.gpu_load_max_over_mean),
            )
        )
    unbalanced = contiguous_imbalance(counts, num_gpus)
    means = counts.sum(axis=1) / num_gpus
    return LoadStats(
        num_layers=load.num_layers,
        num_experts=load.num_experts,
        num_gpus=num_gpus,
        num_groups=num_groups,
        num_nodes=num_nodes,
        num_steps=load.num_steps,
        top_k=load.top_k,
        layers=tuple(
            _layer_skew(name, row, load.top_k) for name, row in zip(load.layer_names, counts, strict=True)
        ),
        hot_experts=_hot_experts(load, num_hot),
        unbalanced_overall_gpu_load_max_over_mean=(
            None
            if unbalanced is None or means.sum() == 0
            else float((unbalanced * means).sum() / means.sum())
        ),
        unbalanced_worst_layer_gpu_load_max_over_mean=None if unbalanced is None else float(unbalanced.max()),
        replicas=tuple(effects),
    )


__all__ = ["HotExpert", "LayerSkew", "LoadStats", "ReplicaEffect", "default_replicas", "load_stats"]
