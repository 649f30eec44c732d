"""Rendering of SOL-engine results: plan estimates, searches, validations, step breakdown chart."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from lightspeed.report.console import make_console, plain, render_table
from lightspeed.report.palette import category_color
from lightspeed.report.plots import add_legend, new_figure, plain_text
from lightspeed.report.validation_rows import (
    cell_text,
    error_text,
    figure_text,
    interval_text,
    read_as_text,
)
from lightspeed.units import format_count, format_duration, format_memory, format_percent

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from rich.console import Console

    from lightspeed.sol import SearchResult, TrainingEstimate, TrainingPlan, ValidationReport, ValidationRow
    from lightspeed.sol.validation.validate import ErrorSummary

PART_NAMES = {
    "compute": "compute",
    "recompute": "recompute",
    "memory_bound": "memory-bound",
    "tp_comm": "TP comm",
    "cp_comm": "CP comm",
    "ep_comm": "EP comm",
    "pp_comm": "PP send/recv",
    "bubble": "pipeline bubble",
    "dp_comm": "DP comm",
    "optimizer": "optimizer",
    "other": "launch overhead",
}


# the significant digits a count in a headline keeps
COUNT_DIGITS = 4


def count_with_its_digits(count: float, digits: int = COUNT_DIGITS) -> str:
    """:func:`~lightspeed.units.format_count` keeping the zeros that carry its digits: a count
    with a prefix (K, M, ...) shows ``digits`` significant digits, so 1,000.4 tokens/s per GPU
    reads ``1.000 K``, not ``1 K`` (as if known to one digit); one without shows every digit.

    >>> count_with_its_digits(1000.45), count_with_its_digits(31_000), count_with_its_digits(520.3)
    ('1.000 K', '31.00 K', '520.3')
    >>> count_with_its_digits(128_057.4), count_with_its_digits(100.0)
    ('128.1 K', '100')
    """
    text = format_count(count, digits)
    number, _, prefix = text.partition(" ")
    if not prefix or "e" in number:  # no prefix: whole numbers show every digit; scientific as it is
        return text
    missing = digits - sum(character.isdigit() for character in number)
    if missing <= 0:
        return text
    return f"{number if '.' in number else number + '.'}{'0' * missing} {prefix}"


def _plan_line(plan: TrainingPlan) -> str:
    etp = f" etp={plan.etp}" if plan.etp > 1 else ""
    degrees = f"tp={plan.tp} pp={plan.pp} dp={plan.dp} ep={plan.ep}{etp} cp={plan.cp} vpp={plan.vpp}"
    return (
        f"{degrees} zero={plan.zero_stage} schedule={plan.effective_schedule}"
        f"{' (uneven stages)' if plan.uneven_pipeline else ''} "
        f"micro-batch={plan.micro_batch_size} global-batch={plan.global_batch_size} seq={plan.seq_len} "
        f"{plan.precision} recompute={plan.recompute}"
    )


def render_training_estimate(estimate: TrainingEstimate) -> None:
    """Print a training estimate: headline numbers, breakdown, memory, bound, assumptions."""
    console = make_console()
    console.print(
        f"[bold]{plain(estimate.model)}[/bold] on [bold]{plain(estimate.system)}[/bold] "
        f"({estimate.num_gpus} GPUs)"
    )
    console.print(f"plan: {_plan_line(estimate.plan)}")
    step = estimate.step_time_s
    rows = [
        ["step time", format_duration(step)],
        [
            "tokens/s",
            f"{count_with_its_digits(estimate.tokens_per_s)} "
            f"({count_with_its_digits(estimate.tokens_per_s / estimate.num_gpus)} per GPU)",
        ],
        [
            "model TFLOP/s per GPU",
            f"{estimate.tflop_per_s_per_gpu:,.1f} of {estimate.peak_flop_per_s / 1e12:,.1f} dense peak",
        ],
        [
            "MFU / HFU",
            f"{format_percent(estimate.mfu)} ({estimate.flop_convention}) / "
            f"{format_percent(estimate.hfu)} (FLOPs executed)",
        ],
        [
            "memory per GPU",
            f"{format_memory(estimate.memory_per_gpu_bytes)} of "
            f"{format_memory(estimate.usable_memory_bytes)} usable"
            + ("" if estimate.fits else "  [red]DOES NOT FIT[/red]"),
        ],
    ]
    bars = estimate.intervals
    if bars:
        low, high = bars["step_time_s"]
        rate_low, rate_high = bars["model_flop_per_s_per_gpu"]
        rows.append(
            [
                f"error bar ({format_percent(bars['level'], 0)} of published runs)",
                f"step {format_duration(low)}-{format_duration(high)}, "
                f"{rate_low / 1e12:,.0f}-{rate_high / 1e12:,.0f} TFLOP/s per GPU "
                f"(family {bars['family']}, {bars['num_rows']} rows)",
            ]
        )
    if estimate.time_to_train_s is not None:
        assert estimate.num_tokens is not None  # set with time_to_train_s
        assert estimate.gpu_hours is not None
        rows.append(
            [
                "time to train",
                f"{format_duration(estimate.time_to_train_s)} for {format_count(estimate.num_tokens)} tokens",
            ]
        )
        rows.append(["GPU-hours", f"{format_count(estimate.gpu_hours)}"])
    render_table(None, ["metric", "value"], rows, console=console)
    breakdown = [
        [PART_NAMES[name], format_duration(value), format_percent(value / step)]
        for name, value in estimate.breakdown_s.items()
        if value > 0
    ]
    render_table("step breakdown (busiest stage)", ["part", "time", "share"], breakdown, console=console)
    memory = [[name, format_memory(value)] for name, value in estimate.memory_bytes.items()]
    render_table("memory per GPU", ["component", "bytes"], memory, console=console)
    console.print(f"[bold]bound:[/bold] {estimate.bound}")
    for line in estimate.assumptions:
        console.print(f"  assumed: {line}", style="dim")


def render_search_result(result: SearchResult) -> None:
    """Print ranked plans and why the best wins."""
    console = make_console()
    console.print(
        f"[bold]{plain(result.model)}[/bold] on [bold]{plain(result.system)}[/bold]: "
        f"{result.num_plans_evaluated:,} valid plans "
        f"evaluated in {format_duration(result.elapsed_s)} ({result.plans_per_s:,.0f} plans/s), "
        f"{result.num_plans_fitting:,} fit in memory"
    )
    for note in result.notes:
        console.print(f"[bold]note:[/bold] {plain(note)}")
    headers = _plan_headers(result)
    rows = [_plan_row(str(rank), estimate) for rank, estimate in enumerate(result.plans, start=1)]
    render_table("best plans", headers, rows, console=console, right_align_from=1)
    if result.plans:
        console.print(f"[bold]best is bound by:[/bold] {result.plans[0].bound}")
        _print_margins(console, result)
    for sentence in result.why_best:
        console.print(f"  {sentence}")
    if result.ties:
        ties = [_plan_row(str(rank), estimate) for rank, estimate in enumerate(result.ties, start=1)]
        render_table(
            f"ties within {format_percent(result.tolerance)} of the best (the model's error between plans), "
            "simplest first",
            headers,
            ties,
            console=console,
            right_align_from=1,
        )
    if result.compared is not None:
        compared = result.compared
        render_table("the named plan", headers, [_plan_row("named", compared.estimate)], console=console)
        console.print(f"[bold]named plan:[/bold] {plain(named_plan_verdict(result))}")
    if result.compared_refused is not None:
        console.print(f"[bold]named plan:[/bold] {plain(result.compared_refused)}")


def named_plan_verdict(result: SearchResult) -> str:
    """The named plan against the search's best: its rank and the best's margin, or, for a plan that
    does not fit, its memory against the GPU's and how fast it would be (no error band: it cannot run).

    The sign is said in words: ``the best is 5.0% faster per step``, ``it would be 5.5% faster``."""
    compared = result.compared
    if compared is None:
        return ""
    estimate = compared.estimate
    if compared.rank is None:
        speed = _named_speed(compared.margin, "would be")
        return (
            f"does not fit: needs {format_memory(estimate.memory_per_gpu_bytes)} per GPU, "
            f"{format_memory(estimate.usable_memory_bytes)} usable; {speed}"
        )
    within = "within the model's error" if compared.within_uncertainty else "beyond the model's error"
    rank = f"ranks {compared.rank:,} of {result.num_plans_fitting:,}"
    return f"{rank}; {_named_speed(compared.margin, 'is')} ({within})"


def _named_speed(margin: float, verb: str) -> str:
    """``margin`` (the named plan's step over the best's, minus one) as a sentence with its sign in
    words: a negative margin is the named plan's lead (1/(1+margin) - 1 faster)."""
    if margin < 0.0:
        faster = 1.0 / (1.0 + margin) - 1.0
        return f"it {verb} {faster:.1%} faster per step than the best (a step {-margin:.1%} shorter)"
    if margin == 0.0:
        return f"it {verb} as fast as the best"
    return f"the best is {margin:.1%} faster per step"


