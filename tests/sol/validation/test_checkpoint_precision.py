"""A row with no precision column reads the precision its checkpoint's name states (issue 28, coverage)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lightspeed.catalog import Catalog
from lightspeed.sol.validation.infer_rows import InferenceRowSetup, inference_row_setup
from lightspeed.sol.validation.published import RowError, read_table
from lightspeed.workload import ModelRegistry

LOAD = "ISL/OSL 1024/1024\tconcurrency 64"
HEADER = "id\tkind\tsource\tmodel\tseq\tglobal_batch\tTP\tGPUs\thardware\tmetric\tmeasured"


def _setup(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry, model: str, hardware: str
) -> InferenceRowSetup:
    path = tmp_path / "rows.tsv"
    row = f"R1\tinfer\tx\t{model}\t{LOAD}\t8\t8\t{hardware}\ttotal output tokens/s\t10,000"
    path.write_text(f"{HEADER}\n{row}\n", encoding="utf-8")
    return inference_row_setup(read_table(path)[0], catalog, models)[0]


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
        # AWQ is 4-bit weights computed in 16 bits: the engine has no row for it and says so.
        (("Qwen/Qwen2.5-72B-Instruct-AWQ", "H100 SXM"), ("bf16", "weight-only")),
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
    note = next(note for note in setup.assumptions if "precision" in note or "model name" in note)
    assert words in note, setup.assumptions


def test_a_precision_column_wins_over_the_name(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    path = tmp_path / "rows.tsv"
    path.write_text(
        f"{HEADER}\tprecision\nR1\tinfer\tx\tnvidia/DeepSeek-R1-FP4\t{LOAD}\t8\t8\tB200"
        "\ttotal output tokens/s\t10,000\tFP8\n",
        encoding="utf-8",
    )
    setup = inference_row_setup(read_table(path)[0], catalog, models)[0]
    assert setup.plan.precision == "fp8"
    assert setup.model.name == "deepseek-v3"


def _sharded(tmp_path: Path, catalog: Catalog, models: ModelRegistry, cells: str) -> InferenceRowSetup:
    path = tmp_path / "rows.tsv"
    path.write_text(
        f"{HEADER}\tsharding\tEP\nR1\tinfer\tx\tDeepSeek-R1\t{LOAD}\t8\t16\tH200"
        f"\ttotal output tokens/s\t10,000\t{cells}\n",
        encoding="utf-8",
    )
    return inference_row_setup(read_table(path)[0], catalog, models)[0]


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
