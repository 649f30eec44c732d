"""``lightspeed cost``: energy, power, cooling and money of a job, a cluster, an upgrade, a fleet.

Throughput comes from the engines; power from the catalog's system-power
records (or ``--power-w``, a measured mean); prices only from ``--prices FILE``
(see ``examples/prices.toml``), and every price-dependent figure lists them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import click

from lightspeed.catalog import power_of
from lightspeed.cli._common import get_context, given_flags, json_option, print_json, refuse_together
from lightspeed.cli._infer import load_options
from lightspeed.cli._sol_options import (
    calibration_option,
    model_options,
    resolve_cluster,
    resolve_efficiency,
    resolve_model,
)
from lightspeed.cli.options import (
    GPUS,
    LATENCY_BOUND,
    PER_SECOND,
    POWER_W,
    PUE,
    RACKS,
    SEQ_LEN,
    SEQUENCES,
    SITE_KW,
    SYSTEMS_PER_RACK,
    TOKENS,
    USD,
)
from lightspeed.cli.text_options import OutputPath
from lightspeed.cost import (
    COST_WORKLOADS,
    DEFAULT_UPGRADE_WORKLOADS,
    Prices,
    compare_upgrade,
    cost_workload,
    deepseek_cost,
    inference_cost,
    parse_fleet,
    power_for,
    rack_plan,
    size_fleet,
    tco_per_year,
    training_cost,
)
from lightspeed.errors import UserInputError
from lightspeed.report import (
    render_deepseek_cost,
    render_fleet,
    render_inference_cost,
    render_rack_plan,
    render_tco,
    render_training_cost,
    render_upgrade,
    save_tornado,
)
from lightspeed.sol import TRAINING_PRECISIONS, ServingLoad, auto_precision, search_inference, search_training
from lightspeed.tour import DEEPSEEK_PRETRAIN_GPU_HOURS, DEEPSEEK_TOKENS, deepseek_v3_training

SCENARIOS = ("deepseek-v3",)
_TRAIN_FLAGS = {"system_text": "--system", "global_batch": "--global-batch", "num_tokens": "--tokens"}


@click.group("cost")
def command() -> None:
    """Energy, power, cooling and cost from predicted throughput: train, infer, cluster, upgrade, fleet."""


def prices_option(function: Any) -> Any:
    """``--prices FILE``: the user's prices (see examples/prices.toml)."""
    return click.option(
        "--prices",
        "prices_path",
        type=click.Path(path_type=Path),
        help="Prices TOML (user inputs; see examples/prices.toml). Without it only energy and power.",
    )(function)


def power_option(function: Any) -> Any:
    """``--power-w W``: a measured mean IT power that replaces the catalog's estimate."""
    return click.option(
        "--power-w",
        "power_w",
        type=POWER_W,
        help="Measured mean IT power of the whole job in W (from monitor data); replaces rated x draw share. "
        "Between 10% of the systems' rated total and that total.",
    )(function)


def pue_option(function: Any) -> Any:
    """``--pue X``: the site's PUE; one default for every cost command."""
    return click.option(
        "--pue",
        type=PUE,
        help="The site's PUE (facility / IT power); default: the prices file's, else the 2024 industry "
        "average (1.56, Uptime Institute).",
    )(function)


def _prices(path: Path | None) -> Prices | None:
    if path is None:
        return None
    from lightspeed.cost import load_prices

    return load_prices(path, catalog=get_context().catalog())


def _bought_per_system(cluster: Any) -> int:
    """GPUs one system of ``cluster`` holds as bought (a job spread over racks uses fewer of each)."""
    catalog = get_context().catalog()
    if cluster.system.name not in catalog.systems:  # a system of the user's own, used whole
        return int(cluster.system.num_accelerators)
    return int(catalog.systems[cluster.system.name].num_accelerators)


def _power_records() -> Any:
    return get_context().power()


