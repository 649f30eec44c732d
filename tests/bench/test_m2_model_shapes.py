"""``bench gemm --model``: the GEMMs each model really runs (expert check M2, defect 1).

Every figure below is worked out by hand from the model's published config.json, not read from
the code: MoE layers run their routed experts (``ceil(tokens x top_k / experts)`` rows each when
routing is even) and shared experts, not a dense MLP the model does not have; MLA keeps its query
and key/value down-projections whole on every rank (Megatron-Core's ``linear_q_down_proj`` and
``linear_kv_down_proj``, vLLM's replicated ``kv_a_proj_with_mqa``); a gated attention's query
projection is twice as wide.
"""

from __future__ import annotations

import pytest

from lightspeed.bench import model_shapes
from lightspeed.errors import UserInputError
from lightspeed.workload import load_models


def _dims(name: str, *, tp: int, num_tokens: int) -> dict[str, tuple[int, int, int]]:
    """``{label without model name and tp: (m, n, k)}`` of the model's GEMMs."""
    shapes = model_shapes(load_models().get(name), tp=tp, num_tokens=num_tokens)
    found = {}
    for shape in shapes:
        label = shape.label.removeprefix(f"{name} ").split(f" tp={tp}")[0]
        found[label] = (shape.m, shape.n, shape.k)
    assert len(found) == len(shapes), "one GEMM per label"
    return found


