"""Training memory per GPU, vectorized over plans.

Model state (mixed precision): 16-bit weights, gradients of
``grad_reduce_precision`` (fp32 "main grads" by default), and Adam state of 12
bytes per parameter (fp32 master weights, first and second moments). Where each
lives under a ZeRO stage, with or without pipeline parallelism, is the stack's
memory rule (:mod:`lightspeed.sol.core.sharding`): Megatron-Core's distributed
optimizer shards only the optimizer state and keeps the fp32 gradient buffer
whole (``6 + 12/d`` bytes per parameter), FSDP2 under a pipeline keeps its
parameters gathered and its fp32 gradients unsharded until the last
micro-batch, ZeRO-3 gathers two layers' weights at a time. FP8 and FP4 training
keep an extra copy of the weights in the format the GEMMs read (1 byte a weight for
FP8, 0.5625 for NVFP4 with its block scales: :func:`weight_copy_bytes`).

Activations per layer generalize Korthikanti et al. 2022 (``sbh(34 + 5as/h)``
for GPT) to GQA, SwiGLU, MoE and MLA by counting the tensors each block keeps
for backward: norm and block inputs (replicated across TP unless sequence
parallelism splits them), Q/K/V and attention output, MLP intermediates, the
score matrix for unfused attention, dropout masks (1 byte) when dropout is on;
MoE layers keep the dispatched tokens and expert outputs of their routed
tokens, MLA its latents and (unless recomputed) the expanded Q/K/V. Stacks that
keep FP8 linear inputs (Transformer Engine) store those at 1 byte.

What ``selective`` recomputation drops is the stack's
(``selective_recompute_modules`` in ``sol/data/stacks.toml``,
:meth:`~lightspeed.sol.core.stacks.Stack.recomputes_selectively`), module by module:
``core_attention`` the score matrix of unfused attention (a fused kernel keeps no
score matrix, so with FlashAttention or cuDNN it frees nothing counted here),
``norms`` the norms' outputs, ``activations`` the activation functions' outputs
(and the MoE expert outputs before the combine), ``mla_up_projections`` MLA's
expanded Q/K/V. Per stack: Megatron-LM 2021-22, Megatron-DeepSpeed, Megatron-Core
2024 and llm-foundry recompute core attention only (Korthikanti et al. 2022;
Megatron-Core's ``recompute_modules`` default, ``["core_attn"]``), so with fused
attention their ``selective`` keeps what ``none`` keeps; DeepSeek's recomputes
norms, SwiGLU outputs and MLA up-projections (DeepSeek-V3 sections 3.2.3 and 3.3),
and so do Megatron-Core 2025 (whose recipes name ``layernorm``, ``moe_act`` and
``mla_up_proj``), the default ``published-median`` profile and torchtitan's. torchtitan's
per-op policy (``op``) drops its stack's modules, an unfused attention's score
matrix (only matmul outputs and fused attention kernels are saved) and every other
matmul output. Full recomputation keeps each layer's input, plus, at the backward peak,
the working set of the one layer being recomputed (everything it keeps without
recomputation, for one micro-batch: Korthikanti et al. 2022, section 5).

The training engine's twin of :mod:`lightspeed.sol.infer.memory` (the same concept for serving).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import numpy as np

from lightspeed.errors import UserInputError
from lightspeed.records import Record
from lightspeed.sol.core.hardware import Hardware
from lightspeed.sol.core.shapes import LayerShapes, Linear
from lightspeed.sol.core.sharding import GATHERED_LAYERS, ZERO_STAGES, ShardingRule
from lightspeed.sol.core.stacks import Stack
from lightspeed.sol.train.grid import PlanGrid
from lightspeed.sol.train.schedules import activations_in_flight, parameter_copies
from lightspeed.units import bytes_per_element
from lightspeed.workload import TransformerSpec

Array = Any

FP8_WEIGHT_COPY_BYTES = bytes_per_element("fp8")  # the FP8 recipes' copy; weight_copy_bytes for any
# Formats gradients are stored in: floating point of 8 bits or more (FP8 with MS-AMP's O2, FP8-LM);
# no training recipe stores 4-bit or integer gradients.
GRADIENT_PRECISIONS: Final = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8")


def weight_copy_bytes(precision: str) -> float:
    """Bytes a weight's low-precision copy takes in a run computing in ``precision`` (FP8, MXFP8,
    NVFP4, MXFP4): the format's own size, block scales included (NVFP4 ``0.5 + 1/16``); a plain
    ``fp4`` run trains as NVFP4, as :meth:`~lightspeed.sol.core.stacks.Stack.cast_bytes` counts it.

    >>> weight_copy_bytes("fp8"), weight_copy_bytes("nvfp4"), weight_copy_bytes("fp4")
    (1.0, 0.5625, 0.5625)
    """
    return bytes_per_element("nvfp4" if precision.strip().lower() == "fp4" else precision)


def check_gradient_precision(precision: str) -> None:
    """Refuse gradients stored in a format no training recipe keeps them in (``int4``, ``nvfp4``)."""
    if precision.strip().lower() not in GRADIENT_PRECISIONS:
        raise UserInputError(
            f"no training recipe stores gradients in {precision}; gradient precisions: "
            f"{', '.join(GRADIENT_PRECISIONS)} (e.g. --grad-precision fp32)"
        )


@dataclass(frozen=True)
class StageParams(Record):
    """Parameters one GPU holds for its pipeline stage (before ZeRO sharding)."""

    dense: Array
    expert: Array
    layers_per_stage: Array
    moe_layers_per_stage: Array
    ends: Array = 0.0  # of ``dense``: the stage's embedding, LM head and MTP projections (no layer's)


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


@dataclass(frozen=True)
class ShardingColumns:
    """Each plan's memory rule (its stack's, for its ZeRO stage, with or without PP) as arrays."""

    weights_whole: Array  # every data-parallel rank keeps the 16-bit copy
    weights_sharded: Array  # a 16-bit shard rests on each rank
    gathers_layers: Array  # 16-bit weights gathered a layer at a time (ZeRO-3, FSDP full shard)
    gradients_sharded: Array
    optimizer_sharded: Array
    reduce_per_microbatch: Array  # gradients reduced after every micro-batch, not once per step
    all_reduce: Array  # gradients all-reduced (else reduce-scattered)
    gathers_per_microbatch: Array  # parameters gathered before every micro-batch
    gathers_per_step: Array  # parameters gathered once, after the optimizer step
    refused: Array  # the stack does not run the combination (the search drops it)


def _rule_column(
    stack: Stack, zero_stage: Array, pp: Array
) -> Callable[[Callable[[ShardingRule], bool]], Array]:
    """A function turning a test of one rule into the column of its values for each plan."""
    rules = [
        stack.sharding_rule(stage, pipeline=pipeline) for stage in ZERO_STAGES for pipeline in (False, True)
    ]
    index = (2 * np.asarray(zero_stage) + (np.asarray(pp) > 1)).astype(np.int64)

    def column(test: Callable[[ShardingRule], bool]) -> Array:
        return np.asarray([test(rule) for rule in rules], dtype=bool)[index]

    return column


def refused_by_stack(stack: Stack, zero_stage: Array, pp: Array) -> Array:
    """Which (ZeRO stage, pipeline size) pairs ``stack``'s framework does not run."""
    return _rule_column(stack, zero_stage, pp)(lambda rule: not rule.allowed)


