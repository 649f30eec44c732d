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
stay 16-bit in every checkpoint the engine models; :func:`checkpoint_formats` reads whether the
attention projections stay too (gpt-oss: ``model.layers.*.self_attn``), kept as the spec's
``release_attention_format``, and whether every linear layer outside attention does (MLPs,
experts, recurrent mixers: ``["mlp"]``), which makes the 16-bit format the release format beside
quantized attention, so that an import gives the published checkpoint's bytes from whatever
folder it is read. A block that leaves only some of either out is noted, naming its entries.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from fnmatch import translate
from typing import Any, Final

from lightspeed.units import element_bits
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
    found, unread = _method_format(method, config)
    if found is None:
        return "bf16", f"config.json quantization_config: {unread}; taken as bf16 (pass --precision)"
    return found, f"config.json quantization_config: quant_method {method!r}"


# GPTQ's and AWQ's bits -> format
_INTEGER_BITS: Final = {4: "int4", 8: "int8"}


def _method_format(method: str, config: dict[str, Any]) -> tuple[str | None, str]:
    """(format, ``""``) of a quantization block's method, or ``(None, what is not read)``: a method
    lightspeed does not know, or a setting of one it knows that it does not model (GPTQ at 3 bits)."""
    if method == "modelopt":
        algo = str(config.get("quant_algo", "")).upper()
        found = _MODELOPT_ALGOS.get(algo)
        return found, "" if found else (
            f"ModelOpt quant_algo {algo!r:.40} is not modelled "
            f"(lightspeed reads {', '.join(_MODELOPT_ALGOS)})"
        )
    if method in ("gptq", "awq"):
        bits = config.get("bits")
        found = _INTEGER_BITS.get(bits) if isinstance(bits, int) and not isinstance(bits, bool) else None
        widths = " and ".join(str(width) for width in _INTEGER_BITS)
        return found, "" if found else (
            f"quant_method {method!r} with bits {bits!r:.40} is not modelled "
            f"(lightspeed models {method.upper()} at {widths} bits)"
        )
    if method == "compressed-tensors":
        found = _compressed_tensors_format(config)
        read = ", ".join(f"{bits}-bit {kind}" for bits, kind in _COMPRESSED_TENSORS)
        return found, "" if found else (
            f"quant_method 'compressed-tensors' weights are not a width and type lightspeed models "
            f"(it reads the first config group's num_bits and type: {read})"
        )
    found = _QUANT_METHODS.get(method)
    return found, "" if found else f"quant_method {method!r:.40} is not a format lightspeed reads"


# quantization_config keys listing the modules a checkpoint leaves unconverted (16-bit): transformers'
# (mxfp4, fp8, bitsandbytes, AWQ), compressed-tensors', vLLM's fp8 and ModelOpt's
KEPT_MODULE_KEYS: Final = ("modules_to_not_convert", "ignore", "ignored_layers", "exclude_modules")
# where the decoder layers sit in a checkpoint's module names: causal LMs and multimodal wrappers
# (Gemma 3, Llama 4, Qwen3.5); each layer's attention module is its self_attn (Nemotron-H: mixer)
_LAYER_ROOTS: Final = ("model.layers", "model.language_model.layers", "language_model.model.layers")
# the attention projections of a GQA/MHA layer and of an MLA layer (q_a/q_b with a query LoRA)
_GQA_PROJECTIONS: Final = ("q_proj", "k_proj", "v_proj", "o_proj")
_MLA_PROJECTIONS: Final = ("kv_a_proj_with_mqa", "kv_b_proj", "o_proj")
# the linear projections outside attention: an MLP's or an expert's (a gated MLP's gate first; Mixtral
# names its experts' w1, w3, w2), the shared experts' parents (DeepSeek, Qwen2-MoE/Qwen3-Next, Llama 4),
# a Gated DeltaNet mixer's (Qwen3-Next; Qwen3.5 splits in_proj_qkvz, all under linear_attn) and a Mamba-2's
_FFN_PROJECTIONS: Final = ("gate_proj", "up_proj", "down_proj")
_MIXTRAL: Final = {"gate_proj": "w1", "up_proj": "w3", "down_proj": "w2"}
_SHARED_EXPERT_PARENTS: Final = ("mlp.shared_experts", "mlp.shared_expert", "feed_forward.shared_expert")
_GDN_PROJECTIONS: Final = ("in_proj_qkvz", "in_proj_ba", "out_proj")
_MAMBA_PROJECTIONS: Final = ("in_proj", "out_proj")


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
    kept = _kept_modules(data, spec)
    if kept is None or kept.attention.none:
        return None, ""
    if not kept.attention.every:
        return None, kept.attention_note()
    return kept.sixteen_bit, f"{kept.keys} keeps every attention projection 16-bit"