def test_qwen3_30b_a3b_runs_its_768_wide_experts_not_a_dense_mlp() -> None:
    # Qwen/Qwen3-30B-A3B config.json: hidden_size 2048, 32 heads, 4 KV heads, head_dim 128,
    # 128 experts of moe_intermediate_size 768, 8 per token, every one of the 48 layers MoE
    # (mlp_only_layers []), no shared expert, vocab 151936.
    tokens = 16
    rows = -(-tokens * 8 // 128)  # 128 routed rows over 128 experts: 1 each
    assert rows == 1
    assert _dims("qwen3-30b-a3b", tp=1, num_tokens=tokens) == {
        "qkv": (16, (32 + 2 * 4) * 128, 2048),  # 5,120
        "attention out": (16, 2048, 32 * 128),
        "router": (16, 128, 2048),
        "routed expert up": (1, 2 * 768, 2048),  # gate and up of SwiGLU
        "routed expert down": (1, 2048, 768),
        "lm head": (16, 151936, 2048),
    }
    # tp=2: column-parallel outputs and row-parallel inputs halve; experts split their 768 rows
    assert _dims("qwen3-30b-a3b", tp=2, num_tokens=4096) == {
        "qkv": (4096, 5120 // 2, 2048),
        "attention out": (4096, 2048, 4096 // 2),
        "router": (4096, 128, 2048),
        "routed expert up": (4096 * 8 // 128, 1536 // 2, 2048),  # 256 rows per expert
        "routed expert down": (256, 2048, 768 // 2),
        "lm head": (4096, 151936 // 2, 2048),
    }


def test_deepseek_v3_has_q_down_replicated_kv_down_and_its_experts() -> None:
    # deepseek-ai/DeepSeek-V3 config.json: hidden 7168, 128 heads, q_lora_rank 1536, kv_lora_rank
    # 512, qk_nope_head_dim 128, qk_rope_head_dim 64, v_head_dim 128; intermediate_size 18432 in
    # the first_k_dense_replace = 3 dense layers; 256 routed experts of 2048, 8 per token, one
    # shared expert of 2048; vocab 129280.
    tokens = 4096
    rows = tokens * 8 // 256  # 128 rows per expert
    one_rank = {
        "q down": (tokens, 1536, 7168),
        "q up": (tokens, 128 * (128 + 64), 1536),  # 24,576
        "kv down": (tokens, 512 + 64, 7168),  # 576: the latent and the RoPE key
        "kv up": (tokens, 128 * (128 + 128), 512),  # 32,768
        "attention out": (tokens, 7168, 128 * 128),
        "mlp up": (tokens, 2 * 18432, 7168),
        "mlp down": (tokens, 7168, 18432),
        "router": (tokens, 256, 7168),
        "routed expert up": (rows, 2 * 2048, 7168),
        "routed expert down": (rows, 7168, 2048),
        "shared expert up": (tokens, 2 * 2048, 7168),
        "shared expert down": (tokens, 7168, 2048),
        "lm head": (tokens, 129280, 7168),
    }
    assert _dims("deepseek-v3", tp=1, num_tokens=tokens) == one_rank
    two_ranks = _dims("deepseek-v3", tp=2, num_tokens=tokens)
    assert two_ranks == {
        "q down": (tokens, 1536, 7168),  # replicated: every rank the whole
        "q up": (tokens, 24576 // 2, 1536),
        "kv down": (tokens, 576, 7168),  # replicated, not k = 7168 / 2
        "kv up": (tokens, 32768 // 2, 512),
        "attention out": (tokens, 7168, 16384 // 2),
        "mlp up": (tokens, 36864 // 2, 7168),
        "mlp down": (tokens, 7168, 18432 // 2),
        "router": (tokens, 256, 7168),
        "routed expert up": (rows, 4096 // 2, 7168),
        "routed expert down": (rows, 7168, 2048 // 2),
        "shared expert up": (tokens, 4096 // 2, 7168),
        "shared expert down": (tokens, 7168, 2048 // 2),
        "lm head": (tokens, 129280 // 2, 7168),
    }


def test_the_expert_rows_say_they_assume_even_routing() -> None:
    shapes = model_shapes(load_models().get("deepseek-v3"), tp=1, num_tokens=4096)
    expert = next(shape for shape in shapes if "routed expert up" in shape.label)
    assert "(even routing: 4,096 x top-8 / 256 experts = 128 rows each)" in expert.label


def test_qwen3_next_gated_attention_doubles_the_query_and_has_no_dense_mlp() -> None:
    # Qwen/Qwen3-Next-80B-A3B config.json: hidden 2048, 16 heads, 2 KV heads, head_dim 256, the
    # query projection doubled by the output gate; every FFN is MoE (512 experts of 512, top-10,
    # one shared expert of 512).
    dims = _dims("qwen3-next-80b-a3b", tp=1, num_tokens=64)
    assert dims["qkv"] == (64, 16 * 256 * 2 + 2 * 2 * 256, 2048)  # 9,216
    assert dims["attention out"] == (64, 2048, 16 * 256)
    assert "mlp up" not in dims
    assert "mlp down" not in dims
    assert dims["routed expert up"] == (-(-64 * 10 // 512), 2 * 512, 2048)  # 2 rows per expert
    assert dims["shared expert up"] == (64, 2 * 512, 2048)


def test_a_dense_model_keeps_its_shapes() -> None:
    # Meta-Llama-3-8B config.json: hidden 4096, 32 heads, 8 KV heads, head_dim 128,
    # intermediate_size 14336, vocab 128256: the shapes bench gemm --model always gave.
    assert _dims("llama-3-8b", tp=1, num_tokens=64) == {
        "qkv": (64, (32 + 2 * 8) * 128, 4096),
        "attention out": (64, 4096, 32 * 128),
        "mlp up": (64, 2 * 14336, 4096),
        "mlp down": (64, 4096, 14336),
        "lm head": (64, 128256, 4096),
    }


def test_a_tp_that_splits_an_expert_into_fractions_is_refused() -> None:
    # 512 ranks split the attention (5,120 and 4,096 by 512) and the experts' up projection
    # (1,536 / 512 = 3) whole, but not the down projection's 768 inputs (1.5 each)
    with pytest.raises(UserInputError, match="tp=512 does not divide the 768 rows of the routed expert down"):
        model_shapes(load_models().get("qwen3-30b-a3b"), tp=512, num_tokens=16)
