"""``lightspeed goodput``: the goodput ledger of runs and logs; checkpoint planning."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from lightspeed.cli._common import emit, get_context, json_option, print_json
from lightspeed.errors import UserInputError
from lightspeed.goodput import (
    Ledger,
    MetricSink,
    MlflowSink,
    TensorBoardSink,
    WandbSink,
    build_ledger,
    estimate_failure_rate,
    is_mllog,
    mllog_ledger,
    plan_checkpoints,
    publish_ledger,
    publish_run,
    read_mllog,
    read_run,
    read_system_json,
)
from lightspeed.report import (
    checkpoint_plan_figure,
    goodput_waterfall_figure,
    render_checkpoint_plan,
    render_ledgers,
    save_goodput_plot,
)
from lightspeed.units import parse_count, parse_duration

T = TypeVar("T")


@click.group("goodput")
def command() -> None:
    """Goodput ledger of training runs and MLPerf logs; checkpoint planning."""


@command.command("report")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--system",
    help="MLPerf system description (SYSTEM.json) for MLPerf logs, or a catalog accelerator/system name.",
)
@click.option("--model", help="Model name of the workload registry (overrides what the run recorded).")
@click.option("--seq-len", type=int, help="Tokens per sequence (for model FLOPs).")
@click.option("--precision", help="Precision whose dense peak MFU divides by (default: recorded, else bf16).")
@click.option("--num-accelerators", type=int, help="Accelerators the job ran on.")
@click.option("--flop-per-token", help="Model training FLOP per token, given directly (e.g. 1.2e9).")
@click.option("--convention", default="6N+attention", show_default=True, help="FLOP-counting convention.")
@click.option(
    "--sol-tokens-per-s-per-gpu",
    type=float,
    help="Token-rate SOL of one accelerator, given directly (efficiency = goodput / (SOL x accelerators)).",
)
@click.option(
    "--plot", "plot_path", type=click.Path(path_type=Path), help="Write the ledger waterfall (.png/.svg)."
)
@click.option(
    "--tensorboard",
    "tensorboard_dir",
    type=click.Path(path_type=Path),
    help="Also write the steps and the ledger as TensorBoard events into this folder (extra: tensorboard).",
)
@click.option(
    "--mlflow",
    "mlflow_uri",
    help="Also log them to a new MLflow run at this tracking URI, e.g. http://mlflow:5000 (extra: mlflow).",
)
@click.option(
    "--wandb",
    "wandb_dir",
    type=click.Path(path_type=Path),
    help="Also log them to an offline W&B run in this folder; 'wandb sync' uploads it (extra: wandb).",
)
@json_option
def report_command(
    *,
    paths: tuple[Path, ...],
    system: str | None,
    model: str | None,
    seq_len: int | None,
    precision: str | None,
    num_accelerators: int | None,
    flop_per_token: str | None,
    convention: str,
    sol_tokens_per_s_per_gpu: float | None,
    plot_path: Path | None,
    tensorboard_dir: Path | None,
    mlflow_uri: str | None,
    wandb_dir: Path | None,
    as_json: bool,
) -> None:
    """The goodput ledger of tracker run directories, rank logs or MLPerf result files.

    Example: lightspeed goodput report runs/tiny --json;
    lightspeed goodput report result_0.txt --system SYSTEM.json
    """
    context = get_context()
    options: dict[str, Any] = {
        "system": system,
        "model": model,
        "seq_len": seq_len,
        "precision": precision,
        "num_accelerators": num_accelerators,
        "model_flop_per_token": parse_count(flop_per_token) if flop_per_token else None,
        "convention": convention,
        "sol": sol_tokens_per_s_per_gpu,
        "catalog": context.catalog(),
        "models": context.models(),
    }
    ledgers = [_with_warnings(functools.partial(_ledger, path, options)) for path in paths]
    if plot_path is not None:
        if len(ledgers) > 1:
            raise UserInputError("--plot draws one ledger: give one path")
        save_goodput_plot(goodput_waterfall_figure(ledgers[0]), plot_path)
    if (tensorboard_dir or mlflow_uri or wandb_dir) and len(ledgers) > 1:
        raise UserInputError("--tensorboard/--mlflow/--wandb publish one run: give one path")
    sinks = _sinks(tensorboard_dir, mlflow_uri, wandb_dir)
    if sinks:
        _publish(paths, ledgers, sinks)
    if as_json:
        print_json(ledgers[0] if len(ledgers) == 1 else ledgers)
    else:
        render_ledgers(ledgers)


def _sinks(tensorboard_dir: Path | None, mlflow_uri: str | None, wandb_dir: Path | None) -> list[MetricSink]:
    sinks: list[MetricSink] = []
    if tensorboard_dir is not None:
        sinks.append(TensorBoardSink(tensorboard_dir))
    if mlflow_uri is not None:
        sinks.append(MlflowSink(tracking_uri=mlflow_uri))
    if wandb_dir is not None:
        sinks.append(WandbSink(directory=wandb_dir))
    return sinks


def _publish(paths: tuple[Path, ...], ledgers: list[Ledger], sinks: list[MetricSink]) -> None:
    """Tracker runs replay their steps, then the ledger; an MLPerf log gives its ledger only."""
    try:
        if ledgers[0].source == "tracker":
            with warnings.catch_warnings():  # read once more: its warnings were shown already
                warnings.simplefilter("ignore")
                run = read_run(paths[0])
            publish_run(run, ledgers[0], sinks=sinks)
        else:
            publish_ledger(ledgers[0], sinks=sinks)
    finally:
        for sink in sinks:
            sink.close()
    for sink in sinks:
        click.echo(f"published the ledger to {_where(sink)}", err=True)


def _where(sink: MetricSink) -> str:
    if isinstance(sink, TensorBoardSink):
        return f"TensorBoard events in {sink.log_dir}"
    if isinstance(sink, MlflowSink):
        return f"MLflow run {sink.run_id}"
    if isinstance(sink, WandbSink):
        return f"W&B offline run {sink.run_dir}"
    return type(sink).__name__


def _ledger(path: Path, options: dict[str, Any]) -> Ledger:
    if path.is_file() and is_mllog(path):
        return _mlperf(path, options)
    return build_ledger(
        run=read_run(path),
        model=options["model"],
        system=options["system"],
        seq_len=options["seq_len"],
        precision=options["precision"],
        num_accelerators=options["num_accelerators"],
        model_flop_per_token=options["model_flop_per_token"],
        sol_tokens_per_s_per_accelerator=options["sol"],
        convention=options["convention"],
        catalog=options["catalog"],
        models=options["models"],
    )


def _mlperf(path: Path, options: dict[str, Any]) -> Ledger:
    system = options["system"]
    description = None
    device = None
    if system is not None and (system.endswith(".json") or Path(system).is_file()):
        description = read_system_json(system)
    else:
        device = system
    return mllog_ledger(
        log=read_mllog(path),
        system=description,
        model=options["model"],
        device=device,
        num_accelerators=options["num_accelerators"],
        precision=options["precision"] or "bf16",
        convention=options["convention"],
        catalog=options["catalog"],
        models=options["models"],
    )


def _with_warnings(action: Callable[[], T]) -> T:
    """Run ``action``; show the warnings it raised (lines skipped in logs) as one line each."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = action()
    for warning in caught:
        click.echo(f"lightspeed: warning: {warning.message}", err=True)
    return result


