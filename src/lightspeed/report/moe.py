"""Rendering of MoE expert load: placements, load statistics and their plot, synthetic loads, and
what a measured load costs a prediction."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final

import numpy as np

from lightspeed.report.console import make_console, render_table
from lightspeed.report.palette import category_color, series_color
from lightspeed.report.plots import new_figure, plot_paths, save_figure
from lightspeed.units import format_bytes, format_count, format_duration, format_percent, quotient_of_shown

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from lightspeed.moe import ExpertLoad, ExpertLoadEffect, ExpertPlacement, HoldoutScore, LoadStats

MAX_LISTED_REPLICATED: Final = 4


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _replicated(counts: Sequence[int]) -> str:
    """The experts with more than one replica, most first (``5x3 12x2 ...``)."""
    extra = sorted(((count, expert) for expert, count in enumerate(counts) if count > 1), reverse=True)
    text = " ".join(f"{expert}x{count}" for count, expert in extra[:MAX_LISTED_REPLICATED])
    more = len(extra) - MAX_LISTED_REPLICATED
    return (text + (f" +{more} more" if more > 0 else "")) or "-"


def render_expert_placement(placement: ExpertPlacement, layer_names: Sequence[str]) -> None:
    """Print a placement: per layer the busiest GPU and node over the mean, the experts in order
    for comparison, and which experts got replicas; then the pass through all layers."""
    console = make_console()
    console.print(
        f"[bold]{placement.num_replicas} replicas[/bold] of {placement.num_logical_experts} experts "
        f"({placement.num_redundant_experts} redundant) on {placement.num_gpus} GPUs in "
        f"{placement.num_nodes} node{'s' if placement.num_nodes > 1 else ''}, "
        f"{placement.slots_per_gpu} per GPU; {placement.policy} policy"
        + (f" ({placement.num_groups} groups)" if placement.policy == "hierarchical" else "")
    )
    unbalanced = placement.unbalanced_gpu_load_max_over_mean
    rows = [
        [
            name,
            _replicated(placement.replica_counts[index]),
            _ratio(placement.gpu_load_max_over_mean[index]),
            _ratio(placement.node_load_max_over_mean[index]),
            _ratio(None if unbalanced is None else unbalanced[index]),
        ]
        for index, name in enumerate(layer_names)
    ]
    render_table(
        None,
        ["layer", "replicated (expert x copies)", "GPU max/mean", "node max/mean", "in order, no replicas"],
        rows,
        right_align_from=2,
        console=console,
    )
    console.print(
        f"all layers: busiest GPU over mean {placement.overall_gpu_load_max_over_mean:.3f} "
        "(sum over layers of the busiest GPU's tokens / sum of the mean GPU's)"
    )


def render_holdout_score(score: HoldoutScore, layer_names: Sequence[str]) -> None:
    """Print a placement's busiest GPU over mean on the window it was made on and on a later one."""
    console = make_console()
    unbalanced = score.unbalanced_gpu_load_max_over_mean
    rows = [
        [
            name,
            _ratio(score.in_sample_gpu_load_max_over_mean[index]),
            _ratio(score.out_of_sample_gpu_load_max_over_mean[index]),
            _ratio(score.refit_gpu_load_max_over_mean[index]),
            _ratio(None if unbalanced is None else unbalanced[index]),
        ]
        for index, name in enumerate(layer_names)
    ]
    render_table(
        f"Placed on {score.num_steps_placed} step{'s' if score.num_steps_placed > 1 else ''}, "
        f"scored on the next {score.num_steps_scored}: busiest GPU over mean",
        ["layer", "in-sample", "out-of-sample", "placed afresh on it", "in order, no replicas"],
        rows,
        right_align_from=1,
        console=console,
    )
    out_of_sample, refit = _ratio(score.overall_out_of_sample), _ratio(score.overall_refit)
    console.print(
        f"all layers: in-sample {score.overall_in_sample:.3f}, out-of-sample {out_of_sample} (placed "
        f"afresh {refit}, in order {_ratio(score.overall_unbalanced)}); serving the later window with "
        f"this placement costs {quotient_of_shown(out_of_sample, refit):.3f}x a fresh one"
    )


def render_load_stats(stats: LoadStats) -> None:
    """Print skew per layer, the hottest experts, and imbalance against the number of replicas."""
    console = make_console()
    routing = f"top-{stats.top_k}" if stats.top_k else "top-k not recorded: tokens unknown"
    console.print(
        f"[bold]{stats.num_layers} MoE layers x {stats.num_experts} experts[/bold], {routing}, "
        f"{stats.num_steps} step{'s' if stats.num_steps > 1 else ''}"
    )
    render_table(
        "Skew per layer",
        [
            "layer",
            "tokens",
            "token-expert pairs",
            "hottest/mean",
            "CV",
            "effective experts",
            "top 1/8 share",
            "hottest",
        ],
        [
            [
                layer.layer,
                "-" if layer.num_tokens is None else format_count(layer.num_tokens),
                format_count(layer.num_token_expert_pairs),
                f"{layer.hottest_over_mean:.2f}",
                f"{layer.coefficient_of_variation:.2f}",
                f"{layer.effective_experts:.1f}",
                format_percent(layer.top_eighth_share),
                " ".join(str(expert) for expert in layer.hottest_experts),
            ]
            for layer in stats.layers
        ],
        console=console,
    )
    render_table(
        "Hottest experts",
        ["layer", "expert", "share of layer", "x mean expert"],
        [
            [hot.layer, str(hot.expert), format_percent(hot.share), f"{hot.over_mean:.2f}"]
            for hot in stats.hot_experts
        ],
        console=console,
    )
    placement = f"{stats.num_gpus} GPUs" + (
        f", {stats.num_nodes} nodes, {stats.num_groups} groups" if stats.num_nodes > 1 else ""
    )
    rows = [
        [
            "in order, no replicas",
            "0",
            _ratio(stats.unbalanced_overall_gpu_load_max_over_mean),
            _ratio(stats.unbalanced_worst_layer_gpu_load_max_over_mean),
        ]
    ]
    rows += [
        [
            f"{effect.num_replicas} balanced",
            str(effect.num_redundant_experts),
            _ratio(effect.overall_gpu_load_max_over_mean),
            _ratio(effect.worst_layer_gpu_load_max_over_mean),
        ]
        for effect in stats.replicas
    ]
    render_table(
        f"Busiest GPU over mean on {placement}",
        ["replicas", "redundant", "all layers", "worst layer"],
        rows,
        console=console,
    )


