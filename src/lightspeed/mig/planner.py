"""MIG partition planning: serve several models on the fewest GPUs, sliced, whole, or time-shared.

For each service (model, precision, ISL/OSL, request rate, TTFT/TPOT bounds)
the inference search finds the most requests/s each target sustains under the
bounds: every MIG profile of the GPU as a slice (its share of SMs, memory and
bandwidth, no NVLink) and groups of 1, 2, 4 or 8 whole GPUs joined by NVLink.
Three ways to serve the mix are then compared:

* **MIG**: each service on copies of one slice profile (or on whole GPUs with
  MIG off when no slice holds it), the slices packed into valid per-GPU
  layouts (placement rules of :mod:`lightspeed.mig.layout`) on the fewest GPUs;
* **whole GPUs**: each service on its own whole GPUs;
* **time-sharing**: every model loaded on each unpartitioned GPU (the weights
  of all must fit; the free memory goes to KV caches in proportion to each
  service's share of time), each service running a fraction f of the time, so
  it needs its bounds met at f times the bound and f times its solo rate.

The plan with the fewest GPUs wins; ties go to MIG (isolated), then whole GPUs.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Final

from lightspeed.catalog import Accelerator, Catalog, Cluster
from lightspeed.catalog.clusters import build_cluster
from lightspeed.catalog.mig_profiles import MigGeometry, mig_geometry, single_gpu_system, slice_accelerator
from lightspeed.errors import InvalidPlanError, LightspeedError
from lightspeed.mig.layout import MigPlacement, min_gpus
from lightspeed.mig.services import Capacity, MigService, slice_capacity
from lightspeed.records import Record
from lightspeed.sol.core.efficiency import EfficiencyModel
from lightspeed.sol.core.hardware import load_runtime_overheads
from lightspeed.sol.infer.estimate import estimate_inference
from lightspeed.sol.infer.plan import ServingLoad
from lightspeed.workload import ModelRegistry, TransformerSpec

GROUP_SIZES: Final = (1, 2, 4, 8)
SHARES: Final = tuple(index / 20 for index in range(1, 21))
MAX_COMBINATIONS: Final = 50_000
DEFAULT_MAX_GPUS: Final = 64


@dataclass(frozen=True)
class Assignment(Record):
    """How one service is served: ``num_copies`` of ``target``, and what each copy reaches.

    ``capacity_per_copy_requests_per_s`` is the most a copy sustains under the
    bounds; ``headroom`` is total capacity over the requested rate (>= 1).
    ``share`` is the fraction of time the service runs (time-sharing only).
    TTFT/TPOT are predicted at the requested rate spread over the copies when
    ``latency_at`` is ``"requested rate"``, else at the most-loaded point that
    meets the bounds (``"capacity"``, an upper bound).
    """

    service: str
    model: str
    target: str
    num_copies: int
    gpus_per_copy: int
    requests_per_s: float
    capacity_per_copy_requests_per_s: float
    ttft_s: float | None
    tpot_s: float | None
    plan: str
    headroom: float
    share: float = 1.0
    latency_at: str = "capacity"


@dataclass(frozen=True)
class Strategy(Record):
    """One way to serve the mix: its GPU count (``None`` when impossible) and per-service assignments."""

    name: str
    num_gpus: int | None
    assignments: tuple[Assignment, ...]
    reason: str = ""


@dataclass(frozen=True)
class GpuLayout(Record):
    """One GPU of the MIG plan: its instances and the service each one serves (MIG off: one entry)."""

    index: int
    mig: bool
    placements: tuple[MigPlacement, ...]
    services: tuple[str, ...]


@dataclass(frozen=True)
class MigPlan(Record):
    """The MIG plan, the alternatives beside it, and which one wins and why."""

    accelerator: str
    services: tuple[MigService, ...]
    layout: tuple[GpuLayout, ...]
    strategies: tuple[Strategy, ...]
    choice: str
    explanation: tuple[str, ...]
    capacities: tuple[Capacity, ...]
    assumptions: tuple[str, ...]

    def strategy(self, name: str) -> Strategy:
        """The strategy called ``name`` (``mig``, ``whole-gpu``, ``time-sharing``)."""
        return next(strategy for strategy in self.strategies if strategy.name == name)


@dataclass(frozen=True)
class _Context:
    accelerator: Accelerator
    geometry: MigGeometry
    node: Cluster
    models: dict[str, TransformerSpec]
    efficiency: EfficiencyModel | None
    max_gpus: int


def _node_for(catalog: Catalog, accelerator: Accelerator) -> Cluster:
    """A node of ``accelerator`` with its NVLink domain (the first such system), else the GPU alone."""
    for system in catalog.systems.values():
        if system.accelerator.name == accelerator.name:
            return build_cluster(system, num_nodes=1)
    return build_cluster(single_gpu_system(accelerator), num_nodes=1)


def _slice_capacities(context: _Context, service: MigService) -> list[Capacity]:
    model = context.models[service.model]
    capacities = []
    for profile in context.geometry.profiles:
        if profile.media_extensions:
            continue  # same compute and memory as the plain 1g profile
        part = slice_accelerator(context.accelerator, profile)
        cluster = build_cluster(single_gpu_system(part), num_nodes=1)
        capacities.append(
            slice_capacity(
                service=service,
                model=model,
                cluster=cluster,
                target=profile.name,
                efficiency=context.efficiency,
            )
        )
    return capacities


def _whole_capacities(context: _Context, service: MigService) -> list[Capacity]:
    model = context.models[service.model]
    sizes = [size for size in GROUP_SIZES if size <= context.node.num_accelerators]
    return [
        slice_capacity(
            service=service,
            model=model,
            cluster=context.node,
            target=f"{size} x {context.accelerator.name}",
            num_gpus=size,
            efficiency=context.efficiency,
        )
        for size in sizes
    ]


def _assignment(service: MigService, capacity: Capacity, copies: int, share: float = 1.0) -> Assignment:
    return Assignment(
        service=service.name,
        model=service.model,
        target=capacity.target,
        num_copies=copies,
        gpus_per_copy=capacity.num_gpus,
        requests_per_s=service.requests_per_s,
        capacity_per_copy_requests_per_s=capacity.requests_per_s * share,
        ttft_s=None if capacity.ttft_s is None else capacity.ttft_s / share,
        tpot_s=None if capacity.tpot_s is None else capacity.tpot_s / share,
        plan=capacity.plan,
        headroom=copies * capacity.requests_per_s * share / service.requests_per_s,
        share=share,
    )


def _best_whole(service: MigService, whole: list[Capacity]) -> Assignment | None:
    """The group size that serves the service on the fewest GPUs (more headroom breaks ties)."""
    options = [
        _assignment(service, capacity, copies)
        for capacity in whole
        if (copies := capacity.instances_for(service.requests_per_s)) is not None
    ]
    if not options:
        return None
    return min(options, key=lambda a: (a.num_copies * a.gpus_per_copy, -a.headroom))


def whole_gpu_strategy(
    services: Sequence[MigService], whole: dict[str, list[Capacity]], max_gpus: int = DEFAULT_MAX_GPUS
) -> Strategy:
    """Each service on its own whole GPUs (NVLink groups of 1-8)."""
    assignments = []
    for service in services:
        best = _best_whole(service, whole[service.name])
        if best is None:
            reasons = "; ".join(c.reason for c in whole[service.name] if c.reason)
            return Strategy("whole-gpu", None, (), reason=f"{service.name}: {reasons}")
        assignments.append(best)
    total = sum(a.num_copies * a.gpus_per_copy for a in assignments)
    if total > max_gpus:
        return Strategy("whole-gpu", None, (), reason=f"needs {total} GPUs, more than {max_gpus}")
    return Strategy("whole-gpu", total, tuple(assignments))


def _options(service: MigService, slices: list[Capacity], whole: Assignment | None) -> list[Assignment]:
    options = [
        _assignment(service, capacity, copies)
        for capacity in slices
        if (copies := capacity.instances_for(service.requests_per_s)) is not None
        and copies <= 7 * DEFAULT_MAX_GPUS
    ]
    if whole is not None:
        options.append(whole)
    return options


def _profile_slices(geometry: MigGeometry, assignment: Assignment) -> int:
    """Compute slices an option takes (7 per whole GPU)."""
    if assignment.target in {p.name for p in geometry.profiles}:
        return geometry.profile(assignment.target).num_compute_slices * assignment.num_copies
    return 7 * assignment.num_copies * assignment.gpus_per_copy


def _trim(geometry: MigGeometry, options: list[list[Assignment]]) -> list[list[Assignment]]:
    """Keep each service's cheapest options (by compute slices) until the combinations are few enough."""
    keep = max(len(option) for option in options)
    while keep > 1 and math.prod(min(len(o), keep) for o in options) > MAX_COMBINATIONS:
        keep -= 1
    return [sorted(o, key=lambda a: (_profile_slices(geometry, a), -a.headroom))[:keep] for o in options]


