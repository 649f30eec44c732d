"""``lightspeed search train|infer``: every valid plan, ranked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from lightspeed.cli._common import json_option, print_json
from lightspeed.cli._infer import search_infer
from lightspeed.cli._sol_options import (
    calibration_option,
    expert_load_options,
    model_options,
    overlap_options,
    parse_plan_text,
    resolve_cluster,
    resolve_efficiency,
    resolve_expert_balance,
    resolve_model,
    stack_option,
    system_options,
    with_expert_load,
)
from lightspeed.cli.options import ROWS, SEQ_LEN, SEQUENCES, TOKENS
from lightspeed.report import render_expert_load_effect, render_search_result
from lightspeed.sol import TRAINING_PRECISIONS, TrainingPlan, search_training, training_load_effect


@click.group()
def command() -> None:
    """Search every plan of a model on a system and rank them."""


command.add_command(search_infer)


@command.command("train")
@model_options
@system_options
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
@click.option("--top", type=ROWS, default=5, show_default=True, help="Plans to show.")
@click.option(
    "--tokens", "num_tokens", type=TOKENS, help="Token budget for time-to-train and GPU-hours (e.g. 15T)."
)
@click.option(
    "--allow-cross-domain-tp", is_flag=True, help="Also try TP groups larger than the NVLink domain."
)
@click.option(
    "--schedules",
    default="1f1b",
    show_default=True,
    help="Pipeline schedules to try, comma-separated (1f1b, gpipe, zb1p, dualpipe, dualpipev); "
    "interleaving is tried through vpp.",
)
@overlap_options
@click.option(
    "--compare-plan",
    "compare_text",
    help="A plan to rank against the search, e.g. 'tp=8,pp=16,vpp=6,mb=1,recompute=partial'.",
)
@stack_option
@click.option(
    "--sharp", is_flag=True, help="In-network reduction on the scale-out switches (InfiniBand SHARP)."
)
@expert_load_options
@calibration_option
@json_option
def train(
    *,
    model_name: str | None,
    config_path: Path | None,
    system_text: str,
    num_gpus: int | None,
    global_batch: int,
    seq_len: int,
    precision: str,
    top: int,
    num_tokens: float | None,
    allow_cross_domain_tp: bool,
    schedules: str,
    tp_overlap: bool | None,
    dp_overlap: bool | None,
    compare_text: str | None,
    stack_name: str | None,
    sharp: bool,
    expert_load_paths: tuple[Path, ...],
    expert_replicas: int | None,
    calibration: str | None,
    as_json: bool,
) -> None:
    """Every valid training plan, ranked by throughput among those that fit, with why the best wins,
    its margin, the ties within the model's error (simplest first) and a named plan's rank."""
    model = resolve_model(model_name, config_path)
    cluster = resolve_cluster(system_text, num_gpus)
    balance = resolve_expert_balance(expert_load_paths, expert_replicas, model)
    efficiency = resolve_efficiency(calibration)
    compare_plan = None
    if compare_text is not None:
        compare_plan = TrainingPlan(**parse_plan_text(compare_text, cluster.num_accelerators))
    result = search_training(
        model=model,
        cluster=cluster,
        global_batch_size=global_batch,
        seq_len=seq_len,
        precision=precision,
        top=top,
        efficiency=efficiency,
        num_tokens=num_tokens,
        template=TrainingPlan(tp_overlap=tp_overlap, dp_overlap=dp_overlap),
        schedules=tuple(part.strip() for part in schedules.split(",") if part.strip()),
        max_tp=None if allow_cross_domain_tp else cluster.system.scale_up_domain_size,
        sharp=sharp,
        num_gpus=num_gpus,
        require_fit=True,
        expert_balance=balance,
        stack=stack_name,
        compare_plan=compare_plan,
    )
    effect = None
    if balance is not None and result.plans:
        effect = training_load_effect(
            estimate=result.plans[0],
            balance=balance,
            model=model,
            cluster=cluster,
            efficiency=efficiency,
            sharp=sharp,
        )
    if as_json:
        print_json(with_expert_load(search_json(result), effect))
        return
    render_search_result(result)
    if effect is not None:
        render_expert_load_effect(effect)


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
        "stack": result.plans[0].stack if result.plans else None,
    }
