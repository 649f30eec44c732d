"""``lightspeed compare systems``: the best plan of one workload on several systems, side by side.

Dispatched from ``lightspeed compare systems ...`` by :mod:`lightspeed.cli.compare`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from lightspeed.cli._common import get_context, json_option, print_json
from lightspeed.cli._infer import load_options
from lightspeed.cli._sol_options import (
    calibration_option,
    expert_load_options,
    model_options,
    resolve_cluster,
    resolve_efficiency,
    resolve_expert_balance,
    resolve_model,
)
from lightspeed.cli.options import GPUS, LATENCY_BOUND, SEQ_LEN, SEQUENCES
from lightspeed.cost import load_prices, system_costs
from lightspeed.errors import UserInputError
from lightspeed.moe import ExpertLoadEffect
from lightspeed.report import (
    render_attention_sensitivity,
    render_expert_load_effect,
    render_fabric_comparison,
    render_ratio_decomposition,
    render_system_comparison,
    render_system_costs,
)
from lightspeed.sol import (
    PLAN_FAMILIES,
    WORKLOADS,
    ServingLoad,
    attention_sensitivity,
    compare_systems,
    decompose_ratio,
    fabric_comparison,
)
from lightspeed.units import parse_items

_RAW_ARGS = "compare_systems_args"


def _systems(option_values: tuple[str, ...], positional: tuple[str, ...]) -> list[str]:
    """The systems in the order typed: ``--systems A B C`` is one --systems and two positional names
    after it (the documented form), so positional names are taken after the --systems values and
    refused where one comes before a --systems (it would be compared out of the order typed)."""
    if option_values and positional and _positional_before_option("--systems"):
        raise click.UsageError(
            "give the systems one way, in the order to compare them: --systems A B ... (or A B ... alone); "
            "a SYSTEM before --systems would be compared after it"
        )
    names = [
        name
        for value in (*option_values, *positional)
        for name in parse_items(value, "--systems", example="dgx-h100,gb200-nvl72", unique=False)
    ]
    if not names:
        raise UserInputError(
            "name the systems to compare: --systems A B ... (catalog names or cluster specs)"
        )
    return names


def _positional_before_option(flag: str) -> bool:
    """Whether a positional argument of the running command comes before the last ``flag`` on its
    command line (click hands a command its positional values apart from its options)."""
    ctx = click.get_current_context()
    args: list[str] = ctx.meta.get(_RAW_ARGS, [])
    takes_value = {
        name: not (param.is_flag or param.count)
        for param in ctx.command.params
        if isinstance(param, click.Option)
        for name in (*param.opts, *param.secondary_opts)
    }
    positions: list[int] = []
    last = -1
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "--":
            positions.extend(range(index + 1, len(args)))
            break
        name = arg.split("=", 1)[0]
        if arg.startswith("-") and len(arg) > 1:
            if name == flag:
                last = index
            if "=" not in arg and takes_value.get(name, False):
                index += 1  # the option's value
        else:
            positions.append(index)
        index += 1
    return any(position < last for position in positions)


def _check_rows(systems: list[str], precisions: list[str]) -> None:
    """The same system in the same format twice is one comparison shown twice (a system twice in
    two formats, ``--precision fp8,nvfp4``, is a comparison of formats)."""
    formats = precisions if len(precisions) == len(systems) else [""] * len(systems)
    rows = list(zip((name.lower() for name in systems), formats, strict=True))
    repeated = [row for index, row in enumerate(rows) if row in rows[:index]]
    if repeated:
        name, precision = repeated[0]
        what = f"{name} in {precision}" if precision else name
        raise UserInputError(
            f"--systems: {what} is given twice; name each system once, or give one --precision per "
            "system to compare formats"
        )


def _precisions(values: tuple[str, ...]) -> list[str]:
    return [
        item
        for value in values
        for item in parse_items(value, "--precision", example="fp8,nvfp4", unique=False)
    ]


def _options(workload: str, **values: Any) -> dict[str, Any]:
    if workload == "train":
        if values["global_batch"] is None:
            raise UserInputError("--workload train needs --global-batch (sequences per optimizer step)")
        return {
            "global_batch": values["global_batch"],
            "seq_len": values["seq_len"],
            "num_gpus": values["num_gpus"],
        }
    return {
        "load": ServingLoad(values["isl"], values["osl"]),
        "max_ttft_s": values["max_ttft"],
        "max_tpot_s": values["max_tpot"],
        "disaggregated": values["disaggregated"],
        "plan_family": values["plan_family"],
        "num_gpus": values["num_gpus"],
    }


class _SystemsContext(click.Context):
    """Names the command ``lightspeed compare systems`` in usage and errors (its parent, the
    regression gate, would otherwise show its own BASELINE CURRENT arguments in the path)."""

    @property
    def command_path(self) -> str:
        return f"{self.find_root().info_name or 'lightspeed'} compare systems"


class _SystemsCommand(click.Command):
    context_class = _SystemsContext

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta[_RAW_ARGS] = list(args)  # the order typed (_positional_before_option)
        return super().parse_args(ctx, args)


@click.command("systems", cls=_SystemsCommand)
@click.argument("more_systems", nargs=-1, metavar="[SYSTEM]...")
@click.option(
    "--systems",
    "system_values",
    multiple=True,
    help="Systems to compare: catalog names or cluster specs (e.g. gb200-nvl72 9xdgx-h100@ib-ndr).",
)
@click.option("--workload", type=click.Choice(WORKLOADS), required=True, help="Training or inference.")
@model_options
@click.option("--gpus", "num_gpus", type=GPUS, help="GPUs per system (nodes added as needed).")
@click.option(
    "--precision",
    "precision_values",
    multiple=True,
    help="Format for all systems, or one per system (comma-separated); "
    "'auto' = the narrowest the GPU computes in.",
)
@click.option("--global-batch", type=SEQUENCES, help="Training: sequences per optimizer step.")
@click.option(
    "--seq",
    "seq_len",
    type=SEQ_LEN,
    default=4096,
    show_default=True,
    help="Training: tokens per sequence.",
)
@load_options
@click.option("--max-ttft", type=LATENCY_BOUND, help="Inference: time-to-first-token bound (e.g. 5s).")
@click.option("--max-tpot", type=LATENCY_BOUND, help="Inference: time-per-output-token bound (e.g. 50ms).")
@click.option("--disaggregated", is_flag=True, help="Inference: also try separate prefill and decode pools.")
@click.option("--plan-family", type=click.Choice(PLAN_FAMILIES), default="wide-ep", show_default=True)
@click.option(
    "--decompose",
    is_flag=True,
    help="Inference: split the last/first per-GPU ratio into order-independent (Shapley) factors, "
    "and repeat it with MHA, GQA-8 and MLA-like attention.",
)
@expert_load_options
@calibration_option
@click.option("--prices", "prices_path", type=click.Path(path_type=Path), help="Add cost and energy columns.")
@json_option
def command(
    *,
    more_systems: tuple[str, ...],
    system_values: tuple[str, ...],
    workload: str,
    model_name: str | None,
    config_path: Path | None,
    num_gpus: int | None,
    precision_values: tuple[str, ...],
    global_batch: int | None,
    seq_len: int,
    isl: int,
    osl: int,
    max_ttft: float | None,
    max_tpot: float | None,
    disaggregated: bool,
    plan_family: str,
    decompose: bool,
    expert_load_paths: tuple[Path, ...],
    expert_replicas: int | None,
    calibration: str | None,
    prices_path: Path | None,
    as_json: bool,
) -> None:
    """Best plan of the same model and plan family on each system: throughput, collectives on the
    slow fabric level and their share of the step, and the limits each topology puts on TP/EP/PP."""
    model = resolve_model(model_name, config_path)
    names = _systems(system_values, more_systems)
    precisions = _precisions(precision_values)
    _check_rows(names, precisions)
    clusters = [resolve_cluster(name, num_gpus) for name in names]
    if decompose and (workload != "infer" or len(clusters) < 2):
        raise UserInputError("--decompose needs --workload infer and at least two systems")
    options = _options(
        workload,
        global_batch=global_batch,
        seq_len=seq_len,
        isl=isl,
        osl=osl,
        max_ttft=max_ttft,
        max_tpot=max_tpot,
        disaggregated=disaggregated,
        plan_family=plan_family,
        num_gpus=num_gpus,
    )
    balance = resolve_expert_balance(expert_load_paths, expert_replicas, model)
    if balance is not None:
        options["expert_balance"] = balance
    efficiency = resolve_efficiency(calibration)
    comparison = compare_systems(
        model=model,
        clusters=clusters,
        workload=workload,
        precisions=precisions,
        options=options,
        efficiency=efficiency,
    )
    fabric = fabric_comparison(clusters, efficiency)
    decomposition = sensitivity = None
    if decompose:
        ends = {
            "model": model,
            "baseline": clusters[0],
            "target": clusters[-1],
            "baseline_precision": comparison.results[0].precision,
            "target_precision": comparison.results[-1].precision,
            "options": options,
            "efficiency": efficiency,
        }
        decomposition = decompose_ratio(**ends)
        sensitivity = attention_sensitivity(**ends)
    costs = _costs(comparison, clusters, prices_path)
    if as_json:
        payload = comparison_json(comparison, fabric, decomposition)
        payload["attention_sensitivity"] = sensitivity.to_dict() if sensitivity is not None else None
        print_json({**payload, "costs": costs})
        return
    render_system_comparison(comparison)
    for result in comparison.results:
        if isinstance(result.expert_load, ExpertLoadEffect):
            click.echo(f"{result.system}:")
            render_expert_load_effect(result.expert_load)
    if costs is not None:
        render_system_costs(costs, comparison.workload)
    render_fabric_comparison(fabric)
    if decomposition is not None:
        render_ratio_decomposition(decomposition)
    if sensitivity is not None:
        render_attention_sensitivity(sensitivity)


def _costs(comparison: Any, clusters: list[Any], prices_path: Path | None) -> Any:
    """The cost and energy columns when ``--prices`` is given, else ``None``."""
    if prices_path is None:
        return None
    prices = load_prices(prices_path, catalog=get_context().catalog())
    return system_costs(comparison=comparison, clusters=clusters, power=get_context().power(), prices=prices)


def comparison_json(comparison: Any, fabric: Any, decomposition: Any) -> dict[str, Any]:
    """The ``compare systems --json`` contract."""
    return {
        "workload": comparison.workload,
        "model": comparison.model,
        "plan_family": comparison.plan_family,
        "systems": [result.to_dict() for result in comparison.results],
        "per_gpu_ratio": list(comparison.per_gpu_ratio),
        "fabric": [item.to_dict() for item in fabric],
        "decomposition": decomposition.to_dict() if decomposition is not None else None,
    }
