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


INFER_HEADER = "id\tkind\tsource\tmodel\tseq\tglobal_batch\tTP\tGPUs\thardware\tprecision\tmetric\tmeasured"


def _infer(run_cli: Any, tmp_path: Path, *cells: str) -> list[dict[str, Any]]:
    lines = [f"U{i}\tinfer\tvLLM 0.10 bench serve 2025\t{row}" for i, row in enumerate(cells, 1)]
    return _rows(run_cli, tmp_path, INFER_HEADER, *lines)


def test_a_benchmarks_request_count_written_as_its_flag(run_cli: Any, tmp_path: Path) -> None:
    # vLLM's and SGLang's benchmark flag, label first: the run is those 16 requests (had been
    # 1,000 at 10,000 req/s, 45 times the tokens the row's run generated)
    flagged, words = _infer(
        run_cli,
        tmp_path,
        "Llama 3.1 8B\tISL/OSL 1024/128\t--num-prompts 16 --request-rate 10000\t1\t1\tH100 SXM\tbf16"
        "\tOutput token throughput (tok/s)\t2000",
        "Llama 3.1 8B\tISL/OSL 1024/128\tNum Prompts 300, RPS 4\t1\t1\tH100 SXM\tbf16"
        "\tOutput token throughput (tok/s)\t500",
    )
    assert flagged["status"] == "ok", flagged["reason"]
    assert any("16 requests" in line for line in flagged["assumptions"]), flagged["assumptions"]
    assert any("300 requests" in line for line in words["assumptions"]), words["assumptions"]


def test_a_rate_defined_by_a_formula_over_every_token(run_cli: Any, tmp_path: Path) -> None:
    # vLLM's offline benchmark prints tokens_per_second = total_num_tokens / elapsed_time: prompt
    # and generated tokens together (it had been read as output tokens: dstack's 405B rows at
    # 2048/2048 tokens came out +43% where the rate they report is +187% off)
    total, output = _infer(
        run_cli,
        tmp_path,
        "Llama 3.1 8B\tinput_len 1024 / output_len 1024\tbatch_size 64 (offline)\t1\t1\tH100 SXM\tbf16"
        "\ttokens_per_second (= total_num_tokens / elapsed_time)\t8000",
        "Llama 3.1 8B\tinput_len 1024 / output_len 1024\tbatch_size 64 (offline)\t1\t1\tH100 SXM\tbf16"
        "\toutput tokens_per_second (= num_generated_tokens / elapsed_time)\t4000",
    )
    assert total["reading"]["key"] == "total_tokens_per_s"
    assert output["reading"]["key"] == "output_tokens_per_s"
    # the same run: prompt and output counted together is twice the output alone at 1024/1024
    assert total["predicted"] == pytest.approx(2.0 * output["predicted"], rel=1e-6)
