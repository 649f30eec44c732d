"""Models published training rows name that the catalog lacked (December 2026): Gopher 280B
(probe-training-3 row Y04), DeepSeek LLM 67B (row Y21) and NeMo's Nemotron-3 22B
(probe-training-7 row R216, 'Nemotron-22B').

Golden values: each shape as its source prints it (cited beside it), totals as the authors
print them, counts written out by hand.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lightspeed.sol.validation.published import read_table
from lightspeed.sol.validation.row_model import resolve_model
from lightspeed.workload import ModelRegistry, flops_per_token, parameter_counts

VALIDATION = Path(__file__).parents[1] / "data" / "validation"

# (model, field, the source's figure)
SHAPES = [
    # Rae et al. 2021 (arXiv 2112.11446), Table 1, Gopher 280B: 80 layers, 128 heads, key/value
    # size 128, d_model 16,384; "the feed-forward size is always 4 x d_model"; section 3:
    # SentencePiece vocabulary of 32,000, 2,048-token context
    ("gopher-280b", "num_layers", 80),
    ("gopher-280b", "num_heads", 128),
    ("gopher-280b", "head_dim", 128),
    ("gopher-280b", "hidden_size", 16384),
    ("gopher-280b", "ffn_hidden_size", 4 * 16384),
    ("gopher-280b", "vocab_size", 32000),
    ("gopher-280b", "max_seq_len", 2048),
    # deepseek-ai/deepseek-llm-67b-base config.json (and DeepSeek LLM, arXiv 2401.02954, Table 2):
    # num_hidden_layers 95, hidden_size 8192, num_attention_heads 64, num_key_value_heads 8,
    # intermediate_size 22016, vocab_size 102400, max_position_embeddings 4096
    ("deepseek-llm-67b", "num_layers", 95),
    ("deepseek-llm-67b", "hidden_size", 8192),
    ("deepseek-llm-67b", "num_heads", 64),
    ("deepseek-llm-67b", "num_kv_heads", 8),
    ("deepseek-llm-67b", "ffn_hidden_size", 22016),
    ("deepseek-llm-67b", "vocab_size", 102400),
    ("deepseek-llm-67b", "max_seq_len", 4096),
    # NVIDIA/NeMo-Megatron-Launcher launcher_scripts/conf/training/nemotron/nemotron_22b.yaml
    # @4550dc9f: num_layers 40, hidden_size 6144, ffn_hidden_size 24576, num_attention_heads 48,
    # num_query_groups null (MHA), encoder_seq_length 4096; vocab_size 256000 from the config.json
    # of thhaus/nemotron3-22b-hf, the checkpoint NeMo's nemotron3_22b recipe fine-tunes
    ("nemotron-3-22b", "num_layers", 40),
    ("nemotron-3-22b", "hidden_size", 6144),
    ("nemotron-3-22b", "ffn_hidden_size", 24576),
    ("nemotron-3-22b", "num_heads", 48),
    ("nemotron-3-22b", "num_kv_heads", 48),
    ("nemotron-3-22b", "vocab_size", 256000),
    ("nemotron-3-22b", "max_seq_len", 4096),
]


@pytest.mark.parametrize(("name", "field", "figure"), SHAPES, ids=[f"{m}-{f}" for m, f, _ in SHAPES])
def test_shapes_are_the_sources_figures(registry: ModelRegistry, name: str, field: str, figure: int) -> None:
    spec = registry.get(name)
    holder = spec.attention if field in ("num_heads", "num_kv_heads", "head_dim") else spec
    assert getattr(holder, field) == figure


def test_kinds_are_the_sources_words(registry: ModelRegistry) -> None:
    gopher = registry.get("gopher-280b")  # GPT-2's block with RMSNorm and relative positions
    assert (gopher.mlp, gopher.norm, gopher.position_embedding) == ("gelu", "rmsnorm", "none")
    deepseek = registry.get("deepseek-llm-67b")  # "the same architecture as LLaMA", GQA, untied
    assert (deepseek.mlp, deepseek.norm, deepseek.attention.kind) == ("swiglu", "rmsnorm", "gqa")
    assert not deepseek.tied_embeddings
    nemotron = registry.get("nemotron-3-22b")  # squared-relu, layernorm1p, bias false, untied
    assert (nemotron.mlp, nemotron.norm, nemotron.attention.kind) == ("relu2", "layernorm", "mha")
    assert (nemotron.tied_embeddings, nemotron.mlp_bias, nemotron.attention.qkv_bias) == (False,) * 3


def test_gopher_by_hand_and_with_its_relative_position_projection_the_papers_280b(
    registry: ModelRegistry,
) -> None:
    hidden, vocab, layers = 16384, 32000, 80
    attention = 4 * hidden * hidden + 4 * hidden  # Q, K, V, O and their biases (GPT-2's conv1d)
    mlp = 2 * hidden * 4 * hidden + 4 * hidden + hidden  # 4 x d_model GELU MLP with biases
    norms = 2 * hidden  # two RMSNorm weights a layer
    total = layers * (attention + mlp + norms) + hidden + vocab * hidden  # final norm, tied embedding
    assert parameter_counts(registry.get("gopher-280b")).total_params == total == 258_236_760_064
    # Transformer-XL's relative encoding (Dai et al. 2019, section 3.3) projects the position
    # embeddings with a d_model x d_model W_k,R in every layer (kimiyoung/transformer-xl r_net):
    # 21.47B weights the catalog does not model (they cost per sequence, not per token), and what
    # separates these shapes from the paper's 280B. With them the total is 279.7B, within 0.5%
    # (issue 2's tolerance in test_counts.py); the file records no published total for this reason.
    relative_key_projection = layers * hidden * hidden
    assert total + relative_key_projection == pytest.approx(280e9, rel=0.005)
    assert registry.entry("gopher-280b").published is None


def test_deepseek_67b_by_hand_and_against_the_papers_67b(registry: ModelRegistry) -> None:
    hidden, vocab, layers = 8192, 102400, 95
    attention = 2 * hidden * hidden + 2 * hidden * 8 * 128  # Q and O, K and V of 8 KV heads of 128
    mlp = 3 * hidden * 22016  # SwiGLU
    total = layers * (attention + mlp + 2 * hidden) + hidden + 2 * vocab * hidden  # untied head
    counts = parameter_counts(registry.get("deepseek-llm-67b"))
    assert counts.total_params == total == 67_425_001_472
    published = registry.entry("deepseek-llm-67b").published
    assert published is not None
    assert published.total_params == 67e9
    # the paper's (and the name's) 67B is rounded to two digits: 67.43B is 0.63% above it, inside the
    # 0.75% test_registry.py allows rounded totals, not the 0.5% of test_counts.py
    assert counts.total_params == pytest.approx(published.total_params, rel=0.0075)


def test_nemotron_22b_by_hand_and_its_benchmarks_flop_per_token(registry: ModelRegistry) -> None:
    hidden, vocab, layers = 6144, 256000, 40
    attention = 4 * hidden * hidden  # MHA, no biases
    mlp = 2 * hidden * 24576  # squared ReLU: up and down
    norms = 2 * 2 * hidden  # two layernorm1p a layer, each a weight and a bias
    total = layers * (attention + mlp + norms) + 2 * hidden + 2 * vocab * hidden  # untied head
    spec = registry.get("nemotron-3-22b")
    assert parameter_counts(spec).total_params == total == 21_266_116_608
    # the name's 22B rounds 21.27B up: no published total is recorded
    assert registry.entry("nemotron-3-22b").published is None
    # NeMo-Megatron-Launcher's 24.05 table: 536 model TFLOP/s at 4113 tokens/s per GPU, with model
    # FLOPs by Narayanan et al.'s formula (its Appendix A), which holds the vocabulary: 256,000 fits
    per_token = flops_per_token(spec, seq_len=4096, convention="megatron").training_flop
    assert per_token * 4113 == pytest.approx(536e12, rel=0.005)


# (row id, the model cell as the table writes it, the catalog model it must name)
ROWS = [
    ("probe-training-3.tsv", "Y04", "Gopher", "gopher-280b"),
    ("probe-training-3.tsv", "Y21", "DeepSeek 67B", "deepseek-llm-67b"),
    ("probe-training-7.tsv", "R216", "Nemotron-22B", "nemotron-3-22b"),
]


@pytest.mark.parametrize(("table", "row_id", "cell", "expected"), ROWS, ids=[r[1] for r in ROWS])
def test_the_rows_names_resolve_to_the_new_models(
    registry: ModelRegistry, table: str, row_id: str, cell: str, expected: str
) -> None:
    row = next(row for row in read_table(VALIDATION / table) if row.row_id == row_id)
    assert row.text("model") == cell
    spec, note = resolve_model(registry, row)
    assert spec.name == expected
    assert f"catalog model {expected}" in note
    assert registry.matches(cell) == [expected]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("deepseek-ai/deepseek-llm-67b-base", "deepseek-llm-67b"),
        ("deepseek-ai/deepseek-llm-67b-chat", "deepseek-llm-67b"),
        ("DeepSeek LLM 67B", "deepseek-llm-67b"),
        ("Gopher 280B", "gopher-280b"),
        ("nemotron3_22b", "nemotron-3-22b"),  # NeMo's recipe name
        ("Nemotron-3 22B", "nemotron-3-22b"),
        # the 2025 Nemotron 3 family keeps its own models
        ("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", "nemotron-3-nano-30b-a3b"),
    ],
)
def test_other_spellings_resolve(registry: ModelRegistry, name: str, expected: str) -> None:
    assert registry.matches(name) == [expected]
