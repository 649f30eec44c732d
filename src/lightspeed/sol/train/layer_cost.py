"""Per-layer, per-micro-batch cost of training on one GPU, vectorized over plans.

Each operation is timed on a roofline: ``max(FLOP / sustained rate, bytes /
(HBM bandwidth x memory efficiency))``. The sustained rate is the device's
kernel ceiling (MAMF for GEMMs in the precision run, the attention kernel's
published fraction) times the clock a power cap leaves and the stack's fitted
``kernel_efficiency``. GEMMs run forward, then backward as two GEMMs (input
gradient and weight gradient) of permuted shapes; the LM head stays in BF16
(Transformer Engine and torchao leave it unquantized), FP8 and FP4 linears pay the
stack's cast kernels. Fused attention runs in BF16 at its kernel's forward and
backward efficiency (the backward does 2.5x the forward's FLOPs: five matmuls
against two); unfused attention (pre-2022 Megatron) materializes the score
matrix and pays memory traffic for softmax and dropout over it. Norms,
residual adds, activations, RoPE, dropout and MoE permutes are memory-bound,
their bytes scaled by the stack's ``elementwise_traffic_factor`` (eager
PyTorch moves ~3x what fused kernels do).

Communication inside a layer: tensor-parallel all-reduce (or all-gather +
reduce-scatter with sequence parallelism) around attention and MLP; the
context-parallel ring, where each of the ``cp - 1`` steps sends one K/V chunk
while the attention of the chunk in hand runs (forward; backward sends the
K/V gradients too), so only what a step's attention cannot cover is exposed;
expert-parallel all-to-all dispatch and combine. Each is exposed unless
overlap is on and compute can hide it.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from lightspeed.records import Record
from lightspeed.sol.core import collectives
from lightspeed.sol.core.experts import expert_nodes, node_dedupe_scale
from lightspeed.sol.core.hardware import Hardware
from lightspeed.sol.core.roofline import (
    kernels_per_layer_forward,
    linears_cost,
    local_dims,
    memory_s,
)
from lightspeed.sol.core.shapes import LayerShapes, Linear
from lightspeed.sol.train.grid import ATTENTION_CODES, PlanGrid
from lightspeed.workload import TransformerSpec, mean_attended_tokens
from lightspeed.workload.flops import indexer_forward_flop

Array = Any

# Bytes moved per attention-score element by unfused softmax + dropout:
# forward writes scores (2), reads them and writes probabilities (4, fused
# scale-mask-softmax), dropout reads probabilities, writes output and a 1-byte
# mask (5); backward re-reads and writes about as much again plus the mask.
UNFUSED_SCORE_BYTES_FORWARD = 11.0
UNFUSED_SCORE_BYTES_BACKWARD = 13.0
FLASH_BACKWARD_FACTOR = 2.5
MLA_UP_PROJECTIONS = ("q_up", "kv_up")


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

    @property
    def bf16_flop_per_s(self) -> float:
        """Sustained BF16 peak (attention and the LM head run in BF16 whatever the GEMM precision)."""
        hardware = self.hardware
        figure = hardware.accelerator.compute.get("bf16") or hardware.accelerator.compute.get("fp16")
        peak = figure.dense_per_s if figure is not None else hardware.peak_flop_per_s
        return peak * hardware.clock_fraction * hardware.stack.kernel_efficiency


def _flash_rates(ctx: _Context) -> tuple[Array, Array]:
    """(forward, backward) FLOP/s of the fused attention kernel each plan runs, at the
    sequence block one ring step works on (``seq / cp``)."""
    efficiency = ctx.hardware.efficiency
    block = ctx.seq_len / ctx.grid.cp
    flash2 = ctx.grid.attention == ATTENTION_CODES["flash2"]
    rates = []
    for backward in (False, True):
        best = efficiency.attention_efficiency("flash", backward=backward, seq_len=block)
        fa2 = efficiency.attention_efficiency("flash2", backward=backward, seq_len=block)
        rates.append(ctx.bf16_flop_per_s * np.where(flash2, fa2, best))
    return rates[0], rates[1]


@functools.cache
def _fused_attended(model: TransformerSpec, seq_len: int) -> float:
    """Keys a query attends to under the causal mask, over the model's layers (cached per model)."""
    return float(mean_attended_tokens(model, seq_len, causal=True))


