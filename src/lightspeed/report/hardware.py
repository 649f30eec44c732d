"""Terminal rendering of the hardware catalog: ``hw list``, ``hw show``, ``hw compare``, ``hw detect``.

Names, notes and source titles may come from user files: they are printed
without markup. Sparse datasheet figures carry a ``*`` and their dense value.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from rich.console import Console
from rich.markup import escape

from lightspeed.catalog import (
    Accelerator,
    CatalogEntry,
    Cluster,
    Comparison,
    ComparisonRow,
    Conflict,
    Cpu,
    CpuPeak,
    Description,
    Link,
    LocalCpu,
    LocalMachine,
    Source,
    System,
    SystemTotals,
)
from lightspeed.report.bench import format_value
from lightspeed.report.console import make_console, render_table
from lightspeed.units import format_bytes, format_memory, format_percent, format_ratio

COMPARE_CAPTION = "Ratios and deltas compare dense values with the first column."
SPARSE_CAPTION = (
    "* printed with 2:4 structured sparsity; the dense value (what lightspeed divides by) follows in "
    "parentheses. " + COMPARE_CAPTION
)


# how `hw detect` fills what detection could not find (LocalCpu.missing)
DETECT_HINTS: Final = {
    "clock": "give the CPU frequency with --cpu-ghz",
    "memory_bandwidth": "; measure it with 'lightspeed bench' or pass --memory-bandwidth",
}


def _detect_hint(cpu: LocalCpu, figure: str) -> str:
    """How `hw detect` supplies ``figure`` when detection could not find it, else ``""``."""
    return DETECT_HINTS[figure] if figure in cpu.missing else ""


def format_figure(value: float | None, unit: str, *, binary: bool = False) -> str:
    """A figure in its unit, readable: ``989.5 TFLOP/s``, ``80 GB``, ``700 W``, ``1,830 MHz``;
    ``binary`` bytes (memory sized in powers of two) in GiB: ``192 GiB``."""
    if value is None:
        return "-"
    if unit == "B":
        return format_memory(value) if binary else format_bytes(value)
    if unit == "OP/s":
        return format_value(value, "FLOP/s").replace("FLOP/s", "OP/s")
    if unit == "W":
        return f"{value / 1e3:.3g} kW" if value >= 1e4 else f"{value:,.0f} W"
    if unit == "Hz":
        return f"{value / 1e9:.3g} GHz" if value >= 1e9 else f"{value / 1e6:,.0f} MHz"
    if unit in {"links", "units", "devices", "cores"}:
        return f"{value:g}"
    return format_value(value, unit)


BINARY_BYTES = "B (binary)"  # the scale of rows of memory sized in powers of two

# unit -> ((threshold, factor, label), ...) from the largest threshold down; a row takes the
# scale of its largest value so that its numbers line up as on a datasheet.
_SCALES: dict[str, tuple[tuple[float, float, str], ...]] = {
    "FLOP/s": ((1e16, 1e15, "PFLOP/s"), (1e11, 1e12, "TFLOP/s"), (0.0, 1e9, "GFLOP/s")),
    "OP/s": ((1e16, 1e15, "POP/s"), (1e11, 1e12, "TOP/s"), (0.0, 1e9, "GOP/s")),
    "B": ((1e13, 1e12, "TB"), (1e9, 1e9, "GB"), (0.0, 1e6, "MB")),
    BINARY_BYTES: ((10 * 2.0**40, 2.0**40, "TiB"), (2.0**30, 2.0**30, "GiB"), (0.0, 2.0**20, "MiB")),
    "B/s": ((1e12, 1e12, "TB/s"), (0.0, 1e9, "GB/s")),
    "W": ((1e4, 1e3, "kW"), (0.0, 1.0, "W")),
    "Hz": ((1e9, 1e9, "GHz"), (0.0, 1e6, "MHz")),
    "s": ((1e-3, 1e-3, "ms"), (0.0, 1e-6, "us")),
}


def row_scale(values: Sequence[float | None], unit: str) -> tuple[float, str]:
    """(divisor, unit label) that suits the largest of ``values`` (``1e12, 'TFLOP/s'``)."""
    largest = max((abs(value) for value in values if value is not None), default=0.0)
    for threshold, factor, label in _SCALES.get(unit, ()):
        if largest >= threshold:
            return factor, label
    return 1.0, unit


def _number(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 1e5 else f"{value:,.5g}"


def _printed(value: float | None, dense: float | None, sparse: bool | None, factor: float) -> str:
    if value is None:
        return "-"
    if sparse and dense is not None:
        return f"{_number(value / factor)}* ({_number(dense / factor)})"
    return _number(value / factor)


def _versus(row: ComparisonRow, index: int) -> str:
    ratio = row.ratios[index]
    delta = row.deltas[index]
    if ratio is None or delta is None:
        return "-"
    if abs(ratio - 1.0) < 1e-9:
        return "same"
    percent = f"{(ratio - 1.0) * 100:+.0f}%"
    return f"{format_ratio(ratio)} ({percent})"


def render_hardware_list(entries: Sequence[CatalogEntry], console: Console | None = None) -> None:
    """One table per kind with headline figures."""
    console = console or make_console()
    for kind in dict.fromkeys(entry.kind for entry in entries):
        rows = [entry for entry in entries if entry.kind == kind]
        headers, keys = _LIST_COLUMNS[kind]
        render_table(
            f"{kind}s ({len(rows)})",
            ["name", "display name", *headers],
            [
                [escape(entry.name), escape(entry.display_name)]
                + [format_figure(_list_figure(entry, key), unit) for key, unit in keys]
                for entry in rows
            ],
            right_align_from=2,
            console=console,
        )
    console.print("'lightspeed hw show NAME' for every figure with its source; aliases work everywhere")


def _list_figure(entry: CatalogEntry, key: str) -> float | None:
    """``entry``'s figure ``key``; the BF16 column falls back to FP16 where the part has no BF16
    (V100), which its header says: ``BF16 (FP16)``."""
    value = entry.figures.get(key)
    if value is None and key == _HALF_PRECISION_KEY:
        return entry.figures.get("fp16_dense_flop_per_s")
    return value


_HALF_PRECISION_KEY = "bf16_dense_flop_per_s"
_HALF_PRECISION_HEADER = "BF16 (FP16) dense"

_LIST_COLUMNS: dict[str, tuple[list[str], list[tuple[str, str]]]] = {
    "accelerator": (
        [_HALF_PRECISION_HEADER, "memory (usable)", "memory bandwidth", "scale-up per direction"],
        [
            (_HALF_PRECISION_KEY, "FLOP/s"),
            ("memory_bytes", "B"),
            ("memory_bandwidth_bytes_per_s", "B/s"),
            ("scale_up_per_direction_bytes_per_s", "B/s"),
        ],
    ),
    "link": (
        ["per direction", "bidirectional", "latency"],
        [("per_direction_bytes_per_s", "B/s"), ("bidirectional_bytes_per_s", "B/s"), ("latency_s", "s")],
    ),
    "cpu": (
        ["cores", "base clock", "memory bandwidth"],
        [("num_cores", "cores"), ("clock_hz", "Hz"), ("memory_bandwidth_bytes_per_s", "B/s")],
    ),
    "system": (
        ["accelerators", _HALF_PRECISION_HEADER, "memory (usable)"],
        [("num_accelerators", "devices"), (_HALF_PRECISION_KEY, "FLOP/s"), ("memory_bytes", "B")],
    ),
}


def render_hardware_comparison(comparison: Comparison, console: Console | None = None) -> None:
    """Records side by side; each later column is followed by its ratio and delta vs the first."""
    headers = ["figure", "unit"]
    for index, name in enumerate(comparison.devices):
        headers.append(name)
        if index > 0:
            headers.append(f"{name} vs {comparison.devices[0]}")
    rows = []
    for row in comparison.rows:
        unit = BINARY_BYTES if row.binary_units and row.unit == "B" else row.unit
        factor, label = row_scale([*row.values, *row.dense_values], unit)
        cells = [row.label, label]
        for index in range(len(comparison.devices)):
            cells.append(_printed(row.values[index], row.dense_values[index], row.sparse[index], factor))
            if index > 0:
                cells.append(_versus(row, index))
        rows.append(cells)
    for key, values in comparison.labels.items():
        if key != "display_name" and len({value.casefold() for value in values}) > 1:
            rows.append([key.replace("_", " "), "", *_label_cells(values)])
    any_sparse = any(flag for row in comparison.rows for flag in row.sparse)
    render_table(
        f"{comparison.kind}s compared: {', '.join(escape(name) for name in comparison.display_names)}",
        headers,
        rows,
        right_align_from=2,
        caption=SPARSE_CAPTION if any_sparse else COMPARE_CAPTION,
        console=console,
    )


def _label_cells(values: Sequence[str]) -> list[str]:
    """Each label, and after each later one whether it is the first's (``HBM3e`` is ``HBM3E``).

    A missing label (a TPU has no host link) shows ``-`` and so does its comparison, as a
    missing number does."""
    cells = []
    for index, value in enumerate(values):
        cells.append(escape(value) if value else "-")
        if index > 0:
            cells.append(_label_versus(value, values[0]))
    return cells


def _label_versus(value: str, first: str) -> str:
    if not value or not first:
        return "-"
    return "same" if value.casefold() == first.casefold() else "differs"


def render_hardware_description(description: Description, console: Console | None = None) -> None:
    """Every figure of one record with its source; systems add derived vs printed totals."""
    console = console or make_console()
    record = description.record
    if isinstance(record, Accelerator):
        _accelerator(record, console)
    elif isinstance(record, Link):
        _link(record, console)
    elif isinstance(record, Cpu):
        _cpu(record, description.cpu_peak, console)
    elif isinstance(record, System):
        _system(record, description.totals, console)
    else:
        _cluster(record, console)


def _header(console: Console, title: str, lines: Sequence[str]) -> None:
    console.print(escape(title), style="bold", highlight=False)
    for line in lines:
        if line:
            console.print(f"  {escape(line)}", highlight=False)


def _sources(sources: Mapping[str, Source], console: Console) -> None:
    # Plain lines, not a table: a source's URL must never be cut short.
    console.print("sources", style="bold", highlight=False)
    for source in sources.values():
        console.print(
            f"  {escape(f'[{source.key}]')} {escape(source.title)}", highlight=False, soft_wrap=True
        )
        if source.url:
            console.print(f"      {escape(source.url)}", highlight=False, soft_wrap=True)


def _conflicts(conflicts: Sequence[Conflict], console: Console) -> None:
    if not conflicts:
        return
    render_table(
        "conflicts between documents",
        ["field", "values", "chosen", "sources", "note"],
        [
            [
                escape(c.field),
                escape(" vs ".join(c.values)),
                escape(c.chosen),
                escape(", ".join(c.sources)),
                escape(c.note),
            ]
            for c in conflicts
        ],
        right_align_from=5,
        console=console,
    )


def _accelerator(accelerator: Accelerator, console: Console) -> None:
    _header(
        console,
        f"{accelerator.display_name} ({accelerator.name})",
        [
            f"{accelerator.vendor} {accelerator.architecture}, {accelerator.form_factor}; "
            f"efficiency family {accelerator.family}",
            f"aliases: {', '.join(accelerator.aliases) or '-'}",
            accelerator.note,
        ],
    )
    rows = [
        [
            precision,
            format_figure(figure.printed_per_s, figure.unit),
            "yes" if figure.printed_with_sparsity else "no",
            format_figure(figure.dense_per_s, figure.unit),
            figure.unit,
            escape(figure.source),
            escape(figure.note),
        ]
        for precision, figure in accelerator.compute.items()
    ]
    render_table(
        "compute (dense = the SOL denominator)",
        ["row", "printed", "printed sparse", "dense", "unit", "source", "note"],
        rows,
        right_align_from=1,
        console=console,
    )
    render_table(
        "memory, links, power, chip",
        ["figure", "value", "source"],
        _accelerator_rows(accelerator),
        right_align_from=1,
        console=console,
    )
    _conflicts(accelerator.conflicts, console)
    _sources(accelerator.sources, console)


def _accelerator_rows(accelerator: Accelerator) -> list[list[str]]:
    rows = [
        ["memory type", escape(accelerator.memory_type), escape(accelerator.memory_source)],
        [
            "memory nominal (the vendor's GB, binary)",
            format_figure(accelerator.memory_nominal_bytes, "B", binary=True),
            escape(accelerator.memory_source),
        ],
        [
            "memory usable (listed)",
            format_figure(accelerator.memory_usable_bytes, "B"),
            escape(accelerator.memory_source),
        ],
        *_reported_memory_rows(accelerator),
        [
            "memory bandwidth",
            format_figure(accelerator.memory_bandwidth_bytes_per_s, "B/s"),
            escape(accelerator.memory_source),
        ],
    ]
    for label, attachment in (("scale-up", accelerator.scale_up), ("host link", accelerator.host_link)):
        if attachment is not None:
            link = attachment.link
            rows.append(
                [
                    f"{label}: {attachment.num_links} x {escape(link.name)}",
                    f"{format_figure(attachment.per_direction_bytes_per_s, 'B/s')} per direction, "
                    f"{format_figure(attachment.bidirectional_bytes_per_s, 'B/s')} bidirectional",
                    escape(attachment.source),
                ]
            )
    tdp = format_figure(accelerator.tdp_w, "W")
    if accelerator.tdp_min_w is not None:
        tdp = f"{format_figure(accelerator.tdp_min_w, 'W')} - {tdp}"
    rows.append(
        ["TDP", tdp if accelerator.tdp_w is not None else "not published", escape(accelerator.power_source)]
    )
    if accelerator.power_limit_w is not None:
        limit = format_figure(accelerator.power_limit_w, "W")
        if accelerator.clock_fraction < 1:
            limit += f": compute clock x{accelerator.clock_fraction:.3f}, (limit / TDP)^(1/3)"
        rows.append(["power limit (configured cap)", limit, escape(accelerator.power_source)])
    chip = escape(accelerator.chip_source)
    rows += [
        ["L2 cache", format_figure(accelerator.l2_cache_bytes, "B"), chip],
        ["SMs / CUs", format_figure(accelerator.num_compute_units, "units"), chip],
        ["boost clock", format_figure(accelerator.boost_clock_hz, "Hz"), chip],
    ]
    if accelerator.num_logical_devices > 1:
        rows.append(["devices per package", str(accelerator.num_logical_devices), chip])
    return rows


def _reported_memory_rows(accelerator: Accelerator) -> list[list[str]]:
    """The driver-reported memory (nvidia-smi ``memory.total``) where the record has it."""
    reported = accelerator.memory_reported_bytes
    if reported is None:
        return []
    value = f"{reported / 2**20:,.0f} MiB ({format_memory(reported)}, {format_bytes(reported)})"
    return [["memory driver-reported", value, escape(accelerator.memory_reported_source)]]


def _link(link: Link, console: Console) -> None:
    _header(
        console,
        f"{link.display_name} ({link.name})",
        [f"aliases: {', '.join(link.aliases) or '-'}", link.note],
    )
    render_table(
        "bandwidth and latency (one link or port)",
        ["figure", "value", "source"],
        [
            ["per direction", format_figure(link.per_direction_bytes_per_s, "B/s"), escape(link.source)],
            ["bidirectional", format_figure(link.bidirectional_bytes_per_s, "B/s"), escape(link.source)],
            ["small-message latency", format_figure(link.latency_s, "s"), escape(link.latency_source)],
        ],
        right_align_from=1,
        console=console,
    )
    _sources(link.sources, console)


def _cpu(cpu: Cpu, peak: CpuPeak | None, console: Console) -> None:
    _header(
        console,
        f"{cpu.display_name} ({cpu.name})",
        [
            f"{cpu.vendor}, microarchitecture {cpu.microarchitecture}",
            f"aliases: {', '.join(cpu.aliases) or '-'}",
            cpu.note,
        ],
    )
    render_table(
        "figures (one socket)",
        ["figure", "value"],
        [
            ["cores", str(cpu.num_cores)],
            ["base clock", format_figure(cpu.clock_hz, "Hz")],
            ["max boost clock", format_figure(cpu.max_clock_hz, "Hz")],
            ["FP64 printed", format_figure(cpu.fp64_flop_per_s, "FLOP/s")],
            ["memory", f"{escape(cpu.memory_type)}, {format_figure(cpu.memory_capacity_bytes, 'B')}"],
            ["memory bandwidth", format_figure(cpu.memory_bandwidth_bytes_per_s, "B/s")],
            ["TDP", format_figure(cpu.tdp_w, "W")],
        ],
        right_align_from=1,
        console=console,
    )
    _peak(peak, console)
    _sources(cpu.sources, console)


def _peak(peak: CpuPeak | None, console: Console, assumptions: Sequence[str] | None = None) -> None:
    if peak is None:
        console.print("  no derived peak", highlight=False)
        for assumption in assumptions or ("microarchitecture not in the table",):
            console.print(f"  {escape(assumption)}", highlight=False)
        return
    no_bf16 = "- (see the assumptions below)"
    bf16 = format_figure(peak.bf16_flop_per_s, "FLOP/s") if peak.bf16_flop_per_s else no_bf16
    console.print(
        f"  derived peak: FP64 {format_figure(peak.fp64_flop_per_s, 'FLOP/s')}, "
        f"FP32 {format_figure(peak.fp32_flop_per_s, 'FLOP/s')}, BF16 {bf16}",
        highlight=False,
    )
    for precision, formula in peak.formulas().items():
        console.print(f"  {precision.upper()}: {escape(formula)}", highlight=False)
    for assumption in peak.assumptions if assumptions is None else assumptions:
        console.print(f"  assumed: {escape(assumption)}", highlight=False)


def _system(system: System, totals: SystemTotals | None, console: Console) -> None:
    cpu = f"{system.num_cpus} x {system.cpu.name}" if system.cpu else "host CPUs not recorded"
    fabric = (
        f"{system.scale_out.num_links} x {system.scale_out.link.name} per {system.system_type}"
        if system.scale_out
        else "no scale-out NICs recorded"
    )
    _header(
        console,
        f"{system.display_name} ({system.name})",
        [
            f"{system.num_accelerators} x {system.accelerator.name}, {cpu}"
            + (
                f"; nodes of {system.accelerators_per_node} accelerators (source: {system.node_source})"
                if system.accelerators_per_node
                else ""
            ),
            f"scale-up domain {system.scale_up_domain_size} accelerators"
            f"{', in-network reduction' if system.in_network_reduction else ''}; scale-out {fabric}",
            f"aliases: {', '.join(system.aliases) or '-'}",
            system.note,
        ],
    )
    if totals is not None:
        render_system_totals(totals, console)
    _conflicts(system.conflicts, console)
    _sources(system.sources, console)


def render_system_totals(totals: SystemTotals, console: Console | None = None) -> None:
    """Derived totals beside the vendor's printed ones, with their ratio."""
    rows = []
    for row in totals.rows:
        verdict = {True: "ok", False: "DIFFERS", None: "-"}[row.within_tolerance]
        ratio = f"{row.ratio:.3f}" if row.ratio is not None else "-"
        rows.append(
            [
                row.label,
                format_figure(row.derived, row.unit, binary=row.binary_units),
                format_figure(row.printed, row.unit, binary=row.binary_units),
                escape(row.printed_source) or "-",
                ratio,
                verdict,
            ]
        )
    notes = sorted({row.note for row in totals.rows if row.note})
    render_table(
        f"totals: sum of components vs the vendor's printed figure "
        f"(tolerance {format_percent(totals.tolerance, 0)})",
        ["total", "derived", "printed", "source", "derived/printed", "check"],
        rows,
        right_align_from=1,
        caption="; ".join(notes) or None,
        console=console,
    )


