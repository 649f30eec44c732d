"""Rendering of cost, energy, power and cooling: tables, the upgrade comparison and its tornado plot.

Every money figure is printed with the inputs it used (a caption under its table).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from lightspeed.cost import (
    ClusterPower,
    DeepSeekCost,
    FleetSizing,
    InferenceCost,
    RackPlan,
    SystemCost,
    Tco,
    TrainingCost,
    Upgrade,
)
from lightspeed.cost.energy import NO_PRICES_NOTE
from lightspeed.cost.pue import GIVEN_PUE_SOURCE
from lightspeed.cost.upgrade import UpgradeMatch, pue_assumptions
from lightspeed.errors import UserInputError
from lightspeed.records import JsonObject
from lightspeed.report.console import make_console, plain, render_table
from lightspeed.report.palette import category_color, series_color
from lightspeed.report.plots import (
    PLOT_FORMATS,
    check_plot_targets,
    new_figure,
    plain_text,
    plot_paths,
    save_figure,
)
from lightspeed.units import format_count, format_duration, format_si, format_significant

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from rich.console import Console

JOULES_PER_KWH = 3.6e6


def kw(value_w: float | None) -> str:
    """``70.0 kW`` below a megawatt (one decimal, so that a column lines up), else with its SI
    prefix: ``1.024 MW``, ``12.75 GW`` (or ``-``)."""
    if value_w is None:
        return "-"
    return f"{value_w / 1e3:,.1f} kW" if abs(value_w) < 1e6 else format_si(value_w, "W")


def usd(value: float | None) -> str:
    """``$1.23M``, ``$45.6k``, ``$7.89`` (or ``-``)."""
    if value is None:
        return "-"
    for size, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= size:
            return f"${value / size:,.4g}{suffix}"
    return f"${value:,.4g}"


def years(value: float | None) -> str:
    """``1.5 years``, ``150 years`` or ``never`` (savings do not cover the running costs)."""
    return "never" if value is None else f"{format_significant(value, 2)} years"


def energy(value_j: float) -> str:
    """Energy from 1 kWh up in Wh with an SI prefix (``589.7 MWh``, ``119.1 TWh``), below it in J
    (``296.8 kJ``, ``0.2549 J``).

    >>> energy(3.6e6 * 8.465e6), energy(254.9e-3)
    ('8.465 GWh', '0.2549 J')
    """
    if abs(value_j) < JOULES_PER_KWH:
        return format_si(value_j, "J")
    return format_si(value_j / 3600.0, "Wh")


def _systems(count: float) -> str:
    """A count of systems or GPUs, whole or fractional, never in scientific notation."""
    return format_significant(count, 9)


def inputs_caption(inputs: JsonObject) -> str:
    """``inputs: key=value, ...``: the inputs a price-dependent figure used."""
    return "inputs: " + ", ".join(
        f"{key}={_number(value)}" for key, value in inputs.items() if value is not None
    )


def _number(value: object) -> str:
    if isinstance(value, float):
        return f"{value:,.0f}" if abs(value) >= 1e4 else f"{value:g}"
    return str(value)


def _render_inputs(inputs: JsonObject, console: Console | None = None) -> None:
    (console or make_console()).print("  " + inputs_caption(inputs), style="dim", markup=False)


def _power_rows(power: ClusterPower) -> list[list[str]]:
    return [
        [
            "whole systems (GPUs held / used)",
            f"{_systems(power.num_systems)} x {power.system} "
            f"({_systems(power.num_held_gpus)} / {power.num_gpus:,})",
        ],
        ["GPU TDP only", kw(power.gpus_tdp_w)],
        ["systems rated", kw(power.rated_power_w)],
        [f"IT draw ({power.basis})", kw(power.it_power_w)],
        [f"facility (x PUE {power.pue:g})", kw(power.facility_power_w)],
        ["heat to liquid / air", f"{kw(power.liquid_heat_w)} / {kw(power.air_heat_w)}"],
    ]


def render_training_cost(cost: TrainingCost) -> None:
    """Print a training run's time, GPU-hours, energy and money."""
    rows = [
        ["throughput (engine)", f"{format_count(cost.tokens_per_s)} tokens/s on {cost.num_gpus} GPUs"],
        ["tokens", format_count(cost.num_tokens)],
        ["time to train", format_duration(cost.time_s)],
        ["GPU-hours", format_count(cost.gpu_hours)],
        *_power_rows(cost.power),
        ["energy per step", energy(cost.energy_per_step_j)],
        ["energy per token", f"{cost.energy_per_token_j:.3g} J"],
        ["energy of the run", energy(cost.energy_j)],
        ["electricity", usd(cost.electricity_usd)],
        ["cloud cost", usd(cost.cloud_usd)],
        ["owned cost (TCO share)", usd(cost.owned_usd)],
    ]
    console = make_console()
    render_table(
        f"{cost.model} training on {cost.num_gpus} x {cost.system} GPUs",
        ["", "value"],
        rows,
        console=console,
    )
    _render_inputs(cost.inputs, console)
    _render_assumptions(cost.assumptions, console)
    _render_notes(cost.notes, console)


