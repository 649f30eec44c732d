"""Models published inference/training rows name that the registry did not know (coverage, 2026):
Code Llama 7B/13B/34B/70B (and the 7B/13B -Python vocabularies), Gemma 2B/7B, Mistral 7B v0.2,
Qwen1.5 72B/110B, Granite 3.1 8B, StarCoder2 15B, Phi-3.5 mini, DeepSeek-R1-Distill-Qwen-1.5B and
Qwen2.5-Math-7B; and the aliases DeepSeek-V2.5 / Coder-V2 (-> deepseek-v2, -v2-lite), DeepSeek-V3.1
-Terminus (-> deepseek-v3) and Yi-1.5-34B (-> yi-34b).

Golden values: totals from the model cards and reports (cited beside each), shapes from each
config.json (cited in the model files), counts written out by hand below.
"""

from __future__ import annotations

import pytest

from lightspeed.workload import (
    ModelRegistry,
    kv_cache_bytes,
    kv_cache_bytes_per_token,
    layer_attention_kinds,
    parameter_counts,
)

# (name as published rows and Hugging Face write it, the one model it must resolve to)
RESOLVES = [
    # Code Llama: base, -Instruct and -Python checkpoints, with and without organization and -hf
    ("CodeLlama-7b-hf", "codellama-7b"),
    ("codellama/CodeLlama-7b-Instruct-hf", "codellama-7b"),
    ("CodeLlama-7b-Python-hf", "codellama-7b-python"),
    ("codellama/CodeLlama-13b-hf", "codellama-13b"),
    ("CodeLlama-13b-Instruct-hf", "codellama-13b"),
    ("CodeLlama-13b-Python-hf", "codellama-13b-python"),
    ("codellama/CodeLlama-13b-Python-hf", "codellama-13b-python"),
    ("CodeLlama-34b-Instruct-hf", "codellama-34b"),
    ("codellama/CodeLlama-34b-Python-hf", "codellama-34b"),
    ("Code Llama 34B", "codellama-34b"),
    ("TheBloke/CodeLlama-34B-Instruct-GPTQ", "codellama-34b"),
    ("codellama/CodeLlama-70b-Instruct-hf", "codellama-70b"),
    ("CodeLlama-70b-hf", "codellama-70b"),
    ("Code Llama 70B Instruct", "codellama-70b"),
    ("meta-llama/CodeLlama-70b-Instruct-hf", "codellama-70b"),
    # Gemma (first generation)
    ("google/gemma-2b", "gemma-2b"),
    ("gemma-2b-it", "gemma-2b"),
    ("Gemma 2B", "gemma-2b"),
    ("google/gemma-7b-it", "gemma-7b"),
    ("Gemma 7B", "gemma-7b"),
    # Mistral 7B v0.2: its own file, the version tag kept
    ("mistralai/Mistral-7B-Instruct-v0.2", "mistral-7b-v0.2"),
    ("Mistral-7B-Instruct-v0.2", "mistral-7b-v0.2"),
    ("Mistral 7B Instruct v0.2", "mistral-7b-v0.2"),
    # Qwen1.5
    ("Qwen/Qwen1.5-72B", "qwen1.5-72b"),
    ("Qwen/Qwen1.5-72B-Chat", "qwen1.5-72b"),
    ("Qwen1.5-72B-Chat-AWQ", "qwen1.5-72b"),
    ("Qwen/Qwen1.5-110B-Chat", "qwen1.5-110b"),
    # Granite 3.1, StarCoder2, Phi-3.5 mini
    ("ibm-granite/granite-3.1-8b-instruct", "granite-3.1-8b"),
    ("Granite 3.1 8B Instruct", "granite-3.1-8b"),
    ("bigcode/starcoder2-15b", "starcoder2-15b"),
    ("StarCoder2 15B", "starcoder2-15b"),
    ("microsoft/Phi-3.5-mini-instruct", "phi-3.5-mini"),
    # Aliases on existing files
    ("deepseek-ai/DeepSeek-V2.5", "deepseek-v2"),
    ("DeepSeek-V2.5-1210", "deepseek-v2"),
    ("deepseek-ai/DeepSeek-V2.5-1210", "deepseek-v2"),
    ("deepseek-ai/DeepSeek-Coder-V2-Instruct", "deepseek-v2"),
    ("DeepSeek-Coder-V2-Base", "deepseek-v2"),
    ("deepseek-ai/DeepSeek-Coder-V2-Lite-Instruct", "deepseek-v2-lite"),
    ("DeepSeek-Coder-V2-Lite-Base", "deepseek-v2-lite"),
    ("deepseek-ai/DeepSeek-V3.1-Terminus", "deepseek-v3"),
    ("DeepSeek-V3.1-Terminus", "deepseek-v3"),
    ("deepseek-ai/DeepSeek-V3.1-Base", "deepseek-v3"),
    ("DeepSeek-V3.1", "deepseek-v3"),
    ("01-ai/Yi-1.5-34B", "yi-34b"),
    ("Yi-1.5-34B-Chat", "yi-34b"),
    # Not identical to their Qwen2.5 namesakes (see the look-alikes below): their own files
    ("deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B", "deepseek-r1-distill-qwen-1.5b"),
    ("Qwen/Qwen2.5-Math-7B", "qwen2.5-math-7b"),
    ("Qwen/Qwen2.5-Math-7B-Instruct", "qwen2.5-math-7b"),
]


