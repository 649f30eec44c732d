"""Terminal rendering of the regression gate (``lightspeed compare A B``)."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from lightspeed.report.console import make_console, print_table
from lightspeed.store.regression import GateResult, MetricComparison

_VERDICT_STYLE = {
    "regression": "bold red",
    "improvement": "green",
    "unchanged": "",
    "not significant": "yellow",
    "too few samples": "yellow",
}


def _value(value: float) -> str:
    return f"{value:.6g}"


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


def print_gate(result: GateResult, console: Console | None = None) -> None:
    """The comparison table, one reason per metric, and the gate's outcome line."""
    console = console or make_console()
    first = result.comparisons[0]
    print_table(
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
