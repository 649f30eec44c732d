"""Training step estimates: step time with its breakdown, memory, MFU, time to train.

A step on the busiest pipeline stage is ``m x (F + B)`` for ``m`` micro-batches
(forward and backward of its layers, with exposed TP/CP/EP communication,
recomputation and point-to-point pipeline transfers inside), plus the
schedule's bubble, the exposed data-parallel gradient/parameter traffic, and
the optimizer step. Every part is kept, so the breakdown sums to the step.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from lightspeed.sol.core import collectives
from lightspeed.sol.core.hardware import Hardware
from lightspeed.sol.core.roofline import gemm_s, linears_cost, memory_s
from lightspeed.sol.core.shapes import LayerShapes, Linear, layer_shapes
from lightspeed.sol.core.stacks import Stack
from lightspeed.sol.train.grid import PlanGrid
from lightspeed.sol.train.layer_cost import LayerCost, layer_cost
from lightspeed.sol.train.memory import (
    ShardingColumns,
    StageParams,
    TrainMemory,
    layer_memory,
    sharding_columns,
    stage_params,
    training_memory,
)
from lightspeed.sol.train.schedules import bubble_s
from lightspeed.workload import TransformerSpec

Array = Any

OPTIMIZER_BYTES_PER_PARAM = (
    34.0  # Adam: read fp32 master, m, v, grad; write master, m, v, 16-bit weight; zero grad
)

BREAKDOWN_PARTS = (
    "compute",
    "recompute",
    "memory_bound",
    "tp_comm",
    "cp_comm",
    "ep_comm",
    "pp_comm",
    "bubble",
    "dp_comm",
    "optimizer",
    "other",
)


@dataclass(frozen=True)
class StepArrays:
    """Every part of the step (seconds) and memory (bytes), aligned with the grid."""

    parts: dict[str, Array]
    memory: TrainMemory
    hardware_flop_per_step: Array
    split: PipelineSplit

    @property
    def step_time_s(self) -> Array:
        """Sum of the breakdown parts."""
        return sum(self.parts[name] for name in BREAKDOWN_PARTS)


@dataclass(frozen=True)
class _Stage:
    forward_s: Array
    backward_s: Array
    weight_grad_s: Array
    parts_per_microbatch: dict[str, Array]


def _fields(cost: LayerCost) -> dict[str, Array]:
    return {name: getattr(cost, name) for name in LayerCost.__dataclass_fields__}


def _add(*terms: tuple[Array, dict[str, Array]]) -> dict[str, Array]:
    """Sum of ``count x fields`` over the terms, field by field."""
    names = LayerCost.__dataclass_fields__
    return {name: sum(count * fields[name] for count, fields in terms) for name in names}


def _head_cost(grid: PlanGrid, model: TransformerSpec, hardware: Hardware, seq_len: int) -> dict[str, Array]:
    """LM head GEMM and fp32 cross-entropy traffic on the last stage, per micro-batch."""
    tokens = grid.micro_batch_size * seq_len / grid.cp
    head = (Linear("lm_head", model.hidden_size, model.vocab_size, "column"),)
    forward, input_grad, weight_grad, flop = linears_cost(hardware, head, tokens, grid.tp, compute_row="bf16")
    loss_bytes = 4.0 * 4.0 * tokens * model.vocab_size / grid.tp  # write, softmax read/write, grad write
    return _head_fields(forward, input_grad, weight_grad, flop) | {
        "memory_backward_s": memory_s(hardware, loss_bytes)
    }


def _head_fields(forward: Array, input_grad: Array, weight_grad: Array, flop: Array) -> dict[str, Array]:
    """A GEMM's times as layer-cost fields (no communication, memory or kernels of its own counted)."""
    fields: dict[str, Array] = dict.fromkeys(LayerCost.__dataclass_fields__, 0.0)
    fields.update(
        compute_forward_s=forward,
        compute_backward_s=input_grad + weight_grad,
        weight_grad_s=weight_grad,
        hardware_flop=3.0 * flop,
    )
    return fields


