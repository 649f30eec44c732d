"""A quantized config.json's ``modules_to_not_convert`` beyond attention (review 14, helper B): a
block that leaves every MLP (or every layer) 16-bit is costed 16-bit, one that leaves only some says
which entries are not modelled, and a GPTQ width lightspeed does not model is named as such."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lightspeed.catalog import load_catalog
from lightspeed.sol import InferencePlan, ServingLoad, estimate_inference
from lightspeed.workload import TransformerSpec, spec_from_hf_config

HF_CONFIGS = Path(__file__).resolve().parents[1] / "fixtures" / "hf_configs"

# Llama-3-8B by hand (hidden 4096, 32 layers, 32 query / 8 KV heads of 128, intermediate 14336,
# vocabulary 128,256, untied embeddings):
#   attention 32 x (4096 x 4096 + 2 x 4096 x 1024 + 4096 x 4096) = 1,342,177,280
#   MLP       32 x 3 x 4096 x 14336                               = 5,637,144,576
#   embedding and LM head 2 x 128,256 x 4096                      = 1,050,673,152
#   norms     (2 x 32 + 1) x 4096                                 =       266,240
ATTENTION = 1_342_177_280
MLP = 5_637_144_576
SIXTEEN_BIT_REST = 1_050_673_152 + 266_240
# MLP kept bf16, attention fp8: 1,342,177,280 x 1 + (5,637,144,576 + 1,050,939,392) x 2
#   = 14,718,345,216 B (13.71 GiB), where the old import costed the MLP in fp8 (8.46 GiB)
MLP_KEPT_BYTES = ATTENTION * 1 + (MLP + SIXTEEN_BIT_REST) * 2
# every layer kept: 8,030,261,248 x 2 = 16,060,522,496 B (14.96 GiB)
ALL_KEPT_BYTES = (ATTENTION + MLP + SIXTEEN_BIT_REST) * 2


def _imported(tmp_path: Path, block: dict[str, Any]) -> TransformerSpec:
    data = json.loads((HF_CONFIGS / "llama-3-8b" / "config.json").read_text(encoding="utf-8"))
    data["quantization_config"] = block
    path = tmp_path / "llama" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(data), encoding="utf-8")
    return spec_from_hf_config(path)


def _weight_bytes(spec: TransformerSpec) -> float:
    """The weights of one H100 serving ``spec`` at the precision an imported model defaults to."""
    estimate = estimate_inference(
        model=spec,
        cluster=load_catalog().resolve_cluster("h100-sxm", 1),
        plan=InferencePlan(precision=spec.release_format),
        load=ServingLoad(1024, 16, concurrency=1),
    )
    return float(estimate.memory_bytes["weights"])


@pytest.mark.parametrize("entry", ["mlp", "model.layers.*.mlp", "re:.*mlp.*"])
def test_every_mlp_left_16_bit_is_costed_16_bit_beside_fp8_attention(tmp_path: Path, entry: str) -> None:
    spec = _imported(tmp_path, {"quant_method": "fp8", "modules_to_not_convert": [entry]})
    assert (spec.release_format, spec.release_attention_format) == ("bf16", "fp8")
    assert "keeps every linear layer outside attention (MLPs) 16-bit" in spec.release_source
    assert _weight_bytes(spec) == pytest.approx(MLP_KEPT_BYTES, rel=1e-6)


def test_every_layer_left_16_bit_is_a_bf16_checkpoint(tmp_path: Path) -> None:
    spec = _imported(tmp_path, {"quant_method": "fp8", "modules_to_not_convert": ["model.layers"]})
    assert (spec.release_format, spec.release_attention_format) == ("bf16", None)
    assert "keeps every linear layer 16-bit" in spec.release_source
    assert _weight_bytes(spec) == pytest.approx(ALL_KEPT_BYTES, rel=1e-6)


def test_a_float16_checkpoint_keeps_its_mlps_fp16(tmp_path: Path) -> None:
    block = {"quant_method": "fp8", "modules_to_not_convert": ["mlp"]}
    data = json.loads((HF_CONFIGS / "llama-3-8b" / "config.json").read_text(encoding="utf-8"))
    data.update(quantization_config=block, torch_dtype="float16")
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    spec = spec_from_hf_config(path)
    assert (spec.release_format, spec.release_attention_format) == ("fp16", "fp8")


def test_some_mlps_left_16_bit_say_which_entries_are_not_modelled(tmp_path: Path) -> None:
    # layers 0 and 1's MLPs: 2 x 3 = 6 of 32 x 3 = 96 projections; the lm_head entry keeps none
    entries = ["lm_head", "model.layers.0.mlp", "model.layers.1.mlp"]
    spec = _imported(tmp_path, {"quant_method": "fp8", "modules_to_not_convert": entries})
    assert (spec.release_format, spec.release_attention_format) == ("fp8", None)
    assert (
        "modules_to_not_convert entries 'model.layers.0.mlp', 'model.layers.1.mlp' keep 6 of 96 linear "
        "projections outside attention (MLPs) 16-bit; not modelled: taken as fp8"
    ) in spec.release_source


def test_an_attention_only_block_is_read_as_before(tmp_path: Path) -> None:
    spec = _imported(tmp_path, {"quant_method": "fp8", "modules_to_not_convert": ["self_attn", "lm_head"]})
    assert (spec.release_format, spec.release_attention_format) == ("fp8", "bf16")


@pytest.mark.parametrize(("method", "bits"), [("gptq", 3), ("awq", 2), ("gptq", True)])
def test_a_gptq_width_lightspeed_does_not_model_is_named(tmp_path: Path, method: str, bits: object) -> None:
    spec = _imported(tmp_path, {"quant_method": method, "bits": bits})
    assert spec.release_format == "bf16"
    assert f"quant_method {method!r} with bits {bits!r} is not modelled" in spec.release_source
    assert f"{method.upper()} at 4 and 8 bits" in spec.release_source
    assert "is not a format lightspeed reads" not in spec.release_source


@pytest.mark.parametrize(
    ("folder", "entry", "expected"),
    [
        # Mixtral names its experts block_sparse_moe.experts.N.w1/w2/w3: all of them left out
        ("mixtral-8x7b", "block_sparse_moe", ("bf16", "fp8")),
        # Nemotron-H: every block is backbone.layers.N.mixer (Mamba, MLP, MoE and attention alike)
        ("nemotron-3-super", "backbone.layers", ("bf16", None)),
        # DeepSeek-V3's routed and shared experts, but not its 3 dense layers' MLPs: some only
        ("deepseek-v3", "re:.*experts.*", ("fp8", None)),
    ],
)
def test_moe_and_hybrid_module_names_are_matched(
    tmp_path: Path, folder: str, entry: str, expected: tuple[str, str | None]
) -> None:
    data = json.loads((HF_CONFIGS / folder / "config.json").read_text(encoding="utf-8"))
    data["quantization_config"] = {"quant_method": "fp8", "modules_to_not_convert": [entry]}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    spec = spec_from_hf_config(path)
    assert (spec.release_format, spec.release_attention_format) == expected


def test_plan_infer_says_which_kept_entries_are_not_modelled(tmp_path: Path) -> None:
    # two MLPs of 32 kept 16-bit: the checkpoint is taken as fp8, and the estimate's assumptions
    # (what plan infer prints) carry the importer's note on the entries left out
    spec = _imported(
        tmp_path,
        {"quant_method": "fp8", "modules_to_not_convert": ["model.layers.0.mlp", "model.layers.1.mlp"]},
    )
    estimate = estimate_inference(
        model=spec,
        cluster=load_catalog().resolve_cluster("h100-sxm", 1),
        plan=InferencePlan(precision=spec.release_format),
        load=ServingLoad(1024, 16, concurrency=1),
    )
    (line,) = [text for text in estimate.assumptions if "is released in" in text]
    assert "'model.layers.0.mlp', 'model.layers.1.mlp'" in line
    assert "not modelled" in line
