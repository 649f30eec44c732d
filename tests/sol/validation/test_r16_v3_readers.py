"""Reading a user's hardware, metric and value cells (round 16, helper V3).

1. A node or system count in the hardware cell that contradicts the GPUs cell is refused naming
   both (``8 nodes of 8x H100`` beside 1), and a cell's node shape (``2 nodes of 4x H100``) is
   the cluster's: two nodes of four GPUs, not one DGX of eight.
2. One quantity over two numbers (``tokens/s/GPU`` over ``4792; 4800`` or ``4792 / 4800``) is
   refused: which one the source means is a guess; a range stays its midpoint.
3. A serving throughput far under one request decoding alone is refused, offline rows too.
4. A measured value that overflows a ratio (``1e308``) is "far above", never "inf".

Hand figures used below (public sources):

* DGX H100, HGX H100 and AWS p5.48xlarge hold 8 H100 SXM each (NVIDIA DGX H100 datasheet, AWS
  EC2 P5 page): 8 nodes of 8 are 64 GPUs, 4 systems of 8 are 32, 2 are 16.
* Llama 3.1 8B: 8,030,261,248 parameters (Hugging Face model card, 8.03B); 32 layers, 8 KV heads
  of 128: K and V in 16 bits are 32 x 8 x 128 x 2 x 2 = 131,072 bytes a token.
  H100 SXM: 3.35 TB/s of HBM3, 1,979 TFLOP/s dense FP8 (NVIDIA H100 datasheet).
  One request of 1,000 prompt and 1,000 output tokens decoding alone in FP8 reads per token
  8.030e9 B of weights + 2,000 x 131,072 = 0.262e9 B of KV cache: 8.292e9 / 3.35e12 = 2.4753 ms,
  plus its prompt, 2 x 8.030e9 x 1,000 / 1.979e15 = 8.1 ms, over its 1,000 output tokens:
  0.0081 ms. 1 / 2.4834 ms = 402.7 tokens/s; a measured 1 token/s is 1 / 402.7 = 0.248% of it,
  and 10 tokens/s (2.5%) is inside the 100x floor.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lightspeed.catalog import Catalog
from lightspeed.sol.validation.hardware_text import cluster_of, read_hardware, row_gpus
from lightspeed.sol.validation.published import PublishedRow, RowError
from lightspeed.sol.validation.readings import read_cell
from user_rows import HEADER, validated_rows

GPUS_PER_H100_NODE = 8  # DGX/HGX H100, p5.48xlarge


def _row_gpus(catalog: Catalog, gpus: str, hardware: str) -> tuple[int, str]:
    row = PublishedRow(row_id="H", kind="train", line=2, cells={"GPUs": gpus, "hardware": hardware})
    return row_gpus(catalog, row)


def _row(row_id: str, **cells: str) -> str:
    """A row under :data:`HEADER`: MPT-13B training on H100 as llm-foundry's benchmark table writes it."""
    base = {
        "id": row_id,
        "kind": "train",
        "source": "mosaicml/llm-foundry scripts/train/benchmarking/README.md",
        "model": "MPT-13b",
        "params_B": "12.85",
        "seq": "2048",
        "global_batch": "16",
        "micro_batch": "2",
        "TP": "1",
        "PP": "1",
        "DP": "8",
        "sharding": "FSDP FULL_SHARD",
        "GPUs": "8",
        "hardware": "1 node of 8x H100",
        "precision": "BF16",
        "recompute": "none",
        "metric": "MFU %",
        "measured": "39.79",
    }
    base.update(cells)
    return "\t".join(base.get(column, "") for column in HEADER.split("\t"))


# --- 1: node and system counts in the hardware cell -------------------------------------------


@pytest.mark.parametrize(
    ("gpus", "hardware", "counted"),
    [
        ("1", "8 nodes of 8x H100", 8 * GPUS_PER_H100_NODE),
        ("16", "8 nodes of 8x H100", 8 * GPUS_PER_H100_NODE),
        ("8", "4 systems x 8 H100 (3200 Gb/s EFA)", 4 * GPUS_PER_H100_NODE),
        ("8", "DGX H100 x 4", 4 * GPUS_PER_H100_NODE),
        ("8", "p5.48xlarge x 2 (H100, 3.2 Tb/s EFA)", 2 * GPUS_PER_H100_NODE),
        ("8", "2x DGX H100", 2 * GPUS_PER_H100_NODE),
    ],
)
def test_a_node_count_against_the_gpus_cell_is_refused_naming_both(
    catalog: Catalog, gpus: str, hardware: str, counted: int
) -> None:
    with pytest.raises(RowError) as refused:
        _row_gpus(catalog, gpus, hardware)
    message = str(refused.value)
    assert f"GPUs '{gpus}'" in message
    assert f"counts {counted:,}" in message
    assert "make them agree" in message


@pytest.mark.parametrize(
    ("gpus", "hardware", "expected"),
    [
        ("32", "4 systems x 8 H100 (3200 Gb/s EFA)", 32),
        ("8", "DGX H100 x 1", 8),
        ("8", "1 node of 8x H100", 8),
        ("8", "2 nodes of 4x H100", 8),
        ("16", "2x DGX H100", 16),
        # a bare count of one node's GPUs describes the node, as before
        ("64", "8x H100", 64),
        # a parenthesis describes the cluster the job ran on part of
        ("512", "H100 (Eos: 576 nodes x 8)", 512),
    ],
)
def test_counts_that_agree_are_read(catalog: Catalog, gpus: str, hardware: str, expected: int) -> None:
    assert _row_gpus(catalog, gpus, hardware)[0] == expected


