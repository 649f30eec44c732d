"""``null`` in a config.json and an unknown or factorless ``rope_scaling`` (round 15, helper V).

A ``null`` where transformers has a default reads as the key left out, whatever the field's type
(it did for whole numbers only: ``"tie_word_embeddings": null`` was refused, exit 2, while leaving
the key out was read as untied). ``rope_scaling`` names a RoPE type transformers knows (its
``modeling_rope_utils``: default, linear, dynamic, yarn, longrope, llama3, proportional, and the
older mrope and su), and the types that scale by a factor (linear, dynamic, yarn, llama3: a key
transformers requires) state one.

Hand figures (Meta Llama 3 8B config.json: hidden 4096, 32 layers, 32 heads and 8 KV heads of
128, SwiGLU FFN 14336, vocab 128256, RMSNorm):

* per layer: Q and O 2 x 4096^2 = 33,554,432; K and V 2 x 4096 x 1024 = 8,388,608; the MLP 3 x
  4096 x 14336 = 176,160,768; two norms 8,192: 218,112,000; x 32 = 6,979,584,000;
* untied embedding table and LM head 2 x 128256 x 4096 = 1,050,673,152, final norm 4,096:
  8,030,261,248 in all (the model card's "8B"); tied, 525,336,576 less.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from expect import one_line_error
from lightspeed.errors import DataFileError
from lightspeed.workload import parameter_counts, spec_from_hf_config

HF_CONFIGS = Path(__file__).resolve().parents[1] / "fixtures" / "hf_configs"
LLAMA_3_8B_UNTIED_PARAMS = 32 * (2 * 4096**2 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096) + (
    2 * 128256 * 4096 + 4096
)


def _config(tmp_path: Path, model: str, **changes: Any) -> Path:
    """``model``'s fixture config.json with ``changes`` (a value of ``...`` removes the key)."""
    data: dict[str, Any] = json.loads((HF_CONFIGS / model / "config.json").read_text())
    data.pop("_name_or_path", None)
    for key, value in changes.items():
        if value is ...:
            data.pop(key, None)
        else:
            data[key] = value
    path = tmp_path / f"{model}-{len(list(tmp_path.iterdir()))}.json"
    path.write_text(json.dumps(data))
    return path


# --- 4a: null reads as absent for booleans and texts too -----------------------------------------


def test_a_null_tie_word_embeddings_is_the_default_untied(tmp_path: Path) -> None:
    assert LLAMA_3_8B_UNTIED_PARAMS == 8_030_261_248
    null = spec_from_hf_config(_config(tmp_path, "llama-3-8b", tie_word_embeddings=None))
    absent = spec_from_hf_config(_config(tmp_path, "llama-3-8b", tie_word_embeddings=...))
    assert null.tied_embeddings is absent.tied_embeddings is False
    assert parameter_counts(null).total_params == LLAMA_3_8B_UNTIED_PARAMS


def test_a_null_tie_word_embeddings_keeps_gemmas_default_tied(tmp_path: Path) -> None:
    null = spec_from_hf_config(_config(tmp_path, "gemma-2-9b", tie_word_embeddings=None))
    assert null.tied_embeddings is True  # Gemma2Config's default, as with the key left out


@pytest.mark.parametrize("key", ["attention_bias", "mlp_bias"])
def test_a_null_bias_flag_reads_as_no_bias(tmp_path: Path, key: str) -> None:
    null = spec_from_hf_config(_config(tmp_path, "llama-3-8b", **{key: None}))
    absent = spec_from_hf_config(_config(tmp_path, "llama-3-8b", **{key: ...}))
    assert parameter_counts(null).total_params == parameter_counts(absent).total_params
    assert parameter_counts(null).total_params == LLAMA_3_8B_UNTIED_PARAMS


def test_a_null_text_with_a_default_reads_as_absent(tmp_path: Path) -> None:
    # DeepSeek-V3's topk_method ('greedy' when left out): null no longer refused as 'expected a string'
    null = spec_from_hf_config(_config(tmp_path, "deepseek-v3", topk_method=None))
    absent = spec_from_hf_config(_config(tmp_path, "deepseek-v3", topk_method=...))
    assert null.moe is not None
    assert null.moe == absent.moe


def test_a_null_without_a_default_is_still_refused(tmp_path: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    path = _config(tmp_path, "llama-3-8b", model_type=None)
    one_line_error(run_cli("model", "show", str(path)), "model_type")


# --- 4b: rope_scaling's type is one transformers knows; a factor where the type needs one -------


@pytest.mark.parametrize("key", ["rope_type", "type"])
def test_an_unknown_rope_type_is_refused_naming_the_known_ones(tmp_path: Path, run_cli, key: str) -> None:  # type: ignore[no-untyped-def]
    path = _config(tmp_path, "llama-3-8b", rope_scaling={key: "bogus", "factor": 4.0})
    line = one_line_error(
        run_cli("model", "show", str(path)), "unknown RoPE type", f"field 'rope_scaling.{key}'", "'bogus'"
    )
    for known in ("default", "linear", "dynamic", "yarn", "longrope", "llama3"):
        assert known in line


@pytest.mark.parametrize(
    "scaling",
    [
        {"rope_type": "yarn", "factor": None, "original_max_position_embeddings": 8192},
        {"rope_type": "linear"},  # transformers: KeyError, 'factor' is a required key
        {"type": "dynamic", "factor": None},
    ],
)
def test_a_scaling_type_without_its_factor_is_refused(  # type: ignore[no-untyped-def]
    tmp_path: Path, run_cli, scaling: dict[str, Any]
) -> None:
    path = _config(tmp_path, "llama-3-8b", rope_scaling=scaling, max_position_embeddings=32_768)
    with pytest.raises(DataFileError, match=r"field 'rope_scaling\.factor'"):
        spec_from_hf_config(path)
    one_line_error(run_cli("model", "show", str(path)), "scales by a factor", "field 'rope_scaling.factor'")


@pytest.mark.parametrize(
    "scaling",
    [
        {"rope_type": "default", "factor": None},  # no factor to scale by: absent
        {"rope_type": None, "factor": 8.0},  # a null type is the default type
        {"type": "mrope", "mrope_section": [16, 24, 24]},  # Qwen2-VL's name for the default
    ],
)
def test_a_null_where_transformers_has_a_default_reads_as_absent(
    tmp_path: Path, scaling: dict[str, Any]
) -> None:
    spec = spec_from_hf_config(_config(tmp_path, "llama-3-8b", rope_scaling=scaling))
    assert spec.max_seq_len == 8192
    assert spec.original_max_seq_len is None
