"""Published quantized checkpoints that keep their attention projections in another format.

Quantizers rarely treat every linear layer alike. gpt-oss ships its MoE weights in
MXFP4 and everything else in BF16; NVIDIA's DeepSeek-R1 FP4 checkpoint quantizes
the FFN and expert weights to NVFP4 and leaves attention in BF16. Served at the
checkpoint's ``precision``, such a model reads its attention projections in the
checkpoint's ``attention_weights`` format, and runs those GEMMs in it. A checkpoint
may keep more layer kinds so (``kept_layers``: Kimi K2 Thinking's shared experts and
dense layer stay BF16 beside INT4 routed experts) and store its scales in groups of
its own (``group_size``, ``scale_format``: Kimi's one BF16 scale per 32 INT4 weights,
0.5625 bytes a weight where plain int4 is AWQ's 128 with an FP16 scale and zero).
The table lives in ``sol/data/checkpoints.toml`` with what each publisher says it
quantized; :func:`as_published` applies an entry to a deployment's formats.

>>> checkpoint_for("gpt-oss-120b", "mxfp4").attention_weights
'bf16'
>>> checkpoint_for("gpt-oss-120b", "bf16") is None
True
>>> checkpoint_for("kimi-k2", "int4").weight_bytes_per_element
0.5625
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Final

from lightspeed.datafile import Fields, load_toml
from lightspeed.errors import DataFileError
from lightspeed.paths import package_data
from lightspeed.records import Record
from lightspeed.sol.infer.plan import INFERENCE_PRECISIONS, KEPT_LAYER_KINDS, Precisions
from lightspeed.units import BITS_PER_BYTE, bytes_per_element, element_bits

CHECKPOINTS_SCHEMA_VERSION: Final = 1
# formats a checkpoint stores its group scales in
SCALE_FORMATS: Final = ("fp32", "bf16", "fp16", "fp8")


@dataclass(frozen=True)
class QuantizedCheckpoint(Record):
    """One published checkpoint: the model it holds, the format of its FFN and expert weights
    (``precision``), that of its attention projections, its published size (GiB, when given);
    the weights per scale group and the scales' format where the checkpoint has its own
    (``None``: the format's usual ones), and the layer kinds (``KEPT_LAYER_KINDS``) it keeps
    as its attention projections."""

    model: str
    name: str
    precision: str
    attention_weights: str
    checkpoint_gib: float | None
    source: str
    group_size: int | None = None
    scale_format: str | None = None
    kept_layers: tuple[str, ...] = ()

    @property
    def weight_bytes_per_element(self) -> float:
        """Bytes per weight stored in ``precision``: the element and its share of its group's
        scale where the checkpoint gives its groups, else the format's own size."""
        if self.group_size is None or self.scale_format is None:
            return bytes_per_element(self.precision)
        scale_bytes = bytes_per_element(self.scale_format) / self.group_size
        return element_bits(self.precision) / BITS_PER_BYTE + scale_bytes


def _scale_groups(fields: Fields) -> tuple[int | None, str | None]:
    """(weights per scale group, scales' format), both or neither."""
    if fields.has("group_size") != fields.has("scale_format"):
        raise DataFileError(
            fields.path,
            "a checkpoint's scale groups need both group_size and scale_format",
            fix='give both (e.g. group_size = 32, scale_format = "bf16") or neither',
        )
    if not fields.has("group_size"):
        return None, None
    group_size = fields.integer("group_size", minimum=1)
    return group_size, fields.choice("scale_format", SCALE_FORMATS, "scale format")


def _kept_layers(fields: Fields) -> tuple[str, ...]:
    kept = fields.strings("kept_layers")
    unknown = [kind for kind in kept if kind not in KEPT_LAYER_KINDS]
    if unknown:
        raise DataFileError(
            fields.path,
            "unknown kept layer kind",
            field="kept_layers",
            value=unknown[0],
            fix=f"use {', '.join(KEPT_LAYER_KINDS)}",
        )
    return kept


def _entry(fields: Fields) -> QuantizedCheckpoint:
    formats = {
        key: fields.choice(key, INFERENCE_PRECISIONS, "weight format")
        for key in ("precision", "attention_weights")
    }
    gib = fields.number("checkpoint_gib") if fields.has("checkpoint_gib") else None
    group_size, scale_format = _scale_groups(fields)
    return QuantizedCheckpoint(
        model=fields.string("model"),
        name=fields.string("name"),
        precision=formats["precision"],
        attention_weights=formats["attention_weights"],
        checkpoint_gib=gib,
        source=fields.string("source"),
        group_size=group_size,
        scale_format=scale_format,
        kept_layers=_kept_layers(fields),
    )


@functools.lru_cache(maxsize=2)
def load_checkpoints(path: Path | None = None) -> tuple[QuantizedCheckpoint, ...]:
    """Every entry of ``path`` (default: the shipped ``sol/data/checkpoints.toml``; read once)."""
    path = path or package_data("sol", "data", "checkpoints.toml")
    fields = Fields(str(path), load_toml(path))
    fields.schema_version({CHECKPOINTS_SCHEMA_VERSION})
    entries = tuple(_entry(item) for item in fields.array_of_tables("checkpoint"))
    seen = [(entry.model, entry.precision) for entry in entries]
    if len(set(seen)) != len(seen):
        raise DataFileError(str(path), "two checkpoints for one model and precision", fix="keep one of them")
    return entries


def checkpoint_for(model_name: str, precision: str) -> QuantizedCheckpoint | None:
    """The published checkpoint of ``model_name`` (a catalog name) in ``precision`` that keeps some
    layers apart or scales in groups of its own, or ``None`` (then every linear layer is stored in
    ``precision`` at its usual size)."""
    for entry in load_checkpoints():
        if entry.model == model_name and entry.precision == precision:
            return entry
    return None


def as_published(precisions: Precisions, model_name: str) -> Precisions:
    """``precisions`` as ``model_name``'s published checkpoint in ``precisions.weights`` stores its
    weights: the checkpoint's scale groups in the bytes of every layer in its format, and the layer
    kinds it keeps as its attention projections; ``precisions`` itself without such a checkpoint.
    Applying it twice changes nothing.

    >>> from lightspeed.catalog import load_catalog
    >>> from lightspeed.sol.infer.plan import InferencePlan, resolve_precisions
    >>> plan = InferencePlan(precision="int4", attention_weights="bf16")
    >>> kimi = as_published(resolve_precisions(plan, load_catalog().accelerator("h200")), "kimi-k2")
    >>> kimi.weight_bytes_per_element, kimi.kept_layers
    (0.5625, ('shared_experts', 'dense_mlp'))
    """
    checkpoint = checkpoint_for(model_name, precisions.weights)
    if checkpoint is None:
        return precisions
    per_weight = checkpoint.weight_bytes_per_element
    attention = (
        per_weight
        if precisions.attention_weights == checkpoint.precision
        else precisions.attention_weight_bytes_per_element
    )
    return replace(
        precisions,
        weight_bytes_per_element=per_weight,
        attention_weight_bytes_per_element=attention,
        kept_layers=checkpoint.kept_layers,
    )


__all__ = ["SCALE_FORMATS", "QuantizedCheckpoint", "as_published", "checkpoint_for", "load_checkpoints"]
