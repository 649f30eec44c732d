"""Hardware catalog: the speed of light of accelerators, CPUs, links and systems.

Records are loaded from TOML data files shipped in ``catalog/data`` (one record
per file, a source for every figure) plus user files that add or override
records.

>>> from lightspeed.catalog import load_catalog
>>> catalog = load_catalog()
>>> catalog.accelerator("h100-sxm").memory_bandwidth_bytes_per_s / 1e12
3.35
"""

from lightspeed.catalog.clusters import SPEC_SYNTAX
from lightspeed.catalog.loader import normalize_name
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
    Source,
    System,
)
from lightspeed.catalog.registry import Catalog, load_catalog
from lightspeed.catalog.totals import SystemTotals, TotalRow, derive_totals

__all__ = [
    "COMPUTE_ROWS",
    "SPEC_SYNTAX",
    "Accelerator",
    "Catalog",
    "Cluster",
    "ComputeFigure",
    "Conflict",
    "Cpu",
    "Link",
    "LinkAttachment",
    "PrintedTotal",
    "Source",
    "System",
    "SystemTotals",
    "TotalRow",
    "derive_totals",
    "load_catalog",
    "normalize_name",
]
