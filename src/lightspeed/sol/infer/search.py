"""Search serving deployments: the best under latency bounds, and the Pareto frontier.

The space is every replica shape (TP, attention data parallelism, EP, PP) that
divides the cluster, times a ladder of batch sizes per replica up to the KV-cache
limit, evaluated in one vectorized pass of the same steady-state model that
``plan infer`` uses. A point is *feasible* when it fits and meets the TTFT and
TPOT bounds; the best maximizes output tokens per second per GPU. The Pareto
frontier keeps the points no other point beats on both tokens/s per GPU and
tokens/s per user (``1 / TPOT``). Split into prefill and decode pools, a
decode pool is paired with prefill replicas of its own shape and of the first shape
on the prefill front (:func:`prefill_front`, most prompts per GPU first) that tiles
the GPUs it leaves: a pool's prompt rate and prompt time depend on its replicas'
shape alone. Where the prefill pool bounds a split point's rate, its decode replicas hold
the batch that rate keeps decoding (not the ladder's), at that batch's TPOT. The best is
printed as ``plan infer`` estimates it at the point's own batch (aggregated) or rate (split):
the same TTFT, TPOT and throughput the search ranked.

The serving engine's twin of :mod:`lightspeed.sol.train.search` (the same concept for training);
the search over speculative depths runs it once per depth (:mod:`lightspeed.sol.infer.draft_search`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Final

import numpy as np

from lightspeed.catalog import Cluster
from lightspeed.errors import InvalidPlanError, PlanDoesNotFitError
from lightspeed.limits import MAX_ACCELERATORS, MAX_DURATION_S, check_kind, check_number, check_whole
from lightspeed.records import Record
from lightspeed.sol.core.efficiency import EfficiencyModel
from lightspeed.sol.core.experts import ExpertBalance
from lightspeed.sol.core.serving_stacks import ServingStack
from lightspeed.sol.infer.estimate import InferenceEstimate, estimate_inference
from lightspeed.sol.infer.inference_hardware import InferenceHardware, inference_hardware_for
from lightspeed.sol.infer.memory import memory_of, smallest_fitting
from lightspeed.sol.infer.plan import (
    INFERENCE_PRECISIONS,
    InferencePlan,
    PoolShape,
    ServingLoad,
    SpeculativeDecoding,
)
from lightspeed.sol.infer.search_space import (
    MAX_PIPELINE,
    ShapeColumns,
    Stage,
    batch_points,
    replica_shapes,
    replica_stages,
    shape_columns,
    with_expert_balance,
)
from lightspeed.sol.infer.serving import (
    Deployments,
    PoolSplit,
    ServingArrays,
    ServingContext,
    continuous,
    decode_only,
    disaggregated,
    prefill_pool_arrays,
)
from lightspeed.units import format_duration
from lightspeed.workload import TransformerSpec, check_context, kv_bytes_per_token_at

LOG = logging.getLogger(__name__)

# the formats ``auto`` picks from, narrowest first: the first the GPU has tensor cores for
AUTO_PRECISIONS: Final = ("nvfp4", "fp8", "bf16", "fp16")


@dataclass(frozen=True)
class FrontierPoint(Record):
    """One deployment and batch on the throughput-latency Pareto frontier: ``plan`` describes
    ``deployment`` (:meth:`InferencePlan.describe`)."""

    plan: str
    deployment: InferencePlan
    batch_per_replica: float
    output_tokens_per_s_per_gpu: float
    output_tokens_per_s_per_user: float
    ttft_s: float
    tpot_s: float


@dataclass(frozen=True)
class DraftDepth(Record):
    """The best deployment a search found at one speculative depth (``draft_tokens`` 0: none):
    its tokens/s per GPU and per user, or why none met the bounds (``reason``)."""

    draft_tokens: int
    plan: str | None
    output_tokens_per_s_per_gpu: float | None
    output_tokens_per_s_per_user: float | None
    tpot_s: float | None
    reason: str = ""


@dataclass(frozen=True)
class InferenceSearchResult(Record):
    """The best deployment under the bounds, the Pareto frontier, and what constrained the space;
    ``draft_depths``: each speculative depth tried (:func:`search_draft_depths`), else empty."""

    model: str
    system: str
    num_gpus: int
    load: ServingLoad
    max_ttft_s: float | None
    max_tpot_s: float | None
    num_points_evaluated: int
    num_points_feasible: int
    elapsed_s: float
    best: InferenceEstimate
    frontier: tuple[FrontierPoint, ...]
    constraints: tuple[str, ...]
    draft_depths: tuple[DraftDepth, ...] = ()
    # each replica shape's highest tokens/s per GPU within the bounds, best first (at most as many
    # as the frontier holds), and how many shapes reach no point within them
    feasible_shapes: tuple[FrontierPoint, ...] = ()
    num_shapes_infeasible: int = 0


def _deployments(shapes: ShapeColumns, batch: np.ndarray) -> Deployments:
    """The points' degrees and ``batch`` sequences per (decode) replica."""
    return Deployments(
        tp=shapes.tp,
        pp=shapes.pp,
        ep=shapes.ep,
        dp_attention=shapes.dp_attention,
        batch=batch,
        expert_imbalance=shapes.expert_imbalance,
        physical_experts=shapes.physical_experts,
    )


