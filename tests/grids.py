"""One iteration's work as the inference engine takes it (importable as ``grids``: pytest's
pythonpath has tests/)."""

from __future__ import annotations

import numpy as np

from lightspeed.sol.infer.iteration import IterationGrid

_IDLE = {
    "decode_sequences": 0.0,
    "query_tokens": 1.0,
    "decode_context": 0.0,
    "prefill_tokens": 0.0,
    "prefill_context": 0.0,
    "prefill_requests": 0.0,
    "decode_context_span": 0.0,
}


def iteration_grid(tp: float = 1.0, ep: float | None = None, **work: float) -> IterationGrid:
    """A one-point grid of ``work`` (the fields of :class:`IterationGrid` left out are idle) on a
    ``tp``-way replica, experts split ``ep`` ways (``tp`` unless given), one stage, no attention DP."""
    values = _IDLE | work
    one = np.ones(1)
    return IterationGrid(
        tp=tp * one,
        pp=one,
        ep=(tp if ep is None else ep) * one,
        dp_attention=one,
        group_prefill_tokens=values["prefill_tokens"] * one,
        **{key: value * one for key, value in values.items()},
    )
