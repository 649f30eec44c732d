"""``lightspeed search train|infer``: every valid plan, ranked (options generated from the configuration)."""

from __future__ import annotations

from typing import Any

import click

from lightspeed.cli._common import get_context, json_option, print_json
from lightspeed.cli._config import config_options, configuration
from lightspeed.cli._infer import search_infer
from lightspeed.cli._sol_options import refuse_on_dense, with_expert_load
from lightspeed.jobs import run
from lightspeed.report import render_expert_load_effect, render_search_result
from lightspeed.sol import TrainingSearchConfig


@click.group()
def command() -> None:
    """Search every plan of a model on a system and rank them."""


command.add_command(search_infer)


@command.command("train")
@config_options(TrainingSearchConfig)
@json_option
def train(*, as_json: bool, **values: Any) -> None:
    """Every valid training plan, ranked by throughput among those that fit, with why the best wins,
    its margin, the ties within the model's error (simplest first) and a named plan's rank."""
    config = configuration(TrainingSearchConfig, values)
    check_training_search(config)
    prediction = run(config, catalog=get_context().catalog(), models=get_context().models())
    if as_json:
        payload = with_expert_load(search_json(prediction.result), prediction.expert_load)
        print_json({**payload, "config": config.to_file_dict()})
        return
    render_search_result(prediction.result)
    if prediction.expert_load is not None:
        render_expert_load_effect(prediction.expert_load)


def check_training_search(config: TrainingSearchConfig) -> None:
    """Refuse what a training search would misread (from the command line or a plan file alike): a
    schedule named twice or an empty one, and a dispatcher on a dense model (as ``--ep``); a
    --compare-plan is checked where it is read (:func:`~lightspeed.sol.parse_plan_text`)."""
    config.schedule_names()  # an empty or repeated schedule is refused before the search
    refuse_on_dense(config, {"--ep-dispatcher": config.ep_dispatcher is not None})


def search_json(result: Any) -> dict[str, Any]:
    """The ``search train --json`` contract."""
    return {
        "num_plans_evaluated": result.num_plans_evaluated,
        "num_plans_fitting": result.num_plans_fitting,
        "elapsed_s": result.elapsed_s,
        "plans": [estimate.plan_summary() for estimate in result.plans],
        "why_best": list(result.why_best),
        "margin_over_runner_up": result.margin_over_runner_up,
        "tolerance": result.tolerance,
        "ties": [estimate.plan_summary() for estimate in result.ties],
        "compared": None
        if result.compared is None
        else {
            **result.compared.estimate.plan_summary(),
            "margin": result.compared.margin,
            "rank": result.compared.rank,
            "within_uncertainty": result.compared.within_uncertainty,
        },
        "compared_refused": result.compared_refused,
        "stack": result.plans[0].stack if result.plans else None,
        "notes": list(result.notes),
    }
