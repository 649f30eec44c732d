"""A part's driver-reported memory belongs to that part, not to the record it extends."""

from __future__ import annotations

from lightspeed.catalog import load_catalog


def test_every_reported_memory_is_near_the_parts_own_memory() -> None:
    # nvidia-smi reports a little more than the datasheet's GB where the datasheet counts GiB-sized
    # stacks in GB (H100: 81,559 MiB = 85.5 GB for "80 GB"), never twice it: the A100 PCIe 40GB
    # inherited the 80 GB card's 81,920 MiB (85.9 GB) through `extends`
    catalog = load_catalog()
    off = {
        name: (part.memory_reported_bytes / 1e9, part.memory_usable_bytes / 1e9)
        for name, part in catalog.accelerators.items()
        if part.memory_reported_bytes
        and not 0.8 <= part.memory_reported_bytes / part.memory_usable_bytes <= 1.2
    }
    assert off == {}


def test_the_a100_pcie_40gb_reports_40_gib() -> None:
    part = load_catalog().accelerator("a100-pcie-40gb")
    assert part.memory_reported_bytes == 40960 * 2**20
