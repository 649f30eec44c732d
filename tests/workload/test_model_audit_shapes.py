"""Model audit, defects 4 to 11: published-active conventions, interleaved MoE placement, head
sizes and expert groups, the docs' published columns, hybrid layer counts, windowed KV per token,
config.json errors that name the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from expect import one_line_error
from lightspeed.errors import DataFileError, UserInputError
from lightspeed.workload import (
    ModelRegistry,
    MoESpec,
    describe_model,
    list_models,
    load_model_file,
    spec_from_hf_config,
)

ROOT = Path(__file__).resolve().parents[2]
HF_CONFIGS = ROOT / "tests" / "fixtures" / "hf_configs"


# --- 4: a published active figure is compared in the publisher's convention -------------------


@pytest.mark.parametrize(
    ("name", "card_total", "card_active"),
    # OpenAI's gpt-oss model card, Table 1: 116.83B total, 5.13B active; 20.91B, 3.61B
    [("gpt-oss-120b", 116.83e9, 5.13e9), ("gpt-oss-20b", 20.91e9, 3.61e9)],
)
def test_gpt_oss_active_is_compared_without_the_input_embedding(
    name: str, card_total: float, card_active: float, registry: ModelRegistry
) -> None:
    entry = registry.entry(name)
    assert entry.published is not None
    assert (entry.published.total_params, entry.published.active_params) == (card_total, card_active)
    assert entry.published.active_counts == "no-input-embedding"
    summary = describe_model(entry)
    embedding = 201_088 * 2880  # the o200k_harmony table: vocab x hidden, a lookup
    assert summary.active_params_as_published == summary.active_params - embedding
    assert summary.active_params_as_published == pytest.approx(card_active, rel=0.002)


def test_model_show_compares_gpt_oss_active_in_that_convention(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("model", "show", "gpt-oss-120b")
    line = " ".join(result.out.split())
    assert "active 5.13 B (computed 5.133 B without the input embedding, +0.06%)" in line


def test_an_unknown_active_convention_is_refused(tmp_path: Path) -> None:
    text = (ROOT / "src/lightspeed/workload/data/models/llama-3-8b.toml").read_text()
    path = tmp_path / "m.toml"
    path.write_text(text.replace("[published]\n", '[published]\nactive_counts = "some"\n'))
    with pytest.raises(DataFileError, match="active_counts"):
        load_model_file(path)


def test_deepseek_v2_lite_explains_its_active_convention(registry: ModelRegistry) -> None:
    published = registry.entry("deepseek-v2-lite").published
    assert published is not None
    assert "input embedding" in published.note


# --- 5: interleaved MoE layers sit where transformers puts them --------------------------------


def test_maverick_moe_layers_are_the_odd_ones_as_in_transformers(registry: ModelRegistry) -> None:
    maverick = registry.get("llama-4-maverick")
    step, layers = 2, 48  # interleave_moe_layer_step; transformers: range(step - 1, L, step)
    assert [index for index in range(layers) if maverick.is_moe_layer(index)] == list(
        range(step - 1, layers, step)
    )
    global_layers = [index for index in range(layers) if (index + 1) % 4 == 0]  # NoPE, full attention
    assert all(maverick.is_moe_layer(index) for index in global_layers)


def test_model_show_says_maverick_alternates(run_cli) -> None:  # type: ignore[no-untyped-def]
    out = " ".join(run_cli("model", "show", "llama-4-maverick").out.split())
    assert "every 2nd layer MoE (layers 1, 3, ..., 47): 24 MoE, 24 dense layers" in out
    assert "dense layers first" not in out


def test_dense_first_models_keep_their_placement(registry: ModelRegistry) -> None:
    deepseek = registry.get("deepseek-v3")
    assert [deepseek.is_moe_layer(index) for index in range(5)] == [False, False, False, True, True]
    assert deepseek.num_moe_layers == 58


# --- 6: a head size the hidden size does not give is asked for ---------------------------------


def _toml(tmp_path: Path, attention: str, moe: str = "") -> Path:
    path = tmp_path / "odd.toml"
    path.write_text(
        'schema_version = 1\nkind = "model"\nname = "odd"\nsource = "s"\n'
        "[architecture]\nnum_layers = 2\nhidden_size = 1000\nffn_hidden_size = 4000\n"
        f"vocab_size = 1000\nmax_seq_len = 2048\n[attention]\n{attention}\n{moe}\n"
        '[sources.s]\ntitle = "t"\nurl = "https://example.com"\n'
    )
    return path


def test_a_head_size_that_is_not_whole_is_asked_for(tmp_path: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    path = _toml(tmp_path, 'kind = "mha"\nnum_heads = 3')
    one_line_error(run_cli("model", "show", "--config", str(path)), "not a multiple", "num_heads", "head_dim")
    given = _toml(tmp_path, 'kind = "mha"\nnum_heads = 3\nhead_dim = 128')
    assert load_model_file(given).spec.attention.head_dim == 128


# --- 7: expert groups split the experts ----------------------------------------------------------


@pytest.mark.parametrize(
    ("groups", "reached", "message"),
    [(3, None, "divide"), (4, 5, "between 1 and"), (None, 2, "num_expert_groups")],
)
def test_expert_groups_must_split_the_experts(groups: int | None, reached: int | None, message: str) -> None:
    with pytest.raises(UserInputError, match=message):
        MoESpec(
            num_routed_experts=8,
            top_k=2,
            expert_ffn_hidden_size=64,
            num_expert_groups=groups,
            top_k_groups=reached,
        )
    assert MoESpec(
        num_routed_experts=8, top_k=2, expert_ffn_hidden_size=64, num_expert_groups=4, top_k_groups=2
    )


def test_a_model_file_with_bad_groups_is_refused(tmp_path: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    moe = "[moe]\nnum_routed_experts = 8\ntop_k = 2\nexpert_ffn_hidden_size = 64\nnum_expert_groups = 3\n"
    path = _toml(tmp_path, 'kind = "mha"\nnum_heads = 8', moe)
    one_line_error(run_cli("model", "show", "--config", str(path)), "num_expert_groups (3)")


# --- 8: the docs' published columns say what the records hold ------------------------------------


def test_docs_published_columns_match_the_records(registry: ModelRegistry) -> None:
    docs = (ROOT / "docs" / "workload.md").read_text()
    qwen = next(part for part in docs.split("\n- ") if part.startswith("**Qwen1.5 72B / 110B**"))
    recorded = registry.entry("qwen1.5-72b").published
    assert recorded is not None
    assert recorded.total_params == 72e9
    assert "its 72B is recorded" in qwen
    assert registry.entry("qwen1.5-110b").published is None
    kimi_row = next(line for line in docs.splitlines() if line.startswith("| `kimi-k2` |"))
    kimi = registry.entry("kimi-k2").published
    assert kimi is not None
    assert kimi.total_params is None
    assert "not recorded" in kimi_row.split("|")[4]
    gpt_oss_row = next(line for line in docs.splitlines() if line.startswith("| `gpt-oss-120b`"))
    assert "no input embedding" in gpt_oss_row


# --- 9: a Gated DeltaNet hybrid shows its config's layer count ----------------------------------


@pytest.mark.parametrize(
    ("folder", "name"),
    [("qwen3-next-80b-a3b", "qwen3-next-80b-a3b"), ("qwen3.5-397b-a17b", "qwen3.5-397b-a17b")],
)
def test_gated_deltanet_hybrids_show_the_config_layer_count(
    folder: str, name: str, registry: ModelRegistry
) -> None:
    config = json.loads((HF_CONFIGS / folder / "config.json").read_text())
    layers = config.get("text_config", config)["num_hidden_layers"]
    spec = registry.get(name)
    assert (spec.num_decoder_layers, spec.num_layers) == (layers, 2 * layers)  # the engine keeps blocks
    row = next(row for row in list_models(registry) if row.name == name)
    assert (row.num_layers, row.num_blocks) == (layers, 2 * layers)
    assert spec_from_hf_config(HF_CONFIGS / folder).num_decoder_layers == layers


def test_model_show_and_list_print_layers_and_blocks(run_cli) -> None:  # type: ignore[no-untyped-def]
    assert "layers 48 (96 blocks)" in run_cli("model", "show", "qwen3-next-80b-a3b").out
    listed = next(line for line in run_cli("model", "list").out.splitlines() if "qwen3-next-80b-a3b" in line)
    assert "48 (96 blocks)" in listed


def test_a_nemotron_block_is_a_layer(registry: ModelRegistry) -> None:
    nemotron = registry.get("nemotron-h-56b")
    assert nemotron.num_decoder_layers == nemotron.num_layers == len(nemotron.block_pattern)


# --- 10: KV cache per token of a windowed model -------------------------------------------------


def test_gemma_3_kv_per_token_holds_for_the_window_then_the_global_layers(registry: ModelRegistry) -> None:
    summary = describe_model(registry.entry("gemma-3-27b"))
    per_layer = 2 * 16 * 128 * 2  # K and V, 16 KV heads of 128, bf16: 8 KiB
    global_layers = len([index for index in range(62) if (index + 1) % 6 == 0])  # 10
    assert summary.kv_cache_bytes_per_token["bf16"] == 62 * per_layer  # 496 KiB
    assert summary.kv_cache_local_span_tokens == 1024
    assert summary.kv_cache_bytes_per_token_past_span["bf16"] == global_layers * per_layer == 80 * 1024


def test_model_show_says_where_the_per_token_figure_holds(run_cli) -> None:  # type: ignore[no-untyped-def]
    out = " ".join(run_cli("model", "show", "gemma-3-27b").out.split())
    assert "for the first 1,024 tokens: bf16 496 KiB" in out
    assert "past the first 1,024 (the layers that keep every token): bf16 80 KiB (81,920 bytes)" in out
    plain = run_cli("model", "show", "llama-3-8b").out
    assert "KV cache per token (all layers): bf16 128 KiB" in plain
    assert "past the first" not in plain


# --- 11: config.json errors name the field -------------------------------------------------------


def _config(tmp_path: Path, **changes: object) -> Path:
    config = json.loads((HF_CONFIGS / "llama-3-8b" / "config.json").read_text())
    config.update(changes)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return path


def test_a_huge_hidden_size_is_blamed_on_hidden_size(tmp_path: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    path = _config(tmp_path, hidden_size=10**30)
    line = one_line_error(run_cli("model", "show", "--config", str(path)), "field 'hidden_size'")
    assert "head_dim 31,250" not in line


def test_a_derived_head_size_past_any_model_names_the_fields(tmp_path: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    path = _config(tmp_path, hidden_size=2**20, num_attention_heads=32, num_key_value_heads=8)
    one_line_error(
        run_cli("model", "show", "--config", str(path)),
        "num_attention_heads 32",
        "field 'hidden_size'",
        "head_dim",
    )