def _print_margins(console: Console, result: SearchResult) -> None:
    best = result.plans[0]
    low, high = best.intervals.get("step_time_s", [best.step_time_s, best.step_time_s])
    margin = result.margin_over_runner_up
    if margin is None:
        return
    verdict = "a tie" if margin <= result.tolerance else "a clear win"
    console.print(
        f"[bold]margin over #2:[/bold] {margin:.1%} per step, {verdict} against the model's error "
        f"between plans of {format_percent(result.tolerance)} (80% of published runs: step "
        f"{format_duration(low)}-{format_duration(high)})"
    )


_PLAN_HEADERS = [
    "#",
    "tp",
    "pp",
    "dp",
    "ep",
    "cp",
    "vpp",
    "zero",
    "mb",
    "recompute",
    "schedule",
    "step",
    "MFU",
    "tokens/s",
    "memory/GPU",
]


def _plan_headers(result: SearchResult) -> list[str]:
    """The columns of a search's tables: with a token budget, its time to train and GPU-hours too."""
    budget = any(estimate.time_to_train_s is not None for estimate in result.plans)
    return [*_PLAN_HEADERS, "to train", "GPU-h"] if budget else _PLAN_HEADERS


def _plan_row(label: str, estimate: TrainingEstimate) -> list[str]:
    plan = estimate.plan
    budget = (
        [format_duration(estimate.time_to_train_s), format_count(estimate.gpu_hours or 0.0)]
        if estimate.time_to_train_s is not None
        else []
    )
    return [
        label,
        str(plan.tp),
        str(plan.pp),
        str(plan.dp),
        str(plan.ep) if plan.etp == 1 else f"{plan.ep} etp{plan.etp}",
        str(plan.cp),
        str(plan.vpp),
        str(plan.zero_stage),
        str(plan.micro_batch_size),
        plan.recompute,
        plan.effective_schedule + ("*" if plan.uneven_pipeline else ""),  # * uneven stages (a note says)
        format_duration(estimate.step_time_s),
        format_percent(estimate.mfu),
        format_count(estimate.tokens_per_s),
        format_memory(estimate.memory_per_gpu_bytes) + ("" if estimate.fits else " (no fit)"),
        *budget,
    ]


