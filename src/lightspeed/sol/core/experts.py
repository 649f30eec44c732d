"""What the engines need to know about expert load: a busiest-GPU factor per plan layout.

An engine evaluates many plans at once; their expert parallelism differs (EP
size, how many nodes the EP group spans, how layers split into pipeline
stages), and so does how well a measured expert load balances over them.
:class:`ExpertBalance` is that question as an interface: the engines ask it,
:mod:`lightspeed.moe.effect` answers it from a load and a placement.
"""

from __future__ import annotations

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


__all__ = ["ExpertBalance", "expert_nodes", "node_dedupe_scale"]
