"""A workload's context set against the model's: one rule for every command.

A sequence longer than the model's ``max_seq_len`` (a training ``seq_len``, a
request's prompt plus output) is outside what the model was trained for. A model
whose positions are rotary (RoPE), relative or absent (ALiBi) can still run it
(quality aside: a rope-scaled or fine-tuned variant is what one would serve), so
the commands say so in a note. A model whose positions are a *learned table*
(GPT-2/GPT-3, OPT, MPT's pretraining defaults: ``position_embedding = "learned"``)
has no embedding for a position past its table and cannot run it at all:
:func:`check_context` refuses.

>>> from lightspeed.workload import load_models
>>> models = load_models()
>>> check_context(models.get("llama-3-8b"), 4096)
()
>>> check_context(models.get("llama-3-8b"), 10_000, what="isl+osl")
("isl+osl 10,000 is above llama-3-8b's context of 8,192 tokens (max_seq_len)",)
"""

from __future__ import annotations

from lightspeed.errors import InvalidPlanError
from lightspeed.workload.spec import TransformerSpec


def context_note(spec: TransformerSpec, num_tokens: int, *, what: str = "seq_len") -> str:
    """A sentence where ``num_tokens`` (named ``what``) is above ``spec``'s context, else ``''``
    (what a count of FLOPs or bytes at that length notes; a run is checked by :func:`check_context`)."""
    if num_tokens <= spec.max_seq_len:
        return ""
    note = (
        f"{what} {num_tokens:,} is above {spec.name}'s context of {spec.max_seq_len:,} tokens (max_seq_len)"
    )
    if spec.position_embedding == "learned":
        return f"{note}: its positions are a learned table of that size, so the model cannot run it"
    return note


def check_context(spec: TransformerSpec, num_tokens: int, *, what: str = "seq_len") -> tuple[str, ...]:
    """The note of :func:`context_note` (none within the context); raise
    :class:`~lightspeed.errors.InvalidPlanError` where the model's positions are a learned table
    that ``num_tokens`` runs past."""
    note = context_note(spec, num_tokens, what=what)
    if note and spec.position_embedding == "learned":
        raise InvalidPlanError(
            f"{what} {num_tokens:,} is above {spec.name}'s learned position table of "
            f"{spec.max_seq_len:,} entries, so the model cannot run it; use {what} <= "
            f"{spec.max_seq_len:,}, or pass a model file with a longer table (--model-config)"
        )
    return (note,) if note else ()


__all__ = ["check_context", "context_note"]
