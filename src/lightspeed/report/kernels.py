"""Kernels against their speed of light: terminal tables, the SOL bar chart, the HTML section.

Kernel names and rule texts come from ncu files (untrusted): they are
escaped before rich renders them, and the HTML report escapes every cell.
The chart uses the palette of the roofline (``report/plots.py``): compute in
the compute color, the memory units in the memory color, the SOL line and
ncu's 60 % / 80 % thresholds in the SOL color.
"""

from __future__ import annotations

import math
import re
import textwrap
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape

from lightspeed.report.console import make_console, render_table
from lightspeed.report.html import ReportSection, Table, chart_from_figure
from lightspeed.report.palette import category_color
from lightspeed.report.plots import new_figure, plain_text
from lightspeed.trace import KernelSol, KernelSolReport, shorten_name
from lightspeed.units import format_bytes, format_duration, format_flop_per_s

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# (label, field, palette key, alpha): the headline SOL pair first, then the memory units.
SOL_BARS = (
    ("Compute (SM)", "compute_throughput_pct", "compute", 1.0),
    ("Memory", "memory_throughput_pct", "memory", 1.0),
    ("DRAM", "dram_throughput_pct", "dram", 1.0),
    ("L1/TEX", "l1tex_throughput_pct", "l1tex", 1.0),
    ("L2", "l2_throughput_pct", "l2", 1.0),
)
NAME_WIDTH = 48  # a chart's tick labels only: tables show names whole
# a sentence ends at ". " before a capital letter (not inside "1.9" or "e.g.")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
FINDING_WIDTH = 100


def _pct(value: float) -> str:
    return "-" if not math.isfinite(value) else f"{value:.2f}%"


def _time(value_s: float) -> str:
    return "-" if not math.isfinite(value_s) else format_duration(value_s)


def _rate(value: float) -> str:
    return "-" if not math.isfinite(value) else format_flop_per_s(value)


def _number(value: float, digits: int = 3) -> str:
    return "-" if not math.isfinite(value) else f"{value:.{digits}g}"


def _short(name: str, width: int = NAME_WIDTH) -> str:
    return name if len(name) <= width else name[: width - 1] + "…"


def _of_peak(value: float) -> str:
    """A % of the FLOP/s peak, marked ``(!)`` above 100: no kernel outruns its SOL."""
    return _pct(value) + (" (!)" if math.isfinite(value) and value > 100.0 else "")


def _speedup(value: float, kind: str) -> str:
    return "-" if not math.isfinite(value) else f"{value:.2f}% ({kind or '?'})"


def render_kernel_report(report: KernelSolReport, console: Console | None = None) -> None:
    """Print every kernel's SOL and bound, ncu's findings ranked, FLOP/s and the levers of a trace."""
    out = console or make_console()
    device = report.accelerator or report.device_name or "device not named"
    names = distinct_names(report.kernels)
    named = list(zip(names, report.kernels, strict=True))
    render_table(
        f"Kernels against their speed of light ({escape(device)}; ranked by {report.ranked_by})",
        ("kernel", "launches", "duration", "compute", "memory", "DRAM", "L1/TEX", "L2", "bound", "headroom"),
        [(escape(name), *_sol_row(kernel)[1:]) for name, kernel in named],
        right_align_from=1,
        console=out,
        whole=(0,),
        caption=escape(
            f"bound by ncu's SOLBottleneck rule: latency when compute and memory are both under "
            f"{report.thresholds.latency_bound_pct:g}% of peak; headroom = 100% - the busiest unit"
        ),
    )
    render_table(
        "Launch and occupancy",
        ("kernel", "grid", "block", "waves/SM", "registers", "shared mem", "occupancy", "limited by"),
        [(escape(name), *_launch_row(kernel)[1:]) for name, kernel in named],
        right_align_from=1,
        console=out,
        whole=(0,),
    )
    for name, kernel in named:
        if name != kernel.short_name:  # numbered: kernels whose short names look alike
            out.print(escape(f"{name}: {kernel.kernel}"), soft_wrap=True)
    _render_findings(report, out)
    _render_flop(report, out)
    if report.trace_source is not None:
        _render_levers(report, out)
    for note in report.notes:
        out.print(escape(f"note: {note}"))


