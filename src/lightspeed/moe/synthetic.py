"""Synthetic expert loads for planning when no log exists: Zipf, Dirichlet or uniform routing.

Each layer routes ``num_tokens x top_k`` token-expert pairs: drawn from a
multinomial over the experts, so even uniform routing shows the sampling noise
a finite batch has. With ``zipf`` an expert of popularity rank ``r`` gets a
share proportional to ``1 / r**skew`` (``skew`` 0 is uniform, 1 is classic
Zipf), the ranks shuffled in every layer so each layer has its own hot experts;
with ``dirichlet`` the shares are drawn from a symmetric Dirichlet of
concentration ``skew`` (small is skewed: 0.3 leaves a few experts with most
tokens, 10 is close to uniform).
"""

from __future__ import annotations

from typing import Final

import numpy as np

from lightspeed.errors import UserInputError
from lightspeed.moe.load import ExpertLoad, expert_load_from_array

DISTRIBUTIONS: Final = ("zipf", "dirichlet", "uniform")
MAX_CELLS: Final = 1 << 24  # layers x experts of one synthetic load


def _shares(rng: np.random.Generator, distribution: str, skew: float, num_experts: int) -> np.ndarray:
    if distribution == "uniform":
        return np.full(num_experts, 1.0 / num_experts)
    if distribution == "dirichlet":
        return rng.dirichlet(np.full(num_experts, skew))
    # 1 / r**skew in log space: a large exponent gives shares that underflow to 0, not r**skew = inf
    weights = np.exp(-skew * np.log(np.arange(1, num_experts + 1, dtype=np.float64)))
    return rng.permutation(weights / weights.sum())


def synthetic_load(
    *,
    num_layers: int,
    num_experts: int,
    distribution: str = "zipf",
    skew: float = 1.0,
    num_tokens: int = 65_536,
    top_k: int = 1,
    seed: int = 0,
) -> ExpertLoad:
    """A ``[num_layers, num_experts]`` load of ``num_tokens`` tokens per layer, each routed to
    ``top_k`` experts (see the module docstring for ``distribution`` and ``skew``).

    >>> load = synthetic_load(num_layers=2, num_experts=8, distribution="zipf", skew=1.0, num_tokens=1000)
    >>> load.array().sum(axis=1).tolist()
    [1000.0, 1000.0]
    """
    if distribution not in DISTRIBUTIONS:
        raise UserInputError(f"distribution {distribution!r} is not one of {', '.join(DISTRIBUTIONS)}")
    for label, value in (
        ("layers", num_layers),
        ("experts", num_experts),
        ("tokens", num_tokens),
        ("top-k", top_k),
    ):
        if value < 1:
            raise UserInputError(f"synthetic load needs >= 1 {label} (got {value})")
    if num_layers * num_experts > MAX_CELLS:
        raise UserInputError(
            f"{num_layers} layers x {num_experts} experts is above the {MAX_CELLS} counts allowed"
        )
    if top_k > num_experts:
        raise UserInputError(f"top-k {top_k} exceeds the {num_experts} experts")
    if not np.isfinite(skew) or skew < 0 or (distribution == "dirichlet" and skew <= 0):
        allowed = (
            "> 0 (the Dirichlet concentration)" if distribution == "dirichlet" else ">= 0 (the Zipf exponent)"
        )
        raise UserInputError(f"skew must be {allowed}; got {skew}")
    rng = np.random.default_rng(seed)
    pairs = num_tokens * top_k
    counts = [
        rng.multinomial(pairs, _shares(rng, distribution, skew, num_experts)) for _ in range(num_layers)
    ]
    label = distribution if distribution == "uniform" else f"{distribution} skew={skew:g}"
    return expert_load_from_array(
        np.asarray(counts, dtype=np.float64),
        model=f"synthetic {label}",
        top_k=top_k,
        source=f"synthetic: {label}, {num_tokens} tokens per layer, top-{top_k}, seed {seed}",
    )


__all__ = ["DISTRIBUTIONS", "synthetic_load"]
