"""Parameter counts against published totals and hand calculations; bytes per precision."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lightspeed.errors import UnknownNameError, UserInputError
from lightspeed.workload import (
    AttentionSpec,
    MoESpec,
    TransformerSpec,
    kv_cache_bytes_per_token,
    load_models,
    optimizer_state_bytes,
    parameter_counts,
    weight_bytes,
)

MODELS = load_models()


def _total(name: str) -> int:
    return parameter_counts(MODELS.get(name)).total_params


def _active(name: str) -> int:
    return parameter_counts(MODELS.get(name)).active_params


# (model, published total, where it is published). Tolerance 0.5% (issue 2).
PUBLISHED_TOTALS = [
    ("llama-3-8b", 8.03e9, "Hugging Face model page of meta-llama/Meta-Llama-3-8B: 8.03B params"),
    ("llama-3-70b", 70.6e9, "Hugging Face model page of meta-llama/Meta-Llama-3-70B: 70.6B params"),
    ("llama-3-405b", 405.9e9, "Llama 3.1 405B safetensors total as quoted in issue 2: 405.9B"),
    ("mixtral-8x7b", 46.7e9, "Mistral AI, 'Mixtral of experts' (2023): 46.7B total parameters"),
    ("deepseek-v3", 671e9, "DeepSeek-V3 Technical Report (arXiv 2412.19437): 671B total, main model"),
    ("gpt-3-175b", 175e9, "Brown et al. 2020, Table 2.1: 175.0B"),
    ("llama-2-70b", 68.98e9, "Hugging Face model page of meta-llama/Llama-2-70b-hf: 69B (68.98B)"),
    ("llama-2-7b", 6.74e9, "Hugging Face model page of meta-llama/Llama-2-7b-hf: 6.74B params"),
    ("dense-100t", 100e12, "the seed's claim 4: a 100-trillion-parameter dense model"),
    ("gpt-moe-1.8t", 1.8e12, "NVIDIA: GPT-MoE-1.8T"),
]


@pytest.mark.parametrize(
    ("name", "published", "source"), PUBLISHED_TOTALS, ids=[p[0] for p in PUBLISHED_TOTALS]
)
def test_total_matches_published_within_half_a_percent(name: str, published: float, source: str) -> None:
    assert _total(name) == pytest.approx(published, rel=0.005), source


def test_mixtral_active_is_mistrals_12_9b() -> None:
    # Mistral AI, "Mixtral of experts": "uses 12.9B parameters per token".
    assert _active("mixtral-8x7b") == pytest.approx(12.9e9, rel=0.005)


def test_mpt_totals_match_llm_foundry_numparams_exactly() -> None:
    # mosaicml/llm-foundry scripts/train/benchmarking/README.md, H100 BF16 table, NumParams at seq 2048.
    assert _total("mpt-7b") == 6_658_859_008
    assert _total("mpt-13b") == 12_853_954_560
    assert _total("mpt-70b") == 64_862_437_376


def test_llama_3_8b_by_hand() -> None:
    h, layers, ffn, vocab, kv_width = 4096, 32, 14336, 128256, 8 * 128
    attention = h * h + 2 * h * kv_width + h * h
    mlp = 3 * h * ffn
    per_layer = attention + mlp + 2 * h  # two RMSNorms
    expected = 2 * vocab * h + layers * per_layer + h  # embedding, untied head, final norm
    assert expected == 8_030_261_248
    counts = parameter_counts(MODELS.get("llama-3-8b"))
    assert counts.total_params == expected
    assert counts.active_params == expected
    assert counts.attention_params_per_layer == attention
    assert counts.lm_head_params == vocab * h
    assert counts.non_embedding_params == expected - 2 * vocab * h


def test_deepseek_v3_by_hand_from_its_config() -> None:
    # Fields of deepseek-ai/DeepSeek-V3 config.json; MLA shapes of modeling_deepseek.py.
    h, heads, q_rank, kv_rank, nope, rope, v = 7168, 128, 1536, 512, 128, 64, 128
    attention = (
        h * q_rank
        + q_rank
        + q_rank * heads * (nope + rope)  # q_a_proj, q_a_layernorm, q_b_proj
        + h * (kv_rank + rope)
        + kv_rank  # kv_a_proj_with_mqa, kv_a_layernorm
        + kv_rank * heads * (nope + v)  # kv_b_proj
        + heads * v * h  # o_proj
    )
    expert = 3 * h * 2048
    dense_layer = attention + 3 * h * 18432 + 2 * h
    moe_layer = attention + 256 * expert + expert + 256 * h + 256 + 2 * h  # + shared, router, expert bias
    moe_active = attention + 8 * expert + expert + 256 * h + 256 + 2 * h
    embeddings = 2 * 129280 * h
    total = embeddings + 3 * dense_layer + 58 * moe_layer + h
    active = embeddings + 3 * dense_layer + 58 * moe_active + h
    counts = parameter_counts(MODELS.get("deepseek-v3"))
    assert counts.attention_params_per_layer == attention == 187_107_328
    assert counts.total_params == total == 671_026_419_200
    assert counts.active_params == active == 37_552_297_472
    assert counts.num_dense_layers == 3
    assert counts.num_moe_layers == 58
    # The MTP module (layer 61: an MoE layer, eh_proj 2h->h, three RMSNorms) is excluded above.
    assert counts.mtp_params == moe_layer + 2 * h * h + 3 * h


def test_deepseek_v3_active_is_within_rounding_of_the_published_37b() -> None:
    # The report says 37B activated; README_WEIGHTS.md says 36.7B including 0.9B embedding and
    # 0.9B head. The config's shapes give 37.55B under the convention that reproduces Mixtral's
    # 12.9B: 1.5% above the report's rounded figure, so 0.5% cannot hold here (see docs/workload.md).
    active = _active("deepseek-v3")
    assert 37e9 <= active < 38e9
    assert active == pytest.approx(37e9, rel=0.016)


def test_gpt3_by_hand_with_biases_layernorm_and_learned_positions() -> None:
    h, layers, vocab, context = 12288, 96, 50257, 2048
    per_layer = 12 * h * h + 13 * h  # qkv, o, 4h MLP weights; 9h biases; 2 LayerNorms of 2h
    expected = layers * per_layer + vocab * h + context * h + 2 * h  # tied head, final LayerNorm
    assert _total("gpt-3-175b") == expected


def test_dense_models_have_all_parameters_active() -> None:
    for name in ("llama-3-70b", "gpt-3-175b", "dense-100t"):
        counts = parameter_counts(MODELS.get(name))
        assert counts.active_params == counts.total_params
        assert counts.routed_expert_params == 0


def test_moe_counts_add_up() -> None:
    counts = parameter_counts(MODELS.get("mixtral-8x7b"))
    assert counts.routed_expert_params == 32 * 8 * 3 * 4096 * 14336
    assert counts.active_routed_expert_params == 32 * 2 * 3 * 4096 * 14336
    assert counts.total_params - counts.active_params == counts.routed_expert_params - (
        counts.active_routed_expert_params
    )
    parts = (
        counts.embedding_params
        + counts.lm_head_params
        + counts.attention_params
        + counts.dense_mlp_params
        + counts.routed_expert_params
        + counts.shared_expert_params
        + counts.router_params
        + counts.norm_params
    )
    assert parts == counts.total_params


def test_weight_bytes_per_precision() -> None:
    spec = MODELS.get("dense-100t")
    num_params = _total("dense-100t")
    assert weight_bytes(spec, "bf16") == 2 * num_params
    assert weight_bytes(spec, "fp32") == 4 * num_params
    assert weight_bytes(spec, "fp8") == num_params
    # NVFP4: 4-bit values plus one 8-bit scale per 16 (NVIDIA); MXFP4: one 8-bit scale per 32 (OCP MX).
    assert weight_bytes(spec, "nvfp4") == pytest.approx(num_params * (0.5 + 1 / 16))
    assert weight_bytes(spec, "mxfp4") == pytest.approx(num_params * (0.5 + 1 / 32))
    # The seed: 100T parameters at 16 bits = 200 TB = 181.9 TiB.
    assert weight_bytes(spec, "bf16") / 1e12 == pytest.approx(200, rel=0.001)
    assert weight_bytes(spec, "bf16") / 2**40 == pytest.approx(181.9, abs=0.05)


def test_kv_cache_per_token() -> None:
    # Llama 3 8B: 2 (K, V) x 32 layers x 8 KV heads x 128 x 2 bytes = 128 KiB.
    assert kv_cache_bytes_per_token(MODELS.get("llama-3-8b"), "bf16") == 131072
    # Llama 2 70B: 2 x 80 x 8 x 128 x 2 = 320 KiB; Llama 2 7B (MHA): 2 x 32 x 32 x 128 x 2 = 512 KiB.
    assert kv_cache_bytes_per_token(MODELS.get("llama-2-70b"), "bf16") == 327680
    assert kv_cache_bytes_per_token(MODELS.get("llama-2-7b"), "fp16") == 524288
    # DeepSeek-V3 MLA caches the 512 latent + 64 RoPE key per layer: 61 x 576 x 2 bytes.
    assert kv_cache_bytes_per_token(MODELS.get("deepseek-v3"), "bf16") == 61 * 576 * 2
    assert kv_cache_bytes_per_token(MODELS.get("deepseek-v3"), "fp8") == 61 * 576


def test_adam_mixed_precision_is_12_bytes_per_param_beside_weights_and_grads() -> None:
    # ZeRO paper section 3.1: fp32 master weights, momentum and variance = 12 bytes/param.
    state = optimizer_state_bytes(MODELS.get("llama-3-8b"), optimizer="adam", master_weights=True)
    assert state.bytes_per_param == 12
    assert state.total_bytes == 12 * 8_030_261_248
    no_master = optimizer_state_bytes(MODELS.get("llama-3-8b"), optimizer="sgd", master_weights=False)
    assert no_master.bytes_per_param == 4


def test_unknown_optimizer_names_the_closest() -> None:
    with pytest.raises(UnknownNameError, match="adamw"):
        optimizer_state_bytes(MODELS.get("llama-3-8b"), optimizer="adamww")


def test_unknown_precision_is_a_user_error() -> None:
    with pytest.raises(UserInputError, match="unknown precision"):
        weight_bytes(MODELS.get("llama-3-8b"), "bf17")


def _dense(*, layers: int, hidden: int, heads: int, kv_heads: int, ffn: int, vocab: int) -> TransformerSpec:
    kind = "mha" if kv_heads == heads else "mqa" if kv_heads == 1 else "gqa"
    return TransformerSpec(
        name="prop",
        display_name="prop",
        num_layers=layers,
        hidden_size=hidden,
        ffn_hidden_size=ffn,
        vocab_size=vocab,
        attention=AttentionSpec(kind=kind, num_heads=heads, num_kv_heads=kv_heads, head_dim=hidden // heads),
    )


shapes = st.tuples(
    st.integers(1, 64),
    st.sampled_from([64, 128, 256, 512]),
    st.sampled_from([(8, 8), (8, 2), (8, 1), (4, 4)]),
    st.integers(1, 4096),
    st.integers(1, 100_000),
)


@settings(max_examples=60, deadline=None)
@given(shapes, st.integers(1, 16), st.integers(1, 4))
def test_property_moe_active_between_dense_parts_and_total(shape, num_experts, top_k) -> None:  # type: ignore[no-untyped-def]
    layers, hidden, (heads, kv_heads), ffn, vocab = shape
    dense = _dense(layers=layers, hidden=hidden, heads=heads, kv_heads=kv_heads, ffn=ffn, vocab=vocab)
    top_k = min(top_k, num_experts)
    moe = dataclasses.replace(
        dense, moe=MoESpec(num_routed_experts=num_experts, top_k=top_k, expert_ffn_hidden_size=ffn)
    )
    dense_counts, moe_counts = parameter_counts(dense), parameter_counts(moe)
    # A token through top_k experts of the dense MLP's size carries top_k MLPs plus the router.
    router = layers * hidden * num_experts
    mlp = 3 * hidden * ffn
    assert moe_counts.active_params == dense_counts.total_params + layers * (top_k - 1) * mlp + router
    assert moe_counts.total_params == dense_counts.total_params + layers * (num_experts - 1) * mlp + router
    assert moe_counts.active_params <= moe_counts.total_params


@settings(max_examples=60, deadline=None)
@given(shapes)
def test_property_one_more_layer_adds_one_layers_worth(shape) -> None:  # type: ignore[no-untyped-def]
    layers, hidden, (heads, kv_heads), ffn, vocab = shape
    smaller = parameter_counts(
        _dense(layers=layers, hidden=hidden, heads=heads, kv_heads=kv_heads, ffn=ffn, vocab=vocab)
    )
    larger = parameter_counts(
        _dense(layers=layers + 1, hidden=hidden, heads=heads, kv_heads=kv_heads, ffn=ffn, vocab=vocab)
    )
    head_dim = hidden // heads
    one_layer = (
        2 * hidden * heads * head_dim + 2 * hidden * kv_heads * head_dim + 3 * hidden * ffn + 2 * hidden
    )
    assert larger.total_params - smaller.total_params == one_layer


def test_llama_4_maverick_by_hand_from_its_config() -> None:
    # meta-llama/Llama-4-Maverick-17B-128E-Instruct config.json text_config: MoE in every second
    # layer (interleave_moe_layer_step 2), 128 experts top-1 plus one shared expert of 8192, dense
    # MLP of 16384 (intermediate_size_mlp) in the others; Meta's card: 400B total, 17B active.
    h, vocab, kv_width = 5120, 202048, 8 * 128
    attention = h * h + 2 * h * kv_width + h * h
    expert = 3 * h * 8192
    dense_layer = attention + 3 * h * 16384 + 2 * h
    moe_layer = attention + 128 * expert + expert + 128 * h + 2 * h  # routed, shared, router, norms
    moe_active = attention + expert + expert + 128 * h + 2 * h
    embeddings = 2 * vocab * h
    counts = parameter_counts(MODELS.get("llama-4-maverick"))
    assert counts.num_moe_layers == 24
    assert counts.total_params == embeddings + 24 * dense_layer + 24 * moe_layer + h
    assert counts.active_params == embeddings + 24 * dense_layer + 24 * moe_active + h
    assert counts.total_params == pytest.approx(400e9, rel=0.005)
    assert counts.active_params == pytest.approx(17e9, rel=0.015)


def test_kimi_k2_is_deepseek_v3_with_64_heads_384_experts_and_one_dense_layer() -> None:
    # moonshotai/Kimi-K2-Instruct config.json; the card says 1T total (rounded), 32B activated.
    h, heads, q_rank, kv_rank, nope, rope, v = 7168, 64, 1536, 512, 128, 64, 128
    attention = (
        h * q_rank + q_rank + q_rank * heads * (nope + rope)
        + h * (kv_rank + rope) + kv_rank + kv_rank * heads * (nope + v)
        + heads * v * h
    )  # fmt: skip
    expert = 3 * h * 2048
    dense_layer = attention + 3 * h * 18432 + 2 * h
    moe_layer = attention + 384 * expert + expert + 384 * h + 384 + 2 * h
    moe_active = attention + 8 * expert + expert + 384 * h + 384 + 2 * h
    embeddings = 2 * 163840 * h
    counts = parameter_counts(MODELS.get("kimi-k2"))
    assert counts.total_params == embeddings + dense_layer + 60 * moe_layer + h
    assert counts.active_params == embeddings + dense_layer + 60 * moe_active + h
    assert 1.0e12 < counts.total_params < 1.05e12
    assert counts.active_params == pytest.approx(32e9, rel=0.03)


def test_bloom_is_hugging_faces_count_less_the_embedding_layernorm() -> None:
    # bigscience/bloom has 176,247,271,424 parameters (Hugging Face's safetensors index); the
    # registry does not model BLOOM's word-embedding LayerNorm (weight + bias of 14,336 each).
    assert _total("bloom-176b") == 176_247_271_424 - 2 * 14336


def test_opt_175b_by_hand_with_biases_relu_and_learned_positions() -> None:
    # Zhang et al. 2022 Table 1: 96 layers, 96 heads, d_model 12288; ReLU MLP of 4 d_model with
    # biases everywhere, LayerNorms, 2,048 learned positions, tied 50,272-token embedding.
    h, layers, vocab = 12288, 96, 50272
    attention = 4 * h * h + 4 * h
    mlp = 2 * h * 4 * h + 4 * h + h
    per_layer = attention + mlp + 4 * h  # two LayerNorms with bias
    expected = vocab * h + 2048 * h + layers * per_layer + 2 * h
    assert _total("opt-175b") == expected
    assert expected == pytest.approx(175e9, rel=0.005)


def test_mosaicml_mpt_checkpoints_count_from_their_hf_configs() -> None:
    # mosaicml/mpt-7b config.json: d_model 4096, 32 layers, expansion_ratio 4, vocab 50432, ALiBi (no
    # position table), no biases, tied embeddings. Per layer: Wqkv + out_proj 4 h^2, up + down 2 x 4h x h,
    # two LayerNorms (counted 2h each); plus the embedding and a final LayerNorm.
    def by_hand(h: int, layers: int, vocab: int) -> int:
        return vocab * h + layers * (4 * h * h + 2 * h * 4 * h + 2 * 2 * h) + 2 * h

    assert _total("mosaicml-mpt-7b") == by_hand(4096, 32, 50432) == 6_649_552_896
    assert _total("mosaicml/mpt-7b") == pytest.approx(6.7e9, rel=0.01)  # the model card's "6.7B"
    # mosaicml/mpt-30b config.json: d_model 7168, 48 layers, 64 heads, vocab 50432, max_seq_len 8192.
    assert _total("mpt-30b") == by_hand(7168, 48, 50432) == 29_957_896_192
    assert MODELS.get("mpt-30b").max_seq_len == 8192
    # llm-foundry's benchmark yaml of the same name keeps learned positions and biases (its table: 6.66B).
    assert _total("mpt-7b") == 6_658_859_008
    assert _total("mpt-7b") - _total("mosaicml-mpt-7b") > 2048 * 4096  # at least the position table