def sharding_columns(grid: PlanGrid, stack: Stack) -> ShardingColumns:
    """The memory rule of every plan in ``grid`` under ``stack``, column by column."""
    column = _rule_column(stack, grid.zero_stage, grid.pp)

    return ShardingColumns(
        weights_whole=column(lambda rule: rule.weights == "whole"),
        weights_sharded=column(lambda rule: rule.weights == "sharded"),
        gathers_layers=column(lambda rule: rule.gathers_layers),
        gradients_sharded=column(lambda rule: rule.gradients == "sharded"),
        optimizer_sharded=column(lambda rule: rule.optimizer == "sharded"),
        reduce_per_microbatch=column(lambda rule: rule.gradient_reduce == "micro-batch"),
        all_reduce=column(lambda rule: rule.gradient_collective == "all-reduce"),
        gathers_per_microbatch=column(lambda rule: rule.parameter_gather == "micro-batch"),
        gathers_per_step=column(lambda rule: rule.parameter_gather == "step"),
        refused=column(lambda rule: not rule.allowed),
    )


def _per_gpu(linears: tuple[Linear, ...], tp: Array) -> Array:
    total: Array = 0.0
    for linear in linears:
        divisor = tp if linear.split in ("column", "row") else 1.0
        total = total + linear.num_params / divisor
    return total


