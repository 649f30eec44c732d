"""Per-layer, per-micro-batch cost of training on one GPU, vectorized over plans.

Each operation is timed on a roofline: ``max(FLOP / (peak x GEMM efficiency),
bytes / (HBM bandwidth x memory efficiency))``. GEMMs run forward, then
backward as two GEMMs (input gradient and weight gradient) of permuted shapes.
Fused attention runs at a fraction of the GEMM ceiling and its backward costs
2.5x its forward (FlashAttention recomputes the scores: 5 matmuls vs 2).
Unfused attention (pre-2022 Megatron) materializes the score matrix and pays
memory traffic for softmax and dropout over it.

Communication inside a layer: tensor-parallel all-reduce (or all-gather +
reduce-scatter with sequence parallelism) around attention and MLP,
context-parallel ring exchange of K/V, expert-parallel all-to-all dispatch and
combine. Each is exposed unless overlap is on and compute can hide it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from lightspeed.records import Record
from lightspeed.sol.core import collectives
from lightspeed.sol.core.hardware import Hardware
from lightspeed.sol.core.roofline import (
    KERNELS_PER_DENSE_LAYER_FORWARD,
    KERNELS_PER_MOE_LAYER_FORWARD,
    linears_cost,
    memory_s,
)
from lightspeed.sol.core.shapes import LayerShapes
from lightspeed.sol.train.grid import RECOMPUTE_CODES, PlanGrid
from lightspeed.workload import TransformerSpec

Array = Any

# Bytes moved per attention-score element by unfused softmax + dropout:
# forward writes scores (2), reads them and writes probabilities (4, fused
# scale-mask-softmax), dropout reads probabilities, writes output and a 1-byte
# mask (5); backward re-reads and writes about as much again plus the mask.
UNFUSED_SCORE_BYTES_FORWARD = 11.0
UNFUSED_SCORE_BYTES_BACKWARD = 13.0
FLASH_BACKWARD_FACTOR = 2.5


@dataclass(frozen=True)
class LayerCost(Record):
    """Times (s), FLOP and kernel counts of one layer for one micro-batch on one GPU.

    All fields are arrays aligned with the plan grid. ``*_comm`` fields are the
    *exposed* part of that communication (what compute did not hide).
    """

    compute_forward_s: Array
    compute_backward_s: Array
    weight_grad_s: Array
    memory_forward_s: Array
    memory_backward_s: Array
    tp_comm_s: Array
    cp_comm_s: Array
    ep_comm_s: Array
    recompute_s: Array
    num_kernels: Array
    hardware_flop: Array


@dataclass(frozen=True)
class _Context:
    grid: PlanGrid
    model: TransformerSpec
    shapes: LayerShapes
    hardware: Hardware
    seq_len: int

    @property
    def tokens(self) -> Array:
        """Tokens per GPU per micro-batch along the sequence (split by CP)."""
        return self.grid.micro_batch_size * self.seq_len / self.grid.cp

    @property
    def norm_tokens(self) -> Array:
        """Tokens each GPU normalizes: split by TP under sequence parallelism."""
        return np.where(self.grid.sequence_parallel, self.tokens / self.grid.tp, self.tokens)


def _attention_core(ctx: _Context) -> tuple[Array, Array, Array, Array]:
    """(forward s, backward s, forward FLOP, backward FLOP) of softmax(QK^T)V."""
    grid, hardware, shapes = ctx.grid, ctx.hardware, ctx.shapes
    heads = shapes.num_heads / grid.tp
    unfused = grid.unfused_attention
    causal = np.where(unfused, 1.0, 0.5)  # unfused kernels compute the masked half too
    head_dims = shapes.q_head_dim + shapes.v_head_dim
    flop = 2.0 * ctx.tokens * ctx.seq_len * heads * head_dims * causal
    efficiency = hardware.efficiency
    flash_rate = (
        hardware.peak_flop_per_s * efficiency.gemm_max_efficiency * efficiency.attention_efficiency_factor
    )
    flash_forward = flop / flash_rate
    stacked = ctx.tokens * heads
    units = hardware.accelerator.num_compute_units
    gemm_rate = hardware.peak_flop_per_s * efficiency.gemm_efficiency(
        stacked, ctx.seq_len, shapes.q_head_dim, units
    )
    scores = ctx.tokens * ctx.seq_len * heads
    unfused_forward = flop / gemm_rate + memory_s(hardware, scores * UNFUSED_SCORE_BYTES_FORWARD)
    unfused_backward = 2.0 * flop / gemm_rate + memory_s(hardware, scores * UNFUSED_SCORE_BYTES_BACKWARD)
    forward = np.where(unfused, unfused_forward, flash_forward)
    backward = np.where(unfused, unfused_backward, FLASH_BACKWARD_FACTOR * flash_forward)
    backward_flop = np.where(unfused, 2.0, FLASH_BACKWARD_FACTOR) * flop
    return forward, backward, flop, backward_flop


def _elementwise_bytes(ctx: _Context, moe: bool) -> Array:
    """Forward bytes of norms, residual adds, activations, RoPE, dropout, MoE permutes."""
    grid, model, shapes = ctx.grid, ctx.model, ctx.shapes
    act = ctx.hardware.activation_bytes_per_element
    hidden = model.hidden_size
    total = 10.0 * hidden * ctx.norm_tokens * act  # 2 norms (r+w), 2 residual adds (2r+w)
    total = total + np.where(grid.dropout, 2.0 * (2.0 * act + 1.0) * hidden * ctx.norm_tokens, 0.0)
    if model.position_embedding == "rope":
        total = (
            total
            + 2.0 * (shapes.num_heads + shapes.num_kv_heads) * shapes.q_head_dim / grid.tp * ctx.tokens * act
        )
    act_passes = 3.0 if model.mlp == "swiglu" else 2.0
    if not moe:
        return total + act_passes * model.ffn_hidden_size / grid.tp * ctx.tokens * act
    assert model.moe is not None
    routed = _routed_tokens(ctx)
    total = total + act_passes * model.moe.expert_ffn_hidden_size * routed * act + 4.0 * hidden * routed * act
    shared = model.moe.num_shared_experts * model.moe.shared_expert_ffn_hidden_size
    return total + act_passes * shared / grid.tp * ctx.tokens * act


def _routed_tokens(ctx: _Context) -> Array:
    """Token-expert pairs the busiest GPU computes per micro-batch (imbalance included)."""
    model = ctx.model
    assert model.moe is not None
    grid = ctx.grid
    moe_tokens = np.where(grid.tp > 1, ctx.tokens / grid.tp, ctx.tokens)
    return moe_tokens * model.moe.top_k * grid.expert_imbalance


def _tp_comm(ctx: _Context, num_blocks: float, hideable_s: Array) -> tuple[Array, Array]:
    """Exposed (forward, backward) tensor-parallel communication of ``num_blocks`` blocks.

    Without sequence parallelism each block all-reduces its output forward and its
    input gradient backward. With it, forward is all-gather + reduce-scatter, and
    backward adds a third collective: the sequence-sharded input is all-gathered
    again for the weight gradient (Korthikanti et al. 2022, section 4.2.2).
    """
    grid, hardware = ctx.grid, ctx.hardware
    size = ctx.tokens * ctx.model.hidden_size * hardware.activation_bytes_per_element
    fabric = hardware.fabric
    all_reduce = collectives.all_reduce_s(fabric, size, grid.tp, 1.0)
    gather = collectives.all_gather_s(fabric, size, grid.tp, 1.0)
    forward = num_blocks * np.where(grid.sequence_parallel, 2.0 * gather, all_reduce)
    backward = num_blocks * np.where(grid.sequence_parallel, 3.0 * gather, all_reduce)
    exposed_forward = np.where(grid.tp_overlap, np.maximum(forward - hideable_s, 0.0), forward)
    exposed_backward = np.where(grid.tp_overlap, np.maximum(backward - 2.0 * hideable_s, 0.0), backward)
    return exposed_forward, exposed_backward


def _cp_comm(ctx: _Context, attention_forward_s: Array, attention_backward_s: Array) -> tuple[Array, Array]:
    """Exposed ring-attention K/V exchange (overlapped with the attention it feeds)."""
    grid, shapes, hardware = ctx.grid, ctx.shapes, ctx.hardware
    kv_heads = np.maximum(shapes.num_kv_heads / grid.tp, 1.0)
    if ctx.model.attention.kind == "mla":
        kv_heads = shapes.num_heads / grid.tp
    chunk = (
        ctx.tokens
        * kv_heads
        * (shapes.k_head_dim + shapes.v_head_dim)
        * hardware.activation_bytes_per_element
    )
    crosses = collectives.crosses_domains(hardware.fabric, grid.cp, grid.tp)
    step = collectives.send_recv_s(hardware.fabric, chunk, crosses)
    forward = np.where(grid.cp > 1, (grid.cp - 1.0) * step, 0.0)
    return np.maximum(forward - attention_forward_s, 0.0), np.maximum(
        2.0 * forward - attention_backward_s, 0.0
    )


def _remote_scale(ctx: _Context) -> Array:
    """Cross-node copies per routed token relative to one copy per expert.

    With group-limited routing a token reaches at most ``top_k_groups`` nodes and
    is sent once per node, so about ``top_k_groups x (n-1)/n`` copies cross the
    network instead of ``top_k x (n-1)/n`` (DeepSeek-V3 section 3.2.2).
    """
    moe = ctx.model.moe
    assert moe is not None
    if not moe.top_k_groups:
        return 1.0
    return min(moe.top_k_groups, moe.top_k) / moe.top_k


def _ep_comm(ctx: _Context, forward_compute_s: Array, backward_compute_s: Array) -> tuple[Array, Array]:
    """Exposed expert-parallel all-to-all (dispatch + combine) of one MoE layer."""
    grid, hardware = ctx.grid, ctx.hardware
    routed_bytes = _routed_tokens(ctx) * ctx.model.hidden_size
    fabric = hardware.fabric
    remote = _remote_scale(ctx)
    dispatch = collectives.all_to_all_s(
        fabric, routed_bytes * hardware.input_bytes_per_element, grid.ep, 1.0, remote
    )
    combine = collectives.all_to_all_s(
        fabric, routed_bytes * hardware.activation_bytes_per_element, grid.ep, 1.0, remote
    )
    forward = dispatch + combine
    backward = 2.0 * combine
    exposed_forward = np.where(grid.ep_overlap, np.maximum(forward - forward_compute_s, 0.0), forward)
    exposed_backward = np.where(grid.ep_overlap, np.maximum(backward - backward_compute_s, 0.0), backward)
    return exposed_forward, exposed_backward


def _mlp_part(ctx: _Context, moe: bool) -> tuple[Array, Array, Array, Array]:
    """(forward s, input-grad s, weight-grad s, FLOP) of the MLP or MoE block."""
    grid, hardware, shapes = ctx.grid, ctx.hardware, ctx.shapes
    if not moe:
        return linears_cost(hardware, shapes.mlp, ctx.tokens, grid.tp)
    model = ctx.model
    assert model.moe is not None
    physical = np.where(grid.physical_experts > 0, grid.physical_experts, model.moe.num_routed_experts)
    local_experts = physical / grid.ep  # redundant replicas share the GPU's routed tokens
    per_expert = _routed_tokens(ctx) / local_experts
    experts = linears_cost(hardware, shapes.experts, per_expert, grid.tp, local_experts)
    shared = linears_cost(hardware, shapes.shared_experts, ctx.tokens, grid.tp)
    router = linears_cost(hardware, shapes.router, ctx.tokens, grid.tp)
    parts = (experts, shared, router)
    return (
        sum(part[0] for part in parts),
        sum(part[1] for part in parts),
        sum(part[2] for part in parts),
        sum(part[3] for part in parts),
    )


def layer_cost(
    grid: PlanGrid,
    model: TransformerSpec,
    shapes: LayerShapes,
    hardware: Hardware,
    *,
    seq_len: int,
    moe: bool,
    recompute_fraction: Array,
) -> LayerCost:
    """Cost of one dense (``moe=False``) or MoE layer per micro-batch per GPU.

    ``recompute_fraction`` is the share of layers that run their forward again
    before backward (1 for full recomputation, see ``train_memory``).
    """
    ctx = _Context(grid, model, shapes, hardware, seq_len)
    attention = linears_cost(hardware, shapes.attention, ctx.tokens, grid.tp)
    mlp = _mlp_part(ctx, moe)
    core_forward, core_backward, core_flop, core_backward_flop = _attention_core(ctx)
    gemm_forward = attention[0] + mlp[0]
    compute_forward = gemm_forward + core_forward
    weight_grad = attention[2] + mlp[2]
    compute_backward = attention[1] + mlp[1] + weight_grad + core_backward
    elementwise = _elementwise_bytes(ctx, moe)
    memory_forward = memory_s(hardware, elementwise)
    memory_backward = 2.0 * memory_forward
    shared = model.moe is not None and model.moe.num_shared_experts > 0
    tp_blocks = 2.0 if (not moe or shared) else 1.0
    tp_forward, tp_backward = _tp_comm(ctx, tp_blocks, gemm_forward)
    cp_forward, cp_backward = _cp_comm(ctx, core_forward, core_backward)
    if moe:
        ep_forward, ep_backward = _ep_comm(ctx, compute_forward, compute_backward)
    else:
        ep_forward = ep_backward = np.zeros_like(compute_forward)
    forward_total = compute_forward + memory_forward + tp_forward + cp_forward + ep_forward
    selective = grid.recompute == RECOMPUTE_CODES["selective"]
    recompute = recompute_fraction * forward_total + np.where(selective, core_forward, 0.0)
    forward_flop = attention[3] + mlp[3] + core_flop
    recompute_flop = recompute_fraction * forward_flop + np.where(selective, core_flop, 0.0)
    kernels = KERNELS_PER_MOE_LAYER_FORWARD if moe else KERNELS_PER_DENSE_LAYER_FORWARD
    return LayerCost(
        compute_forward_s=compute_forward,
        compute_backward_s=compute_backward,
        weight_grad_s=weight_grad,
        memory_forward_s=memory_forward,
        memory_backward_s=memory_backward,
        tp_comm_s=tp_forward + tp_backward,
        cp_comm_s=cp_forward + cp_backward,
        ep_comm_s=ep_forward + ep_backward,
        recompute_s=recompute,
        num_kernels=3.0 * kernels + kernels * recompute_fraction + np.where(selective, 2.0, 0.0),
        hardware_flop=forward_flop + 2.0 * (attention[3] + mlp[3]) + core_backward_flop + recompute_flop,
    )
