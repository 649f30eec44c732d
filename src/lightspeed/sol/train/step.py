"""Training step estimates: step time with its breakdown, memory, MFU, time to train.

A step on the busiest pipeline stage is ``m x (F + B)`` for ``m`` micro-batches
(forward and backward of its layers, with exposed TP/CP/EP communication,
recomputation and point-to-point pipeline transfers inside), plus the
schedule's bubble, the exposed data-parallel gradient/parameter traffic, and
the optimizer step. Every part is kept, so the breakdown sums to the step.
"""

from __future__ import annotations

from dataclasses import dataclass
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


def _combine(dense: LayerCost, moe: LayerCost, num_dense: Array, num_moe: Array) -> dict[str, Array]:
    def total(field: str) -> Array:
        return num_dense * getattr(dense, field) + num_moe * getattr(moe, field)

    return {name: total(name) for name in LayerCost.__dataclass_fields__}


def _head_cost(grid: PlanGrid, model: TransformerSpec, hardware: Hardware, seq_len: int) -> dict[str, Array]:
    """LM head GEMM and fp32 cross-entropy traffic on the last stage, per micro-batch."""
    tokens = grid.micro_batch_size * seq_len / grid.cp
    head = (Linear("lm_head", model.hidden_size, model.vocab_size, "column"),)
    forward, input_grad, weight_grad, flop = linears_cost(hardware, head, tokens, grid.tp, compute_row="bf16")
    loss_bytes = 4.0 * 4.0 * tokens * model.vocab_size / grid.tp  # write, softmax read/write, grad write
    return {
        "compute_forward_s": forward,
        "compute_backward_s": input_grad + weight_grad,
        "weight_grad_s": weight_grad,
        "memory_s": memory_s(hardware, loss_bytes),
        "flop": 3.0 * flop,
    }


def _stage(
    grid: PlanGrid,
    model: TransformerSpec,
    shapes: LayerShapes,
    hardware: Hardware,
    *,
    seq_len: int,
    recompute: Array,
    params: StageParams,
) -> tuple[_Stage, Array]:
    num_moe = params.moe_layers_per_stage
    num_dense = params.layers_per_stage - num_moe
    dense = layer_cost(
        grid, model, shapes, hardware, seq_len=seq_len, moe=False, recompute_fraction=recompute
    )
    moe = (
        layer_cost(grid, model, shapes, hardware, seq_len=seq_len, moe=True, recompute_fraction=recompute)
        if model.moe is not None
        else dense
    )
    layers = _combine(dense, moe, num_dense, num_moe)
    head = _head_cost(grid, model, hardware, seq_len)
    pp_comm = _pipeline_p2p(grid, model, hardware, seq_len)
    compute = (
        layers["compute_forward_s"]
        + layers["compute_backward_s"]
        + head["compute_forward_s"]
        + head["compute_backward_s"]
    )
    memory_bound = layers["memory_forward_s"] + layers["memory_backward_s"] + head["memory_s"]
    comm = layers["tp_comm_s"] + layers["cp_comm_s"] + layers["ep_comm_s"]
    busy = compute + memory_bound + comm + layers["recompute_s"]
    launch = layers["num_kernels"] * hardware.efficiency.kernel_launch_s
    parts = {
        "compute": compute,
        "recompute": layers["recompute_s"],
        "memory_bound": memory_bound,
        "tp_comm": layers["tp_comm_s"],
        "cp_comm": layers["cp_comm_s"],
        "ep_comm": layers["ep_comm_s"],
        "pp_comm": pp_comm,
        "other": np.maximum(launch - busy, 0.0),
    }
    total = sum(parts.values())
    forward = layers["compute_forward_s"] + layers["memory_forward_s"] + head["compute_forward_s"]
    forward_share = forward / np.maximum(compute + memory_bound, 1e-30)
    forward_s = total * forward_share
    backward_s = total - forward_s
    weight_grad = layers["weight_grad_s"] + head["weight_grad_s"]
    # Hardware FLOP of the whole model per micro-batch per model replica, summed over its GPUs.
    layer_flop = model.num_dense_layers * dense.hardware_flop + model.num_moe_layers * moe.hardware_flop
    flop_per_microbatch = (layer_flop + head["flop"]) * grid.tp * grid.cp
    return _Stage(forward_s, backward_s, weight_grad, parts), flop_per_microbatch


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
    expert_replicas = grid.tp * grid.cp * grid.dp / grid.ep
    stack = hardware.stack
    rules = sharding_columns(grid, stack)
    flat_ring = rules.gathers_layers & stack.zero3_flat_ring  # one ring per rank through its own NIC

    def traffic(num_params: Array, group: Array, stride: Array) -> tuple[Array, Array, Array]:
        reduce = collectives.all_reduce_s(fabric, num_params * grid.grad_bytes, group, stride)
        scatter = collectives.reduce_scatter_s(fabric, num_params * grid.grad_bytes, group, stride, flat_ring)
        gather = collectives.all_gather_s(fabric, num_params * weight_bytes, group, stride, flat_ring)
        return reduce, scatter, gather

    dense = traffic(params.dense, replicas, grid.tp)
    expert = traffic(params.expert, expert_replicas, grid.ep)
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


def evaluate_grid(grid: PlanGrid, model: TransformerSpec, hardware: Hardware, seq_len: int) -> StepArrays:
    """Step breakdown and memory of every plan in ``grid`` (the vectorized core)."""
    shapes = layer_shapes(model)
    params = stage_params(grid, model, shapes)  # computed once: memory, stage and DP all need it
    memory = training_memory(grid, model, shapes, hardware, seq_len, params=params)
    stage, flop_per_microbatch = _stage(
        grid, model, shapes, hardware, seq_len=seq_len, recompute=memory.recompute_fraction, params=params
    )
    m = grid.num_microbatches
    parts = {name: m * value for name, value in stage.parts_per_microbatch.items()}
    parts["bubble"] = bubble_s(grid, stage.forward_s, stage.backward_s, stage.weight_grad_s)
    parts["dp_comm"], parts["optimizer"] = _data_parallel(grid, params, hardware, stage)
    flop = flop_per_microbatch * m * grid.dp
    return StepArrays(parts=parts, memory=memory, hardware_flop_per_step=flop)


__all__ = ["BREAKDOWN_PARTS", "StepArrays", "evaluate_grid", "gemm_s"]