def _recurrent_per_gpu(model: TransformerSpec, shapes: LayerShapes, tp: Array) -> Array:
    """A recurrent mixer's parameters on one GPU: its projections split by TP, and the rest (the
    convolution, the per-head decay terms, the gated norm) per head, split with the heads."""
    if model.recurrent is None:
        return 0.0
    return _per_gpu(shapes.recurrent, tp) + model.recurrent.head_params / tp


def stage_layers(grid: PlanGrid, model: TransformerSpec) -> tuple[Array, Array]:
    """(layers, MoE layers) on the busiest pipeline stage: ``ceil(L/pp)``, the first stage's under
    the split of :func:`~lightspeed.sol.train.step.pipeline_split`; without a pipeline the one
    stage also holds the multi-token-prediction blocks (one like the model's last each)."""
    mtp = np.where(grid.pp == 1, float(model.num_mtp_modules), 0.0)
    layers = np.ceil(model.num_layers / grid.pp) + mtp
    moe_layers = np.minimum(layers, float(model.num_moe_layers) + (mtp if model.num_moe_layers else 0.0))
    return layers, moe_layers


def stage_params(grid: PlanGrid, model: TransformerSpec, shapes: LayerShapes) -> StageParams:
    """Parameters per GPU on the busiest stage (with embedding and LM head counted)."""
    layers, moe_layers = stage_layers(grid, model)
    attention, recurrent, mlp = model.block_shares  # a hybrid's average layer
    common = attention * _per_gpu(shapes.attention, grid.tp)
    common = common + recurrent * _recurrent_per_gpu(model, shapes, grid.tp)
    common = common + shapes.num_norm_params
    dense_layer = common + mlp * _per_gpu(shapes.mlp, grid.tp)
    moe_layer = common + _per_gpu(shapes.shared_experts, grid.tp) + _per_gpu(shapes.router, grid.tp)
    moe_layer = moe_layer + _per_gpu(shapes.latent, grid.tp)
    embedding = model.vocab_size * model.hidden_size / grid.tp
    if model.position_embedding == "learned":
        embedding = embedding + model.max_seq_len * model.hidden_size
    head_copies = np.where((grid.pp > 1) | (not model.tied_embeddings), 1.0, 0.0)
    ends = np.where(grid.pp > 1, embedding, embedding * (1.0 + head_copies))
    mtp_projection = 2.0 * model.hidden_size * model.hidden_size / grid.tp  # 2h -> h, column-parallel
    ends = ends + np.where(grid.pp == 1, model.num_mtp_modules * mtp_projection, 0.0)
    dense = (layers - moe_layers) * dense_layer + moe_layers * moe_layer + ends
    expert = np.zeros_like(dense)
    if model.moe is not None:
        per_expert = sum(linear.num_params for linear in shapes.experts)
        experts = np.where(grid.physical_experts > 0, grid.physical_experts, model.moe.num_routed_experts)
        expert = moe_layers * per_expert * experts / (grid.ep * grid.etp)  # redundant replicas included
    copies = parameter_copies(grid)
    return StageParams(dense * copies, expert * copies, layers, moe_layers, ends=ends * copies)


@dataclass(frozen=True)
class _Saved:
    """Bytes one layer keeps for backward per micro-batch, by what can drop them."""

    always: Array  # layer and block inputs, attention inputs/outputs, GEMM inputs not recomputed
    norms: Array  # norm outputs (QKV's and the MLP's inputs)
    activations: Array  # activation-function outputs (and MoE expert outputs before the combine)
    mla_up: Array  # MLA's up-projected Q/K/V
    matmul: Array  # matmul outputs that torchtitan's per-op policy recomputes every other one of
    scores: Array  # the score matrix of unfused attention (core-attention recompute drops it)
    checkpoint: Array  # what a fully recomputed layer keeps: its input
    stack: Stack  # whose selective recomputation decides what ``kept`` drops

    @property
    def whole(self) -> Array:
        """Everything the layer keeps without recomputation (its working set when recomputed)."""
        return self.always + self.norms + self.activations + self.mla_up + self.matmul + self.scores

    def kept(self, grid: PlanGrid) -> Array:
        """Bytes kept under each plan's recompute policy: ``selective`` and ``op`` drop the
        modules the stack recomputes (``op`` also an unfused attention's score matrix and every
        other matmul output); ``none`` and the layers ``partial`` leaves alone keep everything
        (full/partial handled by the caller)."""
        chooses = grid.uses_recompute("selective") | grid.uses_recompute("op")

        def unless_recomputed(module: str, value: Array) -> Array:
            return np.where(chooses & self.stack.recomputes_selectively(module), 0.0, value)

        op = grid.uses_recompute("op")
        kept = (
            self.always
            + unless_recomputed("norms", self.norms)
            + unless_recomputed("activations", self.activations)
            + unless_recomputed("mla_up_projections", self.mla_up)
            + np.where(op, 0.0, unless_recomputed("core_attention", self.scores))
        )
        return kept + np.where(op, 0.5 * self.matmul, self.matmul)