def _pack(
    context: _Context, combination: Sequence[Assignment]
) -> tuple[int, list[tuple[MigPlacement, ...]]] | None:
    profiles = {p.name for p in context.geometry.profiles}
    demand: dict[str, int] = {}
    whole = 0
    for assignment in combination:
        if assignment.target in profiles:
            demand[assignment.target] = demand.get(assignment.target, 0) + assignment.num_copies
        else:
            whole += assignment.num_copies * assignment.gpus_per_copy
    if whole > context.max_gpus:
        return None
    layouts = min_gpus(context.geometry, demand, limit=context.max_gpus - whole)
    return None if layouts is None else (whole + len(layouts), layouts)


def mig_strategy(
    context: _Context,
    services: Sequence[MigService],
    slices: dict[str, list[Capacity]],
    whole: dict[str, list[Capacity]],
) -> tuple[Strategy, tuple[GpuLayout, ...]]:
    """Each service on copies of one slice profile (or whole GPUs), packed on the fewest GPUs."""
    options = [_options(s, slices[s.name], _best_whole(s, whole[s.name])) for s in services]
    for service, option in zip(services, options, strict=True):
        if not option:
            return Strategy(
                "mig", None, (), reason=f"{service.name} fits no slice and no whole GPU group"
            ), ()
    best: tuple[tuple[int, int, float], Sequence[Assignment], list[tuple[MigPlacement, ...]]] | None = None
    for combination in itertools.product(*_trim(context.geometry, options)):
        packed = _pack(context, combination)
        if packed is None:
            continue
        key = (
            packed[0],
            sum(_profile_slices(context.geometry, a) for a in combination),
            -min(a.headroom for a in combination),
        )
        if best is None or key < best[0]:
            best = (key, combination, packed[1])
    if best is None:
        return Strategy("mig", None, (), reason=f"the mix needs more than {context.max_gpus} GPUs"), ()
    chosen, layouts = best[1], best[2]
    return Strategy("mig", best[0][0], tuple(chosen)), _layouts(context, chosen, layouts)


