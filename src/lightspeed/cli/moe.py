"""``lightspeed moe balance|stats|synth``: place redundant experts, describe a load, make one."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final, NoReturn

import click

from lightspeed.cli._common import given_flags, json_option, print_json, refuse_together
from lightspeed.cli.options import (
    EXPERT_GROUPS,
    EXPERTS,
    GPUS,
    HOLDOUT_FRACTION,
    LOAD_SKEW,
    LOAD_STEPS,
    MOE_LAYERS,
    NODES,
    PHYSICAL_EXPERT_LIST,
    PHYSICAL_EXPERTS,
    SEED,
    TOKENS_PER_LAYER,
    TOP_K,
    TOP_ROWS,
)
from lightspeed.cli.text_options import OutputPath
from lightspeed.errors import DataFileError


@click.group("moe")
def command() -> None:
    """MoE expert load: balance it over GPUs and nodes, describe its skew, synthesize one."""


def _load(paths: tuple[Path, ...], num_experts: int | None, how: str = "--load FILE") -> Any:
    from lightspeed.moe import read_expert_loads

    if not paths:
        raise click.UsageError(f"give an expert-load file ({how})")
    return read_expert_loads(paths, num_experts=num_experts)


def _load_option(function: Any) -> Any:
    function = click.option(
        "--experts",
        "num_experts",
        type=EXPERTS,
        help="Experts per layer (pads a sparse CSV whose last experts got no tokens).",
    )(function)
    return click.option(
        "--load",
        "load_paths",
        multiple=True,
        type=click.Path(path_type=Path),
        help="Expert-load file: lightspeed JSON, SGLang CSV, wide CSV or a JSON table (repeatable: "
        "one file per rank, added).",
    )(function)


def _layout_options(function: Any) -> Any:
    function = click.option("--nodes", "num_nodes", type=NODES, default=1, show_default=True, help="Nodes.")(
        function
    )
    return click.option(
        "--groups",
        "num_groups",
        type=EXPERT_GROUPS,
        default=1,
        show_default=True,
        help="Expert groups of group-limited routing (hierarchical placement when they divide the nodes).",
    )(function)


@command.command("balance")
@_load_option
@click.option(
    "--replicas", "num_replicas", type=PHYSICAL_EXPERTS, required=True, help="Physical experts in all."
)
@_layout_options
@click.option("--gpus", "num_gpus", type=GPUS, required=True, help="GPUs of the EP group.")
@click.option(
    "--holdout",
    "holdout_paths",
    multiple=True,
    type=click.Path(path_type=Path),
    help="A later window's expert-load file(s): score the placement on it (out-of-sample).",
)
@click.option(
    "--holdout-fraction",
    type=HOLDOUT_FRACTION,
    help="Place on the earlier steps of a load with per-step counts, score on its last fraction (e.g. 25%).",
)
@json_option
def balance(
    *,
    load_paths: tuple[Path, ...],
    num_experts: int | None,
    num_replicas: int,
    num_groups: int,
    num_nodes: int,
    num_gpus: int,
    holdout_paths: tuple[Path, ...],
    holdout_fraction: float | None,
    as_json: bool,
) -> None:
    """Place REPLICAS physical experts on GPUS GPUs for every layer of the load, busiest GPU first.

    With --holdout or --holdout-fraction the placement is made on one window and also scored on a
    later one (in-sample and out-of-sample busiest GPU over mean), as a deployment that rebalances
    periodically serves the next window with the last placement.

    JSON: {"policy", "num_replicas", ..., "layers": [{"name", "phy2log", "replica_counts",
    "gpu_load", "gpu_load_max_over_mean", "node_load_max_over_mean",
    "unbalanced_gpu_load_max_over_mean"}], "gpu_load_max_over_mean", "holdout": {...} | null};
    GPU g holds slots g x (REPLICAS / GPUS) onward of phy2log.
    """
    from lightspeed.moe import balance_experts, holdout_score
    from lightspeed.report import render_expert_placement, render_holdout_score

    load, later = _windows(load_paths, holdout_paths, holdout_fraction, num_experts)
    placement = balance_experts(
        load=load.array(),
        num_replicas=num_replicas,
        num_groups=num_groups,
        num_nodes=num_nodes,
        num_gpus=num_gpus,
    )
    score = None
    if later is not None:
        score = holdout_score(
            placement=placement,
            later=later.array(),
            num_steps_placed=load.num_steps,
            num_steps_scored=later.num_steps,
        )
    if as_json:
        print_json({**balance_json(placement, load.layer_names), "holdout": _holdout_json(score)})
        return
    render_expert_placement(placement, load.layer_names)
    if score is not None:
        render_holdout_score(score, load.layer_names)
        if holdout_fraction is not None:
            _say_rounded_windows(holdout_fraction, score.num_steps_placed, score.num_steps_scored)


# a holdout window this far (as a share of the steps) from the fraction asked is said to be rounded
ROUNDING_SAID: Final = 0.01


def _say_rounded_windows(asked: float, num_placed: int, num_scored: int) -> None:
    """The windows are whole steps: say so where the scored share is not the fraction asked."""
    scored = num_scored / (num_placed + num_scored)
    if abs(scored - asked) > ROUNDING_SAID:
        click.echo(
            f"note: --holdout-fraction {asked:.0%} of {num_placed + num_scored} steps is {num_scored} "
            f"step{'s' if num_scored > 1 else ''} ({scored:.0%}): the windows are whole steps, at least "
            "one each"
        )


def _windows(
    load_paths: tuple[Path, ...],
    holdout_paths: tuple[Path, ...],
    holdout_fraction: float | None,
    num_experts: int | None,
) -> tuple[Any, Any]:
    """The window to place on and the later one to score on (``None`` without a holdout)."""
    from lightspeed.moe import split_steps

    if holdout_paths and holdout_fraction is not None:
        raise click.UsageError("give --holdout FILE or --holdout-fraction F, not both")
    load = _load(load_paths, num_experts)
    if holdout_paths:
        later = _load(holdout_paths, num_experts, "--holdout FILE")
        _refuse_same_window(load_paths, holdout_paths, num_experts=num_experts, load=load, later=later)
        return load, later
    if holdout_fraction is not None:
        return split_steps(load, holdout_fraction=holdout_fraction)
    return load, None


def _refuse_same_window(
    load_paths: tuple[Path, ...],
    holdout_paths: tuple[Path, ...],
    *,
    num_experts: int | None,
    load: Any,
    later: Any,
) -> None:
    """A --holdout window with the counts of the --load window or of one --load file (the same file
    by another name or through a link, a copy, or the same numbers written in another format or
    layout) would score the placement in-sample as if out-of-sample: refused, as --load named twice is.
    """
    from lightspeed.moe import read_expert_load

    if later.same_counts(load):
        _same_window(" + ".join(map(str, holdout_paths)), " + ".join(map(str, load_paths)), load)
    if len(load_paths) == 1 and len(holdout_paths) == 1:
        return  # the windows are the files: compared above
    placed = [(path, read_expert_load(path, num_experts=num_experts)) for path in load_paths]
    for path in holdout_paths:
        scored = read_expert_load(path, num_experts=num_experts)
        for placed_path, placed_load in placed:
            if scored.same_counts(placed_load):
                _same_window(str(path), str(placed_path), placed_load)


def _same_window(later: str, placed: str, load: Any) -> NoReturn:
    files = "files" if " + " in placed else "file"
    raise DataFileError(
        later,
        f"the --holdout window is the --load {files} {placed}: the same counts ({load.num_layers} layers x "
        f"{load.num_experts} experts, every count equal, whatever the file's format or layout), so "
        "out-of-sample would be in-sample",
        fix="give --holdout a later window's load file (recorded after the --load window), or "
        "--holdout-fraction F to split one load with per-step counts",
    )


def _holdout_json(score: Any) -> dict[str, Any] | None:
    return None if score is None else dict(score.to_dict())


def balance_json(placement: Any, layer_names: tuple[str, ...]) -> dict[str, Any]:
    """The ``moe balance --json`` contract."""
    unbalanced = placement.unbalanced_gpu_load_max_over_mean
    layers = [
        {
            "name": name,
            "phy2log": list(placement.phy2log[index]),
            "replica_counts": list(placement.replica_counts[index]),
            "gpu_load": list(placement.gpu_load[index]),
            "gpu_load_max_over_mean": placement.gpu_load_max_over_mean[index],
            "node_load_max_over_mean": placement.node_load_max_over_mean[index],
            "unbalanced_gpu_load_max_over_mean": None if unbalanced is None else unbalanced[index],
        }
        for index, name in enumerate(layer_names)
    ]
    return {
        "policy": placement.policy,
        "num_layers": placement.num_layers,
        "num_logical_experts": placement.num_logical_experts,
        "num_replicas": placement.num_replicas,
        "num_groups": placement.num_groups,
        "num_nodes": placement.num_nodes,
        "num_gpus": placement.num_gpus,
        "slots_per_gpu": placement.slots_per_gpu,
        "layers": layers,
        "gpu_load_max_over_mean": placement.overall_gpu_load_max_over_mean,
    }


@command.command("stats")
@click.argument("files", nargs=-1, type=click.Path(path_type=Path))
@click.option("--experts", "num_experts", type=EXPERTS, help="Experts per layer (pads sparse CSV).")
@click.option(
    "--gpus",
    "num_gpus",
    type=GPUS,
    default=8,
    show_default=True,
    help="GPUs to balance over for the replicas table.",
)
@click.option(
    "--replicas",
    "num_replicas",
    type=PHYSICAL_EXPERT_LIST,
    help="Physical expert counts to try, comma-separated "
    "(default: the fewest that split over the GPUs, then 1, 2 and 4 more per GPU).",
)
@_layout_options
@click.option("--hot", "num_hot", type=TOP_ROWS, default=10, show_default=True, help="Hot experts.")
@click.option(
    "--plot",
    "plot_path",
    type=OutputPath(example="expert-load.png"),
    help="Write the heat map and replicas curve.",
)
@json_option
def stats(
    *,
    files: tuple[Path, ...],
    num_experts: int | None,
    num_gpus: int,
    num_replicas: tuple[int, ...] | None,
    num_groups: int,
    num_nodes: int,
    num_hot: int,
    plot_path: Path | None,
    as_json: bool,
) -> None:
    """Skew per layer, the hottest experts, and how the busiest GPU falls with more replicas.

    FILES are expert-load files (several: one per rank, added). JSON: the LoadStats record
    {"layers": [...], "hot_experts": [...], "replicas": [...], ...} plus "plots".
    """
    from lightspeed.moe import load_stats
    from lightspeed.report import render_load_stats, save_load_stats_plot

    load = _load(files, num_experts, "lightspeed moe stats FILE")
    result = load_stats(
        load=load,
        num_gpus=num_gpus,
        num_replicas=list(num_replicas) if num_replicas else None,
        num_groups=num_groups,
        num_nodes=num_nodes,
        num_hot=num_hot,
    )
    written = save_load_stats_plot(load, result, plot_path) if plot_path is not None else []
    if as_json:
        print_json({**result.to_dict(), "plots": [str(path) for path in written]})
        return
    render_load_stats(result)
    for path in written:
        click.echo(f"wrote {path}")


@command.command("synth")
@click.option("--layers", "num_layers", type=MOE_LAYERS, required=True, help="MoE layers.")
@click.option("--experts", "num_experts", type=EXPERTS, required=True, help="Experts per layer.")
@click.option(
    "--distribution", type=click.Choice(["zipf", "dirichlet", "uniform"]), default="zipf", show_default=True
)
@click.option(
    "--skew",
    type=LOAD_SKEW,
    default=1.0,
    show_default=True,
    help="Zipf exponent (0 = uniform), or the Dirichlet concentration (small = skewed).",
)
@click.option(
    "--tokens",
    "num_tokens",
    type=TOKENS_PER_LAYER,
    default=65536,
    show_default=True,
    help="Tokens per layer (per step with --steps).",
)
@click.option("--top-k", type=TOP_K, default=1, show_default=True, help="Distinct experts per token.")
@click.option(
    "--steps",
    "num_steps",
    type=LOAD_STEPS,
    default=1,
    show_default=True,
    help="Steps of --tokens tokens each, kept one by one (for moe balance --holdout-fraction).",
)
@click.option("--seed", type=SEED, default=0, show_default=True)
@click.option(
    "--out",
    "out_path",
    type=OutputPath(dir_okay=False, example="load.json", what="expert load", new_folder_ok=False),
    required=True,
    help="Expert-load file to write.",
)
@json_option
def synth(
    *,
    num_layers: int,
    num_experts: int,
    distribution: str,
    skew: float,
    num_tokens: int,
    top_k: int,
    num_steps: int,
    seed: int,
    out_path: Path,
    as_json: bool,
) -> None:
    """Write a synthetic expert load (for planning when no log exists).

    JSON: {"path", "source", "num_layers", "num_experts", "hottest_over_mean": [per layer]}.
    """
    from lightspeed.moe import synthetic_load, write_expert_load
    from lightspeed.report import render_synthetic_load

    if distribution == "uniform":
        refuse_together(
            given_flags("skew"), "a uniform load has no skew (use --distribution zipf or dirichlet)"
        )
    load = synthetic_load(
        num_layers=num_layers,
        num_experts=num_experts,
        distribution=distribution,
        skew=skew,
        num_tokens=num_tokens,
        top_k=top_k,
        seed=seed,
        num_steps=num_steps,
    )
    path = write_expert_load(load, out_path)
    if as_json:
        counts = load.array()
        print_json(
            {
                "path": str(path),
                "source": load.source,
                "num_layers": load.num_layers,
                "num_experts": load.num_experts,
                "hottest_over_mean": (counts.max(axis=1) / counts.mean(axis=1)).tolist(),
            }
        )
    else:
        render_synthetic_load(load, path)
