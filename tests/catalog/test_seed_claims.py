"""The seed's hardware claims (shared/SEED.md) and REFERENCE.md section 1, checked against the catalog.

Golden numbers are the ones the seed and the vendor documents print, written
here by hand; the catalog must reproduce them (or show where the seed is off).
"""

from __future__ import annotations

import pytest

from lightspeed.catalog import Catalog, compare_hardware, derive_totals

TB = 1e12
GB = 1e9
TFLOP = 1e12
PFLOP = 1e15


def test_claim_1_h100_pcie_vs_h800_pcie_only_nvlink_and_fp64_differ(catalog: Catalog) -> None:
    comparison = compare_hardware(catalog=catalog, names=["h100-pcie", "h800-pcie"])
    differing = {row.field for row in comparison.rows if row.differs}
    assert differing == {
        "fp64",
        "fp64_tensor",
        "scale_up_links",
        "scale_up_per_direction",
        "scale_up_bidirectional",
    }
    # The seed's table, printed values (tensor rows with sparsity), equal on both.
    seed_equal = {
        "memory_capacity": 80 * 2**30,  # the nominal "80 GB" of HBM, read as 80 GiB on both
        "memory_bandwidth": 2 * TB,
        "fp32": 51 * TFLOP,
        "tf32": 756 * TFLOP,
        "bf16": 1513 * TFLOP,
        "fp16": 1513 * TFLOP,
        "fp8": 3026 * TFLOP,
        "int8": 3026 * TFLOP,
        "tdp": 350.0,
    }
    for field, printed in seed_equal.items():
        row = comparison.row(field)
        assert row.values == (printed, printed), field
        # nominal memory compares too: both are read in GiB, 80 GiB / 80 GiB = 1
        assert row.ratios[1] == 1.0, field
    for field in ("tf32", "bf16", "fp16", "fp8", "int8"):
        row = comparison.row(field)
        assert row.sparse == (True, True), field
        assert row.dense_values[0] == row.values[0] / 2, field
    assert comparison.labels["memory_type"] == ("HBM2e", "HBM2e")


def test_claim_1_nvlink_600_to_400_and_fp64_cuts(catalog: Catalog) -> None:
    comparison = compare_hardware(catalog=catalog, names=["h100-pcie", "h800-pcie"])
    nvlink = comparison.row("scale_up_bidirectional")
    assert nvlink.values == (600 * GB, 400 * GB)
    assert nvlink.ratios[1] - 1 == pytest.approx(-1 / 3)  # the seed's -33%
    fp64 = comparison.row("fp64")
    assert fp64.values == (26 * TFLOP, 0.8 * TFLOP)
    assert round(1 / fp64.ratios[1]) == 32  # 26 / 0.8 = 32.5, the seed's 1/32
    fp64_tensor = comparison.row("fp64_tensor")
    assert fp64_tensor.values == (51 * TFLOP, 0.8 * TFLOP)
    assert round(1 / fp64_tensor.ratios[1]) == 64  # 51 / 0.8 = 63.75, the seed's 1/64


def test_claim_1_h100_pcie_tdp_range_is_recorded(catalog: Catalog) -> None:
    # REFERENCE.md: the seed's table is right except H100 PCIe TDP is really 300-350 W.
    h100_pcie = catalog.accelerator("h100-pcie")
    assert (h100_pcie.tdp_min_w, h100_pcie.tdp_w) == (300.0, 350.0)
    assert any(conflict.field == "power.tdp" for conflict in h100_pcie.conflicts)


def test_claim_1_sxm_nvlink_900_to_400(catalog: Catalog) -> None:
    comparison = compare_hardware(catalog=catalog, names=["h100-sxm", "h800-sxm"])
    assert comparison.row("scale_up_bidirectional").values == (900 * GB, 400 * GB)
    assert comparison.row("scale_up_bidirectional").ratios[1] < 0.5  # "more than halved"
    assert comparison.row("bf16").ratios[1] == 1.0


