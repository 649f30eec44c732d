"""Attention variants: layer kinds, the KV a sequence holds, and the tokens a query attends to,
against hand calculations from each model's published config.json."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from lightspeed.errors import UserInputError
from lightspeed.workload import (
    attention_forward_flop,
    cached_tokens,
    kv_bytes_per_token_at,
    kv_cache_bytes,
    kv_cache_bytes_per_token,
    kv_cache_reserved_bytes,
    kv_cache_tokens_per_layer,
    layer_attention_kinds,
    layer_groups,
    load_model_file,
    load_models,
    mean_attended_tokens,
    reserved_tokens,
)
from lightspeed.workload.attention import mean_cached_tokens
from specs import tiny_spec

MODELS = load_models()
GIB = 2**30


def test_gemma3_27b_holds_about_2_9_gib_at_32k() -> None:
    """google/gemma-3-27b-it config.json: 62 layers, num_key_value_heads 16, head_dim 128,
    sliding_window 1024, sliding_window_pattern 6 (every 6th layer global)."""
    gemma = MODELS.get("gemma-3-27b")
    per_token_per_layer = 2 * 16 * 128 * 2  # K and V, 16 heads of 128, bf16: 8,192 bytes
    num_global = 62 // 6  # layers 5, 11, ..., 59
    num_local = 62 - num_global
    assert (num_global, num_local) == (10, 52)
    expected = (num_global * 32768 + num_local * 1024) * per_token_per_layer
    assert expected == 3_120_562_176  # 2.906 GiB
    assert float(kv_cache_bytes(gemma, "bf16", 32768)) == expected
    assert expected / GIB == pytest.approx(2.906, abs=1e-3)
    # Every layer full would hold 62 x 32768 x 8192 bytes = 15.5 GiB: what the cache held before.
    full = kv_cache_bytes_per_token(gemma, "bf16") * 32768
    assert full == 62 * 32768 * per_token_per_layer
    assert full / GIB == pytest.approx(15.5)
    # Per layer: the global ones keep the whole context, the local ones their window.
    layers = kv_cache_tokens_per_layer(gemma, 32768)
    assert layers[5] == layers[11] == 32768.0
    assert layers[0] == layers[61] == 1024.0
    assert float(kv_bytes_per_token_at(gemma, "bf16", 32768)) == expected / 32768


def test_gpt_oss_alternates_128_token_windows() -> None:
    """openai/gpt-oss-120b: 36 layers alternating sliding (128) and full, 8 KV heads of 64."""
    oss = MODELS.get("gpt-oss-120b")
    assert layer_attention_kinds(oss)[:2] == ("sliding", "full")
    per_token_per_layer = 2 * 8 * 64 * 1  # fp8 cache: 1,024 bytes
    expected = (18 * 8192 + 18 * 128) * per_token_per_layer
    assert float(kv_cache_bytes(oss, "fp8", 8192)) == expected


def test_mistral_v01_window_and_v03_without() -> None:
    v01, v03 = MODELS.get("mistral-7b-v0.1"), MODELS.get("mistral-7b")
    per_token_per_layer = 2 * 8 * 128 * 2
    assert float(kv_cache_bytes(v01, "bf16", 2000)) == 32 * 2000 * per_token_per_layer
    assert float(kv_cache_bytes(v01, "bf16", 16000)) == 32 * 4096 * per_token_per_layer
    assert float(kv_cache_bytes(v03, "bf16", 16000)) == 32 * 16000 * per_token_per_layer


def test_llama4_chunks_keep_the_current_chunk_and_reserve_one() -> None:
    """Llama 4 Scout: 36 of 48 layers chunk at 8,192 tokens; 8 KV heads of 128."""
    scout = MODELS.get("llama-4-scout")
    assert [(g.kind, g.num_layers, g.span_tokens) for g in layer_groups(scout)] == [
        ("full", 12, None),
        ("chunked", 36, 8192),
    ]
    per_token_per_layer = 2 * 8 * 128 * 2
    # 20,000 tokens: the third chunk started at 16,384 and holds 3,616.
    assert float(kv_cache_bytes(scout, "bf16", 20000)) == (12 * 20000 + 36 * 3616) * per_token_per_layer
    # a request that will reach 20,000 tokens reserves a whole chunk on each chunked layer
    reserved = float(kv_cache_reserved_bytes(scout, "bf16", 20000))
    assert reserved == (12 * 20000 + 36 * 8192) * per_token_per_layer


def test_token_functions_against_counting_positions() -> None:
    positions = np.arange(0, 30000, dtype=np.float64)
    for kind, span in (("full", None), ("sliding", 4096), ("chunked", 8192)):
        cached = cached_tokens(kind, span, positions)
        if kind == "sliding":
            assert (cached[5000], cached[100]) == (4096, 100)
        if kind == "chunked":
            # 8,192 tokens are all in chunk 0 (positions 0..8,191): the whole chunk is held; the
            # 8,193rd token starts chunk 1 alone
            assert (cached[8192], cached[8191], cached[20000]) == (8192, 8191, 20000 - 16384)
        # the mean over a range of contexts is the mean of the per-context values
        counted = float(np.mean(cached[10000:30000]))
        assert float(mean_cached_tokens(kind, span, 10000, 29999)) == pytest.approx(counted, rel=1e-3)
        assert float(reserved_tokens(kind, span, 30000)) == (30000 if span is None else span)


def test_causal_attended_tokens_of_a_sliding_window() -> None:
    # A causal prompt of s = 32768 tokens with window W = 4096: the first W queries attend to
    # their position, the rest to W: mean = (W²/2 + (s - W) W) / s = W - W²/2s = 3840.
    windowed = MODELS.get("mistral-7b-v0.1")
    assert float(mean_attended_tokens(windowed, 32768, causal=True)) == 4096 - 4096**2 / (2 * 32768)
    assert float(mean_attended_tokens(windowed, 32768, causal=False)) == 4096
    # FLOPs: 2 x attended x heads x (d_qk + d_v) per layer, 32 layers.
    expected = 32 * 2 * 3840 * 32 * (128 + 128)
    assert attention_forward_flop(windowed, seq_len=32768, causal=True) == expected
    # A full-attention model attends to half the prompt on average under the mask.
    assert float(mean_attended_tokens(MODELS.get("mistral-7b"), 32768, causal=True)) == 16384


def test_interleaved_attention_flops_count_each_layer() -> None:
    gemma = MODELS.get("gemma-3-27b")  # 10 global, 52 local layers of window 1024, 32 heads of 128
    seq = 8192
    local = 1024 - 1024**2 / (2 * seq)
    mean = (10 * seq / 2 + 52 * local) / 62
    assert float(mean_attended_tokens(gemma, seq, causal=True)) == pytest.approx(mean)
    assert attention_forward_flop(gemma, seq_len=seq, causal=True) == pytest.approx(62 * 2 * mean * 32 * 256)


def test_explicit_layer_types() -> None:
    spec = tiny_spec(sliding_window=16, layer_types=("full", "sliding", "sliding", "full"))
    assert layer_attention_kinds(spec) == ("full", "sliding", "sliding", "full")
    assert float(kv_cache_bytes(spec, "bf16", 100)) == (2 * 100 + 2 * 16) * 2 * 2 * 16 * 2


@pytest.mark.parametrize(
    ("attention", "message"),
    [
        ({"sliding_window": 8, "attention_chunk_size": 8}, "both sliding_window and attention_chunk_size"),
        ({"full_attention_interval": 2}, "no sliding_window or attention_chunk_size"),
        ({"sliding_window": 0}, "sliding_window must be >= 1"),
        ({"sliding_window": 8, "layer_types": ("full", "local", "full", "full")}, "local"),
        ({"layer_types": ("full", "sliding", "full", "full")}, "no sliding_window"),
        ({"attention_chunk_size": 8, "layer_types": ("full",) * 3}, "names 3 layers"),
        (
            {"sliding_window": 8, "full_attention_interval": 2, "layer_types": ("full",) * 4},
            "not both",
        ),
    ],
)
def test_inconsistent_attention_is_refused(attention: dict[str, object], message: str) -> None:
    with pytest.raises(UserInputError, match=message):
        tiny_spec(**attention)


def test_token_functions_refuse_bad_input() -> None:
    with pytest.raises(UserInputError, match="finite token counts"):
        cached_tokens("full", None, -1)
    with pytest.raises(UserInputError, match="not one of"):
        cached_tokens("global", None, 10)
    with pytest.raises(UserInputError, match="span"):
        reserved_tokens("sliding", None, 10)


def test_model_toml_reads_chunk_size_and_layer_types(tmp_path: Path) -> None:
    shipped = Path(__file__).resolve().parents[2] / "src/lightspeed/workload/data/models/llama-4-scout.toml"
    pattern = ", ".join(['"chunked", "full"'] * 24)
    edited = shipped.read_text().replace("full_attention_interval = 4", f"layer_types = [{pattern}]")
    path = tmp_path / "scout.toml"
    path.write_text(edited)
    spec = load_model_file(path).spec
    assert spec.attention.attention_chunk_size == 8192
    assert layer_attention_kinds(spec)[:2] == ("chunked", "full")
    assert spec.attention.layer_types.count("full") == 24