MAX_VALIDATION_ROWS_SHOWN = 200


def shown_validation_rows(rows: Sequence[ValidationRow], limit: int = MAX_VALIDATION_ROWS_SHOWN) -> list[int]:
    """The indices of the rows a terminal table shows: all of them up to ``limit``; past it, the
    rows not predicted and those with the largest errors (``limit`` in all), in table order.

    >>> from types import SimpleNamespace as Row
    >>> shown_validation_rows([Row(rel_error=e) for e in (0.1, None, -0.5, 0.01)], limit=2)
    [1, 2]
    """
    if len(rows) <= limit:
        return list(range(len(rows)))
    failed = [index for index, row in enumerate(rows) if row.rel_error is None][:limit]
    worst = sorted(
        (index for index, row in enumerate(rows) if row.rel_error is not None),
        key=lambda index: -abs(rows[index].rel_error or 0.0),
    )[: limit - len(failed)]
    return sorted([*failed, *worst])


def render_validation(report: ValidationReport) -> None:
    """Print predicted vs measured per row (at most MAX_VALIDATION_ROWS_SHOWN, said so) and the summary."""
    console = make_console()
    shown = shown_validation_rows(report.rows)
    if len(shown) < len(report.rows):
        console.print(
            f"{len(report.rows):,} rows: the table shows the {len(shown)} not predicted or with the largest "
            "errors; --json has every row"
        )
    rows = []
    for row in (report.rows[index] for index in shown):
        measured = "-" if row.measured is None else cell_text(row.metric, row.measured)
        predicted = "-" if row.predicted is None else cell_text(row.metric, row.predicted)
        # a refusal's reason, or a caveat of a predicted row (a static batch capped to what fits)
        note = plain(row.reason)  # "[[row.also]]" is no markup
        rows.append(
            [
                row.id,
                row.kind,
                row.publisher or "-",
                row.stack or "-",
                row.metric,
                read_as_text(row),
                measured,
                predicted,
                interval_text(row),
                error_text(row.rel_error),
                note,
            ]
        )
    render_table(
        f"validation: {report.path}",
        [
            "id",
            "kind",
            "publisher",
            "stack",
            "metric",
            "read as",
            "measured",
            "predicted",
            "interval",
            "error",
            "note",
        ],
        rows,
        console=console,
        right_align_from=6,
    )
    _render_other_figures(report, console)
    within = f"within {format_percent(report.summary['train'].within_error, 0)}"
    render_table(
        "summary (absolute relative error)",
        ["kind", "n", "median", "p90", "max", within, "not predicted", "in interval"],
        [
            [kind, *_summary_cells(summary), str(summary.num_not_predicted), _coverage_cell(summary)]
            for kind, summary in report.summary.items()
        ],
        console=console,
    )
    by_metric = report.by_metric
    # one metric per kind would repeat the summary
    if len(by_metric) > sum(1 for summary in report.summary.values() if summary.n):
        render_table(
            "predicted figures by metric (each row's own and those beside it)",
            ["kind", "metric", "n", "median", "p90", "max", within, "in interval"],
            [
                [*key.split("/", 1), *_summary_cells(summary), _coverage_cell(summary)]
                for key, summary in by_metric.items()
            ],
            console=console,
            right_align_from=2,
        )


