"""Monitor output: counter summaries, counters per ledger bucket, findings, the live view, plots.

Counters are shown in the units people read them in (percent, W, J, MHz,
GiB, GB/s); the plots draw counters over time (seconds since the capture
started) with the goodput run's buckets shaded behind them and its step
boundaries as ticks, in the palette of :mod:`lightspeed.report.plots`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from rich.console import Console
from rich.markup import escape
from rich.table import Table as RichTable

from lightspeed.monitor import (
    METRICS,
    CounterLedger,
    Counters,
    DeviceInfo,
    Diagnosis,
    Finding,
    MetricSummary,
    MonitorReport,
    Sample,
)
from lightspeed.report.console import make_console, render_table
from lightspeed.report.html import ReportSection, Table, chart_from_figure
from lightspeed.report.palette import category_color, series_color
from lightspeed.report.plots import check_plot_targets, new_figure_grid, plain_text, plot_paths, save_figure
from lightspeed.units import format_bytes, format_bytes_per_s, format_duration, format_percent

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# What the plots draw, in order: (metric, axis label, scale to the shown unit).
PLOTTED: Final = (
    ("gpu_util_ratio", "GPU utilisation (%)", 100.0),
    ("sm_active_ratio", "SM active (%)", 100.0),
    ("power_w", "power (W)", 1.0),
    ("memory_used_bytes", "device memory (GiB)", 1 / 2**30),
    ("nvlink_tx_bytes_per_s", "NVLink tx (GB/s)", 1e-9),
    ("cpu_util_ratio", "host CPU (%)", 100.0),
    ("process_cpu_cores", "job CPU (cores)", 1.0),
    ("host_memory_used_bytes", "host memory (GiB)", 1 / 2**30),
)
MAX_STEP_TICKS: Final = 400


def format_metric(metric: str, value: float | None) -> str:
    """A counter value in the unit people read it in.

    >>> format_metric("gpu_util_ratio", 0.5), format_metric("sm_clock_hz", 1.98e9)
    ('50.0%', '1980 MHz')
    """
    if value is None or not math.isfinite(value):
        return "-"
    unit = METRICS[metric].unit if metric in METRICS else ""
    if unit == "ratio":
        return format_percent(value)
    if unit == "Hz":
        return f"{value / 1e6:.0f} MHz"
    if unit == "B":
        return format_bytes(value, binary=True)
    if unit == "B/s":
        return format_bytes_per_s(value)
    if unit == "bitmask":
        return f"0x{int(value):x}"
    if unit in ("W", "J", "C"):
        return f"{value:.4g} {unit}"
    if unit == "cores":
        return f"{value:.2f} cores"
    return f"{value:.4g}"


def _counter_cells(counters: Counters) -> tuple[str, ...]:
    return (
        format_metric("gpu_util_ratio", counters.gpu_busy_ratio),
        format_metric("power_w", counters.power_w),
        _joules(counters.energy_j),
        format_metric("memory_used_bytes", counters.memory_peak_bytes),
        _link(counters),
        format_metric("cpu_util_ratio", counters.cpu_util_ratio),
        format_metric("process_cpu_cores", counters.process_cpu_cores),
    )


_COUNTER_HEADERS: Final = ("GPU busy", "power", "energy", "mem peak", "link tx/rx", "host CPU", "job CPU")


def _joules(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g} J"


def _link(counters: Counters) -> str:
    tx = (
        counters.nvlink_tx_bytes_per_s
        if counters.nvlink_tx_bytes_per_s is not None
        else counters.pcie_tx_bytes_per_s
    )
    rx = (
        counters.nvlink_rx_bytes_per_s
        if counters.nvlink_rx_bytes_per_s is not None
        else counters.pcie_rx_bytes_per_s
    )
    if tx is None and rx is None:
        return "-"
    return f"{format_metric('nvlink_tx_bytes_per_s', tx)} / {format_metric('nvlink_rx_bytes_per_s', rx)}"


def counter_ledger_rows(joined: CounterLedger) -> list[tuple[str, ...]]:
    """One row per ledger bucket: time, share, and its counters."""
    total = joined.ledger.total_s
    return [
        (
            item.bucket,
            format_duration(item.seconds),
            format_percent(item.seconds / total) if total > 0 else "-",
            *_counter_cells(item.counters),
        )
        for item in joined.buckets
    ]


def counter_headline(joined: CounterLedger) -> str:
    """Energy per step and per token, and how busy the job was while productive."""
    parts = []
    if joined.energy_j is not None:
        parts.append(f"energy {joined.energy_j:.4g} J")
    if joined.energy_per_step_j is not None:
        parts.append(f"{joined.energy_per_step_j:.4g} J per step")
    if joined.energy_per_token_j is not None:
        parts.append(f"{joined.energy_per_token_j * 1e3:.4g} mJ per token (productive)")
    if joined.energy_per_token_all_in_j is not None:
        parts.append(f"{joined.energy_per_token_all_in_j * 1e3:.4g} mJ per token (all in)")
    if joined.productive_busy_ratio is not None:
        parts.append(
            f"GPUs {format_percent(joined.productive_busy_ratio)} busy ({joined.busy_counter}) "
            "while productive"
        )
    if joined.productive_process_cpu_cores is not None:
        parts.append(f"job CPU {joined.productive_process_cpu_cores:.2f} cores while productive")
    if joined.productive_cpu_util_ratio is not None:
        parts.append(f"host CPU {format_percent(joined.productive_cpu_util_ratio)} while productive")
    parts.append(f"samples cover {format_percent(joined.coverage_ratio)} of the run")
    return "; ".join(parts)


def render_counter_ledger(joined: CounterLedger, console: Console | None = None) -> None:
    """The counters of each ledger bucket, and the headline energy and activity figures."""
    out = console or make_console()
    render_table(
        f"Counters per ledger bucket ({joined.num_gpus} GPU(s), {len(joined.steps)} steps joined)",
        ("bucket", "time", "share", *_COUNTER_HEADERS),
        counter_ledger_rows(joined),
        console=out,
        caption="GPU busy: SM active when DCGM sampled it, else NVML utilisation; means are time-weighted",
    )
    out.print(escape(counter_headline(joined)))
    for note in joined.notes:
        out.print(f"[yellow]note:[/] {escape(note)}")


NO_FINDINGS_REASON = "no rule fired (thresholds: lightspeed.monitor.Thresholds)."


def monitor_notes(report: MonitorReport) -> list[str]:
    """Every note the terminal view of a monitor run prints, in its order: per capture (device and
    counter), of the joined ledger, of the run, of the rules (e.g. host rules that need steps)."""
    notes = []
    if report.run is not None and report.run.sampling_error:
        notes.append(f"sampling stopped before the command ended: {report.run.sampling_error}")
    notes.extend(
        f"{f'{note.device} {note.metric}'.strip() or 'monitor'}: {note.text}"
        for capture in report.captures
        for note in capture.notes
    )
    notes.extend(report.joined.notes if report.joined is not None else ())
    notes.extend(report.notes)
    notes.extend(report.diagnosis.notes)
    return list(dict.fromkeys(notes))


def render_findings(diagnosis: Diagnosis, console: Console | None = None) -> None:
    """Each finding with its evidence, or that no rule fired."""
    out = console or make_console()
    if not diagnosis.findings:
        out.print(f"[green]No findings[/]: {NO_FINDINGS_REASON}")
    for finding in diagnosis.findings:
        out.print(f"[bold red]finding[/] [bold]{escape(finding.rule)}[/]: {escape(finding.message)}")
        for evidence in finding.evidence:
            out.print(f"    evidence: {escape(evidence_text(evidence))}")
        out.print(f"    try: {escape(finding.fix)}")
    for note in diagnosis.notes:
        out.print(f"[yellow]note:[/] {escape(note)}")


def evidence_text(evidence: Any) -> str:
    """``counter on device over t=a..b s (scope): observed (vs threshold)``; the scope says when
    the value covers only part of the window (one bucket's stretches)."""
    observed = _evidence_value(evidence.observed, evidence.unit)
    window = f"t={evidence.window_start_s:.1f}..{evidence.window_end_s:.1f} s"
    if getattr(evidence, "scope", ""):
        window += f" ({evidence.scope})"
    text = f"{evidence.counter} on {evidence.device} over {window}: {observed}"
    if evidence.comparison != "info":
        text += f" ({evidence.comparison} threshold {_evidence_value(evidence.threshold, evidence.unit)})"
    return text


def _evidence_value(value: float, unit: str) -> str:
    if not math.isfinite(value):
        return "-"
    if unit == "ratio":
        return format_percent(value)
    if unit == "s":
        return format_duration(value)
    if unit == "Hz":
        return f"{value / 1e6:.0f} MHz"
    if unit == "bitmask":
        return format_percent(value)  # the share of samples with a reason set
    return f"{value:.4g} {unit}".strip()


def summary_rows(summaries: Sequence[MetricSummary]) -> list[tuple[str, ...]]:
    """One row per device and counter: samples, then mean, min, max, last by the counter's kind
    (a cumulative counter's increase in the mean column, a bitmask's union of bits and the share
    of the time with any set)."""
    return [
        (
            summary.device,
            summary.metric,
            str(summary.num_samples),
            _summary_mean(summary),
            format_metric(summary.metric, summary.minimum),
            format_metric(summary.metric, summary.maximum),
            format_metric(summary.metric, summary.last),
        )
        for summary in summaries
        if summary.num_samples
    ]


def _summary_mean(summary: MetricSummary) -> str:
    if summary.kind == "counter":
        increase = format_metric(summary.metric, summary.increase)
        return "-" if increase == "-" else f"+{increase}"
    if summary.kind == "bitmask":
        if summary.bits_set is None:
            return "-"
        share = format_percent(summary.set_ratio) if summary.set_ratio is not None else "-"
        return f"{format_metric(summary.metric, summary.bits_set)} ({share} set)"
    return format_metric(summary.metric, summary.mean)


SUMMARY_CAPTION: Final = (
    "mean: time-weighted; a cumulative counter (energy) shows its increase over the capture (+), "
    "a bitmask (clock event reasons) every bit set and the share of the time a reason that slows a "
    "busy GPU was set (not GPU idle)"
)


def _backends_line(report: MonitorReport) -> str:
    """The backends that sampled (from the captures' headers), else those the run asked for."""
    opened = list(dict.fromkeys(name for capture in report.captures for name in capture.backends))
    if opened:
        return ", ".join(opened)
    return ", ".join(report.run.backends) if report.run is not None else "-"


def render_monitor_report(report: MonitorReport, console: Console | None = None) -> None:
    """Everything ``monitor report`` prints: the run, counter summaries, the joined ledger, findings."""
    out = console or make_console()
    out.print(f"[bold]Monitor run {escape(report.path)}[/]")
    if report.run is not None:
        run = report.run
        out.print(
            escape(
                f"command: {' '.join(run.command)}  exit code {run.exit_code}  "
                f"wall {format_duration(run.end_epoch_s - run.start_epoch_s)}  "
                f"interval {format_duration(run.interval_s)}  backends {_backends_line(report)}"
            )
        )
        if run.forwarded_signals or run.signal_name:
            out.print(escape(f"stopped: {run.stop_reason}"))
        if run.sampling_error:
            out.print(
                "[yellow]note:[/] "
                + escape(f"sampling stopped before the command ended: {run.sampling_error}")
            )
    for capture in report.captures:
        devices = ", ".join(f"{d.device_id} ({d.name})" for d in capture.devices)
        out.print(
            escape(
                f"capture {Path(capture.path).name}: {capture.num_samples} samples over "
                f"{format_duration(capture.duration_s)}, {capture.num_late} late; devices {devices}"
            )
        )
    render_table(
        "Counters over the whole capture",
        ("device", "counter", "samples", "mean", "min", "max", "last"),
        summary_rows(report.summaries),
        right_align_from=2,
        console=out,
        caption=SUMMARY_CAPTION,
    )
    said = [note for capture in report.captures for note in capture.notes]
    for note in said:
        where = f"{note.device} {note.metric}".strip() or "monitor"
        out.print(f"[yellow]note:[/] {escape(where)}: {escape(note.text)}")
    if report.joined is not None:
        out.print(f"joined to goodput run {escape(str(report.goodput_run))}")
        render_counter_ledger(report.joined, out)
    for text in report.notes:
        out.print(f"[yellow]note:[/] {escape(text)}")
    render_findings(report.diagnosis, out)


# -- the live view -------------------------------------------------------------------

WATCHED: Final[dict[str, str]] = {  # counter -> column title of the live view
    "gpu_util_ratio": "GPU util",
    "sm_active_ratio": "SM active",
    "sm_clock_hz": "SM clock",
    "power_w": "power",
    "temperature_celsius": "temp (C)",
    "memory_used_bytes": "memory",
    "nvlink_tx_bytes_per_s": "NVLink tx",
    "pcie_tx_bytes_per_s": "PCIe tx",
    "clock_event_reasons": "clock reasons",
    "cpu_util_ratio": "CPU",
    "host_memory_used_bytes": "memory",
    "net_rx_bytes_per_s": "net rx",
    "disk_write_bytes_per_s": "disk write",
}


def watch_table(devices: Sequence[DeviceInfo], sample: Sample | None, *, title: str = "") -> RichTable:
    """One refresh of ``monitor watch``: a row per device, a column per counter it reports."""
    reading: Mapping[str, Mapping[str, float | None]] = sample.reading if sample is not None else {}
    shown = [m for m in WATCHED if any(reading.get(d.device_id, {}).get(m) is not None for d in devices)]
    table = RichTable(title=title or None, title_justify="left")
    table.add_column("device")
    table.add_column("name")
    for metric in shown:
        table.add_column(WATCHED[metric], justify="right")
    for device in devices:
        values = reading.get(device.device_id, {})
        table.add_row(
            device.device_id, escape(device.name), *(format_metric(m, values.get(m)) for m in shown)
        )
    return table


# -- plots -----------------------------------------------------------------------------


def monitor_counters_figure(report: MonitorReport) -> Figure:
    """Counters over time, one panel per counter sampled, with the ledger's buckets shaded behind."""
    panels = [
        (metric, label, scale)
        for metric, label, scale in PLOTTED
        if any(
            capture.values(d.device_id, metric) is not None
            for capture in report.captures
            for d in capture.devices
        )
    ] or [("cpu_util_ratio", "host CPU (%)", 100.0)]
    figure, axes = new_figure_grid(len(panels), width_in=10.0, height_per_row_in=1.8)
    origin = min(capture.start_epoch_s for capture in report.captures)
    for axis, (metric, label, scale) in zip(axes, panels, strict=True):
        _shade(axis, report.joined, origin)
        index = 0
        for capture in report.captures:
            shift = capture.start_epoch_s - origin
            for device in capture.devices:
                values = capture.values(device.device_id, metric)
                if values is None:
                    continue
                axis.step(
                    capture.times_s + shift,
                    values * scale,
                    where="pre",
                    linewidth=1.0,
                    color=series_color(index),
                    label=plain_text(device.device_id),
                )
                index += 1
        axis.set_ylabel(label, fontsize=8)
        if index > 1:
            axis.legend(loc="upper right", fontsize=7)
    axes[-1].set_xlabel("seconds since the capture started")
    title = "Counters over time"
    if report.joined is not None:
        title += f" with the goodput run's buckets ({len(report.joined.steps)} steps)"
    axes[0].set_title(title)
    if report.joined is not None:
        from matplotlib.patches import Patch

        buckets = dict.fromkeys(bucket for bucket, _, _ in report.joined.timeline if bucket != "other")
        shading = [
            Patch(color=category_color(bucket), alpha=0.3, label=bucket.replace("_", " "))
            for bucket in buckets
        ]
        figure.legend(
            handles=shading, loc="lower center", ncol=min(6, len(shading) or 1), fontsize=7, frameon=False
        )
    return figure


def _shade(axis: Any, joined: CounterLedger | None, origin: float) -> None:
    if joined is None:
        return
    shift = joined.origin_epoch_s - origin
    for bucket, start, end in joined.timeline:
        if bucket == "other":
            continue
        axis.axvspan(
            start + shift,
            end + shift,
            color=category_color(bucket),
            alpha=0.12 if bucket == "productive" else 0.22,
            linewidth=0,
        )
    starts = (
        [step.start_s + shift for step in joined.steps if step.rank == joined.steps[0].rank]
        if joined.steps
        else []
    )
    if 0 < len(starts) <= MAX_STEP_TICKS:
        axis.vlines(
            starts,
            0,
            0.04,
            transform=axis.get_xaxis_transform(),
            color=category_color("productive"),
            linewidth=0.6,
        )


def save_monitor_plot(figure: Figure | None, path: Path) -> list[Path]:
    """Write ``figure`` to ``path`` (.png, .svg or .pdf; no suffix writes PNG and SVG; a folder
    gets ``monitor.<format>`` inside it). ``figure=None`` draws nothing: it checks that the plot
    can be written there (the suffix, a writable folder) and returns the files it would be, so
    that ``monitor run`` can refuse a bad ``--plot`` before the command starts."""
    stem, formats = plot_paths(path, name="monitor", default_formats=("png", "svg"))
    if figure is None:
        return check_plot_targets(stem, formats)
    return save_figure(figure, stem, formats)


# -- the HTML report -------------------------------------------------------------------


def monitor_section(reports: Sequence[MonitorReport]) -> ReportSection:
    """The HTML section: per run, counters over time, counters per bucket and the findings."""
    charts, tables, lines = [], [], []
    for index, report in enumerate(reports):
        label = Path(report.path).name
        charts.append(
            chart_from_figure(
                monitor_counters_figure(report), name=f"counters-{index + 1}", title=f"counters of {label}"
            )
        )
        if report.joined is not None:
            tables.append(
                Table(
                    headers=("bucket", "time", "share", *_COUNTER_HEADERS),
                    rows=tuple(counter_ledger_rows(report.joined)),
                    caption=f"{label}: counters per ledger bucket",
                )
            )
            lines.append(f"{label}: {counter_headline(report.joined)}")
        rows = tuple(
            (
                finding.rule,
                finding.message,
                "; ".join(evidence_text(e) for e in finding.evidence),
                finding.fix,
            )
            for finding in report.findings
        )
        if rows:
            tables.append(
                Table(headers=("rule", "finding", "evidence", "try"), rows=rows, caption=f"{label}: findings")
            )
            lines.append(
                f"{label}: {len(report.findings)} finding(s)"
                + "".join(f"; {f.title}" for f in report.findings)
            )
        else:
            lines.append(f"{label}: no findings: {NO_FINDINGS_REASON}")
        lines.extend(f"{label}: note: {note}" for note in monitor_notes(report))
    return ReportSection(
        key="monitor",
        title="Monitoring: counters beside the steps, and what they say",
        paragraphs=tuple(lines),
        charts=tuple(charts),
        tables=tuple(tables),
    )


def finding_lines(findings: Sequence[Finding]) -> list[str]:
    """One line per finding (for summaries)."""
    return [f"{finding.rule}: {finding.title}" for finding in findings]
