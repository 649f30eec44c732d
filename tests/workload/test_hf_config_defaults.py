"""config.json files that leave keys to transformers' defaults, and what a missing key says.

The published google/gemma-3-27b-it config.json (below, as published, vision and token fields
trimmed to what the import reads) gives its text_config no vocab_size and no
max_position_embeddings: transformers fills them from Gemma3TextConfig (vocab_size 262_208,
max_position_embeddings 131_072, transformers/models/gemma3/configuration_gemma3.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lightspeed.errors import DataFileError
from lightspeed.workload import kv_cache_bytes, load_models, parameter_counts, spec_from_hf_config

HF_CONFIGS = Path(__file__).resolve().parents[1] / "fixtures" / "hf_configs"
GEMMA3_27B_IT: dict[str, Any] = {
    "architectures": ["Gemma3ForConditionalGeneration"],
    "model_type": "gemma3",
    "text_config": {
        "head_dim": 128,
        "hidden_size": 5376,
        "intermediate_size": 21504,
        "model_type": "gemma3_text",
        "num_attention_heads": 32,
        "num_hidden_layers": 62,
        "num_key_value_heads": 16,
        "query_pre_attn_scalar": 168,
        "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
        "sliding_window": 1024,
    },
    "torch_dtype": "bfloat16",
    "vision_config": {"model_type": "siglip_vision_model", "num_hidden_layers": 27},
}


def _write(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_published_gemma3_config_imports_with_gemma3textconfig_defaults(tmp_path: Path) -> None:
    spec = spec_from_hf_config(_write(tmp_path, GEMMA3_27B_IT))
    assert (spec.vocab_size, spec.max_seq_len) == (262_208, 131_072)
    # the same model as the catalog's gemma-3-27b record (its own data file)
    assert (
        parameter_counts(spec).total_params == parameter_counts(load_models().get("gemma-3-27b")).total_params
    )
    # 10 global layers of 131,072 tokens, 52 of the 1,024-token window; 16 KV heads x 128 x 2 x 2 B
    assert float(kv_cache_bytes(spec, "bf16", 131_072)) == (10 * 131_072 + 52 * 1024) * 8192
    assert "vocab_size, max_position_embeddings" in spec.note
    assert "262,208, 131,072" in spec.note
    assert "Gemma3TextConfig" in spec.note
    # keys the config gives win, and then no default is noted
    data = json.loads(json.dumps(GEMMA3_27B_IT))
    data["text_config"].update(vocab_size=1000, max_position_embeddings=4096)
    given = spec_from_hf_config(_write(tmp_path, data))
    assert (given.vocab_size, given.max_seq_len, given.note) == (1000, 4096, "")


def test_a_missing_key_is_called_missing_with_a_json_fix(tmp_path: Path) -> None:
    with pytest.raises(DataFileError) as raised:
        spec_from_hf_config(_write(tmp_path, {"model_type": "llama", "hidden_size": 4096}))
    message = str(raised.value)
    assert "missing key" in message
    assert "field 'num_hidden_layers'" in message
    assert 'fix: add "num_hidden_layers": <whole number>' in message
    assert "expected a whole number" not in message
    assert "= <integer>" not in message  # TOML syntax, not this file's


def test_a_missing_key_of_text_config_names_the_object(tmp_path: Path) -> None:
    data = json.loads(json.dumps(GEMMA3_27B_IT))
    del data["text_config"]["num_hidden_layers"]
    with pytest.raises(DataFileError) as raised:
        spec_from_hf_config(_write(tmp_path, data))
    message = str(raised.value)
    assert "missing key; field 'text_config.num_hidden_layers'" in message
    assert '"num_hidden_layers": <whole number> in the "text_config" object' in message


def test_a_llama_config_without_vocab_size_is_still_refused(tmp_path: Path) -> None:
    """LlamaConfig's defaults (vocab 32,000, context 2,048) are Llama 1's, no guess for a Llama 3."""
    data = json.loads((HF_CONFIGS / "llama-3-8b" / "config.json").read_text())
    del data["vocab_size"]
    with pytest.raises(DataFileError, match=r"missing key; field 'vocab_size'"):
        spec_from_hf_config(_write(tmp_path, data))


def test_rope_scaling_keeps_the_context_the_model_was_pre_trained_at() -> None:
    """DeepSeek-V3's published config.json: max_position_embeddings 163,840, YaRN over
    rope_scaling.original_max_position_embeddings 4,096 (the V3 report's pre-training length):
    the import keeps both, as the catalog's record does; Llama 3's config has no scaling."""
    imported = spec_from_hf_config(HF_CONFIGS / "deepseek-v3" / "config.json")
    assert (imported.max_seq_len, imported.original_max_seq_len, imported.pretraining_seq_len) == (
        163_840,
        4096,
        4096,
    )
    catalog = load_models().get("deepseek-v3")
    assert (catalog.max_seq_len, catalog.original_max_seq_len) == (163_840, 4096)
    llama = spec_from_hf_config(HF_CONFIGS / "llama-3-8b" / "config.json")
    assert (llama.original_max_seq_len, llama.pretraining_seq_len) == (None, 8192)
