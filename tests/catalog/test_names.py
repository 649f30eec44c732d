"""Hardware names as published rows and spec sheets write them resolve to one record, or to none."""

from __future__ import annotations

import pytest

from lightspeed.catalog import Catalog
from lightspeed.catalog.names import matching_records, reduce_hardware_name
from lightspeed.errors import UnknownNameError

# What papers, MLPerf system descriptions, vendor blogs and cloud pages print, and the record
# each one is (memory sizes as printed: B200 180GB is NVIDIA's DGX B200 figure, H200 141GB).
PUBLISHED_HARDWARE = [
    ("H100 SXM5 80GB HBM3", "h100-sxm"),
    ("NVIDIA H200 141GB", "h200-sxm"),
    ("8x H100-SXM-80GB", "h100-sxm"),
    ("B200-SXM-180GB", "b200"),
    ("DGX B200", "dgx-b200"),
    ("NVIDIA DGX H100", "dgx-h100"),
    ("MI300X 192GB", "mi300x"),
    ("AMD Instinct MI300X 192GB HBM3", "mi300x"),
    ("TPU v5p", "tpu-v5p"),
    ("Cloud TPU v5p", "tpu-v5p"),
    ("Trillium", "tpu-v6e"),
    ("A100-SXM4-80GB", "a100-sxm"),
    ("GH200 Grace Hopper", "gh200"),
    ("NVIDIA GH200 Grace Hopper Superchip", "gh200"),
    ("H100 NVL", "h100-nvl"),
    ("L40S", "l40s"),
    ("NVIDIA L40S 48GB GDDR6", "l40s"),
    ("NVIDIA A40 48GB GDDR6", "a40"),
    ("A40", "a40"),
    # 40 GB and 80 GB A100s: the memory size picks the card
    ("A100 40GB", "a100-sxm-40gb"),
    ("A100 80GB", "a100-sxm"),
    ("NVIDIA A100 SXM 40GB", "a100-sxm-40gb"),
    ("A100 PCIe 40GB", "a100-pcie-40gb"),
    ("A100 PCIe 80GB", "a100-pcie"),
    # records added for names published rows use (issue 28, coverage); L40 is not the L40S
    ("Intel Gaudi 2", "gaudi2"),
    ("Habana Gaudi2 96GB HBM2e", "gaudi2"),
    ("Intel Gaudi 3 128GB", "gaudi3"),
    ("NVIDIA L40", "l40"),
    ("NVIDIA L40 48GB", "l40"),
    ("RTX 6000 Ada Generation", "rtx-6000-ada"),
    ("AMD Instinct MI300A", "mi300a"),
    ("NVIDIA B100", "b100"),
]


@pytest.mark.parametrize(("text", "expected"), PUBLISHED_HARDWARE)
def test_published_hardware_names_resolve(catalog: Catalog, text: str, expected: str) -> None:
    assert catalog.any_record(text).name == expected


def test_a_memory_size_the_part_does_not_have_is_no_match(catalog: Catalog) -> None:
    # An H100 with 96 GB is Meta's Grand Teton part (HBM2e), not the 80 GB record; one with
    # 64 GB is no record at all: the error names the parts whose memory differs.
    assert catalog.accelerator("H100 SXM 96GB").name == "h100-sxm-96gb-hbm2e"
    assert catalog.find_device("H100 SXM 64GB") is None
    with pytest.raises(UnknownNameError) as raised:
        catalog.accelerator("H100 SXM 64GB")
    assert "h100-sxm, h100-sxm-96gb-hbm2e have other memory" in str(raised.value)
    # the same text as a --system names the parts too, not only the closest spellings
    with pytest.raises(UnknownNameError) as as_system:
        catalog.resolve_cluster("H100 SXM 64GB")
    assert "h100-sxm, h100-sxm-96gb-hbm2e have other memory" in str(as_system.value)


def test_a_system_accepts_its_memory_per_gpu_or_in_total(catalog: Catalog) -> None:
    # DGX A100 (8 x 80 GB) is sold as "DGX A100 640GB"; the 40 GB model as "DGX A100 320GB".
    assert catalog.system("DGX A100 640GB").name == "dgx-a100"
    assert catalog.system("NVIDIA DGX A100 80GB").name == "dgx-a100"
    assert catalog.system("DGX A100 320GB").name == "dgx-a100-320gb"


def test_a_reduced_name_two_records_share_is_no_match(catalog: Catalog) -> None:
    # "RoCE" is the 200G, 400G and 800G Ethernet link: refused with all named, not guessed.
    assert [record.name for record in matching_records(catalog.links, "RoCE")] == [
        "ethernet-200g",
        "ethernet-400g",
        "ethernet-800g",
    ]
    with pytest.raises(UnknownNameError):
        catalog.link("RoCE")
    assert catalog.link("RoCE 400G").name == "ethernet-400g"
    # "H100 80GB" is the SXM and the PCIe card (both 80 GB); the bare "H100" is the catalog's alias.
    assert {record.name for record in matching_records(catalog.accelerators, "H100 80GB")} == {
        "h100-pcie",
        "h100-sxm",
    }
    assert catalog.accelerator("H100").name == "h100-sxm"
    with pytest.raises(UnknownNameError, match="may mean any of h100-pcie, h100-sxm"):
        catalog.accelerator("H100 80GB")
    with pytest.raises(UnknownNameError, match="may mean any of h100-pcie, h100-sxm"):
        catalog.resolve_cluster("H100 80GB")  # as --system: not read as a cluster spec
    assert catalog.resolve_cluster("NVIDIA H200 141GB").system.accelerator.name == "h200-sxm"
    # A name that is exactly one record's stays that record's: "A100 PCIe" is the 80 GB card.
    assert catalog.accelerator("NVIDIA A100 PCIe").name == "a100-pcie"


def test_reduction_keeps_what_names_the_part() -> None:
    assert reduce_hardware_name("8x H100-SXM-80GB").base == "h100-sxm"
    assert reduce_hardware_name("RTX 6000 Ada Generation").base == "rtx-6000-ada"
    # a size first is not a name with a size: "80GB DGX H100" stays as written
    assert reduce_hardware_name("80GB DGX H100").base == "80gb-dgx-h100"