def _render_assumptions(assumptions: Iterable[str], console: Console) -> None:
    """The ``assumed:`` lines: the efficiency figures used, whole systems, the PUE's source."""
    for line in assumptions:
        console.print(f"  assumed: {plain(line)}", style="dim")


def _render_notes(notes: Iterable[str], console: Console) -> None:
    """The ``note:`` lines: a figure not shown and why (a price the prices file lacks)."""
    for line in notes:
        console.print(f"  note: {plain(line)}")


def render_inference_cost(cost: InferenceCost) -> None:
    """Print a deployment's cost and energy per output token."""
    rows = [
        ["deployment", f"{cost.plan} on {cost.num_gpus} GPUs"],
        ["output tokens/s (engine)", format_count(cost.output_tokens_per_s)],
        ["TTFT / TPOT", f"{format_duration(cost.ttft_s)} / {format_duration(cost.tpot_s)}"],
        *_power_rows(cost.power),
        ["energy per output token", f"{cost.energy_per_token_j:.3g} J"],
        ["cloud $ per million tokens", usd(cost.cloud_usd_per_million_tokens)],
        ["owned $ per million tokens", usd(cost.owned_usd_per_million_tokens)],
    ]
    console = make_console()
    render_table(f"{cost.model} served on {cost.system}", ["", "value"], rows, console=console)
    _render_inputs(cost.inputs, console)
    _render_assumptions(cost.assumptions, console)
    _render_notes(cost.notes, console)


def render_tco(tco: Tco) -> None:
    """Print one TCO per year."""
    rows = [
        ["purchase", usd(tco.capex_usd)],
        ["capex per year", usd(tco.capex_per_year_usd)],
        ["energy per year", energy(tco.energy_per_year_j)],
        ["electricity per year", usd(tco.electricity_per_year_usd)],
        ["other opex per year", usd(tco.other_opex_per_year_usd)],
        ["total per year", usd(tco.total_per_year_usd)],
        ["per GPU-hour worked", usd(tco.usd_per_gpu_hour)],
    ]
    console = make_console()
    render_table(
        f"TCO per year in {tco.currency}: {_systems(tco.num_systems)} x {tco.system} ({tco.num_gpus:,} GPUs)",
        ["", "value"],
        rows,
        console=console,
    )
    _render_inputs(tco.inputs, console)
    _render_assumptions(tco.assumptions, console)


def render_rack_plan(plan: RackPlan, notes: Sequence[str] = ()) -> None:
    """Print racks, power per rack, site power (rated, and drawn under the plan's workload), the
    cooling split and the parts the rack sums; ``notes``: figures not shown and why."""
    console = make_console()
    if plan.parts:
        parts = [[part.name, str(part.count), kw(part.power_each_w), kw(part.power_w)] for part in plan.parts]
        parts.append(["rack total", "", "", kw(sum(part.power_w for part in plan.parts))])
        render_table(
            f"{plan.system}: rated power from parts",
            ["part", "count", "each", "total"],
            parts,
            console=console,
        )
    fits = "-" if plan.fits_site is None else ("yes" if plan.fits_site else "NO")
    asked = plan.num_gpus_requested
    rows = [
        ["GPUs / systems / racks", f"{plan.num_gpus:,} / {plan.num_systems:,} / {plan.num_racks:,}"],
        *([["GPUs asked (--gpus), in whole systems", f"{asked:,} -> {plan.num_gpus:,}"]] if asked else []),
        ["systems per rack", str(plan.systems_per_rack)],
        ["rated power per rack", kw(plan.rack_power_w)],
        ["site IT power, rated", kw(plan.site_it_power_w)],
        [f"site facility power, rated (x PUE {plan.pue:g})", kw(plan.site_facility_power_w)],
        [f"heat to liquid, rated ({plan.cooling} cooled)", kw(plan.liquid_heat_w)],
        ["heat to air, rated", kw(plan.air_heat_w)],
        [
            f"site IT power, drawn (rated x {plan.draw_share:g} under {plan.workload})",
            kw(plan.drawn_it_power_w),
        ],
        [f"site facility power, drawn (x PUE {plan.pue:g})", kw(plan.drawn_facility_power_w)],
        ["site budget", kw(plan.site_budget_w)],
        ["fits the site budget (rated facility power)", fits],
    ]
    render_table(f"{plan.system}: rack and site power plan", ["", "value"], rows, console=console)
    for source in plan.sources:
        console.print(f"  source: {plain(source)}", style="dim")
    console.print(
        f"  PUE {plan.pue:g}: {plain(plan.pue_source or 'given')}"
        + ("" if plan.pue_source == GIVEN_PUE_SOURCE else "; --pue sets your site's"),
        style="dim",
    )
    _render_notes(notes, console)


