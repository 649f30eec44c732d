"""The pre-training context of a Hugging Face ``config.json``: what RoPE scaling extended.

A config whose RoPE is scaled (``rope_scaling``, or transformers 5's ``rope_parameters``) serves a
longer context than the model was pre-trained at: :func:`original_context` reads that context
from ``original_max_position_embeddings`` (refused naming the field where it is not a whole number
or is above ``max_position_embeddings``), or from the model's report where the config scales RoPE
without stating it (Gemma 3's 32,768) or states a served context above it without scaling
(Qwen3's 40,960 of a 32,768 pre-training); :func:`reported_context_note` says when the report's
figure was used. :func:`~lightspeed.workload.hf_config.spec_from_hf_config` stores it as the spec's
``original_max_seq_len``.
"""

from __future__ import annotations

from typing import Final

from lightspeed.datafile import Fields
from lightspeed.errors import DataFileError
from lightspeed.workload.spec import TransformerSpec

# Pre-training contexts a config.json does not state, from the model's report, used where the
# config scales RoPE (a factor above 1) without original_max_position_embeddings: Gemma 3 4B, 12B
# and 27B were pre-trained on 32K sequences, then scaled to 128K at the end of pre-training with
# RoPE rescaling of factor 8 (Gemma 3 Technical Report, arXiv 2503.19786, section 2 "Long context");
# their config.json says only rope_scaling {"rope_type": "linear", "factor": 8.0}. Each entry: the
# context, then what ``model show`` says of it.
_REPORTED_PRETRAINING_CONTEXT: Final = {
    "gemma3_text": (
        32_768,
        "the Gemma 3 Technical Report; config.json states no original_max_position_embeddings",
    )
}
# The same where the config scales nothing but states a served context above the pre-training one,
# by model type and the max_position_embeddings its release states: Qwen3's 40,960 (the model card:
# 32,768 natively), every model pre-trained last with 32,768-token sequences (Qwen3 Technical
# Report, arXiv 2505.09388, section 3.2, the long-context stage S3).
_QWEN3_NOTE: Final = "the Qwen3 Technical Report; config.json's max_position_embeddings is the context served"
_REPORTED_UNSCALED_CONTEXT: Final = {
    ("qwen3", 40_960): (32_768, _QWEN3_NOTE),
    ("qwen3_moe", 40_960): (32_768, _QWEN3_NOTE),
}


def reported_context_note(spec: TransformerSpec, fields: Fields, model_type: str) -> str:
    """What ``model show`` says of a pre-training context taken from the model's report (empty when
    none was): ``pre-trained at 32,768 positions before RoPE scaling (the Gemma 3 Technical
    Report; config.json states no original_max_position_embeddings)``."""
    reported = _reported_context(fields, model_type)
    if reported is None or spec.original_max_seq_len != reported[0]:
        return ""
    scaled = " before RoPE scaling" if _rope_scaling(fields) is not None else ""
    return f"pre-trained at {reported[0]:,} positions{scaled} ({reported[1]})"


def _reported_context(fields: Fields, model_type: str) -> tuple[int, str] | None:
    """The pre-training context (and what is said of it) a model's report gives where its config
    states none (:data:`_REPORTED_PRETRAINING_CONTEXT` where RoPE is scaled by a factor above 1,
    :data:`_REPORTED_UNSCALED_CONTEXT` where it is not scaled); ``None`` when the config states it,
    or the report's is not below ``max_position_embeddings``."""
    if _stated_original(fields):
        return None
    scaling = _rope_scaling(fields)
    longest = fields.integer("max_position_embeddings", minimum=1)
    if scaling is None:
        reported = _REPORTED_UNSCALED_CONTEXT.get((model_type, longest))
    else:
        reported = _REPORTED_PRETRAINING_CONTEXT.get(model_type) if _factor(scaling) > 1 else None
    return reported if reported is not None and reported[0] < longest else None


