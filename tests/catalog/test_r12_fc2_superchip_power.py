"""Round 12, FC2: a superchip's TDP that already covers its CPU is not added to the CPU's TDP again."""

from __future__ import annotations

import pytest

from lightspeed.catalog import Catalog, derive_totals


def test_gh200_nvl32_power_counts_each_module_once(catalog: Catalog) -> None:
    # NVIDIA's GH200 datasheet: module power 450-1000 W for Grace, Hopper and their memory together,
    # so 32 modules x 1,000 W = 32 kW, not 32 x (1,000 + 250 W Grace) = 40 kW.
    assert catalog.accelerator("gh200-144gb").tdp_includes_cpu
    row = derive_totals(system=catalog.system("gh200-nvl32")).row("power")
    assert row.derived == pytest.approx(32 * 1_000.0)


def test_gb200_gpu_power_excludes_grace(catalog: Catalog) -> None:
    # GB200's 1,200 W is one Blackwell GPU's; the rack adds 36 Grace x 250 W: 72 x 1.2 + 36 x 0.25 = 95.4 kW.
    assert not catalog.accelerator("gb200").tdp_includes_cpu
    row = derive_totals(system=catalog.system("gb200-nvl72")).row("power")
    assert row.derived == pytest.approx(72 * 1_200.0 + 36 * 250.0)


@pytest.mark.parametrize("name", ["gh200", "gh200-144gb", "gb10"])
def test_modules_whose_tdp_covers_the_cpu_say_so(catalog: Catalog, name: str) -> None:
    assert catalog.accelerator(name).tdp_includes_cpu
