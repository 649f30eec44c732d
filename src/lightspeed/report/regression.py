"""Rendering of the regression gate (``lightspeed compare A B``) and of a metric's history."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape

from lightspeed.gate.compare import GateResult, MetricComparison
from lightspeed.gate.inputs import MetricHistory
from lightspeed.report.console import make_console, render_table
from lightspeed.report.palette import category_color
from lightspeed.report.plots import add_legend, new_figure

if TYPE_CHECKING:
    from matplotlib.figure import Figure

_VERDICT_STYLE = {
    "regression": "bold red",
    "improvement": "green",
    "unchanged": "",
    "not significant": "yellow",
    "too few samples": "yellow",
}


def _value(value: float) -> str:
    return f"{value:.4g}"


def _row(item: MetricComparison) -> list[str]:
    style = _VERDICT_STYLE[item.verdict]
    verdict = f"[{style}]{item.verdict}[/]" if style else item.verdict
    direction = "lower" if item.lower_is_better else "higher"
    return [
        escape(item.metric),  # names come from input files: never markup
        escape(item.unit),
        direction,
        f"{_value(item.baseline_median)} (n={item.num_baseline})",
        f"{_value(item.current_median)} (n={item.num_current})",
        f"{item.change_fraction:+.2%}",
        f"[{item.ci_low_fraction:+.1%}, {item.ci_high_fraction:+.1%}]",
        f"{min(item.p_value_worse, item.p_value_better):.3g}",
        verdict,
    ]


def render_gate(result: GateResult, console: Console | None = None) -> None:
    """The comparison table, one reason per metric, and the gate's outcome line."""
    console = console or make_console()
    first = result.comparisons[0]
    render_table(
        escape(f"Regression gate: {result.current_source} vs baseline {result.baseline_source}"),
        ["metric", "unit", "better", "baseline median", "current median", "change", "CI", "p", "verdict"],
        [_row(item) for item in result.comparisons],
        right_align_from=3,
        caption=(
            f"threshold {first.threshold_fraction:.1%}, alpha {first.alpha:g}: a regression must exceed "
            f"the threshold and be significant (one-sided Mann-Whitney U p < alpha and the "
            f"{first.confidence:.0%} bootstrap CI of the median's change excluding 0)"
        ),
        console=console,
    )
    for item in result.comparisons:
        warmup = ""
        if item.num_warmup_baseline or item.num_warmup_current:
            warmup = (
                f" (warm-up excluded: {item.num_warmup_baseline} baseline, {item.num_warmup_current} current)"
            )
        console.print(f"  {item.metric}: {item.reason}{warmup}", markup=False)
    if result.skipped_metrics:
        console.print(f"  only in one run, not compared: {', '.join(result.skipped_metrics)}", markup=False)
    if result.num_regressions:
        console.print(f"[bold red]FAIL[/]: {result.num_regressions} regression(s)")
    else:
        console.print(f"[green]PASS[/]: no regression ({result.num_improvements} improvement(s))")


def plain_text(text: str, max_chars: int = 60) -> str:
    """A label safe for matplotlib: ``$`` would start mathtext (and can raise on
    untrusted names), and very long names would squeeze the plot."""
    shortened = text if len(text) <= max_chars else text[: max_chars - 1] + "…"
    return shortened.replace("$", r"\$")


def history_figure(history: MetricHistory) -> Figure:
    """A metric across runs: median per run, min-max bar, SOL, regressions marked."""
    figure, axes = new_figure(8.0, 3.6)
    points = history.points
    xs = list(range(len(points)))
    lows, highs = [p.min_value for p in points], [p.max_value for p in points]
    axes.vlines(xs, lows, highs, color=category_color("measured"), alpha=0.5, linewidth=3)
    axes.plot(xs, [p.value for p in points], marker="o", color=category_color("measured"), label="median")
    sols = [(x, p.sol) for x, p in zip(xs, points, strict=True) if p.sol is not None]
    if sols:
        axes.plot(
            [x for x, _ in sols],
            [s for _, s in sols],
            linestyle="--",
            color=category_color("sol"),
            label="SOL",
        )
    for verdict, marker in (("regression", "X"), ("improvement", "^")):
        marked = [(x, p.value) for x, p in zip(xs, points, strict=True) if p.verdict == verdict]
        if marked:
            marked_x, marked_y = [x for x, _ in marked], [v for _, v in marked]
            axes.scatter(
                marked_x,
                marked_y,
                marker=marker,
                s=120,
                color=category_color(verdict),
                zorder=5,
                label=verdict,
            )
    # Date and the run id's random suffix: runs of the same minute stay distinguishable.
    labels = [f"{time.strftime('%m-%d %H:%M', time.gmtime(p.created_s))}\n{p.run_id[-6:]}" for p in points]
    axes.set_xticks(xs, labels, rotation=30, ha="right", fontsize=8)
    axes.set_ylabel(plain_text(f"{history.metric} ({history.unit})"))
    better = "lower" if history.lower_is_better else "higher"
    axes.set_title(plain_text(f"{history.name}: {better} is better", 90))
    add_legend(axes, loc="best", fontsize=8)
    return figure