def test_claim_5_gb200_nvl72_rack_totals(catalog: Catalog) -> None:
    rack = catalog.system("gb200-nvl72")
    assert (rack.num_accelerators, rack.num_cpus, rack.scale_up_domain_size) == (72, 36, 72)
    totals = derive_totals(system=rack)
    expected = {
        "fp4_sparse": 1440 * PFLOP,
        "fp4_dense": 720 * PFLOP,
        "fp8_sparse": 720 * PFLOP,
        "memory_bandwidth": 576 * TB,
        "scale_up_bidirectional": 130 * TB,
        "memory_capacity": 13.4 * TB,
    }
    for key, printed in expected.items():
        row = totals.row(key)
        assert row.printed == printed, key
        assert row.within_tolerance, key
    # NVIDIA prints BF16 only with sparsity (360 PF): the dense 180 PF is derived, never "printed"
    assert totals.row("bf16_dense").derived == pytest.approx(180 * PFLOP)
    assert totals.row("bf16_dense").printed is None
    # ~30 TB "fast memory" = HBM3e + Grace LPDDR5X (36 x 480 GB).
    assert totals.row("fast_memory_capacity").derived == pytest.approx(13.392 * TB + 36 * 480 * GB)
    # 120-132 kW for the rack; GPUs and CPUs alone draw 72 x 1.2 kW + 36 x 0.25 kW.
    assert (rack.power_min_w, rack.power_max_w) == (120e3, 132e3)
    assert totals.row("power").derived == pytest.approx(72 * 1200 + 36 * 250)
    assert totals.row("power").within_tolerance is None


def test_claim_5_hbm_13_5_tb_is_the_older_table(catalog: Catalog) -> None:
    conflicts = {conflict.field: conflict for conflict in catalog.system("gb200-nvl72").conflicts}
    memory = conflicts["printed_totals.memory_capacity"]
    assert set(memory.values) == {"13.4 TB", "13.5 TB"}
    assert memory.chosen == "13.4 TB"


def test_claim_5_gb300_nvl72_memory(catalog: Catalog) -> None:
    # Seed: GB300 NVL72 288 GB per GPU, ~20.7 TB HBM3e nominal (72 x 288 GB); the catalog reads the
    # nominal "288 GB" of HBM as 288 GiB: 72 x 288 GiB = 20,736 GiB (22.3 TB).
    totals = derive_totals(system=catalog.system("gb300-nvl72"))
    assert totals.row("memory_capacity_nominal").derived == pytest.approx(72 * 288 * 2**30)
    assert totals.row("memory_capacity").within_tolerance  # 72 x 279 GB vs the printed 20 TB


def test_claim_7_superchip_links_and_memories(catalog: Catalog) -> None:
    # PCIe Gen5 x16 ~64 GB/s per direction (63 after 128b/130b), Gen6 ~128 (121 after FLIT).
    assert catalog.link("pcie-5-x16").per_direction_bytes_per_s == 63 * GB
    assert catalog.link("pcie-6-x16").per_direction_bytes_per_s == 121 * GB
    assert catalog.link("nvlink-c2c").bidirectional_bytes_per_s == 900 * GB
    assert catalog.accelerator("h100-sxm").memory_bandwidth_bytes_per_s == 3.35 * TB
    assert catalog.accelerator("b200").memory_bandwidth_bytes_per_s == 8 * TB
    grace = catalog.cpu("grace")
    assert grace.memory_capacity_bytes == 480 * GB
    assert grace.memory_bandwidth_bytes_per_s == 512 * GB  # the seed's "~500 GB/s"
    # LPDDR through C2C: an order of magnitude less bandwidth than HBM.
    assert catalog.accelerator("gb200").memory_bandwidth_bytes_per_s / grace.memory_bandwidth_bytes_per_s > 10


def test_claim_8_b200_memory_and_cache(catalog: Catalog) -> None:
    b200 = catalog.accelerator("b200")
    h100 = catalog.accelerator("h100-sxm")
    assert round(b200.memory_bandwidth_bytes_per_s / h100.memory_bandwidth_bytes_per_s, 1) == 2.4
    # nominal 192 GB of HBM = 192 GiB (binary); the listed 180 GB is decimal
    assert (b200.memory_nominal_bytes, b200.memory_usable_bytes) == (192 * 2**30, 180 * GB)
    assert (b200.l2_cache_bytes, h100.l2_cache_bytes) == (126e6, 50e6)


