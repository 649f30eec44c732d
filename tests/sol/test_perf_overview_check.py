"""Out-of-sample accuracy on TensorRT-LLM's perf-overview table (benchmarks/data, 96 rows never
fitted on): every row is read and predicted, and the median error stays within the issue's
inference target (12%). The per-group figures are in docs/benchmarks.md."""

from __future__ import annotations

from types import ModuleType

from scripts import load_script


def _benchmark() -> ModuleType:
    return load_script("benchmarks/perf_overview_check.py")


def test_the_held_out_table_is_read_whole_and_within_the_target() -> None:
    result = _benchmark().check()
    assert result["num_rows"] == 100
    assert result["refused"] == []
    held = result["held_out"]
    assert held["n"] == 96  # four rows are shipped validation rows, reported apart
    assert held["median_abs_error"] <= 0.12
    # Hopper FP8 rows of the 8B and 70B models, the engine's best-covered ground, stay close.
    for group in ("L8 H100", "L8 H200", "L70 H100", "L70 H200"):
        assert result["by_group"][group]["median_abs_error"] <= 0.10, group


def test_the_moe_table_is_read_whole_and_its_gap_does_not_grow_back() -> None:
    # 110 MoE rows, none fitted on: 47% at the median before the servers' batch caps, the rows'
    # own attention-DP setting and TensorRT-LLM's host work per sequence (PR #10273's figure);
    # 22% after. What is left (one-GPU prefill-heavy rows) is in docs/benchmarks.md.
    module = _benchmark()
    result = module.check(module.MOE_TABLE)
    assert result["num_rows"] == 110
    assert result["refused"] == []
    assert result["held_out"]["median_abs_error"] <= 0.25
    # the short-sequence one-GPU rows the host bounds, 4x too fast before
    assert abs(result["rows"]["Q30-B200-128-128"]) <= 0.25


def test_the_2023_tables_check_the_masked_mha_decode_of_grouped_query_models() -> None:
    # TensorRT-LLM's 2023 performance.md tables (57 rows, none fitted on, and 4 of its v0.5.0 blog).
    # Its 0.5-0.6 decode kernel
    # runs one thread block per query head (gpt_attention.md), so a grouped-query model's KV heads
    # are read once per query head: 8 times for Llama 2 70B (64 query heads over 8 KV heads), 29
    # times for Falcon 180B (232 over 8). Read once, the GQA rows with 2,048 outputs came out
    # +57% to +114% fast on H100; read per query head they land with the MHA models (GPT-J, 7B).
    module = _benchmark()
    result = module.check(module.TABLE_2023)
    assert result["num_rows"] == 61
    assert result["refused"] == []
    assert result["held_out"]["median_abs_error"] <= 0.15
    for row_id in ("L70-H100-128-2048", "L70-H100-2048-2048", "F180-H100-128-2048", "F180-H100-2048-2048"):
        assert abs(result["rows"][row_id]) <= 0.25, row_id


def test_a_prefill_of_64_prompts_at_once_lands_within_the_issues_ttft_bound() -> None:
    # TensorRT-LLM v0.5.0's blog H100vsA100.md: GPT-J 6B at a static batch of 64, 128-token prompts,
    # first token after 102 ms on H100 (FP8) and 481 ms on A100 (FP16), the only published
    # first-token latencies at a batch above 1 in these tables. Issue 27 asks for TTFT rows at a
    # concurrency within 20% each.
    module = _benchmark()
    result = module.check(module.TABLE_2023)
    for row_id in ("GJ-H100-TTFT64-128", "GJ-A100-TTFT64-128"):
        assert abs(result["rows"][row_id]) <= 0.20, row_id
    assert result["by_regime"]["first-token latency at a batch above 1"]["n"] == 2


def test_the_0_17_table_is_read_whole_and_within_the_target() -> None:
    # The same page at TensorRT-LLM 0.17 (TensorRT engines): 207 rows, none fitted on, with the same
    # models at TP 1 to 8 on one GPU type. One-GPU dense rows are the engine's best-covered ground.
    module = _benchmark()
    result = module.check(module.TABLE_V017)
    assert result["num_rows"] == 207
    assert result["refused"] == []
    assert result["held_out"]["median_abs_error"] <= 0.12
    for group in ("L8tp1 H200", "L8tp1 H100", "L8tp1 A100", "L8tp1 L40S", "M7tp1 H200"):
        assert result["by_group"][group]["median_abs_error"] <= 0.10, group
