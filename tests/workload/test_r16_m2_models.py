"""Round 16 fix M2, model counts and FLOP conventions: ``megatron`` counts a hybrid block by block
(defect 1), Qwen2 72B's pre-training length is its report's 32,768 (2), ``memory`` serves in the
released format by default (3), a partial last chunk counts its own length without the causal
mask (5), and Qwen3-MoE's ``decoder_sparse_step`` becomes the MoE layer frequency (6)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from expect import one_line_error
from lightspeed.errors import DataFileError
from lightspeed.sol import plan_memory
from lightspeed.workload import (
    ModelRegistry,
    flops_per_token,
    mean_attended_tokens,
    parameter_counts,
    spec_from_hf_config,
)
from lightspeed.workload.attention import attended_tokens

# --- defect 1: megatron on a hybrid ----------------------------------------------------------------


def test_megatron_counts_nemotron_h_block_by_block(registry: ModelRegistry) -> None:
    """Nemotron-H 56B (the Megatron-Bridge recipe): 10 attention, 54 squared-ReLU MLP and 54 Mamba-2
    blocks, h 8,192, V 131,072, 64 heads of 128 and 8 KV heads, MLP 32,768, Mamba 256 heads of 64
    (d_in 16,384), state 256, 8 groups. Megatron-LM's hybrid_flops per token, forward, at s 8,192
    without the mask: attention 4·h·d·(H + g) + 4·H·d·s; MLP 4·h·ffn; Mamba
    2h·(2·d_in + 2·G·N + H_m) + 7·d_in·N + 2·d_in·h; logits 2·h·V; trained 3 x that."""
    h, vocab, heads, groups, head, ffn, seq = 8192, 131072, 64, 8, 128, 32768, 8192
    d_in, state, mamba_groups, mamba_heads = 16384, 256, 8, 256
    attention = 4 * h * head * (heads + groups) + 4 * heads * head * seq  # 301,989,888 + 268,435,456
    mlp = 4 * h * ffn  # 1,073,741,824
    mamba = 2 * h * (2 * d_in + 2 * mamba_groups * state + mamba_heads) + 7 * d_in * state + 2 * d_in * h
    forward = 10 * attention + 54 * mlp + 54 * mamba + 2 * h * vocab
    assert forward == 114_756_157_440
    result = flops_per_token(registry.get("nemotron-h-56b"), seq_len=seq, convention="megatron")
    assert result.training_flop == pytest.approx(3 * forward, rel=1e-12)
    assert result.forward_flop == pytest.approx(forward, rel=1e-12)
    assert "block by block" in result.notes[0]
    assert "54 mamba" in result.notes[0]
    # the GPT formula's 72·l·h²·(...) over 118 blocks gave 6.716e11, 1.95x this
    assert 72 * 118 * h**2 * (1 + seq / (6 * h) + vocab / (12 * 118 * h)) / result.training_flop > 1.9


def test_megatron_of_a_dense_gpt_keeps_the_paper_formula(registry: ModelRegistry) -> None:
    """GPT-3 175B (96 layers, h 12,288, V 50,257 as the model file has it) at 2,048 tokens:
    72·l·h²·(1 + s/(6h) + V/(12·l·h)), Narayanan et al. 2021."""
    layers, h, seq = 96, 12288, 2048
    spec = registry.get("gpt-3-175b")
    vocab = spec.vocab_size
    expected = 72 * layers * h**2 * (1 + seq / (6 * h) + vocab / (12 * layers * h))
    result = flops_per_token(spec, seq_len=seq, convention="megatron")
    assert result.training_flop == pytest.approx(expected, rel=1e-12)


# --- defect 2: the default FLOP sequence length ------------------------------------------------------


def test_qwen2_72b_flops_default_to_its_32k_pretraining(run_cli) -> None:  # type: ignore[no-untyped-def]
    """Qwen2 Technical Report section 3.2: 4,096 extended to 32,768 in the concluding pre-training
    phase; config.json's 131,072 is the YaRN-served context. Qwen2.5 72B has the same shapes."""
    figures = {}
    for model in ("qwen2-72b", "qwen2.5-72b"):
        args = ("--tokens", "7T", "--convention", "6N+attention", "--json")
        result = run_cli("flops", "--model", model, *args)
        assert result.code == 0, result.err
        per_token = json.loads(result.out)["per_token"]
        figures[model] = (per_token["seq_len"], per_token["training_flop"])
    assert figures["qwen2-72b"][0] == 32_768
    assert figures["qwen2-72b"] == pytest.approx(figures["qwen2.5-72b"], rel=1e-12)


# --- defect 3: memory in the released format ---------------------------------------------------------


