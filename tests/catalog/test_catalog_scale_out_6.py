"""Scale-out fabrics of the AMD Instinct platforms and the TPU v6e pod, each as its source prints it.

AMD (ROCm documentation): MI300X and MI325X nodes of '8x AMD Instinct MI300X/MI325X GPU cards per
node' with '8x NVIDIA Mellanox ConnectX-7 (CX7) NICs per node, providing a dedicated 1:1 mapping
between GPUs and network interfaces', 400G RoCE ('vLLM distributed inference with MoRI'); MI355X
nodes with '8x AMD Pensando Pollara 400 AI NICs per node' ('SGLang distributed inference with
MoRI'); the Pollara 400 is a 'single-port 400G AI NIC' (DPDK's AMD-maintained ionic guide).
Google (Cloud TPU v6e system architecture): 'Chips per host 8', 'TPU Pod size 256 chips',
'Per-host NIC configuration 4 x 200 Gbps NIC', 'Data center network bandwidth per Pod 25.6 Tbps'.
TPU v4's page prints no data-center network, so its pod still needs one named.
"""

from __future__ import annotations

import pytest

from lightspeed.catalog import Catalog
from lightspeed.catalog.totals import derive_totals
from lightspeed.errors import InvalidPlanError
from lightspeed.sol.validation.hardware_text import resolve_row_cluster, row_gpus
from lightspeed.sol.validation.published import PublishedRow

GBIT = 1e9 / 8  # bytes per second in one Gb/s

# (system, link, NICs per node, NIC Gb/s each way): 8 GPUs per AMD node, one 400G NIC per GPU
AMD_NODES = [
    ("mi300x-platform", "ethernet-400g", 8, 400),
    ("mi325x-platform", "ethernet-400g", 8, 400),
    ("mi355x-platform", "pollara-400", 8, 400),
]

# Google: 256 chips per pod, 8 per host -> 32 hosts; 4 NICs of 200 Gbps per host -> 128 NICs
V6E_HOSTS = 256 // 8
V6E_NICS = 4 * V6E_HOSTS


def _row(hardware: str, gpus: str) -> PublishedRow:
    return PublishedRow(row_id="C", kind="train", line=2, cells={"hardware": hardware, "GPUs": gpus})


def test_the_pollara_400_link(catalog: Catalog) -> None:
    link = catalog.link("pollara-400")
    assert link.family == "ethernet"
    assert link.per_direction_bytes_per_s == pytest.approx(400 * GBIT)  # 50 GB/s each way
    assert link.bidirectional_bytes_per_s == pytest.approx(800 * GBIT)
    assert link.source == "dpdk-ionic"
    assert "amd-nic-matrix" in link.sources
    for alias in ("Pollara 400", "pensando-pollara-400", "amd-pollara-400"):
        assert catalog.link(alias).name == "pollara-400"


def test_roce_400g_still_means_the_400_gbe_record(catalog: Catalog) -> None:
    # the new AMD NIC takes none of the RoCE names
    assert catalog.link("RoCE 400G").name == "ethernet-400g"


@pytest.mark.parametrize(("system", "link", "nics", "gbit"), AMD_NODES)
def test_amd_platforms_record_their_scale_out(
    catalog: Catalog, system: str, link: str, nics: int, gbit: int
) -> None:
    record = catalog.system(system)
    assert record.scale_out is not None
    assert record.scale_out.link.name == link
    assert record.scale_out.num_links == nics
    assert record.scale_out.source in record.sources
    assert record.scale_out.link.per_direction_bytes_per_s == pytest.approx(gbit * GBIT)
    assert "medium confidence" in record.note.lower()


@pytest.mark.parametrize(("system", "link", "nics", "gbit"), AMD_NODES)
def test_eight_amd_nodes_resolve_with_a_fabric(
    catalog: Catalog, system: str, link: str, nics: int, gbit: int
) -> None:
    cluster = catalog.parse_cluster(f"8x{system}")
    assert cluster.name == f"8 x {system} over {link}"
    assert cluster.num_accelerators == 64
    assert cluster.fabric is not None
    assert cluster.fabric.num_links == nics
    # one 400 Gb/s NIC per GPU: 50 GB/s each way per GPU, 3,200 Gb/s per node
    assert cluster.scale_out_per_accelerator_bytes_per_s() == pytest.approx(nics * gbit * GBIT / 8)