def _split_arrays(ctx: ServingContext, shapes: ShapeColumns, batch: np.ndarray) -> ServingArrays:
    """The points as separate prefill and decode pools (a point without a prefill pool: one prefill
    replica, unused), rates for the whole deployment."""
    prompt_kv = kv_bytes_per_token_at(ctx.model, ctx.hardware.precisions.kv_cache, ctx.load.input_tokens)
    split = PoolSplit(
        prefill_replicas=np.maximum(shapes.prefill, 1.0),
        decode_replicas=shapes.decode,
        # the KV cache leaves over the smaller pool's GPUs (as pool_split has it)
        gpus_per_replica=np.minimum(shapes.prefill_tp * shapes.prefill_pp, shapes.tp * shapes.pp),
        kv_bytes_per_token_per_replica=np.full(batch.shape, float(prompt_kv)),
        crosses_domains=shapes.prefill * shapes.prefill_tp * shapes.prefill_dp_attention * shapes.prefill_pp
        + shapes.decode * shapes.tp * shapes.dp_attention * shapes.pp
        > ctx.hardware.hardware.domain_size,
        prefill_shape=shapes.prefill_stage,
    )
    return disaggregated(_deployments(shapes, batch), ctx, split)


# A prefill-bound split point settles at the decode batch its prompt rate keeps decoding: to this
# relative tolerance, in at most this many rounds (TPOT is near affine in the batch: a few)
SETTLE_TOLERANCE: Final = 1e-7
SETTLE_ROUNDS: Final = 40


def _held_batch(
    ctx: ServingContext, shapes: ShapeColumns, batch: np.ndarray, tpot_s: np.ndarray, rate: np.ndarray
) -> np.ndarray:
    """The decode batch per replica that ``rate`` requests per second keep decoding, by Little's law
    on the decode pool: the root of ``b = rate x (OSL - 1) x TPOT(b) / D`` below ``batch`` (whose
    TPOT is ``tpot_s``). Secant steps inside the bracket that holds it, else the plain step
    ``b <- rate x (OSL - 1) x TPOT(b) / D``, which stays inside it (TPOT grows with the batch)."""
    per_tpot = rate * max(ctx.load.output_tokens - 1, 1) / shapes.decode  # sequences per second of TPOT
    low, high = np.zeros_like(batch), batch.copy()  # the root lies between them
    previous, previous_tpot = batch, tpot_s
    held = np.minimum(per_tpot * tpot_s, batch)
    for _ in range(SETTLE_ROUNDS):
        tpot = np.asarray(decode_only(_deployments(shapes, held), ctx).tpot_s)  # the decode pool's
        target = per_tpot * tpot
        if np.all(np.abs(target - held) <= SETTLE_TOLERANCE * held):
            break
        low, high = np.where(target >= held, held, low), np.where(target < held, held, high)
        step = held - previous
        slope = np.divide(tpot - previous_tpot, step, out=np.zeros_like(step), where=step != 0)
        denominator = 1.0 - per_tpot * slope
        secant = np.divide(
            per_tpot * (tpot - slope * held), denominator, out=target.copy(), where=denominator > 0
        )
        previous, previous_tpot = held, tpot
        held = np.where((secant > low) & (secant < high), secant, np.clip(target, low, high))
    return np.asarray(held)


