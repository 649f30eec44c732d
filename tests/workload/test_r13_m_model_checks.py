"""Round 13 fix M: the 2507/0905 releases resolve to their own (longer) contexts (defect 2), an
attention kind that its KV heads contradict is refused (defect 3), a window that spans the whole
context is full attention, said in the note (defect 4), and qwen2.5 records cite the config whose
context they record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from expect import one_line_error
from lightspeed.errors import UserInputError
from lightspeed.sol.decomposition import attention_variants
from lightspeed.workload import (
    AttentionSpec,
    ModelRegistry,
    TransformerSpec,
    load_model_file,
    spec_from_hf_config,
)
from lightspeed.workload.spec import grouped_attention_kind

# --- defect 2: dated releases with a longer context than the model they update ------------------


@pytest.mark.parametrize(
    ("name", "record", "context"),
    [
        # Qwen's cards: Qwen3-4B-Instruct-2507 and -Thinking-2507 "Context Length: 262,144 natively";
        # Qwen3-4B (April 2025): 32,768 native, config.json max_position_embeddings 40960
        ("Qwen/Qwen3-4B-Instruct-2507", "qwen3-4b-instruct-2507", 262_144),
        ("Qwen/Qwen3-4B-Thinking-2507", "qwen3-4b-instruct-2507", 262_144),
        ("Qwen/Qwen3-4B-Instruct-2507-FP8", "qwen3-4b-instruct-2507", 262_144),
        ("Qwen3 4B Thinking 2507", "qwen3-4b-instruct-2507", 262_144),
        ("Qwen/Qwen3-4B", "qwen3-4b", 40_960),
        ("Qwen3 4B", "qwen3-4b", 40_960),
        # Moonshot's card: K2-Instruct-0905's "context window has been increased from 128k to 256k"
        ("moonshotai/Kimi-K2-Instruct-0905", "kimi-k2-instruct-0905", 262_144),
        ("moonshotai/Kimi-K2-Instruct", "kimi-k2", 131_072),
        # the siblings that already had records
        ("Qwen/Qwen3-30B-A3B-Thinking-2507", "qwen3-30b-a3b-instruct-2507", 262_144),
        ("Qwen/Qwen3-235B-A22B-Thinking-2507", "qwen3-235b-a22b-instruct-2507", 262_144),
    ],
)
def test_a_dated_release_resolves_to_its_own_context(
    registry: ModelRegistry, name: str, record: str, context: int
) -> None:
    spec = registry.get(name)
    assert (spec.name, spec.max_seq_len) == (record, context)


def test_the_2507_record_keeps_qwen3_4b_shapes(registry: ModelRegistry) -> None:
    base, update = registry.get("qwen3-4b"), registry.get("qwen3-4b-instruct-2507")
    assert (update.num_layers, update.hidden_size, update.attention) == (
        base.num_layers,
        base.hidden_size,
        base.attention,
    )
    assert update.note  # it says what it is


# --- defect 3: the kind the KV heads make -------------------------------------------------------


def test_grouped_attention_kind() -> None:
    assert grouped_attention_kind(32, 32) == "mha"
    assert grouped_attention_kind(32, 1) == "mqa"
    assert grouped_attention_kind(32, 8) == "gqa"


@pytest.mark.parametrize(
    ("kind", "kv_heads", "named", "fix"),
    [
        ("gqa", 32, "is MHA", 'set kind = "mha"'),
        ("gqa", 1, "is MQA", 'set kind = "mqa"'),
        ("mqa", 8, "is GQA", 'set kind = "gqa" or num_kv_heads = 1'),
        ("mha", 8, "is GQA", 'set kind = "gqa" or num_kv_heads = 32'),
    ],
)
def test_a_kind_its_kv_heads_contradict_is_refused(kind: str, kv_heads: int, named: str, fix: str) -> None:
    with pytest.raises(UserInputError, match=named) as refused:
        AttentionSpec(kind, 32, kv_heads, 128)
    assert fix in str(refused.value)


def test_one_head_with_one_kv_head_is_mha_or_mqa() -> None:
    assert AttentionSpec("mha", 1, 1, 64).num_kv_heads == AttentionSpec("mqa", 1, 1, 64).num_kv_heads == 1
    with pytest.raises(UserInputError, match="is MHA"):
        AttentionSpec("gqa", 1, 1, 64)


def _model_file(tmp_path: Path, attention: str, *, max_seq_len: int = 8192) -> Path:
    path = tmp_path / "my-model.toml"
    path.write_text(
        'schema_version = 1\nkind = "model"\nname = "my-model"\nsource = "mine"\n\n[architecture]\n'
        f"num_layers = 32\nhidden_size = 4096\nffn_hidden_size = 14336\nvocab_size = 128256\n"
        f"max_seq_len = {max_seq_len}\n\n[attention]\n{attention}\n\n"
        '[sources.mine]\ntitle = "my own"\nurl = "https://example.com"\n'
    )
    return path


def test_the_cli_refuses_a_gqa_model_file_with_as_many_kv_heads_as_heads(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = _model_file(tmp_path, 'kind = "gqa"\nnum_heads = 32\nnum_kv_heads = 32')
    one_line_error(run_cli("model", "show", str(path)), "gqa attention with 32 heads and 32 KV heads is MHA")


# --- defect 4: a window as long as the context --------------------------------------------------


def _spec(window: int, max_seq_len: int, **attention: object) -> TransformerSpec:
    return TransformerSpec(
        name="m",
        display_name="m",
        num_layers=4,
        hidden_size=512,
        ffn_hidden_size=1024,
        vocab_size=1000,
        max_seq_len=max_seq_len,
        attention=AttentionSpec("gqa", 8, 2, 64, sliding_window=window, **attention),  # type: ignore[arg-type]
    )


def test_a_window_below_the_context_stays() -> None:
    spec = _spec(4096, 32_768)
    assert spec.attention.sliding_window == 4096
    assert spec.note == ""


@pytest.mark.parametrize("window", [8192, 100_000])
def test_a_window_not_below_the_context_is_full_attention_with_a_note(window: int) -> None:
    # a token at position 8,191 of an 8,192-token context attends to 8,192 tokens: all of them
    spec = _spec(window, 8192)
    assert spec.attention.sliding_window is None
    assert spec.attention.local_kind == "full"
    assert f"sliding_window {window:,} is not below max_seq_len 8,192" in spec.note
    assert "every layer is full attention" in spec.note


def test_interleaved_windows_spanning_the_context_become_all_full() -> None:
    spec = _spec(8192, 8192, full_attention_interval=2)
    assert spec.attention.full_attention_interval is None
    spec = _spec(8192, 8192, layer_types=("sliding", "full", "sliding", "full"))
    assert spec.attention.layer_types == ()


def test_a_chunk_spanning_the_context_is_full_attention() -> None:
    spec = TransformerSpec(
        name="m", display_name="m", num_layers=4, hidden_size=512, ffn_hidden_size=1024, vocab_size=1000,
        max_seq_len=4096, attention=AttentionSpec("gqa", 8, 2, 64, attention_chunk_size=8192),
    )  # fmt: skip
    assert spec.attention.attention_chunk_size is None
    assert "attention_chunk_size 8,192 is not below max_seq_len 4,096" in spec.note


def test_the_model_file_of_the_expert_check_says_so(tmp_path: Path) -> None:
    attention = 'kind = "gqa"\nnum_heads = 32\nnum_kv_heads = 8\nhead_dim = 128\nsliding_window = 100000'
    spec = load_model_file(_model_file(tmp_path, attention)).spec
    assert spec.attention.sliding_window is None
    assert "sliding_window 100,000 is not below max_seq_len 8,192" in spec.note


def _config(tmp_path: Path, **fields: object) -> Path:
    config = {
        "architectures": ["MistralForCausalLM"], "model_type": "mistral", "hidden_size": 4096,
        "intermediate_size": 12288, "num_attention_heads": 32, "num_hidden_layers": 36,
        "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 131072, "max_position_embeddings": 32768,
        "tie_word_embeddings": False, **fields,
    }  # fmt: skip
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return path


def test_a_published_config_with_a_window_of_its_context_still_loads(tmp_path: Path) -> None:
    # Ministral-8B-Instruct-2410's config.json: sliding_window 32768, max_position_embeddings 32768
    spec = spec_from_hf_config(_config(tmp_path, sliding_window=32768))
    assert spec.attention.sliding_window is None
    assert spec.max_seq_len == 32768
    # Mistral 7B v0.1: a 4,096-token window of 32,768 positions stays a window
    assert spec_from_hf_config(_config(tmp_path, sliding_window=4096)).attention.sliding_window == 4096


def test_a_qwen_config_with_its_window_switched_off_keeps_full_layers(tmp_path: Path) -> None:
    # Qwen2.5-7B's config.json: sliding_window 131072 with use_sliding_window false
    path = _config(
        tmp_path, model_type="qwen2", architectures=["Qwen2ForCausalLM"], sliding_window=131072,
        use_sliding_window=False, max_window_layers=28, num_hidden_layers=28, max_position_embeddings=131072,
    )  # fmt: skip
    spec = spec_from_hf_config(path)
    assert spec.attention.sliding_window is None
    assert spec.max_seq_len == 131072


# --- also checked: qwen2.5 records cite the config.json whose context they record ----------------


@pytest.mark.parametrize("size", ["7b", "14b", "32b", "72b"])
def test_qwen25_records_cite_the_instruct_config_of_their_32k_context(
    registry: ModelRegistry, size: str
) -> None:
    # Qwen2.5-*-Instruct config.json: max_position_embeddings 32768 (the cards: "config.json is set
    # for context length up to 32,768 tokens"); the base Qwen/Qwen2.5-7B's says 131072
    entry = registry.entry(f"qwen2.5-{size}")
    assert entry.spec.max_seq_len == 32_768
    citation = entry.spec.source
    assert f"Qwen2.5-{size.upper()}-Instruct/blob/main/config.json" in citation
    assert "max_position_embeddings 32768" in citation


def test_attention_variants_of_a_model_with_few_heads_are_each_a_valid_kind(registry: ModelRegistry) -> None:
    # gemma-3-1b has 4 query heads and 1 KV head: the "GQA" variant with up to 8 KV heads takes
    # all 4, which is MHA (and merges with the MHA row); building it as "gqa" is now refused
    variants = attention_variants(registry.get("gemma-3-1b"))
    kinds = [(label, spec.kind, spec.num_kv_heads) for label, spec in variants]
    assert all(kind != "gqa" or 1 < kv < 4 for _, kind, kv in kinds)
    assert ("MHA", "mha", 4) in kinds