@dataclass(frozen=True)
class _Widths:
    """Bytes per element of the tensors a layer keeps: 16-bit, FP8 linear inputs, FP8 SwiGLU inputs."""

    act: float
    linear_in: float
    cached: float  # SwiGLU inputs and the attention output (DeepSeek caches them in FP8, once)

    @property
    def attention_output(self) -> float:
        """O: the kernel's 16-bit copy plus the out-projection's FP8 input, or one cached FP8 copy."""
        if self.cached < self.act:
            return self.cached
        return self.act + (self.linear_in if self.linear_in < self.act else 0.0)


def _widths(hardware: Hardware) -> _Widths:
    act = hardware.activation_bytes_per_element
    storage = hardware.stack.fp8_activation_storage if hardware.compute_row == "fp8" else "none"
    linear_in = 1.0 if storage != "none" else act
    cached = 1.0 if storage == "linear-and-swiglu-inputs" else act
    return _Widths(act, linear_in, cached)


def _attention_saved(
    grid: PlanGrid, model: TransformerSpec, shapes: LayerShapes, *, tokens: Array, widths: _Widths
) -> tuple[Array, Array, Array]:
    """(always, light, matmul) bytes of the attention block beyond its normed input."""
    act, linear_in = widths.act, widths.linear_in
    heads = shapes.num_heads / grid.tp
    kv_heads = np.maximum(shapes.num_kv_heads / grid.tp, 1.0)
    output = tokens * heads * shapes.v_head_dim
    stats = tokens * heads * 4.0 * (~grid.unfused_attention)  # fp32 softmax log-sum-exp (flash)
    out = output * widths.attention_output + stats
    attention = model.attention
    if attention.kind == "mla":
        assert attention.kv_lora_rank is not None
        assert attention.qk_rope_head_dim is not None
        latents = tokens * (
            attention.kv_lora_rank + attention.qk_rope_head_dim + (attention.q_lora_rank or 0)
        )
        expanded = tokens * heads * (shapes.q_head_dim + shapes.k_head_dim + shapes.v_head_dim)
        return out + latents * linear_in, expanded * act, 0.0 * tokens
    qkv = tokens * (heads * shapes.q_head_dim + kv_heads * (shapes.k_head_dim + shapes.v_head_dim))
    return out, 0.0 * tokens, qkv * act


def _mlp_saved(
    grid: PlanGrid, model: TransformerSpec, *, tokens: Array, widths: _Widths, moe: bool
) -> tuple[Array, Array, Array]:
    """(always, light, matmul) bytes of the MLP or MoE block beyond its normed input."""
    gates = 2.0 if model.gated_mlp else 1.0
    act, linear_in = widths.act, widths.linear_in

    def block(rows: Array, width: Array) -> tuple[Array, Array]:
        # up-projection outputs (the activation's inputs) and the activation output (down's input)
        return rows * gates * width * widths.cached, rows * width * linear_in

    if not moe:
        up, activation = block(tokens, model.ffn_hidden_size / grid.tp)
        return 0.0 * tokens, activation, up
    assert model.moe is not None
    moe_tokens = np.where(grid.tp > 1, tokens / grid.tp, tokens)
    routed = moe_tokens * model.moe.top_k * grid.expert_imbalance
    hidden = model.hidden_size
    up, activation = block(routed, float(model.moe.expert_ffn_hidden_size))
    width = model.moe.num_shared_experts * model.moe.shared_expert_ffn_hidden_size / grid.tp
    shared_up, shared_activation = block(tokens, width)
    # The dispatched tokens (the experts' input) are kept; the expert outputs before the weighted
    # combine are kept too unless recomputed (the combine's gradient needs them, and they follow
    # from the recomputed activation output).
    dispatch_width = model.moe.latent_size or hidden  # a LatentMoE dispatches at its latent width
    dispatched = routed * dispatch_width * linear_in
    outputs = routed * dispatch_width * act
    return dispatched, activation + shared_activation + outputs, up + shared_up