def _settled_split(
    ctx: ServingContext, shapes: ShapeColumns, batch: np.ndarray
) -> tuple[np.ndarray, ServingArrays]:
    """(decode batch per replica, steady state) of the points as separate pools.

    Where the prefill pool bounds the rate, the decode replicas cannot fill ``batch``: they hold
    what the prompt rate keeps decoding (:func:`_held_batch`), and the point is that batch, at that
    batch's TPOT, as ``plan infer`` at the rate it serves decodes it (one point, one TTFT and TPOT,
    whether the search ranks it or the estimate prints it)."""
    arrays = _split_arrays(ctx, shapes, batch)
    rate, tpot = np.asarray(arrays.requests_per_s), np.asarray(arrays.tpot_s)
    held = rate * max(ctx.load.output_tokens - 1, 1) * tpot / shapes.decode
    over = np.flatnonzero((shapes.prefill > 0) & (held < batch * (1.0 - SETTLE_TOLERANCE)))
    if over.size == 0:
        return batch, arrays
    shapes_over = shapes.select(over)
    settled = _held_batch(ctx, shapes_over, batch[over], tpot[over], rate[over])
    again = _split_arrays(ctx, shapes_over, settled)
    batch = batch.copy()
    batch[over] = settled

    def merged(name: str) -> np.ndarray:
        column = np.array(getattr(arrays, name), dtype=np.float64)
        column[over] = np.asarray(getattr(again, name))
        return column

    # the rate stays the prefill pool's (the decode pool at the held batch serves it, to the
    # tolerance), so points sharing a prefill pool tie on it exactly and the faster TPOT wins
    return batch, replace(
        arrays, ttft_s=merged("ttft_s"), tpot_s=merged("tpot_s"), kv_transfer_s=merged("kv_transfer_s")
    )


def _evaluate(
    ctx: ServingContext, shapes: ShapeColumns, batch: np.ndarray
) -> tuple[np.ndarray, ServingArrays]:
    """(decode batch per replica, steady state) of aggregated and disaggregated points in one pass;
    rates for the whole deployment. A split point's batch is what its decode pool holds
    (:func:`_settled_split`)."""
    aggregated = continuous(_deployments(shapes, batch), ctx)
    held, split_arrays = _settled_split(ctx, shapes, batch)
    pooled = shapes.prefill > 0

    def pick(name: str, scale: Any = 1.0) -> np.ndarray:
        return np.asarray(np.where(pooled, getattr(split_arrays, name), getattr(aggregated, name) * scale))

    arrays = ServingArrays(
        ttft_s=pick("ttft_s"),
        tpot_s=pick("tpot_s"),
        output_tokens_per_s=pick("output_tokens_per_s", shapes.decode),
        requests_per_s=pick("requests_per_s", shapes.decode),
        iteration=aggregated.iteration,
        kv_transfer_s=pick("kv_transfer_s"),
    )
    return np.asarray(np.where(pooled, held, batch)), arrays


def pareto_front(per_gpu: np.ndarray, per_user: np.ndarray) -> np.ndarray:
    """Indices of the points no other point beats on both axes, by rising per-user speed.

    >>> pareto_front(np.array([10.0, 8.0, 5.0, 4.0]), np.array([1.0, 2.0, 3.0, 2.5])).tolist()
    [0, 1, 2]
    """
    order = np.lexsort((-per_gpu, -per_user))  # fastest per user first, ties by throughput
    front, best = [], -np.inf
    for index in order:
        if per_gpu[index] > best:
            front.append(int(index))
            best = per_gpu[index]
    return np.asarray(front[::-1], dtype=np.int64)


def _plan_of(
    shapes: ShapeColumns,
    index: int,
    model: TransformerSpec,
    formats: InferencePlan,
    speculative: SpeculativeDecoding | None,
) -> InferencePlan:
    """The deployment of point ``index``, in the weight formats of ``formats``."""
    tp, dp, ep, pp = (int(getattr(shapes, name)[index]) for name in ("tp", "dp_attention", "ep", "pp"))
    prefill, decode = int(shapes.prefill[index]), int(shapes.decode[index])
    prefill_shape = None
    if shapes.own_prefill_shape[index]:
        prefill_shape = PoolShape(
            tp=int(shapes.prefill_tp[index]),
            pp=int(shapes.prefill_pp[index]),
            ep=int(shapes.prefill_ep[index]),
            dp_attention=int(shapes.prefill_dp_attention[index]),
        )
    return InferencePlan(
        tp=tp,
        pp=pp,
        ep=ep,
        dp_attention=dp,
        replicas=decode if prefill == 0 else 1,
        precision=formats.precision,
        attention_weights=formats.attention_weights,
        effective_bits=formats.effective_bits,
        kv_replication=model.attention.kind != "mla" and tp > model.attention.num_kv_heads,
        speculative=speculative,
        disaggregated=(prefill, decode) if prefill > 0 else None,
        prefill_shape=prefill_shape,
        expert_imbalance=float(shapes.expert_imbalance[index]) or None,  # None: the routing skew
        num_physical_experts=int(shapes.physical_experts[index]) or None,
    )


