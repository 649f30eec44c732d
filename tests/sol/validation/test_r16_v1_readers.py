"""Reading a user's hardware, metric and value text (round 16, helper V1).

1. Nodes and systems counted in the hardware cell with no GPUs cell: ``8x H100, 4 nodes`` is
   32 GPUs, never 8, nor ``4 nodes, 400`` read as 4 x 400 from the ``400G IB`` beside it.
2. Metrics joined by ``/`` are paired with as many numbers by position, as ``;`` pieces are.
3. A training or serving rate too slow for any run (``5.000`` for 5,000) is refused, as a too
   long step time already was.
4. ``3.2 Tbps EFA`` is p5.48xlarge's EFA total (AWS EC2 P5 page: 32 x 100 Gb/s per instance).

Hand figures used below (public sources):

* DGX H100, HGX H100 and AWS p5.48xlarge hold 8 H100 SXM each (NVIDIA DGX H100 datasheet, AWS
  EC2 P5 page); Google Cloud's A3 Mega (a3-megagpu-8g) 8 H100 (Google Cloud A3 machine types).
  So 4 nodes of 8 are 32 GPUs, 2 are 16.
* H100 SXM's fastest dense peak is FP8's 1,979 TFLOP/s (NVIDIA H100 datasheet, without sparsity).
  Llama 3 70B has 70.6e9 parameters: 1.05 tokens/s/GPU x 6 x 70.6e9 = 0.445 TFLOP/s = 0.02% of
  1,979; 0.4 TFLOP/s / 1,979 = 0.02%; 67.2 tokens/s over 64 GPUs is 0.02% too.
* Serving 5 output tokens/s to 64 users in flight is one token every 64 / 5 = 12.8 s per user.
* 3,200 Gb/s of EFA on 400 Gb/s NICs is 3,200 / 400 = 8 NICs a node.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lightspeed.catalog import Catalog
from lightspeed.sol.validation.hardware_text import read_hardware, row_gpus
from lightspeed.sol.validation.published import PublishedRow, RowError
from lightspeed.sol.validation.readings import read_cell
from user_rows import HEADER, validated_rows

GPUS_PER_H100_NODE = 8  # DGX/HGX H100, p5.48xlarge, a3-megagpu-8g


def _gpus(catalog: Catalog, hardware: str) -> tuple[int, str]:
    row = PublishedRow(row_id="H", kind="train", line=2, cells={"hardware": hardware})
    return row_gpus(catalog, row)


def _row(row_id: str, **cells: str) -> str:
    """A row under :data:`HEADER` (Llama 3 8B training, 8,192 tokens, batch 256 unless given)."""
    base = {
        "id": row_id,
        "kind": "train",
        "source": "my blog",
        "model": "Llama 3 8B",
        "seq": "8192",
        "global_batch": "256",
        "micro_batch": "1",
        "precision": "bf16",
        "recompute": "none",
    }
    base.update(cells)
    return "\t".join(base.get(column, "") for column in HEADER.split("\t"))


# --- 1: nodes and systems counted in the hardware cell --------------------------------------------


@pytest.mark.parametrize(
    ("hardware", "expected"),
    [
        ("8x H100 SXM 80GB, 4 nodes, 400G IB", 4 * GPUS_PER_H100_NODE),
        ("8x H100, 4 nodes, 200G IB", 4 * GPUS_PER_H100_NODE),
        ("8x H100, 4 nodes", 4 * GPUS_PER_H100_NODE),
        ("8x H100 per node, 4 nodes, NDR 400", 4 * GPUS_PER_H100_NODE),
        ("8xH100, 2 nodes, 3.2 Tbps EFA", 2 * GPUS_PER_H100_NODE),
        ("DGX H100 x 4", 4 * GPUS_PER_H100_NODE),
        ("p5.48xlarge x 4", 4 * GPUS_PER_H100_NODE),
        ("A3 Mega (8x H100) x 2", 2 * GPUS_PER_H100_NODE),
        # read as before: the job's GPUs, with the nodes they sit on
        ("32x H100 (4 nodes)", 32),
        ("H100 SXM5 80GB x 16 (2 nodes)", 16),
        ("H100 80GB x 32, 400 Gbps InfiniBand", 32),
        ("4 nodes, 8x H100 each, 400G InfiniBand", 4 * GPUS_PER_H100_NODE),
        ("2x DGX H100", 2 * GPUS_PER_H100_NODE),
    ],
)
def test_nodes_and_systems_in_the_hardware_cell_count_gpus(
    catalog: Catalog, hardware: str, expected: int
) -> None:
    assert _gpus(catalog, hardware)[0] == expected


@pytest.mark.parametrize("hardware", ["H100 SXM, 4 nodes", "H100 SXM (4 nodes, 400G IB)"])
def test_nodes_of_a_part_are_its_usual_node_said_as_assumed(catalog: Catalog, hardware: str) -> None:
    gpus, note = _gpus(catalog, hardware)
    assert gpus == 4 * GPUS_PER_H100_NODE
    assert "assumed" in note
    assert "8 GPUs a node" in note


def test_nodes_of_a_part_with_no_usual_node_are_refused_asking_per_node(catalog: Catalog) -> None:
    # an L4 is a card no catalog system is built from: how many sit in a node is not known
    with pytest.raises(RowError, match="GPUs per node"):
        _gpus(catalog, "L4, 4 nodes")


def test_a_row_on_nodes_is_predicted_on_all_its_gpus(run_cli: Any, tmp_path: Path) -> None:
    rows = validated_rows(
        run_cli,
        tmp_path,
        _row("G1", hardware="8x H100, 4 nodes", metric="step time (s)", measured="8.2"),
        _row("G2", hardware="DGX H100 x 4", metric="step time (s)", measured="8.2"),
    )
    for row in rows.values():
        assert row["status"] == "ok", row["reason"]
        plan = row["plan"]
        assert plan["tp"] * plan["pp"] * plan["dp"] * plan["cp"] == 4 * GPUS_PER_H100_NODE


# --- 2: metrics joined by '/' ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("metric", "measured", "expected"),
    [
        ("TTFT (s) / TPOT (ms)", "0.3 / 12.5", [("ttft_s", 0.3), ("tpot_s", 0.0125)]),
        ("TPOT (ms) / TTFT (s)", "12.5 / 0.3", [("tpot_s", 0.0125), ("ttft_s", 0.3)]),
        ("throughput (tok/s) / TTFT (s)", "5000 / 0.3", [("output_tokens_per_s", 5000.0), ("ttft_s", 0.3)]),
        ("TTFT/TPOT (ms)", "300/12.5", [("ttft_s", 0.3), ("tpot_s", 0.0125)]),
    ],
)
def test_metrics_joined_by_a_slash_pair_by_position(
    metric: str, measured: str, expected: list[tuple[str, float]]
) -> None:
    readings = read_cell(metric, measured, kind="infer")
    assert [(reading.key, reading.value) for reading in readings] == [
        (key, pytest.approx(value)) for key, value in expected
    ]
    assert all(not reading.problem for reading in readings)


def test_a_slash_inside_a_unit_is_no_second_metric() -> None:
    (reading,) = read_cell("tokens/s/GPU", "1600 / 1700", kind="train")
    # one quantity (the '/' inside its unit splits nothing) over two numbers: refused, not the first
    assert reading.key == "tokens_per_s_per_gpu"
    assert "one quantity" in reading.problem
    (reading,) = read_cell("ms/token", "12.5", kind="infer")
    assert reading.key == "tpot_s"


def test_slash_metrics_over_another_count_of_numbers_are_refused() -> None:
    readings = read_cell("TTFT (s) / TPOT (ms)", "0.3 / 12.5 / 40", kind="infer")
    assert "names 2 quantities ('/')" in readings[0].problem
    assert "gives 3 numbers" in readings[0].problem


# --- 3: rates too slow for any run ---------------------------------------------------------------


def _seventy_b(row_id: str, metric: str, measured: str) -> str:
    return _row(
        row_id,
        model="Llama 3 70B",
        global_batch="512",
        TP="4",
        PP="2",
        DP="8",
        GPUs="64",
        hardware="H100 SXM",
        recompute="full",
        metric=metric,
        measured=measured,
    )


def test_a_training_rate_far_under_peak_is_refused_naming_the_share(run_cli: Any, tmp_path: Path) -> None:
    rows = validated_rows(
        run_cli,
        tmp_path,
        _seventy_b("D1", "tokens/s/GPU", "1.050"),
        _seventy_b("D2", "TFLOP/s per GPU", "0.4"),
        _seventy_b("D5", "throughput (tokens/s)", "67.200"),
        _seventy_b("D7", "tokens/s/GPU", "1,050"),
    )
    for row_id in ("D1", "D2", "D5"):
        assert rows[row_id]["status"] == "error"
        assert "is 0.02% of one h100-sxm's fastest dense peak" in rows[row_id]["reason"]
    assert "'1.050' may be 1,050 written with a European thousands separator" in rows["D1"]["reason"]
    assert "(64x: " in rows["D5"]["reason"]  # or one GPU's figure under the job's label
    assert rows["D7"]["status"] == "ok", rows["D7"]["reason"]


def _serving(row_id: str, measured: str) -> str:
    return _row(
        row_id,
        kind="infer",
        source="vendor blog 2025, vLLM 0.8",
        model="Llama 3.1 70B",
        seq="ISL/OSL 1000/1000",
        global_batch="concurrency 64",
        micro_batch="",
        TP="8",
        GPUs="8",
        hardware="8x H100 SXM",
        precision="FP8",
        recompute="",
        metric="output tokens/s",
        measured=measured,
    )


def test_a_serving_throughput_far_too_slow_is_refused(run_cli: Any, tmp_path: Path) -> None:
    rows = validated_rows(run_cli, tmp_path, _serving("C19", "5.000"), _serving("C20", "5 000"))
    assert rows["C19"]["status"] == "error"
    reason = rows["C19"]["reason"]
    assert "one output token every 12.8 s for each of 64 requests in flight" in reason
    assert "'5.000' may be 5,000 written with a European thousands separator" in reason
    assert rows["C20"]["status"] == "ok", rows["C20"]["reason"]


# --- 4: a Tb/s EFA total ---------------------------------------------------------------------------


def test_an_efa_total_in_tbps_is_the_nodes_nics(catalog: Catalog) -> None:
    hardware, _ = read_hardware(catalog, "8xH100, 2 nodes, 3.2 Tbps EFA")
    assert (hardware.fabric, hardware.nics_per_node) == ("efa-400g", 3200 // 400)
    assert hardware.network_text == "3.2 Tbps EFA"


def test_a_tbps_total_beside_another_network_is_its_name_alone(catalog: Catalog) -> None:
    # ports of RoCE are quoted one by one; a node's total names the network, not a port's speed
    hardware, _ = read_hardware(catalog, "H100 (IBM Cloud cluster, 3.2Tbps RoCE)")
    assert (hardware.fabric, hardware.nics_per_node) == ("ethernet-400g", None)