def _mtp_cost(
    grid: PlanGrid,
    model: TransformerSpec,
    hardware: Hardware,
    *,
    seq_len: int,
    layer: LayerCost,
    head: dict[str, Array],
) -> dict[str, Array]:
    """One DeepSeek-V3 multi-token-prediction module per micro-batch: the 2h -> h projection of
    the hidden state and the next token's embedding, one transformer block like the model's last,
    and the shared LM head with its own loss (DeepSeek-V3 report, section 2.2)."""
    tokens = grid.micro_batch_size * seq_len / grid.cp
    proj = (Linear("mtp_proj", 2 * model.hidden_size, model.hidden_size, "column"),)
    projection = _head_fields(*linears_cost(hardware, proj, tokens, grid.tp))
    return _add((1.0, projection), (1.0, _fields(layer)), (1.0, head))


@dataclass(frozen=True)
class PipelineSplit:
    """Layers on the last pipeline stage (which also runs the LM head, the loss and any MTP
    modules) and on the fullest other stage."""

    last: Array
    other: Array
    last_paces: Array = False  # whether the last stage is the slowest (set once both are timed)


def pipeline_split(pp: Array, num_layers: int, layer_s: Array, ends_s: Array) -> PipelineSplit:
    """Where a stack puts the layers: evenly when ``pp`` divides them (the last stage carries
    the head on top, Megatron's default); otherwise the shortfall ``ceil(L/pp) x pp - L`` leaves
    the last stage, one layer for each layer-time its head, loss and MTP take, as hand-made
    splits do: Llama 3 405B's 126 layers on PP16 with one layer off the end stages (Llama 3
    paper, section 3.3.2), Megatron-Bridge's DeepSeek-V3 layout of 4 layers a stage and
    1 + MTP + loss on the last of 16, torchtitan's split that gives the end stages fewer."""
    full = np.ceil(num_layers / pp)
    shortfall = full * pp - num_layers
    moved = np.minimum(shortfall, np.round(ends_s / np.maximum(layer_s, 1e-30)))
    last = full - moved
    other = np.where(pp > 1, np.ceil((num_layers - last) / np.maximum(pp - 1, 1)), 0.0)
    return PipelineSplit(last=last, other=other)


@dataclass(frozen=True)
class _Kinds:
    """One dense and one MoE layer's cost, in the run's precision and in BF16 (the layers an
    FP8 or FP4 recipe keeps wide; the same costs when it keeps none)."""

    dense: LayerCost
    moe: LayerCost
    wide_dense: LayerCost
    wide_moe: LayerCost


def _layers(
    kinds: _Kinds, count: Array, num_wide: Array, num_moe_layers: int
) -> tuple[tuple[Array, dict[str, Array]], ...]:
    """``count`` layers of a stage, the MoE ones last (DeepSeek's dense layers come first),
    ``num_wide`` of them in BF16 (dense and MoE in the stage's own proportion)."""
    num_moe = np.minimum(count, float(num_moe_layers))
    num_dense = count - num_moe
    wide = num_wide / np.maximum(count, 1.0)
    return (
        (num_dense * (1.0 - wide), _fields(kinds.dense)),
        (num_moe * (1.0 - wide), _fields(kinds.moe)),
        (num_dense * wide, _fields(kinds.wide_dense)),
        (num_moe * wide, _fields(kinds.wide_moe)),
    )


def _layer_kinds(
    grid: PlanGrid,
    model: TransformerSpec,
    shapes: LayerShapes,
    hardware: Hardware,
    *,
    seq_len: int,
    recompute: Array,
) -> _Kinds:
    def cost(on: Hardware, moe: bool) -> LayerCost:
        return layer_cost(grid, model, shapes, on, seq_len=seq_len, moe=moe, recompute_fraction=recompute)

    dense = cost(hardware, False)
    moe = cost(hardware, True) if model.moe is not None else dense
    if not (hardware.quantized_linears and np.any(grid.bf16_start + grid.bf16_end > 0)):
        return _Kinds(dense, moe, dense, moe)
    wide = hardware.in_bf16()
    wide_dense = cost(wide, False)
    return _Kinds(dense, moe, wide_dense, cost(wide, True) if model.moe is not None else wide_dense)


