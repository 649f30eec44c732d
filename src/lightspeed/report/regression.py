"""Rendering of the regression gate (``lightspeed compare A B``) and of a metric's history."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape

from lightspeed.gate.compare import MetricComparison, fraction_text
from lightspeed.gate.inputs import MetricHistory
from lightspeed.gate.run_compare import GateResult
from lightspeed.report.console import make_console, render_table
from lightspeed.report.palette import category_color
from lightspeed.report.plots import add_legend, new_figure, plain_text

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
        _change(item),
        _interval(item),
        f"{min(item.p_value_worse, item.p_value_better):.3g}",
        verdict,
    ]


def _change(item: MetricComparison) -> str:
    """The median's change as the gate judged it: relative, or in the unit from a baseline of 0."""
    if item.change_basis == "absolute":
        return escape(f"{item.change_absolute:+.4g} {item.unit}")
    return fraction_text(item.change_fraction, 2)


def _interval(item: MetricComparison) -> str:
    """The bootstrap interval; an infinite bound (``null`` in JSON) reads ``unbounded``."""
    if item.change_basis == "absolute":
        return f"[{item.ci_low_absolute:+.4g}, {item.ci_high_absolute:+.4g}]"
    return f"[{fraction_text(item.ci_low_fraction)}, {fraction_text(item.ci_high_fraction)}]"


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
    if result.missing_from_current:
        console.print(
            f"  missing from the current run: {', '.join(result.missing_from_current)}"
            + (" (allowed)" if result.allow_missing else ""),
            markup=False,
        )
    if result.missing_from_baseline:
        console.print(f"  only in the current run: {', '.join(result.missing_from_baseline)}", markup=False)
    if not result.passed:
        failures = [f"{result.num_regressions} regression(s)"] if result.num_regressions else []
        if result.num_missing:
            failures.append(f"{result.num_missing} metric(s) missing from the current run")
        console.print(f"[bold red]FAIL[/]: {', '.join(failures)}")
    else:
        outcome = [f"{result.num_improvements} improvement(s)"]
        if result.num_not_judged:
            count = result.num_not_judged
            outcome = [f"{count} metric{'s' if count > 1 else ''} could not be judged: too few samples"]
            if result.num_improvements:
                outcome.insert(0, f"{result.num_improvements} improvement(s)")
        console.print(f"[green]PASS[/]: no regression ({'; '.join(outcome)})")


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
