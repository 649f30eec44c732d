"""Intel Gaudi: the HLS-2 and HLS-3 boxes from Intel's network page, and plans on an assumed family."""

from __future__ import annotations

import pytest

from lightspeed.catalog import Catalog, load_catalog
from lightspeed.errors import InvalidPlanError
from lightspeed.sol.infer.plan import InferencePlan, resolve_precisions


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog()


@pytest.mark.parametrize(
    ("system", "scale_up_bytes_per_s", "box_out_bytes_per_s", "gaudi_out_bytes_per_s"),
    [
        # Intel: 21 scale-up ports x 25 GB/s = 525 GB/s one way per Gaudi 3; 3 x 8 x 200 Gbps =
        # 600 GB/s out of the box, 75 GB/s per Gaudi 3
        ("hls-gaudi3", 525e9, 600e9, 75e9),
        # Gaudi 2's network is Gaudi 3's at 100 Gbps: 21 x 12.5 = 262.5 GB/s; 3 x 8 x 12.5 = 300 GB/s
        ("hls-gaudi2", 262.5e9, 300e9, 37.5e9),
    ],
)
def test_an_hls_box_is_intels_wiring(
    catalog: Catalog,
    system: str,
    scale_up_bytes_per_s: float,
    box_out_bytes_per_s: float,
    gaudi_out_bytes_per_s: float,
) -> None:
    box = catalog.system(system)
    assert box.scale_up is not None
    assert box.scale_up.per_direction_bytes_per_s == pytest.approx(scale_up_bytes_per_s)
    assert box.scale_out is not None
    assert box.scale_out.per_direction_bytes_per_s == pytest.approx(box_out_bytes_per_s)
    cluster = catalog.resolve_cluster(system, num_accelerators=32)
    assert (cluster.num_nodes, cluster.scale_out_per_accelerator_bytes_per_s()) == (
        4,
        pytest.approx(gaudi_out_bytes_per_s),
    )


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


def test_gaudi2_fp8_is_twice_its_bf16_and_gaudi3s_is_not(catalog: Catalog) -> None:
    # Intel's FP8 inference guide (docs.habana.ai, Run Inference Using FP8): "FP8 compute is twice
    # as fast as BF16 compute" -> 2 x 432 = 864 TFLOP/s on Gaudi 2; Gaudi 3's Hot Chips table
    # prints 1,835 TFLOPS for both, so the sentence is not applied there.
    gaudi2, gaudi3 = catalog.accelerator("gaudi2"), catalog.accelerator("gaudi3")
    assert gaudi2.compute["fp8"].dense_per_s == 2 * gaudi2.compute["bf16"].dense_per_s == 864e12
    assert gaudi3.compute["fp8"].dense_per_s == gaudi3.compute["bf16"].dense_per_s == 1835e12


def test_an_fp8_plan_on_gaudi2_runs_its_gemms_and_kv_cache_in_fp8(catalog: Catalog) -> None:

    formats = resolve_precisions(InferencePlan(precision="fp8"), catalog.accelerator("gaudi2"))
    # before Gaudi 2 had an FP8 row, FP8 weights were computed in bf16 with a bf16 KV cache
    assert (formats.compute, formats.kv_cache) == ("fp8", "fp8")