@pytest.mark.parametrize(("name", "expected"), RESOLVES)
def test_each_name_resolves_to_exactly_one_architecture(
    registry: ModelRegistry, name: str, expected: str
) -> None:
    assert registry.matches(name) == [expected]


NEW_FILES = [
    "codellama-7b",
    "codellama-7b-python",
    "codellama-13b",
    "codellama-13b-python",
    "codellama-34b",
    "codellama-70b",
    "gemma-2b",
    "gemma-7b",
    "mistral-7b-v0.2",
    "qwen1.5-72b",
    "qwen1.5-110b",
    "granite-3.1-8b",
    "starcoder2-15b",
    "phi-3.5-mini",
    "deepseek-r1-distill-qwen-1.5b",
    "qwen2.5-math-7b",
]


@pytest.mark.parametrize("model", NEW_FILES)
def test_every_alias_of_the_new_files_resolves_to_its_file(registry: ModelRegistry, model: str) -> None:
    spec = registry.get(model)
    assert spec.aliases
    for alias in spec.aliases:
        assert registry.matches(alias) == [model], alias
    assert registry.entries[model].sources  # every figure cited


# (model, total the authors publish) -- computed totals must be within 2%
CARD_TOTALS = [
    # codellama/CodeLlama-7b-hf files: bf16 safetensors of 9.98 GB + 3.5 GB = 13.48 GB -> 6.74B
    ("codellama-7b", 6.74e9),
    # https://huggingface.co/codellama/CodeLlama-13b-hf: "the 13B base version" (Code Llama paper: 13B)
    ("codellama-13b", 13e9),
    # https://huggingface.co/codellama/CodeLlama-34b-hf: "the 34B base version"
    ("codellama-34b", 34e9),
    # https://huggingface.co/codellama/CodeLlama-70b-Instruct-hf: "the 70B instruct-tuned version"
    ("codellama-70b", 70e9),
    # Gemma report (arXiv:2403.08295) Table 2: 524,550,144 + 1,981,884,416 and 786,825,216 + 7,751,248,896
    ("gemma-2b", 524_550_144 + 1_981_884_416),
    ("gemma-7b", 786_825_216 + 7_751_248_896),
    # https://huggingface.co/mistralai/Mistral-7B-v0.1: 7.24B (v0.2 keeps v0.1's weights' shapes)
    ("mistral-7b-v0.2", 7.24e9),
    # https://huggingface.co/Qwen/Qwen1.5-72B and Qwen1.5-110B: the 72B and 110B models
    ("qwen1.5-72b", 72e9),
    ("qwen1.5-110b", 110e9),
    # https://huggingface.co/ibm-granite/granite-3.1-8b-base architecture table: 8.1B parameters
    ("granite-3.1-8b", 8.1e9),
    # https://huggingface.co/microsoft/Phi-3.5-mini-instruct: "Phi-3.5-mini has 3.8B parameters"
    ("phi-3.5-mini", 3.8e9),
    # https://huggingface.co/Qwen/Qwen2.5-7B: 7.62B (Qwen2.5-Math-7B has the same weights' shapes)
    ("qwen2.5-math-7b", 7.62e9),
]


