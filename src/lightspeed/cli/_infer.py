"""``lightspeed plan infer`` and ``lightspeed search infer`` (registered by ``plan`` and ``search``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from lightspeed.cli._common import get_context, json_option, print_json
from lightspeed.cli._config import config_options, configuration, field_options
from lightspeed.cli._sol_options import with_expert_load
from lightspeed.jobs import run
from lightspeed.report import (
    render_expert_load_effect,
    render_inference_estimate,
    render_inference_search,
    save_pareto_plot,
)
from lightspeed.sol import ServingConfig, ServingJob, ServingSearchConfig

# ``--isl`` and ``--osl`` for commands that take a request shape without a whole deployment
load_options = field_options(
    ServingJob, "input_tokens", "output_tokens", rename={"input_tokens": "isl", "output_tokens": "osl"}
)


@click.command("infer")
@config_options(ServingConfig)
@json_option
def plan_infer(*, as_json: bool, **values: Any) -> None:
    """Predict TTFT, TPOT, throughput and the KV-limited batch of one serving deployment."""
    config = configuration(ServingConfig, values)
    prediction = run(config, catalog=get_context().catalog(), models=get_context().models())
    if as_json:
        payload = with_expert_load(infer_json(prediction.estimate), prediction.expert_load)
        print_json({**payload, "config": config.to_file_dict()})
        return
    render_inference_estimate(prediction.estimate)
    if prediction.expert_load is not None:
        render_expert_load_effect(prediction.expert_load)


def infer_json(estimate: Any) -> dict[str, Any]:
    """``plan infer --json``: the headline keys, then the whole estimate."""
    return {**estimate.summary(), **estimate.to_dict()}


@click.command("infer")
@config_options(ServingSearchConfig)
@click.option("--plot", "plot_path", type=click.Path(path_type=Path), help="Write the Pareto plot (PNG/SVG).")
@json_option
def search_infer(*, plot_path: Path | None, as_json: bool, **values: Any) -> None:
    """Best deployment (TP/EP/PP per replica, replicas, batch) under latency bounds, and the Pareto
    frontier of tokens/s per GPU against tokens/s per user."""
    config = configuration(ServingSearchConfig, values)
    prediction = run(config, catalog=get_context().catalog(), models=get_context().models())
    result = prediction.result
    written = save_pareto_plot(result, plot_path) if plot_path is not None else []
    if as_json:
        payload = {**search_infer_json(result), "plots": [str(path) for path in written]}
        print_json({**with_expert_load(payload, prediction.expert_load), "config": config.to_file_dict()})
        return
    render_inference_search(result)
    if prediction.expert_load is not None:
        render_expert_load_effect(prediction.expert_load)
    for path in written:
        click.echo(f"wrote {path}")


def search_infer_json(result: Any) -> dict[str, Any]:
    """The ``search infer --json`` contract."""
    best = result.best
    return {
        "best": {**best.summary(), "plan": best.plan.to_dict(), "batch_per_replica": best.batch_per_replica},
        "frontier": [point.to_dict() for point in result.frontier],
        "num_points_evaluated": result.num_points_evaluated,
        "num_points_feasible": result.num_points_feasible,
        "elapsed_s": result.elapsed_s,
        "constraints": list(result.constraints),
        "estimate": best.to_dict(),
    }
