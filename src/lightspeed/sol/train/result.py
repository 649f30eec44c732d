"""What one training plan reaches: the estimate record, built from the evaluated plan grid."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from lightspeed.catalog import Cluster
from lightspeed.records import JsonDict, Record
from lightspeed.sol.core import collectives
from lightspeed.sol.core.hardware import Hardware
from lightspeed.sol.core.uncertainty import Band, model_interval
from lightspeed.sol.train.plan import (
    NODE_DEDUPE_DISPATCHERS,
    TrainingPlan,
    check_cluster_gpus,
    fits_cluster,
    validate_plan_gpus,
)
from lightspeed.sol.train.recipes import bf16_layers_note
from lightspeed.sol.train.step import BREAKDOWN_PARTS, StepArrays
from lightspeed.units import SECONDS_PER_HOUR, format_memory, format_percent
from lightspeed.workload import TransformerSpec
from lightspeed.workload.flops import MFU_CONVENTION, flops_per_token

DEFAULT_FLOP_CONVENTION = MFU_CONVENTION

PART_LABELS = {
    "compute": "compute (GEMMs and attention)",
    "recompute": "activation recomputation",
    "memory_bound": "memory-bound kernels (norms, activations, residuals)",
    "tp_comm": "exposed TP communication",
    "cp_comm": "exposed CP ring exchange",
    "ep_comm": "exposed EP all-to-all",
    "pp_comm": "pipeline send/receive",
    "bubble": "pipeline bubble",
    "dp_comm": "exposed DP gradient/parameter traffic",
    "optimizer": "optimizer step",
    "other": "kernel launch overhead",
}


@dataclass(frozen=True)
class TrainingEstimate(Record):
    """What one training plan should reach on one cluster.

    Times in seconds, memory in bytes per GPU, rates per second. ``mfu`` counts
    model FLOPs under ``flop_convention``; ``hfu`` counts every FLOP executed
    (recomputation included). Both divide by the dense peak of ``precision``.
    ``model_flop_per_s_per_gpu`` is in FLOP/s like ``peak_flop_per_s``
    (``tflop_per_s_per_gpu`` is the same in TFLOP/s, kept for old readers).
    ``intervals`` holds the error bars: for ``level`` of the published runs of
    the same family (``train/dense/hopper`` ...) the measured value fell inside
    ``[low, high]`` of the step time, tokens/s, MFU and model FLOP/s per GPU.
    ``stack`` names the software profile the estimate assumes.
    """

    model: str
    system: str
    num_gpus: int
    plan: TrainingPlan
    step_time_s: float
    breakdown_s: dict[str, float]
    memory_bytes: dict[str, float]
    memory_per_gpu_bytes: float
    usable_memory_bytes: float
    fits: bool
    tokens_per_step: int
    tokens_per_s: float
    flop_convention: str
    model_flop_per_token: float
    tflop_per_s_per_gpu: float
    model_flop_per_s_per_gpu: float
    mfu: float
    hfu: float
    peak_flop_per_s: float
    bound: str
    bound_part: str
    efficiency_model: str
    num_tokens: float | None
    time_to_train_s: float | None
    gpu_hours: float | None
    assumptions: tuple[str, ...]
    stack: str = ""
    intervals: JsonDict = field(default_factory=dict)

    def plan_summary(self) -> JsonDict:
        """The plan object of the ``search``/``plan --json`` contract."""
        plan = self.plan
        return {
            "tp": plan.tp,
            "pp": plan.pp,
            "dp": plan.dp,
            "ep": plan.ep,
            "etp": plan.etp,
            "cp": plan.cp,
            "vpp": plan.vpp,
            "zero_stage": plan.zero_stage,
            "micro_batch_size": plan.micro_batch_size,
            "recompute": plan.recompute,
            "schedule": plan.effective_schedule,
            # stages of unequal layers (pp x vpp does not divide them): plan train's --uneven-pipeline
            "uneven_pipeline": plan.uneven_pipeline,
            "step_time_s": self.step_time_s,
            "mfu": self.mfu,
            "tokens_per_s": self.tokens_per_s,
            "memory_per_gpu_bytes": self.memory_per_gpu_bytes,
            "bound": self.bound,
            "step_time_interval_s": self.intervals.get("step_time_s"),
            "mfu_interval": self.intervals.get("mfu"),
            # with a token budget (--tokens), else null
            "time_to_train_s": self.time_to_train_s,
            "gpu_hours": self.gpu_hours,
            # Names before 0.2 (CHANGELOG.md): kept so existing consumers keep working.
            "zero": plan.zero_stage,
            "micro_batch": plan.micro_batch_size,
        }


TrainEstimate = TrainingEstimate
"""The 0.1 name of :class:`TrainingEstimate`, kept so existing scripts keep working."""


def _level_of(hardware: Hardware, group: int, stride: int) -> str:
    crosses = bool(collectives.crosses_domains(hardware.fabric, group, stride))
    return hardware.fabric.level_name(crosses)


def part_label(part: str, plan: TrainingPlan, hardware: Hardware) -> str:
    """A readable name for a breakdown part, with the fabric level it uses."""
    label = PART_LABELS[part]
    placement = {
        "tp_comm": (plan.tp, 1),
        "ep_comm": (plan.ep, 1),
        "cp_comm": (plan.cp, plan.tp),
        "dp_comm": (plan.dp * plan.cp, plan.tp),
        "pp_comm": (plan.pp, plan.tp * plan.cp * plan.dp),
    }
    if part in placement:
        group, stride = placement[part]
        label += f" over {_level_of(hardware, group, stride)}"
    if part == "bubble":
        label += f" ({plan.effective_schedule}, pp={plan.pp}, {plan.num_microbatches} micro-batches)"
    return label


# What bounds a step (docs/sol.md, "What bounds the step"): compute (GEMMs and attention, their
# recomputation included) is the bound when it takes this share of the step, or when no overhead
# takes OVERHEAD_SHARE; its kernels are "far below their ceiling" when, while they run, they reach
# less than SLOW_KERNELS of the rate the efficiency model and stack allow at best.
COMPUTE_BOUND_SHARE = 0.6
OVERHEAD_SHARE = 0.1
SLOW_KERNELS = 0.5


def bound_sentence(
    parts: dict[str, float], plan: TrainingPlan, hardware: Hardware, mfu: float, hfu: float | None = None
) -> tuple[str, str]:
    """(sentence, part) naming what bounds the step, by the rule of ``COMPUTE_BOUND_SHARE``:

    * compute-bound: compute's share, its rate while it runs (``hfu`` over that share) and, where
      that rate is under ``SLOW_KERNELS`` of its ceiling, that the kernels are the limit (small or
      thin matrices), not the GPU; then the largest overhead;
    * otherwise the overheads: the largest single part when an overhead is it, else compute's share
      beside the overheads' and the largest of them (compute is the largest part, not the bound).
    """
    step = sum(parts.values())
    compute_share = (parts["compute"] + parts["recompute"]) / step
    overheads = {name: value for name, value in parts.items() if name not in ("compute", "recompute")}
    largest = max(overheads, key=lambda name: overheads[name])
    largest_share = overheads[largest] / step
    next_part = f"{part_label(largest, plan, hardware)} {format_percent(largest_share, 0)}"
    if compute_share >= COMPUTE_BOUND_SHARE or largest_share < OVERHEAD_SHARE:
        return _compute_bound(compute_share, plan, hardware, mfu, hfu) + f"; next: {next_part}", "compute"
    if largest_share >= compute_share:
        return (
            f"{part_label(largest, plan, hardware)}: {format_percent(largest_share, 0)} of the step",
            largest,
        )
    return (
        f"overhead-bound: compute (GEMMs and attention) takes {format_percent(compute_share, 0)} of the "
        f"step and the overheads {format_percent(1.0 - compute_share, 0)}, the largest {next_part}",
        largest,
    )


def _compute_bound(
    compute_share: float, plan: TrainingPlan, hardware: Hardware, mfu: float, hfu: float | None
) -> str:
    """The compute-bound sentence: the share, the rate while computing, and whether the kernels
    (not the GPU) are the limit."""
    share = format_percent(compute_share, 0)
    if hfu is None:
        return f"compute-bound: GEMMs and attention take {share} of the step (MFU {format_percent(mfu)})"
    running = hfu / compute_share  # of the dense peak, while GEMMs and attention run
    ceiling = (
        hardware.efficiency.gemm_ceiling(plan.compute_precision)
        * hardware.stack.kernel_efficiency
        * hardware.clock_fraction
    )
    if running >= SLOW_KERNELS * ceiling:
        return (
            f"compute-bound: GEMMs and attention take {share} of the step at "
            f"{format_percent(running, 0)} of peak while they run (MFU {format_percent(mfu)})"
        )
    return (
        f"compute-bound, kernels far below their ceiling: GEMMs and attention take {share} of the step "
        f"but run at {format_percent(running, 0)} of peak, under half the {format_percent(ceiling, 0)} "
        f"they reach on large matrices (small or thin GEMMs: fewer TP ranks or larger micro-batches "
        f"fill them; MFU {format_percent(mfu)})"
    )


def estimate_from_arrays(
    *,
    arrays: StepArrays,
    index: int,
    model: TransformerSpec,
    hardware: Hardware,
    plan: TrainingPlan,
    flop_convention: str = DEFAULT_FLOP_CONVENTION,
    num_tokens: float | None = None,
) -> TrainingEstimate:
    """Build the record of row ``index`` of an evaluated grid."""
    parts = {name: float(np.asarray(arrays.parts[name])[index]) for name in BREAKDOWN_PARTS}
    step = sum(parts.values())
    memory = arrays.memory
    memory_parts = {
        "weights": float(memory.weights_bytes[index]),
        "gradients": float(memory.gradients_bytes[index]),
        "optimizer": float(memory.optimizer_bytes[index]),
        "activations": float(memory.activations_bytes[index]),
        "reserved": float(memory.reserved_bytes[index]),
    }
    total_memory = sum(memory_parts.values())
    flops = flops_per_token(model, seq_len=plan.seq_len, convention=flop_convention)
    tokens = plan.tokens_per_step
    gpus = plan.num_gpus
    peak = hardware.peak_flop_per_s
    model_rate = flops.training_flop * tokens / step
    mfu = model_rate / (gpus * peak)
    hfu = float(np.asarray(arrays.hardware_flop_per_step)[index]) / step / (gpus * peak)
    sentence, part = bound_sentence(parts, plan, hardware, mfu, hfu)
    time_to_train = num_tokens / tokens * step if num_tokens else None
    band = model_interval("train", model, hardware.accelerator.architecture)
    return TrainingEstimate(
        model=model.name,
        system=hardware.cluster.name,
        num_gpus=gpus,
        plan=plan,
        step_time_s=step,
        breakdown_s=parts,
        memory_bytes=memory_parts,
        memory_per_gpu_bytes=total_memory,
        usable_memory_bytes=hardware.usable_memory_bytes,
        fits=total_memory <= hardware.usable_memory_bytes,
        tokens_per_step=tokens,
        tokens_per_s=tokens / step,
        flop_convention=flops.convention,
        model_flop_per_token=flops.training_flop,
        tflop_per_s_per_gpu=model_rate / gpus / 1e12,
        model_flop_per_s_per_gpu=model_rate / gpus,
        mfu=mfu,
        hfu=hfu,
        peak_flop_per_s=peak,
        bound=sentence,
        bound_part=part,
        efficiency_model=hardware.efficiency.name,
        num_tokens=num_tokens,
        time_to_train_s=time_to_train,
        gpu_hours=time_to_train * gpus / SECONDS_PER_HOUR if time_to_train is not None else None,
        assumptions=(*_assumptions(hardware, plan, flops.formula), *_stage_notes(arrays, index, plan, model)),
        stack=hardware.stack.name,
        intervals=_intervals(band, step=step, tokens_per_s=tokens / step, mfu=mfu, rate=model_rate / gpus),
    )


def _intervals(band: Band, *, step: float, tokens_per_s: float, mfu: float, rate: float) -> JsonDict:
    """The error bars of an estimate's headline figures (see :class:`TrainingEstimate`)."""
    return {
        "level": band.level,
        "family": band.family,
        "num_rows": band.num_rows,
        "step_time_s": list(band.time(step)),
        "tokens_per_s": list(band.speed(tokens_per_s)),
        "mfu": list(band.speed(mfu)),
        "model_flop_per_s_per_gpu": list(band.speed(rate)),
    }


