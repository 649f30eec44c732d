"""MIG partition planning: serve several models on the fewest GPUs, sliced, whole, or time-shared.

For each service (model, precision, ISL/OSL, request rate, TTFT/TPOT bounds)
the inference search finds the most requests/s each target sustains under the
bounds: every MIG profile of the GPU as a slice (its share of SMs and bandwidth,
the memory ``nvidia-smi`` reports for it, no NVLink) and groups of 1, 2, 4 or 8
whole GPUs joined by NVLink (memory in the same units: what the driver reports).
Three ways to serve the mix are then compared:

* **MIG**: each service on copies of one slice profile (or on whole GPUs with
  MIG off when no slice holds it), the slices packed into valid per-GPU
  layouts (placement rules of :mod:`lightspeed.mig.layout`) on the fewest GPUs;
* **whole GPUs**: each model on its own whole GPUs, loaded once: the services
  of one model (and precision) either take GPUs of their own or share copies of
  the smallest GPU group that holds the model in time shares, whichever needs
  fewer GPUs (MIG's whole-GPU option may share them the same way);
* **time-sharing**: every model loaded once on each unpartitioned GPU (the
  weights of all must fit; the free memory goes to KV caches in proportion to
  each service's share of time), each service running a fraction f of the
  time, so it needs its bounds met at f times the bound and f times its solo
  rate.

The plan with the fewest GPUs wins. A tie goes to MIG when its slices isolate services that the
whole-GPU plan runs on shared GPUs, else to whole GPUs (each service on GPUs of its own, with nothing
to isolate); time-sharing comes last.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
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
from lightspeed.sol.infer.plan import InferencePlan, ServingLoad, resolve_precisions
from lightspeed.units import bytes_per_element
from lightspeed.workload import ModelRegistry, TransformerSpec

GROUP_SIZES: Final = (1, 2, 4, 8)
SHARES: Final = tuple(index / 20 for index in range(1, 21))
MAX_COMBINATIONS: Final = 50_000
DEFAULT_MAX_GPUS: Final = 64
# narrower weight formats a refusal suggests, widest first (the next one below a service's precision)
SMALLER_PRECISIONS: Final = ("bf16", "fp8", "int4")
NARROWER_AT_MOST: Final = 0.75  # a suggested format saves at least a quarter of the weights' bytes


@dataclass(frozen=True)
class Assignment(Record):
    """How one service is served: ``num_copies`` of ``target``, and what each copy reaches.

    ``capacity_per_copy_requests_per_s`` is the most a copy sustains under the
    bounds; ``headroom`` is total capacity over the requested rate (>= 1).
    ``share`` is the fraction of time the service runs (time-sharing only).
    TTFT/TPOT are predicted at the requested rate spread over the copies when
    ``latency_at`` is ``"requested rate"``, else at the most-loaded point that
    meets the bounds (``"capacity"``, an upper bound). Assignments with the same ``engine``
    serve their services from one copy of the model on the same GPUs (time shares): their GPUs
    count once.
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
    engine: str = ""


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
    """A node of ``accelerator`` with its NVLink domain (the vendor's own system), else the GPU alone."""
    built = catalog.systems_built_from(accelerator.name)
    return build_cluster(built[0] if built else single_gpu_system(accelerator), num_nodes=1)


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


def _model_key(context: _Context, service: MigService) -> str:
    """Services with the same key can share one copy of the weights (same model and precision): the
    registry's name of the model, so an alias (a Hugging Face name) is the model it names."""
    return f"{context.models[service.model].name} {service.precision}"


def _by_model(context: _Context, services: Sequence[MigService]) -> dict[str, list[MigService]]:
    groups: dict[str, list[MigService]] = {}
    for service in services:
        groups.setdefault(_model_key(context, service), []).append(service)
    return groups


