"""Energy, power and money of a job and a cluster, from the engines' predicted throughput.

Power comes from the catalog's ``system-power`` records (rated maximum x the
share drawn under training or inference), or from a measured mean power when
monitor data exists. Money comes from a :class:`~lightspeed.cost.prices.Prices`
the user gives; every money figure carries the ``inputs`` it used.

Conventions: power in W, energy in J (kWh and MWh only when rendered), time in
s, money in US dollars. Facility power = IT power x PUE. The racks and rated power of a
cluster are :mod:`lightspeed.cost.racks`'s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Final

from lightspeed.catalog import Cluster, System
from lightspeed.catalog.power import SystemPower, power_of
from lightspeed.cost.prices import HOURS_PER_YEAR, JOULES_PER_KWH, Prices, pue_for
from lightspeed.cost.pue import SitePue, site_pue
from lightspeed.errors import UserInputError
from lightspeed.records import JsonDict, Record
from lightspeed.sol.core.calibration import calibration_device_note
from lightspeed.sol.core.efficiency import EfficiencyModel
from lightspeed.sol.infer.estimate import InferenceEstimate
from lightspeed.sol.train.result import TrainingEstimate
from lightspeed.units import format_significant

WORKLOAD_KINDS: Final = ("train", "infer")
# DeepSeek-V3 technical report, Table 1: H800 GPU-hours and cost at $2 per GPU-hour.
DEEPSEEK_CONTEXT_EXTENSION_GPU_HOURS: Final = 119e3
DEEPSEEK_POST_TRAINING_GPU_HOURS: Final = 5e3
DEEPSEEK_PUBLISHED_USD: Final = 5.576e6
DEEPSEEK_USD_PER_GPU_HOUR: Final = 2.0
# A measured mean below this share of the systems' rated maximum is refused: a working node's
# CPUs, fans, NICs and idle GPUs alone draw more (the one node measurement the catalog has, an
# H100 node training, drew 0.82 of its rating). It catches kW typed as W and per-GPU readings.
MIN_MEASURED_SHARE: Final = 0.1
MEASURED_BASIS: Final = "measured mean power"
WHOLE_SYSTEMS_RULE: Final = (
    "power and ownership count whole systems (the GPUs a job leaves idle in them too); "
    "cloud GPU-hours count the GPUs the job uses"
)
# The catalog's power records hold a rated maximum and the share drawn while working, no idle
# draw: the hours a prices file's utilisation leaves idle are priced at 0 W, and said so.
IDLE_HOURS_RULE: Final = (
    "the idle {idle:.0%} of the year (utilisation {utilisation:g}) is counted at 0 W: lightspeed has "
    "no sourced idle draw of a powered system, so energy and electricity are a lower bound "
    "(utilisation = 1 in the prices file prices every hour at the working draw, an upper bound)"
)

# A run's energy and electricity are those of its working time: a prices file's idle hours change
# only what owning the systems costs per hour worked (the purchase spread over fewer hours).
IDLE_OWNED_RULE: Final = (
    "{figure}: utilisation {utilisation:g} leaves {idle:.0%} of the year idle, so the purchase is "
    "spread over the working hours only, and the idle hours' electricity is counted at 0 W "
    "(lightspeed has no sourced idle draw of a powered system): the owned cost is a lower bound; "
    "the run's energy and electricity do not depend on the utilisation"
)
# The one reason a money figure is absent without a prices file (every cost command's words).
NO_PRICES_NOTE: Final = "{figures} need --prices FILE (see examples/prices.toml): no prices were given"

# The shipped records' drawn share (0.82) is the PEAK an H100 node drew training (8.4 of 10.2 kW,
# Latif et al.); priced as the mean draw over a run or a year, it bounds energy from above.
DRAWN_SHARE_RULE: Final = (
    "IT draw = rated x {share:g} under {workload}, priced as the mean draw: the shipped records' 0.82 "
    "is the peak an H100 node drew training (8.4 of 10.2 kW, Latif et al., arXiv 2412.08602), so "
    "energy and electricity are an upper bound (--power-w W: a measured mean)"
)
# A job on part of a system: the held system's draw counts its idle GPUs as working ones.
IDLE_GPUS_RULE: Final = (
    "the {idle:,g} GPUs held but not used are counted at the working draw (the whole {system} at "
    "rated x {share:g}), an upper bound; hours a prices file's utilisation leaves idle are counted "
    "at 0 W, a lower bound: lightspeed has no sourced idle draw of a GPU or a system"
)


def drawn_share_assumptions(power: ClusterPower) -> tuple[str, ...]:
    """The ``assumed:`` lines on the estimated draw of ``power`` (none for a measured mean): the
    drawn share is a peak used as the mean (an upper bound), and the held GPUs a job leaves idle
    are counted at it.

    >>> from lightspeed.catalog.power import load_power
    >>> draw = cluster_power(power=load_power()["dgx-h100"], gpus_per_system=8, num_gpus=2, num_systems=1)
    >>> [line[:40] for line in drawn_share_assumptions(replace(draw, workload="infer"))]
    ['IT draw = rated x 0.82 under infer, pric', 'the 6 GPUs held but not used are counted']
    """
    if power.basis == MEASURED_BASIS or power.rated_power_w <= 0:
        return ()
    share = power.it_power_w / power.rated_power_w
    lines = [DRAWN_SHARE_RULE.format(share=share, workload=power.workload)]
    idle = power.num_held_gpus - power.num_gpus
    if idle > 0:
        lines.append(IDLE_GPUS_RULE.format(idle=idle, system=power.system, share=share))
    return tuple(lines)


def idle_assumption(prices: Prices | None) -> tuple[str, ...]:
    """The ``assumed:`` line on idle hours when ``prices`` leave part of the year idle (else none).

    >>> idle_assumption(Prices(electricity_usd_per_kwh=0.1, utilisation=0.5))[0][:40]
    'the idle 50% of the year (utilisation 0.'
    """
    if prices is None or prices.utilisation >= 1.0:
        return ()
    return (IDLE_HOURS_RULE.format(idle=1.0 - prices.utilisation, utilisation=prices.utilisation),)


def idle_owned_assumption(prices: Prices | None, figure: str) -> tuple[str, ...]:
    """The ``assumed:`` line on a job's owned cost (``figure``, its label) when ``prices`` leave
    part of the year idle (else none): the job's energy does not change, its owned cost does.

    >>> idle_owned_assumption(Prices(electricity_usd_per_kwh=0.1, utilisation=0.5), "owned cost")[0][:46]
    'owned cost: utilisation 0.5 leaves 50% of the '
    """
    if prices is None or prices.utilisation >= 1.0:
        return ()
    idle = 1.0 - prices.utilisation
    return (IDLE_OWNED_RULE.format(figure=figure, utilisation=prices.utilisation, idle=idle),)


def price_notes(prices: Prices | None, *, accelerator: str = "", system: str = "") -> tuple[str, ...]:
    """:meth:`Prices.missing_prices` of ``prices``; none without prices (the priced figures need
    ``--prices`` and are absent without it)."""
    return prices.missing_prices(accelerator=accelerator, system=system) if prices is not None else ()


def _cost_notes(prices: Prices | None, figures: str, accelerator: str, system: str) -> tuple[str, ...]:
    """A job's ``note:`` lines: without prices, that its money ``figures`` need them; with them,
    each price the file lacks (:func:`price_notes`)."""
    if prices is None:
        return (NO_PRICES_NOTE.format(figures=figures),)
    return price_notes(prices, accelerator=accelerator, system=system)


def check_power_w(
    value: float | None, name: str = "measured power", fix: str = "give the mean draw in W"
) -> None:
    """Raise a one-line error unless ``value`` is ``None`` or a finite power in (0, 1 GW]."""
    if value is None:
        return
    if not math.isfinite(value) or not 0.0 < value <= 1e9:
        raise UserInputError(f"{name} {value!r} W is not a power in (0, 1 GW]; {fix}")


@dataclass(frozen=True)
class ClusterPower(Record):
    """What ``num_gpus`` GPUs of one system draw, in W.

    ``gpus_tdp_w`` counts GPU TDP only (the seed's convention); ``rated_power_w``
    the systems' rated maximum; ``it_power_w`` the draw while working;
    ``facility_power_w`` that times the PUE (``pue_source`` says where it comes
    from). ``num_systems`` is whole (the systems the GPUs occupy, holding
    ``num_held_gpus``) in every command; :func:`cluster_power` without
    ``num_systems`` counts a fraction (GPUs / GPUs per system) for a caller of its own.
    """

    system: str
    num_gpus: int
    num_systems: float
    num_held_gpus: float
    gpus_tdp_w: float | None
    rated_power_w: float
    it_power_w: float
    pue: float
    facility_power_w: float
    liquid_heat_w: float
    air_heat_w: float
    basis: str
    pue_source: str = ""
    workload: str = "train"


def cluster_power(
    *,
    power: SystemPower,
    gpus_per_system: int,
    num_gpus: int,
    workload: str = "train",
    gpu_tdp_w: float | None = None,
    pue: float | SitePue | None = None,
    measured_power_w: float | None = None,
    num_systems: int | None = None,
) -> ClusterPower:
    """The power of ``num_gpus`` GPUs working on ``workload`` (``train`` or ``infer``).

    ``num_systems``: the whole systems the GPUs occupy (each holding
    ``gpus_per_system``); ``None`` counts a fraction, GPUs / GPUs per system.
    ``pue`` ``None`` is the sourced industry average of
    :func:`~lightspeed.cost.pue.default_pue`. A measured mean power above the
    systems' rating, or under ``MIN_MEASURED_SHARE`` of it, is refused.

    >>> from lightspeed.catalog.power import load_power
    >>> draw = cluster_power(power=load_power()["dgx-h100"], gpus_per_system=8, num_gpus=100, gpu_tdp_w=700.0)
    >>> draw.gpus_tdp_w / 1e3, draw.rated_power_w / 1e3  # kW: 100 x 700 W; 12.5 x 10.2 kW
    (70.0, 127.5)
    >>> whole = cluster_power(power=load_power()["dgx-h100"], gpus_per_system=8, num_gpus=100, num_systems=13)
    >>> whole.rated_power_w / 1e3, whole.num_held_gpus  # kW: 13 whole DGX H100 hold 104 GPUs
    (132.6, 104)
    """
    if workload not in WORKLOAD_KINDS:
        raise UserInputError(f"workload {workload!r} is not one of {', '.join(WORKLOAD_KINDS)}")
    if num_gpus < 1:
        raise UserInputError(f"{num_gpus} GPUs: give at least 1")
    check_power_w(measured_power_w)
    site = pue if isinstance(pue, SitePue) else site_pue(pue)
    systems: float = num_gpus / gpus_per_system if num_systems is None else num_systems
    if systems * gpus_per_system < num_gpus:
        raise UserInputError(f"{num_systems} systems of {gpus_per_system} GPUs do not hold {num_gpus} GPUs")
    rated = systems * power.max_power_w
    share = power.draw_share(workload)
    if measured_power_w is not None:
        _check_measured(measured_power_w, rated, systems, power.system)
        it_power, basis = measured_power_w, MEASURED_BASIS
    else:
        it_power = rated * share
        basis = f"rated {power.max_power_w / 1e3:g} kW per system x {share:g} drawn under {workload}"
    liquid = it_power * power.liquid_heat_share
    return ClusterPower(
        system=power.system,
        num_gpus=num_gpus,
        num_systems=systems,
        num_held_gpus=num_gpus if num_systems is None else num_systems * gpus_per_system,
        gpus_tdp_w=num_gpus * gpu_tdp_w if gpu_tdp_w is not None else None,
        rated_power_w=rated,
        it_power_w=it_power,
        pue=site.value,
        facility_power_w=it_power * site.value,
        liquid_heat_w=liquid,
        air_heat_w=it_power - liquid,
        basis=basis,
        pue_source=site.source,
        workload=workload,
    )


def _check_measured(measured_w: float, rated_w: float, systems: float, system: str) -> None:
    """A measured mean power must lie between ``MIN_MEASURED_SHARE`` of the rating and the rating."""
    rating = f"the {rated_w / 1e3:,.4g} kW that {systems:g} {system} system(s) are rated for"
    if measured_w > rated_w * (1.0 + 1e-9):
        raise UserInputError(
            f"measured power {measured_w:,.6g} W is above {rating}; give the job's mean draw in W"
        )
    if measured_w < MIN_MEASURED_SHARE * rated_w:
        raise UserInputError(
            f"measured power {measured_w:,.6g} W is under {MIN_MEASURED_SHARE:.0%} of {rating}, "
            "less than working systems draw; give the whole job's mean draw in W (not kW, not one GPU's)"
        )


def power_for(
    *,
    cluster: Cluster,
    power: SystemPower,
    num_gpus: int | None = None,
    workload: str = "train",
    prices: Prices | None = None,
    measured_power_w: float | None = None,
    pue: float | None = None,
    gpus_per_system: int | None = None,
) -> ClusterPower:
    """:func:`cluster_power` of ``num_gpus`` (default all) GPUs of ``cluster``, in the whole
    systems they occupy: a job on 7 GPUs of 8-GPU nodes powers one node, a job on 100 GPUs of
    GB200 NVL72 two racks. ``gpus_per_system``: the GPUs one system holds as bought (default the
    cluster's; a job spread over racks uses fewer of each). PUE: ``pue``, else the prices' for
    the system's cooling, else the sourced default (:func:`~lightspeed.cost.prices.pue_for`).

    >>> from lightspeed.catalog import load_catalog
    >>> from lightspeed.catalog.power import load_power
    >>> node = load_catalog().cluster("dgx-h100", num_nodes=1)
    >>> draw = power_for(cluster=node, power=load_power()["dgx-h100"], num_gpus=7)
    >>> draw.num_systems, draw.num_held_gpus, draw.rated_power_w / 1e3, draw.pue  # one whole node
    (1, 8, 10.2, 1.56)
    """
    system = cluster.system
    used = num_gpus or cluster.num_accelerators
    per_domain = system.num_accelerators  # as the job uses each system
    return cluster_power(
        power=power,
        gpus_per_system=max(per_domain, gpus_per_system or per_domain),
        num_gpus=used,
        workload=workload,
        gpu_tdp_w=system.accelerator.tdp_w,
        pue=pue_for(power.cooling, prices=prices, pue=pue),
        measured_power_w=measured_power_w,
        num_systems=math.ceil(used / per_domain),
    )


def whole_systems_power(
    power: dict[str, SystemPower], system: System, num_gpus: int, kind: str, pue: SitePue
) -> ClusterPower:
    """The power of ``num_gpus`` GPUs in the whole systems that hold them (100 H100: 13 DGX H100)."""
    return cluster_power(
        power=power_of(power, system.name),
        gpus_per_system=system.num_accelerators,
        num_gpus=num_gpus,
        workload=kind,
        gpu_tdp_w=system.accelerator.tdp_w,
        pue=pue,
        num_systems=math.ceil(num_gpus / system.num_accelerators),
    )


@dataclass(frozen=True)
class Tco(Record):
    """Total cost of ownership per year of ``num_systems`` systems (US dollars).

    capex per year = purchase / depreciation years; electricity = facility
    power x hours per year x utilisation x price per kWh; other opex = a share
    of the purchase price per year. ``usd_per_gpu_hour`` divides the total by
    the GPU-hours worked by every GPU bought (``num_gpus``: those the systems hold).
    """

    system: str
    num_systems: float
    num_gpus: int
    capex_usd: float
    capex_per_year_usd: float
    energy_per_year_j: float
    electricity_per_year_usd: float
    other_opex_per_year_usd: float
    total_per_year_usd: float
    usd_per_gpu_hour: float
    inputs: JsonDict
    currency: str = "USD"  # every *_usd figure (prices files hold US dollars)
    assumptions: tuple[str, ...] = ()


def tco_per_year(*, power: ClusterPower, prices: Prices) -> Tco:
    """Yearly cost of owning and running the GPUs of ``power`` at ``prices``.

    >>> from lightspeed.catalog.power import load_power
    >>> draw = cluster_power(power=load_power()["dgx-h100"], gpus_per_system=8, num_gpus=8, pue=1.0)
    >>> prices = Prices(electricity_usd_per_kwh=0.1, pue_air=1.0, system_purchase_usd={"dgx-h100": 400e3})
    >>> round(tco_per_year(power=draw, prices=prices).total_per_year_usd)  # 100k + 8.364 kW x 8766 h x $0.1
    107332
    """
    purchase = prices.purchase_usd(power.system)
    capex = purchase * power.num_systems
    hours = HOURS_PER_YEAR * prices.utilisation
    energy = power.facility_power_w * hours * 3600.0
    electricity = energy / JOULES_PER_KWH * prices.electricity_usd_per_kwh
    other = capex * prices.other_opex_share_per_year
    total = capex / prices.depreciation_years + electricity + other
    return Tco(
        system=power.system,
        num_systems=power.num_systems,
        num_gpus=round(power.num_held_gpus),
        capex_usd=capex,
        capex_per_year_usd=capex / prices.depreciation_years,
        energy_per_year_j=energy,
        electricity_per_year_usd=electricity,
        other_opex_per_year_usd=other,
        total_per_year_usd=total,
        usd_per_gpu_hour=total / (power.num_held_gpus * hours),
        inputs={
            f"system_purchase_usd.{power.system}": purchase,
            "depreciation_years": prices.depreciation_years,
            "electricity_usd_per_kwh": prices.electricity_usd_per_kwh,
            "pue": power.pue,
            "utilisation": prices.utilisation,
            "other_opex_share_per_year": prices.other_opex_share_per_year,
            "it_power_w": power.it_power_w,
        },
        assumptions=(*idle_assumption(prices), *drawn_share_assumptions(power)),
    )


@dataclass(frozen=True)
class TrainingCost(Record):
    """Time, GPU-hours, energy and money of a training run (``num_tokens`` tokens).

    Energies in J at the facility (IT x PUE) of the whole systems the job
    occupies; ``cloud_usd`` at the cloud price per GPU-hour of the GPUs used,
    ``owned_usd`` the owned systems' TCO over the run (every GPU they hold),
    ``electricity_usd`` the electricity alone; ``None`` without prices.
    ``efficiency_model`` names the efficiency figures the throughput used (a
    calibration profile or the family defaults); ``assumptions`` says so in words.
    """

    model: str
    system: str
    num_gpus: int
    tokens_per_s: float
    step_s: float
    num_tokens: float
    time_s: float
    gpu_hours: float
    power: ClusterPower
    energy_per_step_j: float
    energy_per_token_j: float
    energy_j: float
    electricity_usd: float | None
    cloud_usd: float | None
    owned_usd: float | None
    inputs: JsonDict
    efficiency_model: str = ""
    assumptions: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


def efficiency_sentence(efficiency: EfficiencyModel | None, *, device: str, family: str) -> str:
    """Which efficiency figures a prediction on ``device`` (of catalog ``family``) used, in words:
    the calibration profile and the device it was measured on, and whether it was forced onto
    another; or the family defaults.

    >>> efficiency_sentence(None, device="h100-sxm", family="nvidia-hopper")
    "efficiency: the family defaults 'nvidia-hopper' (no calibration)"
    """
    if efficiency is None:
        return f"efficiency: the family defaults {family!r} (no calibration)"
    text = f"efficiency: calibration {efficiency.name!r}"
    if efficiency.measured_on:
        text += f", measured on {efficiency.measured_on}"
    if calibration_device_note(efficiency, device=device, family=family):
        text += f", applied to {device} anyway (forced)"
    return text


def _assumptions(
    efficiency: EfficiencyModel | None,
    cluster: Cluster,
    draw: ClusterPower,
    family: str = "",
    *,
    prices: Prices | None = None,
    owned_figure: str = "the owned cost",
) -> tuple[str, ...]:
    accelerator = cluster.system.accelerator
    gpus = f"{format_significant(draw.num_held_gpus, 9)} GPUs held, {draw.num_gpus:,} used"
    held = f"{format_significant(draw.num_systems, 9)} whole {draw.system} ({gpus})"
    owned = prices is not None and draw.system in prices.system_purchase_usd
    return (
        efficiency_sentence(efficiency, device=accelerator.name, family=family or accelerator.family),
        f"{held}: {WHOLE_SYSTEMS_RULE}",
        f"PUE {draw.pue:g}: {draw.pue_source}",
        *drawn_share_assumptions(draw),
        *(idle_owned_assumption(prices, owned_figure) if owned else ()),
    )


def money_inputs(prices: Prices | None, accelerator: str, power: ClusterPower) -> dict[str, Any]:
    """The inputs a priced figure of ``power``'s systems uses (the PUE alone without prices)."""
    if prices is None:
        return {"pue": power.pue}
    inputs: dict[str, Any] = {"electricity_usd_per_kwh": prices.electricity_usd_per_kwh, "pue": power.pue}
    if accelerator in prices.cloud_usd_per_gpu_hour:
        inputs[f"cloud_usd_per_gpu_hour.{accelerator}"] = prices.cloud_usd_per_gpu_hour[accelerator]
    if power.system in prices.system_purchase_usd:
        inputs[f"system_purchase_usd.{power.system}"] = prices.system_purchase_usd[power.system]
        inputs["depreciation_years"] = prices.depreciation_years
        inputs["utilisation"] = prices.utilisation
        inputs["other_opex_share_per_year"] = prices.other_opex_share_per_year
    return inputs


def _owned_per_hour(prices: Prices, power: ClusterPower) -> float | None:
    """What owning the whole systems of ``power`` costs per hour worked (every GPU they hold)."""
    if power.system not in prices.system_purchase_usd:
        return None
    return tco_per_year(power=power, prices=prices).usd_per_gpu_hour * power.num_held_gpus


def usd_per_million_tokens(usd_per_hour: float | None, tokens_per_s: float) -> float | None:
    """Dollars per million tokens of ``usd_per_hour`` spent making ``tokens_per_s`` (``None``: no price).

    >>> round(usd_per_million_tokens(16.0, 1000.0), 4)  # 8 GPUs at $2/h making 3.6M tokens an hour
    4.4444
    """
    return None if usd_per_hour is None else usd_per_hour / (tokens_per_s * 3600.0) * 1e6


@dataclass(frozen=True)
class TokenCost(Record):
    """Energy (J, at the facility) and dollars per million tokens of a deployment making tokens
    at a rate: rented (its GPUs' cloud price) and owned (its whole systems' TCO per hour worked);
    ``None`` where the prices lack the price, or no prices were given."""

    energy_per_token_j: float
    cloud_usd_per_million_tokens: float | None
    owned_usd_per_million_tokens: float | None


def token_cost(
    *, power: ClusterPower, num_gpus: int, tokens_per_s: float, accelerator: str, prices: Prices | None
) -> TokenCost:
    """What one token of ``num_gpus`` GPUs of ``accelerator`` making ``tokens_per_s`` in the whole
    systems of ``power`` costs: the one rule of ``cost infer``, ``compare systems --prices`` and
    the report's cost section.

    >>> from lightspeed.catalog import load_power
    >>> draw = cluster_power(power=load_power()["dgx-h100"], gpus_per_system=8, num_gpus=8, pue=1.0)
    >>> prices = Prices(electricity_usd_per_kwh=0.1, cloud_usd_per_gpu_hour={"h100-sxm": 2.0})
    >>> cost = token_cost(power=draw, num_gpus=8, tokens_per_s=1000.0, accelerator="h100-sxm", prices=prices)
    >>> round(cost.energy_per_token_j, 2), round(cost.cloud_usd_per_million_tokens, 3)  # 8.364 kW / 1,000
    (8.36, 4.444)
    """
    cloud = owned = None
    if prices is not None:
        rate = prices.cloud_usd_per_gpu_hour.get(accelerator)
        cloud = usd_per_million_tokens(num_gpus * rate if rate is not None else None, tokens_per_s)
        owned = usd_per_million_tokens(_owned_per_hour(prices, power), tokens_per_s)
    return TokenCost(
        energy_per_token_j=power.facility_power_w / tokens_per_s,
        cloud_usd_per_million_tokens=cloud,
        owned_usd_per_million_tokens=owned,
    )


def training_cost(
    *,
    estimate: TrainingEstimate,
    cluster: Cluster,
    power: SystemPower,
    num_tokens: float,
    prices: Prices | None = None,
    measured_power_w: float | None = None,
    pue: float | None = None,
    efficiency: EfficiencyModel | None = None,
    gpus_per_system: int | None = None,
) -> TrainingCost:
    """Energy and cost of training on ``num_tokens`` tokens at the estimate's tokens/s.

    Power and ownership are those of the whole systems the job occupies (see
    :func:`power_for`); ``efficiency`` is the model the estimate was made with
    (``None``: the family defaults), named in the result.

    >>> from lightspeed.catalog import load_catalog
    >>> from lightspeed.catalog.power import load_power
    >>> from lightspeed.tour.scenarios import deepseek_v3_training
    >>> from lightspeed.workload import load_models
    >>> catalog = load_catalog()
    >>> run = deepseek_v3_training(catalog, load_models())
    >>> cost = training_cost(estimate=run, cluster=catalog.cluster("hgx-h800", num_accelerators=2048),
    ...     power=load_power()["hgx-h800"], num_tokens=14.8e12, prices=Prices(electricity_usd_per_kwh=0.1,
    ...     cloud_usd_per_gpu_hour={"h800-sxm": 2.0}))
    >>> round(cost.gpu_hours / 1e6, 2), round(cost.cloud_usd / 1e6, 2)  # M GPU-hours, M$
    (2.5, 5.01)
    """
    if not math.isfinite(num_tokens) or num_tokens <= 0:
        raise UserInputError(f"{num_tokens!r} tokens to train: give a positive number")
    _check_whole_step(num_tokens, estimate)
    draw = power_for(
        cluster=cluster,
        power=power,
        num_gpus=estimate.num_gpus,
        workload="train",
        prices=prices,
        measured_power_w=measured_power_w,
        pue=pue,
        gpus_per_system=gpus_per_system,
    )
    time_s = num_tokens / estimate.tokens_per_s
    gpu_hours = time_s * estimate.num_gpus / 3600.0
    energy = draw.facility_power_w * time_s
    accelerator = cluster.system.accelerator.name
    electricity = cloud = owned = None
    if prices is not None:
        electricity = energy / JOULES_PER_KWH * prices.electricity_usd_per_kwh
        if accelerator in prices.cloud_usd_per_gpu_hour:
            cloud = gpu_hours * prices.cloud_usd_per_gpu_hour[accelerator]
        owned_rate = _owned_per_hour(prices, draw)
        owned = time_s / 3600.0 * owned_rate if owned_rate is not None else None
    return TrainingCost(
        model=estimate.model,
        system=cluster.system.name,
        num_gpus=estimate.num_gpus,
        tokens_per_s=estimate.tokens_per_s,
        step_s=estimate.step_time_s,
        num_tokens=num_tokens,
        time_s=time_s,
        gpu_hours=gpu_hours,
        power=draw,
        energy_per_step_j=draw.facility_power_w * estimate.step_time_s,
        energy_per_token_j=draw.facility_power_w / estimate.tokens_per_s,
        energy_j=energy,
        electricity_usd=electricity,
        cloud_usd=cloud,
        owned_usd=owned,
        inputs=money_inputs(prices, accelerator, draw),
        efficiency_model=estimate.efficiency_model,
        assumptions=_assumptions(
            efficiency,
            cluster,
            draw,
            estimate.efficiency_model,
            prices=prices,
            owned_figure="owned cost (TCO share)",
        ),
        notes=_cost_notes(prices, "electricity, cloud cost and owned cost", accelerator, draw.system),
    )


def _check_whole_step(num_tokens: float, estimate: TrainingEstimate) -> None:
    """A training budget below one optimizer step's tokens is refused: the run cannot be shorter
    than a step, and a time in microseconds would read as a prediction."""
    step_tokens = estimate.tokens_per_step
    if num_tokens < step_tokens:
        raise UserInputError(
            f"{num_tokens:,.6g} tokens to train is less than one optimizer step: a step of this plan "
            f"trains {step_tokens:,} tokens (global batch x sequence length); give at least "
            f"{step_tokens:,} tokens (--tokens)"
        )


@dataclass(frozen=True)
class InferenceCost(Record):
    """Energy and money per token of one serving deployment at its latency.

    ``cloud_usd_per_million_tokens``: the GPUs rented per hour / output tokens
    per hour x 1e6; ``owned_usd_per_million_tokens`` the same at the owned
    whole systems' TCO per hour. Energy per output token in J at the facility.
    ``efficiency_model`` and ``assumptions`` as in :class:`TrainingCost`.
    """

    model: str
    system: str
    num_gpus: int
    precision: str
    plan: str
    output_tokens_per_s: float
    ttft_s: float
    tpot_s: float
    power: ClusterPower
    energy_per_token_j: float
    cloud_usd_per_million_tokens: float | None
    owned_usd_per_million_tokens: float | None
    inputs: JsonDict
    efficiency_model: str = ""
    assumptions: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


def inference_cost(
    *,
    estimate: InferenceEstimate,
    cluster: Cluster,
    power: SystemPower,
    prices: Prices | None = None,
    measured_power_w: float | None = None,
    pue: float | None = None,
    efficiency: EfficiencyModel | None = None,
    gpus_per_system: int | None = None,
) -> InferenceCost:
    """Cost and energy per output token of ``estimate`` (a deployment meeting its bounds), with
    the power and ownership of the whole systems it occupies (see :func:`training_cost`)."""
    draw = power_for(
        cluster=cluster,
        power=power,
        num_gpus=estimate.num_gpus,
        workload="infer",
        prices=prices,
        measured_power_w=measured_power_w,
        pue=pue,
        gpus_per_system=gpus_per_system,
    )
    accelerator = cluster.system.accelerator.name
    per_token = token_cost(
        power=draw,
        num_gpus=estimate.num_gpus,
        tokens_per_s=estimate.output_tokens_per_s,
        accelerator=accelerator,
        prices=prices,
    )
    return InferenceCost(
        model=estimate.model,
        system=cluster.system.name,
        num_gpus=estimate.num_gpus,
        precision=estimate.precisions.weights,
        plan=estimate.plan.describe(),
        output_tokens_per_s=estimate.output_tokens_per_s,
        ttft_s=estimate.ttft_s,
        tpot_s=estimate.tpot_s,
        power=draw,
        energy_per_token_j=per_token.energy_per_token_j,
        cloud_usd_per_million_tokens=per_token.cloud_usd_per_million_tokens,
        owned_usd_per_million_tokens=per_token.owned_usd_per_million_tokens,
        inputs=money_inputs(prices, accelerator, draw),
        efficiency_model=efficiency.name if efficiency is not None else cluster.system.accelerator.family,
        assumptions=_assumptions(
            efficiency, cluster, draw, prices=prices, owned_figure="owned $ per million tokens"
        ),
        notes=_cost_notes(prices, "cloud and owned $ per million tokens", accelerator, draw.system),
    )


@dataclass(frozen=True)
class DeepSeekCost(Record):
    """DeepSeek-V3's training cost from the engine's GPU-hours beside the report's (Table 1).

    ``published_total_usd`` is the report's total rescaled to ``usd_per_gpu_hour`` (its GPU-hours
    at this rate, so that ``ratio`` compares GPU-hours); the report's own figure is
    ``published_report_usd`` at ``published_usd_per_gpu_hour`` ($5.576M at $2).
    ``usd_per_gpu_hour_source`` says where the rate comes from; ``training``'s cloud cost is
    priced at the same rate.
    """

    usd_per_gpu_hour: float
    predicted_pretrain_gpu_hours: float
    published_pretrain_gpu_hours: float
    other_gpu_hours: float
    predicted_total_usd: float
    published_total_usd: float
    ratio: float
    training: TrainingCost
    note: str
    usd_per_gpu_hour_source: str = ""
    published_report_usd: float = DEEPSEEK_PUBLISHED_USD
    published_usd_per_gpu_hour: float = DEEPSEEK_USD_PER_GPU_HOUR


def deepseek_cost(
    *,
    training: TrainingCost,
    published_pretrain_gpu_hours: float,
    usd_per_gpu_hour: float | None = DEEPSEEK_USD_PER_GPU_HOUR,
    usd_per_gpu_hour_source: str = "the report's rate",
) -> DeepSeekCost:
    """The engine's pre-training GPU-hours plus the report's context extension (119K) and
    post-training (5K), at ``usd_per_gpu_hour`` (``None``: the report's $2), beside the published
    $5.576M (at its $2; the result also holds it rescaled to ``usd_per_gpu_hour``). One rate
    prices everything: a ``training`` whose cloud cost used another is refused."""
    if usd_per_gpu_hour is None:
        usd_per_gpu_hour = DEEPSEEK_USD_PER_GPU_HOUR
    if not math.isfinite(usd_per_gpu_hour) or usd_per_gpu_hour < 0:
        raise UserInputError(f"{usd_per_gpu_hour!r} USD per GPU-hour: give 0 or more")
    if training.cloud_usd is not None and not math.isclose(
        training.cloud_usd, training.gpu_hours * usd_per_gpu_hour, rel_tol=1e-9, abs_tol=1e-9
    ):
        raise UserInputError(
            f"the training run's cloud cost is priced at another rate than {usd_per_gpu_hour:g} USD "
            "per GPU-hour; price both at one rate (the prices' cloud_usd_per_gpu_hour or the given rate)"
        )
    if training.cloud_usd is not None:  # the training's inputs name the rate's source too
        training = replace(
            training, inputs={**training.inputs, "usd_per_gpu_hour_source": usd_per_gpu_hour_source}
        )
    other = DEEPSEEK_CONTEXT_EXTENSION_GPU_HOURS + DEEPSEEK_POST_TRAINING_GPU_HOURS
    predicted = (training.gpu_hours + other) * usd_per_gpu_hour
    published = DEEPSEEK_PUBLISHED_USD * usd_per_gpu_hour / DEEPSEEK_USD_PER_GPU_HOUR
    return DeepSeekCost(
        usd_per_gpu_hour=usd_per_gpu_hour,
        predicted_pretrain_gpu_hours=training.gpu_hours,
        published_pretrain_gpu_hours=published_pretrain_gpu_hours,
        other_gpu_hours=other,
        predicted_total_usd=predicted,
        published_total_usd=published,
        ratio=(training.gpu_hours + other) / _published_hours(),  # = predicted / published at any rate
        training=training,
        note="context extension (119K) and post-training (5K GPU-hours) are the report's figures, "
        "not predicted; the published $5.576M excludes research, ablations, data and staff",
        usd_per_gpu_hour_source=usd_per_gpu_hour_source,
    )


def _published_hours() -> float:
    """The report's total GPU-hours: its $5.576M at its $2 per GPU-hour."""
    return DEEPSEEK_PUBLISHED_USD / DEEPSEEK_USD_PER_GPU_HOUR


__all__ = [
    "DEEPSEEK_PUBLISHED_USD",
    "DEEPSEEK_USD_PER_GPU_HOUR",
    "DRAWN_SHARE_RULE",
    "IDLE_GPUS_RULE",
    "IDLE_HOURS_RULE",
    "IDLE_OWNED_RULE",
    "MIN_MEASURED_SHARE",
    "NO_PRICES_NOTE",
    "WHOLE_SYSTEMS_RULE",
    "WORKLOAD_KINDS",
    "ClusterPower",
    "DeepSeekCost",
    "InferenceCost",
    "Tco",
    "TokenCost",
    "TrainingCost",
    "check_power_w",
    "cluster_power",
    "deepseek_cost",
    "drawn_share_assumptions",
    "efficiency_sentence",
    "idle_assumption",
    "idle_owned_assumption",
    "inference_cost",
    "money_inputs",
    "power_for",
    "price_notes",
    "tco_per_year",
    "token_cost",
    "usd_per_million_tokens",
    "whole_systems_power",
]
