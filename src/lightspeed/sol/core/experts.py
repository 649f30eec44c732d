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


def node_dedupe_scale(moe: MoESpec) -> float:
    """Cross-node copies per routed token relative to one copy per expert, for dispatch
    kernels that send a token once per destination node (DeepEP's normal mode).

    With group-limited routing a token reaches at most ``top_k_groups`` nodes, so about
    ``top_k_groups x (n-1)/n`` copies cross the network instead of ``top_k x (n-1)/n``
    (DeepSeek-V3 section 3.2.2); without it no bound is known and every copy is counted.

    >>> from lightspeed.workload import load_models
    >>> node_dedupe_scale(load_models().get("deepseek-v3").moe)  # top-8 experts on at most 4 nodes
    0.5
    >>> node_dedupe_scale(load_models().get("mixtral-8x7b").moe)  # no group-limited routing
    1.0
    """
    if not moe.top_k_groups:
        return 1.0
    return float(min(moe.top_k_groups, moe.top_k) / moe.top_k)


__all__ = ["ExpertBalance", "expert_nodes", "node_dedupe_scale"]