@command.command("plan-checkpoints")
@click.option("--nodes", type=int, help="Nodes of the job (default: recorded in the --from runs).")
@click.option(
    "--failures-per-node-day", type=float, help="Failure rate r_f (default: estimated --from runs)."
)
@click.option(
    "--checkpoint-write-s", required=True, help="Time the job stops to write a checkpoint (e.g. 60, 2min)."
)
@click.option("--restart-s", required=True, help="Restart overhead after a failure (e.g. 10min).")
@click.option("--interval", "intervals", multiple=True, help="Checkpoint interval to tabulate (repeatable).")
@click.option(
    "--from",
    "runs",
    multiple=True,
    type=click.Path(path_type=Path),
    help="Run directories whose restarts estimate the failure rate (repeatable).",
)
@click.option(
    "--plot", "plot_path", type=click.Path(path_type=Path), help="Write ETTR vs interval (.png/.svg)."
)
@json_option
def plan_command(
    *,
    nodes: int | None,
    failures_per_node_day: float | None,
    checkpoint_write_s: str,
    restart_s: str,
    intervals: tuple[str, ...],
    runs: tuple[Path, ...],
    plot_path: Path | None,
    as_json: bool,
) -> None:
    """Expected ETTR over checkpoint intervals and the optimal interval (Young, Daly, exact).

    Example: lightspeed goodput plan-checkpoints --nodes 128 --failures-per-node-day 0.0065
    --checkpoint-write-s 60 --restart-s 10min --plot ettr.png
    """
    estimate = None
    if runs:
        estimate = _with_warnings(functools.partial(estimate_failure_rate, runs=runs, num_nodes=nodes))
    rate = (
        failures_per_node_day
        if failures_per_node_day is not None
        else (estimate.failures_per_node_day if estimate is not None else None)
    )
    if rate is None:
        raise UserInputError("give --failures-per-node-day R, or --from RUN_DIR to estimate it from restarts")
    if nodes is None:
        if not runs:
            raise UserInputError("give --nodes N (or --from RUN_DIR, whose tracker recorded the node count)")
        nodes = read_run(runs[0]).num_nodes
    plan = plan_checkpoints(
        num_nodes=nodes,
        failures_per_node_day=rate,
        checkpoint_write_s=parse_duration(checkpoint_write_s),
        restart_s=parse_duration(restart_s),
        intervals_s=[parse_duration(value) for value in intervals] or None,
        failure_estimate=estimate,
    )
    if plot_path is not None:
        save_goodput_plot(checkpoint_plan_figure(plan), plot_path)
    emit(plan, as_json, render_checkpoint_plan)