def _recurrent_saved(grid: PlanGrid, model: TransformerSpec, *, tokens: Array, widths: _Widths) -> Array:
    """Bytes a hybrid's recurrent mixer blocks keep in one (average) layer beyond their normed
    input: the ``in_proj`` output, the convolution's output, the scan's output and the gated
    norm's (``out_proj``'s input), split over TP with the heads, and each chunk's state (the
    chunked kernels, mamba_ssm's and FLA's, save them for their backward)."""
    mixer = model.recurrent
    if mixer is None:
        return 0.0 * tokens
    share = model.block_shares[1]
    widths_kept = (mixer.in_proj_width + mixer.conv_channels + mixer.inner_size) * widths.act
    widths_kept += mixer.inner_size * widths.linear_in
    states = mixer.state_values * mixer.chunk_state_bytes / mixer.chunk_size
    return share * tokens * (widths_kept + states) / grid.tp


def saved_per_layer(
    grid: PlanGrid,
    model: TransformerSpec,
    shapes: LayerShapes,
    hardware: Hardware,
    *,
    seq_len: int,
    moe: bool,
) -> _Saved:
    """What one layer keeps for backward per micro-batch (Korthikanti et al.'s ``sbh(34 + 5as/h)``
    for GPT with unfused attention, no parallelism and 16-bit activations; the tests check it).

    Norm and block inputs are split by TP under sequence parallelism; FP8 stacks that keep linear
    inputs in FP8 (Transformer Engine) store those at one byte; dropout masks are one byte.
    """
    widths = _widths(hardware)
    act, linear_in = widths.act, widths.linear_in
    tokens = grid.micro_batch_size * seq_len / grid.cp
    hidden = model.hidden_size
    split = np.where(grid.sequence_parallel, tokens / grid.tp, tokens)
    blocks = 1.0 if model.is_hybrid else 2.0  # a hybrid's layer is one block: one input, one norm
    residuals = blocks * split * hidden * act  # the layer input and the residual after attention
    normed = blocks * split * hidden * linear_in  # norm outputs: QKV's and the MLP's input
    masks = np.where(grid.dropout, blocks * split * hidden, 0.0)
    attention_share, _, mlp_share = model.block_shares
    attention = [
        attention_share * part for part in _attention_saved(grid, model, shapes, tokens=tokens, widths=widths)
    ]
    mlp = list(_mlp_saved(grid, model, tokens=tokens, widths=widths, moe=moe))
    if not moe:
        mlp = [mlp_share * part for part in mlp]
    recurrent = _recurrent_saved(grid, model, tokens=tokens, widths=widths)
    per_score = np.where(grid.dropout, 5.0, 2.0)  # softmax output (2), dropout mask (1) and output (2)
    scores = np.where(
        grid.unfused_attention,
        attention_share * per_score * tokens * shapes.num_heads / grid.tp * seq_len,
        0.0,
    )
    return _Saved(
        always=residuals + masks + attention[0] + mlp[0] + recurrent,
        norms=normed,
        activations=mlp[1],
        mla_up=attention[1],
        matmul=attention[2] + mlp[2],
        scores=scores,
        checkpoint=split * hidden * act,
        stack=hardware.stack,
    )


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
    expert_replicas = grid.tp * grid.cp * grid.dp / (grid.ep * grid.etp)
    weight_bytes: Array = hardware.activation_bytes_per_element
    optimizer_per_param = hardware.stack.optimizer_bytes_per_param if weight_bytes < 4.0 else 8.0
    if hardware.quantized_linears and hardware.stack.fp8_weight_copy:
        # the first stage sets the peak; the layers it keeps in BF16 hold no 8-bit copy
        first = np.maximum(params.layers_per_stage, 1.0)
        wide = grid.bf16_layers_in(0.0, params.layers_per_stage, model.num_layers) / first
        weight_bytes = weight_bytes + weight_copy_bytes(hardware.precision) * (1.0 - wide)

    rules = sharding_columns(grid, hardware.stack)

    def placed(per_param: Array, whole: Array, sharded: Array) -> Array:
        dense = np.where(whole, params.dense, 0.0) + np.where(sharded, params.dense / replicas, 0.0)
        expert = np.where(whole, params.expert, 0.0) + np.where(sharded, params.expert / expert_replicas, 0.0)
        return per_param * (dense + expert)

    # a layer's weights (ZeRO-3 and FSDP gather them a layer at a time): not the embedding's or head's
    layer_params = (params.dense - params.ends + params.expert) / np.maximum(params.layers_per_stage, 1.0)
    weights = placed(weight_bytes, rules.weights_whole, rules.weights_sharded) + np.where(
        rules.gathers_layers, GATHERED_LAYERS * layer_params * weight_bytes, 0.0
    )
    gradients = placed(grid.grad_bytes, ~rules.gradients_sharded, rules.gradients_sharded)
    optimizer = placed(optimizer_per_param, ~rules.optimizer_sharded, rules.optimizer_sharded)
    dense = saved_per_layer(grid, model, shapes, hardware, seq_len=seq_len, moe=False)
    moe_saved = dense
    if model.moe is not None:
        moe_saved = saved_per_layer(grid, model, shapes, hardware, seq_len=seq_len, moe=True)
    num_dense = params.layers_per_stage - params.moe_layers_per_stage
    num_moe = params.moe_layers_per_stage
    in_flight = activations_in_flight(grid)
    kept = (num_dense * dense.kept(grid) + num_moe * moe_saved.kept(grid)) * in_flight
    full = (num_dense * dense.checkpoint + num_moe * moe_saved.checkpoint) * in_flight
    working_set = _recompute_working_set(dense, moe_saved, num_dense, num_moe)
    tokens = grid.micro_batch_size * seq_len / grid.cp
    # the loss's peak over the vocabulary (the stack's cross-entropy: fp32 copies, saved
    # softmax or log-probabilities, their gradients), on the last stage only: with pipeline
    # stages the first one, holding the most micro-batches, sets the peak
    per_logit = hardware.stack.loss_bytes_per_logit
    logits = np.where(grid.pp > 1, 0.0, per_logit * tokens * model.vocab_size / grid.tp)
    reserved = np.full_like(weights, hardware.overheads.reserved_of(hardware.usable_memory_bytes))
    free = hardware.usable_memory_bytes - (weights + gradients + optimizer + reserved + logits)
    fraction = _recompute_fraction(grid, kept, full, free - working_set, params.layers_per_stage)
    recomputing = np.where(fraction > 0.0, working_set, 0.0)
    activations = (1.0 - fraction) * kept + fraction * full + recomputing + logits
    return TrainMemory(weights, gradients, optimizer, activations, reserved, fraction)


