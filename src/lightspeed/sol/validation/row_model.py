"""A published row's model: the architecture its model cell names (a registry entry or a
family and size), else one built from the dimensions its cells state (heads, layers, hidden,
FFN, vocabulary), for training and inference rows alike (:func:`resolve_model`)."""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Final

from lightspeed.errors import UserInputError, closest_names
from lightspeed.sol.validation.published import (
    PublishedRow,
    first_number,
    integer_cell,
    is_missing,
    parenthesized_number,
)
from lightspeed.sol.validation.readings import RowError
from lightspeed.workload import AttentionSpec, ModelEntry, ModelRegistry, TransformerSpec, parameter_counts
from lightspeed.workload.spec import grouped_attention_kind


def _heads(text: str) -> tuple[int | None, int | None]:
    """(heads, KV heads) of a heads cell: ``64 (8 kv)``, or NeMo's and Megatron's ``64 (8 query
    groups)`` / ``32 (Query Groups: 4)`` (``num_query_groups``: the KV heads)."""
    heads = integer_cell(text)
    kv_match = re.search(
        r"\((\d+)\s*(?:kv|query[\s_-]+groups?)\b|\((?:kv(?:[\s_-]+heads)?|query[\s_-]+groups?)\s*[:=]\s*(\d+)",
        text,
        re.IGNORECASE,
    )
    return heads, (int(kv_match.group(1) or kv_match.group(2)) if kv_match else heads)


# a vocabulary named by its tokenizer: ``n/r (Llama 2 tokenizer)``, ``GPT-2 BPE tokenizer``
_TOKENIZER: Final = re.compile(r"([a-z][\w .-]*?)\s+(?:bpe\s+)?tokenizer", re.IGNORECASE)


def _tokenizer_vocab(registry: ModelRegistry, row: PublishedRow) -> int | None:
    """The vocabulary of the catalog model whose tokenizer the vocab cell names (``n/r (Llama 2
    tokenizer)``: Llama 2's 32,000), else ``None``."""
    named = _TOKENIZER.search(row.text("vocab"))
    if named is None:
        return None
    words = re.sub(r"^\W+", "", named.group(1)).strip()
    family = registry.find(words) or next(
        (entry for entry in registry.entries.values() if _family(entry.spec.name) == _family(words)), None
    )
    return family.spec.vocab_size if family is not None else None


def _family(name: str) -> str:
    """A model name without its size: ``llama-2-7b`` and ``Llama 2`` are ``llama2``."""
    return re.sub(r"[\s_-]+", "", re.sub(r"[\s_-]*\d+(?:\.\d+)?[bm]\b.*$", "", name.lower()))


def model_from_dims(
    row: PublishedRow, vocab_size: int | None = None, *, closest: str = ""
) -> TransformerSpec:
    """A GPT-style model (MHA, 4h GELU MLP, learned positions, LayerNorm, biases) from a
    row's dimensions, or a Llama-style one (SwiGLU, RoPE, RMSNorm) when the row has KV heads;
    with no heads, MHA of 128-wide heads, which :func:`resolve_model` confirms by the row's
    parameter count (:func:`_confirmed_mha`)."""
    layers = integer_cell(row.text("layers"))
    hidden = integer_cell(row.text("hidden"))
    heads, kv_heads = _heads(row.text("heads(kv)"))
    ffn_text = row.text("ffn")
    ffn = parenthesized_number(ffn_text) or first_number(ffn_text) if not is_missing(ffn_text) else None
    vocab_text = row.text("vocab")
    vocab = first_number(vocab_text) if not is_missing(vocab_text) else vocab_size
    missing = [
        name
        for name, value in (("layers", layers), ("hidden", hidden), ("heads(kv)", heads), ("vocab", vocab))
        if value is None
    ]
    if missing == ["heads(kv)"] and hidden is not None and hidden % _MHA_HEAD_DIM == 0:
        # an MHA model's weights and FLOPs do not depend on how its width is cut into heads:
        # taken so when the row's parameter count confirms the shape (_confirmed_mha)
        heads = kv_heads = hidden // _MHA_HEAD_DIM
        missing = []
    if missing or layers is None or hidden is None or heads is None or vocab is None:
        raise RowError(
            f"model {row.text('model')!r} is not in the catalog{closest} and the row lacks "
            + ", ".join(missing)
        )
    gqa = kv_heads is not None and kv_heads != heads
    # a Llama-style block (SwiGLU, RoPE, RMSNorm) where the heads are grouped or the FFN cell says
    # SwiGLU (Llama 2 7B has as many KV heads as heads)
    llama = gqa or bool(_LLAMA_MLP.search(ffn_text.lower()))
    seq = integer_cell(row.text("seq"), 2048) or 2048
    ffn_size = int(ffn) if ffn and ffn > 16 else 4 * hidden
    return TransformerSpec(
        name=row.text("model").lower().replace(" ", "-"),
        display_name=row.text("model"),
        num_layers=layers,
        hidden_size=hidden,
        ffn_hidden_size=ffn_size,
        vocab_size=int(vocab),
        attention=AttentionSpec(
            grouped_attention_kind(heads, kv_heads or heads),
            heads,
            kv_heads or heads,
            hidden // heads,
            qkv_bias=not llama,
        ),
        mlp="swiglu" if llama else "gelu",
        position_embedding="rope" if llama else "learned",
        max_seq_len=seq,
        norm="rmsnorm" if llama else "layernorm",
        mlp_bias=not llama,
    )


