"""``lightspeed goodput``: the goodput ledger of runs and logs; checkpoint planning."""

from __future__ import annotations

import functools
import warnings
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.markup import escape

from lightspeed.cli._common import (
    emit,
    get_context,
    json_option,
    print_json,
    refuse_repeated_values,
    with_warnings,
)
from lightspeed.cli.options import (
    CHECKPOINT_S,
    FAILURE_RATE,
    FLOP_PER_TOKEN,
    GPUS,
    NODES,
    PER_SECOND,
    RESTART_S,
    SEQ_LEN,
)
from lightspeed.cli.text_options import OutputPath
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
    resolve_accelerator,
)
from lightspeed.monitor import MonitorReport, analyze_run, monitor_folders_of
from lightspeed.report import (
    checkpoint_plan_figure,
    goodput_waterfall_figure,
    make_console,
    render_checkpoint_plan,
    render_counter_ledger,
    render_findings,
    render_ledgers,
    save_goodput_plot,
)
from lightspeed.units import PRECISIONS, format_duration, format_flop_per_s
from lightspeed.workload import CONVENTIONS, MFU_CONVENTION

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
@click.option("--seq-len", type=SEQ_LEN, help="Tokens per sequence (for model FLOPs).")
@click.option(
    "--precision",
    type=click.Choice(PRECISIONS, case_sensitive=False),
    help="Precision whose dense peak MFU divides by (default: recorded, else bf16).",
)
@click.option("--num-accelerators", type=GPUS, help="Accelerators the job ran on.")
@click.option(
    "--flop-per-token",
    "model_flop_per_token",
    type=FLOP_PER_TOKEN,
    help="Model training FLOP per token, given directly (e.g. 1.2e9).",
)
@click.option(
    "--convention",
    type=click.Choice(list(CONVENTIONS)),
    default=MFU_CONVENTION,
    show_default=True,
    help="FLOP-counting convention of MFU (plan train predicts in the same one by default).",
)
@click.option(
    "--sol-tokens-per-s-per-gpu",
    type=PER_SECOND,
    help="Token-rate SOL of one accelerator, given directly (efficiency = goodput / (SOL x accelerators)).",
)
@click.option(
    "--plot",
    "plot_path",
    type=OutputPath(example="ledger.png"),
    help="Write the ledger waterfall (.png/.svg).",
)
@click.option(
    "--tensorboard",
    "tensorboard_dir",
    type=OutputPath(example="tensorboard/"),
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
    type=OutputPath(example="wandb/"),
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
    model_flop_per_token: float | None,
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
        "model_flop_per_token": model_flop_per_token,
        "convention": convention,
        "sol": sol_tokens_per_s_per_gpu,
        "catalog": context.catalog(),
        "models": context.models(),
    }
    _check_names(options)
    ledgers = [with_warnings(functools.partial(_ledger, path, options)) for path in paths]
    _refuse_above_peak(ledgers, options)
    _refuse_missing_precision(ledgers, options)
    monitors = [_monitors(path, ledger, options) for path, ledger in zip(paths, ledgers, strict=True)]
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
        payloads = [_with_monitors(ledger, found) for ledger, found in zip(ledgers, monitors, strict=True)]
        print_json(payloads[0] if len(payloads) == 1 else payloads)
        return
    console = make_console()
    for index, (ledger, found) in enumerate(zip(ledgers, monitors, strict=True)):
        if index:
            console.print()
        render_ledgers([ledger], console)
        for report in found:
            console.print(f"[bold]Counters from monitor run {escape(report.path)}[/]")
            if report.joined is not None:
                render_counter_ledger(report.joined, console)
            render_findings(report.diagnosis, console)


def _check_names(options: dict[str, Any]) -> None:
    """A --system or --model the user named must exist (a name the run recorded is the ledger's note)."""
    system, model = options["system"], options["model"]
    if system is not None and not _is_system_json(system):
        resolve_accelerator(catalog=options["catalog"], name=system)  # UnknownNameError: exit 2
    if model is not None:
        options["models"].get(model)


_FLOP_OPTIONS = ("system", "model", "seq_len", "precision", "num_accelerators", "model_flop_per_token")


def _refuse_above_peak(ledgers: list[Ledger], options: dict[str, Any]) -> None:
    """MFU above 100% from options the user gave is their mistake to fix: refuse, naming them."""
    given = [f"--{name.replace('_', '-')}" for name in _FLOP_OPTIONS if options[name] is not None]
    for ledger in ledgers:
        ratio = ledger.utilization.above_peak_ratio
        if ratio is not None and ledger.step_mfu is None and given:  # the step MFU above the peak
            raise UserInputError(
                f"{ledger.path}: step MFU would be {ratio:.0%}{_over_wall_time(ledger, ratio)}, above the "
                "peak no run exceeds; check "
                f"{', '.join(given).replace('--model-flop-per-token', '--flop-per-token')} "
                f"({_divisor(ledger)})"
            )


def _over_wall_time(ledger: Ledger, step_mfu: float) -> str:
    """The MFU over the wall time beside a step MFU (over productive step time): it scales by their ratio."""
    if ledger.total_s <= 0:
        return ""
    return f" (MFU over the wall time {step_mfu * ledger.productive_s / ledger.total_s:.1%})"


