"""A last check of the user-row reader: ``99p`` and ``p-99`` are percentiles, ``batch size 1 to
256`` is a range of runs, and a metric that says it is a fraction does not take 45 as 45%."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from user_rows import serving_row, validated_rows


def test_99p_and_p_dash_99_predict_the_p99(run_cli: Any, tmp_path: Path) -> None:
    rows = validated_rows(
        run_cli,
        tmp_path,
        serving_row("A", "--max-concurrency 16", "P99 TTFT (ms)", "120"),
        serving_row("B", "--max-concurrency 16", "99p TTFT (ms)", "120"),
        serving_row("C", "--max-concurrency 16", "p-99 TTFT (ms)", "120"),
        serving_row("D", "--max-concurrency 16", "Mean TTFT (ms)", "120"),
    )
    p99 = rows["A"]["predicted"]
    assert rows["B"]["predicted"] == p99
    assert rows["C"]["predicted"] == p99
    assert rows["D"]["predicted"] < p99  # the mean of a queue's first-token times is below its p99


def test_a_batch_range_written_with_to_is_refused_as_runs(run_cli: Any, tmp_path: Path) -> None:
    rows = validated_rows(
        run_cli,
        tmp_path,
        serving_row("R", "Batch Size 1 to 256", "Output token throughput (tok/s)", "2000"),
    )
    assert rows["R"]["predicted"] is None
    assert "is a range of runs" in rows["R"]["reason"]


def test_a_fraction_metric_over_one_is_refused(run_cli: Any, tmp_path: Path) -> None:
    row = (
        "T\ttrain\tNVIDIA dgxc-benchmarking v25.05 NeMo\tNemotron4 15b\t15\t32\t6144\t48 (8 query groups)\t"
        "24576\t256000\t4096\t64\t2\t2\t1\tNA\t1\t8\tNA\tn/r\t16\tH100\tBF16\tn/r\tMFU (fraction)\t{}\t\tread"
    )
    rows = validated_rows(run_cli, tmp_path, row.format("45").replace("T\t", "F\t", 1), row.format("0.45"))
    assert rows["F"]["predicted"] is None
    assert "says it is a fraction" in rows["F"]["reason"]
    assert rows["T"]["predicted"] is not None  # 0.45 under the same metric is 45%