def render_deepseek_cost(result: DeepSeekCost) -> None:
    """Print DeepSeek-V3's cost from the engine's GPU-hours beside the report's."""
    rate = result.usd_per_gpu_hour
    rows = [
        [
            "pre-training GPU-hours",
            format_count(result.predicted_pretrain_gpu_hours),
            format_count(result.published_pretrain_gpu_hours),
        ],
        [
            "+ context extension and post-training",
            format_count(result.other_gpu_hours),
            format_count(result.other_gpu_hours),
        ],
        *_deepseek_totals(result),
        ["predicted / published", f"{result.ratio:.3f}", ""],
        ["energy of pre-training (engine, facility)", energy(result.training.energy_j), ""],
    ]
    render_table(
        "DeepSeek-V3 training cost: engine vs technical report (Table 1)",
        ["", "engine", "published"],
        rows,
    )
    console = make_console()
    inputs = {"usd_per_gpu_hour": rate, "usd_per_gpu_hour_source": result.usd_per_gpu_hour_source}
    _render_inputs({**inputs, "pue": result.training.power.pue}, console)
    console.print(f"  note: {result.note}", style="dim", markup=False)
    _render_assumptions(result.training.assumptions, console)


def _deepseek_totals(result: DeepSeekCost) -> list[list[str]]:
    """The total row at the rate used; at another rate than the report's, the published column
    is the report's GPU-hours at that rate (said so), and a row gives the report's own figure."""
    rate, published_rate = result.usd_per_gpu_hour, result.published_usd_per_gpu_hour
    if math.isclose(rate, published_rate):
        return [
            [f"total at ${rate:g}/GPU-hour", usd(result.predicted_total_usd), usd(result.published_total_usd)]
        ]
    return [
        [
            f"total at ${rate:g}/GPU-hour (published: rescaled)",
            usd(result.predicted_total_usd),
            usd(result.published_total_usd),
        ],
        [
            f"published total, at the report's ${published_rate:g}/GPU-hour",
            "",
            usd(result.published_report_usd),
        ],
    ]


def render_upgrade(upgrade: Upgrade) -> None:
    """Print the upgrade comparison beside the seed's claim, each workload's payback and sensitivities."""
    console = make_console()
    rows = []
    if upgrade.seed_claim.get("applies", True):  # H100 SXM -> B200 class: the claim's own GPUs
        rows.append(["seed claim 17", "100", "50", "2.00", "70 -> 50", "", "1-2 y", ""])
    for match in upgrade.matches:
        payback = match.payback
        rows.append(
            [
                match.workload,
                str(match.old_gpus),
                f"{match.new_gpus} ({match.new_gpu_equivalent:.1f})",
                f"{match.gpu_ratio:.2f}",
                _kw_pair(match.power_before.gpus_tdp_w, match.power_after.gpus_tdp_w),
                _kw_pair(match.power_before.facility_power_w, match.power_after.facility_power_w),
                _years_short(payback.vs_renting_years) if payback else "-",
                _years_short(payback.vs_keeping_years) if payback else "-",
            ]
        )
    render_table(
        f"{_old_fleet(upgrade)} -> {upgrade.new_system}: same work",
        [
            "workload",
            "old GPUs",
            "new (exact)",
            "old/new",
            "GPU TDP kW",
            "facility kW",
            "payback rent",
            "payback keep",
        ],
        rows,
        console=console,
        right_align_from=1,
        caption=_SEED_CAPTION
        * bool(upgrade.seed_claim.get("applies", True))
        + "new: whole systems reaching the old throughput (exact: old / new tokens/s per GPU); "
        "GPU TDP: the seed's convention; facility: systems' draw x PUE; payback rent: the purchase "
        "repaid by not renting the old GPUs; keep: repaid by running-cost savings alone",
    )
    for match in upgrade.matches:
        _render_match(console, match)
    _render_assumptions(upgrade.assumptions, console)
    _render_notes(upgrade.notes, console)