def _busy(fields: dict[str, Array]) -> Array:
    return (
        fields["compute_forward_s"]
        + fields["compute_backward_s"]
        + fields["memory_forward_s"]
        + fields["memory_backward_s"]
        + fields["tp_comm_s"]
        + fields["cp_comm_s"]
        + fields["ep_comm_s"]
        + fields["recompute_s"]
    )


def _stage_time(fields: dict[str, Array], hardware: Hardware, pp_comm: Array) -> _Stage:
    """A stage's parts per micro-batch, from the summed costs of what it runs."""
    compute = fields["compute_forward_s"] + fields["compute_backward_s"]
    memory_bound = fields["memory_forward_s"] + fields["memory_backward_s"]
    launch = fields["num_kernels"] * hardware.efficiency.kernel_launch_s
    parts = {
        "compute": compute,
        "recompute": fields["recompute_s"],
        "memory_bound": memory_bound,
        "tp_comm": fields["tp_comm_s"],
        "cp_comm": fields["cp_comm_s"],
        "ep_comm": fields["ep_comm_s"],
        "pp_comm": pp_comm,
        "other": np.maximum(launch - _busy(fields), 0.0),
    }
    total = sum(parts.values())
    forward = fields["compute_forward_s"] + fields["memory_forward_s"]
    forward_s = total * forward / np.maximum(compute + memory_bound, 1e-30)
    return _Stage(forward_s, total - forward_s, fields["weight_grad_s"], parts)


def _slower(a: _Stage, b: _Stage) -> tuple[_Stage, Array]:
    """Plan by plan, the stage that takes longer per micro-batch, and whether it is ``a``."""
    pick = sum(a.parts_per_microbatch.values()) >= sum(b.parts_per_microbatch.values())

    def choose(x: Array, y: Array) -> Array:
        return np.where(pick, x, y)

    parts = {
        name: choose(value, b.parts_per_microbatch[name]) for name, value in a.parts_per_microbatch.items()
    }
    stage = _Stage(
        choose(a.forward_s, b.forward_s),
        choose(a.backward_s, b.backward_s),
        choose(a.weight_grad_s, b.weight_grad_s),
        parts,
    )
    return stage, pick


def _stage(
    grid: PlanGrid,
    model: TransformerSpec,
    shapes: LayerShapes,
    hardware: Hardware,
    *,
    seq_len: int,
    recompute: Array,
) -> tuple[_Stage, Array, PipelineSplit]:
    """The bottleneck stage per micro-batch, the hardware FLOP of the whole model, the split.
    Layers an FP8 or FP4 plan keeps in BF16 sit where the model has them: its first ones on the
    first stage, its last ones on the last stage and, past it, the stages before."""
    kinds = _layer_kinds(grid, model, shapes, hardware, seq_len=seq_len, recompute=recompute)
    dense, moe = kinds.dense, kinds.moe
    last_layer = moe if model.num_moe_layers else dense
    head = _head_cost(grid, model, hardware, seq_len)
    ends = _add(
        (1.0, head),
        (
            float(model.num_mtp_modules),
            _mtp_cost(grid, model, hardware, seq_len=seq_len, layer=last_layer, head=head),
        ),
    )
    split = pipeline_split(grid.pp, model.num_layers, _busy(_fields(last_layer)), _busy(ends))
    pp_comm = _pipeline_p2p(grid, model, hardware, seq_len)
    layers = model.num_layers
    wide_last = grid.bf16_layers_in(layers - split.last, split.last, layers)
    wide_first = grid.bf16_layers_in(0.0, split.other, layers)
    wide_before_last = grid.bf16_layers_in(layers - split.last - split.other, split.other, layers)
    wide_other = np.where(grid.pp > 1, np.maximum(wide_first, wide_before_last), 0.0)
    last = _stage_time(
        _add(*_layers(kinds, split.last, wide_last, model.num_moe_layers), (1.0, ends)), hardware, pp_comm
    )
    other = _stage_time(
        _add(*_layers(kinds, split.other, wide_other, model.num_moe_layers)), hardware, pp_comm
    )
    # Hardware FLOP of the whole model per micro-batch per model replica, summed over its GPUs.
    layer_flop = model.num_dense_layers * dense.hardware_flop + model.num_moe_layers * moe.hardware_flop
    flop_per_microbatch = (layer_flop + ends["hardware_flop"]) * grid.tp * grid.cp
    stage, last_paces = _slower(last, other)
    return stage, flop_per_microbatch, replace(split, last_paces=last_paces)


