"""Routing skew: how much more than the mean the busiest expert-parallel rank receives.

A trained router does not spread a serving batch evenly: some experts are hot, and
the rank that holds them receives more tokens than the mean rank, so every MoE layer
waits for it. ``sol/data/routing.toml`` holds the measurement (TensorRT-LLM's EP
statistics of DeepSeek-R1) and the model fitted to it: each expert's share of the
tokens is lognormal across experts with the measured spread, a rank receives the sum
over its contiguous block of experts, and the factor is the expected busiest rank over
the mean. A router with fewer, coarser experts is taken as the measured one with its
experts merged (:func:`per_expert_cv`), so the busiest rank depends on the EP size
more than on the model. An expert-parallel load balancer (redundant experts placed by
load) leaves the measured residual instead.

>>> skew = load_routing_skew()
>>> round(busiest_rank_factor(256, 1, skew=skew), 3)
1.0
>>> 1.3 < busiest_rank_factor(256, 8, skew=skew) < 1.5 < busiest_rank_factor(256, 32, skew=skew)
True
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from lightspeed.datafile import Fields, load_toml
from lightspeed.paths import package_data
from lightspeed.records import Record

Array = Any
SAMPLES = 4000  # draws of the experts' shares: the factor to within ~0.3%
SEED = 0


@dataclass(frozen=True)
class RoutingSkew(Record):
    """The routing statistics the engines assume (``[skew]`` of ``sol/data/routing.toml``)."""

    per_expert_cv: float
    balanced_imbalance_ratio: float
    measured_ep: int
    measured_experts: int
    measured_rank_std_over_mean: float
    measured_rank_imbalance_ratio: float
    measured_expert_imbalance_ratio: float
    measured_expert_std_over_mean: float
    source: str


@functools.lru_cache(maxsize=1)
def load_routing_skew() -> RoutingSkew:
    """The cited routing statistics and the model's spread (read once)."""
    path = package_data("sol", "data", "routing.toml")
    table = Fields(str(path), load_toml(path)).table("skew")
    assert table is not None
    return RoutingSkew(
        per_expert_cv=table.number("per_expert_cv"),
        balanced_imbalance_ratio=table.number("balanced_imbalance_ratio", positive=False),
        measured_ep=table.integer("measured_ep", minimum=1),
        measured_experts=table.integer("measured_experts", minimum=1),
        measured_rank_std_over_mean=table.number("measured_rank_std_over_mean"),
        measured_rank_imbalance_ratio=table.number("measured_rank_imbalance_ratio"),
        measured_expert_imbalance_ratio=table.number("measured_expert_imbalance_ratio"),
        measured_expert_std_over_mean=table.number("measured_expert_std_over_mean"),
        source=table.string("source"),
    )


@functools.lru_cache(maxsize=16)
def expert_shares(num_experts: int, per_expert_cv: float, samples: int = SAMPLES) -> np.ndarray:
    """``samples x num_experts`` draws of the experts' token shares (lognormal, mean 1, the given
    coefficient of variation; a fixed seed, so every call gives the same draws; read-only)."""
    sigma = float(np.sqrt(np.log1p(per_expert_cv * per_expert_cv)))
    generator = np.random.default_rng(SEED)
    shares = generator.lognormal(-0.5 * sigma * sigma, sigma, size=(samples, num_experts))
    shares.flags.writeable = False
    return shares


def rank_loads(shares: np.ndarray, ep: int) -> np.ndarray:
    """Tokens each of ``ep`` ranks receives when it holds a contiguous block of the experts
    (as even as the count allows: the servers' default placement)."""
    num_experts = shares.shape[1]
    owner = (np.arange(num_experts) * ep) // num_experts
    holds = np.zeros((num_experts, ep))
    holds[np.arange(num_experts), owner] = 1.0
    loads: np.ndarray = shares @ holds
    return loads


def per_expert_cv(num_experts: int, skew: RoutingSkew) -> float:
    """The spread of one expert's share for a router of ``num_experts`` experts: the measured
    router's, as if each coarser expert covered ``measured_experts / num_experts`` of its experts
    (sums of independent shares: the spread shrinks with the square root of their number)."""
    return skew.per_expert_cv * float(np.sqrt(num_experts / skew.measured_experts))


@functools.lru_cache(maxsize=256)
def _unbalanced_factor(num_experts: int, ep: int, cv: float) -> float:
    loads = rank_loads(expert_shares(num_experts, cv), ep)
    return float(np.mean(loads.max(axis=1) / loads.mean(axis=1)))


def busiest_rank_factor(num_experts: int, ep: int, *, skew: RoutingSkew, balanced: bool = False) -> float:
    """The busiest of ``ep`` ranks' routed tokens over the mean rank's: 1 without expert
    parallelism, the measured residual with a load balancer, else the skew model's."""
    if ep <= 1 or num_experts <= 1:
        return 1.0
    if balanced:
        return 1.0 + skew.balanced_imbalance_ratio
    return _unbalanced_factor(num_experts, min(ep, num_experts), per_expert_cv(num_experts, skew))


def balanced_placement(physical_experts: Array, num_routed_experts: int, load_balancer: bool) -> Array:
    """Whether a deployment places its experts by load: it holds redundant replicas (physical
    experts above the routed ones), or its server's recipes run a load balancer."""
    return (np.asarray(physical_experts, dtype=np.float64) > num_routed_experts) | load_balancer


def routing_factors(num_experts: int, ep: Array, balanced: Array, skew: RoutingSkew | None = None) -> Array:
    """:func:`busiest_rank_factor` over aligned arrays of EP sizes and balancer flags."""
    chosen = skew or load_routing_skew()
    sizes = np.asarray(ep, dtype=np.float64)
    flags = np.broadcast_to(np.asarray(balanced, dtype=bool), sizes.shape)
    result = np.ones(sizes.shape)
    for size in np.unique(sizes):
        for flag in (False, True):
            where = (sizes == size) & (flags == flag)
            if where.any():
                result[where] = busiest_rank_factor(num_experts, int(size), skew=chosen, balanced=flag)
    return result


__all__ = [
    "RoutingSkew",
    "balanced_placement",
    "busiest_rank_factor",
    "expert_shares",
    "load_routing_skew",
    "per_expert_cv",
    "rank_loads",
    "routing_factors",
]
