"""How big a fleet a target needs: ``size_fleet`` on each candidate system.

A target (training tokens a day, or serving requests a second at the workload's TTFT/TPOT bounds)
becomes, on each candidate system, the fewest whole systems the engine says reach it, with their
GPUs, racks, power, TCO and the cloud cost of the same working hours; a candidate no fleet of up
to ``MAX_SYSTEMS`` systems sizes for the target is listed with the reason. What an upgrade buys
and when it pays back is :mod:`lightspeed.cost.upgrade`'s.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from lightspeed.catalog import Catalog, System
from lightspeed.catalog.power import SystemPower, power_of
from lightspeed.cost.energy import (
    ClusterPower,
    Tco,
    money_inputs,
    price_notes,
    tco_per_year,
    whole_systems_power,
)
from lightspeed.cost.prices import Prices, pue_for
from lightspeed.cost.workloads import (
    MAX_SYSTEMS,
    CostWorkload,
    ThroughputPoint,
    search_training_fleet,
    serving_point,
    too_many_systems,
)
from lightspeed.errors import UserInputError
from lightspeed.records import JsonDict, Record
from lightspeed.sol.core.efficiency import EfficiencyModel
from lightspeed.workload import ModelRegistry

# The most training tokens a day a fleet is sized for: 1e16 a day is 1.16e11 tokens/s, over 27,000
# optimizer steps a second of the named workload's 1,024 x 4,096-token batch (no plan steps in
# under 37 us); the CLI's --tokens-per-day is checked against the same figure.
MAX_TOKENS_PER_DAY: Final = 1e16
MAX_TOKENS_PER_DAY_TEXT: Final = f"{MAX_TOKENS_PER_DAY:.0e}".replace("e+", "e")  # 1e16, as --help writes it


@dataclass(frozen=True)
class FleetOption(Record):
    """One candidate system sized to the target: GPUs, systems, racks, power, cost."""

    system: str
    point: ThroughputPoint
    num_gpus: int
    num_systems: int
    num_racks: int
    tokens_per_s: float
    power: ClusterPower
    tco: Tco | None
    cloud_usd_per_day: float | None
    inputs: JsonDict | None = None
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class FleetShortfall(Record):
    """A candidate no fleet of up to ``MAX_SYSTEMS`` systems sizes for the target, and why."""

    system: str
    reason: str
    best_tokens_per_s: float | None = None


@dataclass(frozen=True)
class FleetSizing(Record):
    """Every candidate sized for one target; ``unreachable``: the candidates that cannot reach it.

    ``target_tokens_per_s`` is the rate while the fleet works: a prices file's ``utilisation``
    is the share of each day it works, so a day's training tokens are made in those hours.
    ``assumptions``: that rule, in words, where the utilisation is below 1.
    """

    workload: str
    kind: str
    target: str
    target_tokens_per_s: float
    options: tuple[FleetOption, ...]
    unreachable: tuple[FleetShortfall, ...] = ()
    utilisation: float = 1.0
    assumptions: tuple[str, ...] = ()


def _fleet_option(
    *,
    system: System,
    point: ThroughputPoint,
    num_systems: int,
    tokens_per_s: float,
    kind: str,
    power: dict[str, SystemPower],
    prices: Prices | None,
    pue: float | None,
) -> FleetOption:
    record = power_of(power, system.name)
    gpus = num_systems * system.num_accelerators
    draw = whole_systems_power(power, system, gpus, kind, pue_for(record.cooling, prices=prices, pue=pue))
    tco = (
        tco_per_year(power=draw, prices=prices)
        if prices and system.name in prices.system_purchase_usd
        else None
    )
    accelerator = system.accelerator.name
    cloud = (  # the GPUs rented for the hours they work: the work the TCO's energy prices
        gpus * prices.cloud_usd_per_gpu_hour[accelerator] * 24.0 * prices.utilisation
        if prices and accelerator in prices.cloud_usd_per_gpu_hour
        else None
    )
    return FleetOption(
        system=system.name,
        point=point,
        num_gpus=gpus,
        num_systems=num_systems,
        num_racks=math.ceil(num_systems / record.systems_per_rack),
        tokens_per_s=tokens_per_s,
        power=draw,
        tco=tco,
        cloud_usd_per_day=cloud,
        inputs=money_inputs(prices, accelerator, draw),
        notes=price_notes(prices, accelerator=accelerator, system=system.name),
    )


def size_fleet(
    *,
    catalog: Catalog,
    models: ModelRegistry,
    systems: Sequence[System],
    workload: CostWorkload,
    power: dict[str, SystemPower],
    tokens_per_day: float | None = None,
    requests_per_s: float | None = None,
    prices: Prices | None = None,
    efficiency: EfficiencyModel | None = None,
    pue: float | None = None,
) -> FleetSizing:
    """GPUs, systems, racks, power and cost on each system to reach the target:
    ``tokens_per_day`` of training or ``requests_per_s`` of serving at the workload's bounds.

    Both kinds are whole systems (at least one), at most ``MAX_SYSTEMS`` of each; a candidate that
    cannot reach the target is listed in ``unreachable`` with the reason, and the other candidates
    are still sized (every candidate unreachable is refused in one line). PUE: ``pue``, else the
    prices', else the sourced default.

    Utilisation (the prices' share of hours worked, 1 without prices): the fleet works that share
    of each day. ``requests_per_s`` is the rate it serves while working; ``tokens_per_day`` are
    made in the working hours, at ``tokens_per_day / (utilisation x 86,400 s)``. The TCO prices
    the energy of the working hours (idle ones at 0 W) and the cloud column rents the GPUs for
    the same hours, so both columns price the same work."""
    utilisation = prices.utilisation if prices is not None else 1.0
    target_rate, target = _target(workload, tokens_per_day, requests_per_s, utilisation)
    _refuse_repeats(systems)
    options, unreachable = [], []
    for system in systems:
        sized = _fleet_size(catalog, models, system, workload, target_rate=target_rate, efficiency=efficiency)
        if isinstance(sized, FleetShortfall):
            unreachable.append(sized)
            continue
        point, count, rate = sized
        options.append(
            _fleet_option(
                system=system,
                point=point,
                num_systems=count,
                tokens_per_s=rate,
                kind=workload.kind,
                power=power,
                prices=prices,
                pue=pue,
            )
        )
    if not options:
        raise UserInputError(unreachable[0].reason)
    return FleetSizing(
        workload=workload.name,
        kind=workload.kind,
        target=target,
        target_tokens_per_s=target_rate,
        options=tuple(options),
        unreachable=tuple(unreachable),
        utilisation=utilisation,
        assumptions=_working_hours(workload, utilisation, target_rate),
    )


def _fleet_size(
    catalog: Catalog,
    models: ModelRegistry,
    system: System,
    workload: CostWorkload,
    *,
    target_rate: float,
    efficiency: EfficiencyModel | None,
) -> tuple[ThroughputPoint, int, float] | FleetShortfall:
    """(point, whole systems, tokens/s) reaching ``target_rate`` on ``system``, or why none does."""
    if workload.kind == "train":
        found = search_training_fleet(
            catalog=catalog,
            models=models,
            system=system,
            workload=workload,
            target_tokens_per_s=target_rate,
            efficiency=efficiency,
        )
        if found.point is None:
            best = found.best.tokens_per_s if found.best is not None else None
            return FleetShortfall(system=system.name, reason=found.refusal, best_tokens_per_s=best)
        return found.point, found.point.num_systems, found.point.tokens_per_s
    point = serving_point(
        catalog=catalog, models=models, system=system, workload=workload, efficiency=efficiency
    )
    count = max(1, math.ceil(target_rate / point.tokens_per_s - 1e-9))  # a fleet is at least one system
    if count > MAX_SYSTEMS:
        return FleetShortfall(
            system=system.name, reason=too_many_systems(system.name, target_rate, workload.name)
        )
    return point, count, count * point.tokens_per_s


def _working_hours(workload: CostWorkload, utilisation: float, target_rate: float) -> tuple[str, ...]:
    """The ``assumed:`` line of a fleet that works part of each day (none at utilisation 1)."""
    if utilisation >= 1.0:
        return ()
    hours = 24.0 * utilisation
    sized = (
        f"the day's tokens are made in those hours ({target_rate:,.0f} tokens/s while working)"
        if workload.kind == "train"
        else "it serves the target rate while working"
    )
    return (
        f"utilisation {utilisation:g}: the fleet works {hours:.3g} h a day and {sized}; the TCO's "
        f"energy and the cloud column price the same {hours:.3g} working hours a day",
    )


def _refuse_repeats(systems: Sequence[System]) -> None:
    """A candidate named twice (``dgx-h100,h100-sxm`` are one system) is refused, not printed twice."""
    if not systems:
        raise UserInputError("no candidate system; name at least one, e.g. --systems dgx-h100,dgx-b200")
    names = [system.name for system in systems]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise UserInputError(
            f"the candidate systems (--systems) name {', '.join(repeated)} more than once (an accelerator "
            "names its system); name each candidate once"
        )


def _target(
    workload: CostWorkload,
    tokens_per_day: float | None,
    requests_per_s: float | None,
    utilisation: float = 1.0,
) -> tuple[float, str]:
    """The rate while the fleet works, and the target in words (``utilisation``: the share of
    each day it works; a day's training tokens are made in those hours)."""
    if workload.kind == "train" and requests_per_s is not None:
        raise UserInputError(
            f"--requests-per-s is for serving workloads; {workload.name} is training: "
            "give its target as --tokens-per-day N alone"
        )
    if workload.kind != "train" and tokens_per_day is not None:
        raise UserInputError(
            f"--tokens-per-day is for training workloads; {workload.name} is serving: "
            "give its target as --requests-per-s N alone"
        )
    if workload.kind == "train":
        if tokens_per_day is None:
            raise UserInputError(
                f"{workload.name} is a training workload: give its target, --tokens-per-day N "
                f"(up to {MAX_TOKENS_PER_DAY_TEXT})"
            )
        if not math.isfinite(tokens_per_day) or not 0 < tokens_per_day <= MAX_TOKENS_PER_DAY:
            raise UserInputError(
                f"training fleets need --tokens-per-day in (0, {MAX_TOKENS_PER_DAY_TEXT}]; "
                f"got {tokens_per_day:g}"
            )
        return tokens_per_day / (86400.0 * utilisation), f"{tokens_per_day:,.0f} training tokens/day"
    if requests_per_s is None:
        raise UserInputError(
            f"{workload.name} is a serving workload: give its target, --requests-per-s N (up to 1e9)"
        )
    if not math.isfinite(requests_per_s) or not 0 < requests_per_s <= 1e9:
        raise UserInputError(f"serving fleets need --requests-per-s in (0, 1e9]; got {requests_per_s:g}")
    return (
        requests_per_s * workload.output_tokens,
        f"{requests_per_s:g} requests/s ({workload.output_tokens} output tokens each)",
    )


__all__ = [
    "MAX_TOKENS_PER_DAY",
    "MAX_TOKENS_PER_DAY_TEXT",
    "FleetOption",
    "FleetShortfall",
    "FleetSizing",
    "size_fleet",
]
