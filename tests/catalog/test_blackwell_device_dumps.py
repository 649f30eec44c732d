"""GB200 and GB300 as the devices report themselves: OpenXLA's GPU target specs hold a
device-properties dump of each (``gb200.txtpb``: 'sm_10.0a with 197897748480B RAM, 152 cores,
2062000KHz clock'; ``gb300.txtpb``: 'sm_10.3a with 297021079552B RAM, 152 cores, 2070000KHz
clock'), where the catalog had no SM count for either and GB300's memory only as listed (279 GB)."""

from __future__ import annotations

import json

import pytest

from lightspeed.catalog import Catalog

GB300_CUDA_BYTES = 297_021_079_552  # XLA's dump: the device's total as CUDA reports it


@pytest.mark.parametrize(("name", "clock_mhz"), [("gb200", 2062.0), ("gb300", 2070.0)])
def test_grace_blackwell_gpus_enable_152_sms(catalog: Catalog, name: str, clock_mhz: float) -> None:
    accelerator = catalog.accelerator(name)
    assert accelerator.num_compute_units == 152
    assert accelerator.boost_clock_hz == pytest.approx(clock_mhz * 1e6)
    assert catalog.accelerator("b200").num_compute_units == 148  # the HGX part keeps its own


def test_gb300_memory_is_what_the_device_reports(catalog: Catalog, run_cli) -> None:  # type: ignore[no-untyped-def]
    accelerator = catalog.accelerator("gb300")
    assert accelerator.memory_device_bytes == pytest.approx(GB300_CUDA_BYTES, rel=1e-5)  # 283,262 MiB
    assert accelerator.memory_usable_bytes == pytest.approx(279e9)  # the datasheet's listing stays
    report = json.loads(run_cli("memory", "--model", "llama-3-405b", "--system", "gb300-nvl72", "--json").out)
    assert report["memory_device_bytes"] == pytest.approx(GB300_CUDA_BYTES, rel=1e-5)