def _recompute_working_set(dense: _Saved, moe: _Saved, num_dense: Array, num_moe: Array) -> Array:
    """Bytes live beside the checkpoints while one recomputed layer runs its backward: the
    largest layer of the stage's whole activations for one micro-batch, less its input (already
    a checkpoint). Korthikanti et al. 2022 (section 5): full recomputation needs ``2sbhL`` for
    the layer inputs plus one layer's ``sbh(34 + 5as/h)``."""
    dense_set = np.where(num_dense > 0, dense.whole - dense.checkpoint, 0.0)
    moe_set = np.where(num_moe > 0, moe.whole - moe.checkpoint, 0.0)
    return np.maximum(dense_set, moe_set)


def _recompute_fraction(grid: PlanGrid, kept: Array, full: Array, free: Array, layers: Array) -> Array:
    """Share of each stage's layers that run fully recomputed.

    ``full`` -> 1, ``none``/``selective``/``op`` -> 0; ``partial`` -> the fewest whole
    layers that bring activations under the free memory (1 if even that fails).
    """
    saving = np.maximum(kept - full, 1e-9)
    needed = np.clip((kept - free) / saving, 0.0, 1.0)
    whole_layers = np.ceil(needed * layers - 1e-9) / np.maximum(layers, 1.0)
    return np.select(
        [grid.uses_recompute("full"), grid.uses_recompute("partial")],
        [1.0, whole_layers],
        0.0,
    )
