"""The hardware a published row names: systems, variants, partial racks (issue 13, points 1 and 7)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lightspeed.catalog import Catalog, load_catalog
from lightspeed.catalog.clusters import spread_over_domains
from lightspeed.catalog.variants import derive_variant
from lightspeed.sol.validation.hardware_text import HardwareTextError, resolve_row_cluster
from lightspeed.sol.validation.published import PublishedRow

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "catalog" / "h100-600w.toml"


def _row(hardware: str) -> PublishedRow:
    return PublishedRow(row_id="H", kind="train", line=2, cells={"hardware": hardware})


@pytest.mark.parametrize(
    ("text", "gpus", "expected"),
    [
        ("DGX B200 (8x B200 NVLink5)", 128, ("dgx-b200", 16, 8)),
        ("HGX B200", 8, ("dgx-b200", 1, 8)),
        ("DGX H100 (H100-SXM-80GB, NVLink 900GB/s, NDR IB 400Gb/s per GPU)", 1024, ("dgx-h100", 128, 8)),
        ("A100-SXM4-80GB (Selene, DGX A100, HDR IB)", 32, ("dgx-a100", 4, 8)),
        ("H200 141GB", 1, ("dgx-h200", 1, 8)),
        # Real GB200 jobs use part of each NVLink domain: 128 GPUs are two racks of 64.
        ("DGX GB200 (GB200 NVL72 rack; NVLink domain 72)", 128, ("gb200-nvl72", 2, 64)),
        ("GB200 NVL72", 256, ("gb200-nvl72", 4, 64)),
        ("GB200 NVL72", 48, ("gb200-nvl72", 1, 48)),
        # 2019-2021 papers: DGX-2 (16 V100 on NVSwitch) and the first DGX A100 (40 GB GPUs)
        ("DGX-2H (16 x V100 32GB, 8 x EDR)", 512, ("dgx-2", 32, 16)),
        ("A100 40GB", 96, ("dgx-a100-320gb", 12, 8)),
        ("H20-96G", 16, ("hgx-h20", 2, 8)),
    ],
)
def test_rows_name_systems_the_way_sources_write_them(
    catalog: Catalog, text: str, gpus: int, expected: tuple[str, int, int]
) -> None:
    # expected: (system, nodes or racks, GPUs used in each)
    cluster, notes = resolve_row_cluster(catalog, _row(text), gpus)
    assert (cluster.system.name, cluster.num_nodes, cluster.system.num_accelerators) == expected
    assert notes[0].startswith(f"hardware '{text}'")


def test_a_partial_rack_keeps_its_nics_per_gpu(catalog: Catalog) -> None:
    rack = catalog.system("gb200-nvl72")
    used, domains = spread_over_domains(rack, 128)
    assert (used.num_accelerators, used.scale_up_domain_size, domains) == (64, 64, 2)
    assert used.scale_out is not None
    assert used.scale_out.num_links == 64  # one ConnectX-7 per GPU, as in the full rack
    assert spread_over_domains(rack, 73)[1] == 73  # no even split but one GPU per domain


def test_memory_and_power_in_the_text_make_a_variant(catalog: Catalog) -> None:
    # CINECA Leonardo's A100s carry 64 GB; the cap is a what-if below the 400 W TDP
    cluster, notes = resolve_row_cluster(catalog, _row("A100 SXM4 64GB @300W"), 8)
    accelerator = cluster.system.accelerator
    assert accelerator.name == "a100-sxm-64gb-300w"
    assert accelerator.memory_nominal_bytes == 64 * 2**30
    # (300 / 400)^(1/3): dynamic power ~ f^3 in the DVFS range
    assert accelerator.clock_fraction == pytest.approx((300 / 400) ** (1 / 3))
    assert any("variant a100-sxm-64gb-300w" in note for note in notes)
    # Figures the text repeats from the datasheet make no variant (80 GB, the 700 W TDP, 400Gb/s NICs).
    plain, _ = resolve_row_cluster(catalog, _row("H100-80GB 700W, RoCE 400G"), 8)
    assert plain.system.accelerator.name == "h100-sxm"


def test_grand_teton_h100_is_the_hbm2e_part_at_its_500_w_limit(catalog: Catalog) -> None:
    # torchtitan's benchmark page: 96GB HBM2e at 2.4 TB/sec, the default 500W limit, 700W TDP
    text = "H100 SXM 96GB HBM2e @500W (Meta Grand Teton, 8/host NVLink, 400Gb/s RDMA per GPU)"
    cluster, notes = resolve_row_cluster(catalog, _row(text), 16)
    accelerator = cluster.system.accelerator
    assert (cluster.system.name, cluster.num_nodes) == ("grand-teton-h100", 2)
    assert accelerator.memory_bandwidth_bytes_per_s == pytest.approx(2.4e12)
    assert accelerator.memory_nominal_bytes == 96 * 2**30
    assert accelerator.clock_fraction == pytest.approx((500 / 700) ** (1 / 3))
    # the part's own 500 W repeated is no variant; a lower cap still is one
    assert not any("variant" in note for note in notes)
    capped, _ = resolve_row_cluster(catalog, _row("H100 SXM 96GB HBM2e @400W"), 8)
    assert capped.system.accelerator.clock_fraction == pytest.approx((400 / 700) ** (1 / 3))


def test_the_derived_variant_equals_the_documented_extends_files(catalog: Catalog) -> None:
    from_file = load_catalog([EXAMPLE]).accelerator("h100-sxm-600w")
    derived = derive_variant(catalog.accelerator("h100-sxm"), power_limit_w=600)
    assert (derived.name, derived.clock_fraction) == (from_file.name, from_file.clock_fraction)
    assert derived.memory_device_bytes == from_file.memory_device_bytes
    assert derived.compute == from_file.compute
    # the shipped Grand Teton part is an extends file with memory and a limit: a variant derived
    # from the same two figures matches it but for the bandwidth, which no row text gives
    shipped = catalog.accelerator("h100-sxm-96gb-hbm2e")
    derived = derive_variant(catalog.accelerator("h100-sxm"), memory_gib=96, power_limit_w=500)
    assert derived.memory_nominal_bytes == shipped.memory_nominal_bytes
    assert derived.memory_device_bytes == pytest.approx(shipped.memory_device_bytes, rel=1e-6)
    assert derived.clock_fraction == shipped.clock_fraction
    assert derived.compute == shipped.compute
    assert (derived.memory_bandwidth_bytes_per_s, shipped.memory_bandwidth_bytes_per_s) == (3.35e12, 2.4e12)


def test_unknown_hardware_says_so(catalog: Catalog) -> None:
    with pytest.raises(HardwareTextError, match="names no accelerator in the catalog"):
        resolve_row_cluster(catalog, _row("Quantum Abacus 9000"), 8)


def test_driver_memory_is_what_the_engines_see(catalog: Catalog) -> None:
    # nvidia-smi memory.total: H100 SXM 81,559 MiB, B200 183,359 MiB (catalog [device_memory])
    assert catalog.accelerator("h100-sxm").memory_device_bytes == 81559 * 2**20
    assert catalog.accelerator("b200").memory_device_bytes == 183359 * 2**20
    assert catalog.accelerator("h100-sxm").memory_nominal_bytes == 80 * 2**30  # five 16 GiB HBM3 stacks
    # a slice: what nvidia-smi -lgip reports for its profile (39.50 GiB for 3g.40gb, NVIDIA's MIG guide)
    assert catalog.accelerator("h100-sxm/3g.40gb").memory_device_bytes == 39.5 * 2**30


@pytest.mark.parametrize(
    ("text", "card"),
    [
        ("NVIDIA L4 24GB", "l4"),
        ("A10G (AWS g5)", "a10g"),
        ("H200 NVL", "h200-nvl"),
        # the RTX PRO 6000 Blackwell's two editions differ in memory speed (1,792 / 1,597 GB/s):
        # the edition written picks the record, the name alone the Workstation Edition
        ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "rtx-pro-6000-blackwell"),
        ("RTX PRO 6000", "rtx-pro-6000-blackwell"),
        ("8 x NVIDIA RTX PRO 6000 Blackwell Server Edition GPUs", "rtx-pro-6000-blackwell-server"),
        ("AWS g7e (RTX PRO 6000 Blackwell Server Edition)", "rtx-pro-6000-blackwell-server"),
    ],
)
def test_a_card_no_system_is_built_from_runs_on_its_own(catalog: Catalog, text: str, card: str) -> None:
    # PCIe cards have no 8-GPU system in the catalog: a row on one of them runs on the card alone,
    # and more than a server's eight run on several servers with assumed NICs (issue 28 point 9).
    cluster, _ = resolve_row_cluster(catalog, _row(text), 1)
    assert (cluster.system.system_type, cluster.system.accelerator.name, cluster.num_accelerators) == (
        "single-gpu",
        card,
        1,
    )
    cluster, notes = resolve_row_cluster(catalog, _row(text), 9)
    assert (cluster.num_nodes, cluster.system.num_accelerators) == (3, 3)  # 9 does not split in two
    assert any(note.startswith("assumed:") for note in notes)


@pytest.mark.parametrize(
    ("text", "gpus", "link"),
    [
        ("L40S", 2, "pcie-4-x16"),  # no NVLink: the cards talk over their host link
        ("2x NVIDIA RTX 4090 24GB (PCIe, no NVLink), CUDA 12.1", 2, "pcie-4-x16"),  # MLC's 2023 post
        ("NVIDIA GeForce RTX 5090", 4, "pcie-5-x16"),
        ("NVIDIA L4 24GB", 8, "pcie-4-x16"),
        ("H200 NVL", 4, "nvlink-4"),  # a 4-way NVLink bridge
        ("H200 NVL", 8, "pcie-5-x16"),  # bridges join at most four cards
    ],
)
def test_several_cards_make_a_pcie_server(catalog: Catalog, text: str, gpus: int, link: str) -> None:
    cluster, _ = resolve_row_cluster(catalog, _row(text), gpus)
    system = cluster.system
    assert (system.system_type, system.num_accelerators, system.scale_up_domain_size) == ("node", gpus, gpus)
    assert system.scale_up is not None
    assert system.scale_up.link.name == link
    assert (cluster.num_nodes, system.scale_out) == (1, None)


def test_the_rtx_pro_6000_editions_keep_their_own_memory_speed(catalog: Catalog) -> None:
    # NVIDIA's pages: Workstation Edition 1,792 GB/s and FP32 125 TFLOPS, Server Edition 1,597 GB/s
    # and 120 TFLOPS; both 96 GB GDDR7, tensor rows printed with 2:4 sparsity (BF16 1 PFLOP)
    workstation = catalog.accelerator("rtx-pro-6000-blackwell")
    server = catalog.accelerator("rtx-pro-6000-blackwell-server")
    assert workstation.memory_bandwidth_bytes_per_s == pytest.approx(1792e9)
    assert server.memory_bandwidth_bytes_per_s == pytest.approx(1597e9)
    for card in (workstation, server):
        assert card.compute["bf16"].dense_per_s == pytest.approx(0.5e15)
        assert card.compute["fp8"].dense_per_s == pytest.approx(1.0e15)


def test_geforce_cards_run_tensor_math_at_the_fp32_accumulate_rate(catalog: Catalog) -> None:
    # NVIDIA's Ada and RTX Blackwell whitepapers print GeForce BF16/FP16 tensor rates with FP16
    # accumulate and with FP32 accumulate, the latter half: 4090 BF16 165.2 dense (not 330.3),
    # 5090 BF16 209.5; frameworks accumulate in FP32
    assert catalog.accelerator("rtx-4090").compute["bf16"].dense_per_s == pytest.approx(165.2e12)
    assert catalog.accelerator("rtx-5090").compute["bf16"].dense_per_s == pytest.approx(209.5e12)
    assert catalog.accelerator("rtx-4090").memory_bandwidth_bytes_per_s == pytest.approx(1008e9)