@command.command("train")
@click.option(
    "--scenario", type=click.Choice(SCENARIOS), help="A seed scenario: deepseek-v3 (2,048 H800, 14.8T)."
)
@model_options
@click.option("--system", "system_text", help="System name, cluster spec or file (e.g. 64xdgx-h100).")
@click.option("--gpus", "num_gpus", type=GPUS, help="GPUs (nodes added as needed).")
@click.option("--global-batch", type=SEQUENCES, help="Sequences per optimizer step.")
@click.option("--seq", "seq_len", type=SEQ_LEN, default=4096, show_default=True)
@click.option(
    "--precision",
    type=click.Choice(TRAINING_PRECISIONS, case_sensitive=False),
    default="bf16",
    show_default=True,
)
@click.option("--tokens", "num_tokens", type=TOKENS, help="Tokens to train on (e.g. 15e12).")
@click.option(
    "--usd-per-gpu-hour", type=USD, help="deepseek-v3: price per GPU-hour (default: prices file, else 2)."
)
@prices_option
@pue_option
@power_option
@calibration_option
@json_option
def train_command(**options: Any) -> None:
    """Time, GPU-hours, energy (per step, per token, per run) and cost of training to N tokens."""
    _refuse_conflicts(options["scenario"])
    prices = _prices(options["prices_path"])
    power = _power_records()
    if options["scenario"] == "deepseek-v3":
        _deepseek(options, prices, power)
        return
    missing = [flag for key, flag in _TRAIN_FLAGS.items() if options[key] is None]
    if missing:
        raise UserInputError(f"cost train needs {', '.join(missing)} (or --scenario deepseek-v3)")
    model = resolve_model(options["model_name"], options["config_path"])
    cluster = resolve_cluster(options["system_text"], options["num_gpus"])
    efficiency = resolve_efficiency(options["calibration"])
    search = search_training(
        model=model,
        cluster=cluster,
        global_batch_size=options["global_batch"],
        seq_len=options["seq_len"],
        precision=options["precision"],
        top=1,
        efficiency=efficiency,
        num_gpus=options["num_gpus"],
        require_fit=True,
    )
    cost = training_cost(
        estimate=search.plans[0],
        cluster=cluster,
        power=power_of(power, cluster.system.name),
        num_tokens=options["num_tokens"],
        prices=prices,
        measured_power_w=options["power_w"],
        pue=options["pue"],
        efficiency=efficiency,
        gpus_per_system=_bought_per_system(cluster),
    )
    if options["as_json"]:
        print_json(cost)
    else:
        render_training_cost(cost)


_SCENARIO_FIXES: Final = (
    *("model_name", "config_path", "model_config_path", "system_text", "num_gpus", "global_batch"),
    *("seq_len", "precision", "num_tokens", "calibration"),
)


def _refuse_conflicts(scenario: str | None) -> None:
    """Options the chosen mode would ignore are refused, never dropped silently."""
    if scenario is not None:
        refuse_together(given_flags(*_SCENARIO_FIXES), f"--scenario {scenario} fixes them: leave them out")
    else:
        refuse_together(
            given_flags("usd_per_gpu_hour"), "only with --scenario deepseek-v3 (price plans with --prices)"
        )


def _deepseek(options: dict[str, Any], prices: Prices | None, power: Any) -> None:
    context = get_context()
    catalog = context.catalog()
    cluster = catalog.cluster("hgx-h800", num_accelerators=2048)
    estimate = deepseek_v3_training(catalog, context.models())
    rate, source = _deepseek_rate(options["usd_per_gpu_hour"], prices, cluster.system.accelerator.name)
    if prices is not None and rate is not None:  # one rate prices the run: the flag's wins over the file's
        prices = prices.with_cloud_price(cluster.system.accelerator.name, rate)
    training = training_cost(  # without prices: no electricity price, so no electricity cost (null)
        estimate=estimate,
        cluster=cluster,
        power=power_of(power, "hgx-h800"),
        num_tokens=DEEPSEEK_TOKENS,
        prices=prices,
        measured_power_w=options["power_w"],
        pue=options["pue"],
    )
    result = deepseek_cost(
        training=training,
        published_pretrain_gpu_hours=DEEPSEEK_PRETRAIN_GPU_HOURS,
        usd_per_gpu_hour=rate,
        usd_per_gpu_hour_source=source,
    )
    if options["as_json"]:
        print_json(result)
    else:
        render_deepseek_cost(result)


def _deepseek_rate(given: float | None, prices: Prices | None, accelerator: str) -> tuple[float | None, str]:
    """The rate per GPU-hour DeepSeek-V3 is priced at and where it comes from: the flag, else the
    prices file's, else (``None``) the report's $2."""
    if given is not None:
        return given, "--usd-per-gpu-hour"
    if prices is not None and accelerator in prices.cloud_usd_per_gpu_hour:
        rate = prices.cloud_usd_per_gpu_hour[accelerator]
        return rate, f"cloud_usd_per_gpu_hour.{accelerator} in {prices.path}"
    return (
        None,
        f"the report's rate: no --usd-per-gpu-hour, no cloud_usd_per_gpu_hour.{accelerator} in --prices",
    )