def _cluster(cluster: Cluster, console: Console) -> None:
    system = cluster.system
    fabric = cluster.fabric
    lines = [
        f"spec: {cluster.spec}",
        f"{cluster.num_nodes} x {_part_of(system)} = {cluster.num_accelerators} x {system.accelerator.name}",
        f"scale-up domain {system.scale_up_domain_size}",
    ]
    if fabric is not None:
        lines.append(
            f"scale-out: {fabric.num_links} x {fabric.link.name} per node "
            f"({cluster.nics_per_accelerator:g} per accelerator), "
            f"{format_figure(cluster.scale_out_per_accelerator_bytes_per_s(), 'B/s')} "
            "per accelerator per direction"
        )
    else:
        lines.append("no scale-out fabric")
    _header(console, f"cluster {cluster.name}", lines)


def _part_of(system: System) -> str:
    """``tpu-v5e-pod``, or for a part of one ``v5e-2x4 (8 chips of tpu-v5e-pod)``."""
    if not system.spec_name:
        return system.name
    unit = "chips" if system.torus_dimensions else "GPUs"
    return f"{system.spec_name} ({system.num_accelerators} {unit} of {system.name})"


def _cpu_ids(machine: LocalMachine) -> str:
    info = machine.cpu.info
    if info.implementer is None:
        return f"{info.vendor}; cpu family {info.cpu_family}, model {info.model}"
    part = f"{info.part:#x}" if info.part is not None else "unknown"
    return f"{info.vendor}; implementer {info.implementer:#x}, part {part}"


