"""Users' rows that were read at another load or layout than they state (expert check C, round 16):
a static batch the KV cache cannot hold, a concurrency or length written as a range, lengths written
as approximate, degrees written in the sharding cell, and the settings note of a searched plan."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lightspeed.sol.validation.infer_lengths import batch_ranges, concurrency_ranges
from lightspeed.sol.validation.published import PublishedRow
from lightspeed.sol.validation.train_degrees import stated_degrees
from user_rows import serving_row, validated_rows

# Llama 2 70B's KV cache per token in FP8 (one byte an element): K and V, 80 layers, 8 KV heads of
# 128 dimensions (Touvron et al. 2023, table of Llama 2 shapes) = 163,840 bytes, 160 KiB
LLAMA2_70B_KV_BYTES_PER_TOKEN = 2 * 80 * 8 * 128
H200_MEMORY_BYTES = 141e9  # NVIDIA H200 datasheet: 141 GB of HBM3e


def _h200_row(row_id: str, batch: str) -> str:
    """TensorRT-LLM 0.7's Llama 2 70B FP8 on one H200 at ISL/OSL 128/2048 (its blog's table)."""
    return (
        f"{row_id}\tinfer\tTensorRT-LLM 0.7 blog\tLlama 2 70B\t\t\t\t\t\t\tISL/OSL 128/2048\t{batch}\t\t1"
        "\t\t\t\t\t\t\t1\tH200 141GB\tFP8\t\toutput tokens/s/GPU\t2,941\t\tread"
    )


def test_a_static_batch_over_the_kv_cache_says_it_was_capped(run_cli: Any, tmp_path: Path) -> None:
    rows = validated_rows(run_cli, tmp_path, _h200_row("P1", "batch 192"), _h200_row("P3", "batch 96"))
    capped = rows["P1"]
    held = capped["plan"]["max_batch"]
    assert capped["status"] == "ok"
    assert held < 192
    assert capped["plan"]["stated_batch_per_replica"] == 192
    per_request_mib = LLAMA2_70B_KV_BYTES_PER_TOKEN * (128 + 2048) / 2**20  # 340 MiB
    assert f"({per_request_mib:.0f} MiB each)" in capped["reason"]
    assert f"static batch of 192 capped to {held}" in capped["reason"]
    line = next(text for text in capped["assumptions"] if text.startswith("static batch of 192"))
    assert f"predicted at {held}, not 192" in line
    assert rows["P3"]["reason"] == ""  # 96 fits: nothing to say


def test_a_static_batch_far_over_the_kv_cache_is_refused(run_cli: Any, tmp_path: Path) -> None:
    # 400 requests of 2,176 tokens hold 142.6 GB of KV cache: more than the whole GPU, weights aside
    assert 400 * (128 + 2048) * LLAMA2_70B_KV_BYTES_PER_TOKEN > H200_MEMORY_BYTES
    rows = validated_rows(run_cli, tmp_path, _h200_row("P2", "batch 400"))
    assert rows["P2"]["predicted"] is None
    assert "the static batch of 400 does not fit" in rows["P2"]["reason"]
    assert "check the row's GPUs, precision (KV cache format) and lengths" in rows["P2"]["reason"]


def test_a_concurrency_range_is_refused_as_a_batch_range_is(run_cli: Any, tmp_path: Path) -> None:
    metric = "Output token throughput (tok/s)"
    rows = validated_rows(
        run_cli,
        tmp_path,
        serving_row("A", "concurrency 64-128", metric, "5000"),
        serving_row("B", "concurrency 64 to 128", metric, "5000"),
        serving_row("C", "64-128 users", metric, "5000"),
        serving_row("D", "batch size 32-64", metric, "5000"),
    )
    for row_id, what in (("A", "concurrency"), ("B", "concurrency"), ("C", "concurrency"), ("D", "batch")):
        reason = rows[row_id]["reason"]
        assert rows[row_id]["predicted"] is None
        assert f"the {what} '" in reason
        assert "is a range of runs in the global_batch cell" in reason
        assert "write one value per row" in reason


def test_a_range_is_not_a_load_followed_by_its_lengths() -> None:
    assert batch_ranges("batch 64 - 1024/1024") == []
    assert concurrency_ranges("concurrency 8 - 2k tokens") == []
    assert batch_ranges("bs 1-256") == ["bs 1-256"]


def _lengths_row(row_id: str, seq: str) -> str:
    """Llama 3.1 8B in BF16 on one H100 at a static batch of 8, its lengths as ``seq`` says."""
    return (
        f"{row_id}\tinfer\tvLLM 0.6.3\tLlama 3.1 8B\t\t\t\t\t\t\t{seq}\tbatch 8\t\t1\t\t\t\t\t\t\t1\t"
        "H100 SXM\tBF16\t\toutput tokens/s\t900\t\tread"
    )


def test_lengths_written_as_a_range_ask_for_one(run_cli: Any, tmp_path: Path) -> None:
    rows = validated_rows(run_cli, tmp_path, _lengths_row("R", "ISL 900-1100 / OSL 1000"))
    reason = rows["R"]["reason"]
    assert "'isl 900-1100' is a range of tokens in the seq cell" in reason
    assert "'isl 1000'" in reason  # the middle of 900 and 1100, as the fix


def test_approximate_lengths_are_read_as_written_and_said(run_cli: Any, tmp_path: Path) -> None:
    rows = validated_rows(
        run_cli,
        tmp_path,
        _lengths_row("A", "input ~1000, output ~1000"),
        _lengths_row("E", "input 1000, output 1000"),
    )
    assert rows["A"]["predicted"] == rows["E"]["predicted"] is not None
    assert any(
        "lengths written as approximate ('input ~1000, output ~1000')" in a for a in rows["A"]["assumptions"]
    )
    assert not any("approximate" in a for a in rows["E"]["assumptions"])


def _training_row(row_id: str, degrees: tuple[str, str, str, str], sharding: str) -> str:
    """Llama 3 70B on 64 H100s, 512 x 8,192 tokens, micro-batch 1, full recompute."""
    tp, pp, vpp, dp = degrees
    return (
        f"{row_id}\ttrain\tmy blog\tLlama 3 70B\t\t\t\t\t\t\t8192\t512\t1\t{tp}\t{pp}\t{vpp}\t\t{dp}\t\t"
        f"{sharding}\t64\tH100 SXM\tbf16\tfull\tTFLOP/s per GPU\t400\t\tread"
    )


def test_degrees_in_the_sharding_cell_are_said_to_come_from_it(run_cli: Any, tmp_path: Path) -> None:
    empty = ("", "", "", "")
    rows = validated_rows(
        run_cli,
        tmp_path,
        _training_row("B2", empty, "TP8 PP1 DP8"),
        _training_row("B9", empty, "tp=4, pp=2, dp=8"),
        _training_row("B10", empty, "4-way TP, 2-way PP"),
    )
    for row_id, cell, tp, pp in (("B2", "TP8 PP1 DP8", 8, 1), ("B9", "tp=4, pp=2, dp=8", 4, 2)):
        assumptions = " | ".join(rows[row_id]["assumptions"])
        assert "names nothing lightspeed reads" not in assumptions
        assert f"sharding '{cell}' gives parallel degrees and no sharding -> ZeRO-1" in assumptions
        assert f"parallel degrees read from the sharding cell '{cell}': TP {tp}, PP {pp}, DP 8" in assumptions
        assert (rows[row_id]["plan"]["tp"], rows[row_id]["plan"]["pp"]) == (tp, pp)
    assert (rows["B10"]["plan"]["tp"], rows["B10"]["plan"]["pp"], rows["B10"]["plan"]["dp"]) == (4, 2, 8)
    assert not any("searched" in a and "TP/PP" in a for a in rows["B10"]["assumptions"])


def test_n_way_degrees_are_read() -> None:
    cells = {"sharding": "8-way tensor parallelism, 2-way PP"}
    stated = stated_degrees(PublishedRow("W", "train", 2, cells))
    assert (stated["tp"], stated["pp"], stated["dp"]) == (8, 2, None)


def test_the_settings_note_holds_for_the_plan_chosen_from_a_search(run_cli: Any, tmp_path: Path) -> None:
    rows = validated_rows(
        run_cli,
        tmp_path,
        _training_row("M1", ("4", "2", "1", "8"), ""),
        _training_row("M2", ("", "", "1", ""), ""),
    )
    assert rows["M1"]["predicted"] == rows["M2"]["predicted"]
    assert rows["M2"]["plan"]["tp"] > 1  # the search chose a TP split: sequence parallelism is on
    note = next(a for a in rows["M2"]["assumptions"] if "sequence parallel" in a)
    assert "sequence parallel False," not in note
    assert "sequence parallel True where TP > 1 (False at TP 1)" in note
