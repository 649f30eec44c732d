"""Synthetic expert loads for planning when no log exists: Zipf, Dirichlet or uniform routing.

Each layer routes ``num_tokens`` tokens, each to ``top_k`` distinct experts
(a router's top-k never picks one expert twice, so no expert gets more tokens
than there are). A token draws its experts one after another, each in
proportion to the shares of the experts it has not drawn yet: successive
sampling, what the top-k of router logits with random noise selects. With
``top_k`` 1 this is a multinomial over the shares; above it a hot expert gets
less than ``top_k`` times its share (at most every token). Even uniform routing
shows the sampling noise a finite batch has. With ``zipf`` an expert of
popularity rank ``r`` gets a share proportional to ``1 / r**skew`` (``skew`` 0
is uniform, 1 is classic Zipf), the ranks shuffled in every layer so each layer
has its own hot experts; with ``dirichlet`` the shares are drawn from a
symmetric Dirichlet of concentration ``skew`` (small is skewed: 0.3 leaves a
few experts with most tokens, 10 is close to uniform).
"""

from __future__ import annotations

from typing import Final

import numpy as np

from lightspeed.errors import UserInputError
from lightspeed.moe.load import ExpertLoad, expert_load_from_array

DISTRIBUTIONS: Final = ("zipf", "dirichlet", "uniform")
MAX_CELLS: Final = 1 << 24  # steps x layers x experts of one synthetic load
MAX_PAIRS: Final = 1 << 31  # token-expert pairs drawn one by one (1 < top-k < experts): minutes


TOKEN_BLOCK: Final = 1 << 16  # tokens drawn at once
EXACT_MASS: Final = 1e-9  # below this share of the total left, a token finishes in log space


def _log_weights(rng: np.random.Generator, distribution: str, skew: float, num_experts: int) -> np.ndarray:
    """Log of each expert's (unnormalised) share; finite, so a share that underflows still ranks."""
    if distribution == "uniform":
        return np.zeros(num_experts)
    if distribution == "dirichlet":
        shares = rng.dirichlet(np.full(num_experts, skew))
        return np.log(np.maximum(shares, np.finfo(np.float64).tiny))
    # -skew * log r: a large exponent keeps its order instead of underflowing to 0
    return rng.permutation(-skew * np.log(np.arange(1, num_experts + 1, dtype=np.float64)))


def _probabilities(log_weights: np.ndarray) -> np.ndarray:
    weights: np.ndarray = np.exp(log_weights - log_weights.max())
    return weights / float(weights.sum())


def _next_expert(
    rng: np.random.Generator,
    probabilities: np.ndarray,
    ends: np.ndarray,
    chosen: np.ndarray,
    left: np.ndarray,
) -> np.ndarray:
    """One more expert per token, in proportion to the shares of those it has not drawn: a uniform
    point in the share left, moved past each drawn expert's interval (lowest index first)."""
    point = rng.random(left.size) * left
    starts = ends - probabilities
    for expert in np.sort(chosen, axis=1).T:
        point += np.where(point >= starts[expert], probabilities[expert], 0.0)
    picked: np.ndarray = np.minimum(np.searchsorted(ends, point, side="right"), ends.size - 1)
    return picked


def _finish_in_log_space(
    rng: np.random.Generator, log_weights: np.ndarray, chosen: np.ndarray, num_chosen: np.ndarray
) -> np.ndarray:
    """The rest of each token's experts by the Gumbel top-k of those it lacks (successive sampling
    too, and exact where the shares left are too small for the point above)."""
    keys = log_weights + rng.gumbel(size=(chosen.shape[0], log_weights.size))
    rows = np.arange(chosen.shape[0])
    for column in range(chosen.shape[1]):
        valid = num_chosen > column
        keys[rows[valid], chosen[valid, column]] = -np.inf
    order = np.argsort(-keys, axis=1)
    result = chosen.copy()
    for column in range(chosen.shape[1]):
        late = num_chosen <= column
        result[late, column] = order[late, column - num_chosen[late]]
    return result


def _draw_distinct(
    rng: np.random.Generator, log_weights: np.ndarray, num_tokens: int, top_k: int
) -> np.ndarray:
    """Token counts per expert when each of ``num_tokens`` tokens draws ``top_k`` distinct experts
    one after another (successive sampling; see the module docstring)."""
    probabilities = _probabilities(log_weights)
    ends = np.cumsum(probabilities)
    chosen = np.zeros((num_tokens, top_k), dtype=np.int64)
    num_chosen = np.zeros(num_tokens, dtype=np.int64)
    exact = np.ones(num_tokens, dtype=bool)  # tokens the point above still draws exactly
    left = np.full(num_tokens, ends[-1])
    for step in range(top_k):
        exact &= left > EXACT_MASS * ends[-1]
        rows = np.flatnonzero(exact)
        picked = _next_expert(rng, probabilities, ends, chosen[rows, :step], left[rows])
        fresh = ~(chosen[rows, :step] == picked[:, None]).any(axis=1)  # a rounding slip repeats one
        exact[rows[~fresh]] = False
        rows, picked = rows[fresh], picked[fresh]
        chosen[rows, step] = picked
        num_chosen[rows] += 1
        left[rows] -= probabilities[picked]
    short = np.flatnonzero(num_chosen < top_k)
    if short.size:
        chosen[short] = _finish_in_log_space(rng, log_weights, chosen[short], num_chosen[short])
    counts: np.ndarray = np.bincount(chosen.ravel(), minlength=log_weights.size)
    return counts