def _render_other_figures(report: ValidationReport, console: Console) -> None:
    """The figures rows publish beside their own metric (a peak memory beside a throughput),
    predicted from the plan of the row's own prediction; nothing where no row has one."""
    rows = [
        [
            row.id,
            figure.metric,
            figure.read_as,
            figure_text(figure.metric, figure.measured),
            figure_text(figure.metric, figure.predicted),
            error_text(figure.rel_error),
        ]
        for row in report.rows
        for figure in row.also
    ]
    if rows:
        render_table(
            "other figures the rows publish, predicted from the same plan",
            ["id", "metric", "read as", "measured", "predicted", "error"],
            rows,
            console=console,
            right_align_from=3,
        )


def _summary_cells(summary: ErrorSummary) -> list[str]:
    """n, median, p90, max and how many are within the bar, of one summary."""

    def pct(value: float | None) -> str:
        return "-" if value is None else format_percent(value)

    return [
        str(summary.n),
        pct(summary.median_abs_error),
        pct(summary.p90_abs_error),
        pct(summary.max_abs_error),
        str(summary.num_within) if summary.n else "-",
    ]


def _coverage_cell(summary: ErrorSummary) -> str:
    if summary.coverage is None or summary.coverage_level is None:
        return "-"
    return f"{format_percent(summary.coverage, 0)} (nominal {format_percent(summary.coverage_level, 0)})"


class StepBreakdown(Protocol):
    """What a step-breakdown chart needs: a training estimate, or a prediction read from JSON."""

    @property
    def model(self) -> str | None: ...
    @property
    def system(self) -> str | None: ...
    @property
    def step_time_s(self) -> float: ...
    @property
    def breakdown_s(self) -> Mapping[str, float]: ...


def step_breakdown_figure(estimate: StepBreakdown) -> Figure:
    """A horizontal stacked bar of the predicted step-time breakdown (a matplotlib figure); every
    part is one of :data:`PART_NAMES` (a reader of files refuses others first)."""
    figure, axes = new_figure(8.0, 2.2)
    left = 0.0
    for name, value in estimate.breakdown_s.items():
        if value <= 0:
            continue
        label = PART_NAMES[name]
        axes.barh(
            [0], [value], left=left, color=category_color(name), label=f"{label} {format_duration(value)}"
        )
        left += value
    axes.set_yticks([])
    axes.set_xlabel("seconds per step")
    named = " on ".join(part for part in (estimate.model, estimate.system) if part)
    step = f"predicted step {format_duration(estimate.step_time_s)}"
    axes.set_title(plain_text(f"{named}: {step}" if named else step, 90))
    add_legend(axes, loc="upper center", bbox_to_anchor=(0.5, -0.35), ncol=4, fontsize=8, frameon=False)
    return figure
