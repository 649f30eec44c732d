"""An expert's audit of what ``lightspeed validate`` predicts (rows in the table format of
``published-dev.tsv``): a plan that cannot hold its state, a FLOP convention the metric states, a
per-node figure on a rack, the engine's assumptions of a simulated row, MFU and HFU in one
convention, sequences past the model's context, the batch of a searched split, and one p90.

Golden figures by hand: Llama 3.1 70B has 70,553,706,496 parameters (meta-llama/Llama-3.1-70B,
safetensors index), 80 layers of hidden 8,192, a context of 131,072 (max_position_embeddings);
Llama 3.1 405B's 405.85e9 parameters in bf16 over TP 8 are 101.5 GB = 94.5 GiB a GPU of weights
alone, above an H100's 80 GB (79.6 GiB); Llama 3 8B's context is 8,192.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lightspeed.catalog import Catalog
from lightspeed.report.validation_rows import render_validation_explained
from lightspeed.sol.validation.fit_report import error_summary
from lightspeed.sol.validation.infer_predict import inference_predictor
from lightspeed.sol.validation.published import read_table
from lightspeed.sol.validation.rows import row_setup
from lightspeed.sol.validation.validate import (
    ValidationReport,
    ValidationRow,
    report_of,
    summarize,
    validate_published,
)
from lightspeed.workload import ModelRegistry

HEADER = "id\tkind\tsource\tmodel\tseq\tglobal_batch\tTP\tPP\tGPUs\thardware\tprecision\tmetric\tmeasured"
# Llama 3.1 70B on 64 H100 (TP 8, PP 2), a global batch of 512 sequences of 8K
LLAMA70 = "my blog 2024\tLlama 3.1 70B\t8K\t512\t8\t2\t64"


def _validate(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry, lines: list[str], *, header: str = HEADER
) -> ValidationReport:
    path = tmp_path / "rows.tsv"
    path.write_text("\n".join([header, *lines]) + "\n", encoding="utf-8")
    return validate_published(path=path, catalog=catalog, models=models, infer=inference_predictor())


def _rows(report: ValidationReport) -> dict[str, ValidationRow]:
    return {row.id: row for row in report.rows}


def test_a_plan_no_gpu_can_hold_is_not_predicted(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    # 405B over TP 8 is 94.5 GiB of bf16 weights a GPU before gradients or optimizer (module docs)
    rows = _rows(
        _validate(
            tmp_path,
            catalog,
            models,
            [
                "N1\ttrain\tmy blog 2024\tLlama 3.1 405B\t8K\t16\t8\t1\t8\tH100 SXM\tBF16\tMFU\t41%",
                "K8\ttrain\tmy blog 2024\tLlama 3.1 70B\t99999999999999999999\t512\t8\t2\t64\tH100 SXM"
                "\tBF16\tMFU\t41%",
            ],
        )
    )
    assert rows["N1"].predicted is None
    assert rows["N1"].reason.startswith("no plan of its 8 GPUs fits: the least needs ")
    least_gib = float(rows["N1"].reason.split("the least needs ")[1].split(" GiB")[0].replace(",", ""))
    assert least_gib > 94.5
    assert "of 79.6 usable" in rows["N1"].reason
    # a sequence of 1e20 tokens is past every model's context: refused before any plan is priced
    assert rows["K8"].predicted is None
    assert "beyond llama-3.1-70b's context of 131,072 tokens" in rows["K8"].reason


def test_a_plan_whose_weights_fit_but_no_priced_plan_does_is_predicted_and_says_so(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    # one 1,048,576-token sequence of Llama 3.1 70B on TP 8, PP 2: even fully recomputed, each layer
    # keeps its input, 1,048,576 x 8,192 x 2 B = 17.2 GB over TP 8 = 2.15 GB, x 40 layers a stage
    # = 86 GB, above an H100's 85.5 GB; its 16-bit weights over 64 GPUs are 2.2 GB each
    rows = _rows(
        _validate(
            tmp_path,
            catalog,
            models,
            ["N3\ttrain\tmy blog 2024\tLlama 3.1 70B\t1M\t512\t8\t2\t64\tH100 SXM\tBF16\tMFU\t41%"],
        )
    )
    row = rows["N3"]
    assert row.status == "ok", row.reason
    note = next(line for line in row.assumptions if line.startswith("no plan of its 64 GPUs fits"))
    assert "predicted on that least-memory plan, not one that fits" in note
    # and past the model's context of 131,072 (Llama 3.1's RoPE: it runs, the note says so)
    assert (
        "seq_len 1,048,576 is above llama-3.1-70b's context of 131,072 tokens (max_seq_len)"
        in row.assumptions
    )


def test_a_stated_6n_convention_prices_the_mfu_without_attention(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    rows = _rows(
        _validate(
            tmp_path,
            catalog,
            models,
            [
                f"C0\ttrain\t{LLAMA70}\tH100 SXM\tBF16\tMFU\t41%",
                f"C1\ttrain\t{LLAMA70}\tH100 SXM\tBF16\tMFU (6N, without attention)\t41%",
                f"C2\ttrain\t{LLAMA70}\tH100 SXM\tBF16\tMFU (6ND, no attention FLOPs)\t41%",
            ],
        )
    )
    six_n = 6 * 70_553_706_496  # 423.3 GFLOP a token
    attention = 12 * 80 * 8192 * 8192  # PaLM's 12·L·h·s: 64.4 GFLOP a token at 8,192
    bare = rows["C0"].predicted
    assert bare is not None
    for row_id in ("C1", "C2"):
        row = rows[row_id]
        assert row.predicted == pytest.approx(bare * six_n / (six_n + attention), rel=1e-3)
        assert row.flop_convention == "6N"
        assert not any("states none" in line for line in row.assumptions)


def test_a_per_node_figure_on_a_rack_is_not_divided_by_the_jobs_gpus(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    rows = _rows(
        _validate(
            tmp_path,
            catalog,
            models,
            [
                f"C19\ttrain\t{LLAMA70}\tGB200 NVL72\tBF16\ttokens/s per node\t6400",
                f"C20\ttrain\t{LLAMA70}\tGB200 NVL72\tBF16\ttokens/s per 4-GPU node\t6400",
                f"C21\ttrain\t{LLAMA70}\tH100 SXM\tBF16\ttokens/s per node\t6400",
                f"C22\ttrain\t{LLAMA70}\tTPU v5p pod\tBF16\ttokens/s per node\t6400",
            ],
        )
    )
    # a GB200 NVL72 node is a compute tray of 4 GPUs (18 trays of 2 superchips = 72 GPUs; the
    # catalog's [node]), not the job's 64: 6,400 / 4 = 1,600 tokens/s a GPU, as when stated
    assert rows["C19"].measured == pytest.approx(1600)
    assert rows["C20"].measured == pytest.approx(1600)
    # a rack whose record counts no node inside it is refused unless the row says the node's size
    assert rows["C22"].predicted is None
    assert "per node" in rows["C22"].reason
    assert "'per 4-GPU node'" in rows["C22"].reason
    # a DGX H100 node's 8 GPUs make it 800
    assert rows["C21"].measured == pytest.approx(800)


def test_a_simulated_row_carries_the_engines_assumptions(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    header = "id\tkind\tsource\tmodel\tseq\tglobal_batch\tTP\tGPUs\thardware\tprecision\tmetric\tmeasured"
    rows = _rows(
        _validate(
            tmp_path,
            catalog,
            models,
            [
                "H6\tinfer\tmy blog 2024\tLlama 3.1 70B\tISL/OSL 1000/1000\tconcurrency 64\t8\t8\tH100 SXM"
                "\tNVFP4\toutput tokens/s\t2000",
                "F6\tinfer\tmy blog 2024\tLlama 3.1 70B\tISL/OSL 200000/1000\tconcurrency 64\t8\t8\tH100 SXM"
                "\tFP8\tTTFT (ms)\t250",
            ],
            header=header,
        )
    )
    h6 = rows["H6"]
    assert h6.plan is not None
    assert h6.plan["simulated"]
    # H100 has no FP4 tensor cores (NVIDIA's datasheet): what plan infer says of the same plan
    assert any("h100-sxm has no fp4 tensor cores" in line for line in h6.assumptions)
    assert any(line.startswith("efficiency ") for line in h6.assumptions)
    # 200,000 + 1,000 tokens a request are past Llama 3.1 70B's 131,072
    assert "isl+osl 201,000 is above llama-3.1-70b's context of 131,072 tokens (max_seq_len)" in (
        rows["F6"].assumptions
    )


def test_hfu_is_priced_in_the_rows_mfu_convention_and_each_mfu_is_labelled(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry, capsys: pytest.CaptureFixture[str]
) -> None:
    report = _validate(
        tmp_path,
        catalog,
        models,
        [
            f"A1\ttrain\t{LLAMA70}\tH100 SXM\tBF16\tMFU\t41%",
            f"A4\ttrain\t{LLAMA70}\tH100 SXM\tBF16\tHFU\t50%",
        ],
    )
    rows = _rows(report)
    mfu, hfu = rows["A1"], rows["A4"]
    assert mfu.plan == hfu.plan  # one plan: HFU counts every FLOP MFU counts, and recomputation
    assert mfu.predicted is not None
    assert hfu.predicted is not None
    assert hfu.predicted >= mfu.predicted
    # a row naming no framework counts as PaLM; the plan's own mfu as the engine (Megatron-Core)
    assert mfu.flop_convention == hfu.flop_convention == "6N+attention"
    assert mfu.plan is not None
    assert mfu.plan["mfu_convention"] == "6N+causal-attention"
    render_validation_explained(report, ["A1"])
    out = " ".join(capsys.readouterr().out.split())
    assert "(FLOPs as 6N+attention)" in out
    assert "mfu (6N+causal-attention)=" in out
    assert "(MFU as 6N+causal-attention: " in out


def test_a_training_sequence_past_the_context_is_noted(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    rows = _rows(
        _validate(
            tmp_path,
            catalog,
            models,
            ["S1\ttrain\tmy blog 2024\tLlama 3 8B\t16K\t64\t8\t1\t8\tH100 SXM\tBF16\tMFU\t40%"],
        )
    )
    assert rows["S1"].status == "ok", rows["S1"].reason
    assert (
        "seq_len 16,384 is above llama-3-8b's context of 8,192 tokens (max_seq_len)" in rows["S1"].assumptions
    )


def test_an_assumed_batch_follows_each_searched_split(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    # no TP, PP or batch: TP and CP are searched, and each split runs one micro-batch of at most 16
    # per DP replica (no accumulation), never 16 x the 64 GPUs' DP on a split of DP 4
    path = tmp_path / "rows.tsv"
    path.write_text(
        "id\tkind\tmodel\tGPUs\thardware\tmetric\tmeasured\tseq\tprecision\n"
        "L1\ttrain\tLlama 3.1 70B\t64\tH100 SXM\tMFU\t41%\t32K\tFP8\n",
        encoding="utf-8",
    )
    setup = row_setup(read_table(path)[0], catalog, models)
    assert {plan.dp for plan in setup.plans} != {64}  # splits with TP or CP searched
    assert all(plan.global_batch_size == 16 * plan.dp for plan in setup.plans)
    note = next(line for line in setup.assumptions if line.startswith("global batch"))
    assert "each split's DP" in note
    assert "DP 64" not in note


def test_validate_and_the_fit_report_share_one_p90() -> None:
    errors = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
    # linear between closest ranks: rank 0.9 x 9 = 8.1 -> 0.9 + 0.1 x (1.0 - 0.9) = 0.91
    assert error_summary(errors)["p90_abs_error"] == pytest.approx(0.91)
    rows = tuple(
        ValidationRow(
            id=f"R{i}",
            kind="train",
            metric="mfu",
            measured=1.0,
            predicted=1.0 + error,
            rel_error=error,
            status="ok",
            reason="",
            plan=None,
            assumptions=(),
            source="",
        )
        for i, error in enumerate(errors)
    )
    assert summarize(report_of("x", rows).rows, "train").p90_abs_error == pytest.approx(0.91)
