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
from lightspeed.sol.train.schedules import (
    activations_in_flight,
    last_stage_in_flight,
    loss_microbatches,
    parameter_copies,
)
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
    mtp_blocks: Array = 0.0  # of ``layers_per_stage``: multi-token-prediction blocks (last stage)


@dataclass(frozen=True)
class TrainMemory(Record):
    """Bytes per GPU at the peak, by component (arrays aligned with the grid)."""

    weights_bytes: Array
    gradients_bytes: Array
    optimizer_bytes: Array
    activations_bytes: Array
    reserved_bytes: Array
    recompute_fraction: Array
    peak_on_last_stage: Array = False  # the pipeline's last stage (LM head, loss) holds the peak

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


def _layer_params(grid: PlanGrid, model: TransformerSpec, shapes: LayerShapes) -> tuple[Array, Array, Array]:
    """(dense layer, MoE layer without its routed experts, embedding) parameters on one GPU."""
    attention, recurrent, mlp = model.block_shares  # a hybrid's average layer
    common = attention * _per_gpu(shapes.attention, grid.tp)
    common = common + recurrent * _recurrent_per_gpu(model, shapes, grid.tp)
    common = common + shapes.num_norm_params
    dense_layer = common + mlp * _per_gpu(shapes.mlp, grid.tp)
    moe_layer = common + _per_gpu(shapes.shared_experts, grid.tp) + _per_gpu(shapes.router, grid.tp)
    moe_layer = moe_layer + _per_gpu(shapes.latent, grid.tp)
    embedding = model.vocab_size * model.hidden_size / grid.tp
    return dense_layer, moe_layer, embedding


def _assembled(
    grid: PlanGrid,
    model: TransformerSpec,
    shapes: LayerShapes,
    layers: tuple[Array, Array, Array],
    ends: Array,
) -> StageParams:
    """A stage's parameters from its (layers, MoE layers, MTP blocks among them) and its end
    modules (``ends``, all copies): the stage's layers once a stage copy (DualPipe holds two
    stages), the MTP blocks once, each like the model's last layer."""
    num_layers, num_moe, mtp_blocks = layers
    dense_layer, moe_layer, _ = _layer_params(grid, model, shapes)
    copies = parameter_copies(grid)
    mtp_moe = mtp_blocks if model.num_moe_layers else 0.0 * mtp_blocks
    stage_moe = num_moe - mtp_moe
    stage_dense = num_layers - mtp_blocks - stage_moe
    dense = copies * (stage_dense * dense_layer + stage_moe * moe_layer) + ends
    dense = dense + (mtp_blocks - mtp_moe) * dense_layer + mtp_moe * moe_layer
    expert = np.zeros_like(dense)
    if model.moe is not None:
        per_expert = sum(linear.num_params for linear in shapes.experts)
        experts = np.where(grid.physical_experts > 0, grid.physical_experts, model.moe.num_routed_experts)
        moe_blocks = copies * stage_moe + mtp_moe
        expert = moe_blocks * per_expert * experts / (grid.ep * grid.etp)  # redundant replicas included
    return StageParams(dense, expert, num_layers, num_moe, ends=ends, mtp_blocks=mtp_blocks)


def _embedding(grid: PlanGrid, model: TransformerSpec, shapes: LayerShapes) -> Array:
    """The input embedding's parameters on one GPU (learned positions included)."""
    embedding = _layer_params(grid, model, shapes)[2]
    if model.position_embedding == "learned":
        embedding = embedding + model.max_seq_len * model.hidden_size
    return embedding


