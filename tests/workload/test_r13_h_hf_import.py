"""Hugging Face config.json import (review 13, helper H): the modules a quantization block leaves
16-bit, and over-large sizes refused naming the config.json key rather than lightspeed's field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lightspeed.errors import DataFileError
from lightspeed.workload import load_models, spec_from_hf_config
from lightspeed.workload.hf_quantization import kept_attention_format

HF_CONFIGS = Path(__file__).resolve().parents[1] / "fixtures" / "hf_configs"
MODELS = load_models()


def _fixture(folder: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((HF_CONFIGS / folder / "config.json").read_text())
    return data


def _write(folder: Path, data: object) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "config.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


# ---- which attention projections a quantization block leaves 16-bit ----------------------------

# gpt-oss-120b: 36 layers of GQA attention (q, k, v, o); DeepSeek-V3: 61 MLA layers with a query LoRA
_GPT_OSS_LAYERS = 36
_DEEPSEEK_LAYERS = 61


@pytest.mark.parametrize(
    ("block", "expected"),
    [
        # gpt-oss' published block (transformers' Mxfp4Config)
        (
            {
                "quant_method": "mxfp4",
                "modules_to_not_convert": [
                    "model.layers.*.self_attn",
                    "model.layers.*.mlp.router",
                    "model.embed_tokens",
                    "lm_head",
                ],
            },
            "bf16",
        ),
        # a bare module name, as transformers' older substring rule reads it
        ({"quant_method": "mxfp4", "modules_to_not_convert": ["self_attn", "lm_head"]}, "bf16"),
        # compressed-tensors' ignore list with a regular expression (Kimi K2 Thinking's style)
        (
            {
                "quant_method": "compressed-tensors",
                "config_groups": {"g": {"weights": {"num_bits": 4, "type": "int"}}},
                "ignore": ["lm_head", "re:.*self_attn.*", "re:.*shared_experts.*"],
            },
            "bf16",
        ),
        # vLLM's fp8 ignored_layers, one entry per layer
        (
            {
                "quant_method": "fp8",
                "ignored_layers": [f"model.layers.{index}.self_attn" for index in range(_GPT_OSS_LAYERS)],
            },
            "bf16",
        ),
        # quantized attention: only the router and the LM head are left out
        ({"quant_method": "mxfp4", "modules_to_not_convert": ["model.layers.*.mlp.router", "lm_head"]}, None),
        # no list at all
        ({"quant_method": "mxfp4"}, None),
    ],
)
def test_the_attention_format_follows_the_modules_a_block_leaves_out(
    block: dict[str, Any], expected: str | None
) -> None:
    data = {**_fixture("gpt-oss-120b"), "quantization_config": block}
    assert kept_attention_format(data, MODELS.get("gpt-oss-120b"))[0] == expected


def test_modelopt_exclude_modules_per_layer_keep_mla_attention_16_bit() -> None:
    # nvidia/DeepSeek-R1-FP4's style: one 'model.layers.N.self_attn*' glob per layer
    excluded = ["lm_head", *(f"model.layers.{index}.self_attn*" for index in range(_DEEPSEEK_LAYERS))]
    block = {"quant_method": "modelopt", "quant_algo": "NVFP4", "exclude_modules": excluded}
    attention, note = kept_attention_format({"quantization_config": block}, MODELS.get("deepseek-v3"))
    assert (attention, note) == ("bf16", "exclude_modules keeps every attention projection 16-bit")


def test_a_block_that_keeps_only_some_attention_layers_says_so() -> None:
    # 10 of 36 layers: 10 x 4 = 40 of 36 x 4 = 144 projections; the engine has one attention format
    kept = [f"model.layers.{index}.self_attn" for index in range(10)]
    block = {"quant_method": "mxfp4", "modules_to_not_convert": kept}
    attention, note = kept_attention_format({"quantization_config": block}, MODELS.get("gpt-oss-120b"))
    assert attention is None
    assert "keeps 40 of 144 attention projections 16-bit" in note


def test_a_float16_checkpoint_keeps_fp16_and_an_unquantized_one_none() -> None:
    block = {"quant_method": "mxfp4", "modules_to_not_convert": ["model.layers.*.self_attn"]}
    spec = MODELS.get("gpt-oss-120b")
    assert kept_attention_format({"quantization_config": block, "torch_dtype": "float16"}, spec)[0] == "fp16"
    # a block lightspeed cannot read is bf16 throughout: nothing is kept apart
    unreadable = {"quant_method": "bitsandbytes", "modules_to_not_convert": ["self_attn"]}
    assert kept_attention_format({"quantization_config": unreadable}, spec) == (None, "")
    # a pattern that is not a regular expression matches nothing instead of failing
    broken = {"quant_method": "mxfp4", "ignore": ["re:(self_attn"]}
    assert kept_attention_format({"quantization_config": broken}, spec) == (None, "")


def test_the_import_says_which_key_keeps_attention_16_bit(tmp_path: Path) -> None:
    # the published gpt-oss-120b config.json in a folder not named after the catalog model
    spec = spec_from_hf_config(_write(tmp_path / "gptoss120b", _fixture("gpt-oss-120b")))
    assert spec.release_format == "mxfp4"
    assert "modules_to_not_convert keeps every attention projection 16-bit" in spec.release_source


# ---- over-large sizes name the config.json key ------------------------------------------------


@pytest.mark.parametrize(
    ("folder", "key", "value", "limit"),
    [
        # MAX_DIMENSION: ffn_hidden_size 2**22, num_layers 2**14, vocab_size 2**24, max_seq_len 2**30
        ("llama-3-8b", "intermediate_size", 10**12, "4,194,304"),
        ("llama-3-8b", "num_hidden_layers", 10**9, "16,384"),
        ("llama-3-8b", "vocab_size", 10**30, "16,777,216"),
        ("llama-3-8b", "max_position_embeddings", 10**10, "1,073,741,824"),
        ("llama-4-scout", "intermediate_size_mlp", 10**12, "4,194,304"),
        ("deepseek-v3", "moe_intermediate_size", 10**12, "4,194,304"),
        # Qwen3-Next: each layer is two blocks, so 2**14 / 2 layers
        ("qwen3-next-80b-a3b", "num_hidden_layers", 10**4, "8,192"),
    ],
)
def test_an_over_large_size_names_the_config_key(
    tmp_path: Path, folder: str, key: str, value: int, limit: str
) -> None:
    data = _fixture(folder)
    target = data.get("text_config", data)
    target[key] = value
    path = _write(tmp_path / folder, data)
    with pytest.raises(DataFileError) as caught:
        spec_from_hf_config(path)
    message = str(caught.value)
    prefix = "text_config." if "text_config" in data else ""
    assert f"field '{prefix}{key}'" in message
    assert f"{key} {value:,} is above {limit}" in message
    assert f"copy {key} from the published config.json" in message
    for spec_field in ("ffn_hidden_size", "num_layers =", "max_seq_len"):
        assert spec_field not in message


def test_the_cli_names_the_config_key(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = _write(tmp_path / "huge", {**_fixture("llama-3-8b"), "intermediate_size": 10**12})
    result = run_cli("model", "show", str(path))
    assert result.code == 2
    assert "field 'intermediate_size'" in result.err
    assert "Traceback" not in result.err
