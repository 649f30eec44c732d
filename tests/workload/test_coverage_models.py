"""Models 2025-26 published rows name (issue 28, coverage): GLM-4.5, GLM-4.5-Air, Phi-3 mini and
medium, Phi-3.5-MoE, and the two that are refused (Qwen3-Next, DeepSeek-V3.2).

Golden values: totals from the model cards, shapes from each config.json (cited in the model
files), counts written out by hand below.
"""

from __future__ import annotations

import pytest

from lightspeed.errors import UserInputError
from lightspeed.workload import (
    ModelRegistry,
    kv_cache_bytes,
    kv_cache_bytes_per_token,
    layer_attention_kinds,
    load_models,
    parameter_counts,
)
from lightspeed.workload.registry import UnsupportedModelError, unsupported_models


@pytest.fixture(scope="module")
def registry() -> ModelRegistry:
    return load_models()


# (model, published total, published active, which count the card's active figure is)
CARD_TOTALS = [
    ("glm-4.5", 355e9, 32e9, "active_non_embedding_params"),  # zai-org/GLM-4.5: 355B total, 32B active
    ("glm-4.5-air", 106e9, 12e9, "active_non_embedding_params"),  # zai-org/GLM-4.5-Air: 106B, 12B
    ("phi-3-mini", 3.8e9, 3.8e9, "active_params"),  # microsoft/Phi-3-mini-4k-instruct: 3.8B
    ("phi-3-medium", 14e9, 14e9, "active_params"),  # microsoft/Phi-3-medium-4k-instruct: 14B
    ("phi-3.5-moe", 41.9e9, 6.6e9, "active_params"),  # Phi-3.5-MoE: 41.9B, 6.6B active with 2 experts
]


@pytest.mark.parametrize(("name", "total", "active", "active_field"), CARD_TOTALS)
def test_counts_match_the_model_cards_within_two_percent(
    registry: ModelRegistry, name: str, total: float, active: float, active_field: str
) -> None:
    counts = parameter_counts(registry.get(name))
    assert counts.total_params == pytest.approx(total, rel=0.02)
    assert getattr(counts, active_field) == pytest.approx(active, rel=0.02)


def test_glm_4_5_by_hand_from_its_config(registry: ModelRegistry) -> None:
    hidden, vocab = 5120, 151552
    # Q 96x128, K and V 8x128 each, O, plus the Q/K/V biases (attention_bias; no output bias)
    attention = hidden * 12288 * 2 + 2 * hidden * 1024 + (12288 + 2 * 1024)
    dense_mlp = 3 * hidden * 12288  # SwiGLU, layers 0-2 (first_k_dense_replace 3)
    expert = 3 * hidden * 1536  # moe_intermediate_size 1536, routed and shared alike
    router = hidden * 160 + 160  # gate plus e_score_correction_bias
    norms = 2 * hidden * 92 + hidden
    embedding = vocab * hidden  # and an untied LM head of the same size
    total = 92 * attention + 3 * dense_mlp + 89 * (161 * expert + router) + norms + 2 * embedding
    active = 92 * attention + 3 * dense_mlp + 89 * (9 * expert + router) + norms + 2 * embedding
    counts = parameter_counts(registry.get("glm-4.5"))
    assert (counts.total_params, counts.active_params) == (total, active)
    assert (counts.num_dense_layers, counts.num_moe_layers) == (3, 89)
    assert counts.mtp_params > 0  # num_nextn_predict_layers 1, counted apart


def test_phi_3_5_moe_by_hand_layernorm_and_attention_biases(registry: ModelRegistry) -> None:
    hidden, vocab = 4096, 32064
    attention = 2 * hidden * hidden + 2 * hidden * 1024 + (hidden + 2 * 1024) + hidden  # Q/K/V and O biases
    expert = 3 * hidden * 6400
    layer = attention + 16 * expert + hidden * 16 + 2 * 2 * hidden  # router; two LayerNorms (weight, bias)
    total = 32 * layer + 2 * hidden + 2 * vocab * hidden
    active = total - 32 * 14 * expert
    counts = parameter_counts(registry.get("phi-3.5-moe"))
    assert (counts.total_params, counts.active_params) == (total, active)


# KV bytes per token in BF16, by hand: 2 (K and V) x KV heads x head size x layers x 2 bytes
KV_BYTES_PER_TOKEN = [
    ("glm-4.5", 2 * 8 * 128 * 92 * 2),
    ("glm-4.5-air", 2 * 8 * 128 * 46 * 2),
    ("phi-3-mini", 2 * 32 * 96 * 32 * 2),
    ("phi-3-medium", 2 * 10 * 128 * 40 * 2),
    ("phi-3.5-moe", 2 * 8 * 128 * 32 * 2),
]


