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
from lightspeed.sol.core.routing import balanced_placement, busiest_rank_factor, load_routing_skew
from lightspeed.sol.core.serving_stacks import ServingStack
from lightspeed.sol.core.uncertainty import Band, model_interval
from lightspeed.sol.infer.inference_hardware import InferenceHardware, inference_hardware_for
from lightspeed.sol.infer.iteration import ITERATION_PARTS
from lightspeed.sol.infer.memory import MemoryArrays, memory_of, smallest_fitting
from lightspeed.sol.infer.plan import (
    InferencePlan,
    Precisions,
    ServingLoad,
    SpeculativeDecoding,
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
from lightspeed.units import element_bits, format_bytes_per_s, format_memory, format_percent
from lightspeed.workload import TransformerSpec, check_context, kv_bytes_per_token_at

LOG = logging.getLogger(__name__)

PART_LABELS = {
    "gemm_compute": "GEMMs on the tensor cores",
    "weight_reads": "weight reads from HBM",
    "attention_compute": "attention math",
    "kv_cache": "KV-cache reads and writes",
    "elementwise": "norms, activations, residuals (MoE: token copies)",
    "tp_comm": "TP all-reduce",
    "ep_comm": "EP all-to-all",
    "pp_comm": "pipeline send",
    "attention_dp_pace": "attention-DP slowdown (fitted, not kernel time)",
    "launch": "kernel launch and teardown",
    "host": "host overhead",
}
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


def _batch_for_rate(
    ctx: ServingContext, plan: InferencePlan, max_batch: float, batching: str, split: PoolSplit | None
) -> float:
    """Sequences per replica at which the deployment serves ``load.arrival_rate_per_s``."""
    wanted = ctx.load.arrival_rate_per_s
    assert wanted is not None
    batches = np.geomspace(1e-3, max_batch, ARRIVAL_GRID_POINTS)
    arrays = serve(ctx, plan, batches, batching, split)
    # The rate grows with the batch; the running maximum keeps the inversion well defined where it
    # flattens (a batch that buys no rate is never the answer).
    rates = np.maximum.accumulate(np.asarray(arrays.requests_per_s) * _serving_replicas(plan))
    if wanted > rates[-1]:
        needed = int(np.ceil(wanted / rates[-1] * plan.num_replicas))
        raise InvalidPlanError(
            f"{wanted:g} requests/s exceed what {plan.describe()} can serve ({rates[-1]:.3g} requests/s at "
            f"its KV-cache limit of {max_batch:g} sequences per replica); use about {needed} replicas, "
            "more GPUs per replica, or a lower precision"
        )
    upper = int(np.searchsorted(rates, wanted))
    if upper == 0:
        return float(np.interp(wanted, rates, batches))
    # the rate is concave in the batch, so a chord between two grid points under-reads it: a
    # finer grid between the two that bracket the wanted rate takes the inversion to 1e-4
    fine = np.linspace(batches[upper - 1], batches[upper], ARRIVAL_GRID_POINTS)
    fine_rates = np.maximum.accumulate(
        np.asarray(serve(ctx, plan, fine, batching, split).requests_per_s) * _serving_replicas(plan)
    )
    return float(np.interp(wanted, fine_rates, fine))


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
        raise InvalidPlanError(
            f"the plan needs {plan.num_gpus} GPUs ({plan.describe()}), {cluster.name} has {gpus}; "
            f"use at most {gpus // per_replica} replicas or a bigger cluster"
        )
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


def bound_sentence(
    parts: dict[str, float], inference_hardware: InferenceHardware, plan: InferencePlan
) -> tuple[str, str]:
    """(sentence, part) naming what bounds the steady iteration: the largest group of the parts
    the engine prices from the hardware; the fitted attention-DP slowdown is said after it."""
    total = sum(parts.values())
    groups = {
        "memory-bound": ("weight_reads", "kv_cache", "elementwise"),
        "compute-bound": ("gemm_compute", "attention_compute"),
        "communication-bound": ("tp_comm", "ep_comm", "pp_comm"),
        "overhead-bound": ("launch", "host"),
    }
    shares = {name: sum(parts[p] for p in members) / total for name, members in groups.items()}
    kind = max(shares, key=lambda name: shares[name])
    priced = [name for name in ITERATION_PARTS if name != "attention_dp_pace"]
    ranked = sorted(priced, key=lambda name: parts[name], reverse=True)
    top = [name for name in ranked if parts[name] > 0][:2]
    details = ", ".join(
        f"{part_text(name, inference_hardware, plan)} {format_percent(parts[name] / total, 0)}"
        for name in top
    )
    sentence = f"{kind}: {details} of each iteration"
    if kind == "memory-bound":
        # the memory parts are bytes at the streaming ceiling: those bytes over the whole step
        ceiling = inference_hardware.stream_bytes_per_s
        streamed_s = sum(parts[name] for name in groups["memory-bound"])
        sentence += (
            f" (HBM streaming ceiling {format_bytes_per_s(ceiling)}, "
            f"{format_bytes_per_s(ceiling * streamed_s / total)} sustained over the step)"
        )
    pace = parts.get("attention_dp_pace", 0.0)
    if pace > 0:
        sentence += (
            f"; a fitted attention-DP slowdown adds {format_percent(pace / total, 0)} "
            "that no kernel, link or host time explains"
        )
    return sentence, top[0]


def part_text(part: str, inference_hardware: InferenceHardware, plan: InferencePlan) -> str:
    """A readable name for an iteration part, with the fabric level a collective uses."""
    label = PART_LABELS[part]
    fabric = inference_hardware.hardware.fabric
    groups = {"tp_comm": (plan.tp, 1), "ep_comm": (plan.stage_gpus, 1), "pp_comm": (plan.pp, plan.stage_gpus)}
    if part in groups:
        group, stride = groups[part]
        crosses = bool(collectives.crosses_domains(fabric, group, stride))
        label += f" over {fabric.level_name(crosses)}"
    return label


def _attention_weights_text(inference_hardware: InferenceHardware) -> str:
    """``attention projections bf16 (989 TFLOP/s), `` when they differ from the other weights."""
    precisions = inference_hardware.precisions
    if precisions.attention_weights == precisions.weights:
        return ""
    peak = inference_hardware.attention_hardware.peak_flop_per_s
    return (
        f"attention projections {precisions.attention_weights} "
        f"({precisions.attention_weight_bytes_per_element:g} B/param, "
        f"GEMMs on {precisions.attention_compute} {peak / 1e12:,.0f} TFLOP/s), "
    )


def _mixed_weights_text(inference_hardware: InferenceHardware, plan: InferencePlan) -> str:
    """``; a mixed checkpoint of 7.25 effective bits: 81% of those layers fp8 (...)`` for a plan
    with ``effective_bits``, else ``''``."""
    precisions = inference_hardware.precisions
    wider = inference_hardware.wider_hardware
    if plan.effective_bits is None or wider is None:
        return ""
    return (
        f"; a per-layer mixed checkpoint of {plan.effective_bits:g} effective bits: "
        f"{format_percent(precisions.wider_share, 0)} of those layers (by parameters) kept in "
        f"{precisions.wider} "
        f"({precisions.wider_weight_bytes_per_element:g} B/param, GEMMs on {precisions.wider_compute} "
        f"{wider.peak_flop_per_s / 1e12:,.0f} TFLOP/s), the rest in {precisions.weights}"
    )


def _overlap_text(efficiency: EfficiencyModel) -> str:
    """How a GEMM's math and traffic combine near the ridge point, when not at the hard roofline."""
    power = efficiency.roofline_overlap_power
    if power is None:
        return ""
    return f"; a GEMM's math and traffic combine as (math^{power:g} + traffic^{power:g})^(1/{power:g})"


def _serving_line(inference_hardware: InferenceHardware, plan: InferencePlan) -> str:
    serving = inference_hardware.serving
    line = (
        f"serving stack '{serving.name}' ({serving.display_name}): math kernels (GEMMs, attention) at "
        f"{format_percent(serving.kernel_efficiency, 0)} of those ceilings"
    )
    if plan.dp_attention > 1 and serving.attention_dp_efficiency < 1.0:
        line += (
            f"; with attention data parallelism each layer's compute and memory at "
            f"{format_percent(serving.attention_dp_efficiency, 0)} of that pace (a fitted factor: what "
            "published wide expert-parallel runs lose beyond the modelled kernels, placement and "
            "routing skew)"
        )
    hidden = " behind the GPU step (overlap scheduler)" if serving.overlap_scheduler else ""
    if plan.pp > 1 and not serving.overlap_with_pipeline:
        line += "; no overlap scheduler: the server turns it off under pipeline parallelism"
    if serving.iteration_overhead_s > 0:
        line += f", {serving.iteration_overhead_s * 1e3:g} ms host time per iteration{hidden}"
        if serving.host_fit_group:
            line += f" ({serving.host_fit_group}'s fitted value: a step loop as serial on the host)"
    if serving.host_per_sequence_s > 0:
        line += f", {serving.host_per_sequence_s * 1e6:.3g} us of host work per sequence per step{hidden}"
    host_priced = serving.iteration_overhead_s > 0 or serving.host_per_sequence_s > 0
    if not serving.overlap_scheduler and not host_priced:
        line += ", the host's scheduling between steps not costed (no published figure for this server)"
    if serving.decode_kv_reads == "per_query_head":
        line += (
            ", decode attention reads a grouped-query KV head once per query head "
            "(one thread block per head: the masked MHA kernel)"
        )
    return f"{line}; {serving.fit_note()}"


def _sequence_cap_note(inference_hardware: InferenceHardware, plan: InferencePlan) -> str:
    """The server's default cap on sequences per scheduler, where it has one and --max-batch is unset."""
    cap = inference_hardware.serving.sequence_cap
    if cap is None or plan.max_batch is not None:
        return ""
    scheduler = "attention-DP rank" if plan.dp_attention > 1 else "replica"
    return f"; the server's default cap on sequences per {scheduler}: {cap.describe()} (--max-batch sets it)"


def _kv_share_text(inference_hardware: InferenceHardware, raised: bool) -> str:
    """The KV cache's share of memory as the server's fraction reads (``ServingStack.kv_memory_of``),
    and whether the deployment needed it raised."""
    serving = inference_hardware.serving
    share = format_percent(inference_hardware.parameters.kv_cache_memory_fraction, 0)
    if serving.kv_memory_of != "total":
        return f"{share} of the free memory"
    if serving.kv_memory_share_by_tp and not raised:
        shares = ", ".join(
            f"{format_percent(value, 0)} from {size}" for size, value in serving.kv_memory_share_by_tp
        )
        return (
            f"what is left of the server's share of the GPU's memory after the weights, workspace and "
            f"runtime (by the GPUs of a stage: {shares})"
        )
    if raised:
        return (
            f"{share} of the free memory (the server's default gpu_memory_utilization, {share} of the "
            "GPU's memory, leaves no request's cache after the weights here: it has to be raised, "
            "as a run that served did)"
        )
    return f"what is left of {share} of the GPU's memory after the weights, workspace and runtime"


def _floors_line(inference_hardware: InferenceHardware) -> str:
    floors, serving = inference_hardware.floors, inference_hardware.serving
    prompt_steps = (
        f"steps with over {serving.prefill_graph_tokens} tokens of which some are prompt tokens"
        if serving.prefill_graph_tokens
        else "steps with prompt tokens"
    )
    launcher = (
        f"decode replays CUDA graphs; {prompt_steps} run eagerly, the host issuing each kernel in "
        f"{inference_hardware.hardware.efficiency.kernel_launch_s * 1e6:g} us"
        if serving.cuda_graphs
        else f"no CUDA graphs: the host issues each kernel in "
        f"{inference_hardware.hardware.efficiency.kernel_launch_s * 1e6:g} us"
    )
    protocols = inference_hardware.hardware.fabric.ring_protocols
    rings = ""
    if protocols is not None:
        named = ", ".join(
            f"{protocol.name} {protocol.base_latency_s * 1e6:g} us + "
            f"{protocol.step_latency_s * 1e6:g} us a step"
            for protocol in protocols.protocols
        )
        rings = (
            f" (inside the NVLink domain the fastest of NCCL's ring protocols: that one at half the "
            f"bandwidth, {named}; an in-switch all-reduce {protocols.in_switch_latency_s * 1e6:g} us)"
        )
    return (
        f"latency floors: each kernel {floors.gpu_kernel_s * 1e6:g} us of GPU time beyond its roofline, "
        f"each collective {floors.collective_base_latency_s * 1e6:g} us plus the link latency per step"
        f"{rings}; {launcher}"
    )


def state_note(model: TransformerSpec) -> tuple[str, ...]:
    """The line saying what recurrent state a hybrid's requests hold, and in which format (none
    for a model without recurrent blocks)."""
    mixer = model.recurrent
    if mixer is None:
        return ()
    per_sequence = model.num_recurrent_layers * mixer.sequence_state_bytes
    return (
        f"recurrent state: {format_memory(per_sequence)} a sequence over {model.num_recurrent_layers} "
        f"{mixer.label} blocks ({mixer.state_dtype} state, 16-bit convolution window), held for each "
        "request in flight (--state-precision sets its format)",
    )


def routing_note(
    model: TransformerSpec, inference_hardware: InferenceHardware, plan: InferencePlan
) -> tuple[str, ...]:
    """The line saying how unevenly the routed tokens land on the EP ranks (none without
    expert parallelism)."""
    if model.moe is None or plan.ep <= 1:
        return ()
    if plan.expert_imbalance is not None:
        given = plan.expert_imbalance
        return (f"expert parallelism: the busiest of {plan.ep} EP ranks gets {given:.2f}x the mean tokens",)
    serving = inference_hardware.serving
    physical, routed = plan.num_physical_experts or 0, model.moe.num_routed_experts
    replicas = physical > routed  # which reason the line gives
    balanced = bool(balanced_placement(physical, routed, serving.expert_load_balancer))
    skew = load_routing_skew()
    factor = busiest_rank_factor(model.moe.num_routed_experts, plan.ep, skew=skew, balanced=balanced)
    if balanced:
        why = "redundant experts placed by load" if replicas else f"{serving.name}'s recipes run EPLB"
        how = f"the load balancer's measured residual ({why})"
    else:
        how = f"routing skew of a contiguous placement (per-expert load CV {skew.per_expert_cv:g})"
    return (
        f"expert parallelism: the busiest of {plan.ep} EP ranks gets {factor:.2f}x the mean routed tokens, "
        f"the {how}, measured on DeepSeek-R1 by TensorRT-LLM (sol/data/routing.toml); "
        "--expert-imbalance or --expert-load sets it",
    )


def _weight_only_text(weights: str, compute: str) -> str:
    """`` (weight-only: ...)`` where the GEMMs compute in a wider format than the weights are
    stored in (W8A16, W4A16, FP4 weights on a GPU without FP4 tensor cores); else empty."""
    if element_bits(weights) >= element_bits(compute):
        return ""
    return f" (weight-only: the {weights} weights dequantized into each {compute} GEMM)"


def _fp4_tiles_text(inference_hardware: InferenceHardware) -> str:
    """How FP4 GEMMs fill the GPU
    (:meth:`~lightspeed.sol.core.efficiency.EfficiencyModel.fp4_tile_occupancy`), or that they are
    priced without that loss where the catalog has no SM count."""
    hardware = inference_hardware.hardware
    gemm = hardware.efficiency
    if hardware.compute_row != "fp4" or not (gemm.fp4_tile_rows and gemm.fp4_tile_columns):
        return ""
    sms = hardware.accelerator.num_compute_units
    if sms:
        return (
            f"; an FP4 GEMM keeps its ceil(M/{gemm.fp4_tile_rows:g}) x ceil(N/{gemm.fp4_tile_columns:g}) "
            f"output tiles on the {sms} SMs, one each, so a small batch streams its weights on a "
            "share of them"
        )
    return (
        f"; FP4 GEMMs priced without the loss of tiles too few for the SMs (the catalog gives no SM "
        f"count for {hardware.accelerator.name}: a GPU with one, the B200, decodes small FP4 batches "
        "up to 3x slower)"
    )


def _assumptions(
    inference_hardware: InferenceHardware, plan: InferencePlan, batching: str, raised: bool = False
) -> tuple[str, ...]:
    hardware, precisions, parameters = (
        inference_hardware.hardware,
        inference_hardware.precisions,
        inference_hardware.parameters,
    )
    efficiency = hardware.efficiency
    lines = [
        f"weights {precisions.weights} ({precisions.weight_bytes_per_element:g} B/param, "
        f"{_attention_weights_text(inference_hardware)}embeddings and "
        f"LM head 16-bit), GEMMs on dense {hardware.compute_text(precisions.compute)} "
        f"{hardware.peak_flop_per_s / 1e12:,.0f} TFLOP/s "
        f"per GPU{_weight_only_text(precisions.weights, precisions.compute)}, KV cache "
        f"{precisions.kv_cache}{_mixed_weights_text(inference_hardware, plan)}",
        f"efficiency {efficiency.label}: GEMMs up to "
        f"{format_percent(efficiency.gemm_ceiling(precisions.compute), 0)} of peak, attention up to "
        f"{format_percent(efficiency.attention_flash_forward_efficiency, 0)}, weight/KV streaming at "
        f"{format_percent(parameters.stream_memory_efficiency, 0)} of "
        f"{format_bytes_per_s(hardware.memory_bandwidth_bytes_per_s)}, links "
        f"{format_percent(efficiency.collective_bandwidth_efficiency, 0)}{_overlap_text(efficiency)}"
        f"{_fp4_tiles_text(inference_hardware)}",
        _serving_line(inference_hardware, plan),
        _floors_line(inference_hardware),
        f"{batching} batching; KV cache gets {_kv_share_text(inference_hardware, raised)} and reserves "
        "input + output tokens per request; prefill chunks of "
        f"{parameters.prefill_chunk_tokens} tokens"
        f"{' (the server default for this GPU)' if inference_hardware.serving.token_budget else ''}"
        f"{_sequence_cap_note(inference_hardware, plan)}",
        f"scale-up domain of {hardware.domain_size} GPUs; ranks ordered tp-dp_attention-pp-replica",
        *precisions.notes,
    ]
    if batching == "continuous" and inference_hardware.serving.prefill_steps == "separate":
        name = inference_hardware.serving.name
        lines.append(
            f"this steady state mixes prompt chunks into decode steps; {name}'s scheduler runs prompts "
            "in steps of their own that pause the decodes (simulated by 'lightspeed simulate', and by "
            "'plan infer' at a --concurrency or an --arrival-rate)"
        )
    if hardware.calibration_note:
        lines.append(hardware.calibration_note)
    if plan.speculative is not None:
        spec = plan.speculative
        lines.append(
            f"speculative decoding: {spec.num_draft_tokens} drafts accepted at {_acceptance_text(spec)} "
            f"({spec.tokens_per_iteration:.2f} tokens per verify pass), a draft step costs "
            f"{format_percent(spec.draft_cost_fraction, 0)} of a decode step"
        )
    return tuple(lines)


def _acceptance_text(spec: SpeculativeDecoding) -> str:
    """``0.8 each``, or ``0.8, 0.6, 0.4 by position (each given the ones before it kept)``."""
    rates = spec.position_rates
    if len(set(rates)) <= 1:
        return f"{spec.acceptance_rate:g} each"
    return f"{', '.join(f'{rate:g}' for rate in rates)} by position (each given the ones before it kept)"


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
        concurrency=(batch + waiting) * decoders,
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
            *_assumptions(inference_hardware, plan, mode, bool(np.asarray(memory.kv_share_raised).any())),
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


__all__ = ["InferenceEstimate", "estimate_inference", "part_text"]