@functools.cache
def _indexer_flop_per_token(model: TransformerSpec, seq_len: int) -> float:
    """Forward FLOP per token of a sparse model's lightning indexer in one (average) layer under
    the causal mask, whole on every tensor-parallel rank (cached per model)."""
    return indexer_forward_flop(model, seq_len, causal=True)


def _attention_core(ctx: _Context) -> tuple[Array, Array, Array, Array]:
    """(forward s, backward s, forward FLOP, backward FLOP) of softmax(QK^T)V.

    Fused kernels skip what the causal mask and a local window or chunk leave out (a query
    attends to :func:`~lightspeed.workload.mean_attended_tokens` keys, averaged over the
    model's layers), a sparse model's lightning indexer every causal key; unfused ones compute the
    whole ``s x s`` score matrix."""
    grid, hardware, shapes = ctx.grid, ctx.hardware, ctx.shapes
    heads = shapes.num_heads / grid.tp
    unfused = grid.unfused_attention
    share = ctx.model.block_shares[0]  # a hybrid's attention blocks per layer (the fused figure has it)
    attended = np.where(unfused, share * ctx.seq_len, _fused_attended(ctx.model, ctx.seq_len))
    head_dims = shapes.q_head_dim + shapes.v_head_dim
    flop = 2.0 * ctx.tokens * attended * heads * head_dims + ctx.tokens * _indexer_flop_per_token(
        ctx.model, ctx.seq_len
    )
    forward_rate, backward_rate = _flash_rates(ctx)
    stacked = ctx.tokens * heads
    gemm_rate = hardware.gemm_flop_per_s(stacked, ctx.seq_len, shapes.q_head_dim, "bf16")
    scores = share * ctx.tokens * ctx.seq_len * heads
    unfused_forward = flop / gemm_rate + memory_s(hardware, scores * UNFUSED_SCORE_BYTES_FORWARD)
    unfused_backward = 2.0 * flop / gemm_rate + memory_s(hardware, scores * UNFUSED_SCORE_BYTES_BACKWARD)
    forward = np.where(unfused, unfused_forward, flop / forward_rate)
    backward = np.where(unfused, unfused_backward, FLASH_BACKWARD_FACTOR * flop / backward_rate)
    backward_flop = np.where(unfused, 2.0, FLASH_BACKWARD_FACTOR) * flop
    return forward, backward, flop, backward_flop


def _recurrent_scan(ctx: _Context) -> tuple[Array, Array, Array, Array]:
    """(forward s, backward s, forward FLOP, backward FLOP) of a hybrid's recurrent scans in one
    (average) layer: :func:`~lightspeed.workload.flops.recurrent_scan_forward_flop`'s chunked
    scan per token (Mamba-2's SSD or Gated DeltaNet's delta rule) on this rank's heads (tensor
    parallelism splits them), paced by the fused attention kernel's rate (the scan's chunk products
    are the same small tensor-core matmuls over a sequence block) or by the bytes it streams,
    whichever is slower: its inputs and output
    (:attr:`~lightspeed.workload.MambaSpec.scan_streamed_values_per_token`) and each chunk's
    state. The backward recomputes the chunk products as a fused attention backward does (2.5x
    the forward's FLOPs, twice its bytes)."""
    model, grid = ctx.model, ctx.grid
    mixer = model.recurrent
    if mixer is None:
        zero = np.zeros_like(ctx.tokens)
        return zero, zero, zero, zero
    share = model.block_shares[1]
    tp = grid.tp
    flop = share * ctx.tokens * mixer.scan_flop_per_token() / tp
    act = ctx.hardware.activation_bytes_per_element
    streamed = mixer.scan_streamed_values_per_token / tp * act
    streamed = streamed + mixer.state_values / tp * mixer.chunk_state_bytes / mixer.chunk_size
    traffic = share * ctx.tokens * streamed
    forward_rate, backward_rate = _flash_rates(ctx)
    kernel_s = ctx.hardware.efficiency.kernel_s
    forward = kernel_s(flop / forward_rate, memory_s(ctx.hardware, traffic))
    backward = kernel_s(FLASH_BACKWARD_FACTOR * flop / backward_rate, memory_s(ctx.hardware, 2.0 * traffic))
    return forward, backward, flop, FLASH_BACKWARD_FACTOR * flop