def _divisor(ledger: Ledger) -> str:
    """The peak MFU divided by, as the refusal names it: the catalog device's or the recorded one."""
    flops = ledger.utilization
    peak = format_flop_per_s(flops.peak_flop_per_s) if flops.peak_flop_per_s else "?"
    if flops.peak_source == "catalog":
        return f"the divisor is the {flops.precision} dense peak of {flops.device}, {peak} per accelerator"
    return (
        f"the divisor is the peak the run recorded, {peak} per accelerator; --system NAME divides by "
        "a catalog device's peak instead"
    )


def _refuse_missing_precision(ledgers: list[Ledger], options: dict[str, Any]) -> None:
    """A --precision the run's device has no peak for would leave MFU out without a word: refuse."""
    if options["precision"] is None:
        return
    for ledger in ledgers:
        if (
            ledger.utilization.peak_flop_per_s is None
            and " compute figure; it has: " in ledger.utilization.reason
        ):
            raise UserInputError(
                f"{ledger.path}: --precision {options['precision']}: {ledger.utilization.reason}"
            )


def _monitors(path: Path, ledger: Ledger, options: dict[str, Any]) -> list[MonitorReport]:
    """The monitor runs that watched this tracker run, joined to its ledger."""
    if not path.is_dir():
        return []
    return [
        with_warnings(
            functools.partial(
                analyze_run, path=folder, goodput_run=path, ledger=ledger, catalog=options["catalog"]
            )
        )
        for folder in monitor_folders_of(path)
    ]


def _with_monitors(ledger: Ledger, reports: list[MonitorReport]) -> Any:
    """The ledger's JSON, with a ``monitor`` list when monitor runs watched it (old readers ignore it)."""
    if not reports:
        return ledger
    payload = ledger.to_dict()
    payload["monitor"] = [
        {
            "path": report.path,
            "counters": report.joined.to_dict() | {"ledger": None} if report.joined is not None else None,
            "findings": [finding.to_dict() for finding in report.findings],
            "notes": list(report.diagnosis.notes),
        }
        for report in reports
    ]
    return payload


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
    system, num_accelerators = options["system"], options["num_accelerators"]
    if _is_system_json(system):
        # A tracker run takes the accelerator and its count from the description, as an MLPerf log does.
        description = read_system_json(system)
        system = description.accelerator_model_name
        num_accelerators = num_accelerators or description.num_accelerators
    return build_ledger(
        run=read_run(path),
        model=options["model"],
        system=system,
        seq_len=options["seq_len"],
        precision=options["precision"],
        num_accelerators=num_accelerators,
        model_flop_per_token=options["model_flop_per_token"],
        sol_tokens_per_s_per_accelerator=options["sol"],
        convention=options["convention"],
        catalog=options["catalog"],
        models=options["models"],
    )


def _is_system_json(system: str | None) -> bool:
    return system is not None and (system.endswith(".json") or Path(system).is_file())


def _mlperf(path: Path, options: dict[str, Any]) -> Ledger:
    system = options["system"]
    description = None
    device = None
    if _is_system_json(system):
        description = read_system_json(system)
    else:
        device = system
    return mllog_ledger(
        log=read_mllog(path),
        system=description,
        model=options["model"],
        device=device,
        num_accelerators=options["num_accelerators"],
        seq_len=options["seq_len"],
        model_flop_per_token=options["model_flop_per_token"],
        sol_tokens_per_s_per_accelerator=options["sol"],
        precision=options["precision"] or "bf16",
        convention=options["convention"],
        catalog=options["catalog"],
        models=options["models"],
    )


@command.command("plan-checkpoints")
@click.option("--nodes", type=NODES, help="Nodes of the job (default: recorded in the --from runs).")
@click.option(
    "--failures-per-node-day", type=FAILURE_RATE, help="Failure rate r_f (default: estimated --from runs)."
)
@click.option(
    "--checkpoint-write-s",
    type=CHECKPOINT_S,
    required=True,
    help="Time the job stops to write a checkpoint (e.g. 60, 2min).",
)
@click.option(
    "--restart-s", type=RESTART_S, required=True, help="Restart overhead after a failure (e.g. 10min)."
)
@click.option(
    "--interval",
    "intervals",
    type=CHECKPOINT_S,
    multiple=True,
    help="Checkpoint interval to tabulate (repeatable).",
)
@click.option(
    "--from",
    "runs",
    multiple=True,
    type=click.Path(path_type=Path),
    help="Run directories whose restarts estimate the failure rate (repeatable).",
)
@click.option(
    "--plot", "plot_path", type=OutputPath(example="ettr.png"), help="Write ETTR vs interval (.png/.svg)."
)
@json_option
def plan_command(
    *,
    nodes: int | None,
    failures_per_node_day: float | None,
    checkpoint_write_s: float,
    restart_s: float,
    intervals: tuple[float, ...],
    runs: tuple[Path, ...],
    plot_path: Path | None,
    as_json: bool,
) -> None:
    """Expected ETTR over checkpoint intervals and the optimal interval (Young, Daly, exact).

    Example: lightspeed goodput plan-checkpoints --nodes 128 --failures-per-node-day 0.0065
    --checkpoint-write-s 60 --restart-s 10min --plot ettr.png
    """
    refuse_repeated_values("--interval", intervals, format_duration)
    estimate = None
    if runs:
        estimate = with_warnings(functools.partial(estimate_failure_rate, runs=runs, num_nodes=nodes))
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
        checkpoint_write_s=checkpoint_write_s,
        restart_s=restart_s,
        intervals_s=list(intervals) or None,
        failure_estimate=estimate,
    )
    if plot_path is not None:
        save_goodput_plot(checkpoint_plan_figure(plan), plot_path)
    emit(plan, as_json, render_checkpoint_plan)
