"""Collectives on a TPU slice's torus against hand calculations and the JAX scaling book.

The scaling book ("How to Scale Your Model", sharding chapter) gives, for an
array of ``V`` bytes: an all-gather over one torus axis with its wraparound
takes ``V / W_bidi`` (``W_bidi`` = both directions of one link), over ``n`` axes
``V / (n W_bidi)``, without the wraparound about twice that, and an all-to-all
a quarter of the all-gather on a wrapped ring. The switch formula with the
per-chip bandwidth of all ports is the same number only for a group spanning
every axis of a full torus.
"""

from __future__ import annotations

import pytest

from lightspeed.catalog import Catalog
from lightspeed.sol.core.collectives import (
    Fabric,
    FabricLevel,
    all_gather_s,
    all_reduce_s,
    all_to_all_s,
    fabric_of,
    send_recv_s,
    torus_bandwidth_bytes_per_s,
)

GB = 1e9


def _torus(dims: tuple[int, ...], wraps: tuple[bool, ...], port_bytes_per_s: float) -> Fabric:
    size = 1
    for axis in dims:
        size *= axis
    level = FabricLevel("ici", size, port_bytes_per_s * 2 * len(dims), 0.0, False, dims, wraps)
    return Fabric(scale_up=level, scale_out=None, bandwidth_efficiency=1.0)


def test_a_whole_v5e_pod_all_reduces_at_googles_printed_rate(catalog: Catalog) -> None:
    # Google prints 51.2 TB/s of all-reduce bandwidth per 256-chip pod: 200 GB/s one way per chip,
    # its 400 GB/s bidirectional ICI over 4 ports of 50 GB/s each way.
    fabric = fabric_of(catalog.cluster("tpu-v5e-pod", num_accelerators=256), bandwidth_efficiency=1.0)
    assert fabric.scale_up.torus_dimensions == (16, 16)
    assert fabric.scale_up.torus_wraparound == (True, True)
    size = 1 * GB
    expected = 2 * 255 / 256 * size / (200 * GB)  # 9.96 ms
    latency = 16 * fabric.scale_up.latency_s  # min(2 x 255, 2 log2 256 = 16) steps
    assert float(all_reduce_s(fabric, size, 256)) == pytest.approx(expected + latency, rel=1e-9)


def test_a_group_on_one_axis_gets_that_axis_only(catalog: Catalog) -> None:
    # 16 chips along one wrapped axis use 2 of the 4 ports: 100 GB/s one way (W_bidi of one link).
    fabric = fabric_of(catalog.cluster("tpu-v5e-pod", num_accelerators=256), bandwidth_efficiency=1.0)
    level = fabric.scale_up
    assert float(torus_bandwidth_bytes_per_s(level, 16, 1)) == pytest.approx(100 * GB)
    assert float(torus_bandwidth_bytes_per_s(level, 16, 16)) == pytest.approx(100 * GB)  # the other axis
    assert float(torus_bandwidth_bytes_per_s(level, 8, 1)) == pytest.approx(50 * GB)  # half an axis: a line
    size = 1 * GB
    expected = 2 * 15 / 16 * size / (100 * GB)
    latency = 8 * level.latency_s
    assert float(all_reduce_s(fabric, size, 16, 1)) == pytest.approx(expected + latency, rel=1e-9)


def test_the_scaling_books_unwrapped_all_gather() -> None:
    # Scaling book, sharding chapter, question 1: AllGather of 4 shards of 8.4e6 bytes over a v5e axis
    # of 4 (no wraparound below 16) at 4.5e10 bytes/s one way per link: 3 x 8.4e6 / 4.5e10 = 560 us.
    fabric = _torus((4, 4), (False, False), 4.5e10)
    assert float(all_gather_s(fabric, 4 * 8.4e6, 4, 1)) == pytest.approx(3 * 8.4e6 / 4.5e10, rel=1e-9)
    # with the wraparound the same gather is V / W_bidi x (X-1)/X: half of that
    wrapped = _torus((4, 4), (True, True), 4.5e10)
    assert float(all_gather_s(wrapped, 4 * 8.4e6, 4, 1)) == pytest.approx(3 * 8.4e6 / 9e10, rel=1e-9)


def test_all_to_all_on_a_ring_is_a_quarter_of_the_all_gather() -> None:
    # A wrapped ring of X = 16, each chip holding S: all-gather of V = 16 S takes ~V / W_bidi and the
    # all-to-all a quarter of it: 16 S / (4 x 2 B_port) = 2 S / B_port.
    port = 50 * GB
    fabric = _torus((16, 16), (True, True), port)
    size = 1 * GB
    assert float(all_to_all_s(fabric, size, 16, 1)) == pytest.approx(2 * size / port, rel=1e-9)
    gather = float(all_gather_s(fabric, 16 * size, 16, 1))
    assert float(all_to_all_s(fabric, size, 16, 1)) == pytest.approx(gather / 4 * 16 / 15, rel=1e-9)


def test_a_small_slice_has_no_wraparound(catalog: Catalog) -> None:
    # v5e-8 is a 2x4 mesh: both axes spanned, each a line: 2 ports x 50 GB/s = 100 GB/s one way.
    cluster = catalog.resolve_cluster("tpu-v5e", num_accelerators=8)
    fabric = fabric_of(cluster, bandwidth_efficiency=1.0)
    assert (fabric.scale_up.torus_dimensions, fabric.scale_up.torus_wraparound) == ((2, 4), (False, False))
    size = 1 * GB
    expected = 7 / 8 * size / (100 * GB)
    latency = 6 * fabric.scale_up.latency_s
    assert float(all_gather_s(fabric, size, 8)) == pytest.approx(expected + latency, rel=1e-9)
    # a neighbour transfer uses two ports (half one way, half the other)
    assert float(send_recv_s(fabric, size, False)) == pytest.approx(
        size / (100 * GB) + fabric.scale_up.latency_s, rel=1e-9
    )


def test_switched_domains_are_unchanged(catalog: Catalog) -> None:
    fabric = fabric_of(catalog.cluster("dgx-a100", num_nodes=1), bandwidth_efficiency=1.0)
    assert fabric.scale_up.torus_dimensions == ()
    assert float(torus_bandwidth_bytes_per_s(fabric.scale_up, 2, 4)) == 300 * GB
    size = 1 * GB
    assert float(all_to_all_s(fabric, size, 8)) == pytest.approx(
        7 / 8 * size / (300 * GB) + 4 * fabric.scale_up.latency_s, rel=1e-9
    )
