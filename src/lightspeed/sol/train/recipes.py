"""Published training recipes that keep the first or last layers of an FP8/FP4 run in BF16.

Low-precision recipes rarely quantize every layer: Megatron-Bridge trains Nemotron 3 Super
in NVFP4 with its last 14 of 88 layers in BF16 (Megatron-Core's ``first_last_layers_bf16``).
A plan of such a model in such a format keeps those layers wide unless it names its own
(``--bf16-layers START:END``). The table lives in ``sol/data/training_recipes.toml``, each
entry with the recipe it comes from.

>>> recipe_for("nemotron-3-super-120b-a12b", "nvfp4").bf16_layers_end
14
>>> recipe_for("nemotron-3-super-120b-a12b", "mxfp8") is None
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
from lightspeed.sol.train.plan import TRAINING_PRECISIONS, TrainingPlan
from lightspeed.units import compute_precision
from lightspeed.workload import TransformerSpec

RECIPES_SCHEMA_VERSION: Final = 1


@dataclass(frozen=True)
class TrainingRecipe(Record):
    """One published recipe: the model, the formats it applies to, the layers it keeps in BF16."""

    model: str
    name: str
    precisions: tuple[str, ...]
    bf16_layers_start: int
    bf16_layers_end: int
    source: str

    @property
    def bf16_layers(self) -> tuple[int, int]:
        """``(start, end)``: the layers kept in BF16 at the model's start and at its end."""
        return self.bf16_layers_start, self.bf16_layers_end


def _entry(fields: Fields) -> TrainingRecipe:
    precisions = fields.strings("precisions")
    for value in precisions:
        if value not in TRAINING_PRECISIONS or compute_precision(value) not in ("fp8", "fp4"):
            raise DataFileError(
                fields.path,
                f"{value!r} is not an FP8 or FP4 format (only those keep layers in BF16)",
                field=f"{fields.prefix}precisions",
                fix="list fp8, mxfp8, nvfp4, mxfp4 or fp4 formats",
            )
    return TrainingRecipe(
        model=fields.string("model"),
        name=fields.string("name"),
        precisions=precisions,
        bf16_layers_start=fields.integer("bf16_layers_start"),
        bf16_layers_end=fields.integer("bf16_layers_end"),
        source=fields.string("source"),
    )


@functools.lru_cache(maxsize=2)
def load_training_recipes(path: Path | None = None) -> tuple[TrainingRecipe, ...]:
    """Every entry of ``path`` (default: the shipped ``sol/data/training_recipes.toml``; read once)."""
    path = path or package_data("sol", "data", "training_recipes.toml")
    fields = Fields(str(path), load_toml(path))
    fields.schema_version({RECIPES_SCHEMA_VERSION})
    entries = tuple(_entry(item) for item in fields.array_of_tables("recipe"))
    seen = [(entry.model, precision) for entry in entries for precision in entry.precisions]
    if len(set(seen)) != len(seen):
        raise DataFileError(str(path), "two recipes for one model and precision", fix="keep one of them")
    return entries


def recipe_for(model_name: str, precision: str) -> TrainingRecipe | None:
    """The published recipe of ``model_name`` (a catalog name) in ``precision`` that keeps layers
    in BF16, or ``None`` (then every layer runs in ``precision``)."""
    for entry in load_training_recipes():
        if entry.model == model_name and precision in entry.precisions:
            return entry
    return None


def bf16_layers_note(plan: TrainingPlan, model: TransformerSpec) -> str:
    """The sentence that says which layers ``plan`` keeps in BF16 and whose recipe that is
    (empty when it keeps none)."""
    kept = (plan.bf16_layers_start, plan.bf16_layers_end)
    if not any(kept):
        return ""
    recipe = recipe_for(model.name, plan.precision)
    published = recipe is not None and recipe.bf16_layers == kept
    return (
        f"layers kept in BF16: the first {kept[0]} and the last {kept[1]} of {model.num_layers} (their "
        f"linears at the BF16 peak, no {plan.precision} casts or 8-bit weight copy), on the stages that "
        "hold them"
        + (f"; the model's published recipe ({recipe.name})" if recipe is not None and published else "")
    )


__all__ = ["TrainingRecipe", "bf16_layers_note", "load_training_recipes", "recipe_for"]
