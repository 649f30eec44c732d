"""``lightspeed model list|show``: tables, the JSON contract, bad input (exit 2, one line)."""

from __future__ import annotations

import json
from pathlib import Path

from expect import one_line_error

HF_CONFIGS = Path(__file__).resolve().parents[1] / "fixtures" / "hf_configs"


def test_list_shows_every_model(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("model", "list")
    assert result.code == 0
    for name in ("deepseek-v3", "dense-100t", "gpt-moe-1.8t", "llama-3-405b", "mixtral-8x7b"):
        assert name in result.out


def test_list_json(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("model", "list", "--json")
    rows = {row["name"]: row for row in json.loads(result.out)["models"]}
    assert rows["mixtral-8x7b"]["kind"] == "moe"
    assert rows["mixtral-8x7b"]["total_params"] == 46_702_792_704
    assert rows["mixtral-8x7b"]["active_params"] == 12_879_925_248


def test_show_json_contract(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("model", "show", "llama-3.1-70b", "--json")
    assert result.code == 0
    payload = json.loads(result.out)
    assert payload["name"] == "llama-3.1-70b"  # Llama 3 70B's shapes, its own 131,072-token context
    assert (payload["spec"]["max_seq_len"], payload["spec"]["original_max_seq_len"]) == (131_072, 8192)
    assert payload["total_params"] == 70_553_706_496
    assert payload["active_params"] == 70_553_706_496
    assert payload["spec"]["attention"]["num_kv_heads"] == 8
    conventions = {item["convention"] for item in payload["flops_per_token"]}
    assert conventions == {"6N", "6N-nonembedding", "6N+attention", "6N+causal-attention", "megatron"}
    assert payload["weight_bytes"]["bf16"] == 2 * 70_553_706_496
    assert payload["kv_cache_bytes_per_token"]["bf16"] == 2 * 80 * 8 * 128 * 2
    assert payload["parameter_counts"]["lm_head_params"] == 128256 * 8192


def test_show_moe_table_has_active_and_total(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("model", "show", "deepseek-v3", "--seq", "4096")
    assert result.code == 0
    assert "active per token" in result.out
    assert "MTP modules (excluded above)" in result.out
    assert "MLA" in result.out
    assert "seq_len 4096" in result.out


def test_show_config_path(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("model", "show", "--config", str(HF_CONFIGS / "mixtral-8x7b" / "config.json"), "--json")
    assert result.code == 0
    payload = json.loads(result.out)
    assert payload["total_params"] == 46_702_792_704
    assert payload["active_params"] == 12_879_925_248
    by_path = run_cli("model", "show", str(HF_CONFIGS / "qwen2-7b"), "--json")
    assert json.loads(by_path.out)["total_params"] == 7_615_616_512


def test_show_user_catalog_model(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "m.toml").write_text(
        'schema_version = 1\nkind = "model"\nname = "mine"\nsource = "s"\n'
        "[architecture]\nnum_layers = 1\nhidden_size = 8\nffn_hidden_size = 16\nvocab_size = 10\n"
        'max_seq_len = 4\n[attention]\nkind = "mha"\nnum_heads = 2\n[sources.s]\ntitle = "t"\n',
        encoding="utf-8",
    )
    result = run_cli("--catalog", str(tmp_path), "model", "show", "mine", "--json")
    assert result.code == 0
    # 2 x 10 x 8 embeddings + 4 x 8 x 8 attention + 3 x 8 x 16 MLP + 2 x 8 norms + 8 final norm
    assert json.loads(result.out)["total_params"] == 160 + 256 + 384 + 16 + 8


def test_unknown_model_lists_the_closest(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("model", "show", "mixtral-8x8b")
    one_line_error(result)
    assert "unknown model 'mixtral-8x8b'" in result.err
    assert "mixtral-8x7b" in result.err


def test_show_needs_exactly_one_of_name_and_config(run_cli) -> None:  # type: ignore[no-untyped-def]
    one_line_error(run_cli("model", "show"))
    one_line_error(run_cli("model", "show", "llama-3-8b", "--config", str(HF_CONFIGS / "llama-3-8b")))


def test_malformed_config_is_one_line(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    config = json.loads((HF_CONFIGS / "llama-3-8b" / "config.json").read_text())
    config["num_hidden_layers"] = -1
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    result = run_cli("model", "show", "--config", str(path))
    one_line_error(result)
    assert str(path) in result.err
    assert "num_hidden_layers" in result.err
    assert "value -1" in result.err
    assert "fix:" in result.err


def test_malformed_user_toml_is_one_line(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "bad.toml"
    path.write_text('schema_version = 1\nkind = "model"\nname = \n', encoding="utf-8")
    result = run_cli("--catalog", str(path), "model", "list")
    one_line_error(result)
    assert "bad.toml" in result.err
    assert "invalid TOML" in result.err


def test_bad_seq_is_a_usage_error(run_cli) -> None:  # type: ignore[no-untyped-def]
    one_line_error(run_cli("model", "show", "llama-3-8b", "--seq", "0"))
