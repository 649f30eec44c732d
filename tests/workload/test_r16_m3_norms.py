"""Norms per layer and QK norms: exact parameter counts against the checkpoints, counted by hand
from each model's config.json (shapes) and transformers' modeling code (which norms a layer has)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lightspeed.errors import DataFileError, UserInputError
from lightspeed.sol.core.shapes import layer_shapes
from lightspeed.workload import AttentionSpec, ModelRegistry, TransformerSpec, parameter_counts
from lightspeed.workload.model_file import parse_model

FIXTURES = Path(__file__).parents[1] / "fixtures" / "hf_configs"


def _gqa(hidden: int, heads: int, kv_heads: int, head_dim: int) -> int:
    """Q, K, V and O projections, no biases."""
    return hidden * heads * head_dim + 2 * hidden * kv_heads * head_dim + heads * head_dim * hidden


def test_gemma_2_2b_has_four_norms_a_layer(registry: ModelRegistry) -> None:
    # config.json: hidden 2304, GeGLU 9216, 26 layers, 8 heads, 4 KV heads of 256, vocab 256000 tied;
    # Gemma2DecoderLayer: input, post-attention, pre- and post-feedforward RMSNorms
    layer = _gqa(2304, 8, 4, 256) + 3 * 2304 * 9216 + 4 * 2304
    total = 256000 * 2304 + 26 * layer + 2304
    assert total == 2_614_341_888  # the checkpoint's safetensors total
    assert parameter_counts(registry.get("gemma-2-2b")).total_params == total


def test_gemma_3_1b_has_four_norms_and_qk_norms(registry: ModelRegistry) -> None:
    # config.json: hidden 1152, GeGLU 6912, 26 layers, 4 heads, 1 KV head of 256, vocab 262144 tied;
    # Gemma3Attention: q_norm and k_norm of head_dim
    layer = _gqa(1152, 4, 1, 256) + 2 * 256 + 3 * 1152 * 6912 + 4 * 1152
    total = 262144 * 1152 + 26 * layer + 1152
    assert total == 999_885_952  # the checkpoint's safetensors total
    assert parameter_counts(registry.get("gemma-3-1b")).total_params == total


def test_falcon_7b_has_one_layernorm_a_layer(registry: ModelRegistry) -> None:
    # config.json: hidden 4544, 32 layers, 71 heads and 1 KV head of 64, GELU MLP of 4 x 4544, vocab
    # 65024 tied, no biases; parallel_attn without new_decoder_architecture: input_layernorm only
    # (weight and bias), and the final LayerNorm
    layer = 4544 * (71 + 2) * 64 + 71 * 64 * 4544 + 2 * 4544 * 18176 + 2 * 4544
    total = 65024 * 4544 + 32 * layer + 2 * 4544
    assert total == 6_921_720_704  # the checkpoint's safetensors total
    assert parameter_counts(registry.get("falcon-7b")).total_params == total


def test_qwen3_counts_its_qk_norms(registry: ModelRegistry) -> None:
    # Qwen3-0.6B config.json: hidden 1024, SwiGLU 3072, 28 layers, 16 heads, 8 KV heads of 128, vocab
    # 151936 tied; Qwen3Attention: q_norm and k_norm of head_dim
    layer = _gqa(1024, 16, 8, 128) + 2 * 128 + 3 * 1024 * 3072 + 2 * 1024
    total = 151936 * 1024 + 28 * layer + 1024
    # its safetensors hold 751,632,384: the tied LM head stored a second time
    assert total + 151936 * 1024 == 751_632_384
    assert parameter_counts(registry.get("qwen3-0.6b")).total_params == total


def test_qwen3_next_is_its_checkpoint(registry: ModelRegistry) -> None:
    # Qwen3-Coder-Next's safetensors: 79,674,391,296; Qwen3-Next-80B-A3B with its MTP layer
    # 81,324,862,720 (the QK norms of the 12 attention blocks and of the MTP layer now counted)
    counts = parameter_counts(registry.get("qwen3-next-80b-a3b"))
    assert counts.total_params == 79_674_391_296
    assert counts.total_params + counts.mtp_params == 81_324_862_720


@pytest.mark.parametrize(
    ("folder", "name"),
    [("gemma-2-9b", "gemma-2-9b"), ("gemma-3-27b", "gemma-3-27b"), ("qwen3-30b-a3b", "qwen3-30b-a3b")],
)
def test_an_imported_config_gives_the_records_norms(registry: ModelRegistry, folder: str, name: str) -> None:
    from lightspeed.workload import spec_from_hf_config

    imported, record = spec_from_hf_config(FIXTURES / folder), registry.get(name)
    assert imported.num_norms_per_layer == record.num_norms_per_layer
    assert imported.attention.qk_norm == record.attention.qk_norm
    assert parameter_counts(imported).total_params == parameter_counts(record).total_params


def test_the_engine_shapes_hold_the_same_norms(registry: ModelRegistry) -> None:
    gemma = registry.get("gemma-3-1b")
    assert layer_shapes(gemma).num_norm_params == 4 * 1152 + 2 * 256
    # Qwen3-Next: one RMSNorm of 2048 per block; the 12 attention blocks' 2 x 256 QK-norm weights
    # spread over its 96 blocks
    assert layer_shapes(registry.get("qwen3-next-80b-a3b")).num_norm_params == 2048 + 12 * 512 // 96


def test_the_default_is_two_norms_and_one_per_hybrid_block(registry: ModelRegistry) -> None:
    assert registry.get("llama-3-8b").num_norms_per_layer == 2
    assert registry.get("nemotron-h-56b").num_norms_per_layer == 1


def test_bad_norm_fields_are_refused(tmp_path: Path, registry: ModelRegistry) -> None:
    with pytest.raises(UserInputError, match="norms_per_layer must be 1 to 8"):
        TransformerSpec("t", "t", 2, 64, 256, 100, AttentionSpec("mha", 4, 4, 16), norms_per_layer=9)
    with pytest.raises(UserInputError, match="qk_norm"):
        AttentionSpec(
            "mla",
            4,
            4,
            24,
            kv_lora_rank=8,
            qk_nope_head_dim=16,
            qk_rope_head_dim=8,
            v_head_dim=16,
            qk_norm=True,
        )
    data = {
        "schema_version": 1,
        "kind": "model",
        "name": "tiny",
        "source": "a",
        "architecture": {
            "num_layers": 2,
            "hidden_size": 64,
            "ffn_hidden_size": 256,
            "vocab_size": 100,
            "max_seq_len": 128,
            "norms_per_layer": 0,
        },
        "attention": {"kind": "mha", "num_heads": 4},
        "sources": {"a": {"title": "t", "url": "https://example.com"}},
    }
    with pytest.raises(DataFileError, match="norms_per_layer must be 1 to 8"):
        parse_model(tmp_path / "tiny.toml", data)