def test_memory_serves_gpt_oss_in_its_released_mxfp4(registry: ModelRegistry, run_cli) -> None:  # type: ignore[no-untyped-def]
    """gpt-oss model card: the MoE weights ship in MXFP4 and gpt-oss-120b fits one 80 GB GPU;
    in bf16 its 116.8e9 parameters are 233.7 GB, three H100s."""
    spec = registry.get("gpt-oss-120b")
    default = plan_memory(model=spec)
    assert default.precision == "mxfp4"
    assert default.total_bytes < 80e9
    assert plan_memory(model=spec, precision="released").total_bytes == default.total_bytes
    assert plan_memory(model=spec, precision="mxfp4").total_bytes == default.total_bytes
    assert plan_memory(model=spec, precision="bf16").total_bytes == 2 * default.num_params
    assert plan_memory(model=spec, training=True).precision == "bf16"  # training computes in bf16
    shown = run_cli("memory", "--model", "gpt-oss-120b", "--gpu", "h100", "--precision", "released")
    assert shown.code == 0, shown.err
    assert "precision released: mxfp4" in " ".join(shown.out.split())
    payload = json.loads(run_cli("memory", "--model", "gpt-oss-120b", "--gpu", "h100", "--json").out)
    assert (payload["precision"], payload["gpus_needed"]) == ("mxfp4", 1)


def test_memory_refuses_released_when_training(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("memory", "--model", "gpt-oss-120b", "--training", "--precision", "released")
    one_line_error(result)
    assert "released" in result.err
    assert "bf16" in result.err


# --- defect 5: a partial last chunk without the mask -------------------------------------------------


def test_a_partial_chunk_counts_its_own_square(registry: ModelRegistry) -> None:
    """Llama 4 Scout at s = 10,000: 36 chunked layers (C = 8,192) attend (8,192² + 1,808²)/10,000
    keys a query on average without the mask, the 12 global ones 10,000."""
    chunked = (8192**2 + 1808**2) / 10000
    assert float(attended_tokens("chunked", 8192, 10000, causal=False)) == pytest.approx(chunked, rel=1e-12)
    scout = registry.get("llama-4-scout")
    mean = (36 * chunked + 12 * 10000) / 48  # 7,778.33, not the 8,644 of a whole last chunk
    assert float(mean_attended_tokens(scout, 10000, causal=False)) == pytest.approx(mean, rel=1e-12)
    # whole chunks: C each, unchanged
    assert float(attended_tokens("chunked", 8192, 16384, causal=False)) == 8192
    assert float(attended_tokens("sliding", 4096, 10000, causal=False)) == 4096


# --- defect 6: Qwen3-MoE's decoder_sparse_step ----------------------------------------------------------

_QWEN3_MOE = {
    "architectures": ["Qwen3MoeForCausalLM"],
    "model_type": "qwen3_moe",
    "hidden_size": 2048,
    "intermediate_size": 6144,
    "moe_intermediate_size": 768,
    "num_hidden_layers": 48,
    "num_attention_heads": 32,
    "num_key_value_heads": 4,
    "head_dim": 128,
    "num_experts": 128,
    "num_experts_per_tok": 8,
    "decoder_sparse_step": 1,
    "mlp_only_layers": [],
    "vocab_size": 151936,
    "max_position_embeddings": 40960,
    "tie_word_embeddings": False,
    "norm_topk_prob": True,
}


def _written(tmp_path: Path, name: str, **changes: object) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({**_QWEN3_MOE, **changes}))
    return folder


def test_qwen3_moe_sparse_step_places_moe_on_every_other_layer(tmp_path: Path) -> None:
    """transformers' Qwen3MoeDecoderLayer: layer i is MoE when (i + 1) % decoder_sparse_step == 0,
    else a SwiGLU MLP of intermediate_size. With step 2, 24 of 48 layers swap 128 experts of 3 x
    2,048 x 768 and a 2,048 x 128 router for a 3 x 2,048 x 6,144 MLP."""
    every = spec_from_hf_config(_written(tmp_path, "every"))
    other = spec_from_hf_config(_written(tmp_path, "other", decoder_sparse_step=2))
    assert other.num_moe_layers == 24
    assert [other.is_moe_layer(index) for index in range(4)] == [False, True, False, True]
    moe_layer = 128 * 3 * 2048 * 768 + 2048 * 128
    active_moe_layer = 8 * 3 * 2048 * 768 + 2048 * 128
    dense_layer = 3 * 2048 * 6144
    full, half = parameter_counts(every), parameter_counts(other)
    assert full.total_params - half.total_params == 24 * (moe_layer - dense_layer)
    assert full.active_params - half.active_params == 24 * (active_moe_layer - dense_layer)


def test_qwen3_moe_dense_layer_list_is_refused_naming_it(tmp_path: Path) -> None:
    with pytest.raises(DataFileError, match="mlp_only_layers") as caught:
        spec_from_hf_config(_written(tmp_path, "listed", mlp_only_layers=[0, 5, 7]))
    assert "decoder_sparse_step" in str(caught.value)
