"""Collective costs against hand calculations with nccl-tests' conventions."""

from __future__ import annotations

import pytest

from lightspeed.catalog import Catalog
from lightspeed.sol.core.collectives import (
    all_gather_s,
    all_reduce_s,
    all_to_all_s,
    fabric_of,
    local_size,
    send_recv_s,
)
from lightspeed.sol.core.efficiency import default_efficiency

GB = 1e9


def test_local_size_of_strided_groups() -> None:
    assert float(local_size(8, 1, 8)) == 8  # TP8 in an 8-GPU node
    assert float(local_size(64, 8, 8)) == 1  # DP group behind TP8: one rank per node
    assert float(local_size(72, 8, 72)) == 9  # DP 72 behind TP8 on 8 NVL72 racks
    # 512 ranks on 72-GPU racks: 7 racks and 8 GPUs of an eighth, where the group has one member
    # (round 15: a group that does not tile the domain is priced as its thinnest copy)
    assert float(local_size(64, 8, 72)) == 1
    assert float(local_size(4, 2, 8)) == 4


def test_ring_all_reduce_inside_a_node_without_nvls(catalog: Catalog) -> None:
    # DGX A100 (no NVLS): 8 GPUs, NVLink 3 = 300 GB/s per direction per GPU.
    fabric = fabric_of(catalog.cluster("dgx-a100", num_nodes=1), bandwidth_efficiency=1.0)
    size = 1 * GB
    expected = 2 * 7 / 8 * size / (300 * GB)  # 5.83 ms + latency
    latency = 6 * fabric.scale_up.latency_s  # min(2(g-1)=14, 2*log2(8)=6) steps
    assert float(all_reduce_s(fabric, size, 8)) == pytest.approx(expected + latency, rel=1e-9)


def test_nvls_all_reduce_moves_each_byte_once(catalog: Catalog) -> None:
    fabric = fabric_of(catalog.cluster("dgx-h100", num_nodes=1), bandwidth_efficiency=1.0)
    assert fabric.scale_up.in_network_reduction
    size = 1 * GB
    expected = size / (450 * GB) + 6 * fabric.scale_up.latency_s
    assert float(all_reduce_s(fabric, size, 8)) == pytest.approx(expected, rel=1e-9)


def test_nvls_all_reduce_reaches_the_measured_bandwidth(catalog: Catalog) -> None:
    # NCCL's maintainer (NVIDIA/nccl-tests issue #212): NVLS all-reduce on 8 H100 peaks at ~480 GB/s
    # busbw, algbw ~275 GB/s; one crossing of the 450 GB/s link at 80% would be 360 GB/s.
    hopper = default_efficiency("nvidia-hopper")
    fabric = fabric_of(
        catalog.cluster("dgx-h100", num_nodes=1),
        hopper.collective_bandwidth_efficiency,
        reduction_efficiency=hopper.nvls_all_reduce_efficiency or 0.0,
    )
    size = 8 * GB  # large enough that the latency is under 0.1%
    algbw = size / float(all_reduce_s(fabric, size, 8))
    assert algbw == pytest.approx(275 * GB, rel=0.01)
    assert algbw * 2 * 7 / 8 == pytest.approx(480 * GB, rel=0.01)  # the busbw nccl-tests prints
    # On 2 GPUs a ring moves each byte once too, at the ring's 80%: 360 GB/s, faster than in-switch.
    assert size / float(all_reduce_s(fabric, size, 2)) == pytest.approx(360 * GB, rel=0.01)


def test_cross_node_data_parallel_uses_one_nic_per_rank(catalog: Catalog) -> None:
    # 4 nodes of DGX H100 (8 x 400G NDR, 50 GB/s per GPU); a DP group of 4 ranks 8 apart.
    fabric = fabric_of(catalog.cluster("dgx-h100", num_nodes=4), bandwidth_efficiency=1.0)
    size = 1 * GB
    inter = 2 * 3 / 4 * size / (50 * GB)
    assert float(all_reduce_s(fabric, size, 4, 8)) == pytest.approx(
        inter + 4 * fabric.scale_out.latency_s,
        rel=1e-9,  # type: ignore[union-attr]
    )


def test_hierarchical_all_gather_spreads_over_the_node_nics(catalog: Catalog) -> None:
    fabric = fabric_of(catalog.cluster("dgx-h100", num_nodes=2), bandwidth_efficiency=1.0)
    size = 16 * GB  # whole output
    intra = 7 / 8 * size / (450 * GB)
    inter = 1 / 2 * size / (8 * 50 * GB)  # 8 NICs per node carry the remote half
    hierarchical = float(all_gather_s(fabric, size, 16, 1))
    flat = float(all_gather_s(fabric, size, 16, 1, True))
    latency = 8 * fabric.scale_out.latency_s  # type: ignore[union-attr]  # min(g-1=15, 2*log2(16)=8) steps
    assert hierarchical == pytest.approx(max(intra, inter) + latency, rel=1e-9)
    assert flat > hierarchical


def test_all_to_all_sends_remote_share_over_the_network(catalog: Catalog) -> None:
    fabric = fabric_of(catalog.cluster("dgx-h100", num_nodes=8), bandwidth_efficiency=1.0)
    size = 1 * GB
    remote = 56 / 64 * size / (50 * GB)
    local = 7 / 64 * size / (450 * GB)
    time = float(all_to_all_s(fabric, size, 64))
    assert time >= max(remote, local)
    assert time == pytest.approx(remote, rel=0.01)
    assert float(all_to_all_s(fabric, size, 64, 1, 0.5)) == pytest.approx(remote / 2, rel=0.02)


def test_send_recv_inside_vs_across(catalog: Catalog) -> None:
    fabric = fabric_of(catalog.cluster("dgx-h100", num_nodes=2), bandwidth_efficiency=1.0)
    size = 0.1 * GB
    assert float(send_recv_s(fabric, size, False)) == pytest.approx(
        size / (450 * GB) + fabric.scale_up.latency_s
    )
    assert float(send_recv_s(fabric, size, True)) > float(send_recv_s(fabric, size, False))


def test_single_rank_groups_cost_nothing(catalog: Catalog) -> None:
    fabric = fabric_of(catalog.cluster("dgx-h100", num_nodes=1), bandwidth_efficiency=0.8)
    assert float(all_reduce_s(fabric, GB, 1)) == 0.0
    assert float(all_gather_s(fabric, GB, 1)) == 0.0
    assert float(all_to_all_s(fabric, GB, 1)) == 0.0


def test_sharp_moves_each_cross_node_byte_once(catalog: Catalog) -> None:
    cluster = catalog.cluster("dgx-h100", num_nodes=4)
    plain = fabric_of(cluster, bandwidth_efficiency=1.0)
    sharp = fabric_of(cluster, bandwidth_efficiency=1.0, scale_out_reduction=True)
    size = 1 * GB
    latency = 4 * plain.scale_out.latency_s  # type: ignore[union-attr]
    assert float(all_reduce_s(plain, size, 4, 8)) == pytest.approx(2 * 3 / 4 * size / (50 * GB) + latency)
    assert float(all_reduce_s(sharp, size, 4, 8)) == pytest.approx(size / (50 * GB) + latency)
    assert float(all_reduce_s(sharp, size, 8, 1)) == float(all_reduce_s(plain, size, 8, 1))  # inside a node
