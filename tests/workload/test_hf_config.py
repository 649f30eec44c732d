"""Hugging Face config.json import: real-shaped fixtures, and malformed files that say what is wrong."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lightspeed.errors import DataFileError
from lightspeed.workload import (
    layer_attention_kinds,
    load_models,
    mean_attended_tokens,
    parameter_counts,
    spec_from_hf_config,
)

HF_CONFIGS = Path(__file__).resolve().parents[1] / "fixtures" / "hf_configs"
MODELS = load_models()


@pytest.mark.parametrize(
    ("folder", "registry_name"),
    [
        ("llama-3-8b", "llama-3-8b"),
        ("mixtral-8x7b", "mixtral-8x7b"),
        ("deepseek-v3", "deepseek-v3"),
        ("deepseek-v3.2", "deepseek-v3.2"),
        ("glm-5", "glm-5"),
        ("qwen3-30b-a3b", "qwen3-30b-a3b"),
        ("gemma-2-9b", "gemma-2-9b"),
        ("gemma-3-27b", "gemma-3-27b"),
        ("gpt-oss-120b", "gpt-oss-120b"),
        ("deepseek-v2-lite", "deepseek-v2-lite"),
        ("llama-4-scout", "llama-4-scout"),
        ("mistral-7b-v0.1", "mistral-7b-v0.1"),
    ],
)
def test_config_gives_the_same_counts_as_the_data_file(folder: str, registry_name: str) -> None:
    imported = parameter_counts(spec_from_hf_config(HF_CONFIGS / folder / "config.json"))
    shipped = parameter_counts(MODELS.get(registry_name))
    assert imported.total_params == shipped.total_params
    assert imported.active_params == shipped.active_params
    assert imported.mtp_params == shipped.mtp_params


@pytest.mark.parametrize(
    ("folder", "published_total", "published_active"),
    [
        # Model cards: Qwen3-30B-A3B "30.5B total, 3.3B activated"; Gemma 2 9B "9.24B"; gpt-oss-120b
        # "116.8B total" (OpenAI counts 5.1B active without the 0.58B embedding table, we count it);
        # DeepSeek-V2-Lite "15.7B total".
        ("qwen3-30b-a3b", 30.5e9, 3.3e9),
        ("gemma-2-9b", 9.24e9, None),
        ("gpt-oss-120b", 116.8e9, 5.1e9 + 201088 * 2880),
        ("deepseek-v2-lite", 15.7e9, None),
    ],
)
def test_new_families_match_their_model_cards(
    folder: str, published_total: float, published_active: float | None
) -> None:
    counts = parameter_counts(spec_from_hf_config(HF_CONFIGS / folder / "config.json"))
    assert counts.total_params == pytest.approx(published_total, rel=0.01)
    if published_active is not None:
        assert counts.active_params == pytest.approx(published_active, rel=0.02)


def test_gemma_and_gpt_oss_windows_and_mlp_kinds() -> None:
    gemma3 = spec_from_hf_config(HF_CONFIGS / "gemma-3-27b")  # read through text_config
    assert (gemma3.mlp, gemma3.tied_embeddings) == ("geglu", True)
    assert (gemma3.attention.sliding_window, gemma3.attention.full_attention_interval) == (1024, 6)
    gemma2 = spec_from_hf_config(HF_CONFIGS / "gemma-2-9b")
    assert (gemma2.attention.sliding_window, gemma2.attention.full_attention_interval) == (4096, 2)
    oss = spec_from_hf_config(HF_CONFIGS / "gpt-oss-120b")
    assert (oss.attention.sliding_window, oss.attention.full_attention_interval) == (128, 2)
    assert oss.attention.qkv_bias
    assert oss.attention.out_bias
    assert oss.moe is not None
    assert (oss.moe.num_routed_experts, oss.moe.top_k) == (128, 4)
    # Half the layers attend to 128 tokens: counted as a full square, at 8192 tokens a query
    # attends to (8192 + 128) / 2 tokens on average over the layers.
    assert float(mean_attended_tokens(oss, 8192, causal=False)) == 4160.0
    # Gemma 3 27B: layers 5, 11, ..., 59 (every 6th, 0-based i with (i + 1) % 6 == 0) are global.
    kinds = layer_attention_kinds(gemma3)
    assert [index for index, kind in enumerate(kinds) if kind == "full"] == list(range(5, 62, 6))
    assert kinds.count("sliding") == 52


def test_llama4_reads_text_config_chunked_attention_and_moe() -> None:
    scout = spec_from_hf_config(HF_CONFIGS / "llama-4-scout")
    assert scout.attention.attention_chunk_size == 8192
    assert scout.attention.sliding_window is None
    # no_rope_layers is empty: transformers' no_rope_layer_interval 4 makes layers 3, 7, ... global.
    kinds = layer_attention_kinds(scout)
    assert [index for index, kind in enumerate(kinds) if kind == "full"] == list(range(3, 48, 4))
    assert kinds.count("chunked") == 36
    assert scout.ffn_hidden_size == 16384  # intermediate_size_mlp
    assert scout.moe is not None
    assert (scout.moe.num_routed_experts, scout.moe.top_k, scout.moe.num_shared_experts) == (16, 1, 1)
    assert scout.moe.expert_ffn_hidden_size == 8192
    # The shipped record says the same: its parameters match the import's.
    assert parameter_counts(scout).total_params == parameter_counts(MODELS.get("llama-4-scout")).total_params


def test_llama4_explicit_no_rope_layers(tmp_path: Path) -> None:
    data = _fixture("llama-4-scout")
    data["text_config"]["no_rope_layers"] = [1, 0] * 24  # every other layer global
    spec = spec_from_hf_config(_write(tmp_path, data))
    assert (spec.attention.attention_chunk_size, spec.attention.full_attention_interval) == (8192, 2)
    data["text_config"]["no_rope_layers"] = [1, 2]
    with pytest.raises(DataFileError, match="no_rope_layers"):
        spec_from_hf_config(_write(tmp_path, data))


def test_mistral_v01_windows_every_layer() -> None:
    spec = spec_from_hf_config(HF_CONFIGS / "mistral-7b-v0.1")
    assert (spec.attention.sliding_window, spec.attention.full_attention_interval) == (4096, None)
    assert set(layer_attention_kinds(spec)) == {"sliding"}


def test_qwen2_windows_start_at_max_window_layers(tmp_path: Path) -> None:
    data = _fixture("qwen2-7b")
    data.update(use_sliding_window=True, sliding_window=4096, max_window_layers=20)
    spec = spec_from_hf_config(_write(tmp_path, data))
    kinds = layer_attention_kinds(spec)
    # transformers' Qwen2Config: layers i >= max_window_layers use the window, the first 20 do not.
    assert kinds == ("full",) * 20 + ("sliding",) * 8
    assert spec.attention.layer_types == kinds  # not periodic: kept layer by layer
    data["max_window_layers"] = 28  # the published default: no layer windowed
    assert spec_from_hf_config(_write(tmp_path, data)).attention.sliding_window is None


def test_irregular_or_unknown_layer_types(tmp_path: Path) -> None:
    data = _fixture("gpt-oss-120b")
    data["layer_types"] = ["full_attention"] * 2 + ["sliding_attention"] * 34
    spec = spec_from_hf_config(_write(tmp_path, data))
    assert spec.attention.layer_types[:3] == ("full", "full", "sliding")
    data["layer_types"] = ["linear_attention"] * 36
    with pytest.raises(DataFileError, match="linear_attention"):
        spec_from_hf_config(_write(tmp_path, data))
    data["layer_types"] = ["full_attention"] * 35
    with pytest.raises(DataFileError, match="36 layers"):
        spec_from_hf_config(_write(tmp_path, data))


def test_folder_path_reads_its_config_json() -> None:
    spec = spec_from_hf_config(HF_CONFIGS / "llama-3-8b")
    assert spec.name == "llama-3-8b"
    assert spec.attention.kind == "gqa"
    assert spec.attention.num_kv_heads == 8


def test_qwen2_has_qkv_biases_and_matches_a_hand_count() -> None:
    spec = spec_from_hf_config(HF_CONFIGS / "qwen2-7b" / "config.json")
    assert spec.attention.qkv_bias
    assert not spec.attention.out_bias
    assert spec.attention.sliding_window is None  # use_sliding_window is false
    h, kv, ffn, layers, vocab = 3584, 4 * 128, 18944, 28, 152064
    attention = h * h + h + 2 * (h * kv + kv) + h * h  # q (+bias), k and v (+biases), o
    per_layer = attention + 3 * h * ffn + 2 * h
    expected = 2 * vocab * h + layers * per_layer + h
    counts = parameter_counts(spec)
    assert counts.total_params == expected
    # Qwen2.5-7B (the same shapes) model card: 7.61B parameters, 6.53B non-embedding.
    assert counts.total_params == pytest.approx(7.61e9, rel=0.005)
    assert counts.non_embedding_params == pytest.approx(6.53e9, rel=0.005)


def test_deepseek_v3_mla_and_moe_fields() -> None:
    spec = spec_from_hf_config(HF_CONFIGS / "deepseek-v3" / "config.json")
    assert spec.attention.kind == "mla"
    assert (spec.attention.q_lora_rank, spec.attention.kv_lora_rank) == (1536, 512)
    assert spec.attention.qk_head_dim == 192
    assert spec.attention.value_head_dim == 128
    assert spec.moe is not None
    assert (spec.moe.num_routed_experts, spec.moe.top_k, spec.moe.num_shared_experts) == (256, 8, 1)
    assert spec.moe.num_dense_layers == 3
    assert spec.moe.router_bias  # topk_method = "noaux_tc"
    assert spec.num_mtp_modules == 1


def _fixture(folder: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((HF_CONFIGS / folder / "config.json").read_text())
    return data


def _write(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("edit", "fragments"),
    [
        (
            {"model_type": "gpt2"},
            ["unsupported model_type", "'gpt2'", "llama, llama4, llama4_text, mistral, mixtral, qwen2"],
        ),
        ({"hidden_size": None}, ["field 'hidden_size'", "fix:"]),
        ({"num_hidden_layers": "32"}, ["field 'num_hidden_layers'", "'32'", "fix:"]),
        ({"num_hidden_layers": 0}, ["field 'num_hidden_layers'", "value 0"]),
        ({"num_key_value_heads": 5}, ["not a multiple of num_key_value_heads", "value 5", "fix:"]),
        ({"num_attention_heads": 24}, ["not a multiple of num_attention_heads 24", "add head_dim"]),
        ({"tie_word_embeddings": "no"}, ["field 'tie_word_embeddings'", "'no'", "true or"]),
    ],
)
def test_malformed_config_names_file_field_value_and_fix(
    tmp_path: Path, edit: dict[str, object], fragments: list[str]
) -> None:
    data = _fixture("llama-3-8b")
    data.update(edit)
    path = _write(tmp_path, data)
    with pytest.raises(DataFileError) as raised:
        spec_from_hf_config(path)
    message = str(raised.value)
    assert message.startswith(str(path))
    for fragment in fragments:
        assert fragment in message


def test_missing_field_is_named(tmp_path: Path) -> None:
    data = _fixture("mixtral-8x7b")
    del data["num_local_experts"]
    with pytest.raises(DataFileError, match="num_local_experts"):
        spec_from_hf_config(_write(tmp_path, data))


def test_deepseek_moe_layer_frequency_other_than_1_is_refused(tmp_path: Path) -> None:
    data = _fixture("deepseek-v3")
    data["moe_layer_freq"] = 2
    with pytest.raises(DataFileError, match=r"moe_layer_freq.*value 2"):
        spec_from_hf_config(_write(tmp_path, data))


def test_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(DataFileError, match="no such file"):
        spec_from_hf_config(tmp_path / "absent.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"model_type": "llama",\n "hidden_size": }', encoding="utf-8")
    with pytest.raises(DataFileError, match=r"bad.json:2: not valid JSON"):
        spec_from_hf_config(bad)
    with pytest.raises(DataFileError, match="JSON object"):
        spec_from_hf_config(_write(tmp_path, [1, 2]))
    binary = tmp_path / "binary.json"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(DataFileError):
        spec_from_hf_config(binary)


values = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 10**6), st.text(max_size=5), st.floats(allow_nan=False)
)
keys = st.sampled_from(
    [
        "model_type",
        "hidden_size",
        "num_hidden_layers",
        "num_attention_heads",
        "num_key_value_heads",
        "intermediate_size",
        "vocab_size",
        "max_position_embeddings",
        "num_local_experts",
        "num_experts_per_tok",
        "kv_lora_rank",
        "q_lora_rank",
        "n_routed_experts",
        "first_k_dense_replace",
    ]
)


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from(["llama-3-8b", "mixtral-8x7b", "qwen2-7b", "deepseek-v3"]), st.dictionaries(keys, values)
)
def test_property_any_edit_gives_a_spec_or_a_data_file_error(
    tmp_path_factory: pytest.TempPathFactory, folder: str, edits: dict[str, object]
) -> None:
    data = _fixture(folder)
    data.update(edits)
    path = _write(tmp_path_factory.mktemp("config"), data)
    try:
        spec = spec_from_hf_config(path)
    except DataFileError as error:
        message = str(error)
    else:
        message = str(path)
        assert parameter_counts(spec).total_params > 0
    assert message.startswith(str(path))


@pytest.mark.parametrize(
    ("folder", "release"),
    # DeepSeek-V3's config says quant_method 'fp8' (128 x 128 blocks), gpt-oss-120b's 'mxfp4'; Llama
    # 3 8B's has no quantization_config
    [("deepseek-v3", "fp8"), ("gpt-oss-120b", "mxfp4"), ("llama-3-8b", "bf16")],
)
def test_the_release_format_comes_from_quantization_config(folder: str, release: str) -> None:
    spec = spec_from_hf_config(HF_CONFIGS / folder)
    assert spec.release_format == release
    assert spec.release_format == MODELS.get(folder).release_format


@pytest.mark.parametrize(
    ("block", "release"),
    [
        # NVIDIA ModelOpt checkpoints (nvidia/DeepSeek-R1-FP4's hf_quant_config style)
        ({"quant_method": "modelopt", "quant_algo": "NVFP4"}, "nvfp4"),
        ({"quant_method": "gptq", "bits": 4, "group_size": 128}, "int4"),
        ({"quant_method": "awq", "bits": 4}, "int4"),
        # compressed-tensors as Kimi K2 Thinking writes it: 4-bit integer weights in groups of 32
        (
            {
                "quant_method": "compressed-tensors",
                "config_groups": {"group_0": {"weights": {"num_bits": 4, "type": "int", "group_size": 32}}},
            },
            "int4",
        ),
        (
            {
                "quant_method": "compressed-tensors",
                "config_groups": {"g": {"weights": {"num_bits": 8, "type": "float"}}},
            },
            "fp8",
        ),
    ],
)
def test_quantization_blocks_other_tools_write(tmp_path: Path, block: dict[str, Any], release: str) -> None:
    data = json.loads((HF_CONFIGS / "llama-3-8b" / "config.json").read_text())
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**data, "quantization_config": block}))
    assert spec_from_hf_config(path).release_format == release


def test_a_quantization_block_it_cannot_read_is_said_not_guessed(tmp_path: Path) -> None:
    data = json.loads((HF_CONFIGS / "llama-3-8b" / "config.json").read_text())
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**data, "quantization_config": {"quant_method": "bitsandbytes"}}))
    spec = spec_from_hf_config(path)
    assert spec.release_format == "bf16"
    assert "'bitsandbytes' is not a format lightspeed reads" in spec.release_source
    path.write_text(json.dumps({**data, "quantization_config": [4, 8]}))
    spec = spec_from_hf_config(path)
    assert spec.release_format == "bf16"
    assert "not an object lightspeed reads" in spec.release_source