@pytest.mark.parametrize(("name", "total"), CARD_TOTALS)
def test_counts_match_the_model_cards_within_two_percent(
    registry: ModelRegistry, name: str, total: float
) -> None:
    counts = parameter_counts(registry.get(name))
    assert counts.total_params == pytest.approx(total, rel=0.02)
    assert counts.active_params == counts.total_params  # all dense


def test_codellama_34b_by_hand_from_its_config(registry: ModelRegistry) -> None:
    # codellama/CodeLlama-34b-hf config.json: hidden 8192, 48 layers, 64 heads and 8 KV heads of 128,
    # intermediate 22016, vocab 32000, untied, no biases
    hidden, vocab, layers = 8192, 32000, 48
    attention = hidden * 64 * 128 + 2 * hidden * 8 * 128 + 64 * 128 * hidden  # Q, K and V, O
    assert attention == 150_994_944
    mlp = 3 * hidden * 22016  # SwiGLU: gate, up, down
    norms = 2 * hidden * layers + hidden  # two RMSNorms a layer and the final one
    embedding = vocab * hidden  # and an untied LM head of the same size
    total = layers * (attention + mlp) + norms + 2 * embedding
    assert total == 33_743_970_304
    assert parameter_counts(registry.get("CodeLlama-34b-Instruct-hf")).total_params == total
    # KV cache: 2 x 8 KV heads x 128 x 48 layers x 2 bytes a token in BF16
    assert kv_cache_bytes_per_token(registry.get("codellama-34b"), "bf16") == 2 * 8 * 128 * 48 * 2


def test_codellama_python_is_sixteen_vocabulary_rows_short_of_the_base(registry: ModelRegistry) -> None:
    # CodeLlama-13b-hf: vocab 32016 (infilling tokens); CodeLlama-13b-Python-hf: vocab 32000
    base = parameter_counts(registry.get("codellama-13b")).total_params
    python = parameter_counts(registry.get("CodeLlama-13b-Python-hf")).total_params
    assert base - python == 16 * 5120 * 2  # embedding rows and LM-head rows


def test_gemma_7b_by_hand_from_its_config(registry: ModelRegistry) -> None:
    # google/gemma-7b config.json: hidden 3072, 28 layers, 16 heads and 16 KV heads of head_dim 256
    # (4,096 wide), GeGLU intermediate 24576, vocab 256000, embedding tied to the LM head
    hidden, vocab, layers = 3072, 256000, 28
    attention = hidden * 16 * 256 + 2 * hidden * 16 * 256 + 16 * 256 * hidden
    mlp = 3 * hidden * 24576  # GeGLU: gate and up of 24,576 each, down
    norms = 2 * hidden * layers + hidden
    non_embedding = layers * (attention + mlp) + norms
    assert non_embedding == 7_751_248_896  # the Gemma report's Table 2, to the unit
    counts = parameter_counts(registry.get("google/gemma-7b"))
    assert counts.non_embedding_params == non_embedding
    assert counts.total_params == non_embedding + vocab * hidden  # tied: one table
    assert counts.lm_head_params == 0


def test_gemma_2b_is_multi_query_with_the_reports_non_embedding_count(registry: ModelRegistry) -> None:
    # google/gemma-2b: hidden 2048, 18 layers, 8 heads and 1 KV head of 256, GeGLU 16384, tied
    hidden, layers = 2048, 18
    attention = hidden * 8 * 256 + 2 * hidden * 1 * 256 + 8 * 256 * hidden
    non_embedding = layers * (attention + 3 * hidden * 16384) + 2 * hidden * layers + hidden
    assert non_embedding == 1_981_884_416  # the Gemma report's Table 2
    spec = registry.get("gemma-2b")
    assert parameter_counts(spec).non_embedding_params == non_embedding
    assert spec.attention.kind == "mqa"
    assert kv_cache_bytes_per_token(spec, "bf16") == 2 * 1 * 256 * 18 * 2