def load_stats_figure(load: ExpertLoad, stats: LoadStats) -> Figure:
    """Two panels: tokens per expert over the layer mean (a heat map), and busiest-over-mean GPU
    against replicas."""
    figure, _ = new_figure(11.0, 4.5)
    figure.clf()  # two panels of the house figure
    heat = figure.add_subplot(1, 2, 1)
    counts = load.array()
    means = counts.mean(axis=1, keepdims=True)
    relative = np.divide(counts, means, out=np.ones_like(counts), where=means > 0)
    image = heat.imshow(relative, aspect="auto", cmap="viridis", interpolation="nearest")
    heat.set_xlabel("expert")
    heat.set_ylabel("MoE layer")
    heat.set_title("tokens / layer mean")
    figure.colorbar(image, ax=heat)
    curve = figure.add_subplot(1, 2, 2)
    curve.grid(True, color="#e2e8f0", linewidth=0.8)
    replicas = [effect.num_replicas for effect in stats.replicas]
    curve.plot(
        replicas,
        [effect.overall_gpu_load_max_over_mean for effect in stats.replicas],
        marker="o",
        color=series_color(0),
        label="balanced, all layers",
    )
    curve.plot(
        replicas,
        [effect.worst_layer_gpu_load_max_over_mean for effect in stats.replicas],
        marker="s",
        color=series_color(1),
        label="balanced, worst layer",
    )
    if stats.unbalanced_overall_gpu_load_max_over_mean is not None:
        curve.axhline(
            stats.unbalanced_overall_gpu_load_max_over_mean,
            color=series_color(2),
            linestyle="--",
            label="in order, no replicas",
        )
    curve.axhline(1.0, color=category_color("sol"), linewidth=0.8)
    curve.set_xlabel(f"physical experts on {stats.num_gpus} GPUs")
    curve.set_ylabel("busiest GPU / mean GPU")
    curve.legend(frameon=False)
    figure.tight_layout()
    return figure


def save_load_stats_plot(load: ExpertLoad, stats: LoadStats, path: Path) -> list[Path]:
    """Write :func:`load_stats_figure` as ``path`` (PNG or SVG by its suffix; both without one)."""
    stem, formats = plot_paths(path, name="expert-load", default_formats=("png", "svg"))
    return save_figure(load_stats_figure(load, stats), stem, formats)


def render_synthetic_load(load: ExpertLoad, path: Path) -> None:
    """Print what a synthetic load holds and where it was written."""
    counts = load.array()
    hottest = counts.max(axis=1) / counts.mean(axis=1)
    console = make_console()
    console.print(f"wrote {path}: {load.source}")
    console.print(
        f"{load.num_layers} layers x {load.num_experts} experts; hottest expert over the mean expert: "
        f"{hottest.mean():.2f} on average, {hottest.max():.2f} at most"
    )


def render_expert_load_effect(effect: ExpertLoadEffect) -> None:
    """Print what the measured expert load costs the prediction."""
    console = make_console()
    step = "step" if effect.workload == "train" else "iteration"
    layers = np.asarray(effect.layer_imbalance)
    console.print(f"[bold]Expert load[/bold] ({effect.source or 'given'})")
    if effect.ep == 1:
        console.print(
            f"  no expert parallelism: every GPU holds all {effect.num_logical_experts} experts, "
            "so their load cannot be uneven across GPUs"
        )
        return
    console.print(
        f"  EP {effect.ep} over {effect.num_nodes} node{'s' if effect.num_nodes > 1 else ''}, "
        f"{effect.num_physical_experts} physical experts ({effect.num_redundant_experts} redundant), "
        f"{effect.policy} placement"
    )
    console.print(
        f"  busiest GPU over mean after balancing: {effect.expert_imbalance:.3f} used "
        f"(layers {layers.min():.3f} to {layers.max():.3f}, mean {layers.mean():.3f})"
    )
    console.print(
        f"  the imbalance costs {format_duration(effect.imbalance_cost_s)} of the "
        f"{format_duration(effect.step_s)} {step} ({format_percent(effect.imbalance_share)}); "
        f"perfectly balanced experts: {format_duration(effect.balanced_step_s)}"
    )
    if effect.unbalanced_step_s is not None and effect.unbalanced_expert_imbalance is not None:
        console.print(
            f"  experts in order without replicas: {effect.unbalanced_expert_imbalance:.3f}, "
            f"{format_duration(effect.unbalanced_step_s)} per {step}"
        )
    if effect.num_redundant_experts:
        console.print(f"  redundant experts hold {format_bytes(effect.redundant_expert_bytes)} per GPU")


__all__ = [
    "load_stats_figure",
    "render_expert_load_effect",
    "render_expert_placement",
    "render_load_stats",
    "render_synthetic_load",
    "save_load_stats_plot",
]