def _layouts(
    context: _Context, combination: Sequence[Assignment], layouts: list[tuple[MigPlacement, ...]]
) -> tuple[GpuLayout, ...]:
    """Name the service on every instance; whole-GPU services get MIG-off GPUs after the sliced ones."""
    queue: dict[str, list[str]] = {}
    for assignment in combination:
        queue.setdefault(assignment.target, []).extend([assignment.service] * assignment.num_copies)
    result = [
        GpuLayout(index, True, layout, tuple(queue[p.profile].pop(0) for p in layout))
        for index, layout in enumerate(layouts)
    ]
    profiles = {p.name for p in context.geometry.profiles}
    for assignment in combination:
        if assignment.target not in profiles:
            for _ in range(assignment.num_copies * assignment.gpus_per_copy):
                result.append(GpuLayout(len(result), False, (), (assignment.service,)))
    return tuple(result)


def time_sharing_strategy(
    context: _Context, services: Sequence[MigService], whole: dict[str, list[Capacity]]
) -> Strategy:
    """Every model on each unpartitioned GPU; each service runs a share of the time (module docstring)."""
    solo = [next((c for c in whole[s.name] if c.num_gpus == 1), None) for s in services]
    missing = [s.name for s, c in zip(services, solo, strict=True) if c is None or not c.serves]
    if missing:
        return Strategy("time-sharing", None, (), reason=f"{', '.join(missing)} does not fit one GPU alone")
    weights = [c.weights_bytes or 0.0 for c in solo if c is not None]
    usable = context.accelerator.memory_usable_bytes
    free = usable - load_runtime_overheads().reserved_of(usable) - sum(weights)
    if free <= 0:
        return Strategy(
            "time-sharing",
            None,
            (),
            reason=f"the weights of all models ({sum(weights) / 1e9:.1f} GB) exceed one GPU's "
            f"{usable / 1e9:.0f} GB with the runtime reserve",
        )
    curves = [_share_curve(context, s, w, free) for s, w in zip(services, weights, strict=True)]
    for num_gpus in range(1, context.max_gpus + 1):
        picks = [
            _smallest_share(curve, s.requests_per_s / num_gpus)
            for s, curve in zip(services, curves, strict=True)
        ]
        if all(p is not None for p in picks) and sum(p[0] for p in picks if p is not None) <= 1.0 + 1e-9:
            assignments = tuple(
                _assignment(s, p[1], num_gpus, share=p[0])
                for s, p in zip(services, picks, strict=True)
                if p is not None
            )
            return Strategy("time-sharing", num_gpus, assignments)
    return Strategy("time-sharing", None, (), reason=f"the shares do not fit in {context.max_gpus} GPUs")