def _old_fleet(upgrade: Upgrade) -> str:
    """The old cluster as given (``100 dgx-h100 systems (800 GPUs)``)."""
    return upgrade.old_fleet or f"{upgrade.old_gpus} GPUs of {upgrade.old_system}"


_SEED_CAPTION = "seed claim 17: the seed's reference figures for 100 H100 -> ~50 B200 (not computed); "


def _kw_pair(before_w: float | None, after_w: float | None) -> str:
    if before_w is None or after_w is None:
        return "-"
    return f"{before_w / 1e3:,.0f} -> {after_w / 1e3:,.0f}"


def _years_short(value: float | None) -> str:
    return "never" if value is None else f"{format_significant(value, 2)} y"


def _render_match(console: Console, match: UpgradeMatch) -> None:
    console.print(f"[bold]{plain(match.workload)}[/bold]: {plain(match.description)}")
    # training: the fastest plan on whole systems the old GPUs hold, which may leave some idle
    used = f"{match.old.num_gpus:,}"
    if match.kind == "train" and match.old.num_gpus < match.old_gpus:
        used += f" of the {match.old_gpus:,} GPUs (the fastest plan they hold),"
    else:
        used += " GPUs,"
    console.print(
        f"  old: {match.old.plan} on {used} "
        f"{format_count(match.old.tokens_per_s_per_gpu)} tokens/s per GPU ({match.old.precision})",
        markup=False,
    )
    console.print(
        f"  new: {match.new.plan} on {match.new.num_gpus:,} GPUs, "
        f"{format_count(match.new.tokens_per_s_per_gpu)} tokens/s per GPU ({match.new.precision})",
        markup=False,
    )
    console.print(f"  {match.verdict}", markup=False)
    for row in match.sensitivities:
        console.print(
            f"  sensitivity of {row.answer} to {row.input}: {_answer(row.low_answer)} .. "
            f"{_answer(row.high_answer)} (base {_answer(row.base_answer)})",
            style="dim",
            markup=False,
        )
    if match.payback is not None:
        _render_inputs(match.payback.inputs, console)


def _answer(value: float | None) -> str:
    return "never" if value is None else format_significant(value, 3)


def render_fleet(sizing: FleetSizing) -> None:
    """Print each candidate system sized to the target."""
    rows = []
    for option in sizing.options:
        rows.append(
            [
                option.system,
                option.point.precision,
                str(option.num_gpus),
                str(option.num_systems),
                str(option.num_racks),
                format_count(option.tokens_per_s),
                kw(option.power.facility_power_w),
                usd(option.tco.total_per_year_usd) if option.tco else "-",
                usd(option.cloud_usd_per_day) if option.cloud_usd_per_day is not None else "-",
            ]
        )
    # a candidate that cannot reach the target: its row says so, and a note says why
    rows.extend(
        [shortfall.system, "-", "-", "-", "-", "not reached", "-", "-", "-"]
        for shortfall in sizing.unreachable
    )
    console = make_console()
    render_table(
        f"fleet for {sizing.target} ({sizing.workload})",
        [
            "system",
            "precision",
            "GPUs",
            "systems",
            "racks",
            "tokens/s",
            "facility power",
            "TCO/year",
            "cloud/day",
        ],
        rows,
        right_align_from=2,
        caption=_fleet_caption(sizing),
        console=console,
    )
    for option in sizing.options:
        if "electricity_usd_per_kwh" not in (option.inputs or {}):  # no prices: the PUE line below
            continue
        inputs = option.tco.inputs if option.tco is not None else (option.inputs or {})
        cloud = {key: value for key, value in (option.inputs or {}).items() if key.startswith("cloud_")}
        _render_inputs({"system": option.system, **inputs, **cloud}, console)
    tco_lines = (
        line for option in sizing.options if option.tco is not None for line in option.tco.assumptions
    )
    lines = pue_assumptions([option.power for option in sizing.options])
    _render_assumptions(dict.fromkeys((*lines, *sizing.assumptions, *tco_lines)), console)
    _render_notes((f"{option.system}: {note}" for option in sizing.options for note in option.notes), console)
    _render_notes((f"{shortfall.system}: {shortfall.reason}" for shortfall in sizing.unreachable), console)


