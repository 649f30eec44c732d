"""Nsight Compute ``--csv`` output into typed records: one :class:`NcuLaunch` per kernel launch.

Example::

    report = read_ncu("b200_cublaslt_fp8_gemm.csv")
    report.launches[0].sol.compute_throughput_pct
    # -> 23.59

Each launch keeps the GPU Speed Of Light section (duration, Compute (SM),
Memory, DRAM, L1/TEX and L2 throughput, % of peak), its launch statistics
(grid, block, waves per SM, registers, shared memory), its occupancy (with
the block limits that cap it), FLOP counted from floating-point instruction
metrics when they were collected, and ncu's rule findings with their
estimated speedups. Every metric is also kept as printed
(:class:`NcuMetric`), in base units. Which metric fills which field is data:
``trace/data/ncu_metrics.toml``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Final

from lightspeed.datafile import Fields, load_toml
from lightspeed.errors import TraceError
from lightspeed.records import Record
from lightspeed.trace.io.ncu_csv import (
    DEFAULT_MAX_CSV_BYTES,
    DETAILS,
    CsvPage,
    CsvRow,
    parse_number,
    parse_triple,
    read_ncu_csv,
    to_base,
)

METRICS_FILE: Final = Path(__file__).resolve().parents[1] / "data" / "ncu_metrics.toml"
# Columns that name the launch rather than hold a metric (both pages).
IDENTITY_COLUMNS: Final = frozenset(
    {"ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Kernel Time", "Context", "Stream"}
    | {"Block Size", "Grid Size", "Device", "CC", "Section Name", "Metric Name", "Metric Unit"}
    | {"Metric Value", "Rule Name", "Rule Type", "Rule Description", "Estimated Speedup Type"}
    | {"Estimated Speedup"}
)
DEVICE_NAME_METRIC: Final = "device__attribute_display_name"
NAN: Final = math.nan


@dataclass(frozen=True)
class NcuMetric(Record):
    """One metric as ncu printed it; ``value`` in base units (s, Hz, bytes, %), NaN for text."""

    section: str
    name: str
    unit: str
    value: float
    text: str


@dataclass(frozen=True)
class NcuRule(Record):
    """One rule finding. ``speedup_type`` is ``global`` (a cut of the whole kernel's runtime) or
    ``local`` (a gain in the efficiency of one part, seen in isolation); NaN when none is given."""

    section: str
    rule: str
    type: str
    description: str
    speedup_type: str
    estimated_speedup_pct: float


@dataclass(frozen=True)
class SpeedOfLight(Record):
    """The GPU Speed Of Light Throughput section: duration and % of peak of each unit."""

    duration_s: float
    elapsed_cycles: float
    sm_active_cycles: float
    sm_frequency_hz: float
    dram_frequency_hz: float
    compute_throughput_pct: float
    memory_throughput_pct: float
    dram_throughput_pct: float
    l1tex_throughput_pct: float
    l2_throughput_pct: float


@dataclass(frozen=True)
class LaunchConfig(Record):
    """Launch statistics: grid and block shape, waves, registers, shared memory (bytes per block)."""

    grid: tuple[int, int, int] | None
    block: tuple[int, int, int] | None
    grid_size: float
    block_size: float
    num_threads: float
    waves_per_sm: float
    registers_per_thread: float
    static_shared_memory_per_block_bytes: float
    dynamic_shared_memory_per_block_bytes: float
    driver_shared_memory_per_block_bytes: float
    shared_memory_config_bytes: float
    num_sms: float


@dataclass(frozen=True)
class Occupancy(Record):
    """Theoretical and achieved occupancy and the blocks per SM each resource allows."""

    theoretical_pct: float
    achieved_pct: float
    theoretical_warps_per_sm: float
    achieved_warps_per_sm: float
    block_limit_registers: float
    block_limit_shared_memory: float
    block_limit_warps: float
    block_limit_sm: float
    block_limit_barriers: float

    @property
    def limiters(self) -> tuple[str, ...]:
        """The resources whose block limit is the lowest (they cap the theoretical occupancy)."""
        limits = {
            "registers": self.block_limit_registers,
            "shared memory": self.block_limit_shared_memory,
            "warps": self.block_limit_warps,
            "blocks per SM": self.block_limit_sm,
            "barriers": self.block_limit_barriers,
        }
        known = {name: value for name, value in limits.items() if math.isfinite(value)}
        if not known:
            return ()
        lowest = min(known.values())
        return tuple(name for name, value in known.items() if value == lowest)


@dataclass(frozen=True)
class NcuLaunch(Record):
    """One profiled kernel launch. ``flop_by_precision`` counts FLOP from instruction metrics
    (2 x FMA + ADD + MUL per precision; empty when they were not collected)."""

    launch_id: int
    kernel: str
    process_id: int | None
    process_name: str
    device: int | None
    device_name: str | None
    compute_capability: str
    stream: int | None
    sol: SpeedOfLight
    launch: LaunchConfig
    occupancy: Occupancy
    flop_by_precision: dict[str, float]
    rules: tuple[NcuRule, ...]
    metrics: tuple[NcuMetric, ...]


@dataclass(frozen=True)
class NcuReport(Record):
    """Every launch of one ncu CSV file, the page it was written from, and what was skipped."""

    path: str
    page: str
    launches: tuple[NcuLaunch, ...]
    notes: tuple[str, ...]


@dataclass(frozen=True)
class _Mapping:
    """The metric map of ``ncu_metrics.toml``: metric key -> (field, kind), and FLOP metrics."""

    fields: dict[str, tuple[str, str]]
    flop: dict[str, dict[str, str]]


@lru_cache(maxsize=1)
def _mapping() -> _Mapping:
    data = Fields(str(METRICS_FILE), load_toml(METRICS_FILE))
    fields: dict[str, tuple[str, str]] = {}
    for name, entry in data.tables("field").items():
        kind = entry.string("kind")
        for key in (*entry.strings("details"), *entry.strings("raw")):
            fields.setdefault(key, (name, kind))
    flop = {
        precision: {op: entry.string(op) for op in entry.data}
        for precision, entry in data.tables("flop").items()
    }
    return _Mapping(fields=fields, flop=flop)


def read_ncu(path: Path | str, *, max_bytes: float = DEFAULT_MAX_CSV_BYTES) -> NcuReport:
    """Read ``ncu --csv`` output (details or raw page) into one record per kernel launch.

    Raises :class:`~lightspeed.errors.TraceError` for a file that is not ncu
    CSV, is truncated, or has rows that do not match its header.
    """
    page = read_ncu_csv(Path(path), max_bytes=max_bytes)
    groups: dict[int, list[CsvRow]] = {}
    for row in page.rows:
        groups.setdefault(int(row.cells["ID"]), []).append(row)
    notes: list[str] = []
    if page.num_skipped_lines:
        notes.append(
            f"{page.num_skipped_lines} lines that are not CSV rows (ncu messages, program output) skipped"
        )
    launches = tuple(_launch(page, launch_id, rows, notes) for launch_id, rows in groups.items())
    if page.page != DETAILS:
        notes.append("raw page: no rule findings (ncu writes them on the details page)")
    return NcuReport(path=str(path), page=page.page, launches=launches, notes=tuple(dict.fromkeys(notes)))


def _launch(page: CsvPage, launch_id: int, rows: list[CsvRow], notes: list[str]) -> NcuLaunch:
    first = rows[0].cells
    metrics = _details_metrics(rows) if page.page == DETAILS else _raw_metrics(page, rows[0])
    values = _field_values(
        metrics,
        notes,
        functools.partial(_check_range, page=page, launch_id=launch_id, rows=rows),
        functools.partial(_line_of, rows=rows),
    )
    by_name = {metric.name: metric for metric in metrics}
    device_name = by_name[DEVICE_NAME_METRIC].text.strip() if DEVICE_NAME_METRIC in by_name else None
    return NcuLaunch(
        launch_id=launch_id,
        kernel=first.get("Kernel Name", "").strip(),
        process_id=_integer(first.get("Process ID", "")),
        process_name=first.get("Process Name", "").strip(),
        device=_integer(first.get("Device", "")),
        device_name=device_name or None,
        compute_capability=first.get("CC", "").strip(),
        stream=_integer(first.get("Stream", "")),
        sol=SpeedOfLight(**{name: values.get(name, NAN) for name in _names(SpeedOfLight)}),
        launch=LaunchConfig(
            grid=parse_triple(first.get("Grid Size", "")),
            block=parse_triple(first.get("Block Size", "")),
            **{name: values.get(name, NAN) for name in _names(LaunchConfig) if name not in ("grid", "block")},
        ),
        occupancy=Occupancy(**{name: values.get(_occupancy_field(name), NAN) for name in _names(Occupancy)}),
        flop_by_precision=_flop(by_name),
        rules=tuple(_rule(row) for row in rows if row.cells.get("Rule Name", "").strip()),
        metrics=tuple(metrics),
    )


def _names(record: type) -> list[str]:
    return [item.name for item in dataclasses.fields(record)]


def _occupancy_field(name: str) -> str:
    return {"theoretical_pct": "theoretical_occupancy_pct", "achieved_pct": "achieved_occupancy_pct"}.get(
        name, name
    )


def _integer(text: str) -> int | None:
    value = parse_number(text)
    return int(value) if value is not None and value == int(value) else None


def _details_metrics(rows: list[CsvRow]) -> list[NcuMetric]:
    metrics = []
    for row in rows:
        name = row.cells.get("Metric Name", "").strip()
        if name:
            metrics.append(
                _metric(
                    row.cells.get("Section Name", "").strip(),
                    name,
                    row.cells.get("Metric Unit", ""),
                    row.cells.get("Metric Value", ""),
                )
            )
    return metrics


def _raw_metrics(page: CsvPage, row: CsvRow) -> list[NcuMetric]:
    return [
        _metric("", column, page.units.get(column, ""), row.cells[column])
        for column in page.header
        if column not in IDENTITY_COLUMNS
    ]


def _metric(section: str, name: str, unit: str, text: str) -> NcuMetric:
    number = parse_number(text)
    return NcuMetric(
        section=section,
        name=name,
        unit=unit.strip(),
        value=NAN if number is None else number,
        text=text.strip(),
    )


def _field_values(
    metrics: list[NcuMetric],
    notes: list[str],
    check: Callable[[NcuMetric, str, float], None],
    line_of: Callable[[NcuMetric], int],
) -> dict[str, float]:
    """Field name -> value in base units, the first metric of the map found for each field
    (``check(metric, kind, value)`` refuses one out of range; a value that is no finite number,
    ``abc`` or ``inf``, is left out with a note naming the metric and its line, ``line_of``)."""
    mapping = _mapping().fields
    values: dict[str, float] = {}
    for metric in metrics:
        found = mapping.get(f"{metric.section}/{metric.name}") or mapping.get(metric.name)
        if found is None or found[0] in values:
            continue
        if math.isnan(metric.value):
            if metric.text.lower() not in _NOT_AVAILABLE:
                notes.append(
                    f"line {line_of(metric)}: {metric.name} = {metric.text[:40]!r} is not a finite number; "
                    "the value is left out"
                )
            continue
        field, kind = found
        value = to_base(metric.value, metric.unit, kind)
        if value is None:
            notes.append(f"unit {metric.unit!r} of {metric.name!r} not understood; the value is left out")
            continue
        check(metric, kind, value)
        values[field] = value
    return values


# ncu's % of peak is at most 100; it rounds, and a sub-unit's sustained peak can be beaten by a
# hair, so up to 101 is measurement noise (documented in docs/kernels.md); 250% is not.
MAX_PERCENT_OF_PEAK: Final = 101.0
_NOT_AVAILABLE: Final = frozenset({"", "n/a"})  # what ncu writes for a metric it did not collect


def _check_range(
    metric: NcuMetric, kind: str, value: float, *, page: CsvPage, launch_id: int, rows: list[CsvRow]
) -> None:
    """Refuse a value no profiler measures: a negative time, count or size, a % of peak above 100."""
    if value >= 0 and not (kind == "pct" and value > MAX_PERCENT_OF_PEAK):
        return
    shown = f"{metric.text} {metric.unit}".strip()
    raise TraceError(
        page.path,
        f"kernel launch ID {launch_id}: {metric.name} = {shown} is outside "
        + ("0% to 100% of peak" if kind == "pct" else "0 or more"),
        line=_line_of(metric, rows=rows),
        field=f"{metric.section}/{metric.name}".lstrip("/"),
        fix="the CSV was edited or damaged: export it again with ncu --csv",
    )


def _line_of(metric: NcuMetric, *, rows: list[CsvRow]) -> int:
    """The CSV line of ``metric`` among a launch's ``rows`` (details page: its own row; raw page: the
    launch's one row)."""
    named = (row.line for row in rows if row.cells.get("Metric Name", "").strip() == metric.name)
    return next(named, rows[0].line)


def _flop(by_name: Mapping[str, NcuMetric]) -> dict[str, float]:
    """FLOP per precision from instruction counts: 2 x FMA + ADD + MUL (only precisions collected)."""
    result: dict[str, float] = {}
    for precision, ops in _mapping().flop.items():
        counts = {op: by_name[name].value for op, name in ops.items() if name in by_name}
        counts = {op: value for op, value in counts.items() if math.isfinite(value)}
        if counts:
            result[precision] = 2.0 * counts.get("fma", 0.0) + counts.get("add", 0.0) + counts.get("mul", 0.0)
    return result


def _rule(row: CsvRow) -> NcuRule:
    cells = row.cells
    speedup = parse_number(cells.get("Estimated Speedup", ""))
    return NcuRule(
        section=cells.get("Section Name", "").strip(),
        rule=cells["Rule Name"].strip(),
        type=cells.get("Rule Type", "").strip(),
        description=" ".join(cells.get("Rule Description", "").split()),
        speedup_type=cells.get("Estimated Speedup Type", "").strip().lower(),
        estimated_speedup_pct=NAN if speedup is None else speedup,
    )
