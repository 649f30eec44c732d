"""``lightspeed memory``: bytes to hold a model and how many GPUs and nodes that takes."""

from __future__ import annotations

from typing import Any

import click

from lightspeed.cli._common import emit, get_context, json_option
from lightspeed.cli._completion import hardware_names, model_names
from lightspeed.cli.options import DEGREE, NAME, ZERO_STAGE
from lightspeed.report import render_memory_plan
from lightspeed.sol import plan_memory
from lightspeed.workload import resolve_model


@click.command("memory")
@click.option(
    "--model",
    "model_name",
    required=True,
    help="Model name, alias, or path to a config.json/TOML.",
    shell_complete=model_names,
)
@click.option(
    "--precision",
    help="Weight precision: released (the format the model's checkpoint is published in, as 'plan infer' "
    "assumes), fp32, bf16, fp16, fp8, mxfp4, nvfp4, ...; with --training the precision the "
    "run computes in (fp8/fp4 runs keep bf16 weights, a copy in the run's format - 1 byte for fp8, "
    "0.5625 for nvfp4 - and fp32 gradients, as 'plan train' counts) "
    "[default: released; bf16 with --training]",
)
@click.option("--training", is_flag=True, help="Hold training state: gradients, optimizer, master weights.")
@click.option("--optimizer", help="Optimizer with --training: adam, adamw, sgd, lion [default: adam].")
@click.option(
    "--zero-stage", "--zero", "zero_stage", type=ZERO_STAGE, help="ZeRO stage with --training [default: 0]."
)
@click.option("--dp", type=DEGREE, help="Data-parallel replicas [default: 1].")
@click.option(
    "--grad-precision",
    type=NAME,
    help="Gradient precision with --training: fp64, fp32, tf32, bf16, fp16 or fp8 "
    "[default: fp32, the main gradients 'plan train' keeps (the weights' precision where wider)].",
)
@click.option(
    "--gpu",
    type=NAME,
    help="Accelerator whose memory holds the state (see 'lightspeed hw list').",
    shell_complete=hardware_names,
)
@click.option(
    "--system",
    type=NAME,
    help="A node or rack (e.g. dgx-b200): its GPU and its GPUs per node.",
    shell_complete=hardware_names,
)
@json_option
def command(
    *,
    model_name: str,
    precision: str | None,
    training: bool,
    optimizer: str | None,
    zero_stage: int | None,
    dp: int | None,
    grad_precision: str | None,
    gpu: str | None,
    system: str | None,
    as_json: bool,
) -> None:
    """Bytes by component (weights, gradients, optimizer, master weights) and the GPUs and
    nodes that hold them, at usable memory (what the driver reports, as 'plan' and 'search'
    use), beside the datasheet's listed and the nominal figures.

    JSON: {"total_bytes", "components": {name: bytes}, "gpus_needed", "nodes_needed",
    "memory_usable_bytes", "gpus_needed_at_listed", "gpus_needed_at_nominal", "assumptions": [...], ...}.
    """
    if not training and (optimizer or zero_stage or grad_precision):
        raise click.UsageError("--optimizer, --zero and --grad-precision apply to --training")
    if gpu and system:
        raise click.UsageError("give --gpu or --system, not both (a system names its GPU)")
    context = get_context()
    options: dict[str, Any] = {
        "precision": precision,
        "optimizer": optimizer,
        "zero_stage": zero_stage,
        "dp": dp,
        "gradient_precision": grad_precision,
        "accelerator": context.catalog().accelerator(gpu) if gpu else None,
        "system": context.catalog().system(system) if system else None,
    }
    plan = plan_memory(
        model=resolve_model(model_name, context.models()),
        training=training,
        **{key: value for key, value in options.items() if value is not None},
    )
    emit(plan, as_json, render_memory_plan)
