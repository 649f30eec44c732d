"""The HTML report's cost and energy section: each predicted step priced (``lightspeed report --prices``).

A predicted step names its cluster (``16 x dgx-h100 over ib-ndr``); the system's
power record gives the draw under training, the prices the PUE and the cloud
price per GPU-hour. Every figure lists the inputs it used.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from lightspeed.catalog import Catalog, SystemPower
from lightspeed.cost import Prices, cluster_power
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
    step: PredictedStep, catalog: Catalog, power: Mapping[str, SystemPower], prices: Prices
) -> tuple[str, ...]:
    name = _catalog_system(step.system or "", power)
    if step.num_gpus is None:
        return (step.name(), "-", "the plan names no GPU count", "-", "-", "-")
    if name is None:
        return (step.name(), str(step.num_gpus), "no power data", "-", "-", "-")
    system = catalog.system(name)
    record = power[name]
    draw = cluster_power(
        power=record,
        gpus_per_system=system.num_accelerators,
        num_gpus=step.num_gpus,
        workload="train",
        gpu_tdp_w=system.accelerator.tdp_w,
        pue=prices.pue(record.cooling),
    )
    rate = prices.cloud_usd_per_gpu_hour.get(system.accelerator.name)
    per_step = step.num_gpus * rate * step.step_time_s / 3600.0 if rate is not None else None
    per_hour = step.num_gpus * rate if rate is not None else None
    return (
        step.name(),
        str(step.num_gpus),
        kw(draw.facility_power_w),
        energy(draw.facility_power_w * step.step_time_s),
        usd(per_step),
        usd(per_hour),
    )


def cost_section(
    estimates: Sequence[PredictedStep], *, catalog: Catalog, power: Mapping[str, SystemPower], prices: Prices
) -> ReportSection:
    """Facility power, energy per step and cloud cost per step and per hour of each predicted step;
    without one, a section that says there is nothing to price and how to add a plan."""
    if not estimates:
        return skipped_section("cost", COST_TITLE, NOTHING_TO_PRICE)
    rows = tuple(_row(step, catalog, power, prices) for step in estimates)
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
            "Power: each system's rated power x the share drawn under training (catalog/data/power); "
            "prices are the user's inputs, not market figures.",
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
                rows=rows,
                caption=inputs_caption(used),
            ),
        ),
    )


__all__ = ["COST_TITLE", "NOTHING_TO_PRICE", "cost_section"]
