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
from typing import Any, Final, Protocol

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


# Group-limited routing's busiest rank, by a seeded Monte Carlo of the router (cached per layout):
# samples per token count (its standard error about 0.03 experts), and the share of experts reached
# at which the table stops (every later count is the rank's whole share, within 0.1%)
GROUPED_ROUTING_SAMPLES: Final = 1000
_GROUPED_ROUTING_SEED: Final = 0
_GROUPED_ROUTING_DONE: Final = 0.999


@functools.cache
def grouped_busiest_table(
    experts: int, top_k: int, groups: int, reached_groups: int, ranks: int
) -> np.ndarray:
    """Expected experts the busiest of ``ranks`` EP ranks (each holding ``experts / ranks``
    consecutive experts) must read after 0, 1, 2, ... tokens when each token reaches only
    ``reached_groups`` of ``groups`` equal expert groups and picks its ``top_k`` experts among them
    (DeepSeek-V3 section 3.2.2: 8 of 256 in at most 4 of 8 groups). Routing concentrates a token's
    experts on few ranks, which independent draws (:func:`busiest_rank_touched`) miss: DeepSeek-V3
    on EP8 at one token reads 3.5 experts on its busiest rank, not 2.5. Groups and experts are drawn
    uniformly (the routing skew is apart), ``GROUPED_ROUTING_SAMPLES`` runs of the router from a
    fixed seed, until nearly every expert is reached.

    >>> table = grouped_busiest_table(8, 2, 4, 1, 4)  # one group of two per rank, a token in one
    >>> [round(float(value), 3) for value in table[:3]]  # both experts of a token on one rank
    [0.0, 2.0, 2.0]
    """
    rng = np.random.default_rng(_GROUPED_ROUTING_SEED)
    samples, per_group, per_rank = GROUPED_ROUTING_SAMPLES, experts // groups, experts // ranks
    touched = np.zeros((samples, experts), dtype=bool)
    rows = np.arange(samples)[:, None]
    table = [0.0]
    while touched.mean() < _GROUPED_ROUTING_DONE:
        chosen = np.argpartition(rng.random((samples, groups)), reached_groups - 1, axis=1)[
            :, :reached_groups
        ]
        candidates = (chosen[:, :, None] * per_group + np.arange(per_group)).reshape(samples, -1)
        picked = np.argpartition(rng.random(candidates.shape), top_k - 1, axis=1)[:, :top_k]
        touched[rows, np.take_along_axis(candidates, picked, axis=1)] = True
        table.append(float(touched.reshape(samples, ranks, per_rank).sum(axis=2).max(axis=1).mean()))
    return np.asarray(table)


def busiest_rank_experts(moe: MoESpec, experts: Array, tokens: Array, ranks: Array) -> Array:
    """Expected routed experts (slots) the busiest of ``ranks`` EP ranks reads for ``tokens``
    tokens over ``experts`` physical experts: :func:`grouped_busiest_table` where the model's
    router reaches only some expert groups and the experts are the model's own (no redundant
    copies) split evenly over ranks and groups; else independent draws (:func:`busiest_rank_touched`,
    at least one token's ``top_k`` experts over the ranks)."""
    experts, tokens, ranks = np.broadcast_arrays(
        np.asarray(experts, dtype=np.float64),
        np.asarray(tokens, dtype=np.float64),
        np.asarray(ranks, dtype=np.float64),
    )
    touched_fraction = 1.0 - (1.0 - moe.top_k / experts) ** tokens
    least = np.where(tokens > 0, np.ceil(moe.top_k / ranks), 0.0)
    result = np.array(busiest_rank_touched(np.ceil(experts / ranks), touched_fraction, ranks, least), ndmin=1)
    groups, reached = moe.num_expert_groups, moe.top_k_groups
    if not groups or not reached or reached >= groups:
        return result.reshape(experts.shape)
    total = moe.num_routed_experts
    flat_experts, flat_tokens, flat_ranks = experts.ravel(), tokens.ravel(), ranks.ravel()
    eligible = (flat_experts == total) & (flat_ranks > 1) & (flat_ranks == np.round(flat_ranks))
    eligible &= np.mod(total, np.maximum(flat_ranks, 1.0)) == 0
    if total % groups:
        return result.reshape(experts.shape)
    for rank_count in np.unique(flat_ranks[eligible]):
        at = eligible & (flat_ranks == rank_count)
        table = grouped_busiest_table(total, moe.top_k, groups, reached, int(rank_count))
        result[at] = np.interp(flat_tokens[at], np.arange(table.size), table, right=total / rank_count)
    return result.reshape(experts.shape)


__all__ = [
    "GROUPED_ROUTING_SAMPLES",
    "ExpertBalance",
    "busiest_rank_experts",
    "busiest_rank_touched",
    "expert_nodes",
    "grouped_busiest_table",
    "node_dedupe_scale",
]
