"""Import a Hugging Face ``config.json`` (Llama, Mistral, Mixtral, Qwen2/2.5, Qwen3 dense and
MoE, DeepSeek-V2/V3, Gemma 2/3, gpt-oss, Nemotron).

The file is read as data with :func:`json.loads` (no code, no network): only
the fields the transformers implementation of each ``model_type`` uses to
shape its weights. Defaults are those of the transformers config classes
(``LlamaConfig``, ``MistralConfig``, ``MixtralConfig``, ``Qwen2Config``,
``DeepseekV3Config``): untied embeddings, ``num_key_value_heads`` equal to
``num_attention_heads``, ``head_dim = hidden_size / num_attention_heads``.

Architecture facts per type (from the transformers modeling files): all use
RoPE; all but Nemotron RMSNorm and a gated MLP (SwiGLU; GeGLU for Gemma);
Nemotron a squared-ReLU MLP and LayerNorm. Qwen2 has biases on Q, K and V but
not on the output projection, Qwen3 none (it normalizes Q and K instead);
gpt-oss biases on every attention projection. Mixtral routes every layer's MLP
to ``num_experts_per_tok`` of ``num_local_experts`` experts, gpt-oss likewise
with experts of ``intermediate_size``, Qwen3-MoE to ``num_experts`` experts of
``moe_intermediate_size``; DeepSeek-V2/V3 use MLA, dense MLPs in the first
``first_k_dense_replace`` layers, shared experts of ``moe_intermediate_size``
each and (V3) a router expert-bias vector (``topk_method = "noaux_tc"``).
Gemma 2 alternates sliding-window and global layers, Gemma 3 uses five local
layers per global one (``sliding_window_pattern``), gpt-oss alternates them
(``layer_types``); Gemma ties its embeddings unless told otherwise. A Gemma 3
multimodal config is read through its ``text_config``.

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

SUPPORTED_MODEL_TYPES: Final = (
    "llama",
    "mistral",
    "mixtral",
    "qwen2",
    "qwen3",
    "qwen3_moe",
    "deepseek_v2",
    "deepseek_v3",
    "gemma2",
    "gemma3",
    "gemma3_text",
    "gpt_oss",
    "nemotron",
)
_MLA_TYPES: Final = ("deepseek_v2", "deepseek_v3")
_GEMMA_TYPES: Final = ("gemma2", "gemma3_text")


def read_config(path: Path) -> dict[str, Any]:
    """Parse ``config.json`` (or the ``config.json`` inside folder ``path``) as a JSON object."""
    if path.is_dir():
        path = path / "config.json"
    data = load_json(path, max_bytes=MAX_DATA_FILE_BYTES, what="model config (config.json)")
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
    name = _model_name(config_path, data)
    if model_type == "gemma3":  # multimodal: the decoder is described by text_config
        text = fields.table("text_config")
        assert text is not None
        fields, model_type = text, "gemma3_text"
    try:
        return _build(fields, model_type, name)
    except UserInputError as error:
        raise DataFileError(
            config_path, str(error), fix="check the config against the published one"
        ) from None


def _model_name(path: Path, data: dict[str, Any]) -> str:
    declared = data.get("_name_or_path")
    if isinstance(declared, str) and declared.strip():
        return declared.strip()
    return path.parent.name or path.stem


def _mlp_kind(model_type: str) -> str:
    if model_type in _GEMMA_TYPES:
        return "geglu"
    return "relu2" if model_type == "nemotron" else "swiglu"


def _build(fields: Fields, model_type: str, name: str) -> TransformerSpec:
    hidden = fields.integer("hidden_size", minimum=1)
    return TransformerSpec(
        name=normalize_name(name),
        display_name=name,
        num_layers=fields.integer("num_hidden_layers", minimum=1),
        hidden_size=hidden,
        ffn_hidden_size=fields.integer("intermediate_size", minimum=1),
        vocab_size=fields.integer("vocab_size", minimum=1),
        attention=_mla(fields) if model_type in _MLA_TYPES else _attention(fields, model_type, hidden),
        mlp=_mlp_kind(model_type),
        moe=_moe(fields, model_type),
        tied_embeddings=fields.boolean("tie_word_embeddings", model_type in _GEMMA_TYPES),
        position_embedding="rope",
        max_seq_len=fields.integer("max_position_embeddings", minimum=1),
        norm="layernorm" if model_type == "nemotron" else "rmsnorm",
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
    window, interval = _window(fields, model_type)
    kind = "mha" if num_kv_heads == num_heads else "mqa" if num_kv_heads == 1 else "gqa"
    bias = model_type in ("llama", "gpt_oss", "nemotron") and fields.boolean("attention_bias", False)
    return AttentionSpec(
        kind=kind,
        num_heads=num_heads,
        num_kv_heads=num_kv_heads,
        head_dim=head_dim,
        qkv_bias=model_type == "qwen2" or bias,
        out_bias=bias,
        sliding_window=window,
        full_attention_interval=interval,
    )


def _window(fields: Fields, model_type: str) -> tuple[int | None, int | None]:
    """(sliding window, every how many layers one is global) of a config."""
    if model_type in ("mistral", "mixtral") or (
        model_type in ("qwen2", "qwen3", "qwen3_moe") and fields.boolean("use_sliding_window", False)
    ):
        return _optional(fields, "sliding_window"), None
    if model_type not in (*_GEMMA_TYPES, "gpt_oss"):
        return None, None
    window = _optional(fields, "sliding_window")
    layer_types = fields.data.get("layer_types")
    if isinstance(layer_types, list) and layer_types:
        full = sum(1 for kind in layer_types if kind == "full_attention")
        return window, (round(len(layer_types) / full) if full else None)
    if model_type == "gemma3_text":
        return window, fields.integer("sliding_window_pattern", 6, minimum=1)
    return window, 2


def _qwen3_moe(fields: Fields) -> MoESpec:
    if fields.data.get("mlp_only_layers") or fields.integer("decoder_sparse_step", 1, minimum=1) != 1:
        raise DataFileError(
            fields.path,
            "only every-layer MoE is modelled",
            field="mlp_only_layers",
            value=fields.data.get("mlp_only_layers"),
            fix="use decoder_sparse_step = 1 and no mlp_only_layers, or describe the model in a TOML file",
        )
    return MoESpec(
        num_routed_experts=fields.integer("num_experts", minimum=1),
        top_k=fields.integer("num_experts_per_tok", minimum=1),
        expert_ffn_hidden_size=fields.integer("moe_intermediate_size", minimum=1),
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
    if model_type in ("mixtral", "gpt_oss"):
        top_key = "num_experts_per_tok" if fields.has("num_experts_per_tok") else "experts_per_token"
        return MoESpec(
            num_routed_experts=fields.integer("num_local_experts", minimum=1),
            top_k=fields.integer(top_key, minimum=1),
            expert_ffn_hidden_size=fields.integer("intermediate_size", minimum=1),
            router_bias=model_type == "gpt_oss",
        )
    if model_type == "qwen3_moe":
        return _qwen3_moe(fields)
    if model_type not in _MLA_TYPES or fields.data.get("n_routed_experts") is None:
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
