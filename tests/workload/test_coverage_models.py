"""Models 2025-26 published rows name (issue 28, coverage): GLM-4.5, GLM-4.5-Air, Phi-3 mini and
medium, Phi-3.5-MoE; MiniMax-M2 (and M2.1, M2.5), GLM-4.6 / 4.7, Mistral Small 3.1 / 3.2 and the
Qwen2.5-Coder aliases; and those refused (the Llama-Nemotron NAS models; Qwen3-Next and Qwen3.5 were
until their Gated DeltaNet layers were modelled: tests/workload/test_gated_deltanet_models.py).

Golden values: totals from the model cards, shapes from each config.json (cited in the model
files), counts written out by hand below.
"""

from __future__ import annotations

import pytest

from lightspeed.catalog import load_catalog
from lightspeed.errors import UserInputError
from lightspeed.sol import InferencePlan, ServingLoad, estimate_inference
from lightspeed.workload import (
    ModelRegistry,
    kv_cache_bytes,
    kv_cache_bytes_per_token,
    layer_attention_kinds,
    parameter_counts,
)
from lightspeed.workload.registry import UnsupportedModelError, unsupported_models

# (model, published total, published active, which count the card's active figure is)
CARD_TOTALS = [
    ("glm-4.5", 355e9, 32e9, "active_non_embedding_params"),  # zai-org/GLM-4.5: 355B total, 32B active
    ("glm-4.5-air", 106e9, 12e9, "active_non_embedding_params"),  # zai-org/GLM-4.5-Air: 106B, 12B
    ("phi-3-mini", 3.8e9, 3.8e9, "active_params"),  # microsoft/Phi-3-mini-4k-instruct: 3.8B
    ("phi-3-medium", 14e9, 14e9, "active_params"),  # microsoft/Phi-3-medium-4k-instruct: 14B
    ("phi-3.5-moe", 41.9e9, 6.6e9, "active_params"),  # Phi-3.5-MoE: 41.9B, 6.6B active with 2 experts
    # second batch (counted by hand below)
    # https://github.com/MiniMax-AI/MiniMax-M2 (README): 230 billion total, 10 billion active
    ("minimax-m2", 230e9, 10e9, "active_non_embedding_params"),
    # https://github.com/zai-org/GLM-4.5 (README, Model Downloads): GLM-4.6 and GLM-4.7 355B-A32B
    ("glm-4.6", 355e9, 32e9, "active_non_embedding_params"),
    # https://huggingface.co/mistralai/Mistral-Small-3.1-24B-Base-2503: 24 billion parameters, the
    # vision encoder included; the text decoder alone is counted here (dense: active = total)
    ("mistral-small-3.1-24b", 24e9, 24e9, "active_params"),
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
    attention = hidden * 12288 * 2 + 2 * hidden * 1024 + (12288 + 2 * 1024) + 2 * 128  # q_norm, k_norm
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
    ("minimax-m2", 2 * 8 * 128 * 62 * 2),
    ("glm-4.6", 2 * 8 * 128 * 92 * 2),
    ("mistral-small-3.1-24b", 2 * 8 * 128 * 40 * 2),
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
    assert registry.get("nvidia/Llama-3.1-Nemotron-70B-Instruct-HF").name == "llama-3.1-70b"


@pytest.mark.parametrize(("name", "feature"), REFUSED)
def test_unmodelled_architectures_are_refused_naming_the_part(
    registry: ModelRegistry, name: str, feature: str
) -> None:
    assert registry.find(name) is None  # never a look-alike (Qwen3.5 is not Qwen3)
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


@pytest.mark.parametrize(
    ("name", "model"),
    [
        ("Qwen3-Next-80B-A3B", "qwen3-next-80b-a3b"),
        ("Qwen/Qwen3-Next-80B-A3B-Thinking-FP8", "qwen3-next-80b-a3b"),
        ("Qwen/Qwen3-Coder-Next", "qwen3-next-80b-a3b"),
        ("Qwen/Qwen3.5-397B-A17B", "qwen3.5-397b-a17b"),
        ("Qwen3.5-122B-A10B-FP8", "qwen3.5-122b-a10b"),
        ("Qwen/Qwen3.6-35B-A3B", "qwen3.5-35b-a3b"),  # slime: the same topology as Qwen3.5-35B-A3B
    ],
)
def test_the_gated_deltanet_hybrids_are_models_now(registry: ModelRegistry, name: str, model: str) -> None:
    assert registry.unsupported_model(name) is None
    assert registry.get(name).name == model


# Second batch: MiniMax-M2 (and M2.1, M2.5), GLM-4.6 / GLM-4.7, Mistral Small 3.1 / 3.2 and the
# Qwen2.5-Coder aliases (their card totals and KV bytes are in the tables above).


def test_minimax_m2_by_hand_from_its_config(registry: ModelRegistry) -> None:
    # MiniMaxAI/MiniMax-M2 config.json: hidden_size 3072, 62 layers, 48 heads and 8 KV heads of
    # head_dim 128, no attention bias, 256 local experts of intermediate_size 1536 (top-8), no shared
    # expert, vocab 200064, tie_word_embeddings false
    hidden, vocab, layers = 3072, 200064, 62
    attention = hidden * 48 * 128 + 2 * hidden * 8 * 128 + 48 * 128 * hidden  # Q, K and V, O
    assert attention == 44_040_192
    expert = 3 * hidden * 1536  # SwiGLU: gate, up, down
    router = hidden * 256 + 256  # gate, plus e_score_correction_bias (use_routing_bias)
    norms = 2 * hidden * layers + hidden  # two RMSNorms a layer and the final one
    embedding = vocab * hidden  # and an untied LM head of the same size
    total = layers * (attention + 256 * expert + router) + norms + 2 * embedding
    active = layers * (attention + 8 * expert + router) + norms + 2 * embedding
    assert (total, active) == (228_689_320_448, 11_030_108_672)
    counts = parameter_counts(registry.get("minimax-m2"))
    assert (counts.total_params, counts.active_params) == (total, active)
    assert counts.active_non_embedding_params == active - 2 * embedding == 9_800_915_456
    assert (counts.num_dense_layers, counts.num_moe_layers) == (0, 62)
    assert counts.shared_expert_params == 0
    # config.json declares 3 MTP modules, but the release holds no MTP weights: none recorded
    assert counts.mtp_params == 0


def test_minimax_m2_is_full_attention_released_in_fp8(registry: ModelRegistry) -> None:
    spec = registry.get("MiniMaxAI/MiniMax-M2")
    # attn_type_list is 1 (softmax attention) on all 62 layers: no window, no chunk, no linear layer
    assert set(layer_attention_kinds(spec)) == {"full"}
    assert spec.attention.local_span is None
    # quantization_config: quant_method fp8, weight_block_size [128, 128]
    assert spec.release_format == "fp8"
    assert spec.max_seq_len == 196_608
    assert "lightning attention" in spec.note  # M1's, named as not used


def test_glm_4_6_by_hand_from_its_config(registry: ModelRegistry) -> None:
    # GLM-4.6 / GLM-4.7 config.json: GLM-4.5's shapes (hidden 5120, 92 layers, GQA 96/8 of 128 with
    # Q/K/V biases, dense intermediate 12288 in layers 0-2, 160 experts of 1536 top-8 + 1 shared,
    # vocab 151552, untied) with max_position_embeddings 202752
    hidden, vocab = 5120, 151552
    attention = hidden * 12288 * 2 + 2 * hidden * 1024 + (12288 + 2 * 1024) + 2 * 128  # q_norm, k_norm
    dense_mlp = 3 * hidden * 12288
    expert = 3 * hidden * 1536
    router = hidden * 160 + 160
    norms = 2 * hidden * 92 + hidden
    embedding = vocab * hidden
    total = 92 * attention + 3 * dense_mlp + 89 * (161 * expert + router) + norms + 2 * embedding
    active = 92 * attention + 3 * dense_mlp + 89 * (9 * expert + router) + norms + 2 * embedding
    spec = registry.get("glm-4.6")
    counts = parameter_counts(spec)
    assert (counts.total_params, counts.active_params) == (total, active)
    assert counts.mtp_params > 0  # num_nextn_predict_layers 1, counted apart
    assert spec.max_seq_len == 202_752
    assert registry.get("glm-4.5").max_seq_len == 131_072  # why GLM-4.6 is not an alias of GLM-4.5


def test_mistral_small_3_1_by_hand_from_its_text_config(registry: ModelRegistry) -> None:
    # mistralai/Mistral-Small-3.1-24B-Instruct-2503 text_config: hidden 5120, 40 layers, 32 heads
    # and 8 KV heads of head_dim 128, intermediate 32768, vocab 131072, untied, 131072 positions
    hidden, vocab = 5120, 131072
    attention = hidden * 32 * 128 + 2 * hidden * 8 * 128 + 32 * 128 * hidden
    mlp = 3 * hidden * 32768
    total = 40 * (attention + mlp) + (2 * hidden * 40 + hidden) + 2 * vocab * hidden
    spec = registry.get("mistral-small-3.1-24b")
    assert parameter_counts(spec).total_params == total == 23_572_403_200
    assert spec.max_seq_len == 131_072
    # Small 3 (2501) has the same decoder at 32,768 positions, so it stays a separate model
    assert parameter_counts(registry.get("mistral-small-24b")).total_params == total
    assert registry.get("mistral-small-24b").max_seq_len == 32_768


def test_minimax_m2_keeps_every_token_at_its_full_context(registry: ModelRegistry) -> None:
    spec = registry.get("minimax-m2")
    # 196,608 tokens x 253,952 bytes: every layer attends to the whole sequence
    assert float(kv_cache_bytes(spec, "bf16", 196_608)) == 196_608 * 253_952


# (name as published rows and Hugging Face write it, the model it must resolve to)
ALIASES = [
    ("MiniMax-M2", "minimax-m2"),
    ("MiniMaxAI/MiniMax-M2", "minimax-m2"),
    ("MiniMaxAI/MiniMax-M2.1", "minimax-m2"),
    ("MiniMax-M2.5", "minimax-m2"),
    ("minimax-m2.5", "minimax-m2"),
    ("zai-org/GLM-4.6", "glm-4.6"),
    ("zai-org/GLM-4.6-FP8", "glm-4.6"),
    ("GLM-4.7", "glm-4.6"),
    ("zai-org/GLM-4.7", "glm-4.6"),
    ("Qwen/Qwen2.5-Coder-7B-Instruct", "qwen2.5-7b"),
    ("Qwen/Qwen2.5-Coder-14B", "qwen2.5-14b"),
    ("Qwen/Qwen2.5-Coder-14B-Instruct", "qwen2.5-14b"),
    ("Qwen/Qwen2.5-Coder-32B-Instruct", "qwen2.5-32b"),
    ("mistralai/Mistral-Small-3.1-24B-Instruct-2503", "mistral-small-3.1-24b"),
    ("mistralai/Mistral-Small-3.2-24B-Instruct-2506", "mistral-small-3.1-24b"),
    ("Mistral-Small-3.2", "mistral-small-3.1-24b"),
    ("mistralai/Mistral-Small-24B-Instruct-2501", "mistral-small-24b"),
]


@pytest.mark.parametrize(("name", "model"), ALIASES)
def test_new_names_resolve_to_the_intended_model(registry: ModelRegistry, name: str, model: str) -> None:
    assert registry.get(name).name == model


@pytest.mark.parametrize("model", ["minimax-m2", "glm-4.6", "mistral-small-3.1-24b"])
def test_every_alias_of_the_new_files_resolves_to_its_file(registry: ModelRegistry, model: str) -> None:
    spec = registry.get(model)
    assert spec.aliases
    for alias in spec.aliases:
        assert registry.get(alias).name == model, alias


# Qwen2.5-Coder config.json values that make them aliases (vocab and tie_word_embeddings checked: the
# Coder 0.5B-3B have vocab 151936 and tied embeddings): (alias, layers, hidden, intermediate)
# Qwen/Qwen2.5-Coder-7B-Instruct (commit d619c0c), Qwen/Qwen2.5-Coder-14B (commit 9763f22),
# Qwen/Qwen2.5-Coder-32B-Instruct: all vocab 152064, untied, max_position_embeddings 32768
CODER = [
    ("qwen/qwen2.5-coder-7b-instruct", 28, 3584, 18944),
    ("qwen/qwen2.5-coder-14b-instruct", 48, 5120, 13824),
    ("qwen/qwen2.5-coder-32b-instruct", 64, 5120, 27648),
]


@pytest.mark.parametrize(("alias", "layers", "hidden", "intermediate"), CODER)
def test_qwen2_5_coder_aliases_have_the_coder_configs(
    registry: ModelRegistry, alias: str, layers: int, hidden: int, intermediate: int
) -> None:
    spec = registry.get(alias)
    assert (spec.num_layers, spec.hidden_size, spec.ffn_hidden_size) == (layers, hidden, intermediate)
    assert (spec.vocab_size, spec.tied_embeddings, spec.max_seq_len) == (152_064, False, 32_768)
    assert spec.attention.qkv_bias


@pytest.mark.parametrize(
    "name",
    [
        "GLM-4.7-Flash",  # 30B-A3B with MLA: another architecture
        "zai-org/GLM-4.7-Flash",
        "MiniMax-M2.7",  # 204,800 positions: not identical to M2
        "MiniMaxAI/MiniMax-M1-80k",  # lightning attention, not modelled
        "MiniMax-Text-01",
        "Qwen/Qwen2.5-Coder-3B-Instruct",  # vocab 151936, tied
    ],
)
def test_look_alikes_do_not_resolve_to_the_new_models(registry: ModelRegistry, name: str) -> None:
    assert registry.find(name) is None


@pytest.mark.parametrize("plan", [{"tp": 8}, {"tp": 8, "ep": 8}])
def test_minimax_m2_serves_in_fp8_on_eight_h100(registry: ModelRegistry, plan: dict[str, int]) -> None:
    estimate = estimate_inference(
        model=registry.get("MiniMax-M2"),
        cluster=load_catalog().resolve_cluster("dgx-h100", 1),
        plan=InferencePlan(precision="fp8", **plan),  # type: ignore[arg-type]
        load=ServingLoad(1000, 100),
    )
    assert estimate.output_tokens_per_s > 0
    # weights per GPU by hand: the layers in FP8 (1 byte), the embedding table and LM head in
    # 16 bits, split over 8 GPUs: ((228,689,320,448 - 1,229,193,216) + 2 x 1,229,193,216) / 8
    by_hand = ((228_689_320_448 - 1_229_193_216) + 2 * 1_229_193_216) / 8
    assert estimate.memory_bytes["weights"] == pytest.approx(by_hand, rel=0.01)
