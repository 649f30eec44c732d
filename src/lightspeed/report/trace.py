"""Trace analysis tables, the temporal-breakdown-per-rank chart, and the summary JSON contract.

Kernel and op names come from traces (untrusted): they are escaped before
rich renders them (``[...]`` would otherwise be read as markup) and the HTML
report escapes every table cell it writes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lightspeed.records import JsonDict
from lightspeed.report.plots import add_legend, new_figure, plot_paths, save_figure
from lightspeed.units import format_bytes, format_bytes_per_s, format_duration, format_flop_per_s

if TYPE_CHECKING:  # the reports are only named here: each analysis loads when its command runs
    from matplotlib.figure import Figure
    from rich.console import Console

    from lightspeed.report.html import ReportSection
    from lightspeed.trace import (
        CommsReport,
        IdleReport,
        KernelReport,
        LaunchReport,
        RankSummary,
        StragglerReport,
        TraceDiff,
        TraceSummary,
    )
    from lightspeed.trace.cache import CacheInfo

US_PER_S = 1e6


# rich is loaded when a table is drawn, not for --json (a cached `trace summary --json` is mostly
# start-up: issue 30)
def _escape(text: str) -> str:
    """``text`` with rich markup escaped."""
    from rich.markup import escape as rich_escape

    return rich_escape(text)


def _console() -> Console:
    """The console tables are drawn on (:func:`lightspeed.report.console.make_console`)."""
    from lightspeed.report.console import make_console as console_of

    return console_of()


def _render_table(*args: Any, **kwargs: Any) -> None:
    """:func:`lightspeed.report.console.render_table`, loaded on first use."""
    from lightspeed.report.console import render_table as draw

    draw(*args, **kwargs)


def breakdown_parts() -> tuple[tuple[str, str, str], ...]:
    """(label, field, color) of each bar of the temporal breakdown chart.

    A function, not a module constant: the palette imports the training engine (~0.3 s), which
    every ``trace`` command would pay at start-up for a chart it rarely draws.
    """
    from lightspeed.report.palette import category_color

    return (
        ("compute", "compute_pct", category_color("compute")),
        ("non-compute (communication, memory)", "non_compute_pct", category_color("communication")),
        ("idle", "idle_pct", category_color("idle")),
    )


def _pct(value: float) -> str:
    return "-" if not math.isfinite(value) else f"{value:.2f}%"


def _time(value_s: float) -> str:
    return "-" if not math.isfinite(value_s) else format_duration(value_s)


def _us(value_s: float) -> float | None:
    """Seconds to microseconds, to the nanosecond (no float noise such as 21636.000000000004)."""
    return round(value_s * US_PER_S, 3) if math.isfinite(value_s) else None


def _number(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _name(name: str, full: bool, short: str = "") -> str:
    """A kernel's name as a table shows it: whole with ``--full-names``, else its ``short`` label
    (kept apart from other kernels' by the analysis), else shortened here."""
    from lightspeed.trace.kernels import shorten_name  # loaded by the tables that show kernel names

    return _escape(name if full else short or shorten_name(name))


def _caption(partial: bool, notes: Sequence[str], extra: str = "") -> str | None:
    lines = [extra] if extra else []
    if partial:
        lines.append("PARTIAL: some ranks or values are missing (see notes)")
    lines.extend(f"note: {note}" for note in dict.fromkeys(notes))
    return _escape("\n".join(lines)) if lines else None


# --- summary -------------------------------------------------------------------------------------


def trace_summary_json(summary: TraceSummary) -> list[JsonDict]:
    """The ``trace summary --json`` payload: one object per rank (times in us, shares in %).

    Keys of the contract: rank, idle_pct, compute_pct, non_compute_pct,
    idle_us, compute_us, non_compute_us, comm_comp_overlap_pct (percentages
    of the kernel span, as HTA). Further keys: kernel_span_us, device_name,
    accelerator, partial, notes, kind_overlaps, steps, sol.
    """
    return [_rank_json(rank, summary) for rank in summary.ranks]


def _rank_json(rank: RankSummary, summary: TraceSummary) -> JsonDict:
    return {
        "rank": rank.rank,
        "idle_pct": _number(rank.idle_pct),
        "compute_pct": _number(rank.compute_pct),
        "non_compute_pct": _number(rank.non_compute_pct),
        "idle_us": _us(rank.idle_s),
        "compute_us": _us(rank.compute_s),
        "non_compute_us": _us(rank.non_compute_s),
        "comm_comp_overlap_pct": _number(rank.comm_comp_overlap_pct),
        "kernel_span_us": _us(rank.kernel_span_s),
        "device_name": rank.device_name,
        "accelerator": rank.accelerator,
        "partial": rank.partial,
        "last_step_excluded": summary.last_step_excluded,
        "notes": list(rank.notes),
        "kind_overlaps": [
            {"kinds": list(row.kinds), "time_us": _us(row.time_s), "share_pct": _number(row.share_pct)}
            for row in rank.kind_overlaps
        ],
        "steps": [
            {
                "step": step.step,
                "cpu_us": _us(step.cpu_s),
                "gpu_busy_us": _us(step.gpu_busy_s),
                "compute_us": _us(step.compute_s),
                "communication_us": _us(step.communication_s),
                "memory_us": _us(step.memory_s),
                "counted": step.counted,
            }
            for step in rank.steps
        ],
        "sol": {
            "flop": _number(rank.flop),
            "achieved_flop_per_s": _number(rank.achieved_flop_per_s),
            "peak_flop_per_s": _number(rank.peak_flop_per_s),
            "sol_pct": _number(rank.sol_pct),
            "peak_precision": None if rank.peak_precision is None else f"dense {rank.peak_precision}",
            "above_sol": rank.above_sol,
        },
    }


def render_trace_summary(summary: TraceSummary, console: Console | None = None) -> None:
    """Print the temporal breakdown, kind overlaps and step times of every rank."""
    out = console or _console()
    _render_table(
        "Temporal breakdown per rank (% of the kernel span, HTA definitions)",
        (
            "rank",
            "device",
            "GPU events",
            "kernel span",
            "idle",
            "compute",
            "non-compute",
            "comm/comp overlap",
            "SOL",
        ),
        [
            (
                str(r.rank),
                _escape(r.device_name or "-"),
                str(r.num_gpu_events),
                _time(r.kernel_span_s),
                _pct(r.idle_pct),
                _pct(r.compute_pct),
                _pct(r.non_compute_pct),
                _pct(r.comm_comp_overlap_pct),
                _sol_cell(r),
            )
            for r in summary.ranks
        ],
        right_align_from=2,
        console=out,
        caption=_caption(
            summary.partial,
            summary.notes,
            "last profiler step left out (as HTA); --include-last-step keeps it"
            if summary.last_step_excluded
            else "",
        ),
    )
    rows = [
        (str(r.rank), " + ".join(k.kinds), _time(k.time_s), _pct(k.share_pct))
        for r in summary.ranks
        for k in r.kind_overlaps
    ]
    if rows:
        _render_table(
            "GPU time by kernel kind and overlap",
            ("rank", "kinds running", "time", "share"),
            rows,
            console=out,
        )
    _render_steps(summary, out)


def _sol_cell(rank: RankSummary) -> str:
    """The SOL column of ``trace summary`` (rich markup escaped)."""
    return _escape(sol_text(rank))


def sol_text(rank: RankSummary) -> str:
    """The SOL column of a rank, as plain text (the table and the HTML report show the same)."""
    if rank.accelerator is None:
        return "no SOL for " + (rank.device_name or "unnamed device")
    if math.isfinite(rank.sol_pct):
        above = " (above SOL)" if rank.above_sol else ""
        return (
            f"{format_flop_per_s(rank.achieved_flop_per_s)} = {rank.sol_pct:.1f}% of {rank.accelerator} "
            f"dense {rank.peak_precision}{above}"
        )
    return f"{rank.accelerator} (no FLOP counts in trace)"


def _render_steps(summary: TraceSummary, out: Console) -> None:
    rows = [
        (
            str(r.rank),
            str(s.step),
            _time(s.cpu_s),
            _time(s.gpu_busy_s),
            _time(s.compute_s),
            _time(s.communication_s),
            _time(s.memory_s),
            "yes" if s.counted else "no (last step)",
        )
        for r in summary.ranks
        for s in r.steps
    ]
    if rows:
        _render_table(
            "Profiler steps",
            ("rank", "step", "CPU time", "GPU busy", "compute", "communication", "memory", "counted"),
            rows,
            console=out,
        )


def temporal_breakdown_figure(summary: TraceSummary) -> Figure:
    """Stacked bars per rank: compute, non-compute and idle as % of the kernel span."""
    ranks = [r for r in summary.ranks if not r.partial]
    figure, axes = new_figure(max(6.0, min(16.0, 2.0 + 0.4 * len(ranks))), 4.5)
    positions = list(range(len(ranks)))
    bottoms = [0.0] * len(ranks)
    for label, field, color in breakdown_parts():
        values = [getattr(r, field) for r in ranks]
        axes.bar(positions, values, bottom=bottoms, color=color, label=label, width=0.7)
        bottoms = [b + v for b, v in zip(bottoms, values, strict=True)]
    shown = rank_ticks(len(ranks))
    axes.set_xticks(shown, [str(ranks[index].rank) for index in shown])
    axes.set_xlabel(
        "rank" if len(shown) == len(ranks) else f"rank (one label every {shown[1] - shown[0]} ranks)"
    )
    axes.set_ylabel("% of kernel span")
    axes.set_ylim(0, 100)
    axes.set_title("Temporal breakdown per rank")
    add_legend(axes, loc="upper center", bbox_to_anchor=(0.5, -0.15), ncol=3, frameon=False)
    return figure


MAX_RANK_LABELS = 32  # tick labels on the per-rank chart; past it, every k-th rank is labelled


def rank_ticks(num_ranks: int, max_labels: int = MAX_RANK_LABELS) -> list[int]:
    """The bar positions that get a tick label: all of them up to ``max_labels``, else every k-th
    (a round step: 1, 2, 5, 10, 20, 50 ...) from the first.

    >>> rank_ticks(4), rank_ticks(256)[:3], len(rank_ticks(256))
    ([0, 1, 2, 3], [0, 10, 20], 26)
    """
    if num_ranks <= max_labels:
        return list(range(num_ranks))
    needed = math.ceil(num_ranks / max_labels)
    step = next(m * 10**e for e in range(19) for m in (1, 2, 5) if m * 10**e >= needed)
    return list(range(0, num_ranks, step))


def save_temporal_breakdown(summary: TraceSummary, path: Path) -> list[Path]:
    """Write the temporal breakdown chart; a suffix picks one format, none writes .png and .svg."""
    stem, formats = plot_paths(path, name="trace-breakdown", default_formats=("png", "svg"))
    return save_figure(temporal_breakdown_figure(summary), stem, formats)


LAST_STEP_NOTE = "last profiler step left out (as HTA); --include-last-step keeps it"


def trace_section(summary: TraceSummary, *, label: str = "", num_skipped_events: int = 0) -> ReportSection:
    """The HTML report's trace section: the per-rank chart and the breakdown table, with the notes
    ``trace summary`` prints (the last step left out, events skipped by ``--skip-bad-events``)."""
    from lightspeed.report.html import ReportSection, Table, chart_from_figure  # jinja2: only for HTML

    rows = tuple(
        (
            str(r.rank),
            r.device_name or "-",
            _time(r.kernel_span_s),
            _pct(r.idle_pct),
            _pct(r.compute_pct),
            _pct(r.non_compute_pct),
            _pct(r.comm_comp_overlap_pct),
            str(r.num_gpu_events),
            sol_text(r),
        )
        for r in summary.ranks
    )
    table = Table(
        headers=(
            "rank",
            "device",
            "kernel span",
            "idle",
            "compute",
            "non-compute",
            "comm/comp overlap",
            "GPU events",
            "SOL",
        ),
        rows=rows,
        caption="% of the kernel span (HTA definitions)" + ("; PARTIAL" if summary.partial else ""),
    )
    chart = chart_from_figure(
        temporal_breakdown_figure(summary), name="trace-breakdown", title=label or "trace"
    )
    notes = [LAST_STEP_NOTE] if summary.last_step_excluded else []
    notes.extend(summary.notes)
    if num_skipped_events and not any("--skip-bad-events" in note for note in notes):
        notes.append(f"{num_skipped_events:,} impossible event(s) skipped (--skip-bad-events)")
    return ReportSection(
        key="trace",
        title="Trace temporal breakdown per rank",
        paragraphs=tuple(dict.fromkeys(notes)),
        tables=(table,),
        charts=(chart,),
    )


# --- other analyses -----------------------------------------------------------------------------


def render_trace_kernels(
    report: KernelReport, *, full_names: bool = False, console: Console | None = None
) -> None:
    """Print the top kernels of each kind."""
    _render_table(
        f"Top {report.top} kernels by total time, per kind",
        ("rank", "kind", "kernel", "count", "total", "share of kind", "mean", "min", "median", "max"),
        [
            (
                "all" if k.rank is None else str(k.rank),
                k.kind,
                _name(k.name, full_names, k.short_name),
                str(k.count),
                _time(k.total_s),
                _pct(k.share_of_kind_pct),
                _time(k.mean_s),
                _time(k.min_s),
                _time(k.median_s),
                _time(k.max_s),
            )
            for k in report.kernels
        ],
        right_align_from=3,
        console=console,
        whole=(2,),
        caption=_caption(False, report.notes),
    )


def render_trace_idle(report: IdleReport, *, per_stream: bool = True, console: Console | None = None) -> None:
    """Print idle time split into host wait, kernel wait and other (per rank, then per stream)."""
    out = console or _console()
    headers = ("rank", "stream", "idle", "host wait", "kernel wait", "other", "gaps")
    threshold = (
        f"kernel wait: gaps under {format_duration(report.kernel_wait_threshold_s)} between launched kernels"
    )
    _render_table(
        "GPU idle time per rank (all streams)",
        headers,
        [_idle_row(split) for split in report.ranks],
        right_align_from=2,
        console=out,
        caption=_caption(report.partial, report.notes, threshold),
    )
    if per_stream and report.streams:
        _render_table(
            "Idle time per stream (as HTA)", headers, [_idle_row(s) for s in report.streams], console=out
        )


def _idle_row(split: Any) -> tuple[str, ...]:
    def share(part_s: float) -> str:
        return f"{_time(part_s)} ({100 * part_s / split.idle_s:.1f}%)" if split.idle_s > 0 else _time(part_s)

    return (
        str(split.rank),
        "all" if split.stream is None else str(split.stream),
        _time(split.idle_s),
        share(split.host_wait_s),
        share(split.kernel_wait_s),
        share(split.other_s),
        str(split.num_gaps),
    )


def render_trace_launch(report: LaunchReport, console: Console | None = None) -> None:
    """Print launch delay, runtime call and GPU duration statistics per rank."""
    out = console or _console()
    rows = []
    for r in report.ranks:
        for label, dist in (
            ("launch delay", r.launch_delay),
            ("runtime call", r.runtime),
            ("GPU time", r.gpu_duration),
        ):
            rows.append(
                (
                    str(r.rank),
                    label,
                    str(dist.count),
                    _time(dist.mean_s),
                    _time(dist.median_s),
                    _time(dist.p95_s),
                    _time(dist.max_s),
                )
            )
    _render_table(
        "GPU event launches " + ("(kernels, copies, memsets)" if report.include_memory else "(kernels)"),
        ("rank", "quantity", "count", "mean", "median", "p95", "max"),
        rows,
        right_align_from=2,
        console=out,
        caption=_caption(False, report.notes),
    )
    _render_table(
        "Launch outliers and short GPU events",
        (
            "rank",
            f"runtime > {format_duration(report.runtime_cutoff_s)}",
            f"delay > {format_duration(report.launch_delay_cutoff_s)}",
            "GPU shorter than its launch",
            f"GPU events < {format_duration(report.short_kernel_s)}",
        ),
        [
            (
                str(r.rank),
                str(r.num_runtime_over_cutoff),
                str(r.num_launch_delay_over_cutoff),
                str(r.num_gpu_shorter_than_launch),
                str(r.num_short_kernels),
            )
            for r in report.ranks
        ],
        console=out,
    )


def render_trace_comms(report: CommsReport, *, calls: bool = False, console: Console | None = None) -> None:
    """Print collectives grouped by kind and size (and each call with ``calls``)."""
    out = console or _console()
    sol = f"SOL: {report.sol_source}" if report.sol_source else _no_sol(report.device_names)
    sol += "\nalgbw = size / median time; busbw = algbw x nccl-tests' factor; % of SOL = busbw / SOL"
    _render_table(
        "Collectives (busbw as nccl-tests)",
        ("collective", "size", "ranks", "calls", "total", "median time", "algbw", "busbw", "% of SOL"),
        [
            (
                _escape(g.collective),
                _bytes(g.size_bytes),
                "-" if g.group_size is None else str(g.group_size),
                str(g.count),
                _time(g.total_duration_s),
                _time(g.median_duration_s),
                _rate(g.median_algbw_bytes_per_s),
                _rate(g.median_busbw_bytes_per_s),
                _pct(g.busbw_sol_pct),
            )
            for g in report.groups
        ],
        right_align_from=1,
        console=out,
        caption=_caption(report.partial, report.notes, sol),
    )
    if calls and report.calls:
        _render_table(
            "Every collective call",
            ("rank", "step", "collective", "size", "start", "time", "busbw", "% of SOL", "size from"),
            [
                (
                    str(c.rank),
                    str(c.step),
                    _escape(c.collective),
                    _bytes(c.size_bytes),
                    _time(c.start_s),
                    _time(c.duration_s),
                    _rate(c.busbw_bytes_per_s),
                    _pct(c.busbw_sol_pct),
                    c.size_source,
                )
                for c in report.calls
            ],
            console=out,
        )


def _no_sol(device_names: Sequence[str]) -> str:
    """Why the collectives have no SOL, and what to pass."""
    if not device_names:
        return (
            "SOL: none (the trace names no device: pass --device NAME, e.g. --device h100, "
            "or --link NIC / --link-bandwidth)"
        )
    names = ", ".join(device_names)
    return f"SOL: none ({names} not in the catalog: pass --device NAME, or --link NIC / --link-bandwidth)"


def _bytes(value: float) -> str:
    return "-" if not math.isfinite(value) else format_bytes(value)


def _rate(value: float) -> str:
    return "-" if not math.isfinite(value) else format_bytes_per_s(value)


def render_trace_stragglers(report: StragglerReport, console: Console | None = None) -> None:
    """Print each rank's lateness at collectives, per rank and per step."""
    out = console or _console()
    _render_table(
        "Lateness at collectives per rank (latest first)",
        ("rank", "total lateness", "mean per step", "steps", "steps as straggler"),
        [
            (
                str(r.rank),
                _time(r.total_lateness_s),
                _time(r.mean_lateness_per_step_s),
                str(r.num_steps),
                str(r.num_steps_straggler),
            )
            for r in report.ranks
        ],
        console=out,
        caption=_caption(
            report.partial,
            report.notes,
            f"{report.num_matched_collectives} collectives matched on every rank"
            + (
                f" ({report.num_mismatched_collectives} more left out: not the same call on every rank)"
                if report.num_mismatched_collectives
                else ""
            )
            + "; lateness = longest duration among ranks - this rank's duration",
        ),
    )
    _render_table(
        "Per step",
        ("step", "rank", "lateness", "largest at one collective", "collectives", "straggler"),
        [
            (
                str(s.step),
                str(s.rank),
                _time(s.lateness_s),
                _time(s.max_lateness_s),
                str(s.num_collectives),
                "<- straggler" if s.is_straggler else "",
            )
            for s in report.steps
        ],
        console=out,
    )


def render_trace_diff(diff: TraceDiff, *, full_names: bool = False, console: Console | None = None) -> None:
    """Print what got slower or faster from A to B, with the per-step test."""
    _render_table(
        "B against A, per-step samples (Mann-Whitney U, Benjamini-Hochberg adjusted)",
        (
            "metric",
            "kind",
            "steps A/B",
            "median A",
            "median B",
            "change",
            "shift",
            "effect",
            "p",
            "q",
            "verdict",
        ),
        [
            (
                _name(row.metric, full_names, row.short_name)
                if row.kind.startswith("kernel")
                else row.metric,
                row.kind,
                f"{row.num_a}/{row.num_b}",
                _time(row.median_a_s),
                _time(row.median_b_s),
                "-" if not math.isfinite(row.change_pct) else f"{row.change_pct:+.1f}%",
                "-"
                if not math.isfinite(row.shift_s)
                else ("+" if row.shift_s > 0 else "") + format_duration(row.shift_s),
                "-" if not math.isfinite(row.effect_size) else f"{row.effect_size:+.2f}",
                "-" if not math.isfinite(row.p_value) else f"{row.p_value:.3g}",
                "-" if not math.isfinite(row.q_value) else f"{row.q_value:.3g}",
                row.verdict,
            )
            for row in diff.rows
        ],
        right_align_from=2,
        console=console,
        whole=(0,),
        caption=_caption(
            False,
            diff.notes,
            f"alpha {diff.alpha}; effect = rank-biserial correlation (+1: B always larger); "
            "shift = Hodges-Lehmann estimate of B - A",
        ),
    )


def render_trace_cache(info: CacheInfo, *, cleared: bool, console: Console | None = None) -> None:
    """Print where the trace cache is and what it holds (or held, when ``cleared``)."""
    out = console or _console()
    verb = "cleared" if cleared else "holds"
    out.print(
        f"trace cache {_escape(info.folder)} {verb} {info.num_entries} "
        f"entr{'y' if info.num_entries == 1 else 'ies'}, {format_bytes(info.total_bytes)} "
        f"(limit {format_bytes(info.max_bytes)}; LIGHTSPEED_TRACE_CACHE_MAX_BYTES)",
        highlight=False,
    )
