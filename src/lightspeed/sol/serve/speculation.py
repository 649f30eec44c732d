"""Speculative decoding and MTP as an acceptance process per draft position.

Each verify pass drafts ``k`` tokens; draft position ``j`` is kept with
probability ``acceptance[j]`` *given that every position before it was kept*
(EAGLE's and DeepSeek's MTP papers report acceptance this way, falling with the
position), and the pass always yields one token of its own. A pass therefore
yields ``1 + A`` tokens, ``A`` the accepted prefix, with

``P(A >= j) = acceptance[0] x ... x acceptance[j - 1]``.

Every sequence draws its own passes (:func:`verify_passes`), so two requests of
the same length finish after different numbers of iterations, as in a real
server. A pass costs the target's verify step over ``k + 1`` query tokens per
sequence plus ``k`` draft steps of ``draft_cost_fraction`` of a plain decode step
each. An MTP module is one layer of the model, but at small batches its step is latency-bound
(the layer, the LM head, sampling): the default 0.05 reproduces TensorRT-LLM's published MTP
speed-ups for DeepSeek-R1 at batch 1 within 5% (``benchmarks/decode_floors.py``), where
``1 / layers`` would overstate them by up to 12%.

>>> process = AcceptanceProcess(acceptance=(0.8, 0.6, 0.4))
>>> round(process.expected_tokens_per_pass, 3)
2.472
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from lightspeed.errors import UserInputError
from lightspeed.records import Record
from lightspeed.sol.infer.plan import SpeculativeDecoding, check_acceptance_rate

Array = Any
PASSES_PER_DRAW = 64  # verify passes drawn at once per still-running request


@dataclass(frozen=True)
class AcceptanceProcess(Record):
    """Draft positions and the chance each is kept given the ones before it were (see the module)."""

    acceptance: tuple[float, ...]
    draft_cost_fraction: float = 0.05

    def __post_init__(self) -> None:
        if not self.acceptance:
            raise UserInputError("speculative decoding needs at least one draft position")
        for rate in self.acceptance:  # the plan's bounds: [0, 1), as SpeculativeDecoding's
            check_acceptance_rate(rate, error=UserInputError)
        if not 0.0 <= self.draft_cost_fraction <= 1.0:
            raise UserInputError(f"draft cost fraction {self.draft_cost_fraction} must be in [0, 1]")

    @classmethod
    def from_speculative(cls, speculative: SpeculativeDecoding) -> AcceptanceProcess:
        """Each position kept at the plan's rate for it (one rate: the same at every position)."""
        return cls(
            acceptance=speculative.position_rates,
            draft_cost_fraction=speculative.draft_cost_fraction,
        )

    @property
    def num_draft_tokens(self) -> int:
        """Draft positions per pass."""
        return len(self.acceptance)

    @property
    def yield_probabilities(self) -> Array:
        """``P(pass yields 1 + j tokens)`` for ``j = 0 .. k``."""
        kept = np.cumprod((1.0, *self.acceptance))  # P(A >= j)
        exact = kept.copy()
        exact[:-1] -= kept[1:]
        return exact

    @property
    def expected_tokens_per_pass(self) -> float:
        """Mean tokens one verify pass yields per sequence."""
        return float(np.sum(np.cumprod(self.acceptance))) + 1.0


def verify_passes(process: AcceptanceProcess, tokens: Array, rng: np.random.Generator) -> Array:
    """Verify passes each request needs to yield ``tokens`` tokens (int64, aligned; 0 for 0)."""
    remaining = np.asarray(tokens, dtype=np.int64).copy()
    passes = np.zeros_like(remaining)
    cumulative = np.cumsum(process.yield_probabilities)
    cumulative[-1] = 1.0
    active = np.flatnonzero(remaining > 0)
    while active.size:
        draws = np.searchsorted(cumulative, rng.random((active.size, PASSES_PER_DRAW)), side="right") + 1
        running = np.cumsum(draws, axis=1)
        need = remaining[active][:, None]
        done = running[:, -1] >= need[:, 0]
        first = np.argmax(running >= need, axis=1) + 1
        passes[active] += np.where(done, first, PASSES_PER_DRAW)
        remaining[active] -= running[:, -1]
        active = active[~done]
    return passes


__all__ = ["AcceptanceProcess", "verify_passes"]