def _sol_row(kernel: KernelSol, *, markup: bool = True) -> tuple[str, ...]:
    """One kernel's SOL cells; ``markup`` escapes the name for rich (not for HTML, which escapes itself)."""
    name = kernel.short_name
    return (
        escape(name) if markup else name,
        str(kernel.num_launches),
        _time(kernel.duration_s),
        _pct(kernel.compute_throughput_pct),
        _pct(kernel.memory_throughput_pct),
        _pct(kernel.dram_throughput_pct),
        _pct(kernel.l1tex_throughput_pct),
        _pct(kernel.l2_throughput_pct),
        kernel.bound,
        _pct(kernel.headroom_pct),
    )


def _shape(shape: tuple[int, int, int] | None) -> str:
    return "-" if shape is None else "x".join(str(part) for part in shape)


def _launch_row(kernel: KernelSol) -> tuple[str, ...]:
    memory = kernel.shared_memory_per_block_bytes
    return (
        escape(kernel.short_name),
        _shape(kernel.grid),
        _shape(kernel.block),
        _number(kernel.waves_per_sm),
        _number(kernel.registers_per_thread),
        "-" if not math.isfinite(memory) else format_bytes(memory),
        f"{_pct(kernel.achieved_occupancy_pct)} of {_pct(kernel.theoretical_occupancy_pct)}",
        ", ".join(kernel.occupancy_limiters) or "-",
    )


def finding_gist(description: str, width: int = FINDING_WIDTH * 3) -> str:
    """The sentences of an ncu finding that carry its numbers (the rest is advice), shortened.

    >>> finding_gist("A wave is a set of blocks. This launch gives a partial wave of 136 blocks. Try more.")
    'This launch gives a partial wave of 136 blocks.'
    """
    sentences = [part.strip() for part in _SENTENCE.split(description) if part.strip()]
    with_numbers = [sentence for sentence in sentences if any(ch.isdigit() for ch in sentence)]
    text = " ".join(with_numbers or sentences[:1])
    return textwrap.shorten(text, width, placeholder=" …")


def _render_findings(report: KernelSolReport, out: Console) -> None:
    rows = [
        (
            escape(finding.kernel),
            escape(finding.rule),
            escape(finding_gist(finding.description)),
            _speedup(finding.estimated_speedup_pct, finding.speedup_type),
        )
        for kernel in report.kernels
        for finding in kernel.findings
    ]
    if rows:
        render_table(
            "ncu findings, ranked (runtime estimates first: global, then local, then none)",
            ("kernel", "rule", "finding (its numbers; the full text is in --json)", "est. speedup"),
            rows,
            right_align_from=3,
            console=out,
            whole=(0,),
        )


FLOP_HEADERS = (
    "kernel",
    "precision",
    "FLOP from",
    "achieved",
    "peak",
    "of peak",
    "peak at ncu's clock",
    "of it",
)
FLOP_ABOVE_CAPTION = (
    "(!) above 100% of the peak, which no kernel exceeds: the FLOP count, the precision or the device "
    "does not match the kernel (see the notes)"
)


def _flop_rows(report: KernelSolReport, names: Sequence[str]) -> list[tuple[str, ...]]:
    """FLOP/s beside the catalog's peak of each kernel with a FLOP count (``names``: how each
    kernel is shown, escaped for rich by the terminal)."""
    return [
        (
            name,
            kernel.precision or "-",
            kernel.flop_source,
            _rate(kernel.achieved_flop_per_s),
            _rate(kernel.peak_flop_per_s),
            _of_peak(kernel.sol_flop_pct),
            _rate(kernel.peak_at_profiled_clock_flop_per_s),
            _of_peak(kernel.sol_at_profiled_clock_pct),
        )
        for name, kernel in zip(names, report.kernels, strict=True)
        if math.isfinite(kernel.flop)
    ]


