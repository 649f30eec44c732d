"""Deployment errors give advice that works: GPUs the cluster has, the block size when it is the cause."""

from __future__ import annotations

from typing import Any

from expect import one_line_error


def test_gpus_that_do_not_fill_a_multi_node_cluster_get_counts_that_do(run_cli: Any) -> None:
    line = one_line_error(
        run_cli("plan", "infer", "--model", "llama-3-8b", "--system", "dgx-h100", "--gpus", "9"),
        "--gpus 16",
        "--gpus 8",
    )
    assert "--gpus 9" not in line
    assert "--replicas 16 or" not in line
    for gpus in ("16", "8"):
        result = run_cli("plan", "infer", "--model", "llama-3-8b", "--system", "dgx-h100", "--gpus", gpus,
                         "--json")  # fmt: skip
        assert result.code == 0, result.err


def test_a_block_larger_than_the_kv_cache_is_named(run_cli: Any) -> None:
    result = run_cli(
        "simulate", "--model", "llama-3-8b", "--system", "dgx-h100", "--gpus", "1",
        "--block-size", "1000000", "--concurrency", "4", "--requests", "20",
    )  # fmt: skip
    line = one_line_error(result, "--block-size", "1,000,000")
    assert "more GPUs per replica" not in line
