"""``compare systems`` where a system is one GPU (an accelerator or a MIG slice named as a system):
there is no fabric and no all-reduce, so the fabric figures are ``None`` ("-" in the table) with
a note, instead of a division by the zero-second all-reduce of one GPU (it used to crash)."""

from __future__ import annotations

import json

import pytest

from expect import one_line_error
from lightspeed.catalog import Catalog
from lightspeed.sol.systems import LARGE_MESSAGE_BYTES, fabric_figures, topology_limits

INFER = [
    "compare",
    "systems",
    "--workload",
    "infer",
    "--model",
    "llama-3.1-8b",
    "--isl",
    "512",
    "--osl",
    "128",
]
FABRIC_FIGURES = (
    "scale_up_bytes_per_s",
    "slowest_bytes_per_s",
    "slowest_bidirectional_bytes_per_s",
    "small_message_latency_s",
    "small_all_reduce_s",
    "large_all_reduce_s",
    "large_all_reduce_bus_bytes_per_s",
)


@pytest.mark.parametrize("name", ["h100-sxm", "mi300x", "h100-sxm/3g.40gb"])
def test_one_gpu_has_no_fabric_figures(catalog: Catalog, name: str) -> None:
    figures = fabric_figures(catalog.resolve_cluster(name))
    assert figures.num_gpus == 1
    assert all(getattr(figures, key) is None for key in FABRIC_FIGURES)
    assert "no all-reduce" in figures.note
    # no link at all: the HBM bandwidth the collective model puts at a 1-GPU "level" is not shown
    limits = topology_limits(catalog.resolve_cluster(name))
    assert limits.scale_up_bytes_per_s is None
    assert limits.rules == ("one GPU: no TP, EP or PP group spans GPUs and nothing crosses a fabric",)


def test_eight_gpus_keep_their_figures(catalog: Catalog) -> None:
    figures = fabric_figures(catalog.resolve_cluster("dgx-h100"))
    assert figures.note == ""
    # NVLink 4: 18 links x 25 GB/s = 450 GB/s per direction per GPU
    assert figures.slowest_bytes_per_s == pytest.approx(450e9)
    # bus bandwidth of a ring all-reduce over 8 GPUs: 2 (n - 1) / n x size / time
    assert figures.large_all_reduce_bus_bytes_per_s == pytest.approx(
        2 * 7 / 8 * LARGE_MESSAGE_BYTES / figures.large_all_reduce_s
    )


@pytest.mark.parametrize(
    "systems", [["h100-sxm", "mi300x"], ["dgx-h100", "h100-sxm"], ["h100-sxm/3g.40gb", "h100-sxm/7g.80gb"]]
)
def test_compare_systems_with_one_gpu_systems(run_cli, systems: list[str]) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(*INFER, "--systems", *systems, "--json")
    assert result.code == 0, result.err
    payload = json.loads(result.out)
    for system, fabric in zip(systems, payload["fabric"], strict=True):
        single = "/" in system or system in ("h100-sxm", "mi300x")
        assert (fabric["large_all_reduce_s"] is None) == single
        assert (fabric["large_all_reduce_bus_bytes_per_s"] is None) == single
        assert (fabric["note"] != "") == single
    assert [system["num_gpus"] for system in payload["systems"]] == [
        1 if "/" in name or name in ("h100-sxm", "mi300x") else 8 for name in systems
    ]
    assert payload["per_gpu_ratio"][0] == 1.0


def test_one_gpu_fabric_row_is_dashes_and_a_note(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(*INFER, "--systems", "h100-sxm", "mi300x")
    assert result.code == 0, result.err
    rows = [line for line in result.out.splitlines() if "no scale-up link x1" in line]
    assert len(rows) == 2
    for row in rows:
        assert [cell.strip() for cell in row.strip("│ ").split("│")][2:] == ["-", "-", "-", "-"]
    assert "1 x mi300x: one GPU: no other GPU to reach, so no fabric and no all-reduce" in result.out
    assert "Traceback" not in result.err


def test_training_on_one_gpu_systems(run_cli) -> None:  # type: ignore[no-untyped-def]
    args = ["compare", "systems", "--workload", "train", "--model", "gemma-3-1b", "--global-batch", "8"]
    result = run_cli(*args, "--seq", "2048", "--systems", "h100-sxm", "dgx-h100", "--json")
    assert result.code == 0, result.err
    single, node = json.loads(result.out)["fabric"]
    assert single["small_all_reduce_s"] is None
    assert node["small_all_reduce_s"] > 0
    # a model that does not fit one GPU is still one line, not a traceback
    big = ["compare", "systems", "--workload", "train", "--model", "llama-3.1-8b", "--global-batch", "8"]
    one_line_error(run_cli(*big, "--systems", "h100-sxm", "mi300x"), "no plan of llama-3.1-8b")