def test_claim_9_precision_doubling(catalog: Catalog) -> None:
    # Hopper FP8 doubles FP16; Blackwell FP4 doubles FP8 again (dense).
    h100 = catalog.accelerator("h100-sxm")
    assert h100.dense_flop_per_s("fp8") == 2 * h100.dense_flop_per_s("fp16")
    b200 = catalog.accelerator("b200")
    assert b200.dense_flop_per_s("fp4") == 2 * b200.dense_flop_per_s("fp8")


def test_claim_11_nvl72_fabric(catalog: Catalog) -> None:
    gpu = catalog.accelerator("gb200")
    assert gpu.scale_up is not None
    assert gpu.scale_up.num_links == 18
    assert gpu.scale_up.link.bidirectional_bytes_per_s == 100 * GB
    assert gpu.scale_up.bidirectional_bytes_per_s == 1.8 * TB
    # 130 TB/s is the aggregate of 72 GPUs x 1.8 TB/s, not a bisection bandwidth.
    total = derive_totals(system=catalog.system("gb200-nvl72")).row("scale_up_bidirectional")
    assert total.derived == pytest.approx(72 * 1.8 * TB)
    assert catalog.system("gb200-nvl72").in_network_reduction


def test_claim_12_nvl72_vs_nine_h100_nodes_over_infiniband(catalog: Catalog) -> None:
    nvl72 = catalog.resolve_cluster("gb200-nvl72")
    h100s = catalog.resolve_cluster("9xdgx-h100@ib-ndr")
    assert nvl72.num_accelerators == h100s.num_accelerators == 72
    per_gpu_nvlink = nvl72.system.accelerator.scale_up
    assert per_gpu_nvlink is not None
    assert per_gpu_nvlink.bidirectional_bytes_per_s == 1.8 * TB
    assert h100s.scale_out_per_accelerator_bytes_per_s() == 50 * GB  # within the seed's 20-80 GB/s
    nvlink_latency = per_gpu_nvlink.link.latency_s
    ib_latency = catalog.link("ib-ndr").latency_s
    assert 1.0 <= round(nvlink_latency * 1e6, 9) <= 2.0  # the seed's 1-2 us
    assert 5.0 <= round(ib_latency * 1e6, 9) <= 10.0  # the seed's 5-10 us


def test_claim_14_gb300_scale_out(catalog: Catalog) -> None:
    rack = catalog.system("gb300-nvl72")
    assert rack.scale_out is not None
    assert rack.scale_out.num_links == 72
    per_rack_bits = rack.scale_out.per_direction_bytes_per_s * 8
    assert per_rack_bits == pytest.approx(57.6e12)  # 72 x 800 Gb/s
    per_tray_bits = 4 * rack.scale_out.link.per_direction_bytes_per_s * 8
    assert per_tray_bits == pytest.approx(3.2e12)  # 4 x ConnectX-8 per compute tray


def test_reference_dgx_h100_32_pf_fp8_is_sparse(catalog: Catalog) -> None:
    totals = derive_totals(system=catalog.system("dgx-h100"))
    fp8 = totals.row("fp8_sparse")
    assert fp8.printed == 32 * PFLOP
    assert fp8.within_tolerance  # 8 x 3,958 TFLOPS = 31.7 PF
    assert totals.row("fp8_dense").derived == pytest.approx(15.83 * PFLOP, rel=1e-3)
    assert totals.row("bf16_dense").derived == pytest.approx(7.916 * PFLOP, rel=1e-3)
    system = catalog.system("dgx-h100")
    assert system.power_max_w == 10.2e3
    assert system.scale_out is not None
    assert (system.scale_out.num_links, system.scale_out.link.name) == (8, "ib-ndr")
    assert totals.row("memory_capacity").derived == 640 * GB
