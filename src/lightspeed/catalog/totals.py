"""Node and rack totals derived from components, beside the vendor's printed totals.

A system record (an 8-GPU node, an NVL72 rack) lists its parts: accelerators,
CPUs, links. Vendors also print totals for the whole system ("GB200 NVL72:
FP4 1,440 PF sparse, 13.4 TB HBM3e, 130 TB/s NVLink"). This module sums the
parts and sets each sum beside the printed figure with their ratio, so a
wrong record (or a printed figure that counts something else) shows at once.

>>> from lightspeed.catalog import load_catalog
>>> totals = derive_totals(system=load_catalog().system("gb200-nvl72"))
>>> round(totals.row("fp4_sparse").ratio, 3)
1.0
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from lightspeed.catalog.records import System
from lightspeed.errors import UserInputError
from lightspeed.records import Record

DEFAULT_TOLERANCE: Final = 0.05

# Totals other than compute rows: key -> (datafile dimension, unit, label).
# Compute totals are "<precision>_dense" and "<precision>_sparse" (FLOP/s or OP/s).
TOTAL_KEYS: Final[dict[str, tuple[str, str, str]]] = {
    "memory_capacity": ("bytes", "B", "accelerator memory (usable, as listed)"),
    "memory_capacity_nominal": (
        "bytes",
        "B",
        "accelerator memory (nominal, read in GiB)",
    ),
    "memory_capacity_reported": ("bytes", "B", "accelerator memory (driver-reported)"),
    "memory_bandwidth": ("bytes_per_s", "B/s", "accelerator memory bandwidth"),
    "scale_up_bidirectional": ("bytes_per_s", "B/s", "scale-up (NVLink/xGMI/ICI) aggregate, bidirectional"),
    "scale_up_per_direction": ("bytes_per_s", "B/s", "scale-up aggregate, per direction"),
    "scale_out_per_direction": ("bytes_per_s", "B/s", "scale-out NICs, per direction"),
    "cpu_memory_capacity": ("bytes", "B", "CPU memory (per-socket figure x sockets)"),
    "cpu_memory_bandwidth": ("bytes_per_s", "B/s", "CPU memory bandwidth"),
    "fast_memory_capacity": ("bytes", "B", "accelerator + CPU memory"),
    "power": ("watts", "W", "power (accelerator + CPU TDP)"),
}
COMPUTE_SUFFIXES: Final = ("dense", "sparse")
# totals of memory sized in powers of two (HBM stacks, what drivers report): shown in GiB/TiB
BINARY_TOTAL_KEYS: Final = frozenset({"memory_capacity_nominal", "memory_capacity_reported"})

POWER_NOTE: Final = (
    "derived counts accelerator and CPU TDP only; the printed system power also covers switches, "
    "NICs, fans and conversion losses, so no tolerance applies"
)


@dataclass(frozen=True)
class TotalRow(Record):
    """One total: the sum of components, the printed figure, and how they compare.

    ``ratio`` is derived / printed. ``within_tolerance`` is ``None`` where no
    printed figure exists or where the two do not count the same things (power).
    ``binary_units`` marks memory sized in powers of two, shown in GiB/TiB (the bytes are exact).
    """

    key: str
    label: str
    unit: str
    derived: float | None
    printed: float | None
    printed_source: str
    ratio: float | None
    within_tolerance: bool | None
    note: str = ""
    binary_units: bool = False


@dataclass(frozen=True)
class SystemTotals(Record):
    """Every derived total of a system, in a stable order, with the tolerance used."""

    system: str
    num_accelerators: int
    tolerance: float
    rows: tuple[TotalRow, ...]

    def row(self, key: str) -> TotalRow:
        """The row for ``key`` (``fp4_sparse``, ``memory_capacity`` ...)."""
        for row in self.rows:
            if row.key == key:
                return row
        raise UserInputError(
            f"{self.system} has no total {key!r}; it has: {', '.join(row.key for row in self.rows)}"
        )


def total_dimension(key: str) -> str | None:
    """The data-file dimension of a printed-total key, or ``None`` if the key is unknown.

    >>> total_dimension("fp8_sparse"), total_dimension("memory_bandwidth")
    ('per_s', 'bytes_per_s')
    """
    if key in TOTAL_KEYS:
        return TOTAL_KEYS[key][0]
    precision, _, suffix = key.rpartition("_")
    return "per_s" if precision and suffix in COMPUTE_SUFFIXES else None


def derive_totals(*, system: System, tolerance: float = DEFAULT_TOLERANCE) -> SystemTotals:
    """Sum a system's components and compare each sum with the printed total.

    ``tolerance`` is the relative difference (0.05 = 5%) within which a derived
    total counts as agreeing with the printed one. Units are base SI.
    """
    printed = {total.key: total for total in system.printed_totals}
    derived = _derived_values(system)
    keys = list(derived) + [key for key in printed if key not in derived]
    rows = []
    for key in keys:
        total = printed.get(key)
        printed_value, source = (total.value, total.source) if total else (None, "")
        rows.append(_row(key, derived.get(key), printed_value, source, tolerance))
    if system.power_max_w is not None:
        rows = [_power_row(row, system) if row.key == "power" else row for row in rows]
    return SystemTotals(
        system=system.name, num_accelerators=system.num_accelerators, tolerance=tolerance, rows=tuple(rows)
    )


def _row(key: str, derived: float | None, printed: float | None, source: str, tolerance: float) -> TotalRow:
    ratio = derived / printed if derived is not None and printed else None
    within = abs(ratio - 1.0) <= tolerance if ratio is not None else None
    label, unit = _label_and_unit(key)
    return TotalRow(
        key=key,
        label=label,
        unit=unit,
        derived=derived,
        printed=printed,
        printed_source=source,
        ratio=ratio,
        within_tolerance=within,
        binary_units=key in BINARY_TOTAL_KEYS,
    )


def _power_row(row: TotalRow, system: System) -> TotalRow:
    printed = system.power_max_w
    assert printed is not None
    ratio = row.derived / printed if row.derived is not None else None
    return TotalRow(
        key=row.key,
        label=row.label,
        unit=row.unit,
        derived=row.derived,
        printed=printed,
        printed_source=system.power_source,
        ratio=ratio,
        within_tolerance=None,
        note=POWER_NOTE,
    )


def _label_and_unit(key: str) -> tuple[str, str]:
    if key in TOTAL_KEYS:
        _, unit, label = TOTAL_KEYS[key]
        return label, unit
    precision, _, suffix = key.rpartition("_")
    unit = "OP/s" if precision.startswith("int") else "FLOP/s"
    return f"{precision.replace('_', ' ')} {suffix}", unit


def _derived_values(system: System) -> dict[str, float]:
    count = system.num_accelerators
    accelerator = system.accelerator
    values: dict[str, float] = {}
    for precision, figure in accelerator.compute.items():
        values[f"{precision}_dense"] = count * figure.dense_per_s
        if figure.printed_with_sparsity:
            values[f"{precision}_sparse"] = count * figure.sparse_per_s
    for total in system.printed_totals:  # a printed sparse total of a row printed dense
        precision, _, suffix = total.key.rpartition("_")
        if suffix == "sparse" and precision in accelerator.compute:
            values.setdefault(total.key, count * accelerator.compute[precision].sparse_per_s)
    values["memory_capacity"] = count * accelerator.memory_usable_bytes
    values["memory_capacity_nominal"] = count * accelerator.memory_nominal_bytes
    if accelerator.memory_reported_bytes is not None:
        values["memory_capacity_reported"] = count * accelerator.memory_reported_bytes
    values["memory_bandwidth"] = count * accelerator.memory_bandwidth_bytes_per_s
    if accelerator.scale_up is not None:
        values["scale_up_bidirectional"] = count * accelerator.scale_up.bidirectional_bytes_per_s
        values["scale_up_per_direction"] = count * accelerator.scale_up.per_direction_bytes_per_s
    if system.scale_out is not None:
        values["scale_out_per_direction"] = system.scale_out.per_direction_bytes_per_s
    values.update(_cpu_values(system, values["memory_capacity"]))
    power = _component_power_w(system)
    if power is not None:
        values["power"] = power
    return values


def _cpu_values(system: System, accelerator_memory_bytes: float) -> dict[str, float]:
    cpu = system.cpu
    if cpu is None or system.num_cpus == 0:
        return {}
    values: dict[str, float] = {}
    if cpu.memory_capacity_bytes is not None:
        values["cpu_memory_capacity"] = system.num_cpus * cpu.memory_capacity_bytes
        values["fast_memory_capacity"] = accelerator_memory_bytes + values["cpu_memory_capacity"]
    if cpu.memory_bandwidth_bytes_per_s is not None:
        values["cpu_memory_bandwidth"] = system.num_cpus * cpu.memory_bandwidth_bytes_per_s
    return values


def _component_power_w(system: System) -> float | None:
    """Accelerator TDP x count, plus CPU TDP x count unless the accelerator's TDP already covers its
    CPU (a GH200 module's 1,000 W is Grace, Hopper and their memory)."""
    if system.accelerator.tdp_w is None:
        return None
    power = system.num_accelerators * system.accelerator.tdp_w
    if system.cpu is not None and system.cpu.tdp_w is not None and not system.accelerator.tdp_includes_cpu:
        power += system.num_cpus * system.cpu.tdp_w
    return power