def _render_flop(report: KernelSolReport, out: Console) -> None:
    rows = [
        (row[0], row[1], escape(row[2]), *row[3:])
        for row in _flop_rows(report, [escape(kernel.short_name) for kernel in report.kernels])
    ]
    above = any(kernel.above_sol for kernel in report.kernels)
    if rows:
        render_table(
            "Achieved FLOP/s beside the catalog's dense peak",
            FLOP_HEADERS,
            rows,
            right_align_from=3,
            console=out,
            whole=(0,),
            caption=FLOP_ABOVE_CAPTION if above else None,
        )


def _render_levers(report: KernelSolReport, out: Console) -> None:
    rows = [
        (
            escape(kernel.short_name),
            str(kernel.trace_count),
            _time(kernel.trace_gpu_s),
            _pct(kernel.headroom_pct),
            _time(kernel.lever_s),
        )
        for kernel in report.kernels
    ]
    unprofiled = ", ".join(
        f"{shorten_name(k.kernel)} ({format_duration(k.gpu_s)})" for k in report.unprofiled[:5]
    )
    render_table(
        "Biggest levers first: GPU time in the trace x headroom",
        ("kernel", "launches in trace", "GPU time in trace", "headroom", "lever"),
        rows,
        right_align_from=1,
        console=out,
        whole=(0,),
        caption=escape(
            f"trace: {_time(report.matched_trace_gpu_s)} of {_time(report.trace_gpu_s)} of kernel time "
            "matched by name" + (f"; not profiled by ncu: {unprofiled}" if unprofiled else "")
        ),
    )


# Kernels drawn in the HTML chart (and whose findings are listed): the report's ranking decides which;
# the SOL table keeps every kernel.
MAX_KERNELS_CHARTED = 30


def distinct_names(kernels: Sequence[KernelSol]) -> list[str]:
    """Each kernel's short name, numbered (``name #1``, ``name #2``) where several kernels share it
    (template arguments stripped: ``elementwise<float>`` and ``elementwise<half>`` look alike).

    >>> from types import SimpleNamespace as K
    >>> distinct_names([K(short_name="a"), K(short_name="b"), K(short_name="a")])
    ['a #1', 'b', 'a #2']
    """
    counts = Counter(kernel.short_name for kernel in kernels)
    seen: Counter[str] = Counter()
    names = []
    for kernel in kernels:
        name = kernel.short_name
        if counts[name] > 1:
            seen[name] += 1
            name = f"{name} #{seen[name]}"
        names.append(name)
    return names


def kernel_sol_figure(report: KernelSolReport, *, max_kernels: int | None = None) -> Figure:
    """Horizontal bars per kernel: % of peak of compute, memory, DRAM, L1/TEX, L2; SOL at 100 %.

    ``max_kernels`` draws the first kernels of the report's ranking only (a chart of hundreds of
    rows is unreadable); duplicate short names are numbered as in :func:`distinct_names`."""
    names = distinct_names(report.kernels)[:max_kernels]
    kernels = report.kernels[:max_kernels]
    height = max(2.5, 0.5 + 0.9 * len(kernels))
    figure, axes = new_figure(width_in=8.0, height_in=height)
    bar = 0.8 / len(SOL_BARS)
    for index, (label, field, color, alpha) in enumerate(SOL_BARS):
        values = [getattr(kernel, field) for kernel in kernels]
        positions = [row + index * bar for row in range(len(kernels))]
        axes.barh(
            positions,
            [value if math.isfinite(value) else 0.0 for value in values],
            height=bar,
            color=category_color(color),
            alpha=alpha,
            label=label,
        )
    limits = report.thresholds
    axes.axvline(100.0, color=category_color("sol"), linewidth=1.5, label="SOL (100% of peak)")
    for threshold in (limits.latency_bound_pct, limits.no_bound_pct):
        axes.axvline(threshold, color=category_color("sol"), linewidth=0.8, linestyle="--")
    axes.set_yticks([row + 0.4 - bar / 2 for row in range(len(kernels))])
    axes.set_yticklabels([plain_text(_short(name, 40), 40) for name in names])
    axes.invert_yaxis()
    axes.set_xlim(0, 105)
    axes.set_xlabel(
        f"% of peak (dashed: ncu's {limits.latency_bound_pct:g}% latency and "
        f"{limits.no_bound_pct:g}% bound lines)"
    )
    if len(kernels) > 12:  # a tall chart: the scale on top too, where the first rows are read
        axes.tick_params(axis="x", top=True, labeltop=True)
    axes.legend(loc="lower right", fontsize=8)
    return figure