def _unreachable(
    model: TransformerSpec,
    cluster: Cluster,
    arrays: ServingArrays,
    shapes: ShapeColumns,
    *,
    formats: InferencePlan,
    bounds: tuple[float | None, float | None],
) -> InvalidPlanError:
    """The error when no point meets the bounds: the best TTFT and TPOT any point reaches."""
    ttft, tpot = np.asarray(arrays.ttft_s), np.asarray(arrays.tpot_s)
    fastest_first, fastest_token = int(np.argmin(ttft)), int(np.argmin(tpot))
    wanted = " and ".join(
        text
        for text in (
            f"TTFT <= {format_duration(bounds[0])}" if bounds[0] is not None else "",
            f"TPOT <= {format_duration(bounds[1])}" if bounds[1] is not None else "",
        )
        if text
    )
    first_plan = _plan_of(shapes, fastest_first, model, formats, None).describe()
    token_plan = _plan_of(shapes, fastest_token, model, formats, None).describe()
    return InvalidPlanError(
        f"no deployment of {model.name} on {cluster.name} in {formats.precision} meets {wanted}: "
        "the lowest TTFT is "
        f"{format_duration(float(ttft[fastest_first]))} ({first_plan}), "
        f"the lowest TPOT {format_duration(float(tpot[fastest_token]))} ({token_plan}); "
        "relax the bounds, shorten the prompts, or use more or faster GPUs"
    )


def _constraints(
    model: TransformerSpec,
    inference_hardware: InferenceHardware,
    max_tp: int,
    num_gpus: int,
    prefill_stages: Sequence[Stage] = (),
) -> tuple[str, ...]:
    fabric = inference_hardware.hardware.fabric
    domain = inference_hardware.hardware.domain_size
    if fabric.scale_out is not None:
        reach = (
            f"TP, EP and attention groups beyond it cross {fabric.scale_out.name}, and so do some "
            f"copies of a group whose size neither divides {domain} nor is a multiple of it (they "
            "straddle two domains); such sizes are searched, priced at the straddling copy's cost"
        )
    else:
        reach = "every group stays inside it"
    lines = [
        f"TP up to {max_tp} GPUs; the scale-up domain ({fabric.scale_up.name}) holds {domain}: {reach}",
        f"TP must divide the {model.attention.num_heads} heads"
        + (
            f" and divide or be a multiple of the {model.attention.num_kv_heads} KV heads"
            if model.attention.kind != "mla"
            else ""
        ),
        f"replicas tile the {num_gpus} GPUs; PP up to {MAX_PIPELINE} stages",
    ]
    if model.moe is not None:
        lines.append(
            f"EP must divide the {model.moe.num_routed_experts} experts and the GPUs of a stage; "
            "attention data parallelism widens a stage beyond TP"
        )
    if prefill_stages:
        shapes = ", ".join(
            PoolShape(tp=tp, pp=pp, ep=ep, dp_attention=dp).describe() for tp, dp, ep, pp in prefill_stages
        )
        lines.append(
            "a prefill pool takes the decode replicas' shape, or the first that tiles the GPUs decode "
            "leaves of those that hold the weights and one prompt within the TTFT bound and no other "
            f"beats on both prompts/s per GPU and prompt time, most prompts/s per GPU first: {shapes}"
        )
    return tuple(lines)


@dataclass(frozen=True)
class _Request:
    """What a search is asked for, shared by its steps."""

    model: TransformerSpec
    cluster: Cluster
    num_gpus: int
    load: ServingLoad
    precision: str
    bounds: tuple[float | None, float | None]
    speculative: SpeculativeDecoding | None
    expert_balance: ExpertBalance | None = None
    attention_weights: str | None = None
    effective_bits: float | None = None

    @property
    def formats(self) -> InferencePlan:
        """A plan holding only the weight formats every point of the search shares."""
        return InferencePlan(
            precision=self.precision,
            attention_weights=self.attention_weights,
            effective_bits=self.effective_bits,
        )


