"""Everything lightspeed knows about one model, in one record; and name-or-path lookup.

:func:`describe_model` gathers what ``lightspeed model show`` prints: the
architecture, parameter counts, FLOPs per token under every convention,
weight bytes per precision and KV-cache bytes per token.
:func:`resolve_model` accepts a registry name or a path to a Hugging Face
``config.json`` (or its folder) or a model TOML file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from lightspeed.files import exists
from lightspeed.records import Record
from lightspeed.units import bytes_per_element
from lightspeed.workload.attention import kv_bytes_per_token_past_span, kv_cache_bytes
from lightspeed.workload.counts import ParameterCounts, kv_cache_bytes_per_token, parameter_counts
from lightspeed.workload.flops import CONVENTIONS, FlopsPerToken, flops_per_token
from lightspeed.workload.hf_config import spec_from_hf_config
from lightspeed.workload.model_file import ModelEntry, PublishedCounts, Reference
from lightspeed.workload.registry import ModelRegistry, load_model_file
from lightspeed.workload.spec import TransformerSpec

# Storage formats ``model show`` lists: dense floats and the block-scaled FP4 formats.
WEIGHT_PRECISIONS: Final = ("fp32", "bf16", "fp8", "mxfp4", "nvfp4")
KV_CACHE_PRECISIONS: Final = ("bf16", "fp8")


@dataclass(frozen=True)
class ModelSummary(Record):
    """One model's architecture and costs (``lightspeed model show``).

    ``weight_bytes`` maps a storage precision to the bytes of all weights;
    ``kv_cache_bytes_per_token`` a cache precision to the bytes one token adds,
    ``kv_cache_bytes_per_sequence`` to what one sequence of ``seq_len`` tokens holds
    (local-attention layers keep only their window or chunk);
    ``recurrent_state_bytes_per_sequence`` what a hybrid's recurrent blocks (Mamba-2, Gated
    DeltaNet) keep per sequence besides,
    whatever its length (0 for a transformer).
    With local-attention layers (a sliding window, chunks) ``kv_cache_bytes_per_token`` holds only
    for a sequence's first ``kv_cache_local_span_tokens`` tokens; past them each token adds
    ``kv_cache_bytes_per_token_past_span`` (the layers that keep every token). Both are ``None`` and
    empty without local layers.
    ``active_params_as_published`` is the active count in the convention the publisher's active
    figure uses (``published.active_counts``; ``None`` without a published active figure).
    ``flops_per_token`` holds every convention at ``seq_len`` tokens.
    """

    name: str
    display_name: str
    aliases: tuple[str, ...]
    spec: TransformerSpec
    total_params: int
    active_params: int
    parameter_counts: ParameterCounts
    seq_len: int
    flops_per_token: tuple[FlopsPerToken, ...]
    weight_bytes: Mapping[str, float]
    kv_cache_bytes_per_token: Mapping[str, float]
    kv_cache_bytes_per_sequence: Mapping[str, float]
    published: PublishedCounts | None
    sources: Mapping[str, Reference]
    path: str
    recurrent_state_bytes_per_sequence: float = 0.0
    kv_cache_local_span_tokens: int | None = None
    kv_cache_bytes_per_token_past_span: Mapping[str, float] = field(default_factory=dict)
    active_params_as_published: int | None = None


def describe_model(entry: ModelEntry, *, seq_len: int | None = None) -> ModelSummary:
    """Summary of ``entry`` with FLOPs at ``seq_len`` (default: the length the model was pre-trained at).

    >>> from lightspeed.workload import load_models
    >>> summary = describe_model(load_models().entry("mixtral-8x7b"))
    >>> summary.total_params, summary.active_params
    (46702792704, 12879925248)
    """
    spec = entry.spec
    tokens = seq_len or spec.pretraining_seq_len
    counts = parameter_counts(spec)
    span = _local_span(spec)
    return ModelSummary(
        name=spec.name,
        display_name=spec.display_name,
        aliases=spec.aliases,
        spec=spec,
        total_params=counts.total_params,
        active_params=counts.active_params,
        parameter_counts=counts,
        seq_len=tokens,
        flops_per_token=tuple(flops_per_token(spec, seq_len=tokens, convention=name) for name in CONVENTIONS),
        weight_bytes={
            precision: counts.total_params * bytes_per_element(precision) for precision in WEIGHT_PRECISIONS
        },
        kv_cache_bytes_per_token={
            precision: kv_cache_bytes_per_token(spec, precision) for precision in KV_CACHE_PRECISIONS
        },
        kv_cache_bytes_per_sequence={
            precision: float(kv_cache_bytes(spec, precision, tokens)) for precision in KV_CACHE_PRECISIONS
        },
        published=entry.published,
        sources=entry.sources,
        path=entry.path,
        recurrent_state_bytes_per_sequence=_recurrent_state_bytes(spec),
        kv_cache_local_span_tokens=span,
        kv_cache_bytes_per_token_past_span={
            precision: kv_bytes_per_token_past_span(spec, precision) for precision in KV_CACHE_PRECISIONS
        }
        if span is not None
        else {},
        active_params_as_published=_active_as_published(counts, entry.published),
    )


def _local_span(spec: TransformerSpec) -> int | None:
    """Tokens a local (sliding or chunked) layer keeps at most; ``None`` without such layers (a
    sparse layer keeps every token)."""
    attention = spec.attention
    if spec.is_hybrid or attention.local_kind in ("full", "sparse"):
        return None
    if attention.layer_types and not set(attention.layer_types) & {"sliding", "chunked"}:
        return None
    return attention.local_span


def _active_as_published(counts: ParameterCounts, published: PublishedCounts | None) -> int | None:
    """The active parameters counted as ``published`` counts its active figure
    (:data:`~lightspeed.workload.model_file.ACTIVE_COUNTS`); ``None`` without that figure."""
    if published is None or not published.active_params:
        return None
    basis = published.active_counts
    if basis == "no-embeddings":
        return counts.active_params - counts.embedding_params - counts.lm_head_params
    if basis == "no-input-embedding" and counts.lm_head_params:  # tied: the table is the LM head
        return counts.active_params - counts.embedding_params
    return counts.active_params


def _recurrent_state_bytes(spec: TransformerSpec) -> float:
    """Bytes one sequence keeps in a hybrid's recurrent blocks, whatever its length (0 without)."""
    mixer = spec.recurrent
    return 0.0 if mixer is None else spec.num_recurrent_layers * mixer.sequence_state_bytes


