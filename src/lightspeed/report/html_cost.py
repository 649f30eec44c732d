"""The HTML report's cost and energy section: each predicted training step and each serving plan
priced (``lightspeed report --prices``).

A predicted step or serving plan names its cluster (``16 x dgx-h100 over ib-ndr``); the system's
power record gives the draw under training or inference, the prices the PUE, the cloud price per
GPU-hour and the purchase price. A training step is priced per step and per hour; a serving plan
(``plan infer --json``) per million output tokens and per token's energy, by the rule of ``cost
infer`` (:func:`~lightspeed.cost.energy.token_cost`). Every figure lists the inputs it used, and
the section says what the ``cost`` commands say under the same figures (the PUE and its source,
the drawn share's bound, a price the file lacks), in their words.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from lightspeed.catalog import Catalog, SystemPower
from lightspeed.cost import ClusterPower, Prices
from lightspeed.cost.energy import (
    drawn_share_assumptions,
    idle_owned_assumption,
    money_inputs,
    price_notes,
    token_cost,
    whole_systems_power,
)
from lightspeed.cost.prices import pue_for
from lightspeed.cost.upgrade import pue_assumptions, whole_systems_assumption
from lightspeed.datafile import JsonFields
from lightspeed.errors import DataFileError
from lightspeed.limits import MAX_ACCELERATORS
from lightspeed.records import JsonObject
from lightspeed.report.cost import energy, inputs_caption, kw, usd
from lightspeed.report.html import ReportSection, Table, skipped_section
from lightspeed.report.html_sections import PredictedStep
from lightspeed.units import format_count

COST_TITLE = "Cost and energy of each predicted step and serving plan"
NOTHING_TO_PRICE = (
    "--prices was given but no training step or serving plan estimate is in this report, so there is "
    "nothing to price; pass a plan's estimate ('lightspeed plan train ... --json > plan.json' or "
    "'lightspeed plan infer ... --json > plan.json', then --from plan.json)"
)
OWNED_FIGURE: Final = "owned $ per million tokens"
_INFER_FIX: Final = "pass the output of this lightspeed's 'lightspeed plan infer ... --json'"


@dataclass(frozen=True)
class ServedPlan:
    """The fields of a serving estimate (``plan infer --json``) the cost section prices: its
    output tokens/s on ``num_gpus`` GPUs of the cluster ``system`` names."""

    model: str | None
    system: str | None
    num_gpus: int
    output_tokens_per_s: float
    source: str = ""  # the file it was read from

    def name(self) -> str:
        """``serving model on system (N GPUs)``, or ``serving plan (source)`` where none is named."""
        named = " on ".join(part for part in (self.model, self.system) if part)
        where = f" ({self.source})" if self.source else ""
        return f"serving {named or 'plan' + where} ({self.num_gpus:,} GPUs)"


def served_plan(data: JsonObject, *, source: str) -> ServedPlan:
    """A :class:`ServedPlan` from a ``plan infer --json`` object (``source``: the file, named in
    every error): ``num_gpus`` a whole number from 1 to ``MAX_ACCELERATORS``, ``output_tokens_per_s``
    above 0; ``model`` and ``system`` strings where present."""
    fields = JsonFields(source, data)
    num_gpus = fields.integer("num_gpus", minimum=1)
    if num_gpus > MAX_ACCELERATORS:
        raise DataFileError(
            source, f"more than {MAX_ACCELERATORS:,} GPUs", field="num_gpus", value=num_gpus, fix=_INFER_FIX
        )
    return ServedPlan(
        model=fields.string("model") if fields.present("model") else None,
        system=fields.string("system") if fields.present("system") else None,
        num_gpus=num_gpus,
        output_tokens_per_s=fields.number("output_tokens_per_s"),
        source=Path(source).name,
    )


def _catalog_system(text: str, power: Mapping[str, SystemPower]) -> str | None:
    """The catalog system named in a cluster name such as ``'16 x dgx-h100 over ib-ndr'``."""
    return next((word for word in text.replace(",", " ").split() if word in power), None)


def _row(
    step: PredictedStep, catalog: Catalog, power: dict[str, SystemPower], prices: Prices
) -> tuple[tuple[str, ...], ClusterPower | None, tuple[str, ...]]:
    """One step's cells, the draw they price (``None``: nothing to price) and the notes on it."""
    name = _catalog_system(step.system or "", power)
    if step.num_gpus is None:
        return (step.name(), "-", "the plan names no GPU count", "-", "-", "-"), None, ()
    if name is None:
        return (step.name(), str(step.num_gpus), "no power data", "-", "-", "-"), None, ()
    system = catalog.system(name)
    site = pue_for(power[name].cooling, prices=prices)  # the file's PUE, else the sourced default
    draw = whole_systems_power(power, system, step.num_gpus, "train", site)
    accelerator = system.accelerator.name
    rate = prices.cloud_usd_per_gpu_hour.get(accelerator)
    per_step = step.num_gpus * rate * step.step_time_s / 3600.0 if rate is not None else None
    per_hour = step.num_gpus * rate if rate is not None else None
    cells = (
        step.name(),
        str(step.num_gpus),
        kw(draw.facility_power_w),
        energy(draw.facility_power_w * step.step_time_s),
        usd(per_step),
        usd(per_hour),
    )
    return cells, draw, price_notes(prices, accelerator=accelerator)


