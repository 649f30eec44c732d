"""Named cost workloads, fleet names, and how many GPUs of a system reach a throughput.

``match_training`` searches whole systems (nodes or racks) with the training
engine until the best fitting plan reaches the target tokens/s;
``match_serving`` takes the best deployment of one system under the latency
bounds and adds systems (serving replicas scale out independently). Both
answer from the engine, never from a ratio of peaks.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from lightspeed.catalog import Catalog, System
from lightspeed.errors import LightspeedError, UnknownNameError, UserInputError
from lightspeed.records import Record
from lightspeed.sol.core.efficiency import EfficiencyModel
from lightspeed.sol.infer.plan import ServingLoad
from lightspeed.sol.infer.search import search_inference
from lightspeed.sol.systems import auto_precision
from lightspeed.sol.train.search import search_training
from lightspeed.workload import ModelRegistry

MAX_SEARCH_STEPS: Final = 48
MAX_SYSTEMS: Final = 100_000


@dataclass(frozen=True)
class CostWorkload(Record):
    """A named training or serving workload that cost questions run on the engine.

    Training: ``global_batch`` sequences of ``seq_len`` tokens per step.
    Serving: ``input_tokens``/``output_tokens`` per request under ``max_ttft_s``
    and ``max_tpot_s``. ``precision`` ``auto`` picks each GPU's narrowest format.
    """

    name: str
    kind: str
    model: str
    precision: str
    description: str
    global_batch: int = 0
    seq_len: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    max_ttft_s: float | None = None
    max_tpot_s: float | None = None


COST_WORKLOADS: Final[dict[str, CostWorkload]] = {
    workload.name: workload
    for workload in (
        CostWorkload(
            name="llama-3-70b-pretrain",
            kind="train",
            model="llama-3-70b",
            precision="bf16",
            description="Llama-3 70B pre-training, BF16, 1,024 x 4,096-token sequences per step",
            global_batch=1024,
            seq_len=4096,
        ),
        CostWorkload(
            name="llama-3-70b-chat",
            kind="infer",
            model="llama-3-70b",
            precision="fp8",
            description="Llama-3 70B chat serving, FP8, 2,048 in / 512 out, TTFT <= 2 s, TPOT <= 50 ms",
            input_tokens=2048,
            output_tokens=512,
            max_ttft_s=2.0,
            max_tpot_s=0.050,
        ),
        CostWorkload(
            name="llama-3-70b-chat-narrowest",
            kind="infer",
            model="llama-3-70b",
            precision="auto",
            description="the same chat serving in each GPU's narrowest format (Hopper FP8, Blackwell NVFP4)",
            input_tokens=2048,
            output_tokens=512,
            max_ttft_s=2.0,
            max_tpot_s=0.050,
        ),
    )
}
DEFAULT_UPGRADE_WORKLOADS: Final = ("llama-3-70b-pretrain", "llama-3-70b-chat", "llama-3-70b-chat-narrowest")


def cost_workload(name: str) -> CostWorkload:
    """The named workload; an unknown name lists the known ones."""
    if name not in COST_WORKLOADS:
        raise UnknownNameError("cost workload", name, COST_WORKLOADS)
    return COST_WORKLOADS[name]


_FLEET: Final = re.compile(r"(?:(?P<count>\d+)\s*x\s*)?(?P<name>[A-Za-z0-9._-]+)")


def system_for(catalog: Catalog, name: str) -> System:
    """A catalog system by its name, or the first node system built from accelerator ``name``."""
    if name in catalog.systems or any(name in system.aliases for system in catalog.systems.values()):
        return catalog.system(name)
    try:
        accelerator = catalog.accelerator(name)
    except UnknownNameError:
        raise UnknownNameError(
            "system or accelerator", name, [*catalog.systems, *catalog.accelerators]
        ) from None
    candidates = catalog.systems_built_from(accelerator.name)
    if not candidates:
        raise UserInputError(f"no catalog system is built from {accelerator.name}; name a system instead")
    return candidates[0]


def parse_fleet(catalog: Catalog, text: str) -> tuple[System, int | None]:
    """``100xh100-sxm`` -> (DGX H100, 100 GPUs); ``b200`` -> (DGX B200, None); ``gb200-nvl72`` too.

    >>> from lightspeed.catalog import load_catalog
    >>> system, gpus = parse_fleet(load_catalog(), "100xh100-sxm")
    >>> system.name, gpus
    ('dgx-h100', 100)
    """
    match = _FLEET.fullmatch(text.strip())
    if match is None:
        raise UserInputError(f"cannot read {text!r}; write <GPUs>x<accelerator or system>, e.g. 100xh100-sxm")
    count = int(match["count"]) if match["count"] else None
    if count is not None and not 1 <= count <= 10_000_000:
        raise UserInputError(f"{count} GPUs in {text!r}: give 1 to 10,000,000")
    return system_for(catalog, match["name"]), count


@dataclass(frozen=True)
class ThroughputPoint(Record):
    """The engine's best plan on ``num_systems`` systems: total and per-GPU tokens/s."""

    system: str
    num_systems: int
    num_gpus: int
    precision: str
    plan: str
    tokens_per_s: float
    tokens_per_s_per_gpu: float


def _precision(workload: CostWorkload, system: System, catalog: Catalog) -> str:
    if workload.precision != "auto":
        return workload.precision
    return auto_precision(catalog.cluster(system.name))