@command.command("infer")
@model_options
@click.option("--system", "system_text", required=True, help="System name, cluster spec or file.")
@click.option("--gpus", "num_gpus", type=GPUS, help="GPUs (nodes added as needed).")
@load_options
@click.option("--max-ttft", type=LATENCY_BOUND, help="Time-to-first-token bound (e.g. 2s).")
@click.option("--max-tpot", type=LATENCY_BOUND, help="Time-per-output-token bound (e.g. 50ms).")
@click.option("--precision", default="auto", show_default=True, help="Weight format or auto (the narrowest).")
@prices_option
@pue_option
@power_option
@calibration_option
@json_option
def infer_command(**options: Any) -> None:
    """$ per million output tokens and J per token of the best deployment under TTFT/TPOT bounds."""
    prices = _prices(options["prices_path"])
    model = resolve_model(options["model_name"], options["config_path"])
    cluster = resolve_cluster(options["system_text"], options["num_gpus"])
    precision = options["precision"]
    efficiency = resolve_efficiency(options["calibration"])
    search = search_inference(
        model=model,
        cluster=cluster,
        load=ServingLoad(options["isl"], options["osl"]),
        precision=auto_precision(cluster) if precision == "auto" else precision,
        max_ttft_s=options["max_ttft"],
        max_tpot_s=options["max_tpot"],
        efficiency=efficiency,
        num_gpus=options["num_gpus"],
    )
    cost = inference_cost(
        estimate=search.best,
        cluster=cluster,
        power=power_of(_power_records(), cluster.system.name),
        prices=prices,
        measured_power_w=options["power_w"],
        pue=options["pue"],
        efficiency=efficiency,
        gpus_per_system=_bought_per_system(cluster),
    )
    if options["as_json"]:
        print_json(cost)
    else:
        render_inference_cost(cost)


