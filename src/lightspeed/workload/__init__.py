"""Workload models: transformer architectures and what they cost.

Parameters, FLOPs per token and bytes (weights, optimizer state, KV cache)
for dense, GQA, MoE and MLA transformers; known models ship as TOML data
files and Hugging Face ``config.json`` files import without network access.

>>> from lightspeed.workload import load_models, parameter_counts, training_flop
>>> models = load_models()
>>> round(parameter_counts(models.get("deepseek-v3")).total_params / 1e9, 1)
671.0
>>> f"{training_flop(models.get('dense-100t'), num_tokens=29e12).total_flop:.3g}"
'1.74e+28'
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lightspeed.lazy import attach

if TYPE_CHECKING:
    from lightspeed.workload.attention import (
        LayerGroup,
        cached_tokens,
        kv_bytes_per_token_at,
        kv_cache_bytes,
        kv_cache_reserved_bytes,
        kv_cache_tokens_per_layer,
        layer_attention_kinds,
        layer_groups,
        mean_attended_tokens,
        reserved_tokens,
    )
    from lightspeed.workload.context import check_context, context_note
    from lightspeed.workload.counts import (
        OptimizerState,
        ParameterCounts,
        attention_params,
        kv_cache_bytes_per_token,
        mlp_params,
        optimizer_kinds,
        optimizer_state_bytes,
        parameter_counts,
        weight_bytes,
    )
    from lightspeed.workload.flops import (
        CONVENTIONS,
        MFU_CONVENTION,
        FlopClaimCheck,
        FlopConvention,
        FlopsPerToken,
        TrainingFlop,
        attention_forward_flop,
        flops_per_token,
        get_convention,
        training_flop,
    )
    from lightspeed.workload.hf_config import SUPPORTED_MODEL_TYPES, spec_from_hf_config
    from lightspeed.workload.model_file import ModelEntry, PublishedCounts, Reference
    from lightspeed.workload.recurrent import GatedDeltaNetSpec, MambaSpec, RecurrentMixer
    from lightspeed.workload.registry import ModelRegistry, builtin_model_files, load_model_file, load_models
    from lightspeed.workload.spec import AttentionSpec, MoESpec, TransformerSpec
    from lightspeed.workload.summary import (
        ModelRow,
        ModelSummary,
        describe_model,
        entry_from_hf_config,
        list_models,
        resolve_model,
        resolve_model_entry,
    )


__all__ = [
    "CONVENTIONS",
    "MFU_CONVENTION",
    "SUPPORTED_MODEL_TYPES",
    "AttentionSpec",
    "FlopClaimCheck",
    "FlopConvention",
    "FlopsPerToken",
    "GatedDeltaNetSpec",
    "LayerGroup",
    "MambaSpec",
    "MoESpec",
    "ModelEntry",
    "ModelRegistry",
    "ModelRow",
    "ModelSummary",
    "OptimizerState",
    "ParameterCounts",
    "PublishedCounts",
    "RecurrentMixer",
    "Reference",
    "TrainingFlop",
    "TransformerSpec",
    "attention_forward_flop",
    "attention_params",
    "builtin_model_files",
    "cached_tokens",
    "check_context",
    "context_note",
    "describe_model",
    "entry_from_hf_config",
    "flops_per_token",
    "get_convention",
    "kv_bytes_per_token_at",
    "kv_cache_bytes",
    "kv_cache_bytes_per_token",
    "kv_cache_reserved_bytes",
    "kv_cache_tokens_per_layer",
    "layer_attention_kinds",
    "layer_groups",
    "list_models",
    "load_model_file",
    "load_models",
    "mean_attended_tokens",
    "mlp_params",
    "optimizer_kinds",
    "optimizer_state_bytes",
    "parameter_counts",
    "reserved_tokens",
    "resolve_model",
    "resolve_model_entry",
    "spec_from_hf_config",
    "training_flop",
    "weight_bytes",
]

if not TYPE_CHECKING:
    __getattr__, __dir__ = attach(__name__, __file__)