def checkpoint_formats(data: dict[str, Any], spec: TransformerSpec) -> tuple[str, str | None, str]:
    """(release format, release attention format, what says so) of a ``config.json``: the format
    :func:`release_format` reads, unless its block leaves linear layers 16-bit. Every linear layer
    outside attention (MLPs, experts, recurrent mixers) left 16-bit makes the 16-bit format the
    release format, the attention projections keeping the quantized one unless they are left too
    (``modules_to_not_convert: ["mlp"]``: bf16 with fp8 attention; ``["model.layers"]``: bf16);
    every attention projection left out keeps them 16-bit beside the quantized rest (gpt-oss). A
    block that leaves only some of either out is taken at the format of the rest, with a note
    naming how many and which entries (the engine has one format per kind of layer).

    >>> from lightspeed.workload.registry import load_models
    >>> block = {"quant_method": "fp8", "modules_to_not_convert": ["mlp"]}
    >>> checkpoint_formats({"quantization_config": block}, load_models().get("llama-3-8b"))[:2]
    ('bf16', 'fp8')
    """
    found, said = release_format(data)
    kept = _kept_modules(data, spec)
    if kept is None or (kept.attention.none and kept.others.none):
        return found, None, said
    others = kept.sixteen_bit if kept.others.every else found
    attention = found if kept.attention.none else kept.sixteen_bit if kept.attention.every else others
    notes = [said, *kept.notes(found)]
    return others, (attention if attention != others else None), "; ".join(part for part in notes if part)


@dataclass(frozen=True)
class _Share:
    """How many of a kind of linear module a block leaves 16-bit, of how many."""

    kept: int
    total: int

    @property
    def none(self) -> bool:
        return self.kept == 0

    @property
    def every(self) -> bool:
        return self.total > 0 and self.kept == self.total


@dataclass(frozen=True)
class _KeptModules:
    """What a quantized block leaves unconverted: the attention projections and the other linear
    projections (MLPs, experts, recurrent mixers) it keeps, the keys and entries saying so."""

    keys: str
    attention: _Share
    others: _Share
    other_entries: tuple[str, ...]
    other_label: str
    sixteen_bit: str

    def attention_note(self) -> str:
        return (
            f"{self.keys} keeps {self.attention.kept:,} of {self.attention.total:,} attention projections "
            "16-bit; taken as the other linear layers' format (--attention-weights sets them)"
        )

    def notes(self, found: str) -> list[str]:
        """What :func:`checkpoint_formats` says about the kept modules, weights in ``found``."""
        if self.attention.every and self.others.every:
            return [f"{self.keys} keeps every linear layer 16-bit"]
        notes = []
        if self.others.every:
            attention = f", the attention projections {found}" if self.attention.none else ""
            notes.append(
                f"{self.keys} keeps every linear layer outside attention ({self.other_label}) "
                f"16-bit{attention}"
            )
        elif not self.others.none:
            notes.append(self._partial_others_note(found))
        if self.attention.every:
            notes.append(f"{self.keys} keeps every attention projection 16-bit")
        elif not self.attention.none:
            notes.append(self.attention_note())
        return notes

    def _partial_others_note(self, found: str) -> str:
        entries = ", ".join(self.other_entries)
        mix = (
            f" (--effective-bits sets a per-layer mix of {found} and 16-bit)"
            if round(element_bits(found)) == 8
            else ""
        )
        return (
            f"{self.keys} entries {entries} keep {self.others.kept:,} of {self.others.total:,} linear "
            f"projections outside attention ({self.other_label}) 16-bit; not modelled: taken as {found}{mix}"
        )


# how many of the entries that keep some linear layers outside attention a note names
_ENTRIES_SHOWN: Final = 3


def _kept_modules(data: dict[str, Any], spec: TransformerSpec) -> _KeptModules | None:
    """The modules a readable, quantized block leaves 16-bit; ``None`` without such a block or list."""
    config = data.get("quantization_config")
    if not isinstance(config, dict) or release_format(data)[0] == "bf16":
        return None
    patterns, keys = _kept_patterns(config)
    if not patterns:
        return None
    kept_by = _matcher(patterns)
    others = _other_names(spec)
    share = _share(kept_by, others)
    entries = () if share.none or share.every else _entries_keeping(patterns, others)
    dtype = data.get("torch_dtype", data.get("dtype"))
    return _KeptModules(
        keys=" / ".join(keys),
        attention=_share(kept_by, _attention_names(spec)),
        others=share,
        other_entries=entries,
        other_label=_other_label(spec),
        sixteen_bit="fp16" if dtype == "float16" else "bf16",
    )