def count_gpus(assignments: Sequence[Assignment]) -> int:
    """GPUs of whole-GPU assignments, the GPUs of a shared engine counted once."""
    engines = {a.engine: a.num_copies * a.gpus_per_copy for a in assignments if a.engine}
    return sum(a.num_copies * a.gpus_per_copy for a in assignments if not a.engine) + sum(engines.values())


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
    context: _Context,
    services: Sequence[MigService],
    whole: dict[str, list[Capacity]],
    shared: Mapping[str, tuple[Assignment, ...]] | None = None,
) -> Strategy:
    """Each model on its own whole GPUs (NVLink groups of 1-8): its services on GPUs of their own,
    or on the ``shared`` engine of their model (one copy of the weights) when that needs fewer."""
    assignments: list[Assignment] = []
    for key, group in _by_model(context, services).items():
        separate = [_best_whole(service, whole[service.name]) for service in group]
        merged = (shared or {}).get(key)
        if None in separate and merged is None:
            service = group[separate.index(None)]
            reasons = "; ".join(c.reason for c in whole[service.name] if c.reason)
            return Strategy("whole-gpu", None, (), reason=f"{service.name}: {reasons}")
        own = [a for a in separate if a is not None]
        if merged is not None and (len(own) < len(group) or count_gpus(merged) < count_gpus(own)):
            assignments.extend(merged)
        else:
            assignments.extend(own)
    order = {service.name: index for index, service in enumerate(services)}
    assignments.sort(key=lambda a: order[a.service])
    total = count_gpus(assignments)
    if total > context.max_gpus:
        return Strategy("whole-gpu", None, (), reason=f"needs {total} GPUs, more than {context.max_gpus}")
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


def _slices(geometry: MigGeometry, combination: Sequence[Assignment]) -> int:
    """Compute slices a combination takes, a shared engine's GPUs counted once."""
    engines = {a.engine: _profile_slices(geometry, a) for a in combination if a.engine}
    return sum(_profile_slices(geometry, a) for a in combination if not a.engine) + sum(engines.values())


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
    for assignment in combination:
        if assignment.target in profiles:
            demand[assignment.target] = demand.get(assignment.target, 0) + assignment.num_copies
    whole = count_gpus([a for a in combination if a.target not in profiles])
    if whole > context.max_gpus:
        return None
    layouts = min_gpus(context.geometry, demand, limit=context.max_gpus - whole)
    return None if layouts is None else (whole + len(layouts), layouts)


def _choices(
    context: _Context,
    services: Sequence[MigService],
    slices: dict[str, list[Capacity]],
    whole: dict[str, list[Capacity]],
    shared: Mapping[str, tuple[Assignment, ...]],
) -> list[list[tuple[Assignment, ...]]] | str:
    """Per model, the ways to serve its services: each on its own slices or GPUs (the cheapest
    few combinations), or all on the model's shared engine. A string says which service cannot."""
    groups = list(_by_model(context, services).items())
    options = {s.name: _options(s, slices[s.name], _best_whole(s, whole[s.name])) for s in services}
    trimmed = dict(zip(options, _trim(context.geometry, list(options.values())), strict=True))
    choices = []
    for key, group in groups:
        ways = [tuple(c) for c in itertools.product(*(trimmed[s.name] for s in group))]
        if key in shared:
            ways.append(shared[key])
        if not ways:
            lacking = next(s.name for s in group if not options[s.name])
            return f"{lacking} fits no slice and no whole GPU group"
        choices.append(ways)
    return choices


