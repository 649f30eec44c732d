"""One model TOML file parsed (``kind = "model"``, laid out in
:mod:`lightspeed.workload.registry`'s docstring): the keys each table allows, the
:class:`~lightspeed.workload.spec.TransformerSpec` built from its ``[architecture]``,
``[attention]``, ``[moe]``, ``[mamba]`` and ``[gated_delta_net]`` tables, its ``[release]`` format,
its ``[published]`` totals and ``[sources]``, as one :class:`ModelEntry`.

:mod:`lightspeed.workload.registry` finds the files, lays variants over their bases and looks
the entries up by name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import fields as dataclass_fields
from pathlib import Path
from typing import Any, Final

from lightspeed.datafile import Fields, Source, normalize_name, parse_sources
from lightspeed.errors import DataFileError, UserInputError
from lightspeed.records import Record
from lightspeed.workload.recurrent import GatedDeltaNetSpec, MambaSpec
from lightspeed.workload.spec import RELEASE_FORMATS, AttentionSpec, MoESpec, TransformerSpec

SCHEMA_VERSION: Final = 1

_TOP_KEYS: Final = {
    "schema_version",
    "kind",
    "name",
    "display_name",
    "aliases",
    "source",
    "note",
    "extends",
    "architecture",
    "attention",
    "moe",
    "mamba",
    "gated_delta_net",
    "published",
    "release",
    "sources",
}
_ARCHITECTURE_KEYS: Final = {
    "num_layers",
    "hidden_size",
    "ffn_hidden_size",
    "vocab_size",
    "max_seq_len",
    "original_max_seq_len",
    "mlp",
    "norm",
    "position_embedding",
    "tied_embeddings",
    "mlp_bias",
    "num_mtp_modules",
    "block_pattern",
    "norms_per_layer",
}
_ATTENTION_INTEGERS: Final = (
    "q_lora_rank",
    "kv_lora_rank",
    "qk_nope_head_dim",
    "qk_rope_head_dim",
    "v_head_dim",
    "index_topk",
    "index_n_heads",
    "index_head_dim",
)
_ATTENTION_KEYS: Final = {
    "kind",
    "num_heads",
    "num_kv_heads",
    "head_dim",
    "qkv_bias",
    "out_bias",
    "sliding_window",
    "full_attention_interval",
    "attention_chunk_size",
    "layer_types",
    "output_gate",
    "qk_norm",
    *_ATTENTION_INTEGERS,
}
_MOE_KEYS: Final = {
    "num_routed_experts",
    "top_k",
    "expert_ffn_hidden_size",
    "num_shared_experts",
    "shared_expert_ffn_hidden_size",
    "num_dense_layers",
    "layer_frequency",
    "router_bias",
    "num_expert_groups",
    "top_k_groups",
    "latent_size",
    "shared_expert_gate",
}
# a recurrent mixer's table takes its spec's fields, every one
_MAMBA_KEYS: Final = {spec_field.name for spec_field in dataclass_fields(MambaSpec)}
_GDN_KEYS: Final = {spec_field.name for spec_field in dataclass_fields(GatedDeltaNetSpec)}
_PUBLISHED_KEYS: Final = {"total_params", "active_params", "active_counts", "source", "note"}
# What a publisher's active-parameter figure counts (``[published] active_counts``): every weight a
# token uses (the default), all but the input embedding table (a lookup, not a matrix product:
# OpenAI's gpt-oss table counts the unembedding and not the embedding), or neither table.
ACTIVE_COUNTS: Final = ("all", "no-input-embedding", "no-embeddings")
_RELEASE_KEYS: Final = {"weights", "source", "note"}


Reference = Source  # models cite documents the same way hardware does


@dataclass(frozen=True)
class PublishedCounts(Record):
    """Parameter totals as the model's authors print them (rounded, as printed)."""

    total_params: float | None
    active_params: float | None
    source: str
    note: str = ""
    active_counts: str = "all"  # what active_params counts: one of ACTIVE_COUNTS


@dataclass(frozen=True)
class ModelEntry(Record):
    """One known model: its architecture, where its figures come from, its file."""

    spec: TransformerSpec
    sources: Mapping[str, Reference]
    published: PublishedCounts | None
    path: str
    extends: str = ""  # the model this one is a variant of (its file's ``extends``), else ""


def parse_model(path: Path, data: Mapping[str, Any]) -> ModelEntry:
    """A :class:`ModelEntry` from one parsed TOML file; errors name file, field, value and fix."""
    fields = Fields(str(path), data)
    check_keys(fields, _TOP_KEYS, "")
    fields.schema_version({SCHEMA_VERSION})
    sources = parse_references(fields)
    source_key = fields.check_source("source", sources)
    try:
        spec = _build_spec(fields, sources[source_key], _release(fields, sources))
    except UserInputError as error:
        raise DataFileError(
            path,
            str(error),
            fix="correct the [architecture]/[attention]/[moe]/[mamba]/[gated_delta_net] figures",
        ) from None
    return ModelEntry(spec=spec, sources=sources, published=_parse_published(fields, sources), path=str(path))


