"""Hardware cells naming TPU slices and PCIe clusters beyond one server (issue 28, point 9)."""

from __future__ import annotations

import pytest

from lightspeed.catalog import Catalog
from lightspeed.sol.validation.hardware_text import resolve_row_cluster, row_gpus
from lightspeed.sol.validation.published import PublishedRow


def _row(hardware: str, gpus: str = "") -> PublishedRow:
    cells = {"hardware": hardware, **({"GPUs": gpus} if gpus else {})}
    return PublishedRow(row_id="H", kind="infer", line=2, cells=cells)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # (system, chips, slice shape, every axis wraps)
        ("TPU v5e x8", ("tpu-v5e-pod", 8, (2, 4), False)),
        ("8x TPU v5e", ("tpu-v5e-pod", 8, (2, 4), False)),
        ("Cloud TPU v5e (v5litepod-16)", ("tpu-v5e-pod", 16, (4, 4), False)),
        ("v5p-128", ("tpu-v5p-pod", 64, (4, 4, 4), True)),  # TensorCores: 64 chips, one cube
        ("TPU v5p-1024 (JAX, MaxText)", ("tpu-v5p-pod", 512, (8, 8, 8), True)),
        ("TPU v6e (Trillium) 256 chips", ("tpu-v6e-pod", 256, (16, 16), True)),
        ("Trillium x 64", ("tpu-v6e-pod", 64, (8, 8), False)),
        ("TPU v4-8", ("tpu-v4-pod", 4, (1, 2, 2), False)),
    ],
)
def test_tpu_cells(catalog: Catalog, text: str, expected: tuple[str, int, tuple[int, ...], bool]) -> None:
    gpus, note = row_gpus(catalog, _row(text))
    cluster, notes = resolve_row_cluster(catalog, _row(text), gpus)
    system = cluster.system
    wraps = bool(system.torus_wraparound) and all(system.torus_wraparound)
    assert (system.name, cluster.num_accelerators, system.torus_dimensions, wraps) == expected
    assert note.startswith("GPUs from the hardware cell")
    assert any("torus" in line for line in notes)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # (GPUs, servers, cards per server, NIC link, NICs per server)
        ("16x L40S", (16, 2, 8, "ethernet-400g", 4)),
        ("NVIDIA L4 x 24", (24, 3, 8, "ethernet-400g", 4)),
        ("12x A10G (AWS g5)", (12, 2, 6, "ethernet-400g", 3)),
        ("16x L40S, RoCE 400G", (16, 2, 8, "ethernet-400g", 4)),  # the assumed NIC named: its count kept
        ("16x H100 NVL, NDR", (16, 2, 8, "ib-ndr", 8)),
    ],
)
def test_pcie_cells_beyond_one_server(
    catalog: Catalog, text: str, expected: tuple[int, int, int, str, int]
) -> None:
    gpus, _ = row_gpus(catalog, _row(text))
    cluster, notes = resolve_row_cluster(catalog, _row(text), gpus)
    assert cluster.fabric is not None
    got = (gpus, cluster.num_nodes, cluster.system.num_accelerators, cluster.fabric.link.name)
    assert (*got, cluster.fabric.num_links) == expected
    # another fabric named in the cell: one NIC per card, nothing assumed
    assert any(line.startswith("assumed:") for line in notes) is ("NDR" not in text)


def test_the_gpus_cell_wins_over_the_text(catalog: Catalog) -> None:
    assert row_gpus(catalog, _row("v5p-128", gpus="32")) == (32, "")