@command.command("cluster")
@click.option("--system", "system_text", default="gb200-nvl72", show_default=True, help="Catalog system.")
@click.option("--racks", type=RACKS, help="Number of racks (full).")
@click.option(
    "--gpus", "num_gpus", type=GPUS, help="Or: GPUs, rounded up to whole systems (and whole racks)."
)
@click.option("--site-kw", type=SITE_KW, help="Site power budget in kW (facility power, IT x PUE).")
@pue_option
@click.option("--systems-per-rack", type=SYSTEMS_PER_RACK, help="Override the catalog's systems per rack.")
@click.option(
    "--workload",
    type=click.Choice(["train", "infer"]),
    default="train",
    show_default=True,
    help="What the systems run: sets the drawn share of their rating (the drawn rows, and the "
    "energy the TCO prices).",
)
@prices_option
@json_option
def cluster_command(**options: Any) -> None:
    """Racks, kW per rack (from the catalog's parts), site MW, cooling split, fits a site budget,
    power drawn under the workload; with --prices, the TCO per year."""
    catalog = get_context().catalog()
    prices = _prices(options["prices_path"])
    record = power_of(_power_records(), catalog.system(options["system_text"]).name)
    system = catalog.system(options["system_text"])
    per_rack = options["systems_per_rack"] or record.systems_per_rack
    if options["racks"] is not None and options["num_gpus"] is not None:
        raise UserInputError("give --racks or --gpus, not both")
    if options["num_gpus"] is not None:  # whole systems: what is bought, powered and priced
        nodes = -(-options["num_gpus"] // system.num_accelerators)
        cluster = catalog.cluster(system.name, num_nodes=nodes)
    else:
        cluster = catalog.cluster(system.name, num_nodes=(options["racks"] or 1) * per_rack)
    site = options["site_kw"] * 1e3 if options["site_kw"] is not None else None
    pue, pue_source = _site_pue(options["pue"], prices, record.cooling)
    plan = rack_plan(
        cluster=cluster,
        power=record,
        pue=pue,
        pue_source=pue_source,
        site_budget_w=site,
        systems_per_rack=per_rack,
        num_gpus_requested=options["num_gpus"],
        workload=options["workload"],
    )
    tco, notes = None, prices.missing_prices(system=system.name) if prices is not None else ()
    if prices is not None and not notes:
        draw = power_for(cluster=cluster, power=record, workload=options["workload"], prices=prices, pue=pue)
        tco = tco_per_year(power=draw, prices=prices)
    if options["as_json"]:
        print_json({"rack_plan": plan, "tco": tco, "notes": list(notes)})
        return
    render_rack_plan(plan, notes=notes)
    if tco is not None:
        render_tco(tco)


def _site_pue(given: float | None, prices: Prices | None, cooling: str) -> tuple[float | None, str | None]:
    """The PUE to use and where it comes from: --pue (the library's spelling of its source), the
    prices file, else (``None``) the library's sourced default."""
    if given is None and prices is not None:
        site = prices.site_pue(cooling)
        return site.value, site.source
    return given, None


@command.command("upgrade")
@click.option(
    "--from",
    "old_text",
    required=True,
    help="The cluster today: <GPUs>x<accelerator> (100xh100-sxm: 100 GPUs) or <systems>x<system> "
    "(13xdgx-h100: 13 systems, 104 GPUs).",
)
@click.option(
    "--to", "new_text", required=True, help="The new accelerator or system, e.g. b200 or gb200-nvl72."
)
@click.option(
    "--workload",
    "workload_names",
    multiple=True,
    type=click.Choice(sorted(COST_WORKLOADS)),
    help=f"Named workload (repeatable; default: {', '.join(DEFAULT_UPGRADE_WORKLOADS)}).",
)
@prices_option
@pue_option
@click.option(
    "--plot",
    "plot_path",
    type=OutputPath(example="tornado.png"),
    help="Write the payback tornado plot to this .png, .svg or .pdf (its folder must exist; "
    "a folder gets tornado.png).",
)
@calibration_option
@json_option
def upgrade_command(**options: Any) -> None:
    """How many new GPUs do the old cluster's work (from the engine), power before and after,
    payback at the stated prices, and what moves each answer most."""
    context = get_context()
    catalog = context.catalog()
    old_system, old_gpus = parse_fleet(catalog, options["old_text"])
    new_system, _ = parse_fleet(catalog, options["new_text"], computed_count_option="--to")
    if old_gpus is None:
        name = options["old_text"].strip()
        raise UserInputError(
            f"--from {name!r} needs a count: a GPU count of an accelerator (e.g. "
            f"100x{old_system.accelerator.name}) or a system count of a system (e.g. 13x{old_system.name})"
        )
    prices = _prices(options["prices_path"])
    plot_path = options["plot_path"]
    if plot_path is not None and prices is None:
        raise UserInputError("--plot draws the payback sensitivity: give --prices FILE too")
    if plot_path is not None:
        save_tornado(None, plot_path)  # a bad path is refused before the engine runs
    names = options["workload_names"] or DEFAULT_UPGRADE_WORKLOADS
    upgrade = compare_upgrade(
        catalog=catalog,
        models=context.models(),
        old_system=old_system,
        old_gpus=old_gpus,
        new_system=new_system,
        workloads=[cost_workload(name) for name in names],
        power=_power_records(),
        prices=prices,
        efficiency=resolve_efficiency(options["calibration"]),
        pue=options["pue"],
        old_fleet=options["old_text"],
    )
    written = save_tornado(upgrade, plot_path) if plot_path is not None else []
    if options["as_json"]:
        print_json({"upgrade": upgrade, "plots": [str(path) for path in written]})
        return
    render_upgrade(upgrade)
    for path in written:
        click.echo(f"wrote {path}")


@command.command("fleet")
@click.option("--workload", "workload_name", required=True, type=click.Choice(sorted(COST_WORKLOADS)))
@click.option(
    "--systems",
    "system_names",
    default="dgx-h100,dgx-b200,gb200-nvl72",
    show_default=True,
    help="Candidate systems or accelerators, comma-separated.",
)
@click.option(
    "--tokens-per-day",
    type=TOKENS,
    help="Training target: tokens per day, up to 1e16 (made in the working hours of the prices "
    "file's utilisation).",
)
@click.option(
    "--requests-per-s", type=PER_SECOND, help="Serving target: requests per second at the workload's bounds."
)
@prices_option
@pue_option
@calibration_option
@json_option
def fleet_command(**options: Any) -> None:
    """GPUs, systems, racks, power and cost on each candidate system to reach a target."""
    context = get_context()
    catalog = context.catalog()
    systems = [
        parse_fleet(catalog, name, computed_count_option="--systems")[0]
        for name in options["system_names"].split(",")
        if name.strip()
    ]
    if not systems:
        raise UserInputError("--systems names no system; e.g. --systems dgx-h100,dgx-b200")
    sizing = size_fleet(
        catalog=catalog,
        models=context.models(),
        systems=systems,
        workload=cost_workload(options["workload_name"]),
        power=_power_records(),
        tokens_per_day=options["tokens_per_day"],
        requests_per_s=options["requests_per_s"],
        prices=_prices(options["prices_path"]),
        efficiency=resolve_efficiency(options["calibration"]),
        pue=options["pue"],
    )
    if options["as_json"]:
        print_json(sizing)
    else:
        render_fleet(sizing)