def _fleet_caption(sizing: FleetSizing) -> str:
    """What the columns are; without a prices file, that the money columns need one."""
    priced = any(option.inputs and "electricity_usd_per_kwh" in option.inputs for option in sizing.options)
    money = (
        "TCO/year and cloud/day from the prices file, for the same working hours"
        if priced
        else NO_PRICES_NOTE.format(figures="TCO/year and cloud/day")
    )
    return f"tokens/s: the engine's best plan on that many systems; {money}"


def render_system_costs(costs: Sequence[SystemCost], workload: str) -> None:
    """Print the cost and energy columns of ``compare systems --prices``."""
    unit = "training" if workload == "train" else "output"
    rows = [
        [
            cost.system,
            str(cost.num_gpus),
            kw(cost.facility_power_w),
            "-" if cost.energy_per_token_j is None else f"{cost.energy_per_token_j:.3g} J",
            usd(cost.cloud_usd_per_million_tokens),
            usd(cost.owned_usd_per_million_tokens),
        ]
        for cost in costs
    ]
    console = make_console()
    render_table(
        f"cost and energy of each best plan (per {unit} token)",
        [
            "system",
            "GPUs",
            "facility power",
            "energy/token",
            "cloud $/M tokens",
            "owned $/M tokens",
        ],
        rows,
        right_align_from=1,
        console=console,
    )
    for cost in costs:
        _render_inputs({"system": cost.system, **cost.inputs}, console)
        if cost.note:
            console.print(f"  {cost.system}: {cost.note}", style="dim", markup=False)


def tornado_figure(upgrade: Upgrade, answer: str = "payback vs renting (years)") -> Figure:
    """A tornado plot per workload: how far ``answer`` moves between each input's low and high value."""
    matches = [match for match in upgrade.matches if any(row.answer == answer for row in match.sensitivities)]
    figure, axes = new_figure(8.0, 1.2 + 0.9 * max(1, len(matches) * 3) * 0.45)
    labels: list[str] = []
    position = 0
    for index, match in enumerate(matches):
        for row in [row for row in match.sensitivities if row.answer == answer]:
            base = row.base_answer if row.base_answer is not None else 0.0
            low, high = (_capped(value, base) for value in (row.low_answer, row.high_answer))
            left, right = min(low, high), max(low, high)
            axes.barh(position, right - left, left=left, color=series_color(index))
            labels.append(plain_text(f"{match.workload}: {row.input}"))
            position += 1
        if matches:
            axes.axvline(
                match.sensitivities[0].base_answer or 0.0,
                color=category_color("sol"),
                linewidth=0.8,
                linestyle="--",
            )
    axes.set_yticks(range(len(labels)))
    axes.set_yticklabels(labels, fontsize=8)
    axes.invert_yaxis()
    axes.set_xlabel(answer)
    axes.set_title(
        plain_text(f"{_old_fleet(upgrade)} -> {upgrade.new_system}: sensitivity", 90),
        loc="left",
    )
    return figure


def _capped(value: float | None, base: float) -> float:
    """A finite bar end: ``never`` is drawn at 10 x the base (and said so in the label axis)."""
    if value is None or not math.isfinite(value):
        return 10.0 * base if base > 0 else 10.0
    return value


def save_tornado(upgrade: Upgrade | None, path: Path) -> list[Path]:
    """Write the payback tornado plot to exactly ``path`` (``.png``, ``.svg`` or ``.pdf``; an
    existing folder gets ``tornado.png`` and ``tornado.svg`` inside it, as every ``--plot`` folder
    does). A missing folder, a special file (``/dev/full``)
    or a name without a plot suffix is refused in one line: the path is never rewritten and no
    folder is created. ``upgrade=None`` only checks the path (before the engine runs)."""
    stem, chosen = _tornado_target(path)
    targets = check_plot_targets(stem, chosen)
    if upgrade is None:
        return targets
    return save_figure(tornado_figure(upgrade), stem, chosen)


def _tornado_target(path: Path) -> tuple[Path, tuple[str, ...]]:
    if path.is_dir() or (path.exists() and not path.is_file()):  # plot_paths: a folder, or refused
        return plot_paths(path, name="tornado")
    if path.suffix.lower().lstrip(".") not in PLOT_FORMATS:
        raise UserInputError(
            f"cannot write the plot {path}: end its name in .png, .svg or .pdf (nothing is appended)"
        )
    if not path.parent.is_dir():
        raise UserInputError(
            f"cannot write the plot {path}: no folder {path.parent}; create it first or name another path"
        )
    return plot_paths(path, name="tornado")
