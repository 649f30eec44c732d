"""A model cell the registry does not name is matched word by word to a generation of the family it
names (``LLaMA 70B``, as NVIDIA's 2023 tables write the first Llama of that size): whole words of
a registry spelling whose other words only number a version. Code Llama's records (twenty-sixth
session) hold ``llama`` as a substring and ``code-llama-70b`` as words; read as substrings, TensorRT-LLM
0.5's ``LLaMA 70B`` row (I11) became Code Llama 70B, the alphabetically first (issue 28: reading)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lightspeed.catalog import Catalog
from lightspeed.workload import ModelRegistry
from probes import validated_row

HEADER = "id\tkind\tsource\tmodel\tGPUs\thardware\tprecision\tTP\tseq\tglobal_batch\tmetric\tmeasured"


def _model_note(tmp_path: Path, catalog: Catalog, models: ModelRegistry, model: str) -> str:
    line = (
        f"M1\tinfer\tTensorRT-LLM release/0.5.0 performance.md\t{model}\t8\tH100\tFP8\t8"
        "\tISL/OSL 128/128\tbatch 64\toutput tokens/s\t3317"
    )
    row = validated_row(tmp_path, HEADER, line, catalog, models)
    assert row.status == "ok", row.reason
    return next(note for note in row.assumptions if note.startswith("model "))


@pytest.mark.parametrize(
    ("model", "resolved"),
    [
        # the family's generations, earliest first: never Code Llama, another family
        (
            "LLaMA 70B",
            "-> llama-2-70b (registry names holding llama, 70b: llama-2-70b, llama-3-70b, llama-3.1",
        ),
        (
            "LLaMA 70B FP8",
            "-> llama-2-70b (registry names holding llama, 70b: llama-2-70b, llama-3-70b, llama-3.1",
        ),
        # Code Llama named as such resolves to its own record through the registry
        ("Code Llama 70B", "-> catalog model codellama-70b"),
        ("CodeLlama-34b-Instruct-hf", "-> catalog model codellama-34b"),
    ],
)
def test_a_family_name_is_a_generation_of_that_family(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry, model: str, resolved: str
) -> None:
    assert resolved in _model_note(tmp_path, catalog, models, model)


def test_code_llama_is_in_the_registry(models: ModelRegistry) -> None:
    assert models.matches("Code Llama 70B") == ["codellama-70b"]
    assert models.matches("LLaMA 70B") == []  # so the word-by-word reading decides
