"""Goodput tables and charts: the ledger, its waterfall, and checkpoint planning."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

from lightspeed.goodput import BUCKETS, CheckpointPlan, Ledger
from lightspeed.report.console import make_console, plain, render_table
from lightspeed.report.palette import category_color
from lightspeed.report.plots import add_legend, new_figure, plot_paths, save_figure
from lightspeed.units import format_count, format_duration, format_flop_per_s, format_percent

if TYPE_CHECKING:
    from matplotlib.figure import Figure

_LABELS = {
    "productive": "productive steps",
    "init": "init",
    "startup": "startup (first-step excess)",
    "data_stall": "data stall",
    "checkpoint_save": "checkpoint save",
    "checkpoint_restore": "checkpoint restore",
    "eval": "evaluation",
    "wasted_progress": "wasted progress (redone steps)",
    "recovery": "recovery (between segments)",
    "custom": "custom badput",
    "other": "other (untimed)",
}


def _optional(value: float | None, render: Any) -> str:
    return "-" if value is None else str(render(value))


def render_ledgers(ledgers: Sequence[Ledger], console: Console | None = None) -> None:
    """Print each ledger (headline, buckets, steps, segments, ranks, notes)."""
    out = console or make_console()
    for index, ledger in enumerate(ledgers):
        if index:
            out.print()
        render_ledger(ledger, out)


def render_ledger(ledger: Ledger, console: Console | None = None) -> None:
    """Print one ledger."""
    out = console or make_console()
    partial = " [bold red](partial)[/]" if ledger.partial else ""
    out.print(f"[bold]Goodput of {plain(ledger.path)}[/]{partial}  run {plain(ledger.run_id)}")
    out.print(plain(goodput_headline(ledger)))
    render_table(
        "Where the wall time went",
        ("bucket", "time", "share"),
        bucket_rows(ledger),
        console=out,
        caption="buckets sum to the wall time; goodput = productive share",
    )
    _render_steps(ledger, out)
    if len(ledger.segments) > 1:
        render_table(
            "Job segments (restarts)",
            ("#", "start", "end", "status", "steps", "first", "last", "wasted"),
            [
                (
                    str(view.index),
                    format_duration(view.start_s),
                    format_duration(view.end_s),
                    view.status,
                    str(view.num_steps),
                    _optional(view.first_step, str),
                    _optional(view.last_step, str),
                    str(view.num_wasted_steps),
                )
                for view in ledger.segments
            ],
            console=out,
        )
    if len(ledger.ranks) > 1:
        _render_ranks(ledger, out)
    for note in ledger_notes(ledger):
        out.print(f"[yellow]note:[/] {plain(note)}")


def ledger_notes(ledger: Ledger) -> list[str]:
    """The notes under a ledger (terminal and HTML): the ledger's, and why FLOP figures are partial."""
    notes = list(ledger.notes)
    if ledger.mfu is not None and ledger.utilization.reason:
        notes.append(ledger.utilization.reason)
    return notes


def goodput_headline(ledger: Ledger) -> str:
    """``wall 1 h  goodput 90.0%  ETTR 95.0%  ...``: the ledger's headline figures (terminal and HTML)."""
    flops = ledger.utilization
    parts = [
        f"wall {format_duration(ledger.total_s)}",
        f"goodput {format_percent(ledger.goodput_fraction)}",
        f"ETTR {format_percent(ledger.ettr)}",
    ]
    if ledger.tokens_per_s is not None:
        parts.append(f"{format_count(ledger.tokens_per_s)} tokens/s")
    if ledger.efficiency is not None and ledger.sol_tokens_per_s is not None:
        parts.append(
            f"efficiency {ledger.efficiency:.3f} of {format_count(ledger.sol_tokens_per_s)} tokens/s SOL"
        )
    if ledger.mfu is not None and ledger.step_mfu is not None:
        peak = format_flop_per_s(flops.peak_flop_per_s) if flops.peak_flop_per_s else "?"
        parts.append(
            f"MFU {format_percent(ledger.mfu)} (steps {format_percent(ledger.step_mfu)})"
            + (f", HFU {format_percent(ledger.hfu)}" if ledger.hfu is not None else "")
            + f" vs {flops.num_accelerators} x {peak} {flops.precision} {flops.device or ''}".rstrip()
        )
    elif flops.reason:
        parts.append(flops.reason)
    return "  ".join(parts)


