"""The weight format of a Hugging Face ``config.json``: what its ``quantization_config`` names.

A checkpoint published in FP8, MXFP4, NVFP4 or a 4- or 8-bit integer format says so in
``quantization_config``: ``quant_method`` (``fp8``, ``fbgemm_fp8``, ``mxfp4``), ModelOpt's
``quant_algo``, GPTQ's and AWQ's ``bits``, or compressed-tensors' first config group.
:func:`release_format` reads it into one of the engine's formats (bf16 without a block, or with
one it does not understand, said so); :func:`~lightspeed.workload.hf_config.spec_from_hf_config`
stores it as the spec's ``release_format``.

Quantizers rarely convert every linear layer: the block lists those it leaves in 16-bit
(transformers' ``modules_to_not_convert``, compressed-tensors' ``ignore``, vLLM's
``ignored_layers``, ModelOpt's ``exclude_modules``). Embeddings, the LM head, norms and routers
stay 16-bit in every checkpoint the engine models; :func:`kept_attention_format` reads whether the
attention projections stay too (gpt-oss: ``model.layers.*.self_attn``), which the spec keeps as
its ``release_attention_format`` so that an import gives the published checkpoint's bytes from
whatever folder it is read.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from fnmatch import translate
from typing import Any, Final

from lightspeed.workload.spec import TransformerSpec

# quantization_config.quant_method values that name one weight format
_QUANT_METHODS: Final = {"fp8": "fp8", "fbgemm_fp8": "fp8", "mxfp4": "mxfp4"}
# ModelOpt's quant_algo (NVIDIA TensorRT Model Optimizer checkpoints)
_MODELOPT_ALGOS: Final = {"FP8": "fp8", "FP8_BLOCK_SCALES": "fp8", "NVFP4": "nvfp4", "W4A16_AWQ": "int4"}
# compressed-tensors weights: (num_bits, type) -> format
_COMPRESSED_TENSORS: Final = {
    (8, "float"): "fp8",
    (8, "int"): "int8",
    (4, "int"): "int4",
    (4, "float"): "nvfp4",
}


def release_format(data: dict[str, Any]) -> tuple[str, str]:
    """(weight format, what says so) of a ``config.json``'s ``quantization_config``: bf16 without
    one; the format it names (fp8, mxfp4, ModelOpt's FP8/NVFP4, GPTQ/AWQ and compressed-tensors
    bit widths); bf16 with a note saying the block was not understood otherwise.

    >>> release_format({"quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 128]}})
    ('fp8', "config.json quantization_config: quant_method 'fp8'")
    """
    config = data.get("quantization_config")
    if config is None:
        return "bf16", ""
    if not isinstance(config, dict):
        return (
            "bf16",
            "config.json quantization_config is not an object lightspeed reads; "
            "taken as bf16 (pass --precision)",
        )
    method = str(config.get("quant_method", "")).lower()
    found = _QUANT_METHODS.get(method)
    if method == "modelopt":
        found = _MODELOPT_ALGOS.get(str(config.get("quant_algo", "")).upper())
    elif method in ("gptq", "awq"):
        bits = config.get("bits")
        found = {4: "int4", 8: "int8"}.get(bits) if isinstance(bits, int) else None
    elif method == "compressed-tensors":
        found = _compressed_tensors_format(config)
    if found is None:
        return "bf16", (
            f"config.json quantization_config: quant_method {method!r} is not a format lightspeed reads; "
            "taken as bf16 (pass --precision)"
        )
    return found, f"config.json quantization_config: quant_method {method!r}"


# quantization_config keys listing the modules a checkpoint leaves unconverted (16-bit): transformers'
# (mxfp4, fp8, bitsandbytes, AWQ), compressed-tensors', vLLM's fp8 and ModelOpt's
KEPT_MODULE_KEYS: Final = ("modules_to_not_convert", "ignore", "ignored_layers", "exclude_modules")
# where the decoder layers sit in a checkpoint's module names: causal LMs and multimodal wrappers
# (Gemma 3, Llama 4, Qwen3.5); each layer's attention module is its self_attn (Nemotron-H: mixer)
_LAYER_ROOTS: Final = ("model.layers", "model.language_model.layers", "language_model.model.layers")
# the attention projections of a GQA/MHA layer and of an MLA layer (q_a/q_b with a query LoRA)
_GQA_PROJECTIONS: Final = ("q_proj", "k_proj", "v_proj", "o_proj")
_MLA_PROJECTIONS: Final = ("kv_a_proj_with_mqa", "kv_b_proj", "o_proj")


def kept_attention_format(data: dict[str, Any], spec: TransformerSpec) -> tuple[str | None, str]:
    """(format, what says so) of the attention projections of a quantized ``config.json`` that
    leaves every attention layer's projections unconverted (its 16-bit ``torch_dtype``: bf16, or
    fp16 for ``float16``); ``(None, note)`` where they are converted like the other linear layers
    (the note says so where only some are left out); ``(None, "")`` without a readable block.

    >>> from lightspeed.workload.registry import load_models
    >>> block = {"quant_method": "mxfp4", "modules_to_not_convert": ["model.layers.*.self_attn"]}
    >>> kept_attention_format({"quantization_config": block}, load_models().get("gpt-oss-20b"))
    ('bf16', 'modules_to_not_convert keeps every attention projection 16-bit')
    """
    config = data.get("quantization_config")
    if not isinstance(config, dict) or release_format(data)[0] == "bf16":
        return None, ""
    patterns, keys = _kept_patterns(config)
    if not patterns:
        return None, ""
    kept_by = _matcher(patterns)
    names = _attention_names(spec)
    kept = sum(any(kept_by(name) for name in variants) for variants in names)
    if kept == 0:
        return None, ""
    if kept < len(names):
        return None, (
            f"{' / '.join(keys)} keeps {kept:,} of {len(names):,} attention projections 16-bit; "
            "taken as the other linear layers' format (--attention-weights sets them)"
        )
    dtype = data.get("torch_dtype", data.get("dtype"))
    return (
        "fp16" if dtype == "float16" else "bf16",
        f"{' / '.join(keys)} keeps every attention projection 16-bit",
    )


def _kept_patterns(config: dict[str, Any]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The module-name patterns a quantization block leaves unconverted, and the keys they came from."""
    patterns: list[str] = []
    keys: list[str] = []
    for key in KEPT_MODULE_KEYS:
        listed = config.get(key)
        if isinstance(listed, list) and any(isinstance(item, str) for item in listed):
            patterns.extend(item for item in listed if isinstance(item, str))
            keys.append(key)
    return tuple(patterns), tuple(keys)


def _attention_names(spec: TransformerSpec) -> list[tuple[str, ...]]:
    """One entry per attention projection of every attention layer: the module names a checkpoint
    may give it (under each of :data:`_LAYER_ROOTS`, or Nemotron-H's ``backbone.layers.N.mixer``)."""
    projections: tuple[str, ...] = _GQA_PROJECTIONS
    if spec.attention.kind == "mla":
        query = ("q_a_proj", "q_b_proj") if spec.attention.q_lora_rank else ("q_proj",)
        projections = _MLA_PROJECTIONS + query
    return [
        tuple(_module_names(layer, projection, spec.mamba is not None))
        for layer in _attention_layers(spec)
        for projection in projections
    ]


def _module_names(layer: int, projection: str, backbone: bool) -> Iterator[str]:
    if backbone:  # Nemotron-H: every block is backbone.layers.N.mixer
        yield f"backbone.layers.{layer}.mixer.{projection}"
        return
    for root in _LAYER_ROOTS:
        yield f"{root}.{layer}.self_attn.{projection}"


def _attention_layers(spec: TransformerSpec) -> Iterable[int]:
    """The indices checkpoints give the attention layers: every layer; a hybrid's ``*`` blocks, counted
    as Nemotron-H counts its blocks, or as Qwen3-Next its layers of a mixer and an FFN block."""
    if not spec.block_pattern:
        return range(spec.num_layers)
    mixers = spec.block_pattern if spec.mamba is not None else spec.block_pattern[0::2]
    return [index for index, symbol in enumerate(mixers) if symbol == "*"]


def _matcher(patterns: Iterable[str]) -> Callable[[str], bool]:
    """Whether ``patterns`` leave a module name unconverted: ``re:``-prefixed patterns as
    compressed-tensors matches them (a regular expression from the name's start; one that does
    not compile matches nothing), others as globs naming the module, one of its parents, or their
    trailing components (``self_attn``, ``lm_head``, ``model.layers.*.self_attn``, ModelOpt's
    ``model.layers.0.self_attn*``), as transformers' ``modules_to_not_convert`` does."""
    expressions = [_regex(pattern[3:]) for pattern in patterns if pattern.startswith("re:")]
    globs = [pattern for pattern in patterns if not pattern.startswith("re:")]
    glob = re.compile("|".join(translate(form) for pattern in globs for form in (pattern, f"*.{pattern}")))
    regexes = [expression for expression in expressions if expression is not None]

    def kept(name: str) -> bool:
        if any(expression.match(name) for expression in regexes):
            return True
        parts = name.split(".")
        return bool(globs) and any(glob.match(".".join(parts[: index + 1])) for index in range(len(parts)))

    return kept


def _regex(text: str) -> re.Pattern[str] | None:
    try:
        return re.compile(text)
    except re.error:
        return None


def _compressed_tensors_format(config: dict[str, Any]) -> str | None:
    """The weight format of the first config group of a compressed-tensors block."""
    groups = config.get("config_groups")
    if not isinstance(groups, dict) or not groups:
        return None
    weights = next(iter(groups.values()))
    weights = weights.get("weights") if isinstance(weights, dict) else None
    if not isinstance(weights, dict):
        return None
    bits = weights.get("num_bits")
    return _COMPRESSED_TENSORS.get((bits, str(weights.get("type", "")))) if isinstance(bits, int) else None


__all__ = ["KEPT_MODULE_KEYS", "kept_attention_format", "release_format"]