def prefill_front(
    ctx: ServingContext, stages: Sequence[Stage], max_ttft_s: float | None = None
) -> list[Stage]:
    """The prefill replica shapes worth a pool of their own: of ``stages`` that hold the weights
    and one prompt (and whose prompt time is within ``max_ttft_s``), those no other beats on both
    prompts per second per GPU and a prompt's time in the pool
    (:func:`~lightspeed.sol.infer.serving.prefill_pool_arrays`), fastest per GPU first. A pool's
    throughput and TTFT depend on its replicas' shape alone, so no other shape can make a split
    deployment better on either."""
    if not stages:
        return []
    tp, dp, ep, pp = (np.asarray(column, dtype=np.float64) for column in zip(*stages, strict=True))
    pools = Deployments(tp=tp, pp=pp, ep=ep, dp_attention=dp, batch=np.ones_like(tp))
    fits = np.asarray(memory_of(ctx.model, ctx.hardware, pools, ServingLoad(ctx.load.input_tokens, 1)).fits)
    prefill = prefill_pool_arrays(pools, ctx)
    ttft = np.asarray(prefill.ttft_s, dtype=np.float64)
    if max_ttft_s is not None:
        fits = fits & (ttft <= max_ttft_s)
    per_gpu = np.where(fits, np.asarray(prefill.requests_per_s) / (tp * dp * pp), -np.inf)
    front = pareto_front(per_gpu, 1.0 / ttft)
    return [stages[int(index)] for index in front if fits[index]]


def _space(
    request: _Request,
    ctx: ServingContext,
    limit: int,
    *,
    disaggregated: bool,
    attention_dp: bool,
) -> tuple[ShapeColumns, np.ndarray, list[Stage]]:
    """Every fitting (replica shape, batch) point and the prefill shapes tried beside the decode
    replicas' own (none without a split or with an expert placement, whose EP the pools share),
    or the error saying why there is none."""
    model, num_gpus, inference_hardware = request.model, request.num_gpus, ctx.hardware
    prefill_stages = []
    if disaggregated and request.expert_balance is None:
        stages = replica_stages(model, num_gpus, limit, attention_dp)
        prefill_stages = prefill_front(ctx, stages, request.bounds[0])
    shapes = shape_columns(
        replica_shapes(
            model, num_gpus, limit, disaggregated, attention_dp=attention_dp, prefill_stages=prefill_stages
        )
    )
    shapes = with_expert_balance(shapes, request.expert_balance, inference_hardware.hardware.domain_size)
    if shapes.tp.size == 0:
        raise InvalidPlanError(
            f"no TP size up to {limit} divides the {model.attention.num_heads} heads of {model.name} "
            f"and the {num_gpus} GPUs"
            + (" with an EP size that splits the physical experts" if request.expert_balance else "")
        )
    memory = memory_of(model, inference_hardware, shapes, request.load, shapes.physical_experts)
    points, batch = batch_points(shapes, memory.max_sequences)
    if batch.size == 0:
        plan = request.formats.with_changes(tp=min(limit, num_gpus))
        raise PlanDoesNotFitError(
            f"{model.name} in {request.precision} does not fit any split of the {num_gpus} GPUs of "
            f"{request.cluster.name} with {request.load.input_tokens + request.load.output_tokens} tokens "
            "per request",
            nearest_plan=smallest_fitting(model, inference_hardware, plan, request.load),
            no_fit_hint="use more GPUs or a lower precision",
        )
    return points, batch, prefill_stages


def _frontier(
    request: _Request, points: ShapeColumns, batch: np.ndarray, arrays: ServingArrays, front: np.ndarray
) -> tuple[FrontierPoint, ...]:
    per_gpu = np.asarray(arrays.output_tokens_per_s) / request.num_gpus
    plans = [_plan_of(points, int(i), request.model, request.formats, request.speculative) for i in front]
    return tuple(
        FrontierPoint(
            plan=plan.describe(),
            deployment=plan,
            batch_per_replica=float(batch[i]),
            output_tokens_per_s_per_gpu=float(per_gpu[i]),
            output_tokens_per_s_per_user=1.0 / float(arrays.tpot_s[i]),
            ttft_s=float(arrays.ttft_s[i]),
            tpot_s=float(arrays.tpot_s[i]),
        )
        for i, plan in zip(front, plans, strict=True)
    )


