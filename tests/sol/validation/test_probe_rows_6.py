"""Rows written the way a sixth set of sources writes them (the thirty-second session's probes).
Each test is a rule the reader lacked: the row was refused, or read as something it does not say."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lightspeed.catalog import Catalog
from lightspeed.sol.validation.published import PublishedRow
from lightspeed.sol.validation.rows import row_year


def _rows(run_cli: Any, tmp_path: Path, header: str, *lines: str) -> list[dict[str, Any]]:
    path = tmp_path / "rows.tsv"
    path.write_text("\n".join((header, *lines)) + "\n", encoding="utf-8")
    result = run_cli("validate", str(path), "--json")
    assert result.code == 0, result.err
    rows: list[dict[str, Any]] = json.loads(result.out)["rows"]
    return rows


@pytest.mark.parametrize(
    ("source", "year"),
    [
        # a patch release of a container (Megatron-Bridge's archive: '26.02.01 NeMo Container')
        ("Megatron-Bridge performance-summary-archive.md '26.02.01 NeMo Container' Pre-Training", 2026),
        ("'25.11 NeMo Container'", 2025),
        # MLPerf rounds by their version: v4.1 ran in August 2024, v5.0 in April 2025
        ("MLPerf Inference v5.0, closed division", 2025),
        ("mlcommons/inference_results_v4.1 closed/NVIDIA/results/...", 2024),
        ("ntuhpc/mlperf_inference_results_v5.0 (a copy of mlcommons/inference_results_v5.0)", 2025),
        ("MLPerf Training v4.0 results", 2024),
    ],
)
def test_the_year_of_a_release_or_an_mlperf_round(catalog: Catalog, source: str, year: int) -> None:
    row = PublishedRow(row_id="R1", kind="infer", line=2, cells={"source": source})
    found, note = row_year(row, catalog.accelerators["h100-sxm"])
    assert found == year, note
    assert "no year" not in note


def test_an_mlperf_round_picks_the_servers_release_of_its_year(run_cli: Any, tmp_path: Path) -> None:
    # AMD's MLPerf Inference v5.0 Llama 2 70B Offline row on MI325X ran vLLM of 2025: it had been
    # read as a 2024 row for want of a calendar year in its source (vLLM's 2024 profile: -31%)
    header = "id\tkind\tsource\tmodel\tseq\tglobal_batch\tGPUs\thardware\tprecision\tmetric\tmeasured"
    (row,) = _rows(
        run_cli,
        tmp_path,
        header,
        "Q1\tinfer\tmlcommons/inference_results_v5.0 closed/AMD/results/8xMI325X_2xEPYC-9575F/llama2-70b-99/"
        "Offline\tLlama 2 70B\tMLPerf Inference v5.0 llama2-70b-99\tScenario : Offline\t8"
        "\t8xMI325X_2xEPYC_9575F\tFP8\tTokens per second\t33928",
    )
    assert row["status"] == "ok", row["reason"]
    assert row["stack"] == "vllm-2025"
    assert any("MLPerf round" in line for line in row["assumptions"])