def test_a_named_fabric_still_overrides_the_recorded_one(catalog: Catalog) -> None:
    # half an 800G port per GPU (50 GB/s each way): a whole one is more than its host link carries
    cluster = catalog.parse_cluster("4xmi355x-platform@ethernet-800g:0.5nic")
    assert cluster.fabric is not None
    assert cluster.fabric.link.name == "ethernet-800g"
    assert cluster.fabric.num_links == 4


def test_the_tpu_v6e_pod_records_googles_data_center_network(catalog: Catalog) -> None:
    pod = catalog.system("tpu-v6e-pod")
    assert pod.scale_out is not None
    assert pod.scale_out.link.name == "ethernet-200g"
    assert pod.scale_out.num_links == V6E_NICS == 128
    assert pod.scale_out.source == "google-tpu-v6e"
    row = derive_totals(system=pod).row("scale_out_per_direction")
    assert row.printed == pytest.approx(25.6e12 / 8)  # 25.6 Tbps per pod
    assert row.derived == pytest.approx(V6E_NICS * 200 * GBIT)
    assert row.within_tolerance


def test_two_v6e_pods_talk_over_the_dcn(catalog: Catalog) -> None:
    cluster = catalog.resolve_cluster("tpu-v6e", num_accelerators=512)
    assert cluster.num_nodes == 2
    assert cluster.fabric is not None
    assert cluster.fabric.link.name == "ethernet-200g"
    assert cluster.fabric.num_links == 128
    # 4 x 200 Gbps per host of 8 chips: 100 Gbps (12.5 GB/s) per chip each way
    assert cluster.scale_out_per_accelerator_bytes_per_s() == pytest.approx(100 * GBIT)


def test_a_v6e_slice_keeps_its_hosts_nics(catalog: Catalog) -> None:
    # 128 chips are 16 hosts: 64 of the pod's 128 NICs
    cluster = catalog.resolve_cluster("tpu-v6e", num_accelerators=128)
    assert cluster.fabric is not None
    assert cluster.fabric.num_links == 64


def test_tpu_v4_pods_still_need_a_network_named(catalog: Catalog) -> None:
    # Google's v4 page prints no data-center network figure: nothing is recorded
    assert catalog.system("tpu-v4-pod").scale_out is None
    with pytest.raises(InvalidPlanError, match="need a scale-out fabric"):
        catalog.resolve_cluster("tpu-v4", num_accelerators=8192)


@pytest.mark.parametrize(
    ("hardware", "gpus", "expected"),
    [
        # probe-training-5 V102: MaxText Llama 3.1 405B on two v6e-256 slices
        (
            "TPU trillium (v6e-256), --device_type=v6e-256 --num_slices=2",
            "512 (2 x v6e-256)",
            ("tpu-v6e-pod", 2, "ethernet-200g", 128),
        ),
        # probe-training-5 V121/V122: DeepSeek-V3 on 8 nodes of MI355X
        (
            "AMD MI355X (288 GB HBM/device)",
            "64 (8 nodes x 8 AMD MI355X)",
            ("mi355x-platform", 8, "pollara-400", 8),
        ),
        # probe-training-4 W04: Primus-pipeline's Qwen3-235B on four MI355 nodes
        (
            "MI355 ('Cluster with MI355, 4 nodes')",
            "32 (source: '4 nodes')",
            ("mi355x-platform", 4, "pollara-400", 8),
        ),
    ],
)
def test_published_rows_on_several_nodes_resolve(
    catalog: Catalog, hardware: str, gpus: str, expected: tuple[str, int, str, int]
) -> None:
    row = _row(hardware, gpus)
    num_gpus, _ = row_gpus(catalog, row)
    cluster, _ = resolve_row_cluster(catalog, row, num_gpus)
    assert cluster.fabric is not None
    assert (cluster.system.name, cluster.num_nodes, cluster.fabric.link.name, cluster.fabric.num_links) == (
        expected
    )
