"""Training memory per GPU, vectorized over plans.

Model state (mixed precision, Megatron conventions): 16-bit weights, gradients
of ``grad_reduce_precision`` (fp32 "main grads" by default), and Adam state of
12 bytes per parameter (fp32 master weights, first and second moments). ZeRO-1
shards the optimizer state over the data-parallel ranks, ZeRO-2 also the
gradients, ZeRO-3 (FSDP) everything (REFERENCE.md section 2). FP8 training
keeps an extra 1-byte weight copy.

Activations per layer generalize Korthikanti et al. 2022 (``sbh(34 + 5as/h)``
for GPT) to GQA, SwiGLU, MoE and MLA by counting the tensors each block keeps
for backward: norm and block inputs (replicated across TP unless sequence
parallelism splits them), Q/K/V and attention output, MLP intermediates, the
score matrix for unfused attention, dropout masks (1 byte) when dropout is on.
Selective recomputation drops the score matrix; full recomputation keeps only
each layer's input.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from lightspeed.records import Record
from lightspeed.sol.core.hardware import Hardware
from lightspeed.sol.core.shapes import LayerShapes, Linear
from lightspeed.sol.train.grid import RECOMPUTE_CODES, PlanGrid
from lightspeed.sol.train.schedules import activations_in_flight, parameter_copies
from lightspeed.workload import TransformerSpec

Array = Any

ADAM_STATE_BYTES_PER_PARAM = 12.0
FP8_WEIGHT_COPY_BYTES = 1.0


@dataclass(frozen=True)
class StageParams(Record):
    """Parameters one GPU holds for its pipeline stage (before ZeRO sharding)."""

    dense: Array
    expert: Array
    layers_per_stage: Array
    moe_layers_per_stage: Array


@dataclass(frozen=True)
class TrainMemory(Record):
    """Bytes per GPU at the peak, by component (arrays aligned with the grid)."""

    weights_bytes: Array
    gradients_bytes: Array
    optimizer_bytes: Array
    activations_bytes: Array
    reserved_bytes: Array
    recompute_fraction: Array

    @property
    def total_bytes(self) -> Array:
        """Sum of every component."""
        return (
            self.weights_bytes
            + self.gradients_bytes
            + self.optimizer_bytes
            + self.activations_bytes
            + self.reserved_bytes
        )


def _per_gpu(linears: tuple[Linear, ...], tp: Array) -> Array:
    total: Array = 0.0
    for linear in linears:
        divisor = tp if linear.split in ("column", "row") else 1.0
        total = total + linear.num_params / divisor
    return total


def stage_layers(grid: PlanGrid, model: TransformerSpec) -> tuple[Array, Array]:
    """(layers, MoE layers) on the busiest pipeline stage."""
    layers = np.ceil(model.num_layers / grid.pp)
    moe_layers = np.minimum(layers, float(model.num_moe_layers))
    return layers, moe_layers


def stage_params(grid: PlanGrid, model: TransformerSpec, shapes: LayerShapes) -> StageParams:
    """Parameters per GPU on the busiest stage (with embedding and LM head counted)."""
    layers, moe_layers = stage_layers(grid, model)
    common = _per_gpu(shapes.attention, grid.tp) + shapes.num_norm_params
    dense_layer = common + _per_gpu(shapes.mlp, grid.tp)
    moe_layer = common + _per_gpu(shapes.shared_experts, grid.tp) + _per_gpu(shapes.router, grid.tp)
    embedding = model.vocab_size * model.hidden_size / grid.tp
    if model.position_embedding == "learned":
        embedding = embedding + model.max_seq_len * model.hidden_size
    head_copies = np.where((grid.pp > 1) | (not model.tied_embeddings), 1.0, 0.0)
    ends = np.where(grid.pp > 1, embedding, embedding * (1.0 + head_copies))
    dense = (layers - moe_layers) * dense_layer + moe_layers * moe_layer + ends
    expert = np.zeros_like(dense)
    if model.moe is not None:
        per_expert = sum(linear.num_params for linear in shapes.experts)
        experts = np.where(grid.physical_experts > 0, grid.physical_experts, model.moe.num_routed_experts)
        expert = moe_layers * per_expert * experts / grid.ep  # redundant replicas included
    copies = parameter_copies(grid)
    return StageParams(dense * copies, expert * copies, layers, moe_layers)


def _activation_bytes_per_layer(
    grid: PlanGrid, model: TransformerSpec, shapes: LayerShapes, *, act: float, seq_len: int, moe: bool
) -> tuple[Array, Array]:
    """(bytes a layer keeps for backward without recomputation, bytes with full recomputation)."""
    tokens = grid.micro_batch_size * seq_len / grid.cp
    hidden = model.hidden_size
    split_tokens = np.where(grid.sequence_parallel, tokens / grid.tp, tokens)
    replicated = split_tokens * (4.0 * hidden * act + np.where(grid.dropout, 2.0 * hidden, 0.0))
    kv_heads = np.maximum(shapes.num_kv_heads / grid.tp, 1.0)
    heads = shapes.num_heads / grid.tp
    attention = (
        tokens
        * act
        * (
            heads * (shapes.q_head_dim + shapes.v_head_dim)
            + kv_heads * (shapes.k_head_dim + shapes.v_head_dim)
        )
    )
    attention = attention + np.where(
        grid.unfused_attention, 0.0, tokens * heads * 4.0
    )  # flash: fp32 softmax stats
    scores = np.where(
        grid.unfused_attention & (grid.recompute == RECOMPUTE_CODES["none"]),
        5.0 * tokens * heads * seq_len,
        0.0,
    )
    gates = 3.0 if model.mlp == "swiglu" else 2.0
    if moe:
        assert model.moe is not None
        moe_tokens = np.where(grid.tp > 1, tokens / grid.tp, tokens)
        routed = moe_tokens * model.moe.top_k * grid.expert_imbalance
        shared = model.moe.num_shared_experts * model.moe.shared_expert_ffn_hidden_size
        mlp = (
            routed * act * (hidden + gates * model.moe.expert_ffn_hidden_size)
            + tokens * act * gates * shared / grid.tp
        )
    else:
        mlp = tokens * act * gates * model.ffn_hidden_size / grid.tp
    full = split_tokens * hidden * act
    return replicated + attention + scores + mlp, full


def training_memory(
    grid: PlanGrid,
    model: TransformerSpec,
    shapes: LayerShapes,
    hardware: Hardware,
    seq_len: int,
    *,
    params: StageParams | None = None,
) -> TrainMemory:
    """Peak bytes per GPU of every plan in ``grid`` (``params``: :func:`stage_params`, if known)."""
    params = params or stage_params(grid, model, shapes)
    replicas = grid.dp * grid.cp
    expert_replicas = grid.tp * grid.cp * grid.dp / grid.ep
    weight_bytes = hardware.activation_bytes_per_element
    if hardware.precision.startswith(("fp8", "mxfp8", "fp4", "nvfp4", "mxfp4")):
        weight_bytes += FP8_WEIGHT_COPY_BYTES
    optimizer_per_param = ADAM_STATE_BYTES_PER_PARAM if weight_bytes < 4.0 else 8.0

    def sharded(per_param: Array, from_stage: int) -> Array:
        dense_share = np.where(grid.zero_stage >= from_stage, params.dense / replicas, params.dense)
        expert_share = np.where(grid.zero_stage >= from_stage, params.expert / expert_replicas, params.expert)
        return per_param * (dense_share + expert_share)

    weights = sharded(weight_bytes, 3)
    layer_params = (params.dense + params.expert) / np.maximum(params.layers_per_stage, 1.0)
    weights = weights + np.where(
        grid.zero_stage >= 3, 2.0 * layer_params * weight_bytes, 0.0
    )  # gathered layers
    gradients = sharded(grid.grad_bytes, 2)
    optimizer = sharded(optimizer_per_param, 1)
    act = hardware.activation_bytes_per_element
    dense_kept, dense_full = _activation_bytes_per_layer(
        grid, model, shapes, act=act, seq_len=seq_len, moe=False
    )
    moe_kept, moe_full = dense_kept, dense_full
    if model.moe is not None:
        moe_kept, moe_full = _activation_bytes_per_layer(
            grid, model, shapes, act=act, seq_len=seq_len, moe=True
        )
    num_dense = params.layers_per_stage - params.moe_layers_per_stage
    in_flight = activations_in_flight(grid)
    kept = (num_dense * dense_kept + params.moe_layers_per_stage * moe_kept) * in_flight
    full = (num_dense * dense_full + params.moe_layers_per_stage * moe_full) * in_flight
    tokens = grid.micro_batch_size * seq_len / grid.cp
    logits = np.where(grid.pp > 1, 0.0, 2.0 * 4.0 * tokens * model.vocab_size / grid.tp)  # fp32 logits + grad
    reserved = np.full_like(weights, hardware.overheads.reserved_of(hardware.usable_memory_bytes))
    free = hardware.usable_memory_bytes - (weights + gradients + optimizer + reserved + logits)
    fraction = _recompute_fraction(grid, kept, full, free, params.layers_per_stage)
    activations = (1.0 - fraction) * kept + fraction * full + logits
    return TrainMemory(weights, gradients, optimizer, activations, reserved, fraction)


def _recompute_fraction(grid: PlanGrid, kept: Array, full: Array, free: Array, layers: Array) -> Array:
    """Share of each stage's layers that run fully recomputed.

    ``full`` -> 1, ``none``/``selective`` -> 0; ``partial`` -> the fewest whole
    layers that bring activations under the free memory (1 if even that fails).
    """
    saving = np.maximum(kept - full, 1e-9)
    needed = np.clip((kept - free) / saving, 0.0, 1.0)
    whole_layers = np.ceil(needed * layers - 1e-9) / np.maximum(layers, 1.0)
    return np.select(
        [grid.recompute == RECOMPUTE_CODES["full"], grid.recompute == RECOMPUTE_CODES["partial"]],
        [1.0, whole_layers],
        0.0,
    )