def _feasible(request: _Request, arrays: ServingArrays) -> tuple[np.ndarray, np.ndarray]:
    """(points within the TTFT bound, points within both bounds)."""
    ttft, tpot = np.asarray(arrays.ttft_s), np.asarray(arrays.tpot_s)
    max_ttft, max_tpot = request.bounds
    meets_ttft = ttft <= max_ttft if max_ttft is not None else np.ones_like(ttft, dtype=bool)
    return meets_ttft, meets_ttft & (tpot <= max_tpot if max_tpot is not None else True)


def _best_per_shape(
    shapes: ShapeColumns, per_gpu: np.ndarray, feasible: np.ndarray
) -> tuple[np.ndarray, int]:
    """(each replica shape's feasible point of the most tokens/s per GPU, best first; the number of
    shapes with no feasible point): a shape is a point's whole row but its batch."""
    columns = np.stack(
        [np.asarray(getattr(shapes, name), dtype=np.float64) for name in shapes.__dataclass_fields__]
    )
    if not columns.size:
        return np.asarray([], dtype=np.int64), 0
    _, shape_of = np.unique(columns.T, axis=0, return_inverse=True)
    shape_of = np.asarray(shape_of).reshape(-1)
    order = np.lexsort((-per_gpu, ~feasible, shape_of))  # per shape: feasible first, then fastest
    first = order[np.r_[True, shape_of[order][1:] != shape_of[order][:-1]]]
    chosen = first[feasible[first]]
    return chosen[np.argsort(-per_gpu[chosen], kind="stable")], int(first.size - chosen.size)


def _select(
    request: _Request, points: ShapeColumns, arrays: ServingArrays, frontier_points: int
) -> tuple[int, np.ndarray, int]:
    """(index of the best feasible point, indices of the frontier, number feasible)."""
    per_gpu = np.asarray(arrays.output_tokens_per_s) / request.num_gpus
    tpot = np.asarray(arrays.tpot_s)
    meets_ttft, feasible = _feasible(request, arrays)
    if not feasible.any():
        raise _unreachable(
            request.model, request.cluster, arrays, points, formats=request.formats, bounds=request.bounds
        )
    best = int(np.argmax(np.where(feasible, per_gpu, -np.inf)))
    front = pareto_front(np.where(meets_ttft, per_gpu, -np.inf), 1.0 / tpot)
    front = front[meets_ttft[front]]
    if front.size > frontier_points:
        front = front[np.linspace(0, front.size - 1, frontier_points).round().astype(int)]
    return best, front, int(feasible.sum())


def _gpus(cluster: Cluster, num_gpus: int | None) -> int:
    """GPUs the search may use: all of the cluster, or part of a single node or rack."""
    total = cluster.num_accelerators
    if num_gpus is None or num_gpus == total:
        return total
    if num_gpus > total or cluster.num_nodes > 1:
        raise InvalidPlanError(_partial_nodes_message(cluster, num_gpus))
    return num_gpus