def stage_params(grid: PlanGrid, model: TransformerSpec, shapes: LayerShapes) -> StageParams:
    """Parameters per GPU on the busiest stage but the last (with the embedding counted; without a
    pipeline the one stage, with the LM head and any MTP modules)."""
    layers, moe_layers = stage_layers(grid, model)
    embedding = _embedding(grid, model, shapes)
    head_copies = np.where((grid.pp > 1) | (not model.tied_embeddings), 1.0, 0.0)
    ends = np.where(grid.pp > 1, embedding, embedding * (1.0 + head_copies)) * parameter_copies(grid)
    mtp_projection = 2.0 * model.hidden_size * model.hidden_size / grid.tp  # 2h -> h, column-parallel
    ends = ends + np.where(grid.pp == 1, model.num_mtp_modules * mtp_projection, 0.0)
    mtp_blocks = np.where(grid.pp == 1, float(model.num_mtp_modules), 0.0)
    return _assembled(grid, model, shapes, (layers, moe_layers, mtp_blocks), ends)


def last_stage_params(
    grid: PlanGrid,
    model: TransformerSpec,
    shapes: LayerShapes,
    last_layers: Array | None = None,
    *,
    first: StageParams | None = None,
) -> StageParams:
    """Parameters per GPU on the last pipeline stage: its ``last_layers`` (the split of
    :func:`~lightspeed.sol.train.step.pipeline_split`; ``ceil(L/pp)`` if not given), its own LM
    head (tied embeddings too: the first stage holds the embedding), and the MTP modules, each a
    block like the model's last, a 2h -> h projection and, beside the head, the embedding of the
    next tokens (Megatron-Core builds one on the MTP stage: ``pre_process or mtp_process``).
    DualPipe's end GPUs hold the first and the last stage: the first stage's layers (two stages'
    under DualPipe, two chunks under DualPipeV), the embedding and the head. Without a pipeline:
    ``first``, :func:`stage_params`."""
    first = first or stage_params(grid, model, shapes)
    if not np.any(grid.pp > 1):
        return first
    first_layers = np.ceil(model.num_layers / grid.pp)
    dual = grid.is_schedule("dualpipe", "dualpipev")
    layers = np.where(dual, first_layers, first_layers if last_layers is None else last_layers)
    mtp = float(model.num_mtp_modules)
    moe_layers = np.minimum(layers, float(model.num_moe_layers)) + (mtp if model.num_moe_layers else 0.0)
    embedding = _embedding(grid, model, shapes)
    head = _layer_params(grid, model, shapes)[2]
    mtp_projection = 2.0 * model.hidden_size * model.hidden_size / grid.tp  # 2h -> h, column-parallel
    next_tokens = np.where(dual, embedding, embedding if mtp else 0.0)  # MTP's (DualPipe: the end's)
    ends = head + mtp * mtp_projection + next_tokens
    last = _assembled(grid, model, shapes, (layers + mtp, moe_layers, np.full_like(layers, mtp)), ends)
    one = grid.pp == 1
    return StageParams(*(np.where(one, getattr(first, name), getattr(last, name)) for name in _STAGE_FIELDS))


_STAGE_FIELDS = ("dense", "expert", "layers_per_stage", "moe_layers_per_stage", "ends", "mtp_blocks")


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


@dataclass(frozen=True)
class LayerMemory:
    """What every stage's count shares (:func:`layer_memory`): the layers' saved tensors, the
    memory rules, one micro-batch's loss."""

    dense: _Saved
    moe: _Saved
    rules: ShardingColumns
    reserved_bytes: Array
    loss_bytes: Array  # one micro-batch's loss over the vocabulary shard, MTP losses included


