"""Chunked attention (Llama 4) at chunk boundaries: a context of exactly k chunks holds its whole
last chunk, so the KV a sequence holds never falls while its tokens stay in one chunk.

Llama 4 Scout and Maverick (their config.json text_config): 48 layers, every 4th global (12), the
other 36 chunked at attention_chunk_size 8,192; 8 KV heads of 128, so one token of one layer is
2 (K, V) x 8 x 128 x 2 B = 4,096 B in bf16.
"""

from __future__ import annotations

import numpy as np

from lightspeed.workload import cached_tokens, kv_cache_bytes, load_models, reserved_tokens

MODELS = load_models()
PER_TOKEN_LAYER_BF16 = 2 * 8 * 128 * 2  # bytes
CHUNK = 8192


def test_a_chunked_layer_holds_the_chunk_of_its_last_token() -> None:
    # positions 0..c-1; the last one, c-1, is in chunk (c-1) // C, which holds ((c-1) mod C) + 1
    contexts = [0, 1, 8191, 8192, 8193, 16384, 16385, 20000]
    expected = [0, 1, 8191, 8192, 1, 8192, 1, 3616]
    assert cached_tokens("chunked", CHUNK, contexts).tolist() == expected


def test_what_a_chunked_layer_holds_never_exceeds_what_it_reserves() -> None:
    contexts = np.arange(0, 3 * CHUNK + 2, dtype=np.float64)
    held = cached_tokens("chunked", CHUNK, contexts)
    assert np.all(held <= reserved_tokens("chunked", CHUNK, contexts))
    # within a chunk it grows one token per token: only the first token of a chunk drops it
    steps = np.diff(held)
    assert set(steps.tolist()) == {1.0, 1.0 - CHUNK}
    assert np.flatnonzero(steps < 0).tolist() == [CHUNK, 2 * CHUNK, 3 * CHUNK]


def test_scout_kv_grows_up_to_a_whole_chunk() -> None:
    scout = MODELS.get("llama-4-scout")
    at_8191 = float(kv_cache_bytes(scout, "bf16", 8191))
    at_8192 = float(kv_cache_bytes(scout, "bf16", 8192))
    assert at_8191 == 48 * 8191 * PER_TOKEN_LAYER_BF16
    assert at_8192 == 48 * 8192 * PER_TOKEN_LAYER_BF16  # 1.5 GiB, not the global layers' 384 MiB
    assert at_8192 > at_8191
    # the 8,193rd token starts chunk 1: the chunked layers hold it alone
    assert float(kv_cache_bytes(scout, "bf16", 8193)) == (12 * 8193 + 36 * 1) * PER_TOKEN_LAYER_BF16


def test_maverick_at_its_context_keeps_the_chunked_layers_last_chunk() -> None:
    """Maverick's default length, 1,048,576 tokens, is 128 whole chunks: each chunked layer holds
    the last, 8,192 tokens (36 x 8,192 x 4,096 B = 1.125 GiB on top of the global layers' 48 GiB)."""
    maverick = MODELS.get("llama-4-maverick")
    tokens = maverick.max_seq_len
    assert tokens == 1_048_576
    expected = (12 * tokens + 36 * CHUNK) * PER_TOKEN_LAYER_BF16
    assert float(kv_cache_bytes(maverick, "bf16", tokens)) == expected
    assert expected / 2**30 == 49.125