# the head width an MHA model is cut into when a row gives its width but not its heads (GPT-3's,
# Llama's, Megatron's GPT configurations: 128)
_MHA_HEAD_DIM: Final = 128
# how near the row's parameter count the MHA shape built from its dimensions must come
_PARAMS_AGREE: Final = 0.10


def _confirmed_mha(row: PublishedRow, spec: TransformerSpec) -> str:
    """The note on a model built without its heads (:func:`model_from_dims`), refused unless the
    row's parameter count (``params_B``) is the MHA shape's within 10%: grouped KV heads or a gated
    MLP would count fewer or more."""
    stated_b = first_number(row.text("params_B")) if not is_missing(row.text("params_B")) else None
    built_b = parameter_counts(spec).total_params / 1e9
    if stated_b is None or not math.isfinite(stated_b) or stated_b <= 0:
        raise RowError(
            f"model {row.text('model')!r} is not in the catalog and the row lacks heads(kv) and a "
            "parameter count (params_B) that would confirm multi-head attention"
        )
    if abs(built_b / stated_b - 1) > _PARAMS_AGREE:
        raise RowError(
            f"model {row.text('model')!r} is not in the catalog and the row lacks heads(kv): with "
            f"multi-head attention its dimensions make {built_b:.3g}B parameters, not the row's "
            f"{stated_b:g}B; fill the heads(kv) cell"
        )
    return (
        f"; heads not given: {spec.attention.num_heads} heads of {_MHA_HEAD_DIM} (an MHA model's weights "
        f"and FLOPs do not depend on its head count; its {built_b:.3g}B parameters match the row's "
        f"{stated_b:g}B)"
    )


_LLAMA_MLP: Final = re.compile(r"swiglu|silu|swish")


_NO_MTP: Final = re.compile(r"\b(?:w/o|without|no)\s+(?:the\s+)?mtp\b|\bmtp\s+disabled\b", re.IGNORECASE)


def _mtp_not_trained(row: PublishedRow) -> bool:
    """Whether the model cell says the run trains no MTP module (``without MTP``), or the source
    does (torchtitan's table titled ``PP1, MTP disabled``) and the model cell names no MTP."""
    model = row.text("model")
    if _NO_MTP.search(model):
        return True
    return not re.search(r"\bmtp", model, re.IGNORECASE) and bool(_NO_MTP.search(row.text("source")))


