"""Model catalog and model-input defects (task M1): published active counts compared in the card's
convention, gpt-oss expert biases, an imported config named after its file, a malformed
``rope_scaling`` refused, Gemma 3's pre-training context.

Every expected count is worked by hand below from the model's config.json shapes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from expect import one_line_error
from lightspeed.errors import DataFileError
from lightspeed.workload import ModelRegistry, describe_model, parameter_counts, spec_from_hf_config

ROOT = Path(__file__).resolve().parents[2]
HF_CONFIGS = ROOT / "tests" / "fixtures" / "hf_configs"


# --- 1: GLM and MiniMax cards count active parameters without the embedding table and LM head ----


def test_glm_4_5_air_active_is_compared_without_embeddings_by_hand(registry: ModelRegistry) -> None:
    # zai-org/GLM-4.5-Air config.json: hidden 4096, 46 layers, 96 heads and 8 KV heads of 128 with
    # Q/K/V biases, 1 dense layer of 10944 (SwiGLU), then 45 MoE layers of 128 experts of 1408
    # (top-8) plus 1 shared, a router of 128 x 4096 with a 128-entry expert bias; RMSNorm.
    hidden, layers = 4096, 46
    attention = hidden * 96 * 128 + 2 * hidden * 8 * 128 + 96 * 128 * hidden + (96 * 128 + 2 * 8 * 128)
    assert attention == 109_066_240
    dense_mlp = 3 * hidden * 10944
    expert = 3 * hidden * 1408
    moe_layer_active = (8 + 1) * expert + 128 * hidden + 128
    norms = layers * 2 * hidden + hidden
    without_embeddings = layers * attention + dense_mlp + 45 * moe_layer_active + norms
    assert without_embeddings == 12_182_615_680  # the card's "12B active"
    summary = describe_model(registry.entry("glm-4.5-air"))
    assert summary.active_params_as_published == without_embeddings
    assert summary.active_params == without_embeddings + 2 * 151_552 * hidden  # + table and LM head


@pytest.mark.parametrize(
    ("name", "vocab", "hidden", "card_active"),
    # the model cards' active figures; vocab and hidden from each config.json
    [
        ("glm-4.5", 151_552, 5120, 32e9),
        ("glm-4.5-air", 151_552, 4096, 12e9),
        ("glm-4.6", 151_552, 5120, 32e9),
        ("glm-5", 154_880, 6144, 40e9),
        ("minimax-m2", 200_064, 3072, 10e9),
    ],
)
def test_glm_and_minimax_active_is_compared_without_embeddings(
    name: str, vocab: int, hidden: int, card_active: float, registry: ModelRegistry
) -> None:
    entry = registry.entry(name)
    assert entry.published is not None
    assert entry.published.active_params == card_active
    assert entry.published.active_counts == "no-embeddings"
    summary = describe_model(entry)
    tables = 2 * vocab * hidden  # untied: the token table and the LM head
    assert summary.active_params_as_published == summary.active_params - tables
    # counted the card's way the figure is within 2.5% of the card (with the tables 4.6% to 11.9% off)
    assert summary.active_params_as_published is not None
    assert abs(summary.active_params_as_published / card_active - 1) < 0.025


def test_model_show_compares_glm_4_5_air_without_embeddings(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("model", "show", "glm-4.5-air")
    assert result.code == 0
    line = " ".join(result.out.split())
    # 12,182,615,680 / 12e9 - 1 = +1.52%
    assert "active 12 B (computed 12.18 B without embeddings, +1.52%)" in line


# --- 2: every gpt-oss expert has a bias on its gate/up and its down projection ------------------


def _gpt_oss_total(num_layers: int, num_experts: int) -> int:
    """gpt-oss by hand from config.json: hidden 2880, 64 query and 8 KV heads of 64 with biases on
    Q, K, V and O, experts of 2880 (SwiGLU) with a gate_up bias of 2 x 2880 and a down bias of
    2880 (transformers GptOssExperts), a router of E x 2880 with E biases, RMSNorm, untied
    vocabulary of 201,088."""
    hidden, vocab = 2880, 201_088
    attention = 2 * hidden * 64 * 64 + 2 * hidden * 8 * 64 + (64 * 64 + 2 * 8 * 64) + hidden
    expert = 3 * hidden * 2880 + 2 * 2880 + hidden  # weights + gate_up bias + down bias
    router = num_experts * hidden + num_experts
    norms = num_layers * 2 * hidden + hidden
    return 2 * vocab * hidden + num_layers * (attention + router + num_experts * expert) + norms


@pytest.mark.parametrize(
    ("name", "num_layers", "num_experts", "expected"),
    # OpenAI's model card, Table 1: total 116.83B and 20.91B
    [("gpt-oss-120b", 36, 128, 116_829_154_368), ("gpt-oss-20b", 24, 32, 20_914_755_648)],
)
def test_gpt_oss_counts_its_expert_biases(
    name: str, num_layers: int, num_experts: int, expected: int, registry: ModelRegistry
) -> None:
    assert _gpt_oss_total(num_layers, num_experts) == expected
    counts = parameter_counts(registry.get(name))
    assert counts.expert_params == 3 * 2880 * 2880 + 8640
    assert counts.total_params == expected


def test_gpt_oss_120b_mlp_matches_the_card(registry: ModelRegistry) -> None:
    # the card's MLP 114.71B: 36 x 128 experts of 24,891,840 plus 36 routers of 368,768
    counts = parameter_counts(registry.get("gpt-oss-120b"))
    mlp = counts.routed_expert_params + counts.router_params
    assert mlp == 36 * (128 * 24_891_840 + 368_768) == 114_714_874_368
    assert round(counts.total_params / 1e7) == 11_683  # 116.83B, as printed


def test_imported_gpt_oss_config_counts_its_expert_biases() -> None:
    spec = spec_from_hf_config(HF_CONFIGS / "gpt-oss-120b" / "config.json")
    assert spec.mlp_bias
    assert parameter_counts(spec).total_params == 116_829_154_368


# --- 3: an imported config.json is named after its file -------------------------------------------


def _llama3_8b() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((HF_CONFIGS / "llama-3-8b" / "config.json").read_text())
    data.pop("_name_or_path", None)
    return data


def test_a_config_file_is_named_after_its_stem(tmp_path: Path) -> None:
    folder = tmp_path / "cfg"
    folder.mkdir()
    for stem in ("llama3-8b", "llama3-8b-long"):
        (folder / f"{stem}.json").write_text(json.dumps(_llama3_8b()))
    names = {spec_from_hf_config(folder / f"{stem}.json").name for stem in ("llama3-8b", "llama3-8b-long")}
    assert names == {"llama3-8b", "llama3-8b-long"}


def test_a_config_json_is_named_after_its_folder(tmp_path: Path) -> None:
    folder = tmp_path / "my-llama"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(_llama3_8b()))
    assert spec_from_hf_config(folder / "config.json").name == "my-llama"
    assert spec_from_hf_config(folder).name == "my-llama"


def test_model_show_names_a_config_file_by_its_stem(tmp_path: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    folder = tmp_path / "cfg"
    folder.mkdir()
    path = folder / "llama3-8b.json"
    path.write_text(json.dumps(_llama3_8b()))
    result = run_cli("model", "show", str(path))
    assert result.code == 0
    assert result.out.splitlines()[0].strip() == "llama3-8b (llama3-8b)"


# --- 4: a malformed rope_scaling is refused, naming the field -------------------------------------


def _scaled(tmp_path: Path, scaling: object, longest: int = 131_072) -> Path:
    data = _llama3_8b()
    data["max_position_embeddings"] = longest
    data["rope_scaling"] = scaling
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize(
    ("scaling", "field"),
    [
        (
            {"factor": "eight", "original_max_position_embeddings": "8192", "rope_type": "llama3"},
            "rope_scaling.factor",
        ),
        (
            {"factor": 8.0, "original_max_position_embeddings": "8192", "rope_type": "llama3"},
            "rope_scaling.original_max_position_embeddings",
        ),
        (
            {"factor": 8.0, "original_max_position_embeddings": 0, "rope_type": "llama3"},
            "rope_scaling.original_max_position_embeddings",
        ),
        (
            {"factor": 8.0, "original_max_position_embeddings": 262_144, "rope_type": "llama3"},
            "rope_scaling.original_max_position_embeddings",
        ),
        ({"factor": -8.0, "rope_type": "linear"}, "rope_scaling.factor"),
        ("llama3", "rope_scaling"),
    ],
)
def test_a_malformed_rope_scaling_is_refused(tmp_path: Path, scaling: object, field: str, run_cli) -> None:  # type: ignore[no-untyped-def]
    path = _scaled(tmp_path, scaling)
    with pytest.raises(DataFileError, match=f"field '{field}'"):
        spec_from_hf_config(path)
    one_line_error(run_cli("model", "show", str(path)), str(path), f"field '{field}'")


def test_an_original_context_above_the_maximum_says_so(tmp_path: Path) -> None:
    path = _scaled(
        tmp_path, {"factor": 8.0, "original_max_position_embeddings": 262_144, "rope_type": "llama3"}
    )
    with pytest.raises(DataFileError, match="262,144 is above max_position_embeddings 131,072"):
        spec_from_hf_config(path)


@pytest.mark.parametrize(
    ("scaling", "longest", "original"),
    [
        ({"factor": 8.0, "original_max_position_embeddings": 8192, "rope_type": "llama3"}, 131_072, 8192),
        # Qwen's YaRN recipe adds rope_scaling without raising max_position_embeddings: not extended
        ({"factor": 4.0, "original_max_position_embeddings": 32_768, "type": "yarn"}, 32_768, None),
        (None, 8192, None),
        ({"rope_type": "default", "rope_theta": 500000.0}, 8192, None),
    ],
)
def test_a_well_formed_rope_scaling_still_reads(
    tmp_path: Path, scaling: object, longest: int, original: int | None
) -> None:
    assert spec_from_hf_config(_scaled(tmp_path, scaling, longest)).original_max_seq_len == original


# --- 5: Gemma 3 4B/12B/27B were pre-trained at 32K, then RoPE-rescaled to 128K ------------------


@pytest.mark.parametrize("name", ["gemma-3-4b", "gemma-3-12b", "gemma-3-27b"])
def test_gemma_3_defaults_to_its_32k_pretraining_length(name: str, registry: ModelRegistry) -> None:
    # Gemma 3 Technical Report (arXiv 2503.19786), section 2, "Long context": pre-trained with 32K
    # sequences, the 4B, 12B and 27B then scaled to 128K with RoPE rescaling (factor 8)
    entry = registry.entry(name)
    assert (entry.spec.max_seq_len, entry.spec.original_max_seq_len) == (131_072, 32_768)
    assert entry.spec.pretraining_seq_len == 32_768
    assert describe_model(entry).seq_len == 32_768
    assert any("arxiv.org/abs/2503.19786" in source.url for source in entry.sources.values())


def test_gemma_3_1b_is_32k_native(registry: ModelRegistry) -> None:
    spec = registry.get("gemma-3-1b")
    assert (spec.max_seq_len, spec.original_max_seq_len, spec.pretraining_seq_len) == (32_768, None, 32_768)


def test_flops_default_seq_for_gemma_3_27b_is_32k(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("flops", "--model", "gemma-3-27b", "--tokens", "1e12", "--convention", "6N+attention")
    assert result.code == 0
    assert "seq_len 32768" in result.out


def test_imported_gemma_3_config_takes_the_reported_pretraining_length() -> None:
    # the published config.json says only rope_scaling {"rope_type": "linear", "factor": 8.0}
    spec = spec_from_hf_config(HF_CONFIGS / "gemma-3-27b")
    assert (spec.max_seq_len, spec.original_max_seq_len) == (131_072, 32_768)
    assert "pre-trained at 32,768 positions before RoPE scaling" in spec.note


def test_an_unscaled_gemma_3_config_keeps_its_context(tmp_path: Path) -> None:
    data = json.loads((HF_CONFIGS / "gemma-3-27b" / "config.json").read_text())
    text = data.get("text_config", data)
    text["rope_scaling"] = None
    text["max_position_embeddings"] = 32_768
    (tmp_path / "config.json").write_text(json.dumps(data))
    spec = spec_from_hf_config(tmp_path)
    assert (spec.max_seq_len, spec.original_max_seq_len) == (32_768, None)
    assert "pre-trained at" not in spec.note
