"""Import a Hugging Face ``config.json`` (llama, mistral, mixtral, qwen2, deepseek_v3).

The file is read as data with :func:`json.loads` (no code, no network): only
the fields the transformers implementation of each ``model_type`` uses to
shape its weights. Defaults are those of the transformers config classes
(``LlamaConfig``, ``MistralConfig``, ``MixtralConfig``, ``Qwen2Config``,
``DeepseekV3Config``): untied embeddings, ``num_key_value_heads`` equal to
``num_attention_heads``, ``head_dim = hidden_size / num_attention_heads``.

Architecture facts per type (from the transformers modeling files): all five
use RMSNorm, RoPE and a gated (SwiGLU) MLP; Qwen2 has biases on Q, K and V
but not on the output projection; Mixtral routes every layer's MLP to
``num_experts_per_tok`` of ``num_local_experts`` experts; DeepSeek-V3 uses MLA,
dense MLPs in the first ``first_k_dense_replace`` layers, shared experts of
``moe_intermediate_size`` each and a router expert-bias vector
(``topk_method = "noaux_tc"``).

>>> from pathlib import Path
>>> spec_from_hf_config(Path("tests/fixtures/hf_configs/llama-3-8b/config.json")).attention.kind
'gqa'
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

from lightspeed.datafile import MAX_DATA_FILE_BYTES, Fields, load_json, normalize_name
from lightspeed.errors import DataFileError, UserInputError
from lightspeed.workload.spec import AttentionSpec, MoESpec, TransformerSpec

SUPPORTED_MODEL_TYPES: Final = ("llama", "mistral", "mixtral", "qwen2", "deepseek_v3")


def read_config(path: Path) -> dict[str, Any]:
    """Parse ``config.json`` (or the ``config.json`` inside folder ``path``) as a JSON object."""
    if path.is_dir():
        path = path / "config.json"
    data = load_json(path, max_bytes=MAX_DATA_FILE_BYTES, what="config")
    if not isinstance(data, dict):
        raise DataFileError(
            path, "expected a JSON object at the top level", fix="pass a Hugging Face config.json"
        )
    return data


def spec_from_hf_config(path: Path) -> TransformerSpec:
    """The :class:`TransformerSpec` of a Hugging Face ``config.json`` file (or its folder).

    Raises :class:`DataFileError` naming the file, the field, its value and the fix
    when a field is missing, of the wrong type, or describes an impossible model.
    """
    config_path = path / "config.json" if path.is_dir() else path
    data = read_config(config_path)
    fields = Fields(str(config_path), data)
    model_type = fields.string("model_type")
    if model_type not in SUPPORTED_MODEL_TYPES:
        raise DataFileError(
            config_path,
            "unsupported model_type",
            field="model_type",
            value=model_type,
            fix=f"lightspeed imports {', '.join(SUPPORTED_MODEL_TYPES)}; "
            "describe other architectures in a model TOML file (docs/workload.md)",
        )
    try:
        return _build(fields, model_type, _model_name(config_path, data))
    except UserInputError as error:
        raise DataFileError(
            config_path, str(error), fix="check the config against the published one"
        ) from None


def _model_name(path: Path, data: dict[str, Any]) -> str:
    declared = data.get("_name_or_path")
    if isinstance(declared, str) and declared.strip():
        return declared.strip()
    return path.parent.name or path.stem


def _build(fields: Fields, model_type: str, name: str) -> TransformerSpec:
    hidden = fields.integer("hidden_size", minimum=1)
    return TransformerSpec(
        name=normalize_name(name),
        display_name=name,
        num_layers=fields.integer("num_hidden_layers", minimum=1),
        hidden_size=hidden,
        ffn_hidden_size=fields.integer("intermediate_size", minimum=1),
        vocab_size=fields.integer("vocab_size", minimum=1),
        attention=_mla(fields) if model_type == "deepseek_v3" else _attention(fields, model_type, hidden),
        mlp="swiglu",
        moe=_moe(fields, model_type),
        tied_embeddings=fields.boolean("tie_word_embeddings", False),
        position_embedding="rope",
        max_seq_len=fields.integer("max_position_embeddings", minimum=1),
        norm="rmsnorm",
        mlp_bias=model_type == "llama" and fields.boolean("mlp_bias", False),
        num_mtp_modules=fields.integer("num_nextn_predict_layers", 0) if model_type == "deepseek_v3" else 0,
        source=f"Hugging Face config.json ({fields.path})",
    )


def _optional(fields: Fields, key: str) -> int | None:
    """An integer field that may be absent or ``null``."""
    return None if fields.data.get(key) is None else fields.integer(key, minimum=1)


def _attention(fields: Fields, model_type: str, hidden: int) -> AttentionSpec:
    num_heads = fields.integer("num_attention_heads", minimum=1)
    num_kv_heads = fields.integer("num_key_value_heads", num_heads, minimum=1)
    if num_heads % num_kv_heads:
        raise DataFileError(
            fields.path,
            f"num_attention_heads {num_heads} is not a multiple of num_key_value_heads",
            field="num_key_value_heads",
            value=num_kv_heads,
            fix=f"use a divisor of {num_heads} (the published config's value)",
        )
    head_dim = _optional(fields, "head_dim")
    if head_dim is None:
        if hidden % num_heads:
            raise DataFileError(
                fields.path,
                f"hidden_size {hidden} is not a multiple of num_attention_heads {num_heads}",
                field="num_attention_heads",
                value=num_heads,
                fix="add head_dim or correct num_attention_heads",
            )
        head_dim = hidden // num_heads
    window = None
    if model_type in ("mistral", "mixtral") or (
        model_type == "qwen2" and fields.boolean("use_sliding_window", False)
    ):
        window = _optional(fields, "sliding_window")
    kind = "mha" if num_kv_heads == num_heads else "mqa" if num_kv_heads == 1 else "gqa"
    return AttentionSpec(
        kind=kind,
        num_heads=num_heads,
        num_kv_heads=num_kv_heads,
        head_dim=head_dim,
        qkv_bias=model_type == "qwen2" or (model_type == "llama" and fields.boolean("attention_bias", False)),
        out_bias=model_type == "llama" and fields.boolean("attention_bias", False),
        sliding_window=window,
    )


def _mla(fields: Fields) -> AttentionSpec:
    num_heads = fields.integer("num_attention_heads", minimum=1)
    nope = fields.integer("qk_nope_head_dim", minimum=1)
    rope = fields.integer("qk_rope_head_dim", minimum=1)
    bias = fields.boolean("attention_bias", False)
    return AttentionSpec(
        kind="mla",
        num_heads=num_heads,
        num_kv_heads=fields.integer("num_key_value_heads", num_heads, minimum=1),
        head_dim=nope + rope,
        qkv_bias=bias,
        out_bias=bias,
        q_lora_rank=_optional(fields, "q_lora_rank"),
        kv_lora_rank=fields.integer("kv_lora_rank", minimum=1),
        qk_nope_head_dim=nope,
        qk_rope_head_dim=rope,
        v_head_dim=fields.integer("v_head_dim", minimum=1),
    )


def _moe(fields: Fields, model_type: str) -> MoESpec | None:
    if model_type == "mixtral":
        return MoESpec(
            num_routed_experts=fields.integer("num_local_experts", minimum=1),
            top_k=fields.integer("num_experts_per_tok", minimum=1),
            expert_ffn_hidden_size=fields.integer("intermediate_size", minimum=1),
        )
    if model_type != "deepseek_v3" or fields.data.get("n_routed_experts") is None:
        return None
    frequency = fields.integer("moe_layer_freq", 1, minimum=1)
    if frequency != 1:
        raise DataFileError(
            fields.path,
            "only every-layer MoE after the dense layers is modelled",
            field="moe_layer_freq",
            value=frequency,
            fix="use moe_layer_freq = 1 or describe the model in a TOML file",
        )
    expert = fields.integer("moe_intermediate_size", minimum=1)
    num_shared = fields.integer("n_shared_experts", 0)
    return MoESpec(
        num_routed_experts=fields.integer("n_routed_experts", minimum=1),
        top_k=fields.integer("num_experts_per_tok", minimum=1),
        expert_ffn_hidden_size=expert,
        num_shared_experts=num_shared,
        shared_expert_ffn_hidden_size=expert if num_shared else 0,
        num_dense_layers=fields.integer("first_k_dense_replace", 0),
        router_bias=fields.string("topk_method", "greedy") == "noaux_tc",
        num_expert_groups=fields.integer("n_group", minimum=1) if fields.has("n_group") else None,
        top_k_groups=fields.integer("topk_group", minimum=1) if fields.has("topk_group") else None,
    )