def _share_curve(
    context: _Context, service: MigService, weights_bytes: float, free_bytes: float
) -> list[tuple[float, Capacity]]:
    """(share, capacity while running) for each share of time: KV memory and bounds scale with it."""
    model = context.models[service.model]
    curve = []
    for share in SHARES:
        device = replace(
            context.accelerator,
            name=f"{context.accelerator.name} ({share:.0%} of the time)",
            memory_usable_bytes=weights_bytes + share * free_bytes,
            scale_up=None,
        )
        cluster = build_cluster(single_gpu_system(device), num_nodes=1)
        curve.append(
            (
                share,
                slice_capacity(
                    service=service,
                    model=model,
                    cluster=cluster,
                    target=f"{context.accelerator.name} shared",
                    bound_scale=share,
                    efficiency=context.efficiency,
                ),
            )
        )
    return curve


def _smallest_share(
    curve: list[tuple[float, Capacity]], requests_per_s: float
) -> tuple[float, Capacity] | None:
    for share, capacity in curve:
        if capacity.serves and share * capacity.requests_per_s >= requests_per_s:
            return share, capacity
    return None


def _at_requested_rate(
    context: _Context,
    services: Sequence[MigService],
    strategy: Strategy,
    capacities: dict[tuple[str, str], Capacity],
) -> Strategy:
    """The strategy with each assignment's TTFT/TPOT predicted at its requested rate per copy."""
    by_name = {service.name: service for service in services}
    updated = []
    for assignment in strategy.assignments:
        service = by_name[assignment.service]
        capacity = capacities[(assignment.service, assignment.target)]
        if capacity.deployment is None:
            updated.append(assignment)
            continue
        names = {p.name for p in context.geometry.profiles}
        if assignment.target in names:
            part = slice_accelerator(context.accelerator, context.geometry.profile(assignment.target))
            cluster = build_cluster(single_gpu_system(part), num_nodes=1)
        else:
            cluster = context.node
        try:
            estimate = estimate_inference(
                model=context.models[service.model],
                cluster=cluster,
                plan=capacity.deployment,
                load=ServingLoad(
                    service.input_tokens,
                    service.output_tokens,
                    arrival_rate_per_s=service.requests_per_s / assignment.num_copies,
                ),
                efficiency=context.efficiency,
            )
        except LightspeedError:
            updated.append(assignment)  # keep the capacity-point latencies (an upper bound)
            continue
        updated.append(
            replace(assignment, ttft_s=estimate.ttft_s, tpot_s=estimate.tpot_s, latency_at="requested rate")
        )
    return replace(strategy, assignments=tuple(updated))