def test_a_cells_node_shape_is_the_clusters(catalog: Catalog) -> None:
    hardware, _ = read_hardware(catalog, "2 nodes of 4x H100")
    cluster, notes = cluster_of(catalog, hardware, 8)
    assert (cluster.num_nodes, cluster.system.num_accelerators) == (2, 4)
    assert notes[0] == "2 x dgx-h100 (4 GPUs used in each)"
    # a node as full as the system's is the system's own
    hardware, _ = read_hardware(catalog, "1 node of 8x H100")
    cluster, _ = cluster_of(catalog, hardware, 8)
    assert (cluster.num_nodes, cluster.system.num_accelerators) == (1, GPUS_PER_H100_NODE)


def test_a_two_node_split_is_predicted_with_its_inter_node_traffic(run_cli: Any, tmp_path: Path) -> None:
    rows = validated_rows(
        run_cli,
        tmp_path,
        _row("ONE"),
        _row("TWO", hardware="2 nodes of 4x H100"),
        _row("TWO_NO_GPUS", hardware="2 nodes of 4x H100", GPUs=""),
        _row("BAD", hardware="8 nodes of 8x H100", GPUs="1"),
    )
    for row_id in ("TWO", "TWO_NO_GPUS"):
        assert rows[row_id]["status"] == "ok", rows[row_id]["reason"]
        assert "2 x dgx-h100 (4 GPUs used in each)" in rows[row_id]["assumptions"]
        # FSDP's gathers now cross EFA/IB between the nodes, slower than one node's NVLink
        assert rows[row_id]["predicted"] < rows["ONE"]["predicted"]
    assert rows["BAD"]["status"] == "error"
    assert "GPUs '1' is 1 GPU but hardware '8 nodes of 8x H100' counts 64" in rows["BAD"]["reason"]


# --- 2: one quantity, several numbers ------------------------------------------------------------


@pytest.mark.parametrize(
    ("metric", "measured", "kind"),
    [
        ("tokens/s/GPU", "4792; 4800", "train"),
        ("tokens/s/GPU", "4792 / 4800", "train"),
        ("total output tokens/s", "15,220 / 15,300", "infer"),
    ],
)
def test_one_quantity_over_two_numbers_is_refused(metric: str, measured: str, kind: str) -> None:
    readings = read_cell(metric, measured, kind=kind)
    problem = readings[0].problem
    assert f"metric '{metric}' is one quantity but measured '{measured}' gives 2 values" in problem
    assert "give one value, or name each metric" in problem
    with pytest.raises(RowError, match="one quantity"):
        readings[0].per_gpu(8)


def test_a_range_and_one_number_per_metric_are_still_read() -> None:
    (ranged,) = read_cell("tokens/s/GPU", "4792-4800", kind="train")
    assert (ranged.value, ranged.problem) == ((4792 + 4800) / 2, "")
    paired = read_cell("tokens/s/GPU; MFU %", "4792; 39.79", kind="train")
    assert [(reading.key, reading.value, reading.problem) for reading in paired] == [
        ("tokens_per_s_per_gpu", 4792.0, ""),
        ("mfu", pytest.approx(0.3979), ""),
    ]
    (noted,) = read_cell("tokens/s/GPU", "4792 (median of 3 runs)", kind="train")
    assert (noted.value, noted.problem) == (4792.0, "")


# --- 3: a serving throughput far under one stream ------------------------------------------------


def _offline(row_id: str, measured: str) -> str:
    return "\t".join(
        {
            "id": row_id,
            "kind": "infer",
            "source": "NVIDIA/TensorRT-LLM docs/source/performance/perf-overview.md (trtllm-bench)",
            "model": "Llama 3.1 8B",
            "params_B": "8B",
            "seq": "ISL/OSL 1000/1000",
            "global_batch": "offline, max concurrency (n/r)",
            "TP": "1",
            "PP": "1",
            "GPUs": "1",
            "hardware": "H100",
            "precision": "FP8",
            "metric": "total output tokens/s",
            "measured": measured,
            "confidence": "read",
        }.get(column, "")
        for column in HEADER.split("\t")
    )


def test_an_offline_throughput_under_one_stream_is_refused(run_cli: Any, tmp_path: Path) -> None:
    rows = validated_rows(run_cli, tmp_path, _offline("I1", "1"), _offline("I10", "10"))
    assert rows["I1"]["status"] == "error"
    reason = rows["I1"]["reason"]
    assert "'total output tokens/s' = '1' is 0.248% of the 403 output tokens/s one request" in reason
    assert "no deployment is more than 100x slower" in reason
    assert "1,000x larger would be 248.3% of it" in reason
    assert rows["I10"]["status"] == "ok", rows["I10"]["reason"]


# --- 4: no inf in user text ------------------------------------------------------------------------


def test_an_overflowing_value_is_far_above_peak(run_cli: Any, tmp_path: Path) -> None:
    rows = validated_rows(run_cli, tmp_path, _row("U10", metric="tokens/s/GPU", measured="1e308"))
    reason = rows["U10"]["reason"]
    assert "'1e308' is far above one h100-sxm's fastest dense peak" in reason
    assert "inf" not in reason.replace("infer", "")
    assert "nan" not in reason
