"""Published quantized checkpoints that keep their attention projections in another format.

Quantizers rarely treat every linear layer alike. gpt-oss ships its MoE weights in
MXFP4 and everything else in BF16; NVIDIA's DeepSeek-R1 FP4 checkpoint quantizes
the FFN and expert weights to NVFP4 and leaves attention in BF16. Served at the
checkpoint's ``precision``, such a model reads its attention projections in the
checkpoint's ``attention_weights`` format, and runs those GEMMs in it. The table
lives in ``sol/data/checkpoints.toml`` with what each publisher says it quantized.

>>> checkpoint_for("gpt-oss-120b", "mxfp4").attention_weights
'bf16'
>>> checkpoint_for("gpt-oss-120b", "bf16") is None
True
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from lightspeed.datafile import Fields, load_toml
from lightspeed.errors import DataFileError
from lightspeed.paths import package_data
from lightspeed.records import Record
from lightspeed.sol.infer.plan import INFERENCE_PRECISIONS

CHECKPOINTS_SCHEMA_VERSION: Final = 1


@dataclass(frozen=True)
class QuantizedCheckpoint(Record):
    """One published checkpoint: the model it holds, the format of its FFN and expert weights
    (``precision``), that of its attention projections, its published size (GiB, when given)."""

    model: str
    name: str
    precision: str
    attention_weights: str
    checkpoint_gib: float | None
    source: str


def _entry(fields: Fields) -> QuantizedCheckpoint:
    formats = {
        key: fields.choice(key, INFERENCE_PRECISIONS, "weight format")
        for key in ("precision", "attention_weights")
    }
    gib = fields.number("checkpoint_gib") if fields.has("checkpoint_gib") else None
    return QuantizedCheckpoint(
        model=fields.string("model"),
        name=fields.string("name"),
        precision=formats["precision"],
        attention_weights=formats["attention_weights"],
        checkpoint_gib=gib,
        source=fields.string("source"),
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
    """The published checkpoint of ``model_name`` (a catalog name) in ``precision`` whose attention
    weights differ, or ``None`` (then every linear layer is stored in ``precision``)."""
    for entry in load_checkpoints():
        if entry.model == model_name and entry.precision == precision:
            return entry
    return None


__all__ = ["QuantizedCheckpoint", "checkpoint_for", "load_checkpoints"]
