"""Catalog figures an expert check found wrong: a shared C2C link counted whole per GPU, a derived
rack total in the printed column, GB300 NVL72 totals that differ without a recorded conflict, and
``--catalog`` overrides that slipped a unit."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from lightspeed.catalog import Catalog, derive_totals, load_catalog
from lightspeed.errors import DataFileError

GB = 1e9


@pytest.mark.parametrize("name", ["gb200", "gb300"])
def test_grace_blackwell_host_link_is_one_gpus_share(catalog: Catalog, name: str) -> None:
    """NVIDIA prints one NVLink-C2C of 900 GB/s bidirectional per superchip of one Grace and two
    GPUs: each GPU's share is 900 / 2 = 450 GB/s, 225 GB/s per direction (it counted all 450 per
    direction, so ``hw compare b200 gb300`` showed the host link 7.14x PCIe 5's 63 GB/s)."""
    host = catalog.accelerator(name).host_link
    assert host is not None
    assert host.bidirectional_bytes_per_s == 900 * GB / 2
    assert host.per_direction_bytes_per_s == 900 * GB / 2 / 2
    # GH200 has a Grace of its own: the whole link
    gh200 = catalog.accelerator("gh200").host_link
    assert gh200 is not None
    assert gh200.bidirectional_bytes_per_s == 900 * GB


def test_gb200_nvl72_prints_no_bf16_dense_total(catalog: Catalog) -> None:
    """NVIDIA's rack column prints BF16 360 PF sparse; its footnote halves it. The 180 PF is
    derived (72 x 2.5 PF dense), so it is not a printed figure checked against itself."""
    totals = derive_totals(system=catalog.system("gb200-nvl72"))
    dense = totals.row("bf16_dense")
    assert dense.derived == pytest.approx(72 * 2.5e15)
    assert dense.printed is None
    assert dense.within_tolerance is None
    assert totals.row("bf16_sparse").printed == 360e15


def test_gb300_nvl72_totals_that_differ_have_their_conflict(catalog: Catalog) -> None:
    """By hand: 72 x 1.3 TF = 93.6 TF against the rack's 100 TF; 36 x 512 GB/s = 18.43 TB/s
    against the rack's 14 TB/s. Each total that differs names both documents in a conflict."""
    rack = catalog.system("gb300-nvl72")
    totals = derive_totals(system=rack)
    assert totals.row("fp64_dense").derived == pytest.approx(72 * 1.3e12)
    assert totals.row("cpu_memory_bandwidth").derived == pytest.approx(36 * 512 * GB)
    conflicts = {conflict.field: conflict for conflict in rack.conflicts}
    differing = [row.key for row in totals.rows if row.within_tolerance is False]
    assert sorted(differing) == ["cpu_memory_bandwidth", "fp64_dense"]
    for key in differing:
        conflict = conflicts[f"printed_totals.{key}"]
        assert len(conflict.sources) == 2
        assert all(source in rack.sources for source in conflict.sources)


ACCELERATOR = """
schema_version = 1
kind = "accelerator"
name = "my-h100"
extends = "h100-sxm"
{body}
"""


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ("[memory]\nbandwidth_tb_per_s = 3350", "memory.bandwidth_tb_per_s", "1 PB/s"),
        (
            "[compute.fp8]\nprinted_tflop_per_s = 1e9\nprinted_with_sparsity = false",
            "compute.fp8.printed_tflop_per_s",
            "1 EFLOP/s",
        ),
        (
            "[compute.fp8]\nprinted_tflop_per_s = 1000\nprinted_with_sparsity = true\n"
            "dense_tflop_per_s = 100",
            "compute.fp8",
            "sparse/dense is 2",
        ),
    ],
)
def test_override_unit_slips_are_refused(
    write_toml: Callable[[str, str], Path], body: str, field: str, words: str
) -> None:
    """3,350 GB/s typed as TB/s is 3.35 PB/s; 1e9 TFLOP/s is 1 ZFLOP/s; 1000 | 100 is 10:1 where
    2:4 sparsity is exactly 2:1."""
    path = write_toml("slip.toml", ACCELERATOR.format(body=body))
    with pytest.raises(DataFileError) as caught:
        load_catalog([path])
    message = str(caught.value)
    assert str(path) in message
    assert "'my-h100'" in message
    assert f"field {field!r}" in message
    assert words in message
    assert "\n" not in message


def test_blackwell_ultra_fp4_below_two_to_one_is_kept(write_toml: Callable[[str, str], Path]) -> None:
    """NVIDIA prints GB300 FP4 as 20 | 15 PF: at most 2:1 is the rule, not exactly 2:1."""
    body = (
        "[compute.fp4]\nprinted_pflop_per_s = 20.0\nprinted_with_sparsity = true\ndense_pflop_per_s = 15.0\n"
        'source = "nvidia-h100-datasheet"'
    )
    path = write_toml("ok.toml", ACCELERATOR.format(body=body))
    assert load_catalog([path]).accelerator("my-h100").compute["fp4"].dense_per_s == 15e15


def test_cli_refuses_a_unit_slip_in_one_line(run_cli, write_toml) -> None:  # type: ignore[no-untyped-def]
    path = write_toml("slip.toml", ACCELERATOR.format(body="[memory]\nbandwidth_tb_per_s = 3350"))
    result = run_cli("--catalog", str(path), "hw", "show", "h100-sxm")
    assert result.code == 2
    assert result.err.count("\n") == 1
    assert "Traceback" not in result.err
    assert "memory.bandwidth_tb_per_s" in result.err
