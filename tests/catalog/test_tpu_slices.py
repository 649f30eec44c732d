"""TPU pods and slices, and PCIe cards beyond one server (issue 28, point 9)."""

from __future__ import annotations

import pytest

from lightspeed.catalog import Catalog, load_catalog
from lightspeed.catalog.cards import pcie_servers
from lightspeed.catalog.torus import slice_dimensions, slice_name
from lightspeed.errors import InvalidPlanError


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog()


# Google's slice shapes (Cloud TPU v5e / v5p system-architecture pages, "configurations" tables).
@pytest.mark.parametrize(
    ("chips", "pod", "shape"),
    [
        (4, (16, 16), (2, 2)),
        (8, (16, 16), (2, 4)),
        (16, (16, 16), (4, 4)),
        (32, (16, 16), (4, 8)),
        (64, (16, 16), (8, 8)),
        (128, (16, 16), (8, 16)),
        (256, (16, 16), (16, 16)),
        (4, (16, 16, 24), (1, 2, 2)),
        (8, (16, 16, 24), (2, 2, 2)),
        (32, (16, 16, 24), (2, 4, 4)),
        (64, (16, 16, 24), (4, 4, 4)),
        (128, (16, 16, 24), (4, 4, 8)),
        (256, (16, 16, 24), (4, 8, 8)),
        (512, (16, 16, 24), (8, 8, 8)),
        (6144, (16, 16, 24), (16, 16, 24)),
    ],
)
def test_slices_take_googles_shapes(chips: int, pod: tuple[int, ...], shape: tuple[int, ...]) -> None:
    assert slice_dimensions(chips, pod) == shape


def test_wraparound_follows_each_generation(catalog: Catalog) -> None:
    # v5e: only a full 16-chip axis wraps (an 8x16 wraps on its long axis); v5p: whole 4x4x4 cubes only.
    v5e = catalog.resolve_cluster("tpu-v5e", num_accelerators=128).system
    assert (v5e.torus_dimensions, v5e.torus_wraparound) == ((8, 16), (False, True))
    small = catalog.resolve_cluster("tpu-v5p", num_accelerators=32).system
    assert (small.torus_dimensions, small.torus_wraparound) == ((2, 4, 4), (False, False, False))
    cubes = catalog.resolve_cluster("tpu-v5p", num_accelerators=128).system
    assert (cubes.torus_dimensions, cubes.torus_wraparound) == ((4, 4, 8), (True, True, True))


@pytest.mark.parametrize(
    ("system", "printed_bytes_per_s"),
    [("tpu-v5e-pod", 51.2e12), ("tpu-v6e-pod", 102.4e12), ("tpu-v4-pod", 1.1e15)],
)
def test_googles_all_reduce_bandwidth_per_pod(
    catalog: Catalog, system: str, printed_bytes_per_s: float
) -> None:
    # Google prints "all-reduce bandwidth per pod": chips x one-way ICI per chip (v5e 256 x 200 GB/s).
    # v4's per-port figure comes from the scaling book (45 GB/s); the printed pod total checks it.
    pod = catalog.system(system)
    assert pod.scale_up is not None
    derived = pod.num_accelerators * pod.scale_up.per_direction_bytes_per_s
    assert derived == pytest.approx(printed_bytes_per_s, rel=0.02)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("v5e-8", ("tpu-v5e-pod", 8)),
        ("v5litepod-256", ("tpu-v5e-pod", 256)),
        ("TPU v6e-256", ("tpu-v6e-pod", 256)),
        ("trillium-64", ("tpu-v6e-pod", 64)),
        ("v5p-128", ("tpu-v5p-pod", 64)),  # v5p counts TensorCores, two per chip
        ("v4-8", ("tpu-v4-pod", 4)),
        ("h100-sxm", None),
    ],
)
def test_slice_names(text: str, expected: tuple[str, int] | None) -> None:
    assert slice_name(text) == expected


def test_an_odd_core_count_is_refused() -> None:
    with pytest.raises(InvalidPlanError, match="v5p chip has 2"):
        slice_name("v5p-127")


