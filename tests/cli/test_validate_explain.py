"""``lightspeed validate --explain ID``: how a row was read and predicted, below the table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

HEADER = (
    "id\tkind\tsource\tmodel\tsharding\tseq\tglobal_batch\tTP\tPP\tDP\tGPUs\thardware\tprecision"
    "\tmetric\tmeasured"
)
ROWS = (
    # Llama 3.1 8B under torchtitan's FSDP2 on one DGX H100 (the figure is made up for the test)
    "T1\ttrain\ttorchtitan 2024\tLlama 3.1 8B\tFSDP2 full shard\t8192\t16\t1\t1\t8\t8\tH100 SXM\tbf16"
    "\tTPS per GPU\t6,000",
    # the same run written with its micro-batch unsaid and in TFLOP/s
    "T2\ttrain\ttorchtitan 2024\tLlama 3.1 8B\tFSDP2 full shard\t8192\t16\t1\t1\t8\t8\tH100 SXM\tbf16"
    "\tTFLOP/s per GPU\t380",
)


@pytest.fixture
def table(tmp_path: Path) -> Path:
    path = tmp_path / "rows.tsv"
    path.write_text("\n".join((HEADER, *ROWS)) + "\n", encoding="utf-8")
    return path


def test_explain_shows_how_the_named_row_was_read(run_cli: Any, table: Path) -> None:
    result = run_cli("validate", str(table), "--explain", "T2")
    assert result.code == 0, result.err
    explained = result.out.split("\nT2 (train, ", 1)[1]
    # the verdict, then what each cell was read as: the figure, the sharding, the model and the stack
    assert explained.startswith("tflop_per_s_per_gpu): measured 380, predicted ")
    assert "read as: 'TFLOP/s per GPU' <- '380'" in explained
    assert "plan: tp=1, pp=1, dp=8" in explained
    assert "- stack torchtitan-2024: the row names torchtitan, 2024" in explained
    assert "catalog model llama-3.1-8b" in explained
    # T1 is in the table but not explained
    assert "\nT1 (train" not in result.out


def test_explain_all_explains_every_row_in_table_order(run_cli: Any, table: Path) -> None:
    result = run_cli("validate", str(table), "--explain", "all")
    assert result.code == 0, result.err
    assert 0 < result.out.index("\nT1 (train, ") < result.out.index("\nT2 (train, ")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--explain", "T9"), "--explain T9: no row with that id in"),
        (("--explain", ""), "--explain : no row with that id in"),
        (("--explain", "T1", "--json"), "--explain is for the table view"),
    ],
)
def test_explain_refuses_what_it_cannot_show(
    run_cli: Any, table: Path, args: tuple[str, ...], message: str
) -> None:
    result = run_cli("validate", str(table), *args)
    assert result.code == 2
    assert message in result.err
    assert len(result.err.strip().splitlines()) == 1
    assert result.out == ""  # refused before any table