# The RoPE types transformers reads (modeling_rope_utils: ``ROPE_INIT_FUNCTIONS`` and ``default``),
# and the older names its configs still convert (Qwen2-VL's ``mrope``, read as ``default``; Phi-3's
# ``su``, read as ``longrope``); each with whether it scales by a ``factor`` it cannot go without
# (transformers requires the key for linear, dynamic, yarn and llama3; longrope derives its own)
_ROPE_TYPES: Final = {
    "default": False,
    "linear": True,
    "dynamic": True,
    "yarn": True,
    "longrope": False,
    "llama3": True,
    "proportional": False,
    "mrope": False,
    "su": False,
}


def _rope_type(scaling: Fields) -> str:
    """The scaling object's ``rope_type`` (``type`` in older configs; ``default`` when neither is
    set, ``null`` read as absent), refused naming the field and the known ones when unknown."""
    key = "rope_type" if scaling.data.get("rope_type") is not None else "type"
    return scaling.choice(key, tuple(_ROPE_TYPES), "RoPE type", default="default")


def _factor(scaling: Fields) -> float:
    """The scaling object's ``factor`` (1 when absent or ``null`` for a type that needs none),
    refused naming it when not a number, or absent where the type scales by it."""
    rope_type = _rope_type(scaling)
    if scaling.data.get("factor") is not None:
        return scaling.number("factor")
    if _ROPE_TYPES[rope_type]:
        raise DataFileError(
            scaling.path,
            f"RoPE type {rope_type} scales by a factor and none is given",
            field=f"{scaling.prefix}factor",
            value=scaling.data.get("factor"),
            fix='write "factor": <number >= 1> (the published config.json\'s value)',
        )
    return 1.0


def _rope_scaling(fields: Fields) -> Fields | None:
    """The config's RoPE scaling object (``rope_scaling``, or ``rope_parameters`` in transformers 5's
    configs); ``None`` without one, refused naming the field when it is not an object."""
    key = "rope_scaling" if fields.data.get("rope_scaling") is not None else "rope_parameters"
    return fields.table(key, required=False)


def _stated_original(fields: Fields) -> bool:
    """Whether the RoPE scaling object states ``original_max_position_embeddings``."""
    scaling = _rope_scaling(fields)
    return scaling is not None and scaling.data.get("original_max_position_embeddings") is not None


def original_context(fields: Fields, model_type: str) -> int | None:
    """The context before RoPE scaling extended it: the scaling object's
    ``original_max_position_embeddings`` (Llama 3.1's 8,192, DeepSeek-V3's 4,096), else the one the
    model's report gives where the config scales RoPE without it
    (:data:`_REPORTED_PRETRAINING_CONTEXT`: Gemma 3's 32,768) or states a served context above it
    (:data:`_REPORTED_UNSCALED_CONTEXT`: Qwen3's 32,768 of 40,960); ``None`` when nothing extended
    it (no scaling, or an original equal to ``max_position_embeddings``).

    Refused naming the field: a scaling block that is not an object, a ``factor`` that is not a
    positive number, an original context that is not a whole number or is above
    ``max_position_embeddings`` (scaling extends a context, it never shortens one)."""
    scaling = _rope_scaling(fields)
    if scaling is not None:
        _factor(scaling)  # a factor that is not a number is refused, stated original or not
    if scaling is None or not _stated_original(fields):
        reported = _reported_context(fields, model_type)
        return None if reported is None else reported[0]
    longest = fields.integer("max_position_embeddings", minimum=1)
    original = scaling.integer("original_max_position_embeddings", minimum=1)
    if original > longest:
        raise DataFileError(
            fields.path,
            f"original_max_position_embeddings {original:,} is above max_position_embeddings {longest:,}: "
            "RoPE scaling extends the pre-training context, it never shortens it",
            field=f"{scaling.prefix}original_max_position_embeddings",
            value=original,
            fix="copy rope_scaling and max_position_embeddings from the published config.json",
        )
    return original if original < longest else None


__all__ = ["original_context", "reported_context_note"]
