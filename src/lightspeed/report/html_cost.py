"""The HTML report's cost and energy section: each predicted step priced (``lightspeed report --prices``).

A predicted step names its cluster (``16 x dgx-h100 over ib-ndr``); the system's
power record gives the draw under training, the prices the PUE and the cloud
price per GPU-hour. Every figure lists the inputs it used, and the section says what the
``cost`` commands say under the same figures (the PUE and its source, the drawn share's
bound, a price the file lacks), in their words.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from lightspeed.catalog import Catalog, SystemPower
from lightspeed.cost import ClusterPower, Prices
from lightspeed.cost.energy import drawn_share_assumptions, price_notes, whole_systems_power
from lightspeed.cost.prices import pue_for
from lightspeed.cost.upgrade import pue_assumptions, whole_systems_assumption
from lightspeed.report.cost import energy, inputs_caption, kw, usd
from lightspeed.report.html import ReportSection, Table, skipped_section
from lightspeed.report.html_sections import PredictedStep

COST_TITLE = "Cost and energy of each predicted step"
NOTHING_TO_PRICE = (
    "--prices was given but no predicted step is in this report, so there is nothing to price; pass a "
    "plan's estimate ('lightspeed plan train ... --json > plan.json', then --from plan.json)"
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


def _notes(draws: Sequence[ClusterPower], notes: Sequence[str]) -> tuple[str, ...]:
    """The lines the cost commands print under the same figures: the PUE and its source, whole
    systems, the drawn share (an upper bound), and each price the file lacks; each once."""
    held = [whole_systems_assumption(draw) for draw in draws if draw.num_held_gpus != draw.num_gpus]
    drawn = [line for draw in draws for line in drawn_share_assumptions(draw)]
    assumed = (f"assumed: {line}" for line in (*pue_assumptions(draws), *held, *drawn))
    lines = [*assumed, *(f"note: {line}" for line in notes)]
    return tuple(dict.fromkeys(lines))


def cost_section(
    estimates: Sequence[PredictedStep], *, catalog: Catalog, power: Mapping[str, SystemPower], prices: Prices
) -> ReportSection:
    """Facility power, energy per step and cloud cost per step and per hour of each predicted step,
    with the PUE and its source, the drawn share's bound and the prices the file lacks (the
    lines the ``cost`` commands print); without a step, a section that says there is nothing to
    price and how to add a plan."""
    if not estimates:
        return skipped_section("cost", COST_TITLE, NOTHING_TO_PRICE)
    priced = [_row(step, catalog, dict(power), prices) for step in estimates]
    draws = [draw for _, draw, _ in priced if draw is not None]
    used = {
        "electricity_usd_per_kwh": prices.electricity_usd_per_kwh,
        "pue_air": prices.pue_air,
        "pue_liquid": prices.pue_liquid,
        **{f"cloud_usd_per_gpu_hour.{key}": value for key, value in prices.cloud_usd_per_gpu_hour.items()},
    }
    return ReportSection(
        key="cost",
        title=COST_TITLE,
        paragraphs=(
            "Power: each system's rated power x the share drawn under training (catalog/data/power), "
            "in the whole systems the GPUs occupy; prices are the user's inputs, not market figures.",
            *_notes(draws, [note for _, _, notes in priced for note in notes]),
        ),
        tables=(
            Table(
                headers=(
                    "plan",
                    "GPUs",
                    "facility power",
                    "energy per step",
                    "cloud $ per step",
                    "cloud $ per hour",
                ),
                rows=tuple(cells for cells, _, _ in priced),
                caption=inputs_caption(used),
            ),
        ),
    )


__all__ = ["COST_TITLE", "NOTHING_TO_PRICE", "cost_section"]