@pytest.mark.parametrize(("name", "expected"), KV_BYTES_PER_TOKEN)
def test_kv_bytes_per_token_by_hand(registry: ModelRegistry, name: str, expected: int) -> None:
    assert kv_cache_bytes_per_token(registry.get(name), "bf16") == expected


def test_phi_3_4k_keeps_its_2047_token_window_on_every_layer(registry: ModelRegistry) -> None:
    mini = registry.get("phi-3-mini")
    assert set(layer_attention_kinds(mini)) == {"sliding"}
    # at 4,096 tokens each layer keeps the last 2,047: 2,047 x 393,216 bytes
    assert float(kv_cache_bytes(mini, "bf16", 4096)) == 2047 * (2 * 32 * 96 * 32 * 2)
    assert float(kv_cache_bytes(mini, "bf16", 1000)) == 1000 * (2 * 32 * 96 * 32 * 2)
    assert set(layer_attention_kinds(registry.get("phi-3.5-moe"))) == {"full"}


# (name, the part of its architecture lightspeed does not model)
REFUSED = [
    ("Qwen3-Next-80B-A3B", "Gated DeltaNet"),
    ("Qwen/Qwen3-Next-80B-A3B-Instruct", "Gated DeltaNet"),
    ("Qwen/Qwen3-Next-80B-A3B-Thinking-FP8", "Gated DeltaNet"),
    ("DeepSeek-V3.2-Exp", "DeepSeek Sparse Attention"),
    ("deepseek-ai/DeepSeek-V3.2-Exp", "DeepSeek Sparse Attention"),
    ("deepseek-ai/DeepSeek-V3.2", "DeepSeek Sparse Attention"),
    # Llama-Nemotron NAS models (DeciLM): blocks without attention, a FFN width per block
    ("Nemotron Super 49B", "per-block NAS"),
    ("nvidia/Llama-3_3-Nemotron-Super-49B-v1", "per-block NAS"),
    ("nvidia/Llama-3_3-Nemotron-Super-49B-v1_5", "per-block NAS"),
    ("Llama-3.3-Nemotron-Super-49B-v1-FP8", "per-block NAS"),
    ("nvidia/Llama-3_1-Nemotron-Ultra-253B-v1", "per-block NAS"),
    ("Llama-3.1-Nemotron-51B-Instruct", "per-block NAS"),
]


def test_a_nemotron_nas_model_is_not_its_llama_parent_but_the_plain_nemotron_70b_is(
    registry: ModelRegistry,
) -> None:
    """Super 49B and Ultra 253B are searched from Llama 3.3 70B and 3.1 405B block by block, so
    the parent's shapes would overstate them; Llama-3.1-Nemotron-70B-Instruct is a fine-tune with
    Llama 3.1 70B's own config and stays an alias."""
    assert registry.find("Llama-3.3-Nemotron-Super-49B-v1") is None
    assert registry.get("nvidia/Llama-3.1-Nemotron-70B-Instruct-HF").name == "llama-3-70b"


@pytest.mark.parametrize(("name", "feature"), REFUSED)
def test_unmodelled_architectures_are_refused_naming_the_part(
    registry: ModelRegistry, name: str, feature: str
) -> None:
    assert registry.find(name) is None  # never a look-alike (V3.2 is not deepseek-v3)
    unsupported = registry.unsupported_model(name)
    assert unsupported is not None
    assert feature in unsupported.feature
    with pytest.raises(UnsupportedModelError) as raised:
        registry.entry(name)
    message = str(raised.value)
    assert isinstance(raised.value, UserInputError)
    assert name in message
    assert feature in message
    assert "\n" not in message


def test_no_unsupported_spelling_is_shadowed_by_a_model(registry: ModelRegistry) -> None:
    for model in unsupported_models().values():
        for spelling in (model.name, *model.spellings):
            assert registry.matches(spelling) == [], spelling
            assert registry.unsupported_model(spelling) is model
        assert model.source


def test_the_linear_attention_refusal_states_what_is_missing() -> None:
    reason = unsupported_models()["qwen3-next-80b-a3b"].reason
    assert "recurrent state" in reason
    assert "KV cache" in reason
    assert "2,048 tokens per query" in unsupported_models()["deepseek-v3.2"].reason
