"""A row with no precision column reads the precision its checkpoint's name states (issue 28, coverage)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lightspeed.catalog import Catalog
from lightspeed.sol.validation.infer_predict import InferenceRowSetup, inference_row_setup
from lightspeed.sol.validation.published import RowError, read_table
from lightspeed.workload import ModelRegistry

LOAD = "ISL/OSL 1024/1024\tconcurrency 64"
HEADER = "id\tkind\tsource\tmodel\tseq\tglobal_batch\tTP\tGPUs\thardware\tmetric\tmeasured"


def _read(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry, row: str, *, columns: str = ""
) -> InferenceRowSetup:
    """The setup of one row (``columns``: header cells after :data:`HEADER`'s, tab-led)."""
    path = tmp_path / "rows.tsv"
    path.write_text(f"{HEADER}{columns}\n{row}\n", encoding="utf-8")
    return inference_row_setup(read_table(path)[0], catalog, models)[0]


def _setup(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry, model: str, hardware: str
) -> InferenceRowSetup:
    row = f"R1\tinfer\tx\t{model}\t{LOAD}\t8\t8\t{hardware}\ttotal output tokens/s\t10,000"
    return _read(tmp_path, catalog, models, row)


@pytest.mark.parametrize(
    ("named", "expected"),
    [
        # NVIDIA's ModelOpt FP4 checkpoints are NVFP4; on AMD an FP4 checkpoint is MXFP4.
        (("nvidia/DeepSeek-R1-FP4", "B200"), ("nvfp4", "NVFP4")),
        (("amd/DeepSeek-R1-MXFP4", "MI355X"), ("mxfp4", "mxfp4")),
        (("RedHatAI/Meta-Llama-3.1-70B-Instruct-FP8-dynamic", "H100 SXM"), ("fp8", "fp8")),
        (("Llama 3.3 70B Instruct", "H100 SXM"), ("bf16", "precision not stated")),
        # Nothing stated: the format the publisher released (DeepSeek FP8, gpt-oss MXFP4)
        (("DeepSeek-R1", "H200"), ("fp8", "the format DeepSeek-V3 is released in")),
        (("gpt-oss-120b", "H100 SXM"), ("mxfp4", "the format gpt-oss-120b is released in")),
        # AWQ and GPTQ are weight-only: 4-bit weights (8 when the name says Int8) whose GEMMs
        # compute in 16 bits.
        (("Qwen/Qwen2.5-72B-Instruct-AWQ", "H100 SXM"), ("int4", "weight-only int4: GEMMs in bf16")),
        (("Qwen/Qwen2.5-7B-Instruct-GPTQ-Int8", "H100 SXM"), ("int8", "weight-only int8: GEMMs in bf16")),
    ],
)
def test_precision_comes_from_the_checkpoint_name(
    tmp_path: Path,
    catalog: Catalog,
    models: ModelRegistry,
    named: tuple[str, str],
    expected: tuple[str, str],
) -> None:
    precision, words = expected
    setup = _setup(tmp_path, catalog, models, *named)
    assert setup.plan.precision == precision
    assert setup.plan.activation_precision == ("bf16" if "weight-only" in words else None)
    note = next(note for note in setup.assumptions if "precision" in note or "model name" in note)
    assert words in note, setup.assumptions


def test_a_precision_column_wins_over_the_name(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    row = f"R1\tinfer\tx\tnvidia/DeepSeek-R1-FP4\t{LOAD}\t8\t8\tB200\ttotal output tokens/s\t10,000\tFP8"
    setup = _read(tmp_path, catalog, models, row, columns="\tprecision")
    assert setup.plan.precision == "fp8"
    assert setup.model.name == "deepseek-v3"


def _sharded(tmp_path: Path, catalog: Catalog, models: ModelRegistry, cells: str) -> InferenceRowSetup:
    row = f"R1\tinfer\tx\tDeepSeek-R1\t{LOAD}\t8\t16\tH200\ttotal output tokens/s\t10,000\t{cells}"
    return _read(tmp_path, catalog, models, row, columns="\tsharding\tEP")


def test_expert_parallelism_without_a_degree_is_refused(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    # LMSYS's Kimi K2 row says 'Large-Scale Expert Parallelism' and gives no EP: predicting TP 8
    # replicas instead would be another deployment than the one measured
    with pytest.raises(RowError, match=r"names expert parallelism .* no EP degree: fill the EP cell"):
        _sharded(tmp_path, catalog, models, "PD Disaggregation, Large-Scale Expert Parallelism\t-")
    with pytest.raises(RowError, match="'wide ep'"):
        _sharded(tmp_path, catalog, models, "wide EP\t-")
    setup = _sharded(tmp_path, catalog, models, "Large-Scale Expert Parallelism\t16")
    assert setup.plan.ep == 16


def _with_precision(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry, model: str, cell: str, *, source: str = "x"
) -> InferenceRowSetup:
    row = f"R1\tinfer\t{source}\t{model}\t{LOAD}\t1\t1\tA100 SXM4 80GB\ttotal output tokens/s\t1,000\t{cell}"
    return _read(tmp_path, catalog, models, row, columns="\tprecision")


@pytest.mark.parametrize(
    ("cell", "expected"),
    [
        ("INT8 weight-only", ("int8", "bf16")),
        ("W8A16", ("int8", "bf16")),
        ("int4 weight only", ("int4", "bf16")),
        ("W4A16 (AWQ)", ("int4", "bf16")),
        # a float format stored narrow and computed in 16 bits (Marlin's FP8 on Ampere)
        ("FP8 weight-only", ("fp8", "bf16")),
        # SmoothQuant (W8A8) and a bare INT8 on a dense model compute on the INT8 tensor cores
        ("INT8 SmoothQuant (W8A8)", ("int8", None)),
        ("int8", ("int8", None)),
    ],
)
def test_weight_only_quantization_computes_in_16_bits(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry, cell: str, expected: tuple[str, str | None]
) -> None:
    setup = _with_precision(tmp_path, catalog, models, "Llama 3 8B", cell)
    assert (setup.plan.precision, setup.plan.activation_precision) == expected
