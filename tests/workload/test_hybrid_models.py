"""Hybrid Mamba-Transformer models (Nemotron 3): shapes, parameter counts, KV cache and scan
FLOPs against the publisher's checkpoint figures and hand calculations from config.json."""

from __future__ import annotations

import dataclasses

import pytest

from lightspeed.errors import UserInputError
from lightspeed.workload import (
    MambaSpec,
    ModelRegistry,
    kv_cache_bytes,
    kv_cache_bytes_per_token,
    layer_attention_kinds,
    parameter_counts,
)
from lightspeed.workload.counts import recurrent_mixer_params
from lightspeed.workload.flops import recurrent_scan_forward_flop

NANO = "nemotron-3-nano-30b-a3b"
SUPER = "nemotron-3-super-120b-a12b"


def test_super_counts_equal_its_checkpoint(registry: ModelRegistry) -> None:
    # nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16 safetensors headers: 123,611,012,096 BF16 weights,
    # 2,942,324,736 of them the MTP layer, 107,898,470,400 routed experts a token does not reach.
    counts = parameter_counts(registry.get(SUPER))
    assert counts.total_params == 123_611_012_096 - 2_942_324_736
    assert counts.mtp_params == 2_942_324_736
    assert counts.active_params == 123_611_012_096 - 2_942_324_736 - 107_898_470_400


def test_nano_counts_match_the_paper(registry: ModelRegistry) -> None:
    # arXiv 2512.20848: 31.6B total parameters, 3.6B active with embeddings
    counts = parameter_counts(registry.get(NANO))
    assert counts.total_params == pytest.approx(31.6e9, rel=0.005)
    assert counts.active_params == pytest.approx(3.6e9, rel=0.01)


def test_a_mamba_block_counted_by_hand(registry: ModelRegistry) -> None:
    # Nano: hidden 2688, 64 heads of 64 (d_inner 4096), 8 groups of state 128, 4 conv taps
    in_proj = 2688 * (2 * 4096 + 2 * 8 * 128 + 64)
    conv = (4096 + 2 * 8 * 128) * (4 + 1)  # taps and bias
    per_head = 3 * 64  # A, D, dt bias
    gated_norm = 4096
    out_proj = 4096 * 2688
    assert recurrent_mixer_params(registry.get(NANO)) == in_proj + conv + per_head + gated_norm + out_proj


def test_only_attention_blocks_keep_a_kv_cache(registry: ModelRegistry) -> None:
    nano = registry.get(NANO)
    assert (nano.num_attention_layers, nano.num_mamba_layers, nano.num_moe_layers) == (6, 23, 23)
    assert layer_attention_kinds(nano) == ("full",) * 6
    # 6 blocks x K and V x 2 KV heads x 128 x 2 bytes
    assert kv_cache_bytes_per_token(nano, "bf16") == 6 * 2 * 2 * 128 * 2
    assert float(kv_cache_bytes(nano, "bf16", 32768)) == 32768 * 6 * 2 * 2 * 128 * 2


def test_scan_flops_by_hand(registry: ModelRegistry) -> None:
    # chunk 128: C·Bᵀ 2·G·Q·N + (L∘CBᵀ)·X 2·H·Q·P + chunk states and output 4·H·N·P, per block
    per_block = 2 * 8 * 128 * 128 + 2 * 64 * 128 * 64 + 4 * 64 * 128 * 64
    assert recurrent_scan_forward_flop(registry.get(NANO)) == 23 * per_block
    assert recurrent_scan_forward_flop(registry.get("llama-3-8b")) == 0.0


def test_a_plain_model_keeps_its_shares(registry: ModelRegistry) -> None:
    llama = registry.get("llama-3-8b")
    assert llama.block_shares == (1.0, 0.0, 1.0)
    assert (llama.num_attention_layers, llama.num_mamba_layers) == (llama.num_layers, 0)


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"block_pattern": "MEMEM*"}, "names 6 blocks"),
        ({"block_pattern": "X" * 52}, "'X'"),
        ({"mamba": None}, "need a [mamba] table"),
        ({"block_pattern": ""}, "needs a block_pattern"),
        ({"moe": None}, "E blocks need a [moe] table"),
    ],
)
def test_a_malformed_hybrid_says_what_is_wrong(
    registry: ModelRegistry, change: dict[str, object], words: str
) -> None:
    with pytest.raises(UserInputError) as raised:
        dataclasses.replace(registry.get(NANO), **change)
    assert words in str(raised.value)


@pytest.mark.parametrize(
    "field", ["num_heads", "head_dim", "state_size", "num_groups", "conv_kernel", "chunk_size"]
)
@pytest.mark.parametrize("value", [0, -1, 2**15])
def test_mamba_shapes_are_bounded(field: str, value: int) -> None:
    shape = {"num_heads": 64, "head_dim": 64, "state_size": 128, "num_groups": 8}
    shape[field] = value
    with pytest.raises(UserInputError, match=f"mamba {field}"):
        MambaSpec(**shape)


def test_heads_split_into_whole_groups() -> None:
    with pytest.raises(UserInputError, match="multiple of num_groups"):
        MambaSpec(num_heads=60, head_dim=64, state_size=128, num_groups=8)


def test_a_nemotron_h_config_json_imports(registry: ModelRegistry) -> None:
    from pathlib import Path

    from lightspeed.workload import spec_from_hf_config

    imported = spec_from_hf_config(Path(__file__).parents[1] / "fixtures/hf_configs/nemotron-3-super")
    catalog = registry.get(SUPER)
    assert imported.block_pattern == catalog.block_pattern
    assert (imported.mamba, imported.moe, imported.attention) == (
        catalog.mamba,
        catalog.moe,
        catalog.attention,
    )
    # the same checkpoint figures as the catalog entry
    counts = parameter_counts(imported)
    assert (counts.total_params, counts.mtp_params) == (123_611_012_096 - 2_942_324_736, 2_942_324_736)


def test_model_show_states_what_a_sequence_keeps_in_its_mamba_blocks(registry: ModelRegistry) -> None:
    from lightspeed.workload import describe_model

    # 23 blocks x (FP32 state of 64 heads x 64 x 128 + 16-bit window of 3 inputs of 6,144 channels)
    summary = describe_model(registry.entry(NANO))
    assert summary.recurrent_state_bytes_per_sequence == 23 * (64 * 64 * 128 * 4 + 3 * (4096 + 2048) * 2)
    assert describe_model(registry.entry("llama-3-8b")).recurrent_state_bytes_per_sequence == 0.0