def _assumptions(hardware: Hardware, plan: TrainingPlan, formula: str) -> tuple[str, ...]:
    efficiency = hardware.efficiency
    return (
        f"peak: dense {hardware.compute_text(plan.compute_precision)} "
        f"{hardware.peak_flop_per_s / 1e12:,.1f} TFLOP/s per GPU "
        f"({hardware.accelerator.display_name})",
        f"efficiency model {efficiency.label}: GEMM up to "
        f"{format_percent(efficiency.gemm_ceiling(plan.compute_precision), 0)} "
        f"of peak, HBM {format_percent(efficiency.memory_efficiency, 0)}, links "
        f"{format_percent(efficiency.collective_bandwidth_efficiency, 0)}"
        + (f"; {hardware.calibration_note}" if hardware.calibration_note else ""),
        f"software stack '{hardware.stack.name}' ({hardware.stack.display_name}): kernels at "
        f"{format_percent(hardware.stack.kernel_efficiency, 0)} of those ceilings"
        + (
            f", clock x{hardware.clock_fraction:.3f} under the power cap"
            if hardware.clock_fraction < 1
            else ""
        )
        + f"; {hardware.stack.fit_note()}",
        f"device memory {format_memory(hardware.usable_memory_bytes)} per GPU (as the driver reports), "
        f"{format_memory(hardware.overheads.reserved_of(hardware.usable_memory_bytes))} framework reserve",
        f"ranks ordered tp-cp-ep-dp-pp; scale-up domain of {hardware.domain_size} GPUs",
        *_straddle_notes(hardware, plan),
        f"model FLOPs per token: {formula}",
    )


