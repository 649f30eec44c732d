"""FLOP conventions against peer tools' outputs, papers and hand calculations."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lightspeed.errors import UnknownNameError, UserInputError
from lightspeed.workload import (
    CONVENTIONS,
    flops_per_token,
    load_models,
    parameter_counts,
    spec_from_hf_config,
    training_flop,
)

MODELS = load_models()
HF_CONFIGS = Path(__file__).resolve().parents[1] / "fixtures" / "hf_configs"
VERL_BATCH = (512, 1024, 2048)  # sequence lengths of verl's FlopsCounter test batch


def _batch_flop(spec, seq_lens, convention="6N+attention"):  # type: ignore[no-untyped-def]
    """Training FLOPs of one batch of sequences: each token costs the per-token figure at its length."""
    return sum(s * flops_per_token(spec, seq_len=s, convention=convention).training_flop for s in seq_lens)


def test_6n_attention_matches_verl_flops_counter_on_llama_2_7b() -> None:
    # volcengine/verl tests/utils/test_flops_counter.py, "llama" (llama2-7B) case:
    # 6*(vocab*hidden*2 + layer*(...))*token_sum + 12*sum(seqlen^2)*layer*head*head_dim.
    expected = 153555818250240
    assert _batch_flop(MODELS.get("llama-2-7b"), VERL_BATCH) == pytest.approx(expected, rel=1e-4)


def test_6n_attention_matches_verl_flops_counter_on_qwen2_7b() -> None:
    # Same verl test, "qwen2" case (Qwen2.5-7B-Instruct shapes, the same as Qwen2-7B's config).
    # verl leaves out norms and the Q/K/V biases (0.004% of N): hence rel=1e-4.
    spec = spec_from_hf_config(HF_CONFIGS / "qwen2-7b" / "config.json")
    assert _batch_flop(spec, VERL_BATCH) == pytest.approx(170388331954176, rel=1e-4)
    assert _batch_flop(spec, (4096, 4096, 4096)) == pytest.approx(622070178250752, rel=1e-4)


def test_deepseek_v3_matmul_flops_match_verl_and_attention_counts_v_heads_exactly() -> None:
    # verl's deepseek_v3 case counts attention as 12*s^2*L*H*192 (the Q/K head size for both QK^T
    # and AV); lightspeed uses d_qk = 192 for QK^T and d_v = 128 for AV, i.e. a mean head of 160.
    spec = MODELS.get("deepseek-v3")
    verl_total = 906535995703296
    verl_attention = 12 * sum(s * s for s in VERL_BATCH) * 61 * 192 * 128
    ours_total = _batch_flop(spec, VERL_BATCH)
    ours_attention = sum(
        s * flops_per_token(spec, seq_len=s, convention="6N+attention").attention_training_flop
        for s in VERL_BATCH
    )
    assert ours_total - ours_attention == pytest.approx(verl_total - verl_attention, rel=1e-4)
    assert ours_attention == pytest.approx(verl_attention * 160 / 192, rel=1e-12)


def test_6n_attention_matches_llm_foundry_model_flops_for_mpt_7b() -> None:
    # mosaicml/llm-foundry benchmarking README, H100 BF16, MPT-7B seq 2048 on 8 GPUs:
    # "Model TFLOP" 4.595096E+14 at 10643 tokens/s/GPU, with flops = 6N + 12*L*d*s per token.
    per_token = flops_per_token(MODELS.get("mpt-7b"), seq_len=2048, convention="6N+attention")
    assert per_token.training_flop * 10643 == pytest.approx(4.595096e14, rel=2e-4)
    assert per_token.training_flop == 6 * 6_658_859_008 + 12 * 32 * 4096 * 2048


def test_megatron_formula_by_hand_for_gpt3() -> None:
    spec = dataclasses.replace(MODELS.get("gpt-3-175b"), vocab_size=51200)
    layers, h, s, v = 96, 12288, 2048, 51200
    no_recompute = 72 * layers * h**2 * (1 + s / (6 * h) + v / (12 * layers * h))
    full_recompute = 96 * layers * h**2 * (1 + s / (6 * h) + v / (16 * layers * h))
    assert flops_per_token(spec, seq_len=s, convention="megatron").training_flop == pytest.approx(
        no_recompute
    )
    result = flops_per_token(spec, seq_len=s, convention="megatron", recompute=True)
    assert result.training_flop == pytest.approx(full_recompute)
    assert "96 × 96 × 12288²" in result.substituted
    assert result.notes == ()  # GPT-3 is the shape the formula assumes


def test_megatron_formula_reproduces_narayanan_et_al_training_time() -> None:
    # Narayanan et al. SC21, Table 2 (PTD): GPT 175B (96 layers, h 12288, V 51200, s 2048) on 384
    # A100s at 153 TFLOP/s per GPU (counting the recompute pass) trains 300B tokens in 84 days.
    spec = dataclasses.replace(MODELS.get("gpt-3-175b"), vocab_size=51200)
    result = training_flop(spec, num_tokens=300e9, seq_len=2048, convention="megatron", recompute=True)
    days = result.total_flop / (153e12 * 384) / 86400
    assert days == pytest.approx(84, rel=0.015)


def test_megatron_agrees_with_6n_attention_on_a_gpt_shape() -> None:
    spec = MODELS.get("gpt-3-175b")
    megatron = flops_per_token(spec, seq_len=2048, convention="megatron").training_flop
    palm = flops_per_token(spec, seq_len=2048, convention="6N+attention").training_flop
    # The two differ only by biases, norms and the learned position table (0.02%).
    assert megatron == pytest.approx(palm, rel=5e-4)


def test_megatron_warns_on_non_gpt_shapes() -> None:
    notes = flops_per_token(MODELS.get("mixtral-8x7b"), seq_len=4096, convention="megatron").notes
    assert any("GPT shape" in note and "MoE" in note for note in notes)


def test_seed_100t_on_29t_tokens_is_1_74e28_and_not_1_2e29() -> None:
    # Seed claim 4: 6 x 1e14 x 2.9e13 = 1.74e28; the notes' "about 1.2e29" does not follow.
    result = training_flop(MODELS.get("dense-100t"), num_tokens=29e12, claimed_flop=1.2e29)
    assert result.total_flop == pytest.approx(6 * 1e14 * 2.9e13, rel=0.001)
    assert result.formula == "C = 6·N·D"
    assert result.substituted.endswith("= 1.740e28 FLOP")
    claim = result.claim
    assert claim is not None
    assert not claim.agrees
    assert claim.ratio == pytest.approx(1.2e29 / 1.74e28, rel=0.001)
    assert claim.implied_flop_per_param_token == pytest.approx(1.2e29 / (1e14 * 2.9e13), rel=0.001)  # 41.4
    assert claim.implied_params == pytest.approx(1.2e29 / (6 * 2.9e13))  # 690T parameters
    assert claim.implied_tokens == pytest.approx(1.2e29 / (6 * 1e14), rel=0.001)  # 200T tokens


def test_claim_that_matches_agrees() -> None:
    result = training_flop(MODELS.get("dense-100t"), num_tokens=29e12, claimed_flop=1.75e28)
    assert result.claim is not None
    assert result.claim.agrees


def test_moe_flops_follow_active_parameters() -> None:
    spec = MODELS.get("mixtral-8x7b")
    counts = parameter_counts(spec)
    result = training_flop(spec, num_tokens=1e12)
    assert result.total_flop == pytest.approx(6 * counts.active_params * 1e12)
    assert result.dense_equivalent_flop == pytest.approx(6 * counts.total_params * 1e12)
    assert result.dense_equivalent_flop / result.total_flop == pytest.approx(46.7 / 12.9, rel=0.01)
    assert training_flop(MODELS.get("llama-3-8b"), num_tokens=1e12).dense_equivalent_flop is None


def test_causal_halves_the_attention_term_only() -> None:
    spec = MODELS.get("llama-3-8b")
    full = flops_per_token(spec, seq_len=8192, convention="6N+attention")
    causal = flops_per_token(spec, seq_len=8192, convention="6N+causal-attention")
    assert causal.attention_training_flop == full.attention_training_flop / 2
    assert full.attention_training_flop == 12 * 32 * 8192 * 4096
    # Megatron-Core also leaves the embedding lookup out of N (it is not a matmul): 6 x V x h less.
    lookup = 6 * 128256 * 4096
    assert full.training_flop - causal.training_flop == full.attention_training_flop / 2 + lookup
    flag = flops_per_token(spec, seq_len=8192, convention="6N+attention", causal=True)
    assert flag.training_flop == causal.training_flop + lookup


@pytest.mark.parametrize(
    ("model", "tokens_per_s_per_gpu", "model_tflop_per_s_per_gpu"),
    [("llama-3-8b", 14451, 744), ("llama-3-405b", 292, 737)],
)
def test_megatron_core_convention_reproduces_megatron_bridge_figures(
    model: str, tokens_per_s_per_gpu: float, model_tflop_per_s_per_gpu: float
) -> None:
    # Megatron-Bridge performance summary (25.11 container, DGX H100, 8K sequences): tokens/s/GPU
    # and "model TFLOP/s/GPU" printed side by side; their ratio is the FLOPs per token it counts.
    per_token = flops_per_token(MODELS.get(model), seq_len=8192, convention="6N+causal-attention")
    assert per_token.training_flop * tokens_per_s_per_gpu / 1e12 == pytest.approx(
        model_tflop_per_s_per_gpu, rel=0.005
    )


def test_recompute_adds_one_forward_of_the_layers() -> None:
    spec = MODELS.get("llama-3-8b")
    counts = parameter_counts(spec)
    plain = flops_per_token(spec, seq_len=8192, convention="6N+attention")
    recompute = flops_per_token(spec, seq_len=8192, convention="6N+attention", recompute=True)
    expected = 6 * counts.active_params + 2 * counts.active_non_embedding_params + 16 * 32 * 8192 * 4096
    assert recompute.training_flop == expected
    assert recompute.training_flop > plain.training_flop


def test_nonembedding_convention_uses_the_layers_only() -> None:
    spec = MODELS.get("llama-3-8b")
    result = flops_per_token(spec, seq_len=8192, convention="6N-nonembedding")
    assert result.num_params == 8_030_261_248 - 2 * 128256 * 4096
    assert result.training_flop == 6 * result.num_params


def test_sliding_window_caps_the_attention_context() -> None:
    spec = MODELS.get("llama-3-8b")
    windowed = dataclasses.replace(spec, attention=dataclasses.replace(spec.attention, sliding_window=4096))
    long = flops_per_token(windowed, seq_len=32768, convention="6N+attention")
    short = flops_per_token(spec, seq_len=4096, convention="6N+attention")
    assert long.attention_training_flop == short.attention_training_flop


def test_every_convention_is_named_and_has_a_formula() -> None:
    spec = MODELS.get("llama-3-70b")
    for name in CONVENTIONS:
        result = flops_per_token(spec, seq_len=4096, convention=name)
        assert result.convention == name
        assert result.formula
        assert result.substituted.endswith("FLOP/token")
        assert result.used_by


def test_bad_inputs_are_user_errors() -> None:
    spec = MODELS.get("llama-3-8b")
    with pytest.raises(UnknownNameError, match="6N"):
        flops_per_token(spec, seq_len=2048, convention="7N")
    with pytest.raises(UserInputError, match="seq_len"):
        flops_per_token(spec, seq_len=0)
    with pytest.raises(UserInputError, match="num_tokens"):
        training_flop(spec, num_tokens=0)
    with pytest.raises(UserInputError, match="claimed"):
        training_flop(spec, num_tokens=1e9, claimed_flop=-1)


@settings(max_examples=50, deadline=None)
@given(
    st.sampled_from(sorted(CONVENTIONS)),
    st.integers(1, 200_000),
    st.integers(1, 200_000),
    st.sampled_from(["llama-3-8b", "mixtral-8x7b", "deepseek-v3", "gpt-3-175b"]),
)
def test_property_flops_grow_with_sequence_and_training_is_at_least_3x_forward(
    convention: str, seq_a: int, seq_b: int, name: str
) -> None:
    spec = MODELS.get(name)
    short, long = sorted((seq_a, seq_b))
    a = flops_per_token(spec, seq_len=short, convention=convention)
    b = flops_per_token(spec, seq_len=long, convention=convention)
    assert a.training_flop <= b.training_flop
    assert a.training_flop == pytest.approx(3 * a.forward_flop, rel=1e-9)
    recompute = flops_per_token(spec, seq_len=short, convention=convention, recompute=True)
    # Recompute re-runs the layers (not the LM head): between 3x and 4x the forward pass.
    assert 3 * a.forward_flop < recompute.training_flop <= 4 * a.forward_flop