def test_starcoder2_15b_by_hand_biases_layernorm_and_window(registry: ModelRegistry) -> None:
    # bigcode/starcoder2-15b config.json: hidden 6144, 40 layers, 48 heads and 4 KV heads of 128,
    # use_bias true (Q, K, V, O, c_fc, c_proj), GELU MLP of 24576, LayerNorm, vocab 49152 untied,
    # sliding_window 4096, 16384 positions
    hidden, vocab, layers = 6144, 49152, 40
    attention = hidden * 6144 + 2 * hidden * 512 + 6144 * hidden + (6144 + 2 * 512) + hidden  # + biases
    mlp = 2 * hidden * 24576 + 24576 + hidden  # c_fc and c_proj with their biases
    norms = 2 * 2 * hidden * layers + 2 * hidden  # LayerNorm: weight and bias
    total = layers * (attention + mlp) + norms + 2 * vocab * hidden
    assert total == 15_957_889_024
    spec = registry.get("bigcode/starcoder2-15b")
    assert parameter_counts(spec).total_params == total
    assert set(layer_attention_kinds(spec)) == {"sliding"}
    per_token = 2 * 4 * 128 * 40 * 2  # BF16
    # at the full 16,384 tokens each layer keeps the last 4,096
    assert float(kv_cache_bytes(spec, "bf16", 16384)) == 4096 * per_token
    assert float(kv_cache_bytes(spec, "bf16", 1000)) == 1000 * per_token


def test_mistral_7b_v0_2_has_no_window_unlike_v0_1(registry: ModelRegistry) -> None:
    v01, v02, v03 = (registry.get(name) for name in ("mistral-7b-v0.1", "mistral-7b-v0.2", "mistral-7b"))
    per_token = 2 * 8 * 128 * 32 * 2
    assert float(kv_cache_bytes(v02, "bf16", 32768)) == 32768 * per_token  # every layer full
    assert float(kv_cache_bytes(v01, "bf16", 32768)) == 4096 * per_token  # v0.1: window 4096
    # the same weights as v0.1 (vocab 32000); v0.3 has 768 more vocabulary rows
    assert parameter_counts(v02).total_params == parameter_counts(v01).total_params
    assert parameter_counts(v03).total_params - parameter_counts(v02).total_params == 768 * 4096 * 2


def test_qwen1_5_72b_is_mha_and_110b_is_gqa(registry: ModelRegistry) -> None:
    # Qwen1.5-72B: num_key_value_heads 64 (MHA); Qwen1.5-110B: 8 (GQA); both with Q/K/V biases
    mha, gqa = registry.get("Qwen/Qwen1.5-72B"), registry.get("Qwen/Qwen1.5-110B")
    assert (mha.attention.kind, mha.attention.num_kv_heads) == ("mha", 64)
    assert (gqa.attention.kind, gqa.attention.num_kv_heads) == ("gqa", 8)
    assert kv_cache_bytes_per_token(mha, "bf16") == 2 * 64 * 128 * 80 * 2
    assert kv_cache_bytes_per_token(gqa, "bf16") == 2 * 8 * 128 * 80 * 2
    hidden = 8192
    attention = 4 * hidden * hidden + 3 * hidden  # Q, K, V, O of 8,192 each, Q/K/V biases
    total = 80 * (attention + 3 * hidden * 24576 + 2 * hidden) + hidden + 2 * 152064 * hidden
    assert parameter_counts(mha).total_params == total


def test_r1_distill_qwen_1_5b_unties_the_lm_head_of_qwen2_5_1_5b(registry: ModelRegistry) -> None:
    # DeepSeek-R1-Distill-Qwen-1.5B config.json: tie_word_embeddings false, 131072 positions;
    # Qwen2.5-1.5B: tied, 32768 positions -- so the distill is its own file, one LM head larger
    distill = registry.get("deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B")
    qwen = registry.get("qwen2.5-1.5b")
    assert (distill.tied_embeddings, qwen.tied_embeddings) == (False, True)
    extra = parameter_counts(distill).total_params - parameter_counts(qwen).total_params
    assert extra == 151936 * 1536
    assert distill.max_seq_len == 131072


