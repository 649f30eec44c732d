"""Model audit, defect 1: a RoPE-scaled model's default sequence length is the length it was
pre-trained at, in its catalog record as in its own config.json.

The published values below were read from each model's config.json (``rope_scaling`` /
Phi-3's top-level ``original_max_position_embeddings``), the URL beside each.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from lightspeed.workload import ModelRegistry, describe_model, entry_from_hf_config, spec_from_hf_config

HF_CONFIGS = Path(__file__).resolve().parents[1] / "fixtures" / "hf_configs"

# fixture folder -> the catalog record of the same model
FIXTURE_RECORDS = {
    "deepseek-v2-lite": "deepseek-v2-lite",
    "deepseek-v3": "deepseek-v3",
    "deepseek-v3.2": "deepseek-v3.2",
    "gemma-2-9b": "gemma-2-9b",
    "gemma-3-27b": "gemma-3-27b",
    "glm-5": "glm-5",
    "gpt-oss-120b": "gpt-oss-120b",
    "llama-3-8b": "llama-3-8b",
    "llama-4-scout": "llama-4-scout",
    "mistral-7b-v0.1": "mistral-7b-v0.1",
    "mixtral-8x7b": "mixtral-8x7b",
    "nemotron-3-super": "nemotron-3-super-120b-a12b",
    "qwen3-30b-a3b": "qwen3-30b-a3b",
    "qwen3-next-80b-a3b": "qwen3-next-80b-a3b",
    "qwen3.5-397b-a17b": "qwen3.5-397b-a17b",
}

# (model, max_position_embeddings, original_max_position_embeddings, its config.json)
ROPE_SCALED = [
    ("deepseek-v2", 163_840, 4096, "https://huggingface.co/deepseek-ai/DeepSeek-V2/blob/main/config.json"),
    (
        "deepseek-v2-lite",
        163_840,
        4096,
        "https://huggingface.co/deepseek-ai/DeepSeek-V2-Lite/blob/main/config.json",
    ),
    ("deepseek-v3", 163_840, 4096, "https://huggingface.co/deepseek-ai/DeepSeek-V3/blob/main/config.json"),
    (
        "deepseek-v3.2",
        163_840,
        4096,
        "https://huggingface.co/deepseek-ai/DeepSeek-V3.2-Exp/blob/main/config.json",
    ),
    ("kimi-k2", 131_072, 4096, "https://huggingface.co/moonshotai/Kimi-K2-Instruct/blob/main/config.json"),
    ("gpt-oss-120b", 131_072, 4096, "https://huggingface.co/openai/gpt-oss-120b/blob/main/config.json"),
    ("gpt-oss-20b", 131_072, 4096, "https://huggingface.co/openai/gpt-oss-20b/blob/main/config.json"),
    ("llama-3.1-8b", 131_072, 8192, "https://huggingface.co/meta-llama/Llama-3.1-8B/blob/main/config.json"),
    ("llama-3.2-1b", 131_072, 8192, "https://huggingface.co/meta-llama/Llama-3.2-1B/blob/main/config.json"),
    ("llama-3.2-3b", 131_072, 8192, "https://huggingface.co/meta-llama/Llama-3.2-3B/blob/main/config.json"),
    (
        "llama-4-scout",
        10_485_760,
        8192,
        "https://huggingface.co/meta-llama/Llama-4-Scout-17B-16E-Instruct/blob/main/config.json",
    ),
    (
        "phi-3.5-mini",
        131_072,
        4096,
        "https://huggingface.co/microsoft/Phi-3.5-mini-instruct/blob/main/config.json",
    ),
    (
        "phi-3.5-moe",
        131_072,
        4096,
        "https://huggingface.co/microsoft/Phi-3.5-MoE-instruct/blob/main/config.json",
    ),
]


@pytest.mark.parametrize("folder", sorted(FIXTURE_RECORDS))
def test_a_record_and_its_config_json_agree_on_sequence_lengths(folder: str, registry: ModelRegistry) -> None:
    imported = spec_from_hf_config(HF_CONFIGS / folder)
    record = registry.get(FIXTURE_RECORDS[folder])
    assert (record.max_seq_len, record.original_max_seq_len, record.pretraining_seq_len) == (
        imported.max_seq_len,
        imported.original_max_seq_len,
        imported.pretraining_seq_len,
    )


@pytest.mark.parametrize(("name", "longest", "original", "url"), ROPE_SCALED)
def test_rope_scaled_records_declare_their_original_length(
    name: str, longest: int, original: int, url: str, registry: ModelRegistry
) -> None:
    entry = registry.entry(name)
    assert (entry.spec.max_seq_len, entry.spec.original_max_seq_len) == (longest, original)
    assert entry.spec.pretraining_seq_len == original
    assert any(source.url == url for source in entry.sources.values()), "cite the config.json"


def test_a_record_citing_an_original_length_declares_it(registry: ModelRegistry) -> None:
    """The rule both ways: a record whose sources quote ``original_max_position_embeddings N``
    (or a report's "pre-trained with NK sequences") declares ``original_max_seq_len = N``; one
    that declares it quotes where it comes from."""
    pattern = re.compile(r"original_max_position_embeddings (\d+)")
    reported = re.compile(r"pre-trained with (\d+)K sequences")  # a report's words (Gemma 3: 32K)
    for name in registry.names():
        entry = registry.entry(name)
        titles = [source.title for source in entry.sources.values()]
        quoted = {int(found) for title in titles for found in pattern.findall(title)}
        quoted |= {int(found) * 1024 for title in titles for found in reported.findall(title)}
        declared = entry.spec.original_max_seq_len
        assert quoted == ({declared} if declared else set()), name


def test_deepseek_v32_flops_default_to_its_4k_pretraining_in_both_readings(registry: ModelRegistry) -> None:
    config = json.loads((HF_CONFIGS / "deepseek-v3.2" / "config.json").read_text())
    assert config["rope_scaling"]["original_max_position_embeddings"] == 4096
    from_catalog = describe_model(registry.entry("deepseek-v3.2"))
    from_config = describe_model(entry_from_hf_config(HF_CONFIGS / "deepseek-v3.2"))
    assert from_catalog.seq_len == from_config.seq_len == 4096
    catalog_flop = {item.convention: item.training_flop for item in from_catalog.flops_per_token}
    config_flop = {item.convention: item.training_flop for item in from_config.flops_per_token}
    assert catalog_flop["6N+attention"] == pytest.approx(config_flop["6N+attention"], rel=1e-12)


def test_rope_parameters_of_transformers_5_configs_give_the_original_length(tmp_path: Path) -> None:
    config = json.loads((HF_CONFIGS / "llama-3-8b" / "config.json").read_text())
    config.pop("rope_scaling", None)
    config["max_position_embeddings"] = 131_072
    config["rope_parameters"] = {
        "rope_type": "llama3",
        "rope_theta": 500000.0,
        "factor": 8.0,
        "original_max_position_embeddings": 8192,
    }
    (tmp_path / "config.json").write_text(json.dumps(config))
    assert spec_from_hf_config(tmp_path).pretraining_seq_len == 8192
