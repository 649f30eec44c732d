"""``lightspeed plan train|infer``: predict one plan."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from lightspeed.cli._common import json_option, print_json
from lightspeed.cli._infer import plan_infer
from lightspeed.cli._sol_options import (
    calibration_option,
    model_options,
    resolve_cluster,
    resolve_efficiency,
    resolve_model,
    stack_option,
    system_options,
)
from lightspeed.errors import InvalidPlanError
from lightspeed.report import render_train_estimate
from lightspeed.sol import RECOMPUTE, SCHEDULES, TRAINING_PRECISIONS, TrainingPlan, estimate_training
from lightspeed.units import parse_count


@click.group()
def command() -> None:
    """Predict what one training or inference plan reaches on a system."""


def _derive_dp(num_gpus: int, tp: int, pp: int, cp: int, dp: int | None) -> int:
    if dp is not None:
        return dp
    other = tp * pp * cp
    if num_gpus % other:
        raise InvalidPlanError(
            f"{num_gpus} GPUs do not split into tp x pp x cp = {other}; "
            "choose degrees whose product divides it"
        )
    return num_gpus // other


command.add_command(plan_infer)


@command.command("train")
@model_options
@system_options
@click.option("--tp", type=click.IntRange(min=1), default=1, show_default=True, help="Tensor parallel size.")
@click.option(
    "--pp", type=click.IntRange(min=1), default=1, show_default=True, help="Pipeline parallel size."
)
@click.option("--dp", type=click.IntRange(min=1), help="Data parallel size (default: GPUs / (tp x pp x cp)).")
@click.option("--ep", type=click.IntRange(min=1), default=1, show_default=True, help="Expert parallel size.")
@click.option("--cp", type=click.IntRange(min=1), default=1, show_default=True, help="Context parallel size.")
@click.option(
    "--vpp", type=click.IntRange(min=1), default=1, show_default=True, help="Virtual pipeline chunks per GPU."
)
@click.option(
    "--zero", type=click.IntRange(0, 3), default=1, show_default=True, help="ZeRO stage (3 = FSDP)."
)
@click.option("--schedule", type=click.Choice(SCHEDULES), default="1f1b", show_default=True)
@click.option(
    "--micro-batch",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Sequences per micro-batch.",
)
@click.option(
    "--global-batch", type=click.IntRange(min=1), required=True, help="Sequences per optimizer step."
)
@click.option(
    "--seq",
    "seq_len",
    type=click.IntRange(min=1),
    default=4096,
    show_default=True,
    help="Tokens per sequence.",
)
@click.option("--precision", type=click.Choice(TRAINING_PRECISIONS), default="bf16", show_default=True)
@click.option("--recompute", type=click.Choice(RECOMPUTE), default="none", show_default=True)
@click.option("--tokens", "tokens_text", help="Token budget for time-to-train and GPU-hours (e.g. 14.8T).")
@click.option("--no-sequence-parallel", is_flag=True, help="Turn Megatron sequence parallelism off.")
@click.option(
    "--tp-overlap/--no-tp-overlap",
    default=None,
    help="Hide TP communication behind GEMMs (default: the stack's).",
)
@click.option(
    "--dp-overlap/--no-dp-overlap",
    default=None,
    help="Hide DP traffic behind compute (default: the stack's).",
)
@click.option(
    "--ep-overlap/--no-ep-overlap", default=None, help="Hide EP all-to-all (default: only with DualPipe)."
)
@click.option(
    "--expert-imbalance",
    type=click.FloatRange(min=1.0),
    default=1.0,
    show_default=True,
    help="Busiest-GPU expert load factor.",
)
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
    zero: int,
    schedule: str,
    micro_batch: int,
    global_batch: int,
    seq_len: int,
    precision: str,
    recompute: str,
    tokens_text: str | None,
    no_sequence_parallel: bool,
    tp_overlap: bool | None,
    dp_overlap: bool | None,
    ep_overlap: bool | None,
    expert_imbalance: float,
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
    plan = TrainingPlan(
        tp=tp,
        pp=pp,
        dp=_derive_dp(num_gpus or cluster.num_accelerators, tp, pp, cp, dp),
        ep=ep,
        cp=cp,
        vpp=vpp,
        zero_stage=zero,
        schedule=schedule,
        micro_batch_size=micro_batch,
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
    estimate = estimate_training(
        model=model,
        cluster=cluster,
        plan=plan,
        efficiency=resolve_efficiency(calibration),
        num_tokens=parse_count(tokens_text) if tokens_text else None,
        check_fit=not no_fit_check,
        sharp=sharp,
        stack=stack_name,
    )
    if as_json:
        print_json(train_json(estimate))
    else:
        render_train_estimate(estimate)


def train_json(estimate: Any) -> dict[str, Any]:
    """``plan train --json``: the plan object of the search contract plus the breakdowns."""
    return {**estimate.plan_summary(), **estimate.to_dict()}