def layer_memory(
    grid: PlanGrid, model: TransformerSpec, shapes: LayerShapes, hardware: Hardware, seq_len: int
) -> LayerMemory:
    """Bytes each layer and the loss keep per micro-batch, and the memory rules, for every plan."""
    dense = saved_per_layer(grid, model, shapes, hardware, seq_len=seq_len, moe=False)
    moe = dense
    if model.moe is not None:
        moe = saved_per_layer(grid, model, shapes, hardware, seq_len=seq_len, moe=True)
    tokens = grid.micro_batch_size * seq_len / grid.cp
    # the loss's peak over the vocabulary (the stack's cross-entropy: fp32 copies, saved softmax or
    # log-probabilities, their gradients), once for the model's head and once for each MTP module's
    # (each computes its own cross-entropy, whose saved state waits for the backward)
    per_logit = hardware.stack.loss_bytes_per_logit * (1.0 + model.num_mtp_modules)
    reserved = np.full(np.shape(grid.tp), hardware.overheads.reserved_of(hardware.usable_memory_bytes))
    return LayerMemory(
        dense,
        moe,
        sharding_columns(grid, hardware.stack),
        reserved,
        per_logit * tokens * model.vocab_size / grid.tp,
    )


@dataclass(frozen=True)
class _StagePeak:
    """One pipeline stage's bytes per GPU: model state, and the activations' parts before the
    recompute share is chosen."""

    weights: Array
    gradients: Array
    optimizer: Array
    kept: Array  # every layer's activations kept, micro-batches in flight included
    full: Array  # the same with every layer fully recomputed (its input only)
    working_set: Array  # one recomputed layer's activations at the backward peak
    logits: Array
    layers: Array

    def free_bytes(self, hardware: Hardware, reserved: Array) -> Array:
        """Memory left for the layers' activations."""
        used = self.weights + self.gradients + self.optimizer + reserved + self.logits
        return hardware.usable_memory_bytes - used

    def activations(self, fraction: Array) -> Array:
        """Activation bytes with ``fraction`` of the stage's layers fully recomputed."""
        recomputing = np.where(fraction > 0.0, self.working_set, 0.0)
        return (1.0 - fraction) * self.kept + fraction * self.full + recomputing + self.logits


def _stage_peak(
    grid: PlanGrid,
    model: TransformerSpec,
    hardware: Hardware,
    shared: LayerMemory,
    params: StageParams,
    *,
    first_layer: Array,
    in_flight: Array,
    losses: Array,
) -> _StagePeak:
    """The bytes of a stage whose layers start at ``first_layer``, holding ``in_flight`` micro-batches
    of its layers and ``losses`` micro-batches of its MTP blocks and logits."""
    replicas = grid.dp * grid.cp
    expert_replicas = grid.tp * grid.cp * grid.dp / (grid.ep * grid.etp)
    weight_bytes: Array = hardware.activation_bytes_per_element
    optimizer_per_param = hardware.stack.optimizer_bytes_per_param if weight_bytes < 4.0 else 8.0
    stage_layers = params.layers_per_stage - params.mtp_blocks
    if hardware.quantized_linears and hardware.stack.fp8_weight_copy:
        # the layers the stage keeps in BF16 hold no 8-bit copy
        wide = grid.bf16_layers_in(first_layer, stage_layers, model.num_layers)
        wide = wide / np.maximum(params.layers_per_stage, 1.0)
        weight_bytes = weight_bytes + weight_copy_bytes(hardware.precision) * (1.0 - wide)
    rules = shared.rules

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
    # MTP blocks are like the model's last layer and run once per loss
    mtp = params.mtp_blocks
    num_moe = params.moe_layers_per_stage - (mtp if model.num_moe_layers else 0.0)
    num_dense = stage_layers - num_moe
    last_kind = shared.moe if model.num_moe_layers else shared.dense
    kept = (num_dense * shared.dense.kept(grid) + num_moe * shared.moe.kept(grid)) * in_flight
    kept = kept + mtp * last_kind.kept(grid) * losses
    full = (num_dense * shared.dense.checkpoint + num_moe * shared.moe.checkpoint) * in_flight
    full = full + mtp * last_kind.checkpoint * losses
    with_mtp = num_dense + (0.0 if model.num_moe_layers else mtp)
    working_set = _recompute_working_set(shared.dense, shared.moe, with_mtp, params.moe_layers_per_stage)
    logits = shared.loss_bytes * losses
    return _StagePeak(weights, gradients, optimizer, kept, full, working_set, logits, params.layers_per_stage)