def _layer_counts(
    rng: np.random.Generator, log_weights: np.ndarray, num_tokens: int, top_k: int
) -> np.ndarray:
    """One layer's counts: a multinomial for top-1, distinct draws in blocks of tokens above it."""
    if top_k == 1:
        return rng.multinomial(num_tokens, _probabilities(log_weights))
    if top_k == log_weights.size:
        return np.full(log_weights.size, num_tokens)  # every token reaches every expert
    counts = np.zeros(log_weights.size, dtype=np.int64)
    for start in range(0, num_tokens, TOKEN_BLOCK):
        counts += _draw_distinct(rng, log_weights, min(TOKEN_BLOCK, num_tokens - start), top_k)
    return counts


def _check(distribution: str, skew: float, sizes: tuple[int, int, int, int, int]) -> None:
    """Refuse a synthetic load that cannot be drawn (or would take too long to draw)."""
    num_layers, num_experts, num_tokens, top_k, num_steps = sizes
    if distribution not in DISTRIBUTIONS:
        raise UserInputError(f"distribution {distribution!r} is not one of {', '.join(DISTRIBUTIONS)}")
    for label, value in (
        ("layers", num_layers),
        ("experts", num_experts),
        ("tokens", num_tokens),
        ("top-k", top_k),
        ("steps", num_steps),
    ):
        if value < 1:
            raise UserInputError(f"synthetic load needs >= 1 {label} (got {value})")
    if num_layers * num_experts * num_steps > MAX_CELLS:
        raise UserInputError(
            f"{num_steps} steps x {num_layers} layers x {num_experts} experts is above the {MAX_CELLS} "
            "counts allowed"
        )
    if top_k > num_experts:
        raise UserInputError(f"top-k {top_k} exceeds the {num_experts} experts")
    pairs = num_tokens * top_k * num_layers * num_steps
    if 1 < top_k < num_experts and pairs > MAX_PAIRS:
        raise UserInputError(
            f"{pairs:,} token-expert pairs to draw one by one is above the {MAX_PAIRS:,} allowed: "
            "use fewer tokens, steps or layers"
        )
    if not np.isfinite(skew) or skew < 0 or (distribution == "dirichlet" and skew <= 0):
        allowed = (
            "> 0 (the Dirichlet concentration)" if distribution == "dirichlet" else ">= 0 (the Zipf exponent)"
        )
        raise UserInputError(f"skew must be {allowed}; got {skew}")


def synthetic_load(
    *,
    num_layers: int,
    num_experts: int,
    distribution: str = "zipf",
    skew: float = 1.0,
    num_tokens: int = 65_536,
    top_k: int = 1,
    seed: int = 0,
    num_steps: int = 1,
) -> ExpertLoad:
    """A ``[num_layers, num_experts]`` load of ``num_tokens`` tokens per layer, each routed to
    ``top_k`` distinct experts (see the module docstring for ``distribution`` and ``skew``).
    With ``num_steps`` above 1 each step routes ``num_tokens`` tokens over the same shares and
    the load keeps every step's counts (to place on some steps and score on later ones).

    >>> load = synthetic_load(num_layers=2, num_experts=8, distribution="zipf", skew=1.0, num_tokens=1000)
    >>> load.array().sum(axis=1).tolist()
    [1000.0, 1000.0]
    """
    _check(distribution, skew, (num_layers, num_experts, num_tokens, top_k, num_steps))
    rng = np.random.default_rng(seed)
    shares = [_log_weights(rng, distribution, skew, num_experts) for _ in range(num_layers)]
    steps = np.asarray(
        [[_layer_counts(rng, layer, num_tokens, top_k) for layer in shares] for _ in range(num_steps)],
        dtype=np.float64,
    )
    label = distribution if distribution == "uniform" else f"{distribution} skew={skew:g}"
    per_step = f" per step, {num_steps} steps" if num_steps > 1 else ""
    return expert_load_from_array(
        steps.sum(axis=0),
        model=f"synthetic {label}",
        top_k=top_k,
        num_steps=num_steps,
        source=f"synthetic: {label}, {num_tokens} tokens per layer{per_step}, top-{top_k}, seed {seed}",
        step_counts=steps if num_steps > 1 else None,
    )


__all__ = ["DISTRIBUTIONS", "synthetic_load"]