def _serving_row(
    plan: ServedPlan, catalog: Catalog, power: dict[str, SystemPower], prices: Prices
) -> tuple[tuple[str, ...], ClusterPower | None, tuple[str, ...], dict[str, Any]]:
    """One serving plan's cells, the draw they price (``None``: no power data), the notes on it
    and the inputs its figures used, by the rule of ``cost infer``."""
    name = _catalog_system(plan.system or "", power)
    rate = format_count(plan.output_tokens_per_s)
    if name is None:
        return (plan.name(), str(plan.num_gpus), rate, "no power data", "-", "-", "-"), None, (), {}
    system = catalog.system(name)
    site = pue_for(power[name].cooling, prices=prices)
    draw = whole_systems_power(power, system, plan.num_gpus, "infer", site)
    accelerator = system.accelerator.name
    cost = token_cost(
        power=draw,
        num_gpus=plan.num_gpus,
        tokens_per_s=plan.output_tokens_per_s,
        accelerator=accelerator,
        prices=prices,
    )
    cells = (
        plan.name(),
        str(plan.num_gpus),
        rate,
        kw(draw.facility_power_w),
        f"{cost.energy_per_token_j:.3g} J",
        usd(cost.cloud_usd_per_million_tokens),
        usd(cost.owned_usd_per_million_tokens),
    )
    notes = price_notes(prices, accelerator=accelerator, system=draw.system)
    return cells, draw, notes, money_inputs(prices, accelerator, draw)


def _notes(draws: Sequence[ClusterPower], notes: Sequence[str]) -> tuple[str, ...]:
    """The lines the cost commands print under the same figures: the PUE and its source, whole
    systems, the drawn share (an upper bound), and each price the file lacks; each once."""
    held = [whole_systems_assumption(draw) for draw in draws if draw.num_held_gpus != draw.num_gpus]
    drawn = [line for draw in draws for line in drawn_share_assumptions(draw)]
    assumed = (f"assumed: {line}" for line in (*pue_assumptions(draws), *held, *drawn))
    lines = [*assumed, *(f"note: {line}" for line in notes)]
    return tuple(dict.fromkeys(lines))


def _steps_table(
    priced: Sequence[tuple[tuple[str, ...], ClusterPower | None, tuple[str, ...]]], prices: Prices
) -> Table:
    used = {
        "electricity_usd_per_kwh": prices.electricity_usd_per_kwh,
        "pue_air": prices.pue_air,
        "pue_liquid": prices.pue_liquid,
        **{f"cloud_usd_per_gpu_hour.{key}": value for key, value in prices.cloud_usd_per_gpu_hour.items()},
    }
    return Table(
        headers=("plan", "GPUs", "facility power", "energy per step", "cloud $ per step", "cloud $ per hour"),
        rows=tuple(cells for cells, _, _ in priced),
        caption=inputs_caption(used),
    )


def _serving_table(inputs: Sequence[Mapping[str, Any]], rows: Sequence[tuple[str, ...]]) -> Table:
    used = {key: value for each in inputs for key, value in each.items() if key != "pue"}  # PUE: its line
    return Table(
        headers=(
            "serving plan",
            "GPUs",
            "output tokens/s",
            "facility power",
            "energy per output token",
            "cloud $ per million tokens",
            "owned $ per million tokens",
        ),
        rows=tuple(rows),
        caption=inputs_caption(used) if used else "",
    )


def cost_section(
    estimates: Sequence[PredictedStep],
    *,
    catalog: Catalog,
    power: Mapping[str, SystemPower],
    prices: Prices,
    served: Sequence[ServedPlan] = (),
) -> ReportSection:
    """Facility power, energy per step and cloud cost per step and per hour of each predicted
    training step; output tokens/s, energy per output token and cloud and owned $ per million
    tokens of each serving plan (``served``, as ``cost infer`` prices them); with the PUE and its
    source, the drawn share's bound and the prices the file lacks (the lines the ``cost``
    commands print). With neither, a section that says there is nothing to price and how to add
    a plan."""
    if not estimates and not served:
        return skipped_section("cost", COST_TITLE, NOTHING_TO_PRICE)
    steps = [_row(step, catalog, dict(power), prices) for step in estimates]
    serving = [_serving_row(plan, catalog, dict(power), prices) for plan in served]
    draws = [draw for _, draw, _ in steps if draw is not None]
    draws += [draw for _, draw, _, _ in serving if draw is not None]
    notes = [note for _, _, found in steps for note in found]
    notes += [note for _, _, found, _ in serving for note in found]
    owned = any(key.startswith("system_purchase_usd.") for *_, used in serving for key in used)
    idle = [f"assumed: {line}" for line in idle_owned_assumption(prices, OWNED_FIGURE)] if owned else []
    tables = [_steps_table(steps, prices)] if steps else []
    if serving:
        tables.append(_serving_table([used for *_, used in serving], [cells for cells, *_ in serving]))
    return ReportSection(
        key="cost",
        title=COST_TITLE,
        paragraphs=(
            "Power: each system's rated power (catalog/data/power) x the share drawn under training "
            "(steps) or inference (serving plans), in the whole systems the GPUs occupy; prices are "
            "the user's inputs, not market figures. A serving plan's $ per million output tokens: its "
            "GPUs' cloud price, or its whole systems' TCO, per hour / output tokens per hour, as "
            "'lightspeed cost infer' prices it.",
            *_notes(draws, notes),
            *idle,
        ),
        tables=tuple(tables),
    )


__all__ = ["COST_TITLE", "NOTHING_TO_PRICE", "ServedPlan", "cost_section", "served_plan"]