def _other_label(spec: TransformerSpec) -> str:
    """What a model's linear layers outside attention are: ``MLPs``, ``experts``, ``recurrent mixers``."""
    kinds = (
        ("MLPs", spec.num_mlp_layers > 0),
        ("experts", spec.moe is not None),
        ("recurrent mixers", spec.recurrent is not None),
    )
    return ", ".join(label for label, present in kinds if present)


def _share(kept_by: Callable[[str], bool], names: list[tuple[str, ...]]) -> _Share:
    return _Share(sum(any(map(kept_by, variants)) for variants in names), len(names))


def _entries_keeping(patterns: Iterable[str], names: list[tuple[str, ...]]) -> tuple[str, ...]:
    """The first :data:`_ENTRIES_SHOWN` entries of ``patterns`` that keep one of ``names``, and
    ``"..."`` after them where entries are left unread."""
    listed = list(dict.fromkeys(patterns))
    found: list[str] = []
    for index, pattern in enumerate(listed):
        kept_by = _matcher((pattern,))
        if any(kept_by(name) for variants in names for name in variants):
            found.append(repr(pattern))
            if len(found) == _ENTRIES_SHOWN and index + 1 < len(listed):
                return (*found, "...")
    return tuple(found)


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


def _other_names(spec: TransformerSpec) -> list[tuple[str, ...]]:
    """One entry per linear projection outside attention that the engine stores in the weights'
    format (a layer's MLP, its routed experts as one module per projection, its shared experts, a
    hybrid's recurrent mixer): the module names checkpoints give it (``mlp``, Llama 4's
    ``feed_forward``, Mixtral's ``block_sparse_moe``; Nemotron-H's ``backbone.layers.N.mixer``,
    Qwen3-Next's ``linear_attn``). Routers stay 16-bit in every checkpoint and are not listed."""
    if spec.mamba is not None:
        return [
            tuple(f"backbone.layers.{index}.mixer.{name}" for name in names)
            for index, symbol in enumerate(spec.block_pattern)
            for names in _backbone_modules(spec, symbol)
        ]
    if spec.block_pattern:  # Qwen3-Next: layer N is blocks 2N (mixer) and 2N + 1 (FFN)
        blocks = [(index // 2, symbol) for index, symbol in enumerate(spec.block_pattern)]
    else:
        blocks = [(index, "E" if spec.is_moe_layer(index) else "-") for index in range(spec.num_layers)]
    return [
        tuple(f"{root}.{layer}.{name}" for root in _LAYER_ROOTS for name in names)
        for layer, symbol in blocks
        for names in _layer_modules(spec, symbol)
    ]


def _layer_modules(spec: TransformerSpec, symbol: str) -> Iterator[tuple[str, ...]]:
    """The names (below the layer) of each linear projection outside attention of a block."""
    projections = _FFN_PROJECTIONS if spec.gated_mlp else _FFN_PROJECTIONS[1:]
    if symbol == "G":
        yield from ((f"linear_attn.{name}",) for name in _GDN_PROJECTIONS)
    elif symbol == "-":
        yield from ((f"mlp.{name}", f"feed_forward.{name}") for name in projections)
    elif symbol == "E":
        for name in projections:
            yield (
                f"mlp.experts.{name}",
                f"feed_forward.experts.{name}",
                f"block_sparse_moe.experts.{_MIXTRAL[name]}",
            )
        if spec.moe is not None and spec.moe.num_shared_experts:
            for name in projections:
                yield tuple(f"{parent}.{name}" for parent in _SHARED_EXPERT_PARENTS)


def _backbone_modules(spec: TransformerSpec, symbol: str) -> Iterator[tuple[str, ...]]:
    """Nemotron-H's names (below ``backbone.layers.N.mixer``) of a block's linear projections."""
    if symbol == "M":
        yield from ((name,) for name in _MAMBA_PROJECTIONS)
    elif symbol in "-E":
        prefixes: tuple[str, ...] = ("",) if symbol == "-" else ("experts.",)
        if symbol == "E" and spec.moe is not None and spec.moe.num_shared_experts:
            prefixes = ("experts.", "shared_experts.")
        yield from ((f"{prefix}{name}",) for prefix in prefixes for name in ("up_proj", "down_proj"))


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


__all__ = ["KEPT_MODULE_KEYS", "checkpoint_formats", "kept_attention_format", "release_format"]