@dataclass(frozen=True)
class ModelRow(Record):
    """One line of ``lightspeed model list``; ``mixer`` is a hybrid's recurrent mixer
    (``mamba``, ``gated_delta_net``: :data:`~lightspeed.workload.spec.BLOCK_SYMBOLS`), empty for a
    transformer. ``num_layers`` is the layer count the model's config states
    (:attr:`~lightspeed.workload.TransformerSpec.num_decoder_layers`: Qwen3-Next's 48),
    ``num_blocks`` the blocks the counts use (its 96 mixer and FFN blocks; ``num_layers`` for a
    transformer)."""

    name: str
    display_name: str
    aliases: tuple[str, ...]
    kind: str
    attention: str
    num_layers: int
    hidden_size: int
    total_params: int
    active_params: int
    max_seq_len: int
    source: str
    path: str
    mixer: str = ""
    num_blocks: int = 0


def list_models(registry: ModelRegistry) -> tuple[ModelRow, ...]:
    """Every model of ``registry`` with its shape and parameter totals, sorted by name.

    >>> from lightspeed.workload import load_models
    >>> [row.kind for row in list_models(load_models()) if row.name == "mixtral-8x7b"]
    ['moe']
    """
    rows = []
    for name in registry.names():
        entry = registry.entry(name)
        spec = entry.spec
        counts = parameter_counts(spec)
        rows.append(
            ModelRow(
                name=spec.name,
                display_name=spec.display_name,
                aliases=spec.aliases,
                kind="moe" if spec.is_moe else "dense",
                attention=spec.attention.kind,
                num_layers=spec.num_decoder_layers,
                num_blocks=spec.num_layers,
                hidden_size=spec.hidden_size,
                total_params=counts.total_params,
                active_params=counts.active_params,
                max_seq_len=spec.max_seq_len,
                source=spec.source,
                path=entry.path,
                mixer=_mixer_name(spec),
            )
        )
    return tuple(rows)


def _mixer_name(spec: TransformerSpec) -> str:
    """A hybrid's recurrent mixer by its block name (empty without one)."""
    if spec.mamba is not None:
        return "mamba"
    return "gated_delta_net" if spec.gated_delta_net is not None else ""


def entry_from_hf_config(path: Path) -> ModelEntry:
    """A :class:`ModelEntry` for a Hugging Face ``config.json`` (or its folder)."""
    spec = spec_from_hf_config(path)
    config = path / "config.json" if path.is_dir() else path
    reference = Reference(key="config", title="Hugging Face config.json", url=str(config))
    return ModelEntry(spec=spec, sources={"config": reference}, published=None, path=str(config))


def _looks_like_path(text: str) -> bool:
    if not text.strip():  # Path("") is the working folder: an empty name is a name the registry refuses
        return False
    if text.endswith((".json", ".toml")):
        return True
    if "/" in text:
        return exists(Path(text))  # a name the system refuses (too long) is said so, one line
    try:
        return Path(text).is_dir()
    except OSError:  # too long to name a folder: a model's name (the registry says if it knows it)
        return False


def resolve_model_entry(text: str, registry: ModelRegistry) -> ModelEntry:
    """The model named ``text``, or read from the file or folder ``text`` points to.

    A ``.toml`` path is a model data file; a ``.json`` path or a folder holding
    ``config.json`` is a Hugging Face config; anything else is a registry name.
    """
    if not _looks_like_path(text):
        return registry.entry(text)
    path = Path(text)
    if path.suffix == ".toml":
        return load_model_file(path, registry)
    return entry_from_hf_config(path)


def resolve_model(text: str, registry: ModelRegistry) -> TransformerSpec:
    """The architecture named ``text`` or stored at path ``text`` (see :func:`resolve_model_entry`).

    >>> from lightspeed.workload import load_models
    >>> resolve_model("llama-3.3-70b", load_models()).num_layers
    80
    """
    return resolve_model_entry(text, registry).spec
