"""``estimate_inference``: one serving deployment under one load, with its bound.

>>> from lightspeed.catalog import load_catalog
>>> from lightspeed.workload import load_models
>>> cluster = load_catalog().cluster("dgx-h100")
>>> estimate = estimate_inference(model=load_models().get("llama-3-8b"), cluster=cluster,
...     plan=InferencePlan(tp=1, replicas=8, precision="fp8"),
...     load=ServingLoad(input_tokens=1000, output_tokens=1000))
>>> 5_000 < estimate.output_tokens_per_s_per_gpu < 50_000
True

The serving engine's twin of :mod:`lightspeed.sol.train.estimate` (the same concept for training).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from typing import Any, Final, NoReturn

import numpy as np

from lightspeed.catalog import Cluster
from lightspeed.errors import InvalidPlanError, PlanDoesNotFitError
from lightspeed.limits import check_kind
from lightspeed.records import JsonDict, Record
from lightspeed.sol.core import collectives
from lightspeed.sol.core.efficiency import EfficiencyModel
from lightspeed.sol.core.serving_stacks import ServingStack
from lightspeed.sol.core.uncertainty import Band, model_interval
from lightspeed.sol.infer.estimate_notes import (
    assumption_lines,
    attention_note,
    bound_sentence,
    routing_note,
    state_note,
)
from lightspeed.sol.infer.inference_hardware import InferenceHardware, inference_hardware_for
from lightspeed.sol.infer.memory import MemoryArrays, memory_of, smallest_fitting
from lightspeed.sol.infer.plan import (
    InferencePlan,
    Precisions,
    ServingLoad,
    validate_inference_plan,
)
from lightspeed.sol.infer.serving import (
    BATCHING_MODES,
    Deployments,
    PoolSplit,
    ServingArrays,
    ServingContext,
    continuous,
    decode_only,
    disaggregated,
    static,
)
from lightspeed.units import format_memory
from lightspeed.workload import TransformerSpec, check_context, kv_bytes_per_token_at

LOG = logging.getLogger(__name__)

ARRIVAL_GRID_POINTS = 96


@dataclass(frozen=True)
class InferenceEstimate(Record):
    """What one serving deployment reaches under one load.

    Times in seconds, rates per second, memory in bytes per GPU of the busiest
    stage. ``batch_per_replica`` is the mean number of sequences in flight on a
    (decode) replica, ``max_batch`` the most it can hold and ``max_batch_limit`` what
    sets that most (``kv cache``, ``server cap`` or ``max batch``: the plan's own).
    ``iteration_breakdown_s`` splits one steady stage iteration (decode with
    prefill riding along, or pure decode) and sums to ``iteration_s``.
    ``intervals`` holds the error bars (``level`` of the published rows of the
    same family landed inside them) of TTFT, TPOT and the throughputs;
    ``serving`` names the server profile assumed. A disaggregated deployment's
    ``kv_transfer_s`` moves one prompt's KV cache from a prefill to a decode replica over
    ``kv_transfer_link`` (the fabric level the split crosses), whose one-way bandwidth per GPU is
    ``kv_transfer_link_bytes_per_s`` (before the fabric's efficiency).
    """

    model: str
    system: str
    num_gpus: int
    plan: InferencePlan
    load: ServingLoad
    batching: str
    precisions: Precisions
    batch_per_replica: float
    max_batch: int
    concurrency: float
    ttft_s: float
    tpot_s: float
    output_tokens_per_s: float
    output_tokens_per_s_per_gpu: float
    output_tokens_per_s_per_user: float
    requests_per_s: float
    iteration_s: float
    iteration_breakdown_s: dict[str, float]
    kv_transfer_s: float | None
    memory_bytes: dict[str, float]
    usable_memory_bytes: float
    bound: str
    bound_part: str
    assumptions: tuple[str, ...]
    serving: str = ""
    intervals: JsonDict = field(default_factory=dict)
    max_batch_limit: str = "kv cache"
    kv_transfer_link: str | None = None
    kv_transfer_link_bytes_per_s: float | None = None

    def summary(self) -> JsonDict:
        """The ``plan infer --json`` contract's headline keys."""
        return {
            "ttft_s": self.ttft_s,
            "tpot_s": self.tpot_s,
            "output_tokens_per_s": self.output_tokens_per_s,
            "output_tokens_per_s_per_gpu": self.output_tokens_per_s_per_gpu,
            "output_tokens_per_s_per_user": self.output_tokens_per_s_per_user,
            "max_batch": self.max_batch,
            "max_batch_limit": self.max_batch_limit,
            "bound": self.bound,
            "intervals": self.intervals,
        }


def deployments_of(plan: InferencePlan, batch: float | np.ndarray) -> Deployments:
    """The one-deployment arrays of ``plan`` with ``batch`` sequences per (decode) replica."""
    size = np.asarray(batch, dtype=np.float64).shape or (1,)

    def column(value: float) -> np.ndarray:
        return np.full(size, float(value))

    return Deployments(
        tp=column(plan.tp),
        pp=column(plan.pp),
        ep=column(plan.ep),
        dp_attention=column(plan.dp_attention),
        batch=np.asarray(batch, dtype=np.float64).reshape(size),
        expert_imbalance=column(plan.expert_imbalance or 0.0),  # 0: the routing skew
        physical_experts=column(plan.num_physical_experts or 0),
    )


def deployment_memory(
    model: TransformerSpec, inference_hardware: InferenceHardware, plan: InferencePlan, load: ServingLoad
) -> MemoryArrays:
    """Memory arrays (length one) of ``plan`` serving ``load``."""
    return memory_of(
        model, inference_hardware, deployments_of(plan, 1.0), load, float(plan.num_physical_experts or 0)
    )


def check_prefill_pool(
    model: TransformerSpec, inference_hardware: InferenceHardware, plan: InferencePlan, load: ServingLoad
) -> None:
    """A prefill pool of its own shape must hold the weights and one prompt, as the decode replicas
    are checked (:func:`deployment_memory`); nothing to check where the pools share a shape."""
    if plan.prefill_shape is None:
        return
    prefill_plan = plan.prefill_plan
    memory = deployment_memory(model, inference_hardware, prefill_plan, ServingLoad(load.input_tokens, 1))
    if not bool(memory.fits[0]):
        try:
            raise_not_fitting(
                model, inference_hardware, prefill_plan, ServingLoad(load.input_tokens, 1), memory
            )
        except InvalidPlanError as error:
            raise InvalidPlanError(
                f"the prefill pool: {error} (its degrees: --prefill-tp, --prefill-pp, --prefill-ep, "
                "--prefill-dp-attention)"
            ) from None


def pool_split(
    plan: InferencePlan, inference_hardware: InferenceHardware, model: TransformerSpec, load: ServingLoad
) -> PoolSplit:
    """Prefill and decode pools of a disaggregated plan, placed in rank order (prefill first).

    A prompt's whole KV cache moves (what its layers hold at the prompt's length: local
    layers only their window or chunk); the ``tp x pp`` GPUs of its attention group
    each send their share at once.
    """
    assert plan.disaggregated is not None
    prefill, decode = plan.disaggregated
    shape = plan.prefill_shape
    senders = plan.tp * plan.pp if shape is None else min(shape.tp * shape.pp, plan.tp * plan.pp)
    return PoolSplit(
        prefill_replicas=prefill,
        decode_replicas=decode,
        gpus_per_replica=np.asarray([float(senders)]),
        kv_bytes_per_token_per_replica=np.asarray(
            [kv_bytes_per_token_at(model, inference_hardware.precisions.kv_cache, load.input_tokens)],
            dtype=np.float64,
        ),
        crosses_domains=np.asarray([plan.num_gpus > inference_hardware.hardware.domain_size]),
        prefill_shape=None if shape is None else (shape.tp, shape.pp, shape.ep, shape.dp_attention),
    )


def serve(
    ctx: ServingContext,
    plan: InferencePlan,
    batch: Any,
    batching: str,
    split: PoolSplit | None,
    *,
    users: float | None = None,
) -> ServingArrays:
    """Steady state of ``plan`` at ``batch`` sequences per (decode) replica, any batching mode
    (``users``: a disaggregated plan's closed loop, see :func:`disaggregated`)."""
    deployments = deployments_of(plan, batch)
    if split is not None:
        return disaggregated(deployments, ctx, split, users)
    if batching == "static":
        return static(deployments, ctx)
    if batching == "decode":
        return decode_only(deployments, ctx)
    return continuous(deployments, ctx)


def _scalar(value: Any) -> float:
    return float(np.asarray(value, dtype=np.float64).reshape(-1)[0])


def _serving_replicas(plan: InferencePlan) -> int:
    """Replicas whose rates add up (a disaggregated deployment reports its own total)."""
    return 1 if plan.disaggregated is not None else plan.replicas


def _decode_replicas(plan: InferencePlan) -> int:
    return plan.disaggregated[1] if plan.disaggregated is not None else plan.replicas


# A wanted rate this close above the most a deployment serves is that most (a search's point at its
# limit, evaluated in another vector, may differ from it in the last digits)
RATE_TOLERANCE: Final = 1e-9
# Finer grids between the two points of the last that bracket a wanted rate
RATE_REFINEMENTS: Final = 2


def _first_batch_at(rates: np.ndarray, batches: np.ndarray, wanted: float) -> float:
    """The smallest batch of ``batches`` (rising, their ``rates`` not falling) that serves ``wanted``,
    linear between the two grid points around it (a flat stretch of rates answers its start)."""
    upper = int(np.searchsorted(rates, wanted))
    if upper == 0:
        return float(np.interp(wanted, rates, batches))
    upper = min(upper, rates.size - 1)
    low, high = rates[upper - 1], rates[upper]
    share = (wanted - low) / (high - low) if high > low else 1.0
    return float(batches[upper - 1] + min(max(share, 0.0), 1.0) * (batches[upper] - batches[upper - 1]))


def _batch_for_rate(
    ctx: ServingContext, plan: InferencePlan, max_batch: float, batching: str, split: PoolSplit | None
) -> float:
    """Sequences per replica at which the deployment serves ``load.arrival_rate_per_s``: the fewest
    that do (where the prefill pool bounds a split deployment's rate, more decode no faster)."""
    wanted = ctx.load.arrival_rate_per_s
    assert wanted is not None
    batches = np.geomspace(1e-3, max_batch, ARRIVAL_GRID_POINTS)
    arrays = serve(ctx, plan, batches, batching, split)
    # The rate grows with the batch; the running maximum keeps the inversion well defined where it
    # flattens (a batch that buys no rate is never the answer).
    rates = np.maximum.accumulate(np.asarray(arrays.requests_per_s) * _serving_replicas(plan))
    if wanted > rates[-1] * (1.0 + RATE_TOLERANCE):
        needed = int(np.ceil(wanted / rates[-1] * plan.num_replicas))
        raise InvalidPlanError(
            f"{wanted:g} requests/s exceed what {plan.describe()} can serve ({rates[-1]:.3g} requests/s at "
            f"its KV-cache limit of {max_batch:g} sequences per replica); use about {needed} replicas, "
            "more GPUs per replica, or a lower precision"
        )
    wanted = min(wanted, float(rates[-1]))
    # the rate is concave in the batch (and kinks where a prefill pool bounds it), so a chord
    # between two grid points under-reads it: finer grids between the two that bracket the wanted
    # rate take the inversion to 1e-6 of the batch
    for _ in range(RATE_REFINEMENTS):
        upper = int(np.searchsorted(rates, wanted))
        if upper == 0:
            break
        batches = np.linspace(batches[upper - 1], batches[min(upper, batches.size - 1)], ARRIVAL_GRID_POINTS)
        rates = np.maximum.accumulate(
            np.asarray(serve(ctx, plan, batches, batching, split).requests_per_s) * _serving_replicas(plan)
        )
        wanted = min(wanted, float(rates[-1]))
    return _first_batch_at(rates, batches, wanted)


def _batch_and_queue(
    ctx: ServingContext, plan: InferencePlan, max_batch: float, batching: str, split: PoolSplit | None
) -> tuple[float, float]:
    """(sequences per replica, requests waiting per replica for a free slot)."""
    load = ctx.load
    if load.arrival_rate_per_s is not None:
        return _batch_for_rate(ctx, plan, max_batch, batching, split), 0.0
    if load.concurrency is None:
        return max_batch, 0.0
    per_replica = load.concurrency / _decode_replicas(plan)
    return min(per_replica, max_batch), max(per_replica - max_batch, 0.0)


# Rounds at most of the fixed point between a disaggregated closed loop's decode batch and its
# TPOT (each round takes the batch's error down several times; it stops within 0.1%)
CLOSED_LOOP_ROUNDS: Final = 10


@dataclass(frozen=True)
class _ClosedLoop:
    """A disaggregated deployment under a closed loop of users: what the decode replicas hold,
    the steady state at that batch, the requests per second and a user's TTFT."""

    batch: float
    arrays: ServingArrays
    requests_per_s: float
    ttft_s: float


def _disaggregated_closed_loop(
    ctx: ServingContext, plan: InferencePlan, users: float, max_batch: float, split: PoolSplit
) -> _ClosedLoop:
    """``users`` requests always in flight over separate prefill and decode pools.

    Each user's request is either in the prefill pool (waiting or running), crossing to the
    decode pool, or decoding, so Little's law holds over the whole loop: ``users = rate x
    (TTFT + (OSL - 1) x TPOT)``. The rate is what the loop's cycle allows (a prompt's time in
    idle-enough pools, then its decode), at most what the pools serve; the decode replicas hold
    ``rate x (OSL - 1) x TPOT / D`` sequences of it (a fixed point: TPOT falls with that batch),
    and where the prefill pool bounds the rate the rest queue for a prefill, which their TTFT
    carries.
    """
    decoders = _decode_replicas(plan)
    decode_steps = max(ctx.load.output_tokens - 1, 1)
    batch = min(users / decoders, max_batch)
    for _ in range(CLOSED_LOOP_ROUNDS):
        arrays = serve(ctx, plan, batch, "continuous", split, users=users)
        decode_s = decode_steps * _scalar(arrays.tpot_s)
        rate = min(_scalar(arrays.requests_per_s), users / (_scalar(arrays.ttft_s) + decode_s))
        decoding = min(users / decoders, max_batch, rate * decode_s / decoders)  # Little's law
        if math.isclose(decoding, batch, rel_tol=1e-3):
            break
        batch = decoding
    return _ClosedLoop(batch=batch, arrays=arrays, requests_per_s=rate, ttft_s=users / rate - decode_s)


def _max_batch_limit(memory: MemoryArrays, plan: InferencePlan) -> str:
    """What sets :func:`_max_batch`: the plan's ``max_batch``, the server's own cap or the KV cache."""
    kv = float(memory.kv_sequences[0])
    if plan.max_batch is not None:
        return "max batch" if plan.max_batch < kv else "kv cache"
    return "server cap" if float(memory.max_sequences[0]) < kv else "kv cache"


def _max_batch(memory: MemoryArrays, plan: InferencePlan) -> float:
    """Sequences per replica: the user's cap within the KV cache, else the server's defaults."""
    if plan.max_batch is not None:
        return min(float(memory.kv_sequences[0]), float(plan.max_batch))
    return float(memory.max_sequences[0])


def check_gpus(plan: InferencePlan, cluster: Cluster) -> None:
    """The plan must use the whole cluster, or part of a single node or rack."""
    gpus = cluster.num_accelerators
    if plan.num_gpus == gpus or (cluster.num_nodes == 1 and plan.num_gpus < gpus):
        return
    per_replica = plan.gpus_per_replica
    if plan.num_gpus > gpus:
        raise InvalidPlanError(_too_few_gpus_message(plan, cluster))
    node_gpus = gpus // cluster.num_nodes
    advice = []
    if gpus % per_replica == 0:
        unit = "GPU" if per_replica == 1 else "GPUs"
        advice.append(f"--gpus {gpus} ({gpus // per_replica} replicas of {per_replica} {unit})")
    if per_replica <= node_gpus:
        advice.append(f"--gpus {node_gpus // per_replica * per_replica} or fewer, on one node")
    fix = " or ".join(advice) if advice else "a cluster whose GPU count is a multiple of the replica's"
    raise InvalidPlanError(
        f"the plan uses {plan.num_gpus} of the {gpus} GPUs of {cluster.name} and a multi-node cluster "
        f"is used whole; fix: pass {fix}"
    )


def _counted(count: int, noun: str) -> str:
    """``1 GPU``, ``2 GPUs``."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _too_few_gpus_message(plan: InferencePlan, cluster: Cluster) -> str:
    """Why ``plan`` does not fit the GPUs of ``cluster``, and the fix: fewer replicas, where some fit,
    else a bigger system; a disaggregated split needs a prefill and a decode replica at least."""
    gpus = cluster.num_accelerators
    bigger = f"a system of at least {_counted(plan.num_gpus, 'GPU')} (--system)"
    if plan.disaggregated is None:
        fitting = gpus // plan.gpus_per_replica
        fix = (
            f"--replicas {fitting} or fewer, or {bigger}"
            if fitting >= 1
            else f"fewer GPUs per replica (tp x dp-attention x pp) or {bigger}"
        )
        return (
            f"the plan needs {_counted(plan.num_gpus, 'GPU')} ({plan.describe()}) and {cluster.name} has "
            f"{gpus}; fix: {fix}"
        )
    prefill, decode = plan.disaggregated
    prefill_gpus, decode_gpus = plan.prefill_plan.gpus_per_replica, plan.gpus_per_replica
    smallest = prefill_gpus + decode_gpus  # one prefill and one decode replica
    if smallest <= gpus:
        fix = f"a split whose pools fit the {gpus} GPUs (1:1 takes {smallest}) or {bigger}"
    else:
        fix = f"a system of at least {_counted(smallest, 'GPU')} (--system) or no --disaggregated"
    return (
        f"the disaggregated split {prefill}:{decode} needs {_counted(plan.num_gpus, 'GPU')} "
        f"({_counted(prefill, 'prefill replica')} of {_counted(prefill_gpus, 'GPU')} and "
        f"{_counted(decode, 'decode replica')} of {_counted(decode_gpus, 'GPU')}) and {cluster.name} has "
        f"{gpus}; fix: {fix}"
    )


def raise_not_fitting(
    model: TransformerSpec,
    inference_hardware: InferenceHardware,
    plan: InferencePlan,
    load: ServingLoad,
    memory: MemoryArrays,
) -> NoReturn:
    """Raise :class:`PlanDoesNotFitError`: what does not fit, by how much, and a plan that would."""
    weights = float(memory.weights_bytes[0])
    other = float(memory.workspace_bytes[0] + memory.reserved_bytes[0])
    request = float(memory.kv_bytes_per_sequence[0])
    message = (
        f"{model.name} in {plan.precision} does not fit {plan.describe()} on "
        f"{inference_hardware.hardware.accelerator.name}: {format_memory(weights)} of weights + "
        f"{format_memory(other)} of workspace and runtime reserve per GPU leave "
        f"{format_memory(float(memory.kv_capacity_bytes[0]))} of KV cache, and one "
        f"{load.input_tokens + load.output_tokens}-token request needs "
        f"{format_memory(request)} per GPU ({format_memory(memory.usable_bytes)} usable)"
    )
    raise PlanDoesNotFitError(
        message,
        nearest_plan=smallest_fitting(model, inference_hardware, plan, load),
        no_fit_hint="no split of one node fits: use more GPUs per replica or a lower precision",
    )


def _memory_parts(
    memory: MemoryArrays, batch: float, plan: InferencePlan, load: ServingLoad
) -> dict[str, float]:
    in_use = float(memory.kv_bytes_per_sequence[0]) * batch / plan.dp_attention
    return {
        "weights": float(memory.weights_bytes[0]),
        "kv_cache": min(in_use, float(memory.kv_capacity_bytes[0])),
        "kv_cache_per_request": float(memory.kv_bytes_per_sequence[0]),
        "kv_capacity": float(memory.kv_capacity_bytes[0]),
        "workspace": float(memory.workspace_bytes[0]),
        "reserved": float(memory.reserved_bytes[0]),
    }


def estimate_inference(
    *,
    model: TransformerSpec,
    cluster: Cluster,
    plan: InferencePlan,
    load: ServingLoad,
    efficiency: EfficiencyModel | None = None,
    batching: str = "continuous",
    num_gpus: int | None = None,
    serving: str | ServingStack | None = None,
) -> InferenceEstimate:
    """Predict one serving deployment under one load (see :class:`InferenceEstimate`).

    ``batching`` is ``continuous``, ``static`` or ``decode`` (a decode pool on its
    own); ``serving`` names the server profile (``sol/data/stacks.toml``, default
    the current TensorRT-LLM). Raises :class:`~lightspeed.errors.InvalidPlanError`
    if the plan cannot exist, does not fit, or cannot sustain the requested
    arrival rate; :class:`~lightspeed.errors.PlanMismatchError` if it does not use
    exactly ``num_gpus`` GPUs (when given: the GPUs a user asked for).
    """
    check_kind("model", model, TransformerSpec, "lightspeed.model('llama-3-70b')")
    check_kind("cluster", cluster, Cluster, "lightspeed.cluster('dgx-h100', num_gpus=8)")
    check_kind("plan", plan, InferencePlan, "lightspeed.InferencePlan(tp=8)")
    check_kind("load", load, ServingLoad, "lightspeed.ServingLoad(input_tokens=1024, output_tokens=128)")
    _check(model, cluster, plan, load, batching, num_gpus=num_gpus)
    context = check_context(model, load.input_tokens + load.output_tokens, what="isl+osl")
    inference_hardware = inference_hardware_for(cluster, plan, efficiency, serving, model=model)
    LOG.debug("estimate on the %s serving profile", inference_hardware.serving.name)
    memory = deployment_memory(model, inference_hardware, plan, load)
    if not bool(memory.fits[0]):
        raise_not_fitting(model, inference_hardware, plan, load, memory)
    check_prefill_pool(model, inference_hardware, plan, load)
    max_batch = _max_batch(memory, plan)
    split = pool_split(plan, inference_hardware, model, load) if plan.disaggregated is not None else None
    ctx = ServingContext(model, inference_hardware, load, plan.speculative)
    batch, waiting = _batch_and_queue(ctx, plan, max_batch, batching, split)
    arrays = serve(ctx, plan, batch, batching, split)
    rate = _scalar(arrays.requests_per_s) * _serving_replicas(plan)
    decoders = _decode_replicas(plan)
    ttft = _scalar(arrays.ttft_s) + waiting / (rate / decoders)  # queued requests wait for a slot
    if split is not None and load.concurrency is not None:
        loop = _disaggregated_closed_loop(ctx, plan, load.concurrency, max_batch, split)
        batch, waiting = loop.batch, load.concurrency / decoders - loop.batch
        arrays, rate, ttft = loop.arrays, loop.requests_per_s, loop.ttft_s
    tpot = _scalar(arrays.tpot_s)
    in_flight = (batch + waiting) * decoders
    if split is not None and load.concurrency is None:
        # Little's law over both pools: each request is in the prefill pool, crossing, or decoding
        in_flight = rate * (ttft + max(load.output_tokens - 1, 1) * tpot)
    parts = {name: _scalar(value) for name, value in arrays.iteration.parts.items()}
    sentence, part = bound_sentence(parts, inference_hardware, plan)
    mode = "disaggregated" if split is not None else batching
    band = model_interval("infer", model, inference_hardware.hardware.accelerator.architecture)
    return InferenceEstimate(
        model=model.name,
        system=cluster.name,
        num_gpus=plan.num_gpus,
        plan=plan,
        load=load,
        batching=mode,
        precisions=inference_hardware.precisions,
        batch_per_replica=batch,
        max_batch=int(max_batch),
        max_batch_limit=_max_batch_limit(memory, plan),
        concurrency=in_flight,
        ttft_s=ttft,
        tpot_s=tpot,
        output_tokens_per_s=rate * load.output_tokens,
        output_tokens_per_s_per_gpu=rate * load.output_tokens / plan.num_gpus,
        output_tokens_per_s_per_user=1.0 / tpot,
        requests_per_s=rate,
        iteration_s=sum(parts.values()),
        iteration_breakdown_s=parts,
        kv_transfer_s=_scalar(arrays.kv_transfer_s) if split is not None else None,
        kv_transfer_link=None if split is None else _kv_link(split, inference_hardware)[0],
        kv_transfer_link_bytes_per_s=None if split is None else _kv_link(split, inference_hardware)[1],
        memory_bytes=_memory_parts(memory, batch, plan, load),
        usable_memory_bytes=memory.usable_bytes,
        bound=sentence,
        bound_part=part,
        assumptions=(
            *context,
            *assumption_lines(inference_hardware, plan, mode, bool(np.asarray(memory.kv_share_raised).any())),
            *attention_note(parts),
            *routing_note(model, inference_hardware, plan),
            *state_note(model),
        ),
        serving=inference_hardware.serving.name,
        intervals=_intervals(band, ttft=ttft, tpot=tpot, rate=rate * load.output_tokens, gpus=plan.num_gpus),
    )


def _kv_link(split: PoolSplit, inference_hardware: InferenceHardware) -> tuple[str, float]:
    """The fabric level a prompt's KV cache crosses from its prefill to its decode replica, and that
    level's one-way bandwidth per GPU (:func:`~lightspeed.sol.infer.serving.kv_transfer_s`)."""
    fabric = inference_hardware.hardware.fabric
    crosses = bool(np.asarray(split.crosses_domains).ravel()[0])
    return fabric.level_name(crosses), float(collectives.send_recv_link_bytes_per_s(fabric, crosses))


def _intervals(band: Band, *, ttft: float, tpot: float, rate: float, gpus: int) -> JsonDict:
    """Error bars of the headline figures (see :class:`InferenceEstimate`)."""
    return {
        "level": band.level,
        "family": band.family,
        "num_rows": band.num_rows,
        "ttft_s": list(band.time(ttft)),
        "tpot_s": list(band.time(tpot)),
        "output_tokens_per_s": list(band.speed(rate)),
        "output_tokens_per_s_per_gpu": list(band.speed(rate / gpus)),
        "output_tokens_per_s_per_user": list(band.speed(1.0 / tpot)),
    }


def _check(
    model: TransformerSpec,
    cluster: Cluster,
    plan: InferencePlan,
    load: ServingLoad,
    batching: str,
    *,
    num_gpus: int | None = None,
) -> None:
    """Raise :class:`InvalidPlanError` for a plan or batching mode that cannot serve ``load``."""
    if batching not in BATCHING_MODES:
        raise InvalidPlanError(f"batching {batching!r} is not one of {', '.join(BATCHING_MODES)}")
    validate_inference_plan(plan, model, num_gpus)
    check_gpus(plan, cluster)
    if plan.disaggregated is not None and load.output_tokens < 2:
        raise InvalidPlanError(
            "a disaggregated deployment needs at least 2 output tokens (else no decode pool)"
        )


__all__ = ["InferenceEstimate", "estimate_inference"]
