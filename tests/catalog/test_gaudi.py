"""Intel Gaudi: the HLS-3 box from Intel's network documentation, and plans on an assumed family."""

from __future__ import annotations

import pytest

from lightspeed.catalog import Catalog, load_catalog
from lightspeed.errors import InvalidPlanError


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog()


def test_an_hls3_box_is_intels_wiring(catalog: Catalog) -> None:
    # Intel: 21 scale-up ports x 25 GB/s = 525 GB/s one way per Gaudi 3;
    # 3 x 8 x 200 Gbps = 600 GB/s out of the box.
    box = catalog.system("hls-gaudi3")
    assert box.scale_up is not None
    assert box.scale_up.per_direction_bytes_per_s == pytest.approx(525e9)
    assert box.scale_out is not None
    assert box.scale_out.per_direction_bytes_per_s == pytest.approx(600e9)
    cluster = catalog.resolve_cluster("hls-gaudi3", num_accelerators=32)
    assert (cluster.num_nodes, cluster.scale_out_per_accelerator_bytes_per_s()) == (4, pytest.approx(75e9))


def test_an_hls2_box_is_intels_wiring_at_100_gbps(catalog: Catalog) -> None:
    # Intel: Gaudi 2's network is Gaudi 3's at 100 Gbps: 21 x 12.5 GB/s = 262.5 GB/s one way per
    # Gaudi 2 inside the box; 3 x 100 Gbps = 37.5 GB/s each out of it (3 x 8 x 12.5 = 300 GB/s a box).
    box = catalog.system("hls-gaudi2")
    assert box.scale_up is not None
    assert box.scale_up.per_direction_bytes_per_s == pytest.approx(262.5e9)
    assert box.scale_out is not None
    assert box.scale_out.per_direction_bytes_per_s == pytest.approx(300e9)
    cluster = catalog.resolve_cluster("hls-gaudi2", num_accelerators=16)
    assert (cluster.num_nodes, cluster.scale_out_per_accelerator_bytes_per_s()) == (2, pytest.approx(37.5e9))


def test_oam_parts_are_not_pcie_cards(catalog: Catalog) -> None:
    # An OAM part talks to its peers over its box's own wiring: no PCIe server is made up; where
    # the catalog has the box, the error names it.
    with pytest.raises(InvalidPlanError, match=r"no system in the catalog is built from mi250x \(OAM\)"):
        catalog.resolve_cluster("mi250x", num_accelerators=8)
    with pytest.raises(InvalidPlanError, match=r"name a system \(e.g. hls-gaudi2\)"):
        catalog.resolve_cluster("gaudi2", num_accelerators=8)
    with pytest.raises(InvalidPlanError, match=r"name a system \(e.g. hls-gaudi3\)"):
        catalog.resolve_cluster("gaudi3", num_accelerators=16)


def test_gaudi_plans_run_on_the_assumed_family(run_cli) -> None:  # type: ignore[no-untyped-def]
    args = ["plan", "infer", "--model", "llama-3-8b", "--isl", "1000", "--osl", "1000"]
    one = run_cli(*args, "--system", "gaudi2")
    assert one.code == 0, one.err
    # its figures are assumed (no public measurement of Gaudi kernels), and the plan says so
    assert "efficiency 'intel-gaudi' (assumed, not measured" in " ".join(one.out.split())
    box = run_cli(*args, "--system", "hls-gaudi3", "--tp", "8")
    assert box.code == 0, box.err
    refused = run_cli(*args, "--system", "gaudi2", "--gpus", "8")
    assert refused.code == 2
    assert len(refused.err.strip().splitlines()) == 1
    assert "hls-gaudi2" in refused.err
    assert run_cli(*args, "--system", "hls-gaudi2", "--tp", "8").code == 0