def training_memory(
    grid: PlanGrid,
    model: TransformerSpec,
    shapes: LayerShapes,
    hardware: Hardware,
    seq_len: int,
    *,
    params: StageParams | None = None,
    last_layers: Array | None = None,
    recompute_fraction: Array | None = None,
    layers: LayerMemory | None = None,
) -> TrainMemory:
    """Peak bytes per GPU of every plan in ``grid``: the larger of its first stage's (the most
    micro-batches in flight, the embedding) and its last stage's (its ``last_layers``, ``ceil(L/pp)``
    if not given; the LM head, the logits and loss, any MTP modules). ``params``: the first
    stage's :func:`stage_params`, if known; ``layers``: :func:`layer_memory`, if known. Both
    stages recompute the same share of layers under ``partial``: the larger of what each needs,
    or ``recompute_fraction`` where the step was timed with one already.

    >>> from lightspeed.sol.train.plan import TrainingPlan
    >>> from lightspeed.sol.train.grid import grid_from_plans
    >>> from lightspeed.sol.core.hardware import hardware_for
    >>> from lightspeed.sol.core.shapes import layer_shapes
    >>> from lightspeed.catalog import load_catalog
    >>> from lightspeed.workload import load_models
    >>> model = load_models().get("llama-3-8b")
    >>> hardware = hardware_for(load_catalog().cluster("dgx-h100", num_nodes=1), "bf16")
    >>> plan = TrainingPlan(pp=2, global_batch_size=8, seq_len=8192, recompute="full")
    >>> grid = grid_from_plans([plan.resolved(hardware.stack)])
    >>> memory = training_memory(grid, model, layer_shapes(model), hardware, 8192)
    >>> bool(memory.peak_on_last_stage[0])
    True
    """
    params = params or stage_params(grid, model, shapes)
    last_params = last_stage_params(grid, model, shapes, last_layers, first=params)
    shared = layers or layer_memory(grid, model, shapes, hardware, seq_len)
    first = _stage_peak(
        grid,
        model,
        hardware,
        shared,
        params,
        first_layer=np.zeros_like(params.layers_per_stage),
        in_flight=activations_in_flight(grid),
        losses=np.where(grid.pp > 1, 0.0, 1.0),
    )
    last_start = model.num_layers - (last_params.layers_per_stage - last_params.mtp_blocks)
    last = _stage_peak(
        grid,
        model,
        hardware,
        shared,
        last_params,
        first_layer=np.where(grid.is_schedule("dualpipe", "dualpipev"), 0.0, last_start),
        in_flight=last_stage_in_flight(grid),
        losses=loss_microbatches(grid),
    )
    fraction = recompute_fraction
    if fraction is None:
        fraction = np.maximum(*(_fraction(grid, stage, hardware, shared) for stage in (first, last)))
    totals = [
        stage.weights + stage.gradients + stage.optimizer + stage.activations(fraction)
        for stage in (first, last)
    ]
    on_last = (grid.pp > 1) & (totals[1] > totals[0])

    def peak(name: str) -> Array:
        return np.where(on_last, getattr(last, name), getattr(first, name))

    activations = np.where(on_last, last.activations(fraction), first.activations(fraction))
    return TrainMemory(
        peak("weights"),
        peak("gradients"),
        peak("optimizer"),
        activations,
        shared.reserved_bytes,
        fraction,
        peak_on_last_stage=on_last,
    )


def _fraction(grid: PlanGrid, stage: _StagePeak, hardware: Hardware, shared: LayerMemory) -> Array:
    """The share of ``stage``'s layers its plan's recompute policy runs fully recomputed."""
    free = stage.free_bytes(hardware, shared.reserved_bytes) - stage.working_set
    return _recompute_fraction(grid, stage.kept, stage.full, free, stage.layers)


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
