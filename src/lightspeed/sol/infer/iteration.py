"""Cost of one serving iteration on one pipeline stage, vectorized over deployments.

An iteration runs every layer of a stage once over the tokens scheduled in it:
``decode_sequences`` sequences that each add ``query_tokens`` tokens (1, or
the draft tokens plus one when verifying speculation) and attend to
``decode_context`` cached tokens, plus ``prefill_tokens`` prompt tokens that
attend to ``prefill_context`` tokens on average (causal: half the prompt).
Every operation sits on the same roofline as training,
``max(FLOP / (peak x efficiency), bytes / (HBM bandwidth x efficiency))``:

* **GEMMs** read their weights once per iteration in the weight format (block or
  group scales included; a published checkpoint's own groups, and the layers it keeps
  16-bit in 16 bits, as :func:`~lightspeed.sol.infer.inference_hardware.inference_hardware_for`
  applies :func:`~lightspeed.sol.infer.checkpoints.as_published`) and
  multiply every token of the iteration; with few tokens they are bound by the
  weight reads, with many by the tensor cores.
* **MoE layers** read only the experts the iteration's tokens reach: with ``T``
  tokens routed top-``k`` of ``E`` experts, ``E x (1 - (1 - k/E)^T)`` experts
  are touched; each GPU holds ``E / ep`` of them, split over ``stage GPUs / ep``.
* **Attention** reads the KV cache of every decoding sequence once (all its
  query tokens share the read) and writes the new tokens' K/V; prefill attention
  is FlashAttention at the family's fused-attention forward efficiency.
* **Communication** per layer on the fabric level the group uses: TP all-reduce
  after attention and after the MLP (the MoE output is all-reduced over the
  stage when experts are split across TP ranks), EP all-to-all dispatch and
  combine when attention is data-parallel, a pipeline send per stage boundary.
* **Launch and host**: every kernel costs the GPU ``gpu_kernel_s`` beyond its
  roofline (launch, teardown, the ramp of its memory stream; ``runtime.toml``),
  and every collective NCCL's base latency (in the collectives). Without CUDA
  graphs the host issues each kernel too (``kernel_launch_s``), ahead of the
  GPU: a stage takes at least that long. The serving stack's host time per
  iteration is serial, or hidden behind the GPU step by an overlap scheduler.

The breakdown attributes each GEMM to ``gemm_compute`` or ``weight_reads`` and
each attention kernel to ``attention_compute`` or ``kv_cache`` by which side of
its roofline binds, so the parts sum to the iteration time.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from lightspeed.errors import UnsupportedError
from lightspeed.records import Record
from lightspeed.sol.core import collectives
from lightspeed.sol.core.efficiency import EfficiencyModel
from lightspeed.sol.core.experts import busiest_rank_experts, expert_nodes, node_dedupe_scale
from lightspeed.sol.core.hardware import Hardware
from lightspeed.sol.core.roofline import (
    KERNELS_PER_DENSE_LAYER_FORWARD,
    KERNELS_PER_MOE_LAYER_FORWARD,
    kernels_per_layer_forward,
)
from lightspeed.sol.core.routing import balanced_placement, routing_factors
from lightspeed.sol.core.serving_stacks import ServingStack
from lightspeed.sol.core.shapes import LayerShapes, Linear, layer_shapes
from lightspeed.sol.infer.inference_hardware import InferenceHardware
from lightspeed.sol.infer.per_gpu import (
    inference_local_dims,
    kv_bytes_per_token_per_gpu,
    kv_elements_per_token_per_gpu,
    kv_heads_per_gpu,
    recurrent_state_bytes_per_gpu,
    stage_kernels,
    stage_layers,
)
from lightspeed.workload import LayerGroup, TransformerSpec, layer_groups
from lightspeed.workload.attention import mean_cached_tokens, mean_read_tokens

Array = Any

ITERATION_PARTS = (
    "gemm_compute",
    "weight_reads",
    "attention_compute",
    "kv_cache",
    "elementwise",
    "tp_comm",
    "ep_comm",
    "pp_comm",
    "attention_dp_pace",
    "launch",
    "host",
)
# Norms (read + write) and residual adds (two reads + a write) per token and hidden unit.
ELEMENTWISE_ACCESSES_PER_HIDDEN = 10.0
ACTIVATION_BYTES = 2.0  # activations between kernels, logits and collectives stay 16-bit


@dataclass(frozen=True)
class IterationGrid:
    """What one stage iteration processes, per deployment (aligned numpy arrays).

    Token and sequence counts are for the whole stage (every attention group);
    decode sequences spread evenly over the attention groups, while
    ``group_prefill_tokens`` is the prompt share of the busiest group (a prompt
    chunk belongs to one group). ``group_decode_sequences`` and ``group_decode_context``
    (``None``: the even spread) say what the busiest group decodes when requests do not land
    evenly (the serving simulator places them). ``expert_imbalance`` scales the routed tokens
    of the busiest GPU (0: the routing skew of ``sol/data/routing.toml`` at the plan's EP size,
    :func:`busiest_rank_imbalance`); ``physical_experts`` (0: the model's routed experts) counts
    replicas.
    ``decode_context_span``: the decoding sequences' contexts spread evenly over
    ``decode_context +- span / 2`` (what a local-attention layer reads depends on where in its
    window or chunk each sequence is; 0: all at ``decode_context``).
    """

    tp: Array
    pp: Array
    ep: Array
    dp_attention: Array
    decode_sequences: Array
    query_tokens: Array
    decode_context: Array
    prefill_tokens: Array
    prefill_context: Array
    prefill_requests: Array
    group_prefill_tokens: Array
    expert_imbalance: Array = 0.0
    physical_experts: Array = 0.0
    decode_context_span: Array = 0.0
    group_decode_sequences: Array | None = None
    group_decode_context: Array | None = None

    @property
    def group_sequences(self) -> Array:
        """Sequences the busiest attention group decodes."""
        if self.group_decode_sequences is None:
            return self.decode_sequences / self.dp_attention
        return self.group_decode_sequences

    @property
    def group_context(self) -> Array:
        """Mean cached context of the busiest attention group's decoding sequences."""
        return self.decode_context if self.group_decode_context is None else self.group_decode_context

    @property
    def stage_gpus(self) -> Array:
        """GPUs per stage."""
        return self.tp * self.dp_attention

    @property
    def tokens(self) -> Array:
        """Tokens every layer of the stage multiplies in this iteration."""
        return self.decode_sequences * self.query_tokens + self.prefill_tokens

    @property
    def group_tokens(self) -> Array:
        """Tokens the busiest attention group multiplies."""
        return self.group_sequences * self.query_tokens + self.group_prefill_tokens


@dataclass(frozen=True)
class IterationCost(Record):
    """Seconds of one stage iteration per part (arrays aligned with the grid)."""

    parts: dict[str, Array]

    @property
    def time_s(self) -> Array:
        """Sum of the parts."""
        return sum(self.parts[name] for name in ITERATION_PARTS)


class _Acc:
    """Accumulates roofline times into the breakdown parts."""

    def __init__(self, efficiency: EfficiencyModel) -> None:
        self.parts: dict[str, Array] = dict.fromkeys(ITERATION_PARTS, 0.0)
        self.efficiency = efficiency

    def roofline(
        self, compute_s: Array, memory_s: Array, compute_part: str, memory_part: str, *, gemm: bool = True
    ) -> None:
        """The kernel's time goes to the part that bounds it: a GEMM's as the family combines math
        and traffic near the ridge (:meth:`EfficiencyModel.kernel_s`, measured on GEMM tables), an
        attention kernel's at the hard roofline (no ridge-point measurement of one here)."""
        bound_by_compute = compute_s >= memory_s
        seconds = self.efficiency.kernel_s(compute_s, memory_s) if gemm else np.maximum(compute_s, memory_s)
        self.parts[compute_part] = self.parts[compute_part] + np.where(bound_by_compute, seconds, 0.0)
        self.parts[memory_part] = self.parts[memory_part] + np.where(bound_by_compute, 0.0, seconds)

    def add(self, part: str, seconds: Array) -> None:
        self.parts[part] = self.parts[part] + seconds

    def scaled(self, factor: Array) -> dict[str, Array]:
        return {name: value * factor for name, value in self.parts.items()}


def _gemms(
    inference_hardware: InferenceHardware,
    linears: tuple[Linear, ...],
    m: Array,
    tp: Array,
    *,
    copies: Array = 1.0,
    weight_bytes: float | None = None,
    attention: bool = False,
    grouped: bool = False,
) -> tuple[Array, Array]:
    """(compute s, memory s) of ``linears`` over ``m`` tokens, split ``tp`` ways, ``copies`` times.

    Weights are read in the deployment's weight format (its attention weights' for the
    ``attention`` projections) unless ``weight_bytes`` says otherwise. A mixed checkpoint's
    wider layers (``precisions.mixed_share``) take their share of the time in their own format.
    ``grouped``: the ``copies`` are the groups of one grouped GEMM and ``m`` their mean rows, each
    group's last row tile computed whole (:meth:`~lightspeed.sol.core.efficiency.EfficiencyModel.
    grouped_row_padding`; FP4 GEMMs count their tiles in :func:`_fp4_occupancy` instead).
    """
    precisions = inference_hardware.precisions
    if attention:
        hardware = inference_hardware.attention_hardware
        stored = precisions.attention_weight_bytes_per_element
        inputs = precisions.attention_input_bytes_per_element
    else:
        hardware = inference_hardware.hardware
        stored = precisions.weight_bytes_per_element
        inputs = precisions.input_bytes_per_element
    share = precisions.mixed_share(attention) if weight_bytes is None else 0.0
    per_weight = stored if weight_bytes is None else weight_bytes
    shape = (linears, m, tp, copies)
    narrow = _gemm_roofline(inference_hardware, hardware, shape, (per_weight, inputs), grouped)
    if share <= 0.0 or inference_hardware.wider_hardware is None:
        return narrow
    wider_bytes = (precisions.wider_weight_bytes_per_element, precisions.wider_input_bytes_per_element)
    wider = _gemm_roofline(inference_hardware, inference_hardware.wider_hardware, shape, wider_bytes, grouped)
    return (
        (1.0 - share) * narrow[0] + share * wider[0],
        (1.0 - share) * narrow[1] + share * wider[1],
    )


def _gemm_roofline(
    inference_hardware: InferenceHardware,
    hardware: Hardware,
    shape: tuple[tuple[Linear, ...], Array, Array, Array],
    element_bytes: tuple[float, float],
    grouped: bool = False,
) -> tuple[Array, Array]:
    """(compute s, memory s) of ``shape`` = (linears, tokens, tp, copies) all in one format:
    ``hardware``'s compute row, ``element_bytes`` = (bytes per stored weight, per GEMM input);
    ``grouped`` as :func:`_gemms` says."""
    linears, m, tp, copies = shape
    per_weight, inputs = element_bytes
    padding: Array = 1.0
    if grouped and hardware.compute_row != "fp4":
        padding = inference_hardware.gemm_model.grouped_row_padding(m)
    compute = memory = 0.0
    for linear in linears:
        k, n = inference_local_dims(linear, tp)
        flop = 2.0 * m * n * k
        efficiency = inference_hardware.gemm_model.gemm_efficiency(m, n, k, hardware.compute_row)
        busy = _fp4_occupancy(inference_hardware, hardware, m, n, copies)
        compute = compute + copies * flop * padding / (
            hardware.peak_flop_per_s * inference_hardware.sustained_scale * efficiency * busy
        )
        traffic = k * n * per_weight + m * k * inputs + m * n * ACTIVATION_BYTES
        memory = memory + copies * traffic / (inference_hardware.stream_bytes_per_s * busy)
    return compute, memory


def _fp4_occupancy(
    inference_hardware: InferenceHardware, hardware: Hardware, m: Array, n: Array, groups: Array
) -> Array:
    """Share of the GPU's SMs an FP4 GEMM's output tiles keep busy
    (:meth:`~lightspeed.sol.core.efficiency.EfficiencyModel.fp4_tile_occupancy`); 1 for other
    formats and for GPUs whose SM count the catalog does not give."""
    sms = hardware.accelerator.num_compute_units
    if hardware.compute_row != "fp4" or not sms:
        return 1.0
    return inference_hardware.gemm_model.fp4_tile_occupancy(m, n, groups, sms)


def gemm_time_s(
    inference_hardware: InferenceHardware, m: Array, n: int, k: int, *, groups: Array = 1.0
) -> Array:
    """Seconds the engine charges ``groups`` GEMMs of ``(m x k) @ (k x n)`` run as one kernel (a
    grouped GEMM when ``groups`` > 1) in the deployment's weight and activation formats: their
    roofline, as :func:`iteration_cost` prices a projection, plus one kernel's fixed GPU time. For
    comparing the engine with published kernel benchmarks (``benchmarks/kernel_anchors.py``)."""
    compute, memory = _gemms(inference_hardware, (Linear("gemm", k, n, "column"),), m, 1.0, copies=groups)
    return inference_hardware.gemm_model.kernel_s(compute, memory) + inference_hardware.floors.gpu_kernel_s


def _attention_head_dims(shapes: LayerShapes, model: TransformerSpec) -> tuple[float, float]:
    """(decode, prefill) MACs per head per attended position: QK plus AV.

    MLA decodes in the absorbed form (queries against the latent + RoPE key,
    output in the latent), and prefills in the expanded form.
    """
    attention = model.attention
    prefill = float(shapes.q_head_dim + shapes.v_head_dim)
    if attention.kind == "mla":
        assert attention.kv_lora_rank is not None
        assert attention.qk_rope_head_dim is not None
        return float(2 * attention.kv_lora_rank + attention.qk_rope_head_dim), prefill
    return prefill, prefill


@functools.cache
def attention_groups(model: TransformerSpec) -> tuple[LayerGroup, ...]:
    """The model's layers by attention kind (cached: every iteration of a model asks)."""
    return layer_groups(model)


def attended_contexts(grid: IterationGrid, group: LayerGroup) -> tuple[Array, Array]:
    """(decode, prefill) tokens a query of a layer of ``group`` attends to: the decoding
    sequences' contexts spread over ``decode_context +- decode_context_span / 2``; a causal
    prompt's queries over positions 0 to ``2 x prefill_context``."""
    kind, span = group.kind, group.span_tokens
    return _spread_means(grid, lambda first, last: mean_read_tokens(kind, span, first, last))


def _kept_contexts(grid: IterationGrid) -> tuple[Array, Array]:
    """(decode, prefill) tokens a full layer keeps over the same spreads as
    :func:`attended_contexts`: what a sparse layer's indexer scores."""
    return _spread_means(grid, lambda first, last: mean_cached_tokens("full", None, first, last))


def _spread_means(grid: IterationGrid, mean: Callable[[Array, Array], Array]) -> tuple[Array, Array]:
    half = np.asarray(grid.decode_context_span, dtype=np.float64) / 2.0
    context = np.asarray(grid.group_context, dtype=np.float64)
    decode = mean(np.maximum(context - half, 0.0), context + half)
    return decode, mean(0.0, 2.0 * np.asarray(grid.prefill_context, dtype=np.float64))


def _attention(
    acc: _Acc,
    grid: IterationGrid,
    model: TransformerSpec,
    shapes: LayerShapes,
    inference_hardware: InferenceHardware,
) -> None:
    """Core attention of one (average) layer on one GPU: decode KV reads and prefill
    FlashAttention of each attention kind, weighted by its share of the layers, and the KV writes."""
    hardware = inference_hardware.hardware
    heads = shapes.num_heads / grid.tp
    decode_dims, prefill_dims = _attention_head_dims(shapes, model)
    kv_elements = kv_elements_per_token_per_gpu(shapes, model, grid.tp)
    kv_bytes = inference_hardware.precisions.kv_bytes_per_element
    reads = _decode_kv_reads(shapes, model, inference_hardware, heads, grid.tp)
    sequences = grid.group_sequences
    prompt = grid.group_prefill_tokens
    efficiency = hardware.efficiency
    scale = inference_hardware.attention_peak_flop_per_s * inference_hardware.sustained_scale
    rate = _flash_rate(inference_hardware)
    prefill_s: Array = 0.0
    for group in attention_groups(model):
        decode_context, prefill_context = attended_contexts(grid, group)
        # a sparse kernel computes at least the server's minimum of heads (FlashMLA's: 64)
        computed = (
            np.maximum(heads, inference_hardware.serving.sparse_attention_min_heads)
            if group.kind == "sparse"
            else heads
        )
        decode_flop = 2.0 * sequences * grid.query_tokens * decode_context * computed * decode_dims
        decode_bytes = sequences * decode_context * kv_elements * kv_bytes * reads
        acc.roofline(
            group.share * decode_flop / rate,
            group.share * decode_bytes / inference_hardware.stream_bytes_per_s,
            "attention_compute",
            "kv_cache",
            gemm=False,
        )
        prefill_rate = scale * efficiency.attention_efficiency(
            "flash", backward=False, seq_len=2.0 * prefill_context
        )
        # a sparse layer prefills in MLA's absorbed (MQA) form too: the top-k it gathers are latents
        # (TensorRT-LLM's DeepSeek-V3.2 blog: DSA "operates only in MQA mode for both prefill and
        # decoding"; FlashMLA's sparse prefill kernel takes the 576-wide latent as well)
        dims = decode_dims if group.kind == "sparse" else prefill_dims
        prefill_flop = 2.0 * prompt * prefill_context * computed * dims
        prefill_s = prefill_s + group.share * prefill_flop / prefill_rate
    per_token = model.block_shares[0] * kv_bytes_per_token_per_gpu(shapes, model, grid.tp, kv_bytes)
    written = (sequences * grid.query_tokens + prompt) * per_token
    written_s = written / inference_hardware.stream_bytes_per_s
    acc.roofline(prefill_s, written_s, "attention_compute", "kv_cache", gemm=False)
    if model.attention.index_n_heads is not None:
        _indexer(acc, grid, model, inference_hardware)


def _flash_rate(inference_hardware: InferenceHardware) -> float:
    """FLOP/s the FlashAttention forward kernel sustains on the device (no sequence saturation)."""
    scale = inference_hardware.attention_peak_flop_per_s * inference_hardware.sustained_scale
    efficiency = inference_hardware.hardware.efficiency
    return float(scale * efficiency.attention_efficiency("flash", backward=False))


def _recurrent(
    acc: _Acc,
    grid: IterationGrid,
    model: TransformerSpec,
    shapes: LayerShapes,
    inference_hardware: InferenceHardware,
) -> None:
    """A hybrid's recurrent blocks (Mamba-2 or Gated DeltaNet) in one (average) layer on one GPU:
    the ``in_proj`` and ``out_proj`` GEMMs; each decoding sequence's state read and written back
    once per step (the update's math, the mixer's ``decode_flop_per_state`` per state entry and
    token, at the attention kernel's rate); a prompt's chunked scan
    (:func:`~lightspeed.workload.flops.recurrent_scan_forward_flop`'s FLOPs on this rank's heads
    at the FlashAttention rate) and its final state written once per request."""
    mixer = model.recurrent
    assert mixer is not None
    share = model.block_shares[1]
    compute, memory = _gemms(inference_hardware, shapes.recurrent, grid.group_tokens, grid.tp)
    acc.roofline(share * compute, share * memory, "gemm_compute", "weight_reads")
    state = recurrent_state_bytes_per_gpu(model, grid.tp)
    rate = _flash_rate(inference_hardware)
    sequences = grid.group_sequences
    entries = mixer.state_values / grid.tp
    decode_flop = sequences * grid.query_tokens * entries * mixer.decode_flop_per_state
    stream = inference_hardware.stream_bytes_per_s
    acc.roofline(
        share * decode_flop / rate,
        share * 2.0 * sequences * state / stream,
        "attention_compute",
        "kv_cache",
        gemm=False,
    )
    per_token = mixer.scan_flop_per_token() / grid.tp
    prompt = grid.group_prefill_tokens
    requests = grid.prefill_requests / grid.dp_attention
    acc.roofline(
        share * prompt * per_token / rate,
        share * requests * state / stream,
        "attention_compute",
        "kv_cache",
        gemm=False,
    )


def _indexer(
    acc: _Acc, grid: IterationGrid, model: TransformerSpec, inference_hardware: InferenceHardware
) -> None:
    """A sparse layer's lightning indexer on one GPU (whole on every rank): every query scores
    every kept key with ``index_n_heads`` dot products of ``index_head_dim`` in FP8 and writes one
    FP32 score per key that the top-k selection reads back (DeepSeek-V3.2-Exp's ``fp8_index``
    then ``topk``); a decode step also reads each sequence's indexer keys once. Decodes and
    prompts run as separate kernels, each at its roofline: scores at the indexer peak with the
    FlashAttention efficiency, bytes at the KV stream rate."""
    attention = model.attention
    assert attention.index_n_heads is not None
    assert attention.index_head_dim is not None
    share = sum(group.share for group in attention_groups(model) if group.kind == "sparse")
    flop_per_score = 2.0 * attention.index_n_heads * attention.index_head_dim
    peak = inference_hardware.indexer_peak_flop_per_s * inference_hardware.sustained_scale
    efficiency = inference_hardware.hardware.efficiency
    stream = inference_hardware.stream_bytes_per_s
    decode_keys, prefill_keys = _kept_contexts(grid)
    decode_scores = grid.group_sequences * grid.query_tokens * decode_keys
    key_bytes = grid.group_sequences * decode_keys * attention.index_key_bytes
    prefill_scores = grid.group_prefill_tokens * prefill_keys
    prefill_rate = peak * efficiency.attention_efficiency("flash", backward=False, seq_len=2.0 * prefill_keys)
    decode_rate = peak * efficiency.attention_efficiency("flash", backward=False)
    for scores, read, rate in ((decode_scores, key_bytes, decode_rate), (prefill_scores, 0.0, prefill_rate)):
        compute_s = share * scores * flop_per_score / rate
        memory_s = share * (read + scores * _SCORE_BYTES) / stream
        acc.roofline(compute_s, memory_s, "attention_compute", "kv_cache", gemm=False)


_SCORE_BYTES = 8.0  # one FP32 index score written, then read by the top-k selection


def _decode_kv_reads(
    shapes: LayerShapes,
    model: TransformerSpec,
    inference_hardware: InferenceHardware,
    query_heads: Array,
    tp: Array,
) -> Array:
    """How many times a decode step reads each cached KV value on one GPU: once, or once per query
    head of its group where the server's decode kernel runs one thread block per query head
    (:meth:`ServingStack.decode_kv_reads_per_kv_head`); MLA's latent is read once."""
    if model.attention.kind == "mla":
        return 1.0
    return inference_hardware.serving.decode_kv_reads_per_kv_head(query_heads, kv_heads_per_gpu(shapes, tp))


def busiest_rank_imbalance(grid: IterationGrid, model: TransformerSpec, serving: ServingStack) -> Array:
    """The busiest EP rank's routed tokens over the mean rank's: the grid's factor where it has one,
    else (0) the routing skew at its EP size, or the load balancer's measured residual where the
    plan places redundant experts or the server's recipes do (``sol/core/routing.py``)."""
    given = np.asarray(grid.expert_imbalance, dtype=np.float64)
    if np.all(given > 0.0):
        return given
    moe = model.moe
    assert moe is not None
    given, ep, physical = np.broadcast_arrays(given, grid.ep, grid.physical_experts)
    balanced = balanced_placement(physical, moe.num_routed_experts, serving.expert_load_balancer)
    return np.where(given > 0.0, given, routing_factors(moe.num_routed_experts, ep, balanced))


def _expert_part(
    acc: _Acc,
    grid: IterationGrid,
    model: TransformerSpec,
    shapes: LayerShapes,
    inference_hardware: InferenceHardware,
    *,
    busiest: Array,
) -> None:
    """Routed experts of one MoE layer on the busiest GPU: only the experts (replicas) the
    tokens reach are read, as many as the busiest GPU is expected to hold
    (:func:`~lightspeed.sol.core.experts.busiest_rank_experts`: at a small batch more than the
    mean GPU, more still under group-limited routing), and that GPU computes ``busiest``
    (:func:`busiest_rank_imbalance`) times the mean tokens per expert."""
    moe = model.moe
    assert moe is not None
    experts = np.where(grid.physical_experts > 0, grid.physical_experts, float(moe.num_routed_experts))
    tokens = grid.tokens
    touched_fraction = 1.0 - (1.0 - moe.top_k / experts) ** tokens
    # the busiest GPU's touched slots: the layer waits for it (at a small batch, more than the mean;
    # more still where the router reaches only some expert groups)
    local_touched = busiest_rank_experts(moe, experts, tokens, grid.ep)
    per_expert = tokens * moe.top_k / (experts * touched_fraction) * busiest
    expert_tp = grid.stage_gpus / grid.ep
    compute, memory = _gemms(
        inference_hardware, shapes.experts, per_expert, expert_tp, copies=local_touched, grouped=True
    )
    acc.roofline(compute, memory, "gemm_compute", "weight_reads")
    # with attention DP the engine's all-to-all stands for the exchange (DeepEP's decode kernels
    # land the tokens in the experts' order and sum them back); a local copy some servers make
    # there too (TensorRT-LLM, DeepEP's prefill kernels) is not priced
    permutation = _permutation_s(per_expert * local_touched, model, inference_hardware)
    acc.add("elementwise", np.where(grid.dp_attention <= 1, permutation, 0.0))


def _permutation_s(
    routed_slots: Array, model: TransformerSpec, inference_hardware: InferenceHardware
) -> Array:
    """Seconds a MoE layer moves its tokens between the token order and the experts' order on one
    GPU: each of ``routed_slots`` (a token's copy for one of its experts) is written once in the
    GEMM input format when the tokens are expanded to the experts' order, and each expert's output
    row is read back in 16 bits to be weighted and summed into its token (TensorRT-LLM's CUTLASS
    MoE: ``expandInputRowsKernel`` and ``finalizeMoeRoutingKernel``). Every stack is costed so:
    vLLM's Triton MoE gathers its rows inside the GEMM (no expanded copy) but reads the outputs
    back the same way (``moe_sum``), so for it the first copy, a third of this term in FP8, is an
    over-count. Both copies are of the whole hidden vector: an expert split over TP ranks takes
    its whole input on each. The GEMMs' own reads and writes of those rows are in their roofline.
    It matters where experts are small and many are chosen (Qwen3-30B-A3B: 8 of 128, 768 wide; on
    an 8,192-token prompt 11% of the layer's GEMM time in FP8 on an H200, 19% in NVFP4 on a B200),
    not for Mixtral (2 of 8, 14,336 wide: under 1%)."""
    input_bytes = inference_hardware.precisions.input_bytes_per_element
    assert model.moe is not None
    width = model.moe.latent_size or model.hidden_size  # a LatentMoE moves its tokens at the latent width
    moved = routed_slots * width * (input_bytes + ACTIVATION_BYTES)
    return moved / inference_hardware.stream_bytes_per_s


def routed_experts_time_s(
    grid: IterationGrid, model: TransformerSpec, inference_hardware: InferenceHardware
) -> Array:
    """Seconds the engine charges the busiest GPU for one MoE layer's routed experts: their
    roofline as :func:`iteration_cost` prices it (the experts the grid's tokens reach, evenly
    loaded) plus the fixed GPU time of the kernels a MoE layer launches beyond a dense one
    (routing, permutation, grouped GEMMs, finalize). For comparing the engine with published MoE
    kernel benchmarks (``benchmarks/kernel_anchors.py``)."""
    acc = _Acc(inference_hardware.gemm_model)
    _expert_part(acc, grid, model, layer_shapes(model), inference_hardware, busiest=np.asarray(1.0))
    extra_kernels = KERNELS_PER_MOE_LAYER_FORWARD - KERNELS_PER_DENSE_LAYER_FORWARD
    return sum(acc.parts.values()) + extra_kernels * inference_hardware.floors.gpu_kernel_s


def moe_layer_parts(
    grid: IterationGrid, model: TransformerSpec, inference_hardware: InferenceHardware
) -> dict[str, Array]:
    """Seconds one MoE layer costs the busiest GPU of a stage iteration, by part: what
    :func:`iteration_cost` sums over the stage's MoE layers, with ``launch`` the fixed GPU time of
    that layer's kernels (under CUDA graphs; ``host`` is 0). For comparing the engine with
    published per-layer profiles (``benchmarks/kernel_anchors.py``)."""
    if model.moe is None:
        raise UnsupportedError(
            f"{model.name} has no MoE layers: a dense layer has no routed experts to price"
        )
    shape = np.shape(grid.tp)
    parts = {
        name: np.broadcast_to(np.asarray(value, dtype=np.float64), shape).copy()
        for name, value in _layer(grid, model, layer_shapes(model), inference_hardware, moe=True).items()
    }
    launch = kernels_per_layer_forward(model, moe=True) * inference_hardware.floors.gpu_kernel_s
    parts["launch"] = np.full(shape, launch)
    parts["host"] = np.zeros(shape)
    return parts


def _attention_dp_pace(acc: _Acc, grid: IterationGrid, inference_hardware: InferenceHardware) -> None:
    """With attention data parallelism, the time the serving stack's fitted
    ``attention_dp_efficiency`` adds to the layer's compute and memory time, as its own part
    (``attention_dp_pace``) so the kernel parts stay what the kernels cost. What it stands in
    for is not the kernels of a decode layer: against the published per-layer breakdowns of
    DeepSeek's decode profile and SGLang's (``benchmarks/kernel_anchors.py``) the kernel and link
    parts without it come within 4-9% of the measured layer, and with it up to 38% over. Nor is it the
    placement of requests (the simulator prices the busiest rank) or the routing skew
    (:func:`busiest_rank_imbalance`). Collectives are costed from the links (and the
    all-to-all from the busiest rank's tokens) and are left out of it."""
    slow = np.where(grid.dp_attention > 1, 1.0 / inference_hardware.serving.attention_dp_efficiency, 1.0)
    kernels = sum(value for name, value in acc.parts.items() if not name.endswith("_comm"))
    acc.add("attention_dp_pace", (slow - 1.0) * kernels)


def _moe_comm(
    acc: _Acc,
    grid: IterationGrid,
    model: TransformerSpec,
    inference_hardware: InferenceHardware,
    *,
    busiest: Array,
) -> None:
    """Combining the MoE output: all-reduce over the stage (tokens are already on every GPU), or,
    with attention DP, an all-to-all dispatch and combine over the stage.

    An iteration that carries prompt tokens dispatches them with the throughput kernels that
    send a token once per destination node (DeepEP's normal mode, which SGLang and DeepSeek's
    system use for prefill); a decode-only iteration uses the low-latency kernels, which send
    one copy per chosen expert (DeepEP README, "Low-latency kernels with pure RDMA")."""
    fabric = inference_hardware.hardware.fabric
    group_tokens = grid.group_tokens
    size = group_tokens * model.hidden_size * ACTIVATION_BYTES
    tp_mode = grid.dp_attention <= 1
    reduce = collectives.all_reduce_s(fabric, size, grid.stage_gpus, 1.0)
    assert model.moe is not None
    # Each GPU dispatches its share of the group's tokens to every slice of each chosen expert:
    # top_k x (stage GPUs / ep) copies, at most one per GPU of the stage.
    copies = np.minimum(model.moe.top_k * grid.stage_gpus / grid.ep, grid.stage_gpus)
    # the GPU with the busiest experts receives ``busiest`` times the mean share
    sent = group_tokens / grid.tp * copies * (model.moe.latent_size or model.hidden_size) * busiest
    nodes = expert_nodes(grid.stage_gpus, 1.0, fabric.scale_up.domain_size)
    remote = np.where(grid.group_prefill_tokens > 0, node_dedupe_scale(model.moe, nodes), 1.0)
    dispatch = collectives.all_to_all_s(
        fabric, sent * inference_hardware.precisions.input_bytes_per_element, grid.stage_gpus, 1.0, remote
    )
    combine = collectives.all_to_all_s(fabric, sent * ACTIVATION_BYTES, grid.stage_gpus, 1.0, remote)
    shared_reduce = (
        collectives.all_reduce_s(fabric, size, grid.tp, 1.0) if model.moe.num_shared_experts else 0.0
    )
    acc.add("tp_comm", np.where(tp_mode, reduce, shared_reduce))
    acc.add("ep_comm", np.where(tp_mode, 0.0, dispatch + combine))


def _second_micro_batch_reads(acc: _Acc, grid: IterationGrid) -> None:
    """Two-batch overlap (DeepSeek's inference system, SGLang's ``--enable-two-batch-overlap``):
    with attention data parallelism the batch runs as two micro-batches, and each reads the
    layer's weights."""
    acc.add("weight_reads", np.where(grid.dp_attention > 1, acc.parts["weight_reads"], 0.0))


def _hide_all_to_all(acc: _Acc, grid: IterationGrid, inference_hardware: InferenceHardware) -> None:
    """Under two-batch overlap one micro-batch's dispatch and combine travel while the other
    computes: the all-to-all then costs only what the layer's other work cannot cover (plus the
    stack's ``overlap_contention`` share of what it does)."""
    others = sum(value for name, value in acc.parts.items() if name != "ep_comm")
    hidden = inference_hardware.serving.exposed_s(acc.parts["ep_comm"], others)
    acc.parts["ep_comm"] = np.where(grid.dp_attention > 1, hidden, acc.parts["ep_comm"])


def _layer(
    grid: IterationGrid,
    model: TransformerSpec,
    shapes: LayerShapes,
    inference_hardware: InferenceHardware,
    *,
    moe: bool,
) -> dict[str, Array]:
    """Breakdown of one dense or MoE layer on one GPU (a hybrid's average layer: its share of
    attention, recurrent mixer and MLP blocks, :attr:`~lightspeed.workload.TransformerSpec.block_shares`)."""
    acc = _Acc(inference_hardware.gemm_model)
    group_tokens = grid.group_tokens
    attention_share, recurrent_share, mlp_share = model.block_shares
    compute, memory = _gemms(inference_hardware, shapes.attention, group_tokens, grid.tp, attention=True)
    acc.roofline(attention_share * compute, attention_share * memory, "gemm_compute", "weight_reads")
    _attention(acc, grid, model, shapes, inference_hardware)
    if model.recurrent is not None:
        _recurrent(acc, grid, model, shapes, inference_hardware)
    fabric = inference_hardware.hardware.fabric
    activation = group_tokens * model.hidden_size * ACTIVATION_BYTES
    mixers = attention_share + recurrent_share  # each mixer block all-reduces its output
    acc.add("tp_comm", mixers * collectives.all_reduce_s(fabric, activation, grid.tp, 1.0))
    ffn = mlp_share * model.ffn_hidden_size
    if moe:
        assert model.moe is not None
        busiest = busiest_rank_imbalance(grid, model, inference_hardware.serving)
        _expert_part(acc, grid, model, shapes, inference_hardware, busiest=busiest)
        kept = inference_hardware.precisions.as_attention("shared_experts")
        others = ((shapes.shared_experts, kept), (shapes.router, False), (shapes.latent, False))
        for linears, attention in others:
            acc.roofline(
                *_gemms(inference_hardware, linears, group_tokens, grid.tp, attention=attention),
                "gemm_compute",
                "weight_reads",
            )
        _moe_comm(acc, grid, model, inference_hardware, busiest=busiest)
        ffn = model.moe.expert_ffn_hidden_size * model.moe.top_k
    else:
        kept = inference_hardware.precisions.as_attention("dense_mlp")
        compute, memory = _gemms(inference_hardware, shapes.mlp, group_tokens, grid.tp, attention=kept)
        acc.roofline(mlp_share * compute, mlp_share * memory, "gemm_compute", "weight_reads")
        acc.add("tp_comm", mlp_share * collectives.all_reduce_s(fabric, activation, grid.tp, 1.0))
    passes = 3.0 if model.gated_mlp else 2.0
    blocks = 0.5 if model.is_hybrid else 1.0  # a hybrid's block has one norm and one residual add
    conv = 0.0 if model.recurrent is None else model.recurrent.streamed_values_per_token  # conv and norms
    elementwise = group_tokens * (
        blocks * ELEMENTWISE_ACCESSES_PER_HIDDEN * model.hidden_size
        + passes * ffn / grid.tp
        + recurrent_share * conv / grid.tp
    )
    acc.add("elementwise", elementwise * ACTIVATION_BYTES / inference_hardware.stream_bytes_per_s)
    overlapped = moe and inference_hardware.serving.two_batch_overlap
    if overlapped:
        _second_micro_batch_reads(acc, grid)
    _attention_dp_pace(acc, grid, inference_hardware)
    if overlapped:
        _hide_all_to_all(acc, grid, inference_hardware)
    return acc.parts


def _head(
    grid: IterationGrid, model: TransformerSpec, inference_hardware: InferenceHardware
) -> dict[str, Array]:
    """LM head of the last stage over the tokens that sample (16-bit weights, as quantizers leave it)."""
    acc = _Acc(inference_hardware.gemm_model)
    sampled = (grid.decode_sequences * grid.query_tokens + grid.prefill_requests) / grid.dp_attention
    head = (Linear("lm_head", model.hidden_size, model.vocab_size, "column"),)
    compute, memory = _gemms(
        inference_hardware, head, np.maximum(sampled, 1.0), grid.tp, weight_bytes=ACTIVATION_BYTES
    )
    acc.roofline(compute, memory, "gemm_compute", "weight_reads")
    return acc.parts


def launch_and_host_s(
    busy: Array,
    kernels: Array,
    inference_hardware: InferenceHardware,
    sequences: Array = 0.0,
    issued: Array | None = None,
) -> tuple[Array, Array]:
    """(launch, host) seconds a stage iteration of ``busy`` roofline seconds and ``kernels``
    kernels adds: each kernel's fixed GPU time, plus whatever the host's kernel issue outlasts
    the GPU where the host issues them (``issued``, true or false per iteration:
    :meth:`ServingStack.issues_kernels`; default: as for a decode-only step); the
    serving stack's host time for a step of ``sequences`` sequences (:meth:`ServingStack.host_s`),
    serial or (overlap scheduler) only what the GPU step does not cover.

    With 100 kernels of 2.5 us, 1 ms of GPU work and no graphs at 4 us per launch, the
    GPU needs 1.25 ms and the host 0.4 ms to issue: launch 0.25 ms, the host hidden.
    """
    serving, floors = inference_hardware.serving, inference_hardware.floors
    kernel_s = kernels * floors.gpu_kernel_s
    gpu = busy + kernel_s
    if issued is None:  # a decode-only step
        issued = serving.issues_kernels(0.0, 0.0)
    issue = issued * kernels * inference_hardware.hardware.efficiency.kernel_launch_s
    ready = np.maximum(gpu, issue)
    host = serving.host_s(sequences)
    total = np.maximum(gpu, issue + host) if serving.overlap_scheduler else ready + host
    launch = kernel_s + ready - gpu
    return launch, total - ready


def iteration_cost(
    grid: IterationGrid, model: TransformerSpec, inference_hardware: InferenceHardware
) -> IterationCost:
    """Breakdown of one iteration of the busiest (last) stage, for every deployment in ``grid``."""
    shapes = layer_shapes(model)
    num_dense, num_moe = stage_layers(model, grid.pp)
    dense = _layer(grid, model, shapes, inference_hardware, moe=False)
    moe = _layer(grid, model, shapes, inference_hardware, moe=True) if model.moe is not None else dense
    head = _head(grid, model, inference_hardware)
    parts = {name: num_dense * dense[name] + num_moe * moe[name] + head[name] for name in ITERATION_PARTS}
    fabric = inference_hardware.hardware.fabric
    crosses = collectives.crosses_domains(fabric, grid.pp, grid.stage_gpus)
    boundary = grid.group_tokens * model.hidden_size * ACTIVATION_BYTES
    parts["pp_comm"] = np.where(grid.pp > 1, collectives.send_recv_s(fabric, boundary, crosses), 0.0)
    kernels = stage_kernels(model, grid.pp)
    busy = sum(parts[name] for name in ITERATION_PARTS)
    issued = inference_hardware.serving.issues_kernels(grid.group_prefill_tokens, grid.group_tokens)
    parts["launch"], parts["host"] = launch_and_host_s(
        busy, kernels, inference_hardware, grid.group_sequences, issued
    )
    return IterationCost(parts={name: np.asarray(value, dtype=np.float64) for name, value in parts.items()})


__all__ = [
    "ITERATION_PARTS",
    "IterationCost",
    "IterationGrid",
    "attended_contexts",
    "attention_groups",
    "gemm_time_s",
    "iteration_cost",
    "launch_and_host_s",
    "moe_layer_parts",
    "routed_experts_time_s",
]