def architecture_named(registry: ModelRegistry, cell: str) -> tuple[str, ModelEntry | None]:
    """(name, registry entry) of the model a cell names: the text before any parenthesis, else a
    catalog model a parenthesis names as the architecture (``LlamaT 7B (Llama 2 7B
    architecture)``, a run's own name for a known model)."""
    name = re.split(r"[(]", cell)[0].strip()
    found = registry.find(name) if name else None
    if found is None and name:  # a framework's name before the model's: ``Maxtext Llama3 70b``
        bare = _FRAMEWORK_PREFIX.sub("", name).strip()
        found = registry.find(bare) if bare and bare != name else None
        name = bare if found is not None else name
    if found is None and name:  # a run's label after the size: ``DeepSeek V3 671B DistMoE, MTP1``
        sized = _LABEL_AFTER_SIZE.match(name.split(",")[0].strip())
        found = registry.find(sized.group(1)) if sized else None
        name = sized.group(1) if sized and found is not None else name
    if found is not None:
        return name, found
    for inside in re.findall(r"\(([^)]*)\)", cell):
        candidate = _ARCHITECTURE_WORDS.sub(" ", inside).strip(" ,;:-")
        named = registry.find(candidate) if candidate else None
        if named is not None and _ARCHITECTURE_WORDS.search(inside):
            return candidate, named
    whole = registry.find(cell)  # a bare size and its architecture: ``70B (Meta Llama3 architecture)``
    if whole is not None and _ARCHITECTURE_WORDS.search(cell):
        return cell, whole
    return name, None


# a training framework's name written before the model's (dgxc-benchmarking's ``Maxtext Llama3
# 70b``, ``Paxml GPT175B``)
_FRAMEWORK_PREFIX: Final = re.compile(
    r"^(?:maxtext|paxml|pax|nemo|megatron(?:[\s-]lm)?|torchtitan|jax)[\s_-]+", re.IGNORECASE
)
# a name whose words after its parameter count hold no digit (an implementation's or a run's label,
# torchtitan's ``DeepSeek V3 671B DistMoE``): group 1 ends at the count, so the label is never read
# as a smaller model's name (``GPT3 5B`` keeps its ``5B``)
_LABEL_AFTER_SIZE: Final = re.compile(
    r"^(.*?\b(?:\d+x)?\d+(?:\.\d+)?[bmt])(?:[\s_-]+[^\d\s_-]+)+$", re.IGNORECASE
)
# words that say a parenthesis names a model's architecture, not a variant or a framework
_ARCHITECTURE_WORDS: Final = re.compile(
    r"\b(?:architecture|arch|config|shapes|same\s+as|like)\b", re.IGNORECASE
)


def resolve_model(registry: ModelRegistry, row: PublishedRow) -> tuple[TransformerSpec, str]:
    """The catalog model a row names (text before any parenthesis, or the architecture a
    parenthesis names), else one built from its dims."""
    name, found = architecture_named(registry, row.text("model"))
    if found is not None:
        note = f"model '{row.text('model')}' -> catalog model {found.spec.name}"
        if found.spec.num_mtp_modules and _mtp_not_trained(row):
            return dataclasses.replace(found.spec, num_mtp_modules=0), f"{note}, its MTP modules not trained"
        return found.spec, note
    unsupported = registry.unsupported_model(name) if name else None
    if unsupported is not None:  # never a plain transformer built from its dimensions
        raise RowError(unsupported.refusal(name))
    tokenizer_vocab = _tokenizer_vocab(registry, row)
    spec = model_from_dims(row, tokenizer_vocab, closest=_closest_models(registry, name or row.text("model")))
    vocab_note = f", the vocabulary of its named tokenizer ({tokenizer_vocab:,})" if tokenizer_vocab else ""
    heads_note = _confirmed_mha(row, spec) if is_missing(row.text("heads(kv)")) else ""
    return (
        spec,
        f"model '{row.text('model')}' built from the row's dimensions ({spec.mlp}, {spec.attention.kind})"
        + vocab_note
        + heads_note,
    )


def _closest_models(registry: ModelRegistry, text: str) -> str:
    """`` (closest: llama-3-70b, ...)``: the catalog models nearest a name it lacks (as an unknown
    name in a structured row is answered), ``''`` where none is near."""
    wanted = "-".join(text.lower().split())
    closest = closest_names(wanted, registry.names()) if wanted else []
    return f" (closest: {', '.join(closest)})" if closest else ""


def registry_name(registry: ModelRegistry, model: TransformerSpec) -> str | None:
    """``model``'s registry name when it is the registry's model, else ``None`` (built from dims)."""
    try:
        return model.name if registry.get(model.name) == model else None
    except UserInputError:
        return None