def test_context_only_variants_keep_their_own_max_seq_len(registry: ModelRegistry) -> None:
    # same weights' shapes, another context: the default sequence length differs, the count does not
    assert registry.get("phi-3.5-mini").max_seq_len == 131072
    assert registry.get("phi-3-mini").max_seq_len == 4096
    assert set(layer_attention_kinds(registry.get("phi-3.5-mini"))) == {"full"}
    assert (
        parameter_counts(registry.get("phi-3.5-mini")).total_params
        == parameter_counts(registry.get("phi-3-mini")).total_params
    )
    assert registry.get("qwen2.5-math-7b").max_seq_len == 4096
    assert registry.get("qwen2.5-7b").max_seq_len == 32768
    assert (
        parameter_counts(registry.get("qwen2.5-math-7b")).total_params
        == parameter_counts(registry.get("qwen2.5-7b")).total_params
    )
    assert registry.get("granite-3.1-8b").max_seq_len == 131072
    assert registry.get("codellama-34b").max_seq_len == 16384
    assert registry.get("codellama-70b").max_seq_len == 4096  # -Instruct/-Python config.json


def test_aliased_checkpoints_keep_the_existing_counts(registry: ModelRegistry) -> None:
    # aliases add no figure: the published totals of the files they join still hold
    assert parameter_counts(registry.get("DeepSeek-Coder-V2-Instruct")).total_params == pytest.approx(
        236e9, rel=0.01
    )  # DeepSeek-Coder-V2 README: 236B total (as DeepSeek-V2)
    assert parameter_counts(registry.get("DeepSeek-Coder-V2-Lite-Instruct")).total_params == pytest.approx(
        15.7e9, rel=0.01
    )  # 16B total / DeepSeek-V2-Lite: 15.7B
    assert parameter_counts(registry.get("DeepSeek-V3.1-Terminus")).total_params == pytest.approx(
        671e9, rel=0.01
    )
    assert parameter_counts(registry.get("Yi-1.5-34B")).total_params == pytest.approx(34.4e9, rel=0.01)


@pytest.mark.parametrize(
    ("name", "not_this"),
    [
        ("Mistral-7B-Instruct-v0.2", "mistral-7b-v0.1"),  # v0.1 has the 4,096-token window
        ("DeepSeek-V3.2-Exp", "deepseek-v3"),  # DeepSeek Sparse Attention: its own model
        ("zai-org/GLM-5.1", "glm-4.6"),  # GLM-5 is MLA with sparse attention, not GLM-4.x's GQA
        ("Mistral-7B-Instruct-v0.2", "mistral-7b"),  # v0.3: 32,768-token vocabulary
        ("CodeLlama-13b-Python-hf", "codellama-13b"),  # 32,000 vs 32,016 tokens
        ("CodeLlama-7b-Python-hf", "codellama-7b"),
        ("deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B", "qwen2.5-1.5b"),  # untied, 128K
        ("Qwen/Qwen2.5-Math-7B", "qwen2.5-7b"),  # 4K context
        ("microsoft/Phi-3.5-mini-instruct", "phi-3-mini"),  # 128K, no 2,047-token window
        ("google/gemma-2b", "gemma-2-2b"),  # Gemma 1 is not Gemma 2
        ("google/gemma-7b", "gemma-2-9b"),
        ("Qwen/Qwen1.5-72B", "qwen2-72b"),  # MHA, not Qwen2's GQA
    ],
)
def test_look_alikes_stay_distinct(registry: ModelRegistry, name: str, not_this: str) -> None:
    assert not_this not in registry.matches(name)
    assert len(registry.matches(name)) == 1


@pytest.mark.parametrize(
    "name",
    [
        "mistralai/Mistral-7B-Instruct-v0.4",  # no such version: listed by no file
        "01-ai/Yi-1.5-34B-32K",  # 32,768 positions: not yi-34b
        "Qwen/Qwen2.5-Math-1.5B",  # tied, 4K: neither qwen2.5-1.5b nor the distill
        "microsoft/Phi-3-mini-128k-instruct",  # the 128K Phi-3 is not phi-3-mini
    ],
)
def test_names_that_stay_unknown(registry: ModelRegistry, name: str) -> None:
    assert registry.find(name) is None
