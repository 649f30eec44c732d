"""Energy, power and money: what a job, a cluster, an upgrade and a fleet cost.

One home for cost (the engines' *time* of one serving iteration is
:mod:`lightspeed.sol.infer.iteration`): :mod:`~lightspeed.cost.energy` (power,
energy and dollars of a job and a cluster; TCO), :mod:`~lightspeed.cost.racks` (rack plans),
:mod:`~lightspeed.cost.prices` (the user's prices file),
:mod:`~lightspeed.cost.workloads` (named workloads and how many GPUs reach a
throughput), :mod:`~lightspeed.cost.priced_systems` (the priced columns of
``compare systems``), :mod:`~lightspeed.cost.upgrade` (what an upgrade buys,
payback) and :mod:`~lightspeed.cost.fleet` (fleet sizing). Rendering is in :mod:`lightspeed.report.cost`, the
command group in :mod:`lightspeed.cli.cost`.

>>> from lightspeed.catalog import load_power
>>> from lightspeed.cost import cluster_power
>>> draw = cluster_power(power=load_power()["dgx-h100"], gpus_per_system=8, num_gpus=16)
>>> draw.rated_power_w / 1e3  # kW: 2 DGX H100 at NVIDIA's 10.2 kW maximum each
20.4
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lightspeed.lazy import attach

if TYPE_CHECKING:
    from lightspeed.cost.energy import (
        ClusterPower,
        DeepSeekCost,
        InferenceCost,
        Tco,
        TrainingCost,
        cluster_power,
        deepseek_cost,
        inference_cost,
        power_for,
        tco_per_year,
        training_cost,
    )
    from lightspeed.cost.fleet import FleetSizing, size_fleet
    from lightspeed.cost.priced_systems import SystemCost, system_costs
    from lightspeed.cost.prices import Prices, load_prices
    from lightspeed.cost.racks import RackPlan, rack_plan
    from lightspeed.cost.upgrade import Upgrade, UpgradeMatch, compare_upgrade
    from lightspeed.cost.workloads import (
        COST_WORKLOADS,
        DEFAULT_UPGRADE_WORKLOADS,
        CostWorkload,
        cost_workload,
        parse_fleet,
    )

__all__ = [
    "COST_WORKLOADS",
    "DEFAULT_UPGRADE_WORKLOADS",
    "ClusterPower",
    "CostWorkload",
    "DeepSeekCost",
    "FleetSizing",
    "InferenceCost",
    "Prices",
    "RackPlan",
    "SystemCost",
    "Tco",
    "TrainingCost",
    "Upgrade",
    "UpgradeMatch",
    "cluster_power",
    "compare_upgrade",
    "cost_workload",
    "deepseek_cost",
    "inference_cost",
    "load_prices",
    "parse_fleet",
    "power_for",
    "rack_plan",
    "size_fleet",
    "system_costs",
    "tco_per_year",
    "training_cost",
]

if not TYPE_CHECKING:
    __getattr__, __dir__ = attach(__name__, __file__)