@pytest.mark.parametrize(
    ("system", "gpus", "expected"),
    [
        ("tpu-v5e", 8, ("tpu-v5e-pod", 1, 8, (2, 4))),
        ("v5e-8", None, ("tpu-v5e-pod", 1, 8, (2, 4))),
        ("tpu-v5e-pod", 64, ("tpu-v5e-pod", 1, 64, (8, 8))),
        ("tpu-v5e", 512, ("tpu-v5e-pod", 2, 256, (16, 16))),  # two pods over their NICs
        ("tpu-v5p", 1024, ("tpu-v5p-pod", 1, 1024, (8, 8, 16))),
        ("v5p-128", None, ("tpu-v5p-pod", 1, 64, (4, 4, 4))),
        ("tpu-v5p", 8192, ("tpu-v5p-pod", 2, 4096, (16, 16, 16))),  # above the largest slice: DCN
        ("trillium", 256, ("tpu-v6e-pod", 1, 256, (16, 16))),
    ],
)
def test_a_tpu_request_takes_a_slice(
    catalog: Catalog, system: str, gpus: int | None, expected: tuple[str, int, int, tuple[int, ...]]
) -> None:
    cluster = catalog.resolve_cluster(system, num_accelerators=gpus)
    used = cluster.system
    assert (used.name, cluster.num_nodes, used.num_accelerators, used.torus_dimensions) == expected
    assert used.scale_up_domain_size == used.num_accelerators  # the whole slice is one ICI domain
    assert "torus" in cluster.name


def test_pods_without_a_recorded_network_need_one_named(catalog: Catalog) -> None:
    # TPU v4's pages print no data-center network (v6e's: 4 x 200 Gb/s a host, now recorded)
    with pytest.raises(InvalidPlanError, match="need a scale-out fabric"):
        catalog.resolve_cluster("tpu-v4", num_accelerators=8192)
    named = catalog.resolve_cluster("2xtpu-v4-pod@ethernet-100g:0.5nic")
    assert named.num_accelerators == 8192
    assert named.fabric is not None
    assert named.fabric.num_links == 2048


def test_a_slice_name_and_another_count_disagree(catalog: Catalog) -> None:
    with pytest.raises(InvalidPlanError, match="v5p-128 is 64 chips, not the 32"):
        catalog.resolve_cluster("v5p-128", num_accelerators=32)


@pytest.mark.parametrize(
    ("card", "gpus", "expected"),
    [
        ("l40s", 16, (2, 8, "pcie-4-x16", 4)),  # two 2-8-5 servers, four 400G NICs each
        ("l4", 12, (2, 6, "pcie-4-x16", 3)),
        ("h100-nvl", 9, (3, 3, "pcie-5-x16", 2)),  # no even split by 2: three servers of three
        ("a10g", 32, (4, 8, "pcie-4-x16", 4)),
    ],
)
def test_pcie_cards_beyond_one_server(
    catalog: Catalog, card: str, gpus: int, expected: tuple[int, int, str, int]
) -> None:
    cluster = catalog.resolve_cluster(card, num_accelerators=gpus)
    server = cluster.system
    assert server.scale_up is not None
    assert server.scale_out is not None
    got = (cluster.num_nodes, server.num_accelerators, server.scale_up.link.name, server.scale_out.num_links)
    assert got == expected
    assert server.scale_out.link.name == "ethernet-400g"
    assert cluster.num_accelerators == gpus
    assert "assumed NICs" in cluster.name
    # each 400G NIC serves two cards: 25 GB/s one way per card
    assert cluster.scale_out_per_accelerator_bytes_per_s() == pytest.approx(
        server.scale_out.num_links * 50e9 / server.num_accelerators
    )


def test_up_to_eight_cards_share_one_server(catalog: Catalog) -> None:
    cluster = catalog.resolve_cluster("l40s", num_accelerators=4)
    assert (cluster.num_nodes, cluster.system.num_accelerators, cluster.system.scale_out) == (1, 4, None)
    server, count = pcie_servers(catalog.accelerator("l40s"), 8, catalog.link("ethernet-400g"))
    assert (server.num_accelerators, count, server.scale_out) == (8, 1, None)


def test_a_part_sold_in_catalog_nodes_names_the_node(catalog: Catalog) -> None:
    with pytest.raises(InvalidPlanError, match=r"name a system \(e.g. dgx-h100\)"):
        catalog.resolve_cluster("h100-sxm", num_accelerators=16)


@pytest.mark.parametrize(
    "args",
    [
        ["plan", "infer", "--model", "llama-3-8b", "--system", "tpu-v5e", "--gpus", "8", "--tp", "2"],
        ["plan", "infer", "--model", "llama-3-8b", "--system", "l40s", "--gpus", "16"],
        [
            "plan",
            "train",
            "--model",
            "llama-3-8b",
            "--system",
            "v5p-128",
            "--global-batch",
            "64",
            "--tp",
            "2",
        ],
    ],
)
def test_the_cli_plans_on_them(run_cli, args: list[str]) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(*args, "--json")
    assert result.code == 0, result.err
    assert '"gpus"' in result.out or '"num_gpus"' in result.out or result.out.strip().startswith("{")


def test_hw_show_resolves_a_slice_name(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("hw", "show", "v5p-128")
    assert result.code == 0, result.err
    assert "64 x tpu-v5p" in result.out
    assert "4x4x4" in result.out
