"""Layers an FP8 or FP4 run keeps in BF16 (Megatron's num_layers_at_start_in_bf16 /
num_layers_at_end_in_bf16): priced at the BF16 peak, without casts or an 8-bit weight copy, on the
pipeline stages that hold them; Nemotron 3 Super's published NVFP4 recipe keeps its last 14 of 88
(Megatron-Bridge's nemotron_3_super_bf16_with_nvfp4_mixed), which the engine had run in NVFP4."""

from __future__ import annotations

import itertools
import json
from typing import Any

import numpy as np
import pytest

from lightspeed.catalog import Catalog
from lightspeed.errors import DataFileError
from lightspeed.sol import TrainingPlan, estimate_training
from lightspeed.sol.train.grid import grid_from_plans
from lightspeed.sol.train.recipes import load_training_recipes, recipe_for
from lightspeed.workload import ModelRegistry

LLAMA_LAYERS = 32


def _estimate(
    catalog: Catalog, models: ModelRegistry, precision: str, kept: tuple[int, int], **plan: Any
) -> Any:
    degrees = {"tp": 1, "dp": 8, "recompute": "none", **plan}
    return estimate_training(
        model=models.get("llama-3-8b"),
        cluster=catalog.cluster("dgx-b200"),
        plan=TrainingPlan(
            global_batch_size=64,
            seq_len=4096,
            precision=precision,
            bf16_layers_start=kept[0],
            bf16_layers_end=kept[1],
            **degrees,
        ),
        stack="megatron-core-2025",
        check_fit=False,
    )


@pytest.mark.parametrize("part", ["compute", "memory_bound"])
def test_four_bf16_layers_of_32_cost_an_eighth_of_the_way_to_a_bf16_run(
    catalog: Catalog, models: ModelRegistry, part: str
) -> None:
    # One stage holds all 32 layers: 28 in NVFP4 and 4 as in a BF16 run, the LM head alike in both
    # runs, so the step moves 4/32 of the way from the NVFP4 run's to the BF16 run's.
    nvfp4 = _estimate(catalog, models, "nvfp4", (0, 0)).breakdown_s[part]
    bf16 = _estimate(catalog, models, "bf16", (0, 0)).breakdown_s[part]
    kept = _estimate(catalog, models, "nvfp4", (0, 4)).breakdown_s[part]
    assert kept == pytest.approx(nvfp4 + 4 / LLAMA_LAYERS * (bf16 - nvfp4), rel=1e-9)
    assert _estimate(catalog, models, "nvfp4", (3, 1)).breakdown_s[part] == pytest.approx(kept, rel=1e-9)
    if part == "compute":
        assert bf16 > 2 * nvfp4  # the wide layers are the dearer ones


def test_the_bf16_layers_hold_no_eight_bit_weight_copy(catalog: Catalog, models: ModelRegistry) -> None:
    # pp 1: every parameter on the GPU, Llama 3 8B's 8,030,261,248 (its checkpoint); 4 of 32 layers
    # keep no NVFP4 copy, 0.5 + 1/16 bytes a weight (ZeRO-1 leaves the weights whole)
    params = 8_030_261_248
    narrow = _estimate(catalog, models, "nvfp4", (0, 0)).memory_bytes["weights"]
    kept = _estimate(catalog, models, "nvfp4", (0, 4)).memory_bytes["weights"]
    assert narrow - kept == pytest.approx(0.5625 * params * 4 / LLAMA_LAYERS, rel=1e-6)


def test_the_stage_that_holds_the_bf16_layers_paces_the_pipeline(
    catalog: Catalog, models: ModelRegistry
) -> None:
    # pp 4: 8 layers a stage. 0:8 makes the last stage (with the LM head) all BF16; 0:16 also the
    # stage before it, which is still faster than the last (no head): the step does not change.
    # 8:0 makes the first stage all BF16 instead: the slowest stage is then 8 BF16 layers without
    # the head, faster than 8 BF16 layers with it.
    def step(kept: tuple[int, int]) -> float:
        return float(_estimate(catalog, models, "nvfp4", kept, pp=4, dp=2).step_time_s)

    assert step((0, 16)) == pytest.approx(step((0, 8)), rel=1e-12)
    assert step((8, 0)) < step((0, 8))
    assert step((0, 0)) < step((8, 0))