def _explain(strategies: Sequence[Strategy]) -> tuple[str, tuple[str, ...]]:
    order = {"mig": 0, "whole-gpu": 1, "time-sharing": 2}
    feasible = [s for s in strategies if s.num_gpus is not None]
    if not feasible:
        raise InvalidPlanError(
            "no strategy serves the mix: " + "; ".join(f"{s.name}: {s.reason}" for s in strategies)
        )
    winner = min(feasible, key=lambda s: (s.num_gpus or 0, order[s.name]))
    lines = [f"{winner.name} serves every service within its bounds on {winner.num_gpus} GPU(s)"]
    for strategy in strategies:
        if strategy is winner:
            continue
        if strategy.num_gpus is None:
            lines.append(f"{strategy.name} cannot: {strategy.reason}")
        else:
            lines.append(f"{strategy.name} needs {strategy.num_gpus} GPU(s)")
    if winner.name == "mig":
        lines.append("slices are isolated: one service's burst does not stretch another's latency")
    return winner.name, tuple(lines)


def plan_mig(
    *,
    services: Sequence[MigService],
    accelerator: Accelerator,
    catalog: Catalog,
    models: ModelRegistry,
    max_gpus: int | None = None,
    efficiency: EfficiencyModel | None = None,
    geometry: MigGeometry | None = None,
) -> MigPlan:
    """Plan MIG partitions for ``services`` on ``accelerator`` GPUs and compare the alternatives.

    ``max_gpus`` caps the GPUs any strategy may use (default 64); ``geometry``
    replaces the shipped MIG profiles of the accelerator (user data files).

    >>> from lightspeed.catalog import load_catalog
    >>> from lightspeed.workload import load_models
    >>> chat = MigService("chat", "llama-3-8b", "fp8", 1024, 256, 2.0, 0.5, 0.05)
    >>> catalog = load_catalog()
    >>> plan = plan_mig(services=[chat, replace(chat, name="code")],
    ...     accelerator=catalog.accelerator("h100-sxm"), catalog=catalog, models=load_models())
    >>> plan.choice, plan.strategy("mig").num_gpus
    ('mig', 1)
    """
    if not services:
        raise InvalidPlanError("no services to plan; list them in the workloads file")
    context = _Context(
        accelerator=accelerator,
        geometry=geometry or mig_geometry(accelerator),
        node=_node_for(catalog, accelerator),
        models={s.model: models.get(s.model) for s in services},
        efficiency=efficiency,
        max_gpus=max_gpus or DEFAULT_MAX_GPUS,
    )
    slices = {s.name: _slice_capacities(context, s) for s in services}
    whole = {s.name: _whole_capacities(context, s) for s in services}
    mig, layout = mig_strategy(context, services, slices, whole)
    capacities = {(c.service, c.target): c for s in services for c in (*slices[s.name], *whole[s.name])}
    strategies = (
        _at_requested_rate(context, services, mig, capacities),
        _at_requested_rate(
            context, services, whole_gpu_strategy(services, whole, context.max_gpus), capacities
        ),
        time_sharing_strategy(context, services, whole),
    )
    choice, explanation = _explain(strategies)
    return MigPlan(
        accelerator=accelerator.name,
        services=tuple(services),
        layout=layout,
        strategies=strategies,
        choice=choice,
        explanation=explanation,
        capacities=tuple(c for s in services for c in (*slices[s.name], *whole[s.name])),
        assumptions=ASSUMPTIONS,
    )


ASSUMPTIONS: Final = (
    "a slice has its share of SMs (SM count over the GPU's SMs), memory, bandwidth and L2 "
    "(memory slices / 8) and no NVLink",
    "capacity is the inference search's most-loaded deployment that meets both bounds (continuous batching)",
    "each service uses copies of one slice profile, or whole GPUs (TP/PP over NVLink) when that is cheaper",
    "time-sharing: each GPU holds every model; a service running a fraction f of the time gets f of the "
    "free memory for its KV cache and must meet f x its bounds at f x its solo throughput "
    "(no overlap between models)",
)
