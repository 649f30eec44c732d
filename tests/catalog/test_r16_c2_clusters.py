"""Round 16, helper C2: NIC counts a node cannot hold, the precision a missing compute row names,
and the docs' `hw show gb200-nvl72` block.

Hand figures used below (independent of the code):
- PCIe Gen5 x16: 32 GT/s x 16 lanes x 128/130 encoding / 8 bits = 63.0 GB/s per direction.
- PCIe Gen4 x16: half of that, 31.5 GB/s.
- InfiniBand NDR port: 400 Gb/s = 50 GB/s per direction; XDR: 800 Gb/s = 100 GB/s.
- A DGX H100 has 8 GPUs and one NDR ConnectX-7 per GPU (DGX H100 user guide).
So on a DGX H100 the most NDR NICs that fit under each GPU's PCIe link are
floor(63.0 x 8 / 50) = 10 per node, and floor(63.0 x 8 / 100) = 5 XDR ports.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from lightspeed.catalog import Catalog
from lightspeed.errors import DataFileError, InvalidPlanError, UnsupportedError

WriteToml = Callable[[str, str], Path]

PCIE5_X16_BYTES_PER_S = 32e9 * 16 * 128 / 130 / 8  # 63.0 GB/s
NDR_BYTES_PER_S = 400e9 / 8  # 50 GB/s
DOCS = Path(__file__).resolve().parents[2] / "docs" / "catalog.md"


def _one_line_error(result, text: str) -> None:  # type: ignore[no-untyped-def]
    assert result.code == 2, (result.code, result.out, result.err)
    assert "Traceback" not in result.err
    assert "internal error" not in result.err
    assert len(result.err.strip().splitlines()) == 1, result.err
    assert text in result.err, result.err


# 1. NIC counts -----------------------------------------------------------------------------------


def test_hand_figures() -> None:
    assert pytest.approx(63.0e9, rel=1e-3) == PCIE5_X16_BYTES_PER_S
    assert int(PCIE5_X16_BYTES_PER_S * 8 // NDR_BYTES_PER_S) == 10


def test_a_count_past_any_node_is_refused(catalog: Catalog) -> None:
    # used to print "800000 x ib-ndr per node (100000 per accelerator), 5 PB/s per accelerator"
    with pytest.raises(InvalidPlanError) as info:
        catalog.parse_cluster("2xdgx-h100@ib-ndr:100000nic")
    message = str(info.value)
    assert "800,000 x ib-ndr" in message
    assert "at most 64 a node" in message
    assert "at most 10 NICs per dgx-h100" in message  # what fits the host link too


@pytest.mark.parametrize(
    ("spec", "per_gpu"), [("2xdgx-h100@ib-ndr:2nic", "100 GB/s"), ("9xdgx-h100@ib-xdr", "100 GB/s")]
)
def test_more_than_the_host_link_is_refused(catalog: Catalog, spec: str, per_gpu: str) -> None:
    with pytest.raises(InvalidPlanError) as info:
        catalog.parse_cluster(spec)
    message = str(info.value)
    assert f"give each accelerator {per_gpu} per direction" in message
    assert "h100-sxm: 1 x pcie-5-x16, 63 GB/s per direction" in message
    most = 10 if "ndr" in spec else 5  # hand figures in the module docstring
    assert f"at most {most} NICs per dgx-h100, e.g. :{most / 8:g}nic" in message
    suggested = catalog.parse_cluster(spec.split(":", maxsplit=1)[0] + f":{most / 8:g}nic")  # the fix works
    assert suggested.scale_out_per_accelerator_bytes_per_s() <= PCIE5_X16_BYTES_PER_S


def test_one_nic_per_gpu_is_still_a_dgx_h100(catalog: Catalog) -> None:
    cluster = catalog.parse_cluster("16xdgx-h100@ib-ndr:1nic")
    assert cluster.scale_out_per_accelerator_bytes_per_s() == NDR_BYTES_PER_S
    assert catalog.parse_cluster("2xdgx-h100@ib-ndr:1.25nic").fabric.num_links == 10  # type: ignore[union-attr]


def test_the_cli_refuses_in_one_line(run_cli) -> None:  # type: ignore[no-untyped-def]
    _one_line_error(run_cli("hw", "show", "2xdgx-h100@ib-ndr:100000nic"), "more than any node holds")
    args = ["--model", "llama-3-70b", "--global-batch", "32", "--seq", "4096", "--tp", "8", "--pp", "1"]
    result = run_cli("plan", "train", "--system", "16xdgx-h100@ib-ndr:1000nic", *args)
    _one_line_error(result, "more than any node holds")
    # a count too long for a float was an OverflowError (an internal error)
    _one_line_error(run_cli("hw", "show", f"2xdgx-h100@ib-ndr:{'9' * 400}nic"), "more than any node holds")


def test_cluster_files_are_checked_too(catalog: Catalog, write_toml: WriteToml) -> None:
    head = 'schema_version = 1\nkind = "cluster"\nname = "lab"\nsystem = "dgx-h100"\nnum_nodes = 2\n'
    for count, expected in ((100, "more than any node holds"), (16, "pcie-5-x16")):
        path = write_toml(
            f"lab{count}.toml", f'{head}[scale_out]\nlink = "ib-ndr"\nnics_per_node = {count}\n'
        )
        with pytest.raises(DataFileError) as info:
            catalog.resolve_cluster(path)
        message = str(info.value)
        assert str(path) in message
        assert expected in message
        assert "nics_per_node = 10 or fewer" in message
    path = write_toml("ok.toml", f'{head}[scale_out]\nlink = "ib-ndr"\nnics_per_node = 8\n')
    assert catalog.resolve_cluster(path).scale_out_per_accelerator_bytes_per_s() == NDR_BYTES_PER_S


def test_every_shipped_system_keeps_its_own_nics(catalog: Catalog) -> None:
    # named again with their own link and count, every system's NICs pass (Gaudi 2's 24 x 100 GbE,
    # 37.5 GB/s a chip, is above its PCIe Gen4 x16, 31.5 GB/s: its ports sit on the chip)
    for system in catalog.systems.values():
        if system.scale_out is None:
            continue
        per_gpu = system.scale_out.num_links / system.num_accelerators
        cluster = catalog.parse_cluster(f"2x{system.name}@{system.scale_out.link.name}:{per_gpu:.12g}nic")
        assert cluster.fabric == system.scale_out, system.name


def test_a_system_with_faster_nics_than_its_host_link_allows_its_own(catalog: Catalog) -> None:
    # HLS-Gaudi2: 24 x 100 GbE (3 a chip, 37.5 GB/s); 4 a chip is 50 GB/s, above both
    assert catalog.parse_cluster("2xhls-gaudi2@ethernet-100g:3nic").fabric.num_links == 24  # type: ignore[union-attr]
    with pytest.raises(InvalidPlanError, match="hls-gaudi2's own NICs"):
        catalog.parse_cluster("2xhls-gaudi2@ethernet-100g:4nic")


def test_without_a_host_link_only_the_count_is_bounded(catalog: Catalog) -> None:
    # TPU v5e records no host link; a v5e slice counts one node per chip: 64 NICs a chip at most
    assert catalog.system("tpu-v5e-pod").accelerator.host_link is None
    catalog.parse_cluster("1xv5e-2x4@ethernet-100g:0.25nic")
    with pytest.raises(InvalidPlanError, match="at most 64 a node"):
        catalog.parse_cluster("1xv5e-2x4@ethernet-100g:65nic")


def test_a_rack_counts_its_compute_trays(catalog: Catalog) -> None:
    # GB200 NVL72: 18 trays of 4 GPUs, so 64 x 18 = 1,152 NICs a rack before the host link
    rack = catalog.system("gb200-nvl72")
    assert rack.num_accelerators // rack.accelerators_per_node == 18
    assert catalog.parse_cluster("2xgb200-nvl72@ib-xdr:0.5nic").fabric.num_links == 36  # type: ignore[union-attr]
    with pytest.raises(InvalidPlanError, match="1,440 x ib-ndr NICs per gb200-nvl72 are more"):
        catalog.parse_cluster("2xgb200-nvl72@ib-ndr:20nic")


# 2. the precision a missing compute row names ------------------------------------------------------


def test_a_missing_row_names_the_precision_asked(catalog: Catalog) -> None:
    from lightspeed.sol.core.hardware import hardware_for
    from lightspeed.sol.infer.inference_hardware import inference_hardware_for
    from lightspeed.sol.infer.plan import InferencePlan

    cluster = catalog.resolve_cluster("h100-sxm")
    h100 = cluster.system.accelerator
    no_16_bit = replace(h100, compute={k: v for k, v in h100.compute.items() if k not in ("bf16", "fp16")})
    cluster = replace(cluster, system=replace(cluster.system, accelerator=no_16_bit))
    with pytest.raises(UnsupportedError) as info:
        inference_hardware_for(cluster, InferencePlan(precision="bf16"))
    message = str(info.value)
    # it said "h100-sxm has no fp16 compute figure", though the user asked bf16
    assert "no compute figure for precision bf16" in message
    assert "fp16 row" in message
    with pytest.raises(UnsupportedError, match="has no bf16 compute figure"):
        hardware_for(cluster, "bf16")  # asked and run alike: the message as before


# 3. docs ---------------------------------------------------------------------------------------------


def test_the_docs_gb200_block_says_what_hw_show_prints(catalog: Catalog) -> None:
    lines = DOCS.read_text(encoding="utf-8").splitlines()
    start = lines.index("$ lightspeed hw show gb200-nvl72")
    block = "\n".join(lines[start : start + 60])
    # a GB200 NVL72 compute tray holds 2 GB200 superchips, 4 GPUs (NVIDIA DGX GB200 user guide)
    rack = catalog.system("gb200-nvl72")
    assert f"72 x gb200, 36 x grace; nodes of {rack.accelerators_per_node} accelerators" in block
    assert rack.accelerators_per_node == 4
    assert "binary GB" not in block
    assert "read in GiB" in block