def _partial_nodes_message(cluster: Cluster, num_gpus: int) -> str:
    """Why ``num_gpus`` cannot be searched on ``cluster``, with the systems that can hold a search."""
    system = cluster.system
    per_node = system.num_accelerators
    nodes = sorted({max(num_gpus // per_node, 1), -(-num_gpus // per_node)})
    options = [
        f"--system {count}x{system.name} without --gpus ({count * per_node} GPUs)"
        for count in nodes
        if count > 1
    ]
    options.append(f"--system {system.name} --gpus {min(num_gpus, per_node)}")
    return (
        f"--gpus {num_gpus}: {num_gpus} GPUs are {num_gpus / per_node:g} {system.name} nodes of "
        f"{per_node} GPUs, and a serving search places a deployment on every GPU of whole nodes or on "
        "part of one node; use " + " or ".join(options)
    )


def auto_precision(cluster: Cluster) -> str:
    """The narrowest format the GPU has tensor cores for: NVFP4, FP8, else BF16/FP16.

    >>> from lightspeed.catalog import load_catalog
    >>> catalog = load_catalog()
    >>> auto_precision(catalog.cluster("gb200-nvl72")), auto_precision(catalog.cluster("dgx-a100"))
    ('nvfp4', 'bf16')
    """
    compute = cluster.system.accelerator.compute
    for precision in AUTO_PRECISIONS:
        row = "fp4" if precision == "nvfp4" else precision
        if row in compute:
            return precision
    return "fp32"


def serving_precision(precision: str, *, model: TransformerSpec, cluster: Cluster) -> str:
    """A serving weight format as ``--precision`` reads it: a format as given; ``released`` the
    format ``model``'s checkpoint is published in (the CLI's default, ``TransformerSpec.release_format``);
    ``auto`` the narrowest the GPU computes in (:func:`auto_precision`).

    >>> from lightspeed.catalog import load_catalog
    >>> from lightspeed.workload import load_models
    >>> serving_precision("released", model=load_models().get("gpt-oss-120b"),
    ...                   cluster=load_catalog().cluster("dgx-h100"))
    'mxfp4'
    """
    check_kind("precision", precision, str, "a format such as 'fp8', or 'released' or 'auto'", what="text")
    if precision == "released":
        LOG.info("precision released: %s (the format %s is published in)", model.release_format, model.name)
        return model.release_format
    if precision != "auto":
        if precision not in INFERENCE_PRECISIONS:
            raise InvalidPlanError(
                f"precision {precision!r} is not one of {', '.join(INFERENCE_PRECISIONS)}, released (the "
                "checkpoint's format) or auto (the narrowest the GPU computes in)"
            )
        return precision
    chosen = auto_precision(cluster)
    LOG.info(
        "precision auto: %s (the narrowest format %s computes in)", chosen, cluster.system.accelerator.name
    )
    return chosen


def _check_kinds(model: object, cluster: object, load: object) -> None:
    """Refuse a name where the search takes the model or cluster itself, or a load that is none."""
    check_kind("model", model, TransformerSpec, "lightspeed.model('llama-3-70b')")
    check_kind("cluster", cluster, Cluster, "lightspeed.cluster('dgx-h100', num_gpus=8)")
    check_kind("load", load, ServingLoad, "lightspeed.ServingLoad(input_tokens=1024, output_tokens=128)")


def _check_bounds(
    *, max_ttft_s: float | None, max_tpot_s: float | None, max_tp: int | None, num_gpus: int | None
) -> None:
    """The latency bounds as ``--max-ttft``/``--max-tpot`` hold them (finite, above 0, at most a
    century: ``None`` is no bound, ``inf`` is refused), the degrees as ``--gpus`` (docs/limits.md)."""
    for label, bound in (("max_ttft_s", max_ttft_s), ("max_tpot_s", max_tpot_s)):
        if bound is not None:
            check_number(label, bound, above=0.0, maximum=MAX_DURATION_S, error=InvalidPlanError)
    for label, count in (("max_tp", max_tp), ("num_gpus", num_gpus)):
        if count is not None:
            check_whole(label, count, maximum=MAX_ACCELERATORS, error=InvalidPlanError)


def search_inference(
    *,
    model: TransformerSpec,
    cluster: Cluster,
    load: ServingLoad,
    precision: str = "released",
    max_ttft_s: float | None = None,
    max_tpot_s: float | None = None,
    efficiency: EfficiencyModel | None = None,
    speculative: SpeculativeDecoding | None = None,
    disaggregated: bool = False,
    attention_dp: bool = True,
    max_tp: int | None = None,
    num_gpus: int | None = None,
    frontier_points: int = 24,
    expert_balance: ExpertBalance | None = None,
    serving: str | ServingStack | None = None,
    attention_weights: str | None = None,
    effective_bits: float | None = None,
) -> InferenceSearchResult:
    """Best deployment of ``model`` on ``cluster`` under the latency bounds, and the Pareto frontier.

    Every replica shape that tiles the cluster (TP up to ``max_tp``, default the
    scale-up domain) and every batch up to its KV-cache limit is tried, with
    prefill/decode pool splits too when ``disaggregated`` and attention data
    parallelism for MoE models when ``attention_dp``. ``num_gpus`` uses part of a
    single-node cluster (default: every GPU). ``precision`` is the weight format, or ``released``
    (the default, as the CLI's: the format the model is published in) or ``auto``
    (:func:`serving_precision`). ``expert_balance`` gives each shape the
    expert imbalance of its EP layout and its redundant experts. ``serving`` names the server
    profile (``sol/data/stacks.toml``, default the current TensorRT-LLM); ``attention_weights`` the
    attention projections' format (default: as :class:`InferencePlan`); ``effective_bits`` a
    per-layer mixed checkpoint (as :class:`InferencePlan`). ``max_ttft_s``/``max_tpot_s`` are
    seconds, finite and above 0, ``None`` for no bound (``nan``, ``0`` and ``inf`` are refused, as
    ``--max-ttft`` refuses them). Raises :class:`~lightspeed.errors.InvalidPlanError` when a bound
    or a degree is out of range, or nothing fits or meets the bounds.

    >>> from lightspeed.catalog import load_catalog
    >>> from lightspeed.workload import load_models
    >>> result = search_inference(model=load_models().get("llama-3-8b"),
    ...     cluster=load_catalog().cluster("dgx-h100"), load=ServingLoad(1024, 256),
    ...     precision="fp8", max_tpot_s=0.030)
    >>> result.best.tpot_s <= 0.030 and result.best.num_gpus == 8
    True
    """
    started = time.perf_counter()
    _check_kinds(model, cluster, load)
    _check_bounds(max_ttft_s=max_ttft_s, max_tpot_s=max_tpot_s, max_tp=max_tp, num_gpus=num_gpus)
    precision = serving_precision(precision, model=model, cluster=cluster)
    # a learned position table the requests run past is refused before the search (the best
    # deployment's estimate notes a context above the model's)
    check_context(model, load.input_tokens + load.output_tokens, what="isl+osl")
    gpus = _gpus(cluster, num_gpus)
    request = _Request(
        model,
        cluster,
        gpus,
        load,
        precision,
        (max_ttft_s, max_tpot_s),
        speculative,
        expert_balance,
        attention_weights,
        effective_bits,
    )
    inference_hardware = inference_hardware_for(cluster, request.formats, efficiency, serving, model=model)
    limit = max_tp or inference_hardware.hardware.domain_size
    ctx = ServingContext(model, inference_hardware, load, speculative)
    points, batch, prefill_stages = _space(
        request, ctx, limit, disaggregated=disaggregated, attention_dp=attention_dp
    )
    batch, arrays = _evaluate(ctx, points, batch)
    best, front, num_feasible = _select(request, points, arrays, frontier_points)
    per_shape, num_infeasible = _best_per_shape(
        points, np.asarray(arrays.output_tokens_per_s) / request.num_gpus, _feasible(request, arrays)[1]
    )
    plan = _plan_of(points, best, model, request.formats, speculative)
    estimate = estimate_inference(
        model=model,
        cluster=cluster,
        plan=plan,
        load=_load_at(plan, load, arrays, batch, best),
        efficiency=efficiency,
        serving=inference_hardware.serving,
    )
    return InferenceSearchResult(
        model=model.name,
        system=cluster.name,
        num_gpus=request.num_gpus,
        load=load,
        max_ttft_s=max_ttft_s,
        max_tpot_s=max_tpot_s,
        num_points_evaluated=int(batch.size),
        num_points_feasible=num_feasible,
        elapsed_s=time.perf_counter() - started,
        best=estimate,
        frontier=_frontier(request, points, batch, arrays, front),
        constraints=_constraints(model, inference_hardware, limit, request.num_gpus, prefill_stages),
        feasible_shapes=_frontier(request, points, batch, arrays, per_shape[:frontier_points]),
        num_shapes_infeasible=num_infeasible,
    )


def _load_at(
    plan: InferencePlan, load: ServingLoad, arrays: ServingArrays, batch: np.ndarray, best: int
) -> ServingLoad:
    """The load under which ``plan infer`` decodes the ``best`` point as the search ranked it (its
    batch, TTFT, TPOT and rate): its replicas' batches in flight (``--concurrency``); with separate
    pools, the rate the point serves (``--arrival-rate``), the open loop the search evaluates (a
    closed loop's whole number of users would add a fraction of a user's wait to the TTFT, or take
    it from the rate)."""
    if plan.disaggregated is None:
        users = max(round(float(batch[best]) * plan.replicas), 1)
        return ServingLoad(load.input_tokens, load.output_tokens, concurrency=users)
    rate = float(np.asarray(arrays.requests_per_s)[best])
    return ServingLoad(load.input_tokens, load.output_tokens, arrival_rate_per_s=rate)


__all__ = [
    "AUTO_PRECISIONS",
    "DraftDepth",
    "FrontierPoint",
    "InferenceSearchResult",
    "auto_precision",
    "pareto_front",
    "prefill_front",
    "search_inference",
    "serving_precision",
]
