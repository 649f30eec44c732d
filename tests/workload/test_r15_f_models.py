"""Round 15 fix F, models: the MTP module count is bounded in every input (defect 2), an MoE model
keeps at least one MoE layer (3), a LatentMoE latent is below the hidden size (4), a ``null`` where
transformers applies a default reads as that default (5), and Qwen3's pre-training length is the
technical report's 32,768, not its config.json's 40,960 (7)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from expect import one_line_error
from lightspeed.errors import DataFileError, UserInputError
from lightspeed.limits import MAX_MTP_MODULES
from lightspeed.workload import AttentionSpec, ModelRegistry, MoESpec, TransformerSpec, spec_from_hf_config

HF_CONFIGS = Path(__file__).parents[1] / "fixtures" / "hf_configs"


def _config(tmp_path: Path, fixture: str, *, text: bool = False, **changes: Any) -> Path:
    """The fixture's config.json with ``changes`` (in ``text_config`` where ``text``), written to a
    folder of its own."""
    data = json.loads((HF_CONFIGS / fixture / "config.json").read_text())
    (data["text_config"] if text else data).update(changes)
    folder = tmp_path / fixture
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(data))
    return folder


def _variant(tmp_path: Path, base: str, table: str, line: str) -> str:
    """A model TOML that ``extends`` ``base`` and sets one ``line`` under ``[table]``."""
    path = tmp_path / f"variant-of-{base}.toml"
    path.write_text(
        f'schema_version = 1\nkind = "model"\nname = "variant-of-{base}"\nextends = "{base}"\n'
        f"[{table}]\n{line}\n"
    )
    return str(path)


# --- defect 2: the MTP module count has the bound --mtp-modules has -------------------------------


def test_the_mtp_bound_is_the_one_the_cli_option_has() -> None:
    assert MAX_MTP_MODULES == 16  # the constant both the option and the importers use


@pytest.mark.parametrize(
    ("fixture", "key"),
    [("deepseek-v3", "num_nextn_predict_layers"), ("qwen3-next-80b-a3b", "mtp_num_hidden_layers")],
)
def test_a_config_json_with_a_billion_mtp_modules_is_refused_naming_the_key(
    tmp_path: Path, fixture: str, key: str
) -> None:
    folder = _config(tmp_path, fixture, **{key: 1_000_000_000})
    with pytest.raises(DataFileError, match=f"{key} 1,000,000,000 is above 16") as error:
        spec_from_hf_config(folder)
    assert str(folder / "config.json") in str(error.value)


def test_model_show_refuses_the_billion_mtp_modules_in_one_line(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    folder = _config(tmp_path, "deepseek-v3", num_nextn_predict_layers=1_000_000_000)
    one_line_error(run_cli("model", "show", str(folder)), "config.json", "num_nextn_predict_layers")
    toml = _variant(tmp_path, "deepseek-v3", "architecture", "num_mtp_modules = 1000000000")
    one_line_error(run_cli("model", "show", toml), toml, "num_mtp_modules = 1,000,000,000 must be 0 to 16")


def test_mtp_modules_up_to_the_bound_are_read(tmp_path: Path) -> None:
    assert (
        spec_from_hf_config(_config(tmp_path, "deepseek-v3", num_nextn_predict_layers=3)).num_mtp_modules == 3
    )
    with pytest.raises(UserInputError, match="must be 0 to 16"):
        _spec(num_mtp_modules=17)


# --- defect 3: an MoE spec with no MoE layer -------------------------------------------------------


def _spec(**changes: Any) -> TransformerSpec:
    """Mixtral 8x7B's shape (32 layers, hidden 4096), an MoE layer in every layer by default."""
    moe = MoESpec(num_routed_experts=8, top_k=2, expert_ffn_hidden_size=14336, **changes.pop("moe", {}))
    return TransformerSpec(
        name="t", display_name="t", num_layers=32, hidden_size=4096, ffn_hidden_size=14336,
        vocab_size=32000, attention=AttentionSpec(kind="gqa", num_heads=32, num_kv_heads=8, head_dim=128),
        moe=moe, **changes,
    )  # fmt: skip