def _recurrent_cp_s(ctx: _Context) -> tuple[Array, Array]:
    """Exposed (forward, backward) context-parallel exchange of a hybrid's recurrent blocks in one
    (average) layer: Megatron-Core's Mamba and Gated DeltaNet context parallelism turns the
    sequence-split inputs of the convolution and scan into head-split ones and back (an
    all-to-all of the conv channels in, one of the heads' output out), and the reverse for their
    gradients; nothing overlaps them."""
    model, grid, hardware = ctx.model, ctx.grid, ctx.hardware
    mixer = model.recurrent
    if mixer is None:
        zero = np.zeros_like(ctx.tokens)
        return zero, zero
    share = model.block_shares[1]
    act = hardware.activation_bytes_per_element
    width = (mixer.conv_channels + mixer.inner_size) / grid.tp
    exchange = collectives.all_to_all_s(hardware.fabric, ctx.tokens * width * act, grid.cp, grid.tp)
    forward = np.where(grid.cp > 1, share * exchange, 0.0)
    return forward, forward


def elementwise_bytes(ctx: _Context, moe: bool) -> dict[str, Array]:
    """Forward HBM bytes of the memory-bound ops by kind (``norm``, ``residual``, ``activation``,
    ``rope``, ``dropout``, ``permute``, a hybrid's ``recurrent`` convolution and norms), before the
    stack's traffic factor."""
    grid, model, shapes = ctx.grid, ctx.model, ctx.shapes
    act = ctx.hardware.activation_bytes_per_element
    hidden = model.hidden_size
    attention_share, recurrent_share, mlp_share = model.block_shares
    blocks = 1.0 if model.is_hybrid else 2.0  # a hybrid's block has one norm and one residual add
    parts: dict[str, Array] = {
        "norm": 2.0 * blocks * hidden * ctx.norm_tokens * act,  # each norm reads and writes
        "residual": 3.0 * blocks * hidden * ctx.norm_tokens * act,  # each add reads two, writes one
        "dropout": np.where(grid.dropout, blocks * (2.0 * act + 1.0) * hidden * ctx.norm_tokens, 0.0),
        "rope": 0.0,
        "permute": 0.0,
        "recurrent": 0.0,
    }
    if model.position_embedding == "rope":
        rotated = 2.0 * (shapes.num_heads + shapes.num_kv_heads) * shapes.q_head_dim / grid.tp
        parts["rope"] = attention_share * rotated * ctx.tokens * act
    if model.recurrent is not None:  # the causal convolution and the norms
        streamed = model.recurrent.streamed_values_per_token
        parts["recurrent"] = recurrent_share * streamed / grid.tp * ctx.tokens * act
    passes = 3.0 if model.gated_mlp else 2.0
    if not moe:
        parts["activation"] = mlp_share * passes * model.ffn_hidden_size / grid.tp * ctx.tokens * act
        return parts
    assert model.moe is not None
    routed = routed_tokens(ctx)
    shared = model.moe.num_shared_experts * model.moe.shared_expert_ffn_hidden_size
    parts["activation"] = (
        passes * model.moe.expert_ffn_hidden_size * routed + passes * shared / grid.tp * ctx.tokens
    ) * act
    gathered = routed * grid.etp  # expert tensor parallelism permutes its group's tokens
    width = model.moe.latent_size or hidden  # a LatentMoE dispatches its tokens at the latent width
    parts["permute"] = 4.0 * width * gathered * act / ctx.hardware.stack.moe_efficiency
    return parts


