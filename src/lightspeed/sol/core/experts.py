"""What the engines need to know about expert load: a busiest-GPU factor per plan layout.

An engine evaluates many plans at once; their expert parallelism differs (EP
size, how many nodes the EP group spans, how layers split into pipeline
stages), and so does how well a measured expert load balances over them.
:class:`ExpertBalance` is that question as an interface: the engines ask it,
:mod:`lightspeed.moe.effect` answers it from a load and a placement.
"""

from __future__ import annotations

import functools
import math
from typing import Any, Protocol

import numpy as np

from lightspeed.sol.core.collectives import local_size
from lightspeed.workload import MoESpec

Array = Any


class ExpertBalance(Protocol):
    """Busiest-GPU over mean-GPU expert load of each plan, after placement."""

    @property
    def num_physical_experts(self) -> int | None:
        """Routed experts with their redundant replicas (``None``: no replicas)."""

    def imbalance(self, *, ep: Array, num_nodes: Array, pp: Array, vpp: Array) -> Array:
        """The factor (>= 1) for plans of EP size ``ep`` over ``num_nodes`` nodes, with
        ``pp`` pipeline stages of ``vpp`` chunks each (aligned arrays)."""


def expert_nodes(ep: Array, stride: Array, domain_size: int) -> Array:
    """Scale-up domains an EP group of ``ep`` ranks ``stride`` apart spans.

    >>> expert_nodes(np.array([8.0, 32.0, 32.0]), np.array([1.0, 1.0, 8.0]), 8).tolist()
    [1.0, 4.0, 32.0]
    """
    group = np.asarray(ep, dtype=np.float64)
    return np.maximum(group / local_size(group, stride, domain_size), 1.0)


def node_dedupe_scale(moe: MoESpec, num_nodes: Array) -> Array:
    """Cross-node copies per routed token relative to one copy per expert, for dispatch kernels
    that send a token once per destination node (DeepEP's normal mode, Megatron-Core's HybridEP),
    over an expert-parallel group spanning ``num_nodes`` nodes (scale-up domains).

    A token's ``top_k`` experts, drawn without replacement from ``E`` spread evenly over ``n``
    nodes, leave a node untouched with probability C(E - E/n, k) / C(E, k), so it reaches
    n (1 - that) nodes on average; group-limited routing reaches at most ``top_k_groups`` (DeepSeek-V3
    section 3.2.2). Both counts cross the network in the share (n - 1) / n, so the ratio is the
    nodes reached over ``top_k``. Uniform routing is assumed (a skewed load reaches fewer nodes).

    >>> from lightspeed.workload import load_models
    >>> deepseek = load_models().get("deepseek-v3").moe  # top-8 of 256, at most 4 nodes
    >>> float(node_dedupe_scale(deepseek, 8.0)), round(float(node_dedupe_scale(deepseek, 2.0)), 3)
    (0.5, 0.249)
    >>> round(float(node_dedupe_scale(load_models().get("mixtral-8x7b").moe, 2.0)), 4)  # 2 x 22/28 / 2
    0.7857
    """
    nodes = np.maximum(np.asarray(num_nodes, dtype=np.float64), 1.0)
    experts, top_k = float(moe.num_routed_experts), moe.top_k
    per_node = experts / nodes
    untouched = np.ones_like(nodes)
    for drawn in range(top_k):
        untouched = untouched * np.clip((experts - per_node - drawn) / (experts - drawn), 0.0, 1.0)
    reached = nodes * (1.0 - untouched)
    if moe.top_k_groups:
        reached = np.minimum(reached, float(moe.top_k_groups))
    return np.asarray(reached / top_k, dtype=np.float64)


@functools.cache
def _log_binomials(slots: int) -> np.ndarray:
    """``log C(slots, j)`` for ``j = 0..slots`` (cached: a model has few EP sizes)."""
    return np.array(
        [math.lgamma(slots + 1) - math.lgamma(j + 1) - math.lgamma(slots - j + 1) for j in range(slots + 1)]
    )


def busiest_rank_touched(slots: Array, touched_fraction: Array, ranks: Array, least: Array = 0.0) -> Array:
    """Expected experts the busiest of ``ranks`` GPUs must read when each holds ``slots`` experts
    and each expert is reached with probability ``touched_fraction``: the expected maximum of
    ``ranks`` independent Binomial(``slots``, ``touched_fraction``) counts, ``sum over j >= 1 of
    1 - P(count < j) ** ranks``. A layer waits for its busiest GPU, so at a small batch this, not
    the mean ``slots x touched_fraction``, is what a decode step reads: Mixtral (8 experts, top 2)
    on EP8 at batch 1 touches two experts on two GPUs, and the busiest reads one whole expert
    where the mean is a quarter of one. With one rank, or every expert reached, it is the mean.
    ``least``: the fewest the busiest holds (one token's top-k distinct experts over the ranks,
    which the independent counts' maximum can fall below: 0.9 for Mixtral EP8 at batch 1).

    >>> round(float(busiest_rank_touched(1, 1 - (1 - 2 / 8) ** 1, 8, least=1.0)), 4)  # Mixtral EP8, 1 token
    1.0
    >>> round(float(busiest_rank_touched(32, 1 - (1 - 8 / 256) ** 1, 8)), 2)  # DeepSeek-V3 EP8, 1 token
    2.54
    >>> round(float(busiest_rank_touched(8, 1 - (1 - 2 / 8) ** 1, 1)), 4)  # TP8 (one rank): the mean
    2.0
    """
    slots_array, fraction, rank_count, fewest = (
        np.atleast_1d(array).astype(np.float64)
        for array in np.broadcast_arrays(slots, np.clip(touched_fraction, 0.0, 1.0), ranks, least)
    )
    shape = np.broadcast(slots, touched_fraction, ranks, least).shape
    result = np.maximum(slots_array * fraction, np.minimum(fewest, slots_array))
    spread = (rank_count > 1) & (fraction > 0.0) & (fraction < 1.0) & (slots_array >= 1)
    for slots_value in np.unique(slots_array[spread]):
        at = spread & (slots_array == slots_value)
        count = int(slots_value)
        j = np.arange(count + 1, dtype=np.float64)
        p = fraction[at][:, None]
        log_pmf = _log_binomials(count) + j * np.log(p) + (count - j) * np.log1p(-p)
        # P(count <= j - 1) for j = 1..count
        below = np.clip(np.cumsum(np.exp(log_pmf), axis=1)[:, :-1], 0.0, 1.0)
        busiest = np.sum(1.0 - below ** rank_count[at][:, None], axis=1)
        result[at] = np.maximum(busiest, result[at])
    return result.reshape(shape)


__all__ = ["ExpertBalance", "busiest_rank_touched", "expert_nodes", "node_dedupe_scale"]