def mig_strategy(
    context: _Context,
    services: Sequence[MigService],
    slices: dict[str, list[Capacity]],
    whole: dict[str, list[Capacity]],
    shared: Mapping[str, tuple[Assignment, ...]] | None = None,
) -> tuple[Strategy, tuple[GpuLayout, ...]]:
    """Each service on copies of one slice profile (or whole GPUs, alone or on its model's shared
    engine), packed on the fewest GPUs."""
    choices = _choices(context, services, slices, whole, shared or {})
    if isinstance(choices, str):
        return Strategy("mig", None, (), reason=choices), ()
    best: tuple[tuple[int, int, float], Sequence[Assignment], list[tuple[MigPlacement, ...]]] | None = None
    for parts in itertools.product(*choices):
        combination = [assignment for part in parts for assignment in part]
        packed = _pack(context, combination)
        if packed is None:
            continue
        key = (
            packed[0],
            _slices(context.geometry, combination),
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
    engines: dict[str, list[Assignment]] = {}
    for assignment in combination:
        if assignment.target not in profiles:
            engines.setdefault(assignment.engine or assignment.service, []).append(assignment)
    for together in engines.values():
        names = tuple(a.service for a in together)
        for _ in range(together[0].num_copies * together[0].gpus_per_copy):
            result.append(GpuLayout(len(result), False, (), names))
    return tuple(result)


def _free_bytes(context: _Context, weights_per_gpu_bytes: float) -> float:
    """Memory per GPU left for KV caches next to the weights and the runtime reserve, of the memory
    the engines size a GPU by (what the driver reports, else the listed usable figure)."""
    device = context.accelerator.memory_device_bytes
    return device - load_runtime_overheads().reserved_of(device) - weights_per_gpu_bytes


def _fit_shares(
    services: Sequence[MigService], curves: Sequence[list[tuple[float, Capacity]]], max_copies: int
) -> tuple[int, list[tuple[float, Capacity]]] | None:
    """The fewest copies on which every service gets a share of time, the shares adding up to 1."""
    for copies in range(1, max_copies + 1):
        picks = [
            _smallest_share(curve, s.requests_per_s / copies)
            for s, curve in zip(services, curves, strict=True)
        ]
        found = [pick for pick in picks if pick is not None]
        if len(found) == len(picks) and sum(share for share, _ in found) <= 1.0 + 1e-9:
            return copies, found
    return None


def shared_engine(
    context: _Context, group: Sequence[MigService], whole: dict[str, list[Capacity]]
) -> tuple[Assignment, ...] | None:
    """The services of one model on copies of the smallest NVLink group of whole GPUs that serves
    each alone, the model loaded once per copy and the services in time shares (``None`` if none)."""
    sizes = [size for size in GROUP_SIZES if size <= context.node.num_accelerators]
    solo: list[Capacity] = []
    for size in sizes:
        solo = [next(c for c in whole[s.name] if c.num_gpus == size) for s in group]
        if all(c.serves for c in solo):
            break
    else:
        return None
    size = solo[0].num_gpus
    weights = max(c.weights_bytes or 0.0 for c in solo)
    free = _free_bytes(context, weights / size)
    curves = [_share_curve(context, s, weights, free, num_gpus=size) for s in group]
    fitted = _fit_shares(group, curves, context.max_gpus // size)
    if fitted is None:
        return None
    copies, picks = fitted
    engine = f"{group[0].model} {group[0].precision} on {size} x {context.accelerator.name}"
    return tuple(
        replace(_assignment(s, capacity, copies, share=share), engine=engine)
        for s, (share, capacity) in zip(group, picks, strict=True)
    )


def time_sharing_strategy(
    context: _Context, services: Sequence[MigService], whole: dict[str, list[Capacity]]
) -> Strategy:
    """Every model, loaded once, on each unpartitioned GPU; each service runs a share of the time
    (module docstring)."""
    solo = [next((c for c in whole[s.name] if c.num_gpus == 1), None) for s in services]
    missing = [s.name for s, c in zip(services, solo, strict=True) if c is None or not c.serves]
    if missing:
        return Strategy("time-sharing", None, (), reason=f"{', '.join(missing)} does not fit one GPU alone")
    weights = [c.weights_bytes or 0.0 for c in solo if c is not None]
    per_model = {_model_key(context, s): w for s, w in zip(services, weights, strict=True)}  # loaded once
    free = _free_bytes(context, sum(per_model.values()))
    if free <= 0:
        device = context.accelerator.memory_device_bytes
        reserve = load_runtime_overheads().reserved_of(device)
        return Strategy(
            "time-sharing",
            None,
            (),
            reason=f"the weights of the {len(per_model)} models ({sum(per_model.values()) / 1e9:.1f} GB, "
            f"each loaded once) and the runtime reserve ({reserve / 1e9:.1f} GB) exceed one GPU's "
            f"{device / 1e9:.1f} GB",
        )
    curves = [_share_curve(context, s, w, free) for s, w in zip(services, weights, strict=True)]
    fitted = _fit_shares(services, curves, context.max_gpus)
    if fitted is None:
        return Strategy("time-sharing", None, (), reason=f"the shares do not fit in {context.max_gpus} GPUs")
    num_gpus, picks = fitted
    assignments = tuple(
        _assignment(s, capacity, num_gpus, share=share)
        for s, (share, capacity) in zip(services, picks, strict=True)
    )
    return Strategy("time-sharing", num_gpus, assignments)


def _share_curve(
    context: _Context, service: MigService, weights_bytes: float, free_bytes: float, num_gpus: int = 1
) -> list[tuple[float, Capacity]]:
    """(share, capacity while running) for each share of time: KV memory and bounds scale with it.

    ``weights_bytes`` is one copy of the model, spread over ``num_gpus`` GPUs joined by NVLink;
    ``free_bytes`` the memory per GPU beside them. The share's memory replaces both figures the
    engines may size a device by (:func:`_share_device`)."""
    model = context.models[service.model]
    curve = []
    for share in SHARES:
        device = _share_device(context, share, weights_bytes / num_gpus + share * free_bytes, num_gpus)
        system = (
            replace(context.node.system, accelerator=device) if num_gpus > 1 else single_gpu_system(device)
        )
        capacity = slice_capacity(
            service=service,
            model=model,
            cluster=build_cluster(system, num_nodes=1),
            target=f"{num_gpus} x {context.accelerator.name} shared",
            num_gpus=num_gpus,
            bound_scale=share,
            efficiency=context.efficiency,
        )
        curve.append((share, capacity))
    return curve


def _share_device(context: _Context, share: float, memory_bytes: float, num_gpus: int) -> Accelerator:
    """The GPU as one time-shared service sees it: ``memory_bytes`` in place of its memory (the
    driver-reported figure too, which the engines prefer), NVLink only when a copy spans GPUs."""
    return replace(
        context.accelerator,
        name=f"{context.accelerator.name} ({share:.0%} of the time)",
        memory_usable_bytes=memory_bytes,
        memory_reported_bytes=memory_bytes,
        scale_up=context.accelerator.scale_up if num_gpus > 1 else None,
    )


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
        capacity = capacities.get((assignment.service, assignment.target))
        if assignment.engine or capacity is None or capacity.deployment is None:
            # a shared engine keeps its stretched capacity-point latencies (an upper bound)
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


def _explain(strategies: Sequence[Strategy], no_slices: str = "") -> tuple[str, tuple[str, ...]]:
    """The winning strategy and why: the fewest GPUs, a tie broken by :func:`_tie_order`. ``no_slices``
    says why the MIG plan holds no slice (empty when it holds one): it is then whole GPUs with MIG off,
    the whole-GPU plan under another name, and loses a tie to it; slices isolate nothing there."""
    isolates = _slices_isolate(strategies, no_slices)
    order = _tie_order(isolates)
    feasible = [s for s in strategies if s.num_gpus is not None]
    assert feasible, "plan_mig refuses a mix no strategy serves before explaining"
    winner = min(feasible, key=lambda s: (s.num_gpus or 0, order[s.name]))
    lines = [f"{winner.name} serves every service within its bounds on {winner.num_gpus} GPU(s)"]
    for strategy in strategies:
        if strategy is winner:
            continue
        if strategy.num_gpus is None:
            lines.append(f"{strategy.name} cannot: {strategy.reason}")
        elif strategy.name == "mig" and no_slices and strategy.num_gpus == winner.num_gpus:
            lines.append(
                f"mig needs {strategy.num_gpus} GPU(s) and is the same plan: {no_slices}, "
                "so every service runs on whole GPUs with MIG off"
            )
        elif strategy.name == "mig" and strategy.num_gpus == winner.num_gpus and winner.name == "whole-gpu":
            lines.append(
                f"mig needs {strategy.num_gpus} GPU(s) too, but its slices isolate no service that "
                "whole-gpu runs on a shared GPU: the tie goes to whole GPUs, which put no service on a "
                "slice of one"
            )
        else:
            lines.append(f"{strategy.name} needs {strategy.num_gpus} GPU(s)")
    if winner.name == "mig" and no_slices:
        lines.append(f"the mig plan holds no slice ({no_slices}): every service runs on whole GPUs, MIG off")
    elif winner.name == "mig" and isolates:
        lines.append("slices are isolated: one service's burst does not stretch another's latency")
    return winner.name, tuple(lines)


def _slices_isolate(strategies: Sequence[Strategy], no_slices: str) -> bool:
    """Whether the MIG plan serves on GPUs of their own (slices or whole) services that the whole-GPU
    plan runs on shared GPUs (a model's engine in time shares), or no whole-GPU plan serves the mix:
    only then is isolation an advantage over whole GPUs, each service on GPUs of its own."""
    if no_slices:
        return False
    by_name = {strategy.name: strategy for strategy in strategies}
    whole, mig = by_name.get("whole-gpu"), by_name.get("mig")
    if whole is None or whole.num_gpus is None:
        return True
    shared = {a.service for a in whole.assignments if a.engine}
    alone = {a.service for a in mig.assignments if not a.engine} if mig is not None else set()
    return bool(shared & alone)


def _tie_order(isolates: bool) -> dict[str, int]:
    """Who wins a tie on GPUs: MIG when its slices isolate services whole GPUs would share, else whole
    GPUs (as fast or faster than a slice, and the same plan when MIG holds no slice); time-sharing last."""
    if isolates:
        return {"mig": 0, "whole-gpu": 1, "time-sharing": 2}
    return {"whole-gpu": 0, "mig": 1, "time-sharing": 2}


def _unserved(
    context: _Context,
    services: Sequence[MigService],
    whole: Mapping[str, list[Capacity]],
    strategies: Sequence[Strategy],
    source: str,
) -> InvalidPlanError:
    """No strategy serves the mix: why each cannot, where the mix came from and what to change."""
    where = f"{source}: " if source else ""
    reasons = "; ".join(f"{s.name}: {s.reason}" for s in strategies)
    return InvalidPlanError(
        f"{where}no strategy serves the mix of {len(services)} service(s) on {context.accelerator.name} "
        f"(at most {context.max_gpus} GPUs): {reasons}; fix: {_mix_fix(context, services, whole)}"
    )


def _mix_fix(context: _Context, services: Sequence[MigService], whole: Mapping[str, list[Capacity]]) -> str:
    """What to change, by why the services fail: a service whose model fits no group of whole GPUs
    needs a smaller precision or a larger GPU; one no group serves within its bounds, looser bounds
    or a faster GPU; when each is served alone, the mix needs more GPUs than allowed."""
    too_big = [s for s in services if whole[s.name] and all(c.does_not_fit for c in whole[s.name])]
    too_tight = [s for s in services if s not in too_big and not any(c.serves for c in whole[s.name])]
    fixes = []
    for service in too_big:
        largest = max(c.num_gpus for c in whole[service.name])
        smaller = _smaller_precision(service.precision)
        narrower = (
            f"give it a smaller precision than {service.precision} (e.g. {smaller}) or " if smaller else ""
        )
        fixes.append(
            f"{service.model} ({service.name!r}) fits no {largest} x {context.accelerator.name} in "
            f"{service.precision}: {narrower}plan on a larger GPU (more memory per GPU)"
        )
    if too_tight:
        names = ", ".join(repr(s.name) for s in too_tight)
        fixes.append(
            f"no GPU group meets the bounds of {names}: relax their max_ttft_ms / max_tpot_ms "
            "(or shorten the prompts), or plan on a faster GPU"
        )
    if not fixes:  # every service is served alone: together they need more GPUs than allowed
        more = (
            f"allow more GPUs (--gpus, now {context.max_gpus}) or "
            if context.max_gpus < DEFAULT_MAX_GPUS
            else ""
        )
        fixes.append(f"{more}lighten the mix (fewer services, lower requests_per_s), or plan on a faster GPU")
    return "; ".join(fixes)


def _smaller_precision(precision: str) -> str | None:
    """The widest common weight format at most :data:`NARROWER_AT_MOST` of ``precision``'s bytes
    (``None`` from 4 bits down: nothing meaningfully narrower).

    >>> [_smaller_precision(p) for p in ("fp32", "bf16", "fp8", "mxfp8", "nvfp4")]
    ['bf16', 'fp8', 'int4', 'int4', None]
    """
    limit = NARROWER_AT_MOST * bytes_per_element(precision)
    return next((p for p in SMALLER_PRECISIONS if bytes_per_element(p) <= limit), None)


def _why_no_slices(
    services: Sequence[MigService], slices: Mapping[str, list[Capacity]], layout: Sequence[GpuLayout]
) -> str:
    """Why the MIG plan holds no slice (``""`` when it holds one)."""
    if any(gpu.mig for gpu in layout):
        return ""
    if not any(capacity.serves for service in services for capacity in slices[service.name]):
        return "no MIG slice serves these services within their bounds"
    return "no slice serves them on fewer GPUs or compute slices than whole GPUs"


def plan_mig(
    *,
    services: Sequence[MigService],
    accelerator: Accelerator,
    catalog: Catalog,
    models: ModelRegistry,
    max_gpus: int | None = None,
    efficiency: EfficiencyModel | None = None,
    geometry: MigGeometry | None = None,
    source: str = "",
) -> MigPlan:
    """Plan MIG partitions for ``services`` on ``accelerator`` GPUs and compare the alternatives.

    ``max_gpus`` caps the GPUs any strategy may use (default 64); ``geometry``
    replaces the shipped MIG profiles of the accelerator (user data files).
    ``source`` (the workloads file) is named when no strategy serves the mix, with what to change.

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
    shared = {
        key: engine
        for key, group in _by_model(context, services).items()
        if len(group) > 1 and (engine := shared_engine(context, group, whole)) is not None
    }
    mig, layout = mig_strategy(context, services, slices, whole, shared)
    capacities = {(c.service, c.target): c for s in services for c in (*slices[s.name], *whole[s.name])}
    strategies = (
        _at_requested_rate(context, services, mig, capacities),
        _at_requested_rate(
            context, services, whole_gpu_strategy(context, services, whole, shared), capacities
        ),
        time_sharing_strategy(context, services, whole),
    )
    if all(strategy.num_gpus is None for strategy in strategies):
        raise _unserved(context, services, whole, strategies, source)
    choice, explanation = _explain(strategies, _why_no_slices(services, slices, layout))
    return MigPlan(
        accelerator=accelerator.name,
        services=tuple(services),
        layout=layout,
        strategies=strategies,
        choice=choice,
        explanation=explanation,
        capacities=tuple(c for s in services for c in (*slices[s.name], *whole[s.name])),
        assumptions=(*ASSUMPTIONS, *_precision_notes(accelerator, services)),
    )


def _precision_notes(accelerator: Accelerator, services: Sequence[MigService]) -> tuple[str, ...]:
    """What the services' weight formats become on ``accelerator`` (weight-only quantization where it
    has no tensor cores for one), in the words ``plan infer`` uses; each note once."""
    notes: dict[str, None] = {}
    for precision in dict.fromkeys(service.precision for service in services):
        notes.update(dict.fromkeys(resolve_precisions(InferencePlan(precision=precision), accelerator).notes))
    return tuple(notes)


ASSUMPTIONS: Final = (
    "a slice has its share of SMs (SM count over the GPU's SMs), bandwidth and L2 (memory slices / 8), "
    "the memory nvidia-smi reports for its profile (else memory slices / 8 of the whole GPU's) and no NVLink",
    "memory is sized in the units the engines use for a whole GPU: what the driver reports where recorded",
    "capacity is the inference search's most-loaded deployment that meets both bounds (continuous batching)",
    "each service uses copies of one slice profile, or whole GPUs (TP/PP over NVLink) when that is cheaper",
    "services of one model and precision on whole GPUs may share copies of it (weights loaded once per "
    "copy) in time shares, as in time-sharing: conservative, since one engine batching them together "
    "reads the weights once for all",
    "time-sharing: each GPU holds every model once; a service running a fraction f of the time gets f of "
    "the free memory for its KV cache and must meet f x its bounds at f x its solo throughput "
    "(no overlap between models)",
)