def check_keys(fields: Fields, allowed: set[str], table: str) -> None:
    """Refuse a key of ``fields`` (the table ``table``, '' for the top) not in ``allowed``."""
    unknown = fields.unknown_keys(allowed)
    if unknown:
        raise DataFileError(
            fields.path,
            f"unknown field{' in [' + table + ']' if table else ''}",
            field=f"{fields.prefix}{unknown[0]}",
            fix=f"use one of: {', '.join(sorted(allowed))}",
        )


def parse_references(fields: Fields) -> dict[str, Reference]:
    """The ``[sources.<key>]`` tables of a data file (at least one is required)."""
    return parse_sources(fields)


def _release(fields: Fields, sources: Mapping[str, Reference]) -> tuple[str, str]:
    """(format, where it comes from) of the ``[release]`` table; bf16 without one."""
    table = fields.table("release", required=False)
    if table is None:
        return "bf16", ""
    check_keys(table, _RELEASE_KEYS, "release")
    weights = table.choice("weights", RELEASE_FORMATS, "weight format")
    key = table.check_source("source", sources)
    note = table.string("note", "")
    return weights, sources[key].citation + (f"; {note}" if note else "")


def _build_spec(fields: Fields, source: Reference, release: tuple[str, str]) -> TransformerSpec:
    architecture = _required_table(fields, "architecture", _ARCHITECTURE_KEYS)
    attention = _required_table(fields, "attention", _ATTENTION_KEYS)
    moe = fields.table("moe", required=False)
    if moe is not None:
        check_keys(moe, _MOE_KEYS, "moe")
    mamba = fields.table("mamba", required=False)
    if mamba is not None:
        check_keys(mamba, _MAMBA_KEYS, "mamba")
    gdn = fields.table("gated_delta_net", required=False)
    if gdn is not None:
        check_keys(gdn, _GDN_KEYS, "gated_delta_net")
    hidden = architecture.integer("hidden_size", minimum=1)
    return TransformerSpec(
        name=normalize_name(fields.string("name")),
        display_name=fields.string("display_name", fields.string("name")),
        num_layers=architecture.integer("num_layers", minimum=1),
        hidden_size=hidden,
        ffn_hidden_size=architecture.integer("ffn_hidden_size", minimum=1),
        vocab_size=architecture.integer("vocab_size", minimum=1),
        attention=_attention(attention, hidden),
        mlp=architecture.string("mlp", "swiglu"),
        moe=_moe(moe) if moe is not None else None,
        tied_embeddings=architecture.boolean("tied_embeddings", False),
        position_embedding=architecture.string("position_embedding", "rope"),
        max_seq_len=architecture.integer("max_seq_len", minimum=1),
        original_max_seq_len=(
            architecture.integer("original_max_seq_len", minimum=1)
            if "original_max_seq_len" in architecture.data
            else None
        ),
        norm=architecture.string("norm", "rmsnorm"),
        mlp_bias=architecture.boolean("mlp_bias", False),
        num_mtp_modules=architecture.integer("num_mtp_modules", 0),
        aliases=tuple(normalize_name(alias) for alias in fields.strings("aliases")),
        source=source.citation,
        note=fields.string("note", ""),
        release_format=release[0],
        release_source=release[1],
        mamba=_mamba(mamba) if mamba is not None else None,
        block_pattern=architecture.string("block_pattern", ""),
        gated_delta_net=_gated_delta_net(gdn) if gdn is not None else None,
        norms_per_layer=architecture.optional_integer("norms_per_layer"),
    )


_REQUIRED: Final = {
    "architecture": ("num_layers", "hidden_size", "ffn_hidden_size", "vocab_size", "max_seq_len"),
    "attention": ("kind", "num_heads"),
}


def _required_table(fields: Fields, key: str, allowed: set[str]) -> Fields:
    table = fields.table(key)
    assert table is not None  # required=True raises instead of returning None
    check_keys(table, allowed, key)
    for name in _REQUIRED[key]:
        if not table.has(name):
            raise DataFileError(
                fields.path, "missing field", field=f"{key}.{name}", fix=f"add {name} = ... under [{key}]"
            )
    return table


