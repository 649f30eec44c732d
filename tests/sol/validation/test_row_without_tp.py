"""A row that names no TP, EP or attention DP gets the smallest TP whose GPUs hold its model
(issue 28, coverage): it was refused whenever one GPU could not."""

from __future__ import annotations

from pathlib import Path

import pytest

from lightspeed.catalog import Catalog
from lightspeed.sol.validation.infer_predict import inference_row_setup
from lightspeed.sol.validation.published import RowError, read_table
from lightspeed.workload import ModelRegistry

HEADER = "id\tkind\tsource\tmodel\tseq\tglobal_batch\tTP\tGPUs\thardware\tprecision\tmetric\tmeasured"


def _plan(tmp_path: Path, catalog: Catalog, models: ModelRegistry, cells: str) -> tuple[int, int, list[str]]:
    path = tmp_path / "rows.tsv"
    path.write_text(f"{HEADER}\nR1\tinfer\tx\t{cells}\toutput tokens/s\t1,000\n", encoding="utf-8")
    setup, _ = inference_row_setup(read_table(path)[0], catalog, models)
    return setup.plan.tp, setup.plan.replicas, list(setup.assumptions)


@pytest.mark.parametrize(
    ("cells", "expected"),
    [
        # Llama 3.1 8B in bf16 is 16.06 GB of weights (8.03e9 x 2 B) and a TPU v5e chip has 16 GB
        # of HBM: one chip cannot hold it, two can (8 GB each)
        ("Llama 3.1 8B\tISL/OSL 1024/128\tconcurrency 64\t\t8\tTPU v5e-8\tbf16", (2, 4)),
        # 70B in bf16 is 141 GB: an 80 GB H100 needs at least two, a 141 GB H200 too (with
        # room for the KV cache and the runtime), four 48 GB L40S at least
        ("Llama 3.1 70B\tISL/OSL 1000/1000\tconcurrency 16\t\t8\t8x H100 SXM\tBF16", (2, 4)),
        ("Llama 3.1 70B\tISL/OSL 1000/1000\tconcurrency 16\t\t4\t4x L40S\tBF16", (4, 1)),
    ],
)
def test_the_smallest_tp_that_holds_the_model(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry, cells: str, expected: tuple[int, int]
) -> None:
    tp, replicas, notes = _plan(tmp_path, catalog, models, cells)
    assert (tp, replicas) == expected
    assert any(note.startswith(f"row without TP: tp={tp}") for note in notes)


def test_a_model_one_gpu_holds_and_a_named_tp_are_kept(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    row = "Llama 3.1 8B\tISL/OSL 1000/1000\tconcurrency 16\t{tp}\t8\t8x H100 SXM\tBF16"
    assert _plan(tmp_path, catalog, models, row.format(tp=""))[:2] == (1, 8)
    assert _plan(tmp_path, catalog, models, row.format(tp="8"))[:2] == (8, 1)


def test_a_model_with_unmodelled_layers_is_refused_even_with_dimensions(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    # Llama-3.3-Nemotron-Super-49B's NAS blocks are not alike: the row's layer and width cells must
    # not turn it into a plain dense model
    columns = ("id", "kind", "source", "model", "layers", "hidden", "heads(kv)", "vocab", "seq")
    header = "\t".join((*columns, "global_batch", "GPUs", "hardware", "metric", "measured"))
    cells = ("R1", "infer", "x", "nvidia/Llama-3_3-Nemotron-Super-49B-v1", "80", "8192", "64(8)", "128256")
    row = "\t".join((*cells, "ISL/OSL 1000/1000", "concurrency 8", "1", "H200", "output tokens/s", "1,000"))
    path = tmp_path / "rows.tsv"
    path.write_text(f"{header}\n{row}\n", encoding="utf-8")
    with pytest.raises(RowError, match="per-block NAS"):
        inference_row_setup(read_table(path)[0], catalog, models)
