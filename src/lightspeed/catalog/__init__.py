"""Hardware catalog: the speed of light of accelerators, CPUs, links and systems.

Records are loaded from TOML data files shipped in ``catalog/data`` (one record
per file, a source for every figure) plus user files that add or override
records.

>>> from lightspeed.catalog import load_catalog
>>> catalog = load_catalog()
>>> catalog.accelerator("h100-sxm").memory_bandwidth_bytes_per_s / 1e12
3.35
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lightspeed.lazy import attach

if TYPE_CHECKING:
    from lightspeed.catalog.clusters import SPEC_SYNTAX
    from lightspeed.catalog.detect import (
        CpuInfo,
        LocalCpu,
        LocalGpu,
        LocalMachine,
        detect_cpu,
        detect_gpus,
        detect_local,
        local_cpu_accelerator,
        local_system,
        read_cpu_info,
    )
    from lightspeed.catalog.microarch import CpuPeak, Microarchitecture, cpu_peak, load_microarchitectures
    from lightspeed.catalog.mig_profiles import (
        MigGeometry,
        MigProfile,
        load_mig_geometries,
        mig_geometry,
        single_gpu_system,
        slice_accelerator,
    )
    from lightspeed.catalog.power import PowerPart, SystemPower, load_power, power_of
    from lightspeed.catalog.records import (
        COMPUTE_ROWS,
        Accelerator,
        Cluster,
        ComputeFigure,
        Conflict,
        Cpu,
        Link,
        LinkAttachment,
        PrintedTotal,
        System,
    )
    from lightspeed.catalog.registry import Catalog, load_catalog
    from lightspeed.catalog.totals import SystemTotals, TotalRow, derive_totals
    from lightspeed.catalog.views import (
        CatalogEntry,
        Comparison,
        ComparisonRow,
        Description,
        compare_hardware,
        compare_records,
        cpu_record_peak,
        describe,
        list_entries,
    )
    from lightspeed.datafile import Source, normalize_name


__all__ = [
    "COMPUTE_ROWS",
    "SPEC_SYNTAX",
    "Accelerator",
    "Catalog",
    "CatalogEntry",
    "Cluster",
    "Comparison",
    "ComparisonRow",
    "ComputeFigure",
    "Conflict",
    "Cpu",
    "CpuInfo",
    "CpuPeak",
    "Description",
    "Link",
    "LinkAttachment",
    "LocalCpu",
    "LocalGpu",
    "LocalMachine",
    "Microarchitecture",
    "MigGeometry",
    "MigProfile",
    "PowerPart",
    "PrintedTotal",
    "Source",
    "System",
    "SystemPower",
    "SystemTotals",
    "TotalRow",
    "compare_hardware",
    "compare_records",
    "cpu_peak",
    "cpu_record_peak",
    "derive_totals",
    "describe",
    "detect_cpu",
    "detect_gpus",
    "detect_local",
    "list_entries",
    "load_catalog",
    "load_microarchitectures",
    "load_mig_geometries",
    "load_power",
    "local_cpu_accelerator",
    "local_system",
    "mig_geometry",
    "normalize_name",
    "power_of",
    "read_cpu_info",
    "single_gpu_system",
    "slice_accelerator",
]

if not TYPE_CHECKING:
    __getattr__, __dir__ = attach(__name__, __file__)