def render_detected_machine(machine: LocalMachine, console: Console | None = None) -> None:
    """This machine's CPU, its peak with the formula and assumptions, and its GPUs."""
    console = console or make_console()
    cpu = machine.cpu
    info = cpu.info
    _header(
        console,
        f"CPU: {info.model_name or 'model name not reported'}",
        [
            _cpu_ids(machine),
            f"microarchitecture: {cpu.microarchitecture or 'not in the table'}"
            f"{'; catalog CPU ' + cpu.catalog_cpu if cpu.catalog_cpu else ''}",
            f"{info.num_sockets} socket(s), {info.num_physical_cores} physical cores, "
            f"{info.num_logical_cpus} logical CPUs; memory {format_figure(info.memory_total_bytes, 'B')}",
            f"memory bandwidth: {format_figure(cpu.memory_bandwidth_bytes_per_s, 'B/s')} "
            f"({cpu.memory_bandwidth_note}{_detect_hint(cpu, 'memory_bandwidth')})",
        ],
    )
    _peak(
        cpu.peak,
        console,
        (*cpu.assumptions, *(DETECT_HINTS[name] for name in cpu.missing if name == "clock")),
    )
    if machine.gpus:
        render_table(
            "GPUs",
            ["index", "reported name", "memory", "catalog record", "seen by"],
            [
                [
                    str(gpu.index),
                    escape(gpu.name),
                    format_figure(gpu.memory_bytes, "B"),
                    escape(gpu.accelerator or "not in the catalog"),
                    gpu.backend,
                ]
                for gpu in machine.gpus
            ],
            right_align_from=5,
            console=console,
        )
    for note in machine.gpu_notes:
        console.print(f"  GPUs: {escape(note)}", highlight=False)
