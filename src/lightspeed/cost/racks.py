"""Racks and rated power of a cluster: how many racks, the power to provision, the heat to cool.

:func:`rack_plan` counts whole systems and whole racks for a cluster, the rated power of a full
rack and of the site (times the PUE, against a site budget when one is given), the split of the
heat between liquid and air, and what the systems draw working on a workload (rated x the
record's drawn share), from the catalog's ``system-power`` records. A job's energy and money
are :mod:`lightspeed.cost.energy`'s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from lightspeed.catalog import Cluster
from lightspeed.catalog.clusters import takes_part_of_domain
from lightspeed.catalog.power import PowerPart, SystemPower
from lightspeed.cost.energy import WORKLOAD_KINDS, check_power_w
from lightspeed.cost.pue import GIVEN_PUE_SOURCE, site_pue
from lightspeed.errors import UserInputError
from lightspeed.records import Record


@dataclass(frozen=True)
class RackPlan(Record):
    """Racks, rated power per rack, site power and the cooling split of a cluster (W).

    ``rack_power_w`` is the rated power of a full rack (the figure to
    provision); ``site_it_power_w`` that of every system (rated); ``site_facility_power_w``
    times the PUE. ``fits_site`` compares the rated facility power with the budget.
    The heat split is of the rated power. ``drawn_it_power_w`` is what the systems draw
    under ``workload`` (rated x ``draw_share``, the figure energy is priced at) and
    ``drawn_facility_power_w`` that times the PUE.
    ``num_gpus_requested``: the GPU count asked for, when it was rounded up to
    the whole systems (``num_gpus``) that are bought, powered and priced.
    """

    system: str
    cooling: str
    num_gpus: int
    num_systems: int
    systems_per_rack: int
    num_racks: int
    rack_power_w: float
    parts: tuple[PowerPart, ...]
    site_it_power_w: float
    pue: float
    site_facility_power_w: float
    liquid_heat_w: float
    air_heat_w: float
    site_budget_w: float | None
    fits_site: bool | None
    sources: tuple[str, ...]
    pue_source: str = ""
    num_gpus_requested: int | None = None
    workload: str = "train"
    draw_share: float = 0.0
    drawn_it_power_w: float = 0.0
    drawn_facility_power_w: float = 0.0


def rack_plan(
    *,
    cluster: Cluster,
    power: SystemPower,
    pue: float | None = None,
    pue_source: str | None = None,
    site_budget_w: float | None = None,
    systems_per_rack: int | None = None,
    num_gpus_requested: int | None = None,
    workload: str = "train",
) -> RackPlan:
    """Racks and rated power for every system of ``cluster`` (whole systems, whole racks), and
    what they draw working on ``workload`` (``train`` or ``infer``).

    ``pue`` (facility / IT power) is the site's, ``pue_source`` says where it comes from (default:
    given by the user, ``--pue``);
    without one, the industry average of :func:`~lightspeed.cost.pue.default_pue` (1.56,
    Uptime Institute 2024) with its citation, never an unstated 1.

    >>> from lightspeed.catalog import load_catalog
    >>> from lightspeed.catalog.power import load_power
    >>> racks = load_catalog().cluster("gb200-nvl72", num_nodes=8)
    >>> plan = rack_plan(cluster=racks, power=load_power()["gb200-nvl72"])
    >>> plan.rack_power_w / 1e3, plan.site_it_power_w / 1e6  # kW per rack, MW for 8 racks
    (128.0, 1.024)
    """
    check_power_w(site_budget_w, "site budget", "give the site's facility power budget (--site-kw in kW)")
    if workload not in WORKLOAD_KINDS:
        raise UserInputError(f"workload {workload!r} is not one of {', '.join(WORKLOAD_KINDS)}")
    site = site_pue(pue, pue_source or GIVEN_PUE_SOURCE)
    per_rack = systems_per_rack or power.systems_per_rack
    if per_rack < 1:
        raise UserInputError(f"{per_rack} systems per rack: give at least 1")
    if per_rack > 1 and takes_part_of_domain(cluster.system):
        raise UserInputError(
            f"{per_rack} systems per rack (--systems-per-rack): one {cluster.system.name} is a whole "
            f"{cluster.system.system_type} of {cluster.system.num_accelerators} GPUs, so a rack holds "
            "one; leave --systems-per-rack out or give 1"
        )
    systems = cluster.num_nodes
    racks = math.ceil(systems / per_rack)
    it_power = systems * power.max_power_w
    liquid = it_power * power.liquid_heat_share
    facility = it_power * site.value
    share = power.draw_share(workload)
    return RackPlan(
        system=power.system,
        cooling=power.cooling,
        num_gpus=cluster.num_accelerators,
        num_systems=systems,
        systems_per_rack=per_rack,
        num_racks=racks,
        rack_power_w=min(per_rack, systems) * power.max_power_w,
        parts=power.parts,
        site_it_power_w=it_power,
        pue=site.value,
        site_facility_power_w=facility,
        liquid_heat_w=liquid,
        air_heat_w=it_power - liquid,
        site_budget_w=site_budget_w,
        fits_site=facility <= site_budget_w if site_budget_w is not None else None,
        sources=_part_sources(power),
        pue_source=site.source,
        num_gpus_requested=num_gpus_requested,
        workload=workload,
        draw_share=share,
        drawn_it_power_w=it_power * share,
        drawn_facility_power_w=it_power * share * site.value,
    )


def _part_sources(power: SystemPower) -> tuple[str, ...]:
    """The citations of the parts' power figures, in order (else every source of the system)."""
    cited = tuple(power.sources[key].citation for key in dict.fromkeys(part.source for part in power.parts))
    return cited or tuple(source.citation for source in power.sources.values())


__all__ = ["RackPlan", "rack_plan"]