def kernel_section(
    report: KernelSolReport, *, label: str = "", max_kernels: int = MAX_KERNELS_CHARTED
) -> ReportSection:
    """The HTML report's kernel section: SOL bars per kernel (the first ``max_kernels`` of the
    ranking), the SOL table (every kernel) and the findings of the charted kernels."""
    names = distinct_names(report.kernels)
    sol = Table(
        headers=("kernel", "duration", "compute", "memory", "DRAM", "L1/TEX", "L2", "bound", "headroom"),
        rows=tuple(
            (name, *_sol_row(kernel, markup=False)[2:])
            for name, kernel in zip(names, report.kernels, strict=True)
        ),
        caption="% of peak per unit (ncu GPU Speed Of Light); bound by ncu's SOLBottleneck rule",
    )
    charted = list(zip(names, report.kernels, strict=True))[:max_kernels]
    findings = Table(
        headers=("kernel", "rule", "estimated speedup", "finding"),
        rows=tuple(
            (name, f.rule, _speedup(f.estimated_speedup_pct, f.speedup_type), f.description)
            for name, kernel in charted
            for f in kernel.findings
        ),
        caption="ranked: runtime (global) estimates first, then local ones, then findings without one"
        + (f"; of the first {len(charted)} kernels" if len(charted) < len(names) else ""),
    )
    device = report.accelerator or report.device_name or "an unnamed device"
    chart = chart_from_figure(
        kernel_sol_figure(report, max_kernels=max_kernels),
        name="kernel-sol",
        title=label or f"kernels on {device}",
    )
    lines = [
        f"{len(report.kernels)} kernel(s) profiled by Nsight Compute on {device}"
        + (f", joined with {report.trace_source}" if report.trace_source else "")
        + f"; ranked by {report.ranked_by}."
    ]
    if len(charted) < len(names):
        lines.append(
            f"The chart shows the top {len(charted)} of {len(names)} kernels (ranked by {report.ranked_by}); "
            "the SOL table has all."
        )
    tables = [sol, findings] if findings.rows else [sol]
    flop = _flop_rows(report, names)
    if flop:
        above = any(kernel.above_sol for kernel in report.kernels)
        caption = "achieved FLOP/s beside the catalog's dense peak" + (
            f"; {FLOP_ABOVE_CAPTION}" if above else ""
        )
        tables.append(Table(headers=FLOP_HEADERS, rows=tuple(flop), caption=caption))
    counts = Counter(kernel.short_name for kernel in report.kernels)
    shared = tuple(
        (name, kernel.kernel)
        for name, kernel in zip(names, report.kernels, strict=True)
        if counts[kernel.short_name] > 1
    )
    if shared:
        lines.append("Kernels that share a short name are numbered; their full names are in the last table.")
        tables.append(
            Table(headers=("kernel", "full name"), rows=shared, caption="kernels that share a short name")
        )
    return ReportSection(
        key="kernels",
        title="Kernels against their speed of light (Nsight Compute)",
        paragraphs=(*lines, *report.notes),
        tables=tuple(tables),
        charts=(chart,),
    )
