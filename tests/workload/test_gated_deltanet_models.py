"""Gated DeltaNet hybrids (Qwen3-Next, Qwen3.5): counts against the published checkpoints and
model cards, one block counted by hand from config.json, the delta rule's FLOPs and state, the
import of their config.json files, and the model files lightspeed refuses."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lightspeed.errors import DataFileError, UserInputError
from lightspeed.workload import (
    AttentionSpec,
    GatedDeltaNetSpec,
    MambaSpec,
    ModelRegistry,
    TransformerSpec,
    describe_model,
    kv_cache_bytes_per_token,
    parameter_counts,
    spec_from_hf_config,
)
from lightspeed.workload.counts import recurrent_mixer_params
from lightspeed.workload.flops import recurrent_scan_forward_flop

NEXT = "qwen3-next-80b-a3b"
FIXTURES = Path(__file__).parents[1] / "fixtures" / "hf_configs"

# Qwen3-Next's config.json: hidden 2048; Gated DeltaNet 16 query/key heads and 32 value heads of 128,
# conv 4; gated attention 16 heads, 2 KV heads of 256; 512 experts of 512, top 10, a shared one
H = 2048
GDN_BLOCK = (
    H * (2 * 16 * 128 + 2 * 32 * 128 + 2 * 32)  # in_proj: q, k, v, z and a, b per value head
    + (2 * 16 * 128 + 32 * 128) * 4  # depthwise conv over q, k, v, no bias
    + 2 * 32  # A_log and dt_bias per value head
    + 128  # the gated RMSNorm, one head's width
    + 32 * 128 * H  # out_proj
)
ATTENTION = H * 16 * 256 * 2 + 2 * H * 2 * 256 + 16 * 256 * H + 2 * 256  # q and its gate, k, v, o; q/k norms
EXPERT = 3 * H * 512
MOE_FIXED = H * 512 + H + EXPERT  # router, the shared expert's gate, the shared expert


def test_a_gated_deltanet_block_counted_by_hand(registry: ModelRegistry) -> None:
    assert recurrent_mixer_params(registry.get(NEXT)) == GDN_BLOCK == 33_718_464


def test_qwen3_next_is_its_checkpoint(registry: ModelRegistry) -> None:
    # Qwen/Qwen3-Coder-Next (the same shapes, no MTP layer): 79,674,391,296 parameters in its
    # safetensors (the Hub's metadata; llama.cpp's n_params reports the same)
    counts = parameter_counts(registry.get(NEXT))
    assert counts.total_params == 79_674_391_296
    embeddings, norms = 2 * 151936 * H, 96 * H + H  # untied; one norm per block and the final one
    active = embeddings + norms + 36 * GDN_BLOCK + 12 * ATTENTION + 48 * (MOE_FIXED + 10 * EXPERT)
    assert counts.active_params == active
    # Qwen/Qwen3-Next-80B-A3B-Instruct holds 81,324,862,720 with its MTP layer (a gated attention
    # layer, an MoE layer, the 2h -> h projection and its norms); the MTP layer has 2 QK norms too
    assert counts.total_params + counts.mtp_params == 81_324_862_720


@pytest.mark.parametrize(
    ("name", "card_total", "card_active", "active_tolerance"),
    [
        # the model cards' rounded figures, each with its vision encoder (not counted here)
        ("qwen3.5-397b-a17b", 397e9, 17e9, 0.03),
        ("qwen3.5-122b-a10b", 122e9, 10e9, 0.03),
        ("qwen3.5-35b-a3b", 35e9, 3e9, 0.2),  # "A3B": 3.45B with the embedding and LM head
    ],
)
def test_qwen35_sizes_match_their_cards(
    registry: ModelRegistry, name: str, card_total: float, card_active: float, active_tolerance: float
) -> None:
    counts = parameter_counts(registry.get(name))
    assert counts.total_params == pytest.approx(card_total, rel=0.015)
    assert counts.active_params == pytest.approx(card_active, rel=active_tolerance)


def test_qwen35_397b_counted_by_hand(registry: ModelRegistry) -> None:
    hidden = 4096  # the model card: 64 value and 16 query/key heads of 128; 32/2 heads of 256
    block = hidden * (2 * 16 * 128 + 2 * 64 * 128 + 2 * 64) + (2 * 16 * 128 + 64 * 128) * 4 + 2 * 64 + 128
    block += 64 * 128 * hidden
    attention = hidden * 32 * 256 * 2 + 2 * hidden * 2 * 256 + 32 * 256 * hidden + 2 * 256  # q/k norms
    moe = hidden * 512 + hidden + 3 * hidden * 1024 + 512 * 3 * hidden * 1024
    total = 2 * 248320 * hidden + 121 * hidden + 45 * block + 15 * attention + 60 * moe
    assert parameter_counts(registry.get("qwen3.5-397b-a17b")).total_params == total


def test_the_delta_rule_flops_and_state(registry: ModelRegistry) -> None:
    model = registry.get(NEXT)
    chunk, key, value = 64, 128, 128
    per_head = 6 * chunk * key + 4 * chunk * value + 2 * chunk**2 / 3 + 6 * key * value
    assert recurrent_scan_forward_flop(model) == pytest.approx(36 * 32 * per_head, rel=1e-15)
    # KV only in the 12 attention blocks: K and V of 2 heads of 256 in 16 bits
    assert kv_cache_bytes_per_token(model, "bf16") == 12 * 2 * 2 * 256 * 2
    # a sequence keeps 32 matrices of 128 x 128 and the conv's last 3 inputs of its 8,192 channels,
    # in 16 bits (its config.json names no mamba_ssm_dtype; vLLM's "auto" takes the model's), in
    # each of the 36 Gated DeltaNet blocks
    summary = describe_model(registry.entry(NEXT))
    assert summary.recurrent_state_bytes_per_sequence == 36 * (32 * 128 * 128 + 3 * 8192) * 2


def test_qwen35_keeps_its_state_in_fp32(registry: ModelRegistry) -> None:
    # Qwen3.5's config.json: mamba_ssm_dtype float32 (vLLM copies it into its cache dtype): 64
    # value heads' 128 x 128 matrices in 4 bytes, the conv's last 3 inputs of 2 x 16 x 128 + 64 x
    # 128 channels in 2, in each of the 45 Gated DeltaNet blocks
    summary = describe_model(registry.entry("qwen3.5-397b-a17b"))
    assert summary.recurrent_state_bytes_per_sequence == 45 * (64 * 128 * 128 * 4 + 3 * 12288 * 2)
    imported = spec_from_hf_config(FIXTURES / "qwen3.5-397b-a17b")
    assert imported.gated_delta_net is not None
    assert imported.gated_delta_net.state_dtype == "float32"
    with pytest.raises(UserInputError, match="state_dtype 'fp8' is not one of"):
        GatedDeltaNetSpec(16, 32, 128, 128, state_dtype="fp8")


def test_config_json_imports_match_the_catalog(registry: ModelRegistry) -> None:
    for folder, name in (("qwen3-next-80b-a3b", NEXT), ("qwen3.5-397b-a17b", "qwen3.5-397b-a17b")):
        imported, catalog = spec_from_hf_config(FIXTURES / folder), registry.get(name)
        assert imported.block_pattern == catalog.block_pattern
        assert imported.gated_delta_net == catalog.gated_delta_net
        assert imported.attention == catalog.attention
        assert imported.moe == catalog.moe
        assert parameter_counts(imported).total_params == parameter_counts(catalog).total_params
        assert imported.num_mtp_modules == catalog.num_mtp_modules == 1


def _next_config(tmp_path: Path, **changes: Any) -> Path:
    data = json.loads((FIXTURES / "qwen3-next-80b-a3b" / "config.json").read_text(encoding="utf-8"))
    data.update(changes)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_config_json_layer_rules(tmp_path: Path) -> None:
    # transformers' rules: layer_types when given; MoE every decoder_sparse_step-th layer not in
    # mlp_only_layers, a dense MLP of intermediate_size otherwise
    types = ["full_attention", "linear_attention"] * 24
    spec = spec_from_hf_config(
        _next_config(tmp_path, layer_types=types, mlp_only_layers=[0], decoder_sparse_step=2)
    )
    assert spec.block_pattern[:8] == "*-GE*-GE"
    assert (spec.num_recurrent_layers, spec.num_attention_layers, spec.num_mlp_layers) == (24, 24, 24)
    dense = spec_from_hf_config(_next_config(tmp_path, num_experts=0))
    assert dense.moe is None
    assert dense.block_pattern == "G-G-G-*-" * 12
    for changes, match in (
        ({"layer_types": ["linear_attention"] * 47}, "48 layers"),
        ({"layer_types": ["sliding_attention"] * 48}, "linear_attention or full_attention"),
        ({"mlp_only_layers": "0"}, "mlp_only_layers"),
        ({"linear_num_value_heads": 24}, "multiple of num_key_heads"),
        ({"linear_key_head_dim": 0}, "linear_key_head_dim"),
    ):
        with pytest.raises(DataFileError, match=match):
            spec_from_hf_config(_next_config(tmp_path, **changes))


def _hybrid(**changes: Any) -> TransformerSpec:
    fields: dict[str, Any] = {
        "name": "t",
        "display_name": "t",
        "num_layers": 4,
        "block_pattern": "GE*E",
        "hidden_size": 256,
        "ffn_hidden_size": 64,
        "vocab_size": 1000,
        "attention": AttentionSpec("gqa", 4, 2, 64, output_gate=True),
        "gated_delta_net": GatedDeltaNetSpec(2, 4, 32, 32),
        "moe": None,
    }
    fields.update(changes)
    return TransformerSpec(**fields)


@pytest.mark.parametrize(
    ("changes", "match"),
    [
        ({"block_pattern": "G-*-", "gated_delta_net": None}, r"G blocks need a \[gated_delta_net\]"),
        ({"block_pattern": "M-*-"}, r"M blocks need a \[mamba\]"),
        (
            {"block_pattern": "GM*-", "mamba": MambaSpec(4, 32, 16, 1)},
            "one recurrent mixer kind",
        ),
        ({"block_pattern": "", "num_layers": 4}, "needs a block_pattern"),
        ({"block_pattern": "GX*-"}, "G \\(Gated DeltaNet\\)"),
    ],
)
def test_malformed_gated_deltanet_hybrids_are_refused(changes: dict[str, Any], match: str) -> None:
    changes.setdefault("block_pattern", "G-*-")
    with pytest.raises(UserInputError, match=match):
        _hybrid(**changes)


@pytest.mark.parametrize(
    ("fields", "match"),
    [
        ({"num_value_heads": 3}, "multiple of num_key_heads"),
        ({"key_head_dim": 0}, "key_head_dim must be 1"),
        ({"chunk_size": 2**20}, "chunk_size must be 1"),
    ],
)
def test_gated_deltanet_shapes_are_bounded(fields: dict[str, int], match: str) -> None:
    shape = {"num_key_heads": 2, "num_value_heads": 4, "key_head_dim": 32, "value_head_dim": 32, **fields}
    with pytest.raises(UserInputError, match=match):
        GatedDeltaNetSpec(**shape)


def test_an_output_gate_doubles_the_query_projection_and_mla_refuses_it() -> None:
    plain = _hybrid(block_pattern="G-*-", attention=AttentionSpec("gqa", 4, 2, 64))
    gated = _hybrid(block_pattern="G-*-")
    assert (
        parameter_counts(gated).attention_params_per_layer
        - parameter_counts(plain).attention_params_per_layer
        == 256 * 4 * 64
    )
    with pytest.raises(UserInputError, match="not MLA"):
        AttentionSpec(
            "mla",
            4,
            4,
            64,
            kv_lora_rank=32,
            qk_nope_head_dim=32,
            qk_rope_head_dim=32,
            v_head_dim=32,
            output_gate=True,
        )


def test_model_show_names_the_mixer_and_its_state(run_cli: Any) -> None:
    result = run_cli("model", "show", NEXT)
    assert result.code == 0, result.err
    assert "36 Gated DeltaNet, 12 attention" in result.out
    assert "Gated DeltaNet state of one sequence" in result.out
    shown = json.loads(run_cli("model", "show", NEXT, "--json").out)
    assert shown["recurrent_state_bytes_per_sequence"] == 36 * (32 * 128 * 128 + 3 * 8192) * 2
    assert shown["parameter_counts"]["recurrent_block_params"] == GDN_BLOCK


def test_model_list_names_each_hybrids_mixer(run_cli: Any) -> None:
    rows = {row["name"]: row for row in json.loads(run_cli("model", "list", "--json").out)["models"]}
    assert rows[NEXT]["mixer"] == "gated_delta_net"
    assert rows["nemotron-3-nano-30b-a3b"]["mixer"] == "mamba"
    assert rows["llama-3-8b"]["mixer"] == ""
    table = run_cli("model", "list").out
    assert "GQA + Gated DeltaNet" in table
    assert "GQA + Mamba-2" in table
