"""``lightspeed plan train|infer``: predict one plan."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from lightspeed.cli._common import json_option, print_json
from lightspeed.cli._infer import plan_infer
from lightspeed.cli._sol_options import (
    calibration_option,
    expert_load_options,
    model_options,
    overlap_options,
    resolve_cluster,
    resolve_efficiency,
    resolve_expert_balance,
    resolve_model,
    stack_option,
    system_options,
    with_expert_load,
)
from lightspeed.cli.options import DEGREE, EXPERT_IMBALANCE, SEQ_LEN, SEQUENCES, TOKENS, VPP, ZERO_STAGE
from lightspeed.errors import UserInputError
from lightspeed.report import render_expert_load_effect, render_training_estimate
from lightspeed.sol import (
    RECOMPUTE,
    SCHEDULES,
    TRAINING_PRECISIONS,
    TrainingPlan,
    data_parallel_degree,
    estimate_training,
    plan_with_load,
    training_load_effect,
)


@click.group()
def command() -> None:
    """Predict what one training or inference plan reaches on a system."""


command.add_command(plan_infer)


@command.command("train")
@model_options
@system_options
@click.option("--tp", type=DEGREE, default=1, show_default=True, help="Tensor parallel size.")
@click.option("--pp", type=DEGREE, default=1, show_default=True, help="Pipeline parallel size.")
@click.option("--dp", type=DEGREE, help="Data parallel size (default: GPUs / (tp x pp x cp)).")
@click.option("--ep", type=DEGREE, default=1, show_default=True, help="Expert parallel size.")
@click.option("--cp", type=DEGREE, default=1, show_default=True, help="Context parallel size.")
@click.option("--vpp", type=VPP, default=1, show_default=True, help="Virtual pipeline chunks per GPU.")
@click.option(
    "--zero-stage",
    "--zero",
    "zero_stage",
    type=ZERO_STAGE,
    default=1,
    show_default=True,
    help="ZeRO stage (3 = FSDP).",
)
@click.option("--schedule", type=click.Choice(SCHEDULES), default="1f1b", show_default=True)
@click.option(
    "--micro-batch-size",
    "--micro-batch",
    "micro_batch_size",
    type=SEQUENCES,
    default=1,
    show_default=True,
    help="Sequences per micro-batch.",
)
@click.option("--global-batch", type=SEQUENCES, required=True, help="Sequences per optimizer step.")
@click.option(
    "--seq",
    "seq_len",
    type=SEQ_LEN,
    default=4096,
    show_default=True,
    help="Tokens per sequence.",
)
@click.option("--precision", type=click.Choice(TRAINING_PRECISIONS), default="bf16", show_default=True)
@click.option("--recompute", type=click.Choice(RECOMPUTE), default="none", show_default=True)
@click.option(
    "--tokens", "num_tokens", type=TOKENS, help="Token budget for time-to-train and GPU-hours (e.g. 14.8T)."
)
@click.option("--no-sequence-parallel", is_flag=True, help="Turn Megatron sequence parallelism off.")
@overlap_options
@click.option(
    "--ep-overlap/--no-ep-overlap", default=None, help="Hide EP all-to-all (default: only with DualPipe)."
)
@click.option(
    "--expert-imbalance",
    type=EXPERT_IMBALANCE,
    default=1.0,
    show_default=True,
    help="Busiest-GPU expert load factor (a quick what-if; --expert-load measures it).",
)
@expert_load_options
@click.option("--uneven-pipeline", is_flag=True, help="Allow layers not divisible by pp x vpp.")
@click.option(
    "--attention",
    "attention_impl",
    type=click.Choice(["flash", "flash2", "unfused"]),
    default=None,
    help="Attention kernel: flash (the device's best fused kernel), flash2 (FlashAttention-2), unfused "
    "(default: the stack's).",
)
@stack_option
@click.option(
    "--no-fit-check", is_flag=True, help="Show the estimate even if the plan does not fit in memory."
)
@click.option(
    "--sharp", is_flag=True, help="In-network reduction on the scale-out switches (InfiniBand SHARP)."
)
@calibration_option
@json_option
def train(
    *,
    model_name: str | None,
    config_path: Path | None,
    system_text: str,
    num_gpus: int | None,
    tp: int,
    pp: int,
    dp: int | None,
    ep: int,
    cp: int,
    vpp: int,
    zero_stage: int,
    schedule: str,
    micro_batch_size: int,
    global_batch: int,
    seq_len: int,
    precision: str,
    recompute: str,
    num_tokens: float | None,
    no_sequence_parallel: bool,
    tp_overlap: bool | None,
    dp_overlap: bool | None,
    ep_overlap: bool | None,
    expert_imbalance: float,
    expert_load_paths: tuple[Path, ...],
    expert_replicas: int | None,
    uneven_pipeline: bool,
    attention_impl: str | None,
    stack_name: str | None,
    no_fit_check: bool,
    sharp: bool,
    calibration: str | None,
    as_json: bool,
) -> None:
    """Predict step time, its breakdown, memory, MFU and time-to-train of one training plan."""
    model = resolve_model(model_name, config_path)
    if num_gpus is None and dp is not None:
        num_gpus = dp * tp * pp * cp
    cluster = resolve_cluster(system_text, num_gpus)
    balance = resolve_expert_balance(expert_load_paths, expert_replicas, model)
    if balance is not None and expert_imbalance != 1.0:
        raise UserInputError("give --expert-load or --expert-imbalance, not both")
    plan = TrainingPlan(
        tp=tp,
        pp=pp,
        dp=data_parallel_degree(num_gpus or cluster.num_accelerators, tp=tp, pp=pp, cp=cp, dp=dp),
        ep=ep,
        cp=cp,
        vpp=vpp,
        zero_stage=zero_stage,
        schedule=schedule,
        micro_batch_size=micro_batch_size,
        global_batch_size=global_batch,
        seq_len=seq_len,
        precision=precision,
        recompute=recompute,
        sequence_parallel=False if no_sequence_parallel else None,
        attention_impl=attention_impl,
        tp_overlap=tp_overlap,
        dp_overlap=dp_overlap,
        ep_overlap=ep_overlap,
        expert_imbalance=expert_imbalance,
        uneven_pipeline=uneven_pipeline,
    )
    if balance is not None:
        plan = plan_with_load(plan, balance=balance, cluster=cluster)
    efficiency = resolve_efficiency(calibration)
    estimate = estimate_training(
        free_settings=_left_free(dp),
        model=model,
        cluster=cluster,
        plan=plan,
        efficiency=efficiency,
        num_tokens=num_tokens,
        check_fit=not no_fit_check,
        sharp=sharp,
        num_gpus=num_gpus,
        stack=stack_name,
    )
    effect = None
    if balance is not None:
        effect = training_load_effect(
            estimate=estimate,
            balance=balance,
            model=model,
            cluster=cluster,
            efficiency=efficiency,
            sharp=sharp,
        )
    if as_json:
        print_json(with_expert_load(train_json(estimate), effect))
        return
    render_training_estimate(estimate)
    if effect is not None:
        render_expert_load_effect(effect)


def _left_free(dp: int | None) -> tuple[str, ...]:
    """The plan settings the user did not give (searched when the batch does not split over DP)."""
    context = click.get_current_context()
    names = ("tp", "pp", "cp", "micro_batch_size")
    free = tuple(name for name in names if context.get_parameter_source(name) is ParameterSource.DEFAULT)
    return (*free, "dp") if dp is None else free


def train_json(estimate: Any) -> dict[str, Any]:
    """``plan train --json``: the plan object of the search contract plus the breakdowns."""
    return {**estimate.plan_summary(), **estimate.to_dict()}
