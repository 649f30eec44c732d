"""Rendering of inference estimates, searches, the Pareto plot and system comparisons."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from lightspeed.report.console import make_console, plain, render_table
from lightspeed.report.palette import category_color
from lightspeed.report.plots import add_legend, new_figure, plain_text, plot_paths, save_figure
from lightspeed.units import (
    format_bytes_per_s,
    format_count,
    format_duration,
    format_memory,
    format_percent,
    format_significant,
    quotient_of_shown,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from rich.console import Console

    from lightspeed.sol import (
        AttentionSensitivity,
        FabricFigures,
        InferenceEstimate,
        InferencePlan,
        InferenceSearchResult,
        RatioDecomposition,
        SystemComparison,
    )

PART_NAMES = {
    "gemm_compute": "GEMMs (compute-bound)",
    "weight_reads": "weight reads",
    "attention_compute": "attention math",
    "kv_cache": "KV-cache reads/writes",
    "elementwise": "norms/activations",
    "tp_comm": "TP all-reduce",
    "ep_comm": "EP all-to-all",
    "pp_comm": "PP send",
    "attention_dp_pace": "attention-DP slowdown (fitted)",
    "launch": "kernel launch/teardown",
    "host": "host overhead",
    "draft": "draft steps (speculative decoding)",
}


# A per-GPU rate in a system comparison is shown to 4 significant digits and every ratio between
# such rates to 2 decimals, in the main table, the decomposition and the attention table alike, so
# the same ratio reads the same everywhere and a ratio is the quotient of the rates printed.
RATE_DIGITS = 4


def _shown_rate(rate_tokens_per_s: float) -> str:
    return format_significant(rate_tokens_per_s, RATE_DIGITS)


def _ratio(value: float) -> str:
    return f"{value:.2f}x"


def _rate(value: float) -> str:
    return f"{format_count(value)} tok/s"


# what sets a replica's most sequences (``InferenceEstimate.max_batch_limit``), as the table says it
MAX_BATCH_LIMITS = {"kv cache": "the KV cache", "server cap": "the server's cap", "max batch": "--max-batch"}


def render_inference_estimate(
    estimate: InferenceEstimate,
    *,
    simulated_ttft_p50_s: float | None = None,
    simulated_tpot_p50_s: float | None = None,
) -> None:
    """Print an inference estimate: headline numbers, iteration breakdown, memory, bound, assumptions.
    ``simulated_ttft_p50_s`` and ``simulated_tpot_p50_s``: the TTFT and TPOT p50 of the same load
    simulated request by request, shown beside the analytic ones (which price a steady batch)."""
    console = make_console()
    load = estimate.load
    console.print(
        f"[bold]{plain(estimate.model)}[/bold] on [bold]{plain(estimate.system)}[/bold] "
        f"({estimate.num_gpus} GPUs): "
        f"{estimate.plan.describe()}, {estimate.batching} batching, "
        f"ISL/OSL {load.input_tokens}/{load.output_tokens}"
    )
    rows = [
        ["TTFT", ttft_text(estimate.ttft_s, simulated_ttft_p50_s)],
        [
            "TPOT",
            tpot_text(
                estimate.tpot_s,
                estimate.output_tokens_per_s_per_user,
                output_tokens=load.output_tokens,
                simulated_tpot_p50_s=simulated_tpot_p50_s,
            ),
        ],
        ["output tokens/s", rates_text(estimate.output_tokens_per_s, estimate.output_tokens_per_s_per_gpu)],
        ["requests/s", f"{estimate.requests_per_s:,.3g}"],
        [
            "batch per replica",
            batch_text(
                batch_per_replica=estimate.batch_per_replica,
                max_batch=estimate.max_batch,
                max_batch_limit=estimate.max_batch_limit,
                concurrency=estimate.concurrency,
                split=estimate.kv_transfer_s is not None,  # separate prefill and decode pools
            ),
        ],
    ]
    if estimate.intervals:
        rows.append(error_bar_row(estimate.intervals, output_tokens=load.output_tokens))
    if estimate.kv_transfer_s is not None:
        rows.append(
            [
                "KV transfer per request",
                kv_transfer_text(
                    estimate.kv_transfer_s, estimate.kv_transfer_link, estimate.kv_transfer_link_bytes_per_s
                ),
            ]
        )
    render_table(None, ["metric", "value"], rows, console=console)
    step = estimate.iteration_s
    render_table(
        f"iteration: {format_duration(step)}",
        ["part", "time", "share"],
        breakdown_rows(estimate.iteration_breakdown_s, step),
        console=console,
    )
    memory = memory_rows(estimate.memory_bytes, estimate.usable_memory_bytes)
    render_table("memory per GPU", ["component", "bytes"], memory, console=console)
    console.print(f"[bold]bound:[/bold] {estimate.bound}")
    for line in estimate.assumptions:
        console.print(f"  assumed: {line}", style="dim")


# The texts of an inference estimate's tables, from its figures: the terminal's table and the HTML
# report's section (which reads them back from ``plan infer --json``) print the same.


def ttft_text(ttft_s: float, simulated_ttft_p50_s: float | None = None) -> str:
    """``92.4 ms``; with the TTFT p50 of the same load simulated request by request, ``92.4 ms
    (analytic; simulated under this load, below: p50 533 ms)``."""
    return format_duration(ttft_s) + _simulated_text(simulated_ttft_p50_s)


def _simulated_text(simulated_p50_s: float | None) -> str:
    """`` (analytic; simulated under this load, below: p50 533 ms)`` (none without a simulated p50,
    or one that is not a number)."""
    if simulated_p50_s is None or not math.isfinite(simulated_p50_s):
        return ""
    return f" (analytic; simulated under this load, below: p50 {format_duration(simulated_p50_s)})"


def rates_text(output_tokens_per_s: float, output_tokens_per_s_per_gpu: float) -> str:
    """``1.402 K tok/s (175.3 tok/s per GPU)``."""
    return f"{_rate(output_tokens_per_s)} ({_rate(output_tokens_per_s_per_gpu)} per GPU)"


def batch_text(
    *, batch_per_replica: float, max_batch: int, max_batch_limit: str, concurrency: float, split: bool
) -> str:
    """``32 in flight of at most 1,418 (the KV cache); 32 requests over the deployment``; ``split``:
    separate prefill and decode pools (the batch is the decoding one)."""
    return (
        f"{batch_per_replica:,.4g} {'decoding' if split else 'in flight'} of at most "
        f"{max_batch:,} ({MAX_BATCH_LIMITS[max_batch_limit]}); "
        f"{concurrency:,.4g} requests over "
        f"the deployment{' (the rest in the prefill pool or crossing to decode)' if split else ''}"
    )


def error_bar_row(bars: Mapping[str, Any], *, output_tokens: int) -> list[str]:
    """The error bar row of an estimate's ``intervals`` (level, family, rows and each figure's
    low and high end)."""
    ttft_low, ttft_high = bars["ttft_s"]
    tpot_low, tpot_high = bars["tpot_s"] if output_tokens > 1 else (0.0, 0.0)
    rate_low, rate_high = bars["output_tokens_per_s"]
    return [
        f"error bar ({format_percent(bars['level'], 0)} of published runs)",
        f"TTFT {format_duration(ttft_low)}-{format_duration(ttft_high)}, "
        + (f"TPOT {format_duration(tpot_low)}-{format_duration(tpot_high)}, " if output_tokens > 1 else "")
        + f"{_rate(rate_low)}-{_rate(rate_high)} "
        f"(family {bars['family']}, {bars['num_rows']} rows)",
    ]


def breakdown_rows(breakdown_s: Mapping[str, float], iteration_s: float) -> list[list[str]]:
    """``[part, time, share of the iteration]`` of each part that takes time (:data:`PART_NAMES`)."""
    return [
        [PART_NAMES[name], format_duration(value), format_percent(value / iteration_s)]
        for name, value in breakdown_s.items()
        if value > 0
    ]


def memory_rows(memory_bytes: Mapping[str, float], usable_memory_bytes: float) -> list[list[str]]:
    """``[component, bytes]`` of the memory per GPU, then the usable memory."""
    rows = [[name.replace("_", " "), format_memory(value)] for name, value in memory_bytes.items()]
    rows.append(["usable", format_memory(usable_memory_bytes)])
    return rows


def kv_transfer_text(kv_transfer_s: float, link: str | None, link_bytes_per_s: float | None) -> str:
    """``2.11 ms over InfiniBand NDR (scale-out) at 50 GB/s per GPU``: the link a prompt's KV cache
    crosses from its prefill to its decode replica, where the estimate names it."""
    text = format_duration(kv_transfer_s)
    if link is None:
        return text
    text += f" over {link}"
    if link_bytes_per_s is not None:
        text += f" at {format_bytes_per_s(link_bytes_per_s)} per GPU"
    return text


def tpot_text(
    tpot_s: float | None,
    per_user_tokens_per_s: float | None,
    *,
    output_tokens: int,
    simulated_tpot_p50_s: float | None = None,
) -> str:
    """``7.02 ms (142.4 tok/s per user)``; with the TPOT p50 of the same load simulated request by
    request, ``36.3 ms (analytic, 27.5 tok/s per user; simulated under this load, below: p50 124
    ms)``. A request of one output token has no time between tokens, so none is shown for it (its
    one token's time is the TTFT)."""
    if output_tokens <= 1 or tpot_s is None or per_user_tokens_per_s is None:
        return "n/a (1 output token: no time between tokens)"
    per_user = f"{per_user_tokens_per_s:,.1f} tok/s per user"
    simulated = _simulated_text(simulated_tpot_p50_s)
    if not simulated:
        return f"{format_duration(tpot_s)} ({per_user})"
    return f"{format_duration(tpot_s)}{simulated.replace('(analytic;', f'(analytic, {per_user};', 1)}"


# above the analytic best of a search whose finalists are then ranked by simulated goodput
ANALYTIC_BEST_LABEL: Final = (
    "analytic best (the most analytic tokens/s per GPU within the bounds, a steady batch without a queue); "
    "the finalists below are simulated under load, and the goodput ranking's winner is the recommendation:"
)


def render_inference_search(result: InferenceSearchResult, *, ranked_below: bool = False) -> None:
    """Print the best deployment under the bounds, the Pareto frontier and the topology's constraints;
    ``ranked_below``: a goodput ranking follows, so the best shown is labelled the analytic best and
    the ranking's winner the recommendation."""
    console = make_console()
    bounds = ", ".join(
        text
        for text in (
            f"TTFT <= {format_duration(result.max_ttft_s)}" if result.max_ttft_s is not None else "",
            f"TPOT <= {format_duration(result.max_tpot_s)}" if result.max_tpot_s is not None else "",
        )
        if text
    )
    console.print(
        f"[bold]{plain(result.model)}[/bold] on [bold]{plain(result.system)}[/bold]: "
        f"{result.num_points_evaluated:,} "
        f"deployment x batch points in {format_duration(result.elapsed_s)}, "
        + (
            f"{result.num_points_feasible:,} meet {bounds}"
            if bounds
            else "no latency bound given (--max-ttft, --max-tpot, --slo)"
        )
    )
    if ranked_below:
        console.print(ANALYTIC_BEST_LABEL)
    render_inference_estimate(result.best)
    if result.draft_depths:
        _render_draft_depths(result, console)
    depths = bool(result.draft_depths)
    rows = [
        [
            point.plan + (_drafts_of(point.deployment) if depths else ""),
            f"{point.batch_per_replica:,.4g}",
            f"{point.output_tokens_per_s_per_gpu:,.1f}",
            f"{point.output_tokens_per_s_per_user:,.1f}",
            format_duration(point.ttft_s),
            format_duration(point.tpot_s),
        ]
        for point in result.frontier
    ]
    render_table(
        "Pareto frontier (tokens/s per GPU vs per user)",
        ["deployment", "batch", "tok/s/GPU", "tok/s/user", "TTFT", "TPOT"],
        rows,
        console=console,
        right_align_from=1,
    )
    for line in result.constraints:
        console.print(f"  constraint: {line}", style="dim")


def _draft_count(plan: InferencePlan) -> int:
    """Draft tokens a step of ``plan`` (0 without speculation)."""
    return plan.speculative.num_draft_tokens if plan.speculative is not None else 0


def _drafts_of(plan: InferencePlan) -> str:
    """A frontier point's speculative depth, where the search tried several."""
    drafts = _draft_count(plan)
    return f", {drafts} draft{'s' if drafts > 1 else ''}" if drafts else ", no drafts"


def _render_draft_depths(result: InferenceSearchResult, console: Console) -> None:
    """Each speculative depth the search tried: its best deployment, or why none met the bounds."""
    chosen = _draft_count(result.best.plan)
    rows = [
        [
            f"{depth.draft_tokens}" + (" (best)" if depth.draft_tokens == chosen else ""),
            depth.plan or plain(depth.reason),
            f"{depth.output_tokens_per_s_per_gpu:,.1f}" if depth.output_tokens_per_s_per_gpu else "-",
            f"{depth.output_tokens_per_s_per_user:,.1f}" if depth.output_tokens_per_s_per_user else "-",
            format_duration(depth.tpot_s) if depth.tpot_s is not None else "-",
        ]
        for depth in result.draft_depths
    ]
    render_table(
        "Speculative depths (draft tokens a step; the best deployment of each)",
        ["drafts", "deployment", "tok/s/GPU", "tok/s/user", "TPOT"],
        rows,
        console=console,
        right_align_from=2,
    )


def pareto_figure(result: InferenceSearchResult) -> Figure:
    """Tokens/s per GPU against tokens/s per user along the frontier, the best point marked."""
    figure, axes = new_figure(7.0, 4.5)
    users = [point.output_tokens_per_s_per_user for point in result.frontier]
    gpus = [point.output_tokens_per_s_per_gpu for point in result.frontier]
    axes.plot(users, gpus, marker="o", color=category_color("predicted"), label="Pareto frontier")
    best = result.best
    axes.scatter(
        [best.output_tokens_per_s_per_user],
        [best.output_tokens_per_s_per_gpu],
        color=category_color("measured"),
        zorder=3,
        s=60,
        label=f"best under the bounds: {best.plan.describe()}",
    )
    if result.max_tpot_s is not None:
        axes.axvline(
            1.0 / result.max_tpot_s,
            color=category_color("sol"),
            linestyle="--",
            linewidth=1,
            label="TPOT bound",
        )
    axes.set_xlabel("output tokens/s per user (1 / TPOT)")
    axes.set_ylabel("output tokens/s per GPU")
    axes.set_title(plain_text(f"{result.model} on {result.system}", 90), fontsize=10)
    add_legend(axes, fontsize=8, frameon=False)
    return figure


def save_pareto_plot(result: InferenceSearchResult, path: Path) -> list[Path]:
    """Write the Pareto plot to ``path`` (its suffix picks the format; PNG and SVG without one)."""
    stem, formats = plot_paths(path, name="pareto", default_formats=("png", "svg"))
    return save_figure(pareto_figure(result), stem, formats)


def render_system_comparison(comparison: SystemComparison) -> None:
    """Print each system's best plan, throughput, communication on the slow level and limits."""
    console = make_console()
    unit = "tokens/s" if comparison.workload == "train" else "output tok/s"
    rows = []
    per_gpu = [_shown_rate(result.throughput_tokens_per_s_per_gpu) for result in comparison.results]
    for result, shown in zip(comparison.results, per_gpu, strict=True):
        rows.append(
            [
                result.system,
                result.precision,
                result.plan,
                format_count(result.throughput_tokens_per_s),
                shown,
                _ratio(quotient_of_shown(shown, per_gpu[0])),  # the quotient of the figures shown
                format_percent(result.communication_share),
                format_percent(result.slow_level_share),
            ]
        )
    render_table(
        f"{comparison.model}: best {comparison.workload} plan per system ({comparison.plan_family})",
        ["system", "precision", "best plan", unit, "per GPU", "vs first", "comm share", "on slow level"],
        rows,
        console=console,
        right_align_from=3,
    )
    for result in comparison.results:
        console.print(f"[bold]{plain(result.system)}[/bold]: {plain(result.bound)}")
        for share in result.collectives:
            flag = " [red](slow level)[/red]" if share.crosses_slow_level else ""
            console.print(
                f"  {share.name} over {share.level}: {format_duration(share.seconds)}, "
                f"{format_percent(share.share)} of the {'step' if share.per == 'step' else 'TTFT'}{flag}"
            )
        for rule in result.limits.rules:
            console.print(f"  limit: {rule}", style="dim")
    _render_comparison_assumptions(comparison, console)


def _render_comparison_assumptions(comparison: SystemComparison, console: Console) -> None:
    """Each system's best plan's assumptions, as ``plan infer`` / ``plan train`` print them (a
    format the GPU cannot compute in, A100 "fp8": FP8 weights, BF16 GEMMs); a line every system
    shares is printed once, under "every system"."""
    shown = [
        (result, estimate.assumptions)
        for result in comparison.results
        if (estimate := result.infer if result.infer is not None else result.train) is not None
    ]
    shared = set.intersection(*(set(lines) for _, lines in shown)) if len(shown) > 1 else set()
    groups = [("every system", [line for line in shown[0][1] if line in shared])] if shared else []
    for result, lines in shown:
        own = [line for line in lines if line not in shared]
        groups.append((f"{result.system} ({result.precision}, {result.plan})", own))
    for title, listed in groups:
        if listed:
            console.print(f"[bold]{plain(title)}[/bold]:")
        for line in listed:
            console.print(f"  assumed: {plain(line)}", style="dim")


def render_fabric_comparison(figures: Sequence[FabricFigures]) -> None:
    """Print per-GPU bandwidth, latency and a full-machine all-reduce of each system (seed claim 12);
    a system of one GPU shows "-" in the fabric columns and its note below the table."""
    rows = [
        [
            item.system,
            f"{item.scale_up} x{item.domain_size}" + (f" + {item.scale_out}" if item.scale_out else ""),
            _either(item.slowest_bytes_per_s, item.slowest_bidirectional_bytes_per_s, _bidirectional),
            _or_dash(item.small_message_latency_s, format_duration),
            _or_dash(item.small_all_reduce_s, format_duration),
            _either(item.large_all_reduce_s, item.large_all_reduce_bus_bytes_per_s, _bus),
        ]
        for item in figures
    ]
    console = make_console()
    render_table(
        "fabric seen by one GPU when a group spans every GPU",
        ["system", "levels", "per-GPU bandwidth", "hop latency", "8 B all-reduce", "1 GiB all-reduce"],
        rows,
        console=console,
    )
    for item in figures:
        if item.note:
            console.print(f"  {plain(item.system)}: {plain(item.note)}", style="dim")


def _or_dash(value: float | None, show: Callable[[float], str]) -> str:
    return "-" if value is None else show(value)


def _either(first: float | None, second: float | None, show: Callable[[float, float], str]) -> str:
    return "-" if first is None or second is None else show(first, second)


def _bidirectional(rate_bytes_per_s: float, bidirectional_bytes_per_s: float) -> str:
    return f"{format_bytes_per_s(rate_bytes_per_s)} ({format_bytes_per_s(bidirectional_bytes_per_s)} bidir.)"


def _bus(duration_s: float, bus_bytes_per_s: float) -> str:
    return f"{format_duration(duration_s)} ({format_bytes_per_s(bus_bytes_per_s)} bus)"


def render_ratio_decomposition(decomposition: RatioDecomposition) -> None:
    """Print every combination of changes searched, then each change's order-independent
    (Shapley) factor beside what it buys applied first and applied last."""
    console = make_console()
    shown = {
        c.changes: "-" if c.tokens_per_s_per_gpu is None else _shown_rate(c.tokens_per_s_per_gpu)
        for c in decomposition.coalitions
    }
    base, goal = shown[()], shown[max(shown, key=len)]
    render_table(
        f"{decomposition.target} vs {decomposition.baseline}: {goal} / {base} tok/s per GPU = "
        f"{_ratio(quotient_of_shown(goal, base))}",
        ["changes applied to the baseline", "system", "best plan", "tok/s/GPU"],
        [
            [" + ".join(c.changes) or "none (baseline)", c.system, c.plan or c.reason, shown[c.changes]]
            for c in decomposition.coalitions
        ],
        console=console,
        right_align_from=3,
    )
    everything = max(shown, key=len)
    rows = []
    for factor in decomposition.factors:
        others = tuple(name for name in everything if name != factor.name)
        rows.append(
            [
                factor.name,
                factor.change,
                _shown_factor(shown.get((factor.name,)), base),
                _ratio(factor.factor),
                _shown_factor(goal, shown.get(others)),
            ]
        )
    if rows:
        render_table(
            "factors (Shapley: each change's geometric mean over every order of applying them)",
            ["factor", "change", "alone (first)", "Shapley", "last"],
            rows,
            console=console,
            right_align_from=2,
        )
        product = " x ".join(f"{factor.factor:.2f}" for factor in decomposition.factors)
        console.print(f"  {product}: unrounded, the factors multiply exactly to the ratio")
    console.print(f"  {decomposition.note}", style="dim")


def _shown_factor(top: str | None, bottom: str | None) -> str:
    """The quotient of two printed rates ('-' when either is missing)."""
    if top is None or bottom is None or "-" in (top, bottom):
        return "-"
    return _ratio(quotient_of_shown(top, bottom))


def _ratio_spread_text(ratios: Sequence[tuple[str, str]]) -> str:
    """How far the printed ratios (``'2.65x'``, with the case each is under) move: the lowest and
    the highest and their quotient, or that they do not move.

    >>> text = _ratio_spread_text([("2.65x", "as catalogued"), ("2.60x", "MHA"), ("2.71x", "MLA")])
    >>> text.split(": ")[0]
    'the ratio runs from 2.60x (MHA) to 2.71x (MLA)'
    >>> text.split(": ")[1]
    'highest / lowest = 1.04, from the assumption about attention alone'
    >>> _ratio_spread_text([("0.87x", "as catalogued"), ("0.87x", "MHA")])
    'the ratio is 0.87x under every attention: the assumption about attention does not move it'
    """
    (low, low_name), (high, high_name) = (
        min(ratios, key=lambda r: float(r[0].rstrip("x"))),
        max(ratios, key=lambda r: float(r[0].rstrip("x"))),
    )
    if low == high:
        return f"the ratio is {low} under every attention: the assumption about attention does not move it"
    spread = quotient_of_shown(high.rstrip("x"), low.rstrip("x"))
    return (
        f"the ratio runs from {low} ({low_name}) to {high} ({high_name}): "
        f"highest / lowest = {spread:.2f}, from the assumption about attention alone"
    )


def render_attention_sensitivity(sensitivity: AttentionSensitivity) -> None:
    """Print the ratio and its factors under each attention, and how far the ratio moves."""
    console = make_console()
    names = next((c.decomposition.factors for c in sensitivity.cases if c.decomposition), ())
    rows, ratios = [], []
    for case in sensitivity.cases:
        decomposition = case.decomposition
        label = case.name + (" (catalogue)" if case.catalogued and case.name != "as catalogued" else "")
        kv = f"{format_memory(case.kv_cache_bytes_per_token)} ({case.kv_precision})"
        if decomposition is None:
            rows.append([label, case.attention, kv, "-", "-", "-", *("-" for _ in names)])
            continue
        base = _shown_rate(decomposition.baseline_tokens_per_s_per_gpu)
        goal = _shown_rate(decomposition.target_tokens_per_s_per_gpu)
        ratio = _ratio(quotient_of_shown(goal, base))
        ratios.append((ratio, label))
        factors = [_ratio(factor.factor) for factor in decomposition.factors] or ["-" for _ in names]
        rows.append([label, case.attention, kv, base, goal, ratio, *factors])
    render_table(
        f"{sensitivity.model}: the ratio under each attention",
        ["attention", "shape", "KV per token", "baseline tok/s/GPU", "target tok/s/GPU", "ratio"]
        + [factor.name for factor in names],
        rows,
        console=console,
        right_align_from=2,
    )
    if len(ratios) > 1:
        console.print(f"  {_ratio_spread_text(ratios)}")
    console.print(f"  {sensitivity.note}", style="dim")


__all__ = [
    "MAX_BATCH_LIMITS",
    "PART_NAMES",
    "batch_text",
    "breakdown_rows",
    "error_bar_row",
    "kv_transfer_text",
    "memory_rows",
    "pareto_figure",
    "rates_text",
    "render_attention_sensitivity",
    "render_fabric_comparison",
    "render_inference_estimate",
    "render_inference_search",
    "render_ratio_decomposition",
    "render_system_comparison",
    "save_pareto_plot",
    "tpot_text",
    "ttft_text",
]