def _attention(table: Fields, hidden_size: int) -> AttentionSpec:
    kind = table.string("kind")
    num_heads = table.integer("num_heads", minimum=1)
    integers = {key: table.optional_integer(key) for key in _ATTENTION_INTEGERS}
    return AttentionSpec(
        kind=kind,
        num_heads=num_heads,
        num_kv_heads=table.integer("num_kv_heads", num_heads, minimum=1),
        head_dim=_head_dim(table, hidden_size, num_heads, integers),
        qkv_bias=table.boolean("qkv_bias", False),
        out_bias=table.boolean("out_bias", False),
        sliding_window=table.optional_integer("sliding_window"),
        full_attention_interval=table.optional_integer("full_attention_interval"),
        attention_chunk_size=table.optional_integer("attention_chunk_size"),
        layer_types=table.strings("layer_types"),
        output_gate=table.boolean("output_gate", False),
        qk_norm=table.boolean("qk_norm", False),
        **integers,
    )


def _head_dim(table: Fields, hidden_size: int, num_heads: int, integers: Mapping[str, int | None]) -> int:
    """``[attention] head_dim``, else MLA's ``qk_nope_head_dim + qk_rope_head_dim``, else
    ``hidden_size / num_heads`` where that is whole (as transformers derives it; a model whose
    heads do not split the hidden size, Gemma 7B's 16 x 256 of 3072, states it)."""
    if table.has("head_dim"):
        return table.integer("head_dim", minimum=1)
    nope, rope = integers["qk_nope_head_dim"], integers["qk_rope_head_dim"]
    if table.string("kind") == "mla" and nope and rope:
        return nope + rope
    if hidden_size % num_heads:
        raise DataFileError(
            table.path,
            f"hidden_size {hidden_size:,} is not a multiple of num_heads {num_heads:,}, so the head size "
            "cannot be derived",
            field=f"{table.prefix}num_heads",
            value=num_heads,
            fix="add head_dim = ... under [attention] (the published config's head_dim) or correct num_heads",
        )
    return hidden_size // num_heads


def _moe(table: Fields) -> MoESpec:
    return MoESpec(
        num_routed_experts=table.integer("num_routed_experts", minimum=1),
        top_k=table.integer("top_k", minimum=1),
        expert_ffn_hidden_size=table.integer("expert_ffn_hidden_size", minimum=1),
        num_shared_experts=table.integer("num_shared_experts", 0),
        shared_expert_ffn_hidden_size=table.integer("shared_expert_ffn_hidden_size", 0),
        num_dense_layers=table.integer("num_dense_layers", 0),
        layer_frequency=table.integer("layer_frequency", 1, minimum=1),
        router_bias=table.boolean("router_bias", False),
        num_expert_groups=table.integer("num_expert_groups", minimum=1)
        if table.has("num_expert_groups")
        else None,
        top_k_groups=table.integer("top_k_groups", minimum=1) if table.has("top_k_groups") else None,
        latent_size=table.optional_integer("latent_size"),
        shared_expert_gate=table.boolean("shared_expert_gate", False),
    )


def _mamba(table: Fields) -> MambaSpec:
    return MambaSpec(
        num_heads=table.integer("num_heads", minimum=1),
        head_dim=table.integer("head_dim", minimum=1),
        state_size=table.integer("state_size", minimum=1),
        num_groups=table.integer("num_groups", 1, minimum=1),
        conv_kernel=table.integer("conv_kernel", 4, minimum=1),
        chunk_size=table.integer("chunk_size", 128, minimum=1),
        state_dtype=table.string("state_dtype", "float32"),
    )


def _gated_delta_net(table: Fields) -> GatedDeltaNetSpec:
    return GatedDeltaNetSpec(
        num_key_heads=table.integer("num_key_heads", minimum=1),
        num_value_heads=table.integer("num_value_heads", minimum=1),
        key_head_dim=table.integer("key_head_dim", minimum=1),
        value_head_dim=table.integer("value_head_dim", minimum=1),
        conv_kernel=table.integer("conv_kernel", 4, minimum=1),
        chunk_size=table.integer("chunk_size", 64, minimum=1),
        state_dtype=table.string("state_dtype", "bfloat16"),
    )


def _parse_published(fields: Fields, sources: Mapping[str, Reference]) -> PublishedCounts | None:
    table = fields.table("published", required=False)
    if table is None:
        return None
    check_keys(table, _PUBLISHED_KEYS, "published")
    key = table.check_source("source", sources)
    return PublishedCounts(
        total_params=table.number("total_params") if table.has("total_params") else None,
        active_params=table.number("active_params") if table.has("active_params") else None,
        source=sources[key].citation,
        note=table.string("note", ""),
        active_counts=table.choice("active_counts", ACTIVE_COUNTS, "active-parameter basis", default="all"),
    )


__all__ = [
    "ACTIVE_COUNTS",
    "SCHEMA_VERSION",
    "ModelEntry",
    "PublishedCounts",
    "Reference",
    "check_keys",
    "parse_model",
    "parse_references",
]