def routed_tokens(ctx: _Context) -> Array:
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
    Overlap hides it only inside the scale-up domain: TP-overlap kernels
    (Transformer Engine's userbuffers, PyTorch's async TP) move the chunks over
    NVLink peer-to-peer copies; a TP group across nodes runs plain collectives.
    """
    grid, hardware = ctx.grid, ctx.hardware
    size = ctx.tokens * ctx.model.hidden_size * hardware.activation_bytes_per_element
    fabric = hardware.fabric
    all_reduce = collectives.all_reduce_s(fabric, size, grid.tp, 1.0)
    gather = collectives.all_gather_s(fabric, size, grid.tp, 1.0)
    forward = num_blocks * np.where(grid.sequence_parallel, 2.0 * gather, all_reduce)
    backward = num_blocks * np.where(grid.sequence_parallel, 3.0 * gather, all_reduce)
    hide = hardware.stack.exposed_s
    overlap = grid.tp_overlap & ~collectives.crosses_domains(fabric, grid.tp, 1.0)
    exposed_forward = np.where(overlap, hide(forward, hideable_s), forward)
    exposed_backward = np.where(overlap, hide(backward, 2.0 * hideable_s), backward)
    return exposed_forward, exposed_backward


def cp_ring_s(ctx: _Context, attention_forward_s: Array, attention_backward_s: Array) -> tuple[Array, Array]:
    """Exposed (forward, backward) context-parallel ring exchange (of a hybrid's attention
    blocks, their share of the average layer).

    ``cp - 1`` steps each send one K/V chunk to the next rank over the level the
    CP group spans, while the attention of the chunk in hand runs (``1/cp`` of
    the layer's attention); backward sends K/V and their gradients. A step
    exposes what its attention cannot cover.
    """
    grid, shapes, hardware = ctx.grid, ctx.shapes, ctx.hardware
    kv_heads = np.maximum(shapes.num_kv_heads / grid.tp, 1.0)
    if ctx.model.attention.kind == "mla":
        kv_heads = shapes.num_heads / grid.tp
    per_token = kv_heads * (shapes.k_head_dim + shapes.v_head_dim) * hardware.activation_bytes_per_element
    chunk = ctx.tokens * per_token
    crosses = collectives.crosses_domains(hardware.fabric, grid.cp, grid.tp)
    step = collectives.send_recv_s(hardware.fabric, chunk, crosses)
    steps = grid.cp - 1.0
    hide = hardware.stack.exposed_s
    share = ctx.model.block_shares[0]
    forward = share * steps * hide(step, attention_forward_s / np.maximum(share, 1e-30) / grid.cp)
    backward = share * steps * hide(2.0 * step, attention_backward_s / np.maximum(share, 1e-30) / grid.cp)
    return np.where(grid.cp > 1, forward, 0.0), np.where(grid.cp > 1, backward, 0.0)


def _ep_comm(ctx: _Context, forward_compute_s: Array, backward_compute_s: Array) -> tuple[Array, Array]:
    """Exposed expert-parallel all-to-all (dispatch + combine) of one MoE layer: a copy of each
    token per expert it is routed to, or per destination node where the stack's dispatch
    deduplicates (``ep_node_dedupe``: DeepEP)."""
    grid, hardware = ctx.grid, ctx.hardware
    assert ctx.model.moe is not None
    routed_bytes = routed_tokens(ctx) * (ctx.model.moe.latent_size or ctx.model.hidden_size)
    fabric = hardware.fabric
    nodes = expert_nodes(grid.ep, grid.etp, hardware.domain_size)
    remote = np.where(grid.ep_dedupe, node_dedupe_scale(ctx.model.moe, nodes), 1.0)
    dispatch = collectives.all_to_all_s(
        fabric, routed_bytes * hardware.input_bytes_per_element, grid.ep, grid.etp, remote
    )
    combine = collectives.all_to_all_s(
        fabric, routed_bytes * hardware.activation_bytes_per_element, grid.ep, grid.etp, remote
    )
    # Expert tensor parallelism: the dispatched tokens all-gathered over the etp group, the
    # expert outputs reduce-scattered back (and the reverse for their gradients)
    gathered = grid.etp * routed_bytes * hardware.activation_bytes_per_element
    etp = 2.0 * collectives.all_gather_s(fabric, gathered, grid.etp, 1.0)
    slow = 1.0 / hardware.stack.moe_efficiency  # the MoE path's dispatch/combine kernels
    forward = slow * (dispatch + combine) + etp
    backward = slow * 2.0 * combine + etp
    hide = hardware.stack.exposed_s
    exposed_forward = np.where(grid.ep_overlap, hide(forward, forward_compute_s), forward)
    exposed_backward = np.where(grid.ep_overlap, hide(backward, backward_compute_s), backward)
    return exposed_forward, exposed_backward


@dataclass(frozen=True)
class _Block:
    """Linears run on ``tokens`` tokens per copy, ``copies`` times, split ``degree`` ways."""

    linears: tuple[Linear, ...]
    tokens: Array
    copies: Array
    degree: Array
    routed: bool = False  # the MoE path (routed experts and router): paced by moe_efficiency
    router: bool = False  # routers stay in 16 bit


def _expert_split(linears: tuple[Linear, ...]) -> tuple[Linear, ...]:
    """A routed expert's linears split over expert tensor parallelism: the up (and gate)
    projection by its outputs, the down projection by its inputs."""
    up, down = linears
    return (dataclasses.replace(up, split="column"), dataclasses.replace(down, split="row"))


def _block_linears(ctx: _Context, moe: bool) -> list[_Block]:
    """The attention and MLP/MoE blocks of one layer (a hybrid's average layer: its share of
    attention, recurrent mixer and MLP blocks)."""
    shapes, grid, model = ctx.shapes, ctx.grid, ctx.model
    attention, recurrent, mlp = model.block_shares
    blocks = [_Block(shapes.attention, ctx.tokens, attention, grid.tp)]
    if shapes.recurrent:
        blocks.append(_Block(shapes.recurrent, ctx.tokens, recurrent, grid.tp))
    if not moe:
        return [*blocks, _Block(shapes.mlp, ctx.tokens, mlp, grid.tp)]
    assert model.moe is not None
    if shapes.latent:  # to and from the latent, on the tokens this rank routes
        moe_tokens = np.where(grid.tp > 1, ctx.tokens / grid.tp, ctx.tokens)
        blocks.append(_Block(shapes.latent, moe_tokens, 1.0, grid.tp))
    physical = np.where(grid.physical_experts > 0, grid.physical_experts, model.moe.num_routed_experts)
    local_experts = physical / grid.ep  # redundant replicas share the GPU's routed tokens
    # under ETP each GPU runs 1/etp of its experts for the tokens its etp group gathered
    tokens_per_expert = routed_tokens(ctx) * grid.etp / local_experts
    experts = _expert_split(shapes.experts)
    blocks.append(_Block(experts, tokens_per_expert, local_experts, grid.etp, routed=True))
    blocks.append(_Block(shapes.shared_experts, ctx.tokens, 1.0, grid.tp))
    blocks.append(_Block(shapes.router, ctx.tokens, 1.0, grid.tp, routed=True, router=True))
    return blocks


def _gemms(ctx: _Context, moe: bool) -> tuple[Array, Array, Array, Array, Array]:
    """(forward s, input-grad s, weight-grad s, forward FLOP, cast s) of one layer's linears: an
    8- or 4-bit run quantizes each linear's input forward and its output gradient backward."""
    forward = input_grad = weight_grad = flop = cast = 0.0
    hardware = ctx.hardware
    quantized = hardware.quantized_linears
    cast_bytes = hardware.stack.cast_bytes(hardware.precision) if quantized else 0.0
    for block in _block_linears(ctx, moe):
        row = "bf16" if block.router else None
        part = linears_cost(
            hardware, block.linears, block.tokens, block.degree, block.copies, compute_row=row
        )
        slow = 1.0 / hardware.stack.moe_efficiency if block.routed else 1.0
        forward, input_grad = forward + slow * part[0], input_grad + slow * part[1]
        weight_grad, flop = weight_grad + slow * part[2], flop + part[3]
        if quantized and row is None:
            for linear in block.linears:
                k, n = local_dims(linear, block.degree)
                cast = cast + memory_s(hardware, block.copies * block.tokens * (k + n) * cast_bytes)
    return forward, input_grad, weight_grad, flop, cast


def _recompute(
    ctx: _Context, core_forward: Array, gemm_forward: Array, elementwise_s: dict[str, Array]
) -> tuple[Array, Array, Array]:
    """(seconds, fraction of the linear forward FLOP, whether core attention reruns) recomputed
    beyond whole recomputed layers.

    ``selective``: the modules the stack's selective recomputation reruns
    (:meth:`~lightspeed.sol.core.stacks.Stack.recomputes_selectively`, the rule memory follows):
    core attention (Megatron-Core's default: the attention kernel runs forward again, fused or
    not), or norms, activation functions and MLA's up-projections with RoPE (DeepSeek-V3,
    torchtitan, the default profile). ``op`` (torchtitan): the elementwise modules plus every
    other matmul.
    """
    grid, stack = ctx.grid, ctx.hardware.stack
    up = 0.0
    if ctx.model.attention.kind == "mla":
        linears = tuple(linear for linear in ctx.shapes.attention if linear.name in MLA_UP_PROJECTIONS)
        up = linears_cost(ctx.hardware, linears, ctx.tokens, grid.tp)[0]
    light = elementwise_s["norm"] + elementwise_s["activation"] + elementwise_s["rope"]
    modules = (
        elementwise_s["norm"] * stack.recomputes_selectively("norms")
        + elementwise_s["activation"] * stack.recomputes_selectively("activations")
        + (elementwise_s["rope"] + up) * stack.recomputes_selectively("mla_up_projections")
    )
    core = stack.recomputes_selectively("core_attention")
    selective = core_forward * core + modules
    seconds = np.select(
        [grid.uses_recompute("selective"), grid.uses_recompute("op")],
        [selective, light + 0.5 * gemm_forward],
        0.0,
    )
    fraction = np.where(grid.uses_recompute("op"), 0.5, 0.0)
    return seconds, fraction, grid.uses_recompute("selective") & core


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
    gemm_forward, input_grad, weight_grad, gemm_flop, cast_s = _gemms(ctx, moe)
    core_forward, core_backward, core_flop, core_backward_flop = _attention_core(ctx)
    scan_forward, scan_backward, scan_flop, scan_backward_flop = _recurrent_scan(ctx)
    compute_forward = gemm_forward + core_forward + scan_forward
    compute_backward = input_grad + weight_grad + core_backward + scan_backward
    factor = hardware.stack.elementwise_traffic_factor
    elementwise = {
        name: memory_s(hardware, factor * value) for name, value in elementwise_bytes(ctx, moe).items()
    }
    streamed = sum(elementwise.values())
    memory_forward = streamed + 0.5 * cast_s  # inputs cast forward, output gradients backward
    memory_backward = 2.0 * streamed + 0.5 * cast_s
    shared = model.moe is not None and model.moe.num_shared_experts > 0
    attention_share, recurrent_share, mlp_share = model.block_shares
    ffn_blocks = (1.0 if shared else 0.0) if moe else mlp_share
    tp_forward, tp_backward = _tp_comm(ctx, attention_share + recurrent_share + ffn_blocks, gemm_forward)
    cp_forward, cp_backward = cp_ring_s(ctx, core_forward, core_backward)
    recurrent_cp_forward, recurrent_cp_backward = _recurrent_cp_s(ctx)
    cp_forward, cp_backward = cp_forward + recurrent_cp_forward, cp_backward + recurrent_cp_backward
    if moe:
        ep_forward, ep_backward = _ep_comm(ctx, compute_forward, compute_backward)
    else:
        ep_forward = ep_backward = np.zeros_like(compute_forward)
    forward_total = compute_forward + memory_forward + tp_forward + cp_forward + ep_forward
    partial_s, gemm_share, core_rerun = _recompute(ctx, core_forward, gemm_forward, elementwise)
    recompute = recompute_fraction * forward_total + (1.0 - recompute_fraction) * partial_s
    forward_flop = gemm_flop + core_flop + scan_flop
    selective_flop = np.where(core_rerun, core_flop, 0.0)
    extra_flop = selective_flop + gemm_share * gemm_flop
    recompute_flop = recompute_fraction * forward_flop + (1.0 - recompute_fraction) * extra_flop
    kernels = kernels_per_layer_forward(ctx.model, moe=moe)
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
        num_kernels=3.0 * kernels + kernels * recompute_fraction + np.where(partial_s > 0, 2.0, 0.0),
        hardware_flop=forward_flop
        + 2.0 * gemm_flop
        + core_backward_flop
        + scan_backward_flop
        + recompute_flop,
    )