def _pipeline_p2p(grid: PlanGrid, model: TransformerSpec, hardware: Hardware, seq_len: int) -> Array:
    """Send + receive of activations and their gradients at stage boundaries, per micro-batch."""
    tokens = grid.micro_batch_size * seq_len / grid.cp
    size = tokens * model.hidden_size * hardware.activation_bytes_per_element
    size = np.where(grid.sequence_parallel, size / grid.tp, size)
    stride = grid.tp * grid.cp * grid.dp
    crosses = collectives.crosses_domains(hardware.fabric, grid.pp, stride)
    one_way = collectives.send_recv_s(hardware.fabric, size, crosses)
    return np.where(grid.pp > 1, 2.0 * one_way * grid.vpp, 0.0)


def _data_parallel(
    grid: PlanGrid, params: StageParams, hardware: Hardware, stage: _Stage
) -> tuple[Array, Array]:
    """(exposed DP communication, optimizer time) per step, as the stack's memory rule runs it."""
    fabric = hardware.fabric
    weight_bytes = hardware.activation_bytes_per_element
    replicas = grid.dp * grid.cp
    expert_replicas = grid.tp * grid.cp * grid.dp / (grid.ep * grid.etp)
    stack = hardware.stack
    rules = sharding_columns(grid, stack)
    flat_ring = rules.gathers_layers & stack.zero3_flat_ring  # one ring per rank through its own NIC

    def traffic(num_params: Array, group: Array, stride: Array) -> tuple[Array, Array, Array]:
        # no parameters (a dense model's experts), no collective: not even its latency
        held = np.asarray(num_params) > 0
        reduce = collectives.all_reduce_s(fabric, num_params * grid.grad_bytes, group, stride)
        scatter = collectives.reduce_scatter_s(fabric, num_params * grid.grad_bytes, group, stride, flat_ring)
        gather = collectives.all_gather_s(fabric, num_params * weight_bytes, group, stride, flat_ring)
        return np.where(held, reduce, 0.0), np.where(held, scatter, 0.0), np.where(held, gather, 0.0)

    dense = traffic(params.dense, replicas, grid.tp)
    expert = traffic(params.expert, expert_replicas, grid.ep * grid.etp)
    reduce, scatter, gather = (dense[i] + expert[i] for i in range(3))
    exposed = _exposed_data_parallel(grid, rules, stack, stage, reduce=reduce, scatter=scatter, gather=gather)
    updated = np.where(
        rules.optimizer_sharded,
        params.dense / replicas + params.expert / expert_replicas,
        params.dense + params.expert,
    )
    optimizer = memory_s(hardware, updated * OPTIMIZER_BYTES_PER_PARAM)
    return exposed, optimizer