def _straddle_notes(hardware: Hardware, plan: TrainingPlan) -> tuple[str, ...]:
    """The groups (TP, CP behind TP, EP behind TP x CP) that do not tile the scale-up domain, so
    that some of their copies cross the scale-out level (:func:`collectives.straddle_note`)."""
    fabric = hardware.fabric
    notes = (
        collectives.straddle_note(fabric, "TP", plan.tp),
        collectives.straddle_note(fabric, "CP", plan.cp, plan.tp),
        collectives.straddle_note(fabric, "EP", plan.ep, plan.tp * plan.cp),
    )
    return tuple(note for note in notes if note)


def dispatcher_note(plan: TrainingPlan, model: TransformerSpec) -> str:
    """The sentence that says a MoE plan dispatches a token once per destination node (empty for
    a dense model or a copy per expert)."""
    if model.moe is None or plan.ep_dispatcher not in NODE_DEDUPE_DISPATCHERS:
        return ""
    return (
        f"MoE tokens dispatched with {plan.ep_dispatcher}: one copy a destination node across nodes "
        "(the nodes a uniformly routed token reaches), not one a chosen expert"
    )


def _stage_notes(
    arrays: StepArrays, index: int, plan: TrainingPlan, model: TransformerSpec
) -> tuple[str, ...]:
    """Where the layers sit on the pipeline and which stage paces the step, and any MTP modules."""
    notes = []
    mtp = model.num_mtp_modules
    modules = f"{mtp} multi-token-prediction module" + ("s" if mtp > 1 else "")
    if mtp:
        notes.append(f"{modules} trained, each a block, a 2h->h projection and the LM head again")
    kept = bf16_layers_note(plan, model)
    if kept:
        notes.append(kept)
    dispatch = dispatcher_note(plan, model)
    if dispatch and plan.ep > 1:
        notes.append(dispatch)
    if plan.pp > 1:
        split = arrays.split
        last, other = (int(np.asarray(value)[index]) for value in (split.last, split.other))
        ends = "the LM head and loss" + (f" and {modules}" if mtp else "")
        paced = "the last" if bool(np.asarray(split.last_paces)[index]) else f"a stage of {other} layers"
        notes.append(
            f"pipeline: {last} of the {model.num_layers} layers + {ends} on the last stage, up to "
            f"{other} on each other stage; {paced} paces the step"
        )
        if bool(np.asarray(arrays.memory.peak_on_last_stage)[index]):
            notes.append(f"memory peaks on the last stage: its layers, {ends} and the logits")
    return tuple(notes)


def check_gpu_count(plan: TrainingPlan, cluster: Cluster) -> None:
    """The plan must use the whole cluster, or any part of a single node (:func:`check_cluster_gpus`,
    the check ``search train`` makes); a plan of whole nodes that is not the cluster is told the
    data-parallel size that fills it."""
    gpus = plan.num_gpus
    if fits_cluster(gpus, cluster):
        return
    if gpus % cluster.system.num_accelerators == 0 or cluster.num_nodes == 1:
        validate_plan_gpus(plan, cluster.num_accelerators)
    check_cluster_gpus(gpus, cluster)