def test_llama4_scout_with_a_moe_step_past_its_layers_is_refused(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    folder = _config(tmp_path, "llama-4-scout", text=True, interleave_moe_layer_step=99)
    one_line_error(
        run_cli("model", "show", str(folder)), "config.json", "leave no MoE layer among the 48 layers"
    )


@pytest.mark.parametrize("line", ["layer_frequency = 64", "num_dense_layers = 32"])
def test_a_mixtral_variant_without_moe_layers_is_refused(run_cli, tmp_path: Path, line: str) -> None:  # type: ignore[no-untyped-def]
    one_line_error(run_cli("model", "show", _variant(tmp_path, "mixtral-8x7b", "moe", line)), "no MoE layer")


def test_one_moe_layer_is_enough() -> None:
    # 32 layers: 31 dense, then layer 31 is MoE ((31 - 31 + 1) % 1 == 0); frequency 32 makes
    # layer 31 the only MoE one ((31 + 1) % 32 == 0)
    assert _spec(moe={"num_dense_layers": 31}).num_moe_layers == 1
    assert _spec(moe={"layer_frequency": 32}).num_moe_layers == 1
    with pytest.raises(UserInputError, match="leave no MoE layer among the 32 layers"):
        _spec(moe={"layer_frequency": 33})


# --- defect 4: LatentMoE's latent is below the hidden size -----------------------------------------


def test_a_latent_at_or_above_the_hidden_size_is_refused(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    toml = _variant(tmp_path, "mixtral-8x7b", "moe", "latent_size = 999999")
    one_line_error(run_cli("model", "show", toml), "latent_size 999,999 must be below hidden_size 4,096")
    with pytest.raises(UserInputError, match="must be below hidden_size"):
        _spec(moe={"latent_size": 4096})
    assert _spec(moe={"latent_size": 1024}).moe is not None  # Nemotron 3 Super's 1,024 of 4,096


def test_nemotron_3_super_keeps_its_latent(registry: ModelRegistry) -> None:
    spec = registry.get("nemotron-3-super")
    assert spec.moe is not None
    assert (spec.moe.latent_size, spec.hidden_size) == (1024, 4096)


# --- defect 5: null is transformers' default ----------------------------------------------------


def test_mixtral_with_null_kv_heads_has_as_many_as_attention_heads(tmp_path: Path) -> None:
    # transformers' MixtralConfig: num_key_value_heads None -> num_attention_heads (32)
    spec = spec_from_hf_config(_config(tmp_path, "mixtral-8x7b", num_key_value_heads=None))
    assert (spec.attention.num_heads, spec.attention.num_kv_heads) == (32, 32)


def test_deepseek_v2_lite_with_null_groups_has_no_group_limit(tmp_path: Path) -> None:
    # transformers' DeepseekV2Config: n_group and topk_group default to None (no group-limited routing)
    spec = spec_from_hf_config(_config(tmp_path, "deepseek-v2-lite", n_group=None, topk_group=None))
    assert spec.moe is not None
    assert (spec.moe.num_expert_groups, spec.moe.top_k_groups) == (None, None)


def test_a_null_without_a_default_is_still_refused(tmp_path: Path) -> None:
    with pytest.raises(DataFileError, match="num_attention_heads"):
        spec_from_hf_config(_config(tmp_path, "mixtral-8x7b", num_attention_heads=None))


# --- defect 7: Qwen3 pre-trained at 32,768 -----------------------------------------------------


QWEN3_FORTY_K = ("qwen3-0.6b", "qwen3-1.7b", "qwen3-4b", "qwen3-8b", "qwen3-14b", "qwen3-32b",
                 "qwen3-30b-a3b", "qwen3-235b-a22b")  # fmt: skip


@pytest.mark.parametrize("name", QWEN3_FORTY_K)
def test_qwen3_records_pretrain_at_32k_not_the_40k_they_serve(registry: ModelRegistry, name: str) -> None:
    # Qwen3 Technical Report (arXiv 2505.09388) section 3.2: the long-context stage S3 pre-trains
    # every model with 32,768-token sequences; config.json's max_position_embeddings is 40,960
    spec = registry.get(name)
    assert (spec.max_seq_len, spec.pretraining_seq_len) == (40_960, 32_768)


def test_a_qwen3_config_json_import_agrees_and_says_why(tmp_path: Path) -> None:
    spec = spec_from_hf_config(HF_CONFIGS / "qwen3-30b-a3b")
    assert spec.pretraining_seq_len == 32_768
    assert "pre-trained at 32,768 positions (the Qwen3 Technical Report" in spec.note
    served = spec_from_hf_config(_config(tmp_path, "qwen3-30b-a3b", max_position_embeddings=262_144))
    assert served.pretraining_seq_len == 262_144  # not the 40,960 release: nothing to say


def test_flops_uses_the_pretraining_length_for_qwen3(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(
        "flops", "--model", "qwen3-8b", "--tokens", "36T", "--convention", "6N+attention", "--json"
    )
    assert result.code == 0, result.err
    per_token = json.loads(result.out)["per_token"]
    assert per_token["seq_len"] == 32_768
    # PaLM's attention term 12 L s H d: 36 layers, s 32,768, 32 heads of 128
    assert per_token["attention_training_flop"] == 12 * 36 * 32_768 * 32 * 128
