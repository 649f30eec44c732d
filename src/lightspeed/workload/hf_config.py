"""Import a Hugging Face ``config.json`` (Llama, Llama 4, Mistral, Mixtral, Qwen2/2.5, Qwen3 dense
and MoE, Qwen3-Next, Qwen3.5, DeepSeek-V2/V3/V3.2, GLM-5, Gemma 2/3, gpt-oss, Nemotron, Nemotron-H).

The file is read as data with :func:`json.loads` (no code, no network): only
the fields the transformers implementation of each ``model_type`` uses to
shape its weights. Defaults are those of the transformers config classes
(``LlamaConfig``, ``MistralConfig``, ``MixtralConfig``, ``Qwen2Config``,
``DeepseekV3Config``): untied embeddings, ``num_key_value_heads`` equal to
``num_attention_heads``, ``head_dim = hidden_size / num_attention_heads``.

Architecture facts per type (from the transformers modeling files): all use
RoPE; all but Nemotron RMSNorm and a gated MLP (SwiGLU; GeGLU for Gemma);
Nemotron a squared-ReLU MLP and LayerNorm. Qwen2 has biases on Q, K and V but
not on the output projection, Qwen3 none (it normalizes Q and K instead: ``qk_norm``, as
Qwen3-MoE, Qwen3-Next, Qwen3.5 and Gemma 3 do); Gemma 2 and Gemma 3 have four RMSNorms a layer
(``norms_per_layer``: before and after attention and the MLP);
gpt-oss biases on every attention projection and on its experts' projections.
Mixtral routes every layer's MLP
to ``num_experts_per_tok`` of ``num_local_experts`` experts, gpt-oss likewise
with experts of ``intermediate_size``, Qwen3-MoE to ``num_experts`` experts of
``moe_intermediate_size``; DeepSeek-V2/V3 use MLA, dense MLPs in the first
``first_k_dense_replace`` layers, shared experts of ``moe_intermediate_size``
each and (V3) a router expert-bias vector (``topk_method = "noaux_tc"``);
DeepSeek-V3.2 (``deepseek_v32``) and GLM-5 (``glm_moe_dsa``) are V3's layout with
DeepSeek Sparse Attention: ``index_topk``, ``index_n_heads`` and ``index_head_dim``
give every layer's lightning indexer.
Qwen3-Next (``qwen3_next``) and Qwen3.5 (``qwen3_5``, ``qwen3_5_moe``, read through their
``text_config``) are hybrids (:attr:`~lightspeed.workload.TransformerSpec.block_pattern`):
each layer is a Gated DeltaNet (``layer_types`` ``linear_attention``; ``linear_num_key_heads``,
``linear_num_value_heads``, ``linear_key_head_dim``, ``linear_value_head_dim``,
``linear_conv_kernel_dim``; its state kept in ``mamba_ssm_dtype``, else 16-bit) or gated full
attention (its query projection twice as wide) block
followed by an MoE block (``num_experts``, every ``decoder_sparse_step``-th layer not in
``mlp_only_layers``, a shared expert behind a sigmoid gate) or a dense MLP block; without
``layer_types`` every ``full_attention_interval``-th layer (default 4) is full attention.
Llama 4 has a dense MLP of ``intermediate_size_mlp`` and, every
``interleave_moe_layer_step``-th layer, ``num_local_experts`` routed experts and
one shared expert of ``intermediate_size``.

Attention variants (:mod:`lightspeed.workload.attention`): a config's
``layer_types`` (``full_attention``, ``sliding_attention``,
``chunked_attention``) is read first, as transformers does; without it,
Mistral/Mixtral window every layer with ``sliding_window``, Qwen2/Qwen3 the
layers from ``max_window_layers`` on when ``use_sliding_window`` is set, Gemma 2
every other layer, Gemma 3 all but every ``sliding_window_pattern``-th (default
6), gpt-oss every other layer, and Llama 4 chunks (``attention_chunk_size``) the
RoPE layers of ``no_rope_layers`` (default: all but every
``no_rope_layer_interval``-th, 4). Gemma ties its embeddings unless told
otherwise. Gemma 3 and Llama 4 multimodal configs are read through their
``text_config``.

The pre-training context is ``rope_scaling.original_max_position_embeddings`` (a wrongly typed
or impossible value, one above ``max_position_embeddings``, is refused naming the field); Gemma 3's
configs scale RoPE without stating it, and its report's 32,768 applies
(:mod:`~lightspeed.workload.hf_rope_scaling`). The weight format the checkpoint ships in is what
its ``quantization_config`` names, and its attention projections stay 16-bit where the block leaves
every one unconverted (``modules_to_not_convert`` and the like;
:mod:`~lightspeed.workload.hf_quantization`). Sizes past any model built (``MAX_DIMENSION``) are
refused naming the config.json key (``intermediate_size``, not ``ffn_hidden_size``). An imported
model is named by the config's ``_name_or_path``, else by the file's stem (``llama3-8b.json``),
or by its folder for a file called ``config.json``.

>>> from pathlib import Path
>>> spec_from_hf_config(Path("tests/fixtures/hf_configs/llama-3-8b/config.json")).attention.kind
'gqa'
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Final

from lightspeed.datafile import MAX_DATA_FILE_BYTES, Fields, JsonFields, load_json, normalize_name
from lightspeed.errors import DataFileError, UserInputError
from lightspeed.limits import MAX_HEADS_OR_HEAD_DIM, MAX_MTP_MODULES
from lightspeed.workload.hf_quantization import checkpoint_formats
from lightspeed.workload.hf_rope_scaling import original_context, reported_context_note
from lightspeed.workload.recurrent import GatedDeltaNetSpec, MambaSpec
from lightspeed.workload.spec import (
    DIMENSION_REASON,
    MAX_DIMENSION,
    AttentionSpec,
    MoESpec,
    TransformerSpec,
    grouped_attention_kind,
)

SUPPORTED_MODEL_TYPES: Final = (
    "llama",
    "llama4",
    "llama4_text",
    "mistral",
    "mixtral",
    "qwen2",
    "qwen3",
    "qwen3_moe",
    "deepseek_v2",
    "deepseek_v3",
    "deepseek_v32",
    "glm_moe_dsa",
    "gemma2",
    "gemma3",
    "gemma3_text",
    "gpt_oss",
    "nemotron",
    "nemotron_h",
    "qwen3_next",
    "qwen3_5",
    "qwen3_5_moe",
)
_MLA_TYPES: Final = ("deepseek_v2", "deepseek_v3", "deepseek_v32", "glm_moe_dsa")
_MTP_TYPES: Final = ("deepseek_v3", "deepseek_v32", "glm_moe_dsa")  # num_nextn_predict_layers
_GEMMA_TYPES: Final = ("gemma2", "gemma3_text")
_QWEN_TYPES: Final = ("qwen2", "qwen3", "qwen3_moe")
# types whose attention has q_norm and k_norm of head_dim weights (transformers' Qwen3Attention,
# Qwen3MoeAttention, Gemma3Attention; Qwen3NextAttention and the Qwen3.5 ones in _GDN_TYPES too)
_QK_NORM_TYPES: Final = ("qwen3", "qwen3_moe", "gemma3_text")
# norms per layer where a type's decoder layer does not have two (transformers' Gemma2DecoderLayer
# and Gemma3DecoderLayer: input, post-attention, pre-feedforward and post-feedforward RMSNorms)
_NORMS_PER_LAYER: Final = {"gemma2": 4, "gemma3_text": 4}
# types whose MLPs always carry biases, whatever the config says: gpt-oss' experts (transformers'
# GptOssExperts: gate_up_proj_bias of 2 x intermediate_size and down_proj_bias of hidden_size)
_EXPERT_BIAS_TYPES: Final = ("gpt_oss",)
# multimodal wrappers whose decoder is described by text_config
_TEXT_CONFIG_TYPES: Final = {
    "gemma3": "gemma3_text",
    "llama4": "llama4_text",
    "qwen3_5": "qwen3_5_text",
    "qwen3_5_moe": "qwen3_5_moe_text",
}
# Gated DeltaNet hybrids: transformers' Qwen3NextConfig and the Qwen3.5 text configs
_GDN_TYPES: Final = ("qwen3_next", "qwen3_5_text", "qwen3_5_moe_text")
# transformers' defaults where a config leaves sliding_window out (Gemma2Config, Gemma3TextConfig,
# GptOssConfig)
_WINDOW_DEFAULTS: Final = {"gemma2": 4096, "gemma3_text": 4096, "gpt_oss": 128}
# transformers' defaults where a config leaves the vocabulary or the context out (the published
# google/gemma-3-27b-it config.json's text_config has neither): Gemma2Config vocab_size 256000,
# max_position_embeddings 8192; Gemma3TextConfig 262_208 and 131_072; GptOssConfig 201088 and
# 131072 (transformers 5.25.0, models/*/configuration_*.py). Types whose defaults are another
# model's (LlamaConfig's 32000 and 2048 are Llama 1's; Llama4TextConfig's 131072 is neither Scout's
# nor Maverick's context) get none: a file without the key is refused.
_SIZE_DEFAULTS: Final[dict[str, dict[str, int]]] = {
    "gemma2": {"vocab_size": 256_000, "max_position_embeddings": 8192},
    "gemma3_text": {"vocab_size": 262_208, "max_position_embeddings": 131_072},
    "gpt_oss": {"vocab_size": 201_088, "max_position_embeddings": 131_072},
}
# the transformers config class of each type that has defaults above (named in the note)
_CONFIG_CLASSES: Final = {
    "gemma2": "Gemma2Config",
    "gemma3_text": "Gemma3TextConfig",
    "gpt_oss": "GptOssConfig",
}
# HF layer_types names -> lightspeed's layer kinds
_HF_LAYER_KINDS: Final = {
    "full_attention": "full",
    "sliding_attention": "sliding",
    "chunked_attention": "chunked",
}


class _JsonFields(JsonFields):
    """A ``config.json`` object: a missing key's fix is the published config.json's value, and a
    ``null`` where a default exists reads as the key left out, whatever the field's type
    (transformers keeps its default: Mixtral's ``"num_key_value_heads": null`` is as many as the
    attention heads, ``"tie_word_embeddings": null`` untied on a Llama)."""

    def integer(self, key: str, default: int | None = None, minimum: int = 0) -> int:
        if default is not None and self.data.get(key) is None:
            return default
        return super().integer(key, default, minimum)

    def boolean(self, key: str, default: bool | None = None) -> bool:
        if default is not None and self.data.get(key) is None:
            return default
        return super().boolean(key, default)

    def string(self, key: str, default: str | None = None) -> str:
        if default is not None and self.data.get(key) is None:
            return default
        return super().string(key, default)

    def number(self, key: str, default: float | None = None, positive: bool = True) -> float:
        if default is not None and self.data.get(key) is None:
            return float(default)
        return super().number(key, default, positive)

    def _absent(self, key: str, shape: str) -> DataFileError | None:
        return DataFileError(
            self.path,
            "missing key",
            field=self._name(key),
            fix=f"add {self._pair(key, shape)} (the published config.json's value)",
        )


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
    fields: Fields = _JsonFields(str(config_path), data)
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
    if model_type in _TEXT_CONFIG_TYPES:  # multimodal: the decoder is described by text_config
        text = fields.table("text_config")
        assert text is not None
        fields, model_type = text, _TEXT_CONFIG_TYPES[model_type]
    fields, defaults = _with_defaults(fields, model_type)
    try:
        spec = _build(fields, model_type, name)
    except UserInputError as error:
        raise DataFileError(
            config_path, str(error), fix="check the config against the published one"
        ) from None
    notes = (
        spec.note,
        _defaults_note(spec, model_type, defaults),
        reported_context_note(spec, fields, model_type),
    )
    note = "; ".join(part for part in notes if part)
    weights, attention, source = checkpoint_formats(data, spec)
    return replace(
        spec, release_format=weights, release_source=source, release_attention_format=attention, note=note
    )


def _with_defaults(fields: Fields, model_type: str) -> tuple[Fields, dict[str, int]]:
    """``fields`` with transformers' defaults (``_SIZE_DEFAULTS``, and ``_WINDOW_DEFAULTS`` where
    the model has sliding layers) filled in for the keys the config leaves out, and those
    defaults by key (what the spec's note says was assumed)."""
    used = {
        key: value
        for key, value in _SIZE_DEFAULTS.get(model_type, {}).items()
        if fields.data.get(key) is None
    }
    if model_type in _WINDOW_DEFAULTS and fields.data.get("sliding_window") is None:
        used["sliding_window"] = _WINDOW_DEFAULTS[model_type]
    if not used:
        return fields, used
    filled = _JsonFields(fields.path, {**fields.data, **used}, prefix=fields.prefix)
    return filled, used


def _defaults_note(spec: TransformerSpec, model_type: str, defaults: dict[str, int]) -> str:
    """What ``model show`` says of the defaults an import assumed (empty when none): ``config.json
    leaves out vocab_size, max_position_embeddings: assumed 262,208, 131,072, the defaults of
    transformers' Gemma3TextConfig``."""
    if spec.attention.sliding_window is None:  # a window default only matters where layers slide
        defaults = {key: value for key, value in defaults.items() if key != "sliding_window"}
    if not defaults:
        return ""
    values = ", ".join(f"{value:,}" for value in defaults.values())
    plural = "s" if len(defaults) > 1 else ""
    return (
        f"config.json leaves out {', '.join(defaults)}: assumed {values}, the default{plural} of "
        f"transformers' {_CONFIG_CLASSES[model_type]}"
    )


def _model_name(path: Path, data: dict[str, Any]) -> str:
    """The config's ``_name_or_path``; else the file's stem (``llama3-8b.json`` names
    ``llama3-8b``), or its folder's name for a file called ``config.json`` (as a Hugging Face
    download keeps it: ``Meta-Llama-3-8B/config.json``)."""
    declared = data.get("_name_or_path")
    if isinstance(declared, str) and declared.strip():
        return declared.strip()
    if path.name == "config.json":
        return path.absolute().parent.name or path.stem
    return path.stem


def _mlp_bias(fields: Fields, model_type: str) -> bool:
    """Whether the MLPs carry biases: always for :data:`_EXPERT_BIAS_TYPES` (gpt-oss' experts),
    as ``mlp_bias`` says for Llama, never for the other types."""
    return model_type in _EXPERT_BIAS_TYPES or (model_type == "llama" and fields.boolean("mlp_bias", False))


def _mlp_kind(model_type: str) -> str:
    if model_type in _GEMMA_TYPES:
        return "geglu"
    return "relu2" if model_type == "nemotron" else "swiglu"


def _build(fields: Fields, model_type: str, name: str) -> TransformerSpec:
    if model_type == "nemotron_h":
        return _nemotron_h(fields, name)
    if model_type in _GDN_TYPES:
        return _gated_delta_net_hybrid(fields, model_type, name)
    hidden = _hidden_size(fields)
    dense_key = "intermediate_size_mlp" if model_type == "llama4_text" else "intermediate_size"
    num_layers = _dimension(fields, "num_hidden_layers", "num_layers")
    return TransformerSpec(
        name=normalize_name(name),
        display_name=name,
        num_layers=num_layers,
        hidden_size=hidden,
        ffn_hidden_size=_dimension(fields, dense_key, "ffn_hidden_size"),
        vocab_size=_dimension(fields, "vocab_size", "vocab_size"),
        attention=(
            _mla(fields) if model_type in _MLA_TYPES else _attention(fields, model_type, hidden, num_layers)
        ),
        mlp=_mlp_kind(model_type),
        moe=_moe(fields, model_type),
        tied_embeddings=fields.boolean("tie_word_embeddings", model_type in _GEMMA_TYPES),
        position_embedding="rope",
        max_seq_len=_dimension(fields, "max_position_embeddings", "max_seq_len"),
        original_max_seq_len=original_context(fields, model_type),
        norm="layernorm" if model_type == "nemotron" else "rmsnorm",
        mlp_bias=_mlp_bias(fields, model_type),
        num_mtp_modules=_mtp_modules(fields, "num_nextn_predict_layers") if model_type in _MTP_TYPES else 0,
        source=f"Hugging Face config.json ({fields.path})",
        norms_per_layer=_NORMS_PER_LAYER.get(model_type),
    )


def _nemotron_h(fields: Fields, name: str) -> TransformerSpec:
    """A Nemotron-H / Nemotron 3 hybrid (transformers' ``NemotronHConfig``): its blocks follow
    ``hybrid_override_pattern``; Mamba-2 mixers of ``mamba_num_heads`` x ``mamba_head_dim`` with
    ``n_groups`` groups of ``ssm_state_size``; MoE blocks when ``n_routed_experts`` is set (with
    ``moe_latent_size`` for Nemotron 3 Super's LatentMoE); squared-ReLU MLPs; no position embedding."""
    hidden = _hidden_size(fields)
    routed = fields.data.get("n_routed_experts") or 0
    moe = None
    if routed:
        shared = fields.integer("n_shared_experts", 0)
        moe = MoESpec(
            num_routed_experts=fields.integer("n_routed_experts", minimum=1),
            top_k=fields.integer("num_experts_per_tok", minimum=1),
            expert_ffn_hidden_size=_dimension(fields, "moe_intermediate_size", "ffn_hidden_size"),
            num_shared_experts=shared,
            shared_expert_ffn_hidden_size=_dimension(
                fields, "moe_shared_expert_intermediate_size", "ffn_hidden_size", 0
            )
            if shared
            else 0,
            latent_size=_optional(fields, "moe_latent_size"),
        )
    return TransformerSpec(
        name=normalize_name(name),
        display_name=name,
        num_layers=_dimension(fields, "num_hidden_layers", "num_layers"),
        block_pattern=fields.string("hybrid_override_pattern"),
        hidden_size=hidden,
        ffn_hidden_size=_dimension(fields, "intermediate_size", "ffn_hidden_size"),
        vocab_size=_dimension(fields, "vocab_size", "vocab_size"),
        attention=_hybrid_attention(fields, hidden, out_bias=fields.boolean("attention_bias", False)),
        mlp="relu2",
        moe=moe,
        mamba=MambaSpec(
            num_heads=fields.integer("mamba_num_heads", minimum=1),
            head_dim=fields.integer("mamba_head_dim", minimum=1),
            state_size=fields.integer("ssm_state_size", minimum=1),
            num_groups=fields.integer("n_groups", 1, minimum=1),
            conv_kernel=fields.integer("conv_kernel", 4, minimum=1),
            chunk_size=fields.integer("chunk_size", 128, minimum=1),
        ),
        tied_embeddings=fields.boolean("tie_word_embeddings", False),
        position_embedding="none",
        max_seq_len=_dimension(fields, "max_position_embeddings", "max_seq_len"),
        mlp_bias=fields.boolean("mlp_bias", False),
        num_mtp_modules=_mtp_modules(fields, "num_nextn_predict_layers"),
        source=f"Hugging Face config.json ({fields.path})",
    )


def _gated_delta_net_hybrid(fields: Fields, model_type: str, name: str) -> TransformerSpec:
    """Qwen3-Next or a Qwen3.5 text model (see the module docstring): each layer is two blocks,
    a mixer (``G`` Gated DeltaNet or ``*`` gated attention) and an FFN (``E`` or ``-``)."""
    hidden = _hidden_size(fields)
    num_layers = _dimension(fields, "num_hidden_layers", "num_layers", blocks_per_layer=2)
    experts = fields.integer("num_experts", 0)
    moe = None
    if experts:
        shared = _dimension(fields, "shared_expert_intermediate_size", "ffn_hidden_size", 0)
        moe = MoESpec(
            num_routed_experts=experts,
            top_k=fields.integer("num_experts_per_tok", minimum=1),
            expert_ffn_hidden_size=_dimension(fields, "moe_intermediate_size", "ffn_hidden_size"),
            num_shared_experts=1 if shared else 0,
            shared_expert_ffn_hidden_size=shared,
            shared_expert_gate=bool(shared),
        )
    mixers, ffns = _gdn_mixers(fields, num_layers), _gdn_ffns(fields, num_layers, experts)
    pattern = "".join(mixer + ffn for mixer, ffn in zip(mixers, ffns, strict=True))
    if moe is not None and "E" not in pattern:
        moe = None
    dense = _dimension(fields, "intermediate_size", "ffn_hidden_size", 0)
    return TransformerSpec(
        name=normalize_name(name),
        display_name=name,
        num_layers=2 * num_layers,
        block_pattern=pattern,
        hidden_size=hidden,
        ffn_hidden_size=dense or (moe.expert_ffn_hidden_size if moe else 1),
        vocab_size=_dimension(fields, "vocab_size", "vocab_size"),
        attention=_hybrid_attention(fields, hidden, output_gate=True, qk_norm=True),
        moe=moe,
        gated_delta_net=GatedDeltaNetSpec(
            num_key_heads=fields.integer("linear_num_key_heads", minimum=1),
            num_value_heads=fields.integer("linear_num_value_heads", minimum=1),
            key_head_dim=fields.integer("linear_key_head_dim", minimum=1),
            value_head_dim=fields.integer("linear_value_head_dim", minimum=1),
            conv_kernel=fields.integer("linear_conv_kernel_dim", 4, minimum=1),
            state_dtype=fields.string("mamba_ssm_dtype", "bfloat16"),
        )
        if "linear_attention" in _gdn_layer_names(fields, num_layers)
        else None,
        tied_embeddings=fields.boolean("tie_word_embeddings", False),
        position_embedding="rope",
        max_seq_len=_dimension(fields, "max_position_embeddings", "max_seq_len"),
        original_max_seq_len=original_context(fields, model_type),
        num_mtp_modules=_mtp_modules(fields, "mtp_num_hidden_layers"),
        source=f"Hugging Face config.json ({fields.path})",
    )


def _hybrid_attention(
    fields: Fields, hidden: int, *, out_bias: bool = False, output_gate: bool = False, qk_norm: bool = False
) -> AttentionSpec:
    """A hybrid's GQA attention blocks (Nemotron-H, Qwen3-Next, Qwen3.5): ``num_attention_heads``,
    ``num_key_value_heads`` (default: as many), ``head_dim`` (default ``hidden / heads``),
    ``attention_bias`` on Q, K and V; Qwen3-Next's and Qwen3.5's also ``q_norm`` and ``k_norm``."""
    heads = fields.integer("num_attention_heads", minimum=1)
    num_kv_heads = fields.integer("num_key_value_heads", heads, minimum=1)
    return AttentionSpec(
        kind=grouped_attention_kind(heads, num_kv_heads),
        num_heads=heads,
        num_kv_heads=num_kv_heads,
        head_dim=_optional(fields, "head_dim") or _derived_head_dim(fields, hidden, heads),
        qkv_bias=fields.boolean("attention_bias", False),
        out_bias=out_bias,
        output_gate=output_gate,
        qk_norm=qk_norm,
    )


def _gdn_layer_names(fields: Fields, num_layers: int) -> tuple[str, ...]:
    """Each layer's ``layer_types`` name (``linear_attention`` or ``full_attention``): the config's
    own, or every ``full_attention_interval``-th layer full as transformers derives them."""
    if fields.data.get("layer_types") is not None:
        names = tuple(fields.strings("layer_types"))
        allowed = ("linear_attention", "full_attention")
        if len(names) != num_layers or any(name not in allowed for name in names):
            raise DataFileError(
                fields.path,
                f"layer_types must name {num_layers} layers, each linear_attention or full_attention",
                field="layer_types",
                value=len(names),
                fix="copy layer_types from the published config.json",
            )
        return names
    interval = fields.integer("full_attention_interval", 4, minimum=1)
    return tuple(
        "full_attention" if (index + 1) % interval == 0 else "linear_attention" for index in range(num_layers)
    )


def _gdn_mixers(fields: Fields, num_layers: int) -> list[str]:
    return ["G" if name == "linear_attention" else "*" for name in _gdn_layer_names(fields, num_layers)]


def _gdn_ffns(fields: Fields, num_layers: int, experts: int) -> list[str]:
    """``E`` for the MoE layers (transformers' Qwen3-Next rule), ``-`` for the dense ones."""
    step = fields.integer("decoder_sparse_step", 1, minimum=1)
    dense = fields.data.get("mlp_only_layers") or []
    if not isinstance(dense, list) or any(type(index) is not int for index in dense):
        raise DataFileError(
            fields.path,
            "mlp_only_layers must be a list of layer indices",
            field="mlp_only_layers",
            value=str(dense)[:40],
            fix="copy mlp_only_layers from the published config.json ([] when every layer is MoE)",
        )
    moe = [bool(experts) and index not in dense and (index + 1) % step == 0 for index in range(num_layers)]
    return ["E" if routed else "-" for routed in moe]


def _hidden_size(fields: Fields) -> int:
    """``hidden_size`` (the head size and every width derive from it), bounded as
    :func:`_dimension` bounds it."""
    return _dimension(fields, "hidden_size", "hidden_size")


def _dimension(
    fields: Fields, key: str, bound: str, default: int | None = None, *, blocks_per_layer: int = 1
) -> int:
    """Config key ``key``: a whole number from 1 (0 where ``default`` is 0) up to the bound
    :data:`~lightspeed.workload.spec.MAX_DIMENSION` sets on the spec field ``bound`` it becomes
    (divided by ``blocks_per_layer`` for a hybrid's layers of two blocks), refused naming ``key``
    rather than the spec field (``intermediate_size``, not ``ffn_hidden_size``)."""
    value = fields.integer(key, default, minimum=0 if default == 0 else 1)
    limit = MAX_DIMENSION[bound] // blocks_per_layer
    if value > limit:
        per_block = f" ({blocks_per_layer} blocks each)" if blocks_per_layer > 1 else ""
        raise DataFileError(
            fields.path,
            f"{key} {value:,} is above {limit:,}{per_block}, far past any model built ({DIMENSION_REASON})",
            field=f"{fields.prefix}{key}",
            value=value,
            fix=f"copy {key} from the published config.json",
        )
    return value


def _derived_head_dim(fields: Fields, hidden: int, num_heads: int) -> int:
    """``hidden_size / num_attention_heads``, the head size transformers derives without ``head_dim``;
    refused, naming the fields, where it is not whole or is past any model's."""
    if hidden % num_heads:
        raise DataFileError(
            fields.path,
            f"hidden_size {hidden:,} is not a multiple of num_attention_heads {num_heads:,}, so the head "
            "size cannot be derived",
            field=f"{fields.prefix}num_attention_heads",
            value=num_heads,
            fix="add head_dim (the published config.json's) or correct num_attention_heads",
        )
    head_dim = hidden // num_heads
    if head_dim > MAX_HEADS_OR_HEAD_DIM:
        raise DataFileError(
            fields.path,
            f"hidden_size {hidden:,} / num_attention_heads {num_heads:,} gives a head size of {head_dim:,}, "
            f"above {MAX_HEADS_OR_HEAD_DIM:,} (models use up to 256)",
            field=f"{fields.prefix}hidden_size",
            value=hidden,
            fix="add head_dim (the published config.json's) or correct hidden_size and num_attention_heads",
        )
    return head_dim


def _mtp_modules(fields: Fields, key: str) -> int:
    """Config key ``key``: how many multi-token-prediction modules (0 when absent or ``null``), at
    most :data:`~lightspeed.limits.MAX_MTP_MODULES` (the bound ``--mtp-modules`` has), refused
    naming ``key`` rather than the spec's ``num_mtp_modules``."""
    value = fields.integer(key, 0)
    if value > MAX_MTP_MODULES:
        raise DataFileError(
            fields.path,
            f"{key} {value:,} is above {MAX_MTP_MODULES}, past any model's multi-token-prediction "
            "modules (DeepSeek-V3 has 1)",
            field=f"{fields.prefix}{key}",
            value=value,
            fix=f"copy {key} from the published config.json",
        )
    return value


def _optional(fields: Fields, key: str) -> int | None:
    """An integer field that may be absent or ``null``."""
    return None if fields.data.get(key) is None else fields.integer(key, minimum=1)


def _attention(fields: Fields, model_type: str, hidden: int, num_layers: int) -> AttentionSpec:
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
    head_dim = _optional(fields, "head_dim") or _derived_head_dim(fields, hidden, num_heads)
    kind = grouped_attention_kind(num_heads, num_kv_heads)
    bias = model_type in ("llama", "llama4_text", "gpt_oss", "nemotron") and fields.boolean(
        "attention_bias", False
    )
    return AttentionSpec(
        kind=kind,
        num_heads=num_heads,
        num_kv_heads=num_kv_heads,
        head_dim=head_dim,
        qkv_bias=model_type == "qwen2" or bias,
        out_bias=bias,
        qk_norm=model_type in _QK_NORM_TYPES,
        **_local_attention(fields, model_type, num_layers),
    )


def _local_attention(fields: Fields, model_type: str, num_layers: int) -> dict[str, Any]:
    """``AttentionSpec`` keywords for a config's local attention (see the module docstring)."""
    kinds = _hf_layer_types(fields, num_layers) or _default_layer_types(fields, model_type, num_layers)
    if kinds is None or set(kinds) == {"full"}:
        return {}
    local = next(kind for kind in kinds if kind != "full")
    key = "attention_chunk_size" if local == "chunked" else "sliding_window"
    span = _optional(fields, key) or (_WINDOW_DEFAULTS.get(model_type) if local == "sliding" else None)
    if span is None or any(kind not in ("full", local) for kind in kinds):
        raise DataFileError(
            fields.path,
            f"layer kinds {', '.join(sorted(set(kinds)))} need one local kind and its {key}",
            field=key,
            value=fields.data.get(key),
            fix="describe the model in a TOML file (docs/workload.md) with its layer_types",
        )
    keywords: dict[str, Any] = {key: span}
    interval = _interval(kinds, local)
    if interval is not None:
        keywords["full_attention_interval"] = interval if interval > 0 else None
    else:
        keywords["layer_types"] = kinds
    return keywords


def _interval(kinds: tuple[str, ...], local: str) -> int | None:
    """N when every N-th layer is full and the others ``local`` (0: all local); else ``None``."""
    if "full" not in kinds:
        return 0
    interval = kinds.index("full") + 1
    periodic = tuple("full" if (index + 1) % interval == 0 else local for index in range(len(kinds)))
    return interval if periodic == kinds else None


def _hf_layer_types(fields: Fields, num_layers: int) -> tuple[str, ...] | None:
    """The config's own ``layer_types``, as lightspeed's kinds (``None`` when absent)."""
    if fields.data.get("layer_types") is None:
        return None
    names = fields.strings("layer_types")
    unknown = sorted(set(names) - set(_HF_LAYER_KINDS))
    if unknown or len(names) != num_layers:
        raise DataFileError(
            fields.path,
            f"layer_types must name {num_layers} layers, each one of {', '.join(_HF_LAYER_KINDS)}",
            field="layer_types",
            value=unknown[0] if unknown else len(names),
            fix="other attention kinds (linear, state-space) are not modelled; "
            "describe the model in a TOML file",
        )
    return tuple(_HF_LAYER_KINDS[name] for name in names)


def _default_layer_types(fields: Fields, model_type: str, num_layers: int) -> tuple[str, ...] | None:
    """Layer kinds transformers derives when the config has no ``layer_types``."""
    if model_type in ("mistral", "mixtral"):
        return ("sliding",) * num_layers if _optional(fields, "sliding_window") else None
    if model_type in _QWEN_TYPES:
        windowed = fields.boolean("use_sliding_window", False)
        if not windowed or _optional(fields, "sliding_window") is None:
            return None
        first = fields.integer("max_window_layers", 28)
        return tuple("sliding" if index >= first else "full" for index in range(num_layers))
    if model_type == "llama4_text":
        return _llama4_layer_types(fields, num_layers)
    pattern = {"gemma2": 2, "gpt_oss": 2}.get(model_type)
    if model_type == "gemma3_text":
        pattern = fields.integer("sliding_window_pattern", 6, minimum=1)
    if pattern is None:
        return None
    return tuple("full" if (index + 1) % pattern == 0 else "sliding" for index in range(num_layers))


def _llama4_layer_types(fields: Fields, num_layers: int) -> tuple[str, ...] | None:
    """Llama 4: the RoPE layers (``no_rope_layers`` 1) chunk their attention, the others are full."""
    if _optional(fields, "attention_chunk_size") is None:
        return None
    flags = fields.data.get("no_rope_layers") or []
    if not flags:
        interval = fields.integer("no_rope_layer_interval", 4, minimum=1)
        return tuple("full" if (index + 1) % interval == 0 else "chunked" for index in range(num_layers))
    if len(flags) != num_layers or any(flag not in (0, 1) for flag in flags):
        raise DataFileError(
            fields.path,
            f"no_rope_layers must hold {num_layers} flags of 0 or 1",
            field="no_rope_layers",
            value=flags,
            fix="use the published config's list, or leave it empty for the default interval",
        )
    return tuple("chunked" if flag else "full" for flag in flags)


def _qwen3_moe(fields: Fields) -> MoESpec:
    """Qwen3-MoE: transformers' Qwen3MoeDecoderLayer makes layer ``i`` MoE when
    ``(i + 1) % decoder_sparse_step == 0`` (and ``i`` is not in ``mlp_only_layers``), the others
    dense MLPs of ``intermediate_size``: the step is the spec's ``layer_frequency`` (as Llama 4's
    ``interleave_moe_layer_step``). A list of dense layers is not modelled."""
    step = fields.integer("decoder_sparse_step", 1, minimum=1)
    if fields.data.get("mlp_only_layers"):
        raise DataFileError(
            fields.path,
            "only MoE on every decoder_sparse_step-th layer is modelled, not a list of dense layers",
            field="mlp_only_layers",
            value=fields.data.get("mlp_only_layers"),
            fix="leave mlp_only_layers empty (decoder_sparse_step places the MoE layers), or describe the "
            "model in a TOML file",
        )
    return MoESpec(
        num_routed_experts=fields.integer("num_experts", minimum=1),
        top_k=fields.integer("num_experts_per_tok", minimum=1),
        expert_ffn_hidden_size=_dimension(fields, "moe_intermediate_size", "ffn_hidden_size"),
        layer_frequency=step,
    )


def _llama4_moe(fields: Fields) -> MoESpec:
    expert = _dimension(fields, "intermediate_size", "ffn_hidden_size")
    return MoESpec(
        num_routed_experts=fields.integer("num_local_experts", minimum=1),
        top_k=fields.integer("num_experts_per_tok", minimum=1),
        expert_ffn_hidden_size=expert,
        num_shared_experts=1,
        shared_expert_ffn_hidden_size=expert,
        layer_frequency=fields.integer("interleave_moe_layer_step", 1, minimum=1),
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
        index_topk=_optional(fields, "index_topk"),
        index_n_heads=_optional(fields, "index_n_heads"),
        index_head_dim=_optional(fields, "index_head_dim"),
    )


def _moe(fields: Fields, model_type: str) -> MoESpec | None:
    if model_type in ("mixtral", "gpt_oss"):
        top_key = "num_experts_per_tok" if fields.has("num_experts_per_tok") else "experts_per_token"
        return MoESpec(
            num_routed_experts=fields.integer("num_local_experts", minimum=1),
            top_k=fields.integer(top_key, minimum=1),
            expert_ffn_hidden_size=_dimension(fields, "intermediate_size", "ffn_hidden_size"),
            router_bias=model_type == "gpt_oss",
        )
    if model_type == "qwen3_moe":
        return _qwen3_moe(fields)
    if model_type == "llama4_text":
        return _llama4_moe(fields)
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
    expert = _dimension(fields, "moe_intermediate_size", "ffn_hidden_size")
    num_shared = fields.integer("n_shared_experts", 0)
    return MoESpec(
        num_routed_experts=fields.integer("n_routed_experts", minimum=1),
        top_k=fields.integer("num_experts_per_tok", minimum=1),
        expert_ffn_hidden_size=expert,
        num_shared_experts=num_shared,
        shared_expert_ffn_hidden_size=expert if num_shared else 0,
        num_dense_layers=fields.integer("first_k_dense_replace", 0),
        router_bias=fields.string("topk_method", "greedy") == "noaux_tc",
        num_expert_groups=_optional(fields, "n_group"),
        top_k_groups=_optional(fields, "topk_group"),
    )