def training_point(
    *,
    catalog: Catalog,
    models: ModelRegistry,
    system: System,
    num_systems: int,
    workload: CostWorkload,
    efficiency: EfficiencyModel | None = None,
) -> ThroughputPoint | None:
    """The best fitting training plan on ``num_systems`` systems, ``None`` if no plan fits."""
    cluster = catalog.cluster(system.name, num_nodes=num_systems)
    try:
        result = search_training(
            model=models.get(workload.model),
            cluster=cluster,
            global_batch_size=workload.global_batch,
            seq_len=workload.seq_len,
            precision=workload.precision,
            top=1,
            efficiency=efficiency,
            max_tp=system.scale_up_domain_size,
        )
    except LightspeedError:
        return None
    best = result.plans[0]
    if not best.fits:
        return None
    summary = " ".join(
        f"{key}={value}"
        for key, value in best.plan_summary().items()
        if key in ("tp", "pp", "dp", "cp", "ep") and (key == "dp" or value != 1)
    )
    summary += f" mb={best.plan.micro_batch_size} {best.plan.recompute}"
    return ThroughputPoint(
        system=system.name,
        num_systems=num_systems,
        num_gpus=cluster.num_accelerators,
        precision=workload.precision,
        plan=summary,
        tokens_per_s=best.tokens_per_s,
        tokens_per_s_per_gpu=best.tokens_per_s / cluster.num_accelerators,
    )


def serving_point(
    *,
    catalog: Catalog,
    models: ModelRegistry,
    system: System,
    workload: CostWorkload,
    efficiency: EfficiencyModel | None = None,
) -> ThroughputPoint:
    """The best deployment on one system under the workload's bounds (output tokens/s)."""
    precision = _precision(workload, system, catalog)
    result = search_inference(
        model=models.get(workload.model),
        cluster=catalog.cluster(system.name),
        load=ServingLoad(workload.input_tokens, workload.output_tokens),
        precision=precision,
        max_ttft_s=workload.max_ttft_s,
        max_tpot_s=workload.max_tpot_s,
        efficiency=efficiency,
    )
    best = result.best
    return ThroughputPoint(
        system=system.name,
        num_systems=1,
        num_gpus=result.num_gpus,
        precision=precision,
        plan=f"{best.plan.describe()} batch {best.batch_per_replica:g}",
        tokens_per_s=best.output_tokens_per_s,
        tokens_per_s_per_gpu=best.output_tokens_per_s / result.num_gpus,
    )


def smallest_training_fleet(
    *,
    catalog: Catalog,
    models: ModelRegistry,
    system: System,
    workload: CostWorkload,
    target_tokens_per_s: float,
    efficiency: EfficiencyModel | None = None,
) -> ThroughputPoint:
    """The fewest whole systems whose best fitting plan reaches ``target_tokens_per_s``.

    Jumps by the throughput shortfall, then walks back while one system fewer
    still reaches the target (throughput is not exactly monotonic in the count:
    batch and layer divisibility change the best plan).
    """
    if not math.isfinite(target_tokens_per_s) or target_tokens_per_s <= 0:
        raise UserInputError(f"target {target_tokens_per_s!r} tokens/s: give a positive number")

    def measure(count: int) -> ThroughputPoint | None:
        return training_point(
            catalog=catalog,
            models=models,
            system=system,
            num_systems=count,
            workload=workload,
            efficiency=efficiency,
        )

    count, found = 1, None
    for _ in range(MAX_SEARCH_STEPS):
        point = measure(count)
        if point is not None and point.tokens_per_s >= target_tokens_per_s:
            found = point
            break
        shortfall = target_tokens_per_s / point.tokens_per_s if point is not None else 2.0
        count = max(count + 1, math.ceil(count * shortfall))
        if count > MAX_SYSTEMS:
            break
    if found is None:
        raise UserInputError(
            f"no whole number of {system.name} up to {MAX_SYSTEMS:,} reaches "
            f"{target_tokens_per_s:,.0f} tokens/s on {workload.name}; lower the target or pick another system"
        )
    return _walk_back(found, measure, target_tokens_per_s)


def _walk_back(
    found: ThroughputPoint, measure: Callable[[int], ThroughputPoint | None], target: float
) -> ThroughputPoint:
    for _ in range(16):
        if found.num_systems == 1:
            break
        fewer = measure(found.num_systems - 1)
        if fewer is None or fewer.tokens_per_s < target:
            break
        found = fewer
    return found


def best_training_rate(
    *,
    catalog: Catalog,
    models: ModelRegistry,
    system: System,
    num_gpus: int,
    workload: CostWorkload,
    efficiency: EfficiencyModel | None = None,
) -> tuple[float, ThroughputPoint]:
    """Training tokens/s of ``num_gpus`` GPUs: the better per-GPU rate of the whole-system counts
    around them (a fractional node runs the plan of its neighbours) times ``num_gpus``."""
    per_system = system.num_accelerators
    counts = sorted({max(1, num_gpus // per_system), math.ceil(num_gpus / per_system)})
    points = [
        point
        for count in counts
        if (
            point := training_point(
                catalog=catalog,
                models=models,
                system=system,
                num_systems=count,
                workload=workload,
                efficiency=efficiency,
            )
        )
        is not None
    ]
    if not points:
        raise UserInputError(
            f"{workload.model} does not fit {num_gpus} GPUs of {system.name} for {workload.name}; "
            "use more GPUs"
        )
    best = max(points, key=lambda point: point.tokens_per_s_per_gpu)
    return best.tokens_per_s_per_gpu * num_gpus, best


__all__ = [
    "COST_WORKLOADS",
    "DEFAULT_UPGRADE_WORKLOADS",
    "CostWorkload",
    "ThroughputPoint",
    "best_training_rate",
    "cost_workload",
    "parse_fleet",
    "serving_point",
    "smallest_training_fleet",
    "system_for",
    "training_point",
]