def bucket_rows(ledger: Ledger) -> list[tuple[str, str, str]]:
    """``(bucket, time, share of wall time)`` rows: productive, each badput bucket with time, a
    custom bucket's parts, and the total (terminal and HTML)."""

    def share(seconds: float) -> str:
        return format_percent(seconds / ledger.total_s) if ledger.total_s > 0 else "-"

    rows = [(_LABELS["productive"], format_duration(ledger.productive_s), share(ledger.productive_s))]
    for bucket in BUCKETS:
        seconds = ledger.badput_s[bucket]
        if abs(seconds) < 1e-9:
            continue
        rows.append((_LABELS[bucket], format_duration(seconds), share(seconds)))
        if bucket == "custom":
            rows.extend(
                (f"  {name}", format_duration(value), share(value))
                for name, value in ledger.custom_badput_s.items()
            )
    rows.append(("total", format_duration(ledger.total_s), "100.0%"))
    return rows


def _render_steps(ledger: Ledger, out: Console) -> None:
    steps = ledger.steps
    if not steps.count:
        return
    unit = steps.unit
    rows = [
        ("count", str(steps.count)),
        ("median", _optional(steps.median_s, format_duration)),
        ("p90", _optional(steps.p90_s, format_duration)),
        ("mean", _optional(steps.mean_s, format_duration)),
        ("MAD", _optional(steps.mad_s, format_duration)),
        ("ideal (mean within median + 3 MAD)", _optional(steps.ideal_s, format_duration)),
        ("mean deviation from ideal", _optional(steps.mean_deviation, format_percent)),
        ("outliers (> median + 3 MAD)", str(steps.num_outliers)),
        ("time above ideal", format_duration(steps.excess_s)),
    ]
    render_table(f"{unit.capitalize()} times", ("statistic", "value"), rows, console=out)
    if steps.outliers:
        render_table(
            f"Slowest outlier {_plural(unit)}",
            (unit, "rank", "duration", "above ideal"),
            [
                (
                    str(item.step),
                    str(item.rank),
                    format_duration(item.duration_s),
                    format_duration(item.excess_s),
                )
                for item in steps.outliers
            ],
            console=out,
        )


def _render_ranks(ledger: Ledger, out: Console) -> None:
    rows = [
        (
            str(view.rank),
            format_percent(view.goodput_fraction),
            format_count(view.tokens),
            _optional(view.median_step_s, format_duration),
            _optional(view.median_start_lag_s, format_duration),
            "yes" if view.straggler else "",
            view.reason,
        )
        for view in ledger.ranks
    ]
    render_table(
        "Per rank",
        ("rank", "goodput", "tokens", "median step", "start lag", "straggler", "why"),
        rows,
        console=out,
    )


def goodput_waterfall_figure(ledger: Ledger) -> Figure:
    """A waterfall from wall time down to productive time, one bar per badput bucket."""
    figure, axes = new_figure(9.0, 4.5)
    labels = ["wall time"]
    bottoms = [0.0]
    heights = [ledger.total_s]
    colors = [category_color("total")]
    level = ledger.total_s
    for bucket in BUCKETS:
        seconds = ledger.badput_s[bucket]
        if seconds <= 1e-9:
            continue
        level -= seconds
        labels.append(_LABELS[bucket].split(" (")[0])
        bottoms.append(level)
        heights.append(seconds)
        colors.append(category_color(bucket))
    labels.append("productive")
    bottoms.append(0.0)
    heights.append(ledger.productive_s)
    colors.append(category_color("productive"))
    positions = list(range(len(labels)))
    axes.bar(positions, heights, bottom=bottoms, color=colors)
    for position, bottom, height in zip(positions, bottoms, heights, strict=True):
        share = height / ledger.total_s if ledger.total_s > 0 else 0.0
        axes.text(position, bottom + height, format_percent(share), ha="center", va="bottom", fontsize=8)
    axes.set_xticks(positions)
    axes.set_xticklabels(labels, rotation=30, ha="right")
    axes.set_ylabel("seconds")
    axes.set_title(f"Goodput ledger: {format_percent(ledger.goodput_fraction)} of wall time is productive")
    return figure


