"""Inference precision cells and checkpoint names as servers, quantizers and model hubs write
them (issues 27 and 28: a KV-cache format read as the weights', a quantization scheme read as
"precision not stated: bf16", a checkpoint name the registry refused).

What each spelling means, beside it: vLLM's ``--kv-cache-dtype`` sets the KV cache alone (the
weights follow ``--dtype``); TensorRT-LLM's ``w4a8_awq`` is INT4 weights with FP8 activations
(docs/source/precision.md); SmoothQuant and llm-compressor's bare ``W8A8`` are INT8, its
``W8A8-FP8`` FP8 and ``quantized.w8a16`` INT8 weight-only; ``bnb-4bit`` is bitsandbytes' 4-bit
weight-only; vLLM's ``--quantization modelopt`` is ModelOpt's FP8 checkpoint."""

from __future__ import annotations

from pathlib import Path

import pytest

from lightspeed.catalog import Catalog
from lightspeed.sol.validation.validate import ValidationRow
from lightspeed.workload import ModelRegistry
from lightspeed.workload.names import checkpoint_format, reduce_name
from probes import validated_row

HEADER = "id\tkind\tsource\tmodel\tGPUs\thardware\tprecision\tTP\tseq\tglobal_batch\tmetric\tmeasured"


def _validated(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry, precision: str, model: str = "Llama 3.3 70B"
) -> ValidationRow:
    line = (
        f"P1\tinfer\tvLLM 0.6.3 benchmark_serving\t{model}\t2\tH100\t{precision}\t2"
        "\tISL/OSL 1000/200\tconcurrency 1\tMean ITL (ms)\t20"
    )
    return validated_row(tmp_path, HEADER, line, catalog, models)


def _formats(row: ValidationRow) -> tuple[object, object, object]:
    assert row.plan is not None, row.reason
    return row.plan["precision"], row.plan["kv_precision"], row.plan["activation_precision"]


@pytest.mark.parametrize(
    ("precision", "formats"),
    [
        # the KV cache's format is not the weights' (each of these was read as fp8 or int8 weights)
        ("bf16 weights, fp8 KV cache", ("bf16", "fp8")),
        ("BF16 weights / FP8 KV", ("bf16", "fp8")),
        ("bf16 (fp8 KV cache)", ("bf16", "fp8")),
        ("bf16, kv cache fp8", ("bf16", "fp8")),
        ("--dtype bfloat16 --kv-cache-dtype fp8", ("bf16", "fp8")),
        ("bf16 weights, int8 kv cache", ("bf16", "int8")),
        # and a cell naming only the KV cache leaves the weights to the model (Llama: bf16)
        ("kv_cache_dtype=fp8", ("bf16", "fp8")),
        ("KV cache: fp8", ("bf16", "fp8")),
        # weights and KV both stated stay as they were
        ("fp8 weights, bf16 kv cache", ("fp8", "bf16")),
    ],
)
def test_a_kv_cache_format_is_not_the_weights(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry, precision: str, formats: tuple[str, str]
) -> None:
    row = _validated(tmp_path, catalog, models, precision)
    assert _formats(row)[:2] == formats


def test_a_cell_naming_only_the_kv_cache_says_so(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    row = _validated(tmp_path, catalog, models, "FP8 KV cache")
    assert any("names only the KV cache's" in note for note in row.assumptions)


@pytest.mark.parametrize(
    ("precision", "expected"),
    [
        # W4A8 on Hopper: INT4 weights, FP8 GEMMs (it was read as bf16 "not stated")
        ("W4A8", ("int4", None, "fp8")),
        ("AWQ INT4 weights, FP8 KV cache", ("int4", "fp8", "bf16")),  # was fp8 weight-only
        ("GPTQ 4-bit, --kv-cache-dtype fp8", ("int4", "fp8", "bf16")),
        ("4-bit", ("int4", None, "bf16")),
        ("SmoothQuant", ("int8", None, None)),
        ("W8A8", ("int8", None, None)),
        ("modelopt", ("fp8", None, None)),
        ("16 (Quantization: 16)", ("bf16", None, None)),  # 16 bits, no quantization
    ],
)
def test_quantization_schemes_read_as_their_formats(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry, precision: str, expected: tuple[str, ...]
) -> None:
    assert _formats(_validated(tmp_path, catalog, models, precision)) == expected


@pytest.mark.parametrize(
    "precision", ["8-bit", "W4A4", "FP6", "GGUF Q8_0", "Q4_K_M", "mixed", "compressed-tensors"]
)
def test_a_format_no_reader_takes_is_refused_not_read_as_unstated(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry, precision: str
) -> None:
    row = _validated(tmp_path, catalog, models, precision)
    assert row.predicted is None
    assert "names a format lightspeed does not read" in row.reason


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        # each of these names was refused as an unknown model
        ("unsloth/Llama-3.3-70B-Instruct-bnb-4bit", ("int4", None, "bf16")),
        ("RedHatAI/Llama-3.3-70B-Instruct-quantized.w8a16", ("int8", None, "bf16")),
        ("RedHatAI/Llama-3.3-70B-Instruct-FP8-block", ("fp8", None, None)),
        ("Llama-3.3-70B-Instruct-W4A16-G128", ("int4", None, "bf16")),
        ("Llama-3.3-70B-Instruct-W4A8", ("int4", None, "fp8")),
        ("Llama 3.3 70B, FP8", ("fp8", None, None)),
        # W8A8-FP8 is FP8 (it was read as INT8)
        ("Llama-3.3-70B-Instruct-W8A8-FP8", ("fp8", None, None)),
        # a checkpoint or format in parentheses (dropped before: bf16, "not stated")
        ("Llama-3.1-70B-Instruct (FP8)", ("fp8", None, None)),
        # AMD's Quark checkpoint named for its FP8 KV cache, which the run's --kv-cache-dtype fp8 uses
        ("Llama 3.1 70B (amd/Llama-3.1-70B-Instruct-FP8-KV)", ("fp8", "fp8", None)),
        ("Llama 3.1 70B (AWQ)", ("int4", None, "bf16")),
    ],
)
def test_checkpoint_names_give_the_format_when_the_cell_states_none(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry, model: str, expected: tuple[str, ...]
) -> None:
    assert _formats(_validated(tmp_path, catalog, models, "", model)) == expected


def test_a_gguf_checkpoint_is_refused_with_the_reason(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    row = _validated(tmp_path, catalog, models, "", "bartowski/Llama-3.3-70B-Instruct-GGUF Q4_K_M")
    assert row.predicted is None
    assert "GGUF (llama.cpp)" in row.reason
    assert (
        reduce_name("bartowski/Llama-3.3-70B-Instruct-GGUF Q4_K_M").base == reduce_name("Llama 3.3 70B").base
    )
    assert checkpoint_format("Llama-3.3-70B-Instruct-GGUF") == "gguf"


def test_a_name_stating_another_format_than_the_cell_is_said(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    row = _validated(tmp_path, catalog, models, "fp8", "hugging-quants/Meta-Llama-3.1-70B-Instruct-AWQ-INT4")
    assert _formats(row)[0] == "fp8"
    assert any("states awq, the precision cell wins" in note for note in row.assumptions)
    same = _validated(tmp_path, catalog, models, "fp8", "nvidia/Llama-3.3-70B-Instruct-FP8")
    assert not any("the precision cell wins" in note for note in same.assumptions)
