"""``lightspeed plan train|infer``: predict one plan (options generated from its configuration)."""

from __future__ import annotations

from typing import Any

import click

from lightspeed.cli._common import get_context, json_option, print_json
from lightspeed.cli._config import config_options, configuration
from lightspeed.cli._infer import plan_infer
from lightspeed.cli._sol_options import refuse_on_dense, with_expert_load
from lightspeed.errors import UserInputError
from lightspeed.jobs import run
from lightspeed.report import render_expert_load_effect, render_training_estimate
from lightspeed.sol import TrainingConfig


@click.group()
def command() -> None:
    """Predict what one training or inference plan reaches on a system."""


command.add_command(plan_infer)


@command.command("train")
@config_options(TrainingConfig)
@json_option
def train(*, as_json: bool, **values: Any) -> None:
    """Predict step time, its breakdown, memory, MFU and time-to-train of one training plan."""
    config = configuration(TrainingConfig, values)
    check_training(config)
    prediction = run(config, catalog=get_context().catalog(), models=get_context().models())
    if as_json:
        payload = with_expert_load(train_json(prediction.estimate), prediction.expert_load)
        print_json({**payload, "config": config.to_file_dict()})
        return
    render_training_estimate(prediction.estimate)
    if prediction.expert_load is not None:
        render_expert_load_effect(prediction.expert_load)


def check_training(config: TrainingConfig) -> None:
    """Refuse the settings a training plan would ignore (from the command line or a plan file alike):
    virtual pipeline chunks without pipeline stages, and MoE settings on a dense model (as ``--ep``)."""
    if config.vpp > 1 and (config.pp or 1) == 1:
        raise UserInputError(
            f"--vpp {config.vpp} splits each pipeline stage into virtual chunks and pp=1 has none: "
            "give --pp 2 or more with it, or leave --vpp out"
        )
    refuse_on_dense(
        config,
        {
            "--ep-dispatcher": config.ep_dispatcher is not None,
            "--ep-overlap": config.ep_overlap is not None,
            "--expert-imbalance": config.expert_imbalance != 1.0,
        },
    )


# A search's plan summaries carry their intervals under these names; a whole estimate has them in
# ``intervals`` already, so plan train writes them once.
_SUMMARY_ONLY = ("step_time_interval_s", "mfu_interval")


def train_json(estimate: Any) -> dict[str, Any]:
    """``plan train --json``: the plan object of the search contract plus the breakdowns."""
    summary = {key: value for key, value in estimate.plan_summary().items() if key not in _SUMMARY_ONLY}
    return {**summary, **estimate.to_dict()}