def checkpoint_plan_figure(plan: CheckpointPlan) -> Figure:
    """Expected ETTR against the checkpoint interval, with Young, Daly and the exact optimum."""
    figure, axes = new_figure(8.0, 4.5)
    intervals = [row.interval_s for row in plan.rows]
    axes.plot(
        intervals,
        [row.ettr for row in plan.rows],
        marker="o",
        color=category_color("productive"),
        label="ETTR",
    )
    for value, label, style in (
        (plan.young_interval_s, "Young", ":"),
        (plan.daly_interval_s, "Daly", "--"),
        (plan.optimal_interval_s, "optimum", "-"),
    ):
        if value is not None and math.isfinite(value) and value > 0:
            axes.axvline(
                value,
                linestyle=style,
                color=category_color("sol"),
                linewidth=1,
                label=f"{label} {format_duration(value)}",
            )
    axes.set_xscale("log")
    axes.set_xlabel("checkpoint interval (s)")
    axes.set_ylabel("expected ETTR")
    axes.set_title(
        f"{plan.num_nodes} nodes, {plan.failures_per_node_day:.3g} failures/node-day, "
        f"write {format_duration(plan.checkpoint_write_s)}, restart {format_duration(plan.restart_s)}"
    )
    add_legend(axes, loc="lower right", fontsize=8)
    return figure


def save_goodput_plot(figure: Figure, path: Path) -> list[Path]:
    """Write ``figure`` to ``path`` (.png or .svg; no suffix writes both)."""
    stem, formats = plot_paths(path, name="goodput", default_formats=("png", "svg"))
    return save_figure(figure, stem, formats)


def _interval(value_s: float | None) -> str:
    """An interval in words: ``never`` when infinite, ``n/a`` when the rule does not apply."""
    if value_s is None:
        return "n/a"
    return "never" if math.isinf(value_s) else format_duration(value_s)


def _limit_ettr(plan: CheckpointPlan) -> float:
    """The ETTR at the optimum (100% with no failures: the limit of an ever longer interval)."""
    return 1.0 if math.isinf(plan.optimal_interval_s) else plan.optimal_ettr


def render_checkpoint_plan(plan: CheckpointPlan, console: Console | None = None) -> None:
    """Print the checkpoint plan: failure estimate, optimal intervals and the ETTR table."""
    out = console or make_console()
    estimate = plan.failure_estimate
    if estimate is not None:
        out.print(
            f"Observed: {estimate.num_failures} failure{'' if estimate.num_failures == 1 else 's'} in "
            f"{estimate.node_days:.4g} node-days over "
            f"{estimate.num_runs} run(s), {estimate.num_segments} segment(s) -> "
            f"{estimate.failures_per_node_day:.4g} failures per node-day"
        )
    out.print(
        f"Job MTTF {'infinite' if math.isinf(plan.job_mttf_s) else format_duration(plan.job_mttf_s)}; "
        "optimal interval: "
        f"Young {_interval(plan.young_interval_s)}, "
        f"Daly {_interval(plan.daly_interval_s)}, exact {_interval(plan.optimal_interval_s)} "
        f"(expected ETTR {format_percent(_limit_ettr(plan))})"
    )
    if plan.statement:
        out.print(plain(plan.statement))
    render_table(
        "Expected ETTR by checkpoint interval (Kokolis et al. 2024)",
        ("interval", "expected ETTR", "lost to failures", "lost to checkpoints"),
        [
            (
                format_duration(row.interval_s),
                format_percent(row.ettr),
                format_percent(row.lost_to_failures),
                format_percent(row.lost_to_checkpoints),
            )
            for row in plan.rows
        ],
        console=out,
        caption="the three shares add to 100% of the wall time; each is rounded to 0.1% on its own, "
        "so a row may show 99.9% or 100.1%",
    )


def _plural(unit: str) -> str:
    """``blocks (scaled)`` for ``block (scaled)``, ``steps`` for ``step``."""
    noun, space, qualifier = unit.partition(" ")
    return f"{noun}s{space}{qualifier}"
