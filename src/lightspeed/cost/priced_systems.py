"""Cost and energy columns for ``compare systems``: each system's best plan, priced.

Kept apart from :mod:`lightspeed.sol.systems` so that comparing systems needs
no prices; with prices, each row gains facility power, energy per token and
dollars per million tokens (rented and owned), with the inputs used.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lightspeed.catalog import Cluster
from lightspeed.catalog.power import SystemPower
from lightspeed.cost.energy import power_for, tco_per_year, token_cost, usd_per_million_tokens
from lightspeed.cost.prices import Prices
from lightspeed.errors import UserInputError
from lightspeed.records import JsonDict, Record
from lightspeed.sol.systems import SystemComparison


@dataclass(frozen=True)
class SystemCost(Record):
    """One system's best plan priced: power in W, energy per token in J, USD per million tokens.

    ``None`` where the catalog has no power record for the system or the
    prices lack its cloud or purchase price (``note`` says which).
    """

    system: str
    num_gpus: int
    tokens_per_s: float
    facility_power_w: float | None
    energy_per_token_j: float | None
    cloud_usd_per_million_tokens: float | None
    owned_usd_per_million_tokens: float | None
    note: str
    inputs: JsonDict


def _system_cost(
    *,
    cluster: Cluster,
    num_gpus: int,
    tokens_per_s: float,
    workload: str,
    power: SystemPower | None,
    prices: Prices,
) -> SystemCost:
    system, accelerator = cluster.system.name, cluster.system.accelerator.name
    cloud_rate = prices.cloud_usd_per_gpu_hour.get(accelerator)
    cloud = usd_per_million_tokens(num_gpus * cloud_rate if cloud_rate is not None else None, tokens_per_s)
    inputs: dict[str, Any] = {f"cloud_usd_per_gpu_hour.{accelerator}": cloud_rate}
    missing = list(prices.missing_prices(accelerator=accelerator))
    if power is None:
        missing.append(f"no power data for {system}: energy and owned cost not shown")
        return SystemCost(system, num_gpus, tokens_per_s, None, None, cloud, None, _note(missing), inputs)
    draw = power_for(cluster=cluster, power=power, num_gpus=num_gpus, workload=workload, prices=prices)
    per_token = token_cost(  # owned: the whole systems the GPUs occupy
        power=draw, num_gpus=num_gpus, tokens_per_s=tokens_per_s, accelerator=accelerator, prices=prices
    )
    if system in prices.system_purchase_usd:
        inputs.update(tco_per_year(power=draw, prices=prices).inputs)
    else:
        missing.extend(prices.missing_prices(system=system))
        inputs.update({"pue": draw.pue, "electricity_usd_per_kwh": prices.electricity_usd_per_kwh})
    return SystemCost(
        system=system,
        num_gpus=num_gpus,
        tokens_per_s=tokens_per_s,
        facility_power_w=draw.facility_power_w,
        energy_per_token_j=per_token.energy_per_token_j,
        cloud_usd_per_million_tokens=cloud,
        owned_usd_per_million_tokens=per_token.owned_usd_per_million_tokens,
        note=_note(missing),
        inputs=inputs,
    )


def _note(missing: list[str]) -> str:
    return "; ".join(missing)


def system_costs(
    *,
    comparison: SystemComparison,
    clusters: Sequence[Cluster],
    power: dict[str, SystemPower],
    prices: Prices,
) -> tuple[SystemCost, ...]:
    """Each result of ``comparison`` (same order as ``clusters``) priced at ``prices``.

    >>> from lightspeed.catalog import load_catalog, load_power
    >>> from lightspeed.sol import ServingLoad, compare_systems
    >>> from lightspeed.workload import load_models
    >>> clusters = [load_catalog().cluster("dgx-h100")]
    >>> comparison = compare_systems(model=load_models().get("llama-3-8b"), clusters=clusters,
    ...     workload="infer", options={"load": ServingLoad(1024, 256)})
    >>> prices = Prices(electricity_usd_per_kwh=0.1, cloud_usd_per_gpu_hour={"h100-sxm": 2.0})
    >>> cost = system_costs(comparison=comparison, clusters=clusters, power=load_power(), prices=prices)[0]
    >>> cost.cloud_usd_per_million_tokens == 8 * 2.0 / (cost.tokens_per_s * 3600) * 1e6
    True
    """
    if len(clusters) != len(comparison.results):
        raise UserInputError(f"{len(clusters)} clusters for {len(comparison.results)} compared systems")
    kind = "train" if comparison.workload == "train" else "infer"
    return tuple(
        _system_cost(
            cluster=cluster,
            num_gpus=result.num_gpus,
            tokens_per_s=result.throughput_tokens_per_s,
            workload=kind,
            power=power.get(cluster.system.name),
            prices=prices,
        )
        for cluster, result in zip(clusters, comparison.results, strict=True)
    )


__all__ = ["SystemCost", "system_costs"]