def _exposed_data_parallel(
    grid: PlanGrid,
    rules: ShardingColumns,
    stack: Stack,
    stage: _Stage,
    *,
    reduce: Array,
    scatter: Array,
    gather: Array,
) -> Array:
    """Seconds of data-parallel traffic per step that compute does not hide."""
    m = grid.num_microbatches
    forward, backward = stage.forward_s, stage.backward_s
    overlap = grid.dp_overlap
    hide = stack.exposed_s
    # Layer-wise gathers (ZeRO-3, FSDP full sharding): each micro-batch gathers for forward, gathers
    # again for backward and reduce-scatters behind it.
    layered = m * np.where(
        overlap,
        hide(gather, forward) + hide(gather + scatter, backward),
        2.0 * gather + scatter,
    )
    # Otherwise gradients are reduced once per step (DDP, distributed optimizer) or after every
    # micro-batch (sharded gradients: ZeRO-2, Megatron-FSDP), parameters gathered once or per micro-batch.
    grads = np.where(rules.all_reduce, reduce, scatter)
    reductions = np.where(rules.reduce_per_microbatch, m, 1.0)
    gathers = np.select([rules.gathers_per_microbatch, rules.gathers_per_step], [m, 1.0], 0.0)
    stepwise = np.where(
        overlap,
        reductions * hide(grads, backward) + gathers * hide(gather, forward),
        reductions * grads + gathers * gather,
    )
    return np.where(rules.gathers_layers, layered, stepwise)


def _memory_and_stage(
    grid: PlanGrid,
    model: TransformerSpec,
    shapes: LayerShapes,
    hardware: Hardware,
    seq_len: int,
    *,
    params: StageParams,
) -> tuple[TrainMemory, _Stage, Array, PipelineSplit]:
    """Memory and the bottleneck stage on one split of the layers. The split follows the layers'
    time, which follows the share recomputed, which follows memory: memory is first counted with
    ``ceil(L/pp)`` layers on the last stage (at least as many as the split leaves it), which sets
    the recompute share (``partial``: enough for that count), the stage is timed and the split
    chosen at that share, and the last stage counted again on its own layers at the same share."""
    layers = layer_memory(grid, model, shapes, hardware, seq_len)
    memory = training_memory(grid, model, shapes, hardware, seq_len, params=params, layers=layers)
    recompute = memory.recompute_fraction
    stage, flop, split = _stage(grid, model, shapes, hardware, seq_len=seq_len, recompute=recompute)
    # fewer layers on the last stage only shrink it: where it was not the peak with ceil(L/pp) the
    # recount cannot change the answer, so it runs only where it can
    if np.any(memory.peak_on_last_stage & (split.last < np.ceil(model.num_layers / grid.pp))):
        memory = training_memory(
            grid,
            model,
            shapes,
            hardware,
            seq_len,
            params=params,
            last_layers=split.last,
            recompute_fraction=recompute,
            layers=layers,
        )
    return memory, stage, flop, split


def evaluate_grid(grid: PlanGrid, model: TransformerSpec, hardware: Hardware, seq_len: int) -> StepArrays:
    """Step breakdown and memory of every plan in ``grid`` (the vectorized core)."""
    shapes = layer_shapes(model)
    params = stage_params(grid, model, shapes)  # computed once: memory, stage and DP all need it
    memory, stage, flop_per_microbatch, split = _memory_and_stage(
        grid, model, shapes, hardware, seq_len, params=params
    )
    m = grid.num_microbatches
    parts = {name: m * value for name, value in stage.parts_per_microbatch.items()}
    parts["bubble"] = bubble_s(grid, stage.forward_s, stage.backward_s, stage.weight_grad_s)
    parts["dp_comm"], parts["optimizer"] = _data_parallel(grid, params, hardware, stage)
    flop = flop_per_microbatch * m * grid.dp
    return StepArrays(parts=parts, memory=memory, hardware_flop_per_step=flop, split=split)


__all__ = ["BREAKDOWN_PARTS", "PipelineSplit", "StepArrays", "evaluate_grid", "gemm_s", "pipeline_split"]