def test_the_layers_a_span_keeps_in_bf16_by_counting() -> None:
    # every span of a 12-layer model against a layer-by-layer count
    for start, end in itertools.product(range(7), repeat=2):
        grid = grid_from_plans([TrainingPlan(precision="fp8", bf16_layers_start=start, bf16_layers_end=end)])
        for first, count in itertools.product(range(12), range(13)):
            if first + count > 12:
                continue
            wide = sum(1 for layer in range(first, first + count) if layer < start or layer >= 12 - end)
            assert grid.bf16_layers_in(float(first), np.array([float(count)]), 12)[0] == wide


def test_nemotron_3_super_takes_its_published_nvfp4_recipe(run_cli: Any) -> None:
    def plan(*extra: str) -> dict[str, Any]:
        result = run_cli(
            "plan", "train", "--model", "nemotron-3-super", "--system", "gb300-nvl72", "--gpus", "64",
            "--ep", "64", "--global-batch", "512", "--seq", "8192", "--recompute", "full", "--json", *extra,
        )  # fmt: skip
        assert result.code == 0, result.err
        return dict(json.loads(result.out))

    default, none, mxfp8 = (
        plan("--precision", "nvfp4"),
        plan("--precision", "nvfp4", "--bf16-layers", "0:0"),
        plan("--precision", "mxfp8"),
    )
    assert (default["plan"]["bf16_layers_start"], default["plan"]["bf16_layers_end"]) == (0, 14)
    assert any("published recipe (Megatron-Bridge" in line for line in default["assumptions"])
    assert none["plan"]["bf16_layers_end"] == 0
    assert mxfp8["plan"]["bf16_layers_end"] == 0
    assert none["tokens_per_s"] > default["tokens_per_s"]


def test_a_search_says_it_keeps_the_recipes_layers_in_bf16(run_cli: Any) -> None:
    result = run_cli(
        "search", "train", "--model", "nemotron-3-super", "--system", "gb300-nvl72", "--gpus", "64",
        "--global-batch", "512", "--seq", "8192", "--precision", "nvfp4", "--top", "1", "--json",
    )  # fmt: skip
    assert result.code == 0, result.err
    notes = json.loads(result.out)["notes"]
    assert any("the last 14 of 88" in note and "published recipe" in note for note in notes)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--model", "llama-3-8b", "--bf16-layers", "0:4"), "need an FP8 or FP4 run"),
        (("--model", "llama-3-8b", "--precision", "fp8", "--bf16-layers", "20:20"), "keep 40 layers of"),
        (("--model", "llama-3-8b", "--precision", "fp8", "--bf16-layers", "4"), "write START:END"),
    ],
)
def test_bf16_layers_that_cannot_apply_are_one_line(
    run_cli: Any, args: tuple[str, ...], message: str
) -> None:
    result = run_cli("plan", "train", "--system", "dgx-b200", "--global-batch", "64", *args)
    assert result.code == 2
    assert message in result.err
    assert len(result.err.strip().splitlines()) == 1
    assert not result.out


def test_every_recipe_names_a_catalog_model_and_keeps_fewer_layers_than_it_has(models: ModelRegistry) -> None:
    for recipe in load_training_recipes():
        model = models.get(recipe.model)
        assert model.name == recipe.model
        assert 0 < recipe.bf16_layers_start + recipe.bf16_layers_end < model.num_layers
        assert "Megatron-Bridge" in recipe.source
    assert recipe_for("gpt-oss-20b", "mxfp8") is None


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ('precisions = ["bf16"]\nbf16_layers_start = 0\nbf16_layers_end = 2', "not an FP8 or FP4 format"),
        ('precisions = ["nvfp4"]\nbf16_layers_start = -1\nbf16_layers_end = 2', "bf16_layers_start"),
        ('precisions = ["nvfp4", "nvfp4"]\nbf16_layers_start = 0\nbf16_layers_end = 2', "two recipes"),
    ],
)
def test_a_malformed_recipe_file_says_what_is_wrong(tmp_path: Any, entries: str, message: str) -> None:
    path = tmp_path / "recipes.toml"
    path.write_text(
        f'schema_version = 1\n[[recipe]]\nmodel = "m"\nname = "n"\nsource = "s"\n{entries}\n',
        encoding="utf-8",
    )
    with pytest.raises(DataFileError, match=message):
        load_training_recipes(path)
