"""Memory of a serving GPU: weights, workspace, runtime reserve, and the KV cache that is left.

Per GPU of the busiest stage (vectorized over deployments):

* **weights**: the stage's linears in the weight format (block or group scales
  included, a published checkpoint's own groups and the layers it keeps 16-bit
  as it ships them: :func:`~lightspeed.sol.infer.checkpoints.as_published`), norms,
  and the embedding table and LM head in 16 bit (quantizers
  such as ModelOpt leave them unquantized); TP splits heads and MLPs, EP the
  routed experts (each split over ``stage GPUs / ep``); attention groups of
  attention data parallelism each hold the attention weights;
* **workspace**: activations of the largest iteration (the prefill chunk);
* **reserve**: CUDA context, NCCL buffers and fragmentation (``runtime.toml``);
* **KV cache**: ``kv_cache_memory_fraction`` of what remains, or, where the server's share is of
  the whole GPU (vLLM's ``gpu_memory_utilization``), that share of it less the rest.

The KV-cache-limited batch reserves ``input + output`` tokens for every
sequence up front, as TensorRT-LLM's default ``GUARANTEED_NO_EVICT`` scheduler
and ``trtllm-bench``'s sizing do, so no running request is ever evicted; a
local-attention layer reserves only its window or chunk
(:func:`lightspeed.workload.reserved_tokens`: Gemma 3 keeps 1,024 tokens on
five layers of six, gpt-oss 128 on every other).

The serving engine's twin of :mod:`lightspeed.sol.train.memory` (the same concept for training).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from lightspeed.sol.core.factors import powers_of_two
from lightspeed.sol.core.shapes import LayerShapes, Linear, layer_shapes
from lightspeed.sol.infer.inference_hardware import InferenceHardware
from lightspeed.sol.infer.iteration import ACTIVATION_BYTES
from lightspeed.sol.infer.per_gpu import inference_local_dims as local_dims
from lightspeed.sol.infer.per_gpu import (
    kv_bytes_per_token_per_gpu,
    recurrent_state_bytes_per_gpu,
    stage_layers,
)
from lightspeed.sol.infer.plan import InferencePlan, ServingLoad
from lightspeed.workload import TransformerSpec
from lightspeed.workload.attention import reserved_token_layers

Array = Any
WORKSPACE_ACCESSES_PER_HIDDEN = 4.0  # residual, normed input, attention output, MLP output per chunk token


@dataclass(frozen=True)
class MemoryArrays:
    """Bytes per GPU and the KV-limited batch per replica, aligned with the deployments
    (``max_sequences`` also stops at the serving stack's default cap on sequences per
    scheduler, its ``max_sequences``, and at its ``decode_batch_per_rank`` for
    attention-data-parallel deployments, where it has them; ``kv_sequences`` is the KV cache's
    limit alone, which a user's own cap replaces those defaults under). ``kv_bytes_per_sequence`` is
    what one request of the load reserves on a GPU of the busiest stage (a hybrid's Mamba-2 state
    included: ``state_bytes_per_sequence``, whatever the request's length), ``kv_bytes_per_token``
    its KV cache per token of the request."""

    weights_bytes: Array
    workspace_bytes: Array
    reserved_bytes: Array
    kv_capacity_bytes: Array
    kv_bytes_per_token: Array
    kv_bytes_per_sequence: Array
    max_sequences: Array
    usable_bytes: float
    kv_sequences: Array = 0.0
    # where a server whose share is of the whole GPU (vLLM) leaves no request's cache at its
    # default, so the share of the free memory was taken (a run that served raised it)
    kv_share_raised: Array = False
    state_bytes_per_sequence: Array = 0.0

    @property
    def fits(self) -> Array:
        """Whether at least one request of the load fits beside the weights."""
        return self.max_sequences >= 1.0


def _params(linears: tuple[Linear, ...], tp: Array) -> Array:
    total: Array = 0.0
    for linear in linears:
        k, n = local_dims(linear, tp)
        total = total + k * n + (n if linear.bias else 0.0)
    return total


def stage_weight_bytes(
    model: TransformerSpec,
    shapes: LayerShapes,
    inference_hardware: InferenceHardware,
    *,
    tp: Array,
    pp: Array,
    ep: Array,
    dp_attention: Array,
    physical_experts: Array = 0.0,
) -> Array:
    """Weight bytes on one GPU of the busiest stage (see the module docstring); with
    ``physical_experts`` > 0 the stage holds that many routed experts (replicas included)."""
    precisions = inference_hardware.precisions  # as the checkpoint ships them (inference_hardware_for)
    weight = precisions.stored_bytes_per_element()
    num_dense, num_moe = stage_layers(model, pp)
    attention_share, recurrent_share, mlp_share = model.block_shares  # a hybrid's average layer
    attention = (
        attention_share * _params(shapes.attention, tp) * precisions.layer_bytes_per_element("attention")
        + shapes.num_norm_params * ACTIVATION_BYTES
    )
    if model.recurrent is not None:  # the projections in the run's format; conv, decay terms, norm in 16 bits
        rest = model.recurrent.head_params / tp * ACTIVATION_BYTES
        attention = attention + recurrent_share * (_params(shapes.recurrent, tp) * weight + rest)
    dense = attention + mlp_share * _params(shapes.mlp, tp) * precisions.layer_bytes_per_element("dense_mlp")
    total = num_dense * dense
    if model.moe is not None:
        expert_tp = tp * dp_attention / ep
        physical = np.where(np.asarray(physical_experts) > 0, physical_experts, model.moe.num_routed_experts)
        slots = np.ceil(physical / np.asarray(ep, dtype=np.float64))  # the busiest GPU's expert slots
        experts = slots * _params(shapes.experts, expert_tp)
        shared = _params(shapes.shared_experts, tp) * precisions.layer_bytes_per_element("shared_experts")
        others = _params(shapes.router, 1.0) + _params(shapes.latent, 1.0)
        total = total + num_moe * (attention + shared + (experts + others) * weight)
    table = model.vocab_size * model.hidden_size / tp * ACTIVATION_BYTES
    ends = np.where(pp > 1, table, table * (1.0 if model.tied_embeddings else 2.0))
    return total + ends


def inference_memory(
    model: TransformerSpec,
    shapes: LayerShapes,
    inference_hardware: InferenceHardware,
    *,
    tp: Array,
    pp: Array,
    ep: Array,
    dp_attention: Array,
    tokens_per_sequence: Array,
    physical_experts: Array = 0.0,
) -> MemoryArrays:
    """Memory per GPU and how many sequences of ``tokens_per_sequence`` tokens a replica holds."""
    hardware = inference_hardware.hardware
    usable = hardware.usable_memory_bytes
    weights = stage_weight_bytes(
        model,
        shapes,
        inference_hardware,
        tp=tp,
        pp=pp,
        ep=ep,
        dp_attention=dp_attention,
        physical_experts=physical_experts,
    )
    ffn = (
        model.ffn_hidden_size
        if model.moe is None
        else max(model.ffn_hidden_size, model.moe.expert_ffn_hidden_size)
    )
    chunk = inference_hardware.parameters.prefill_chunk_tokens / dp_attention
    workspace = (
        chunk * (WORKSPACE_ACCESSES_PER_HIDDEN * model.hidden_size + 3.0 * ffn / tp) * ACTIVATION_BYTES
    )
    reserved = hardware.overheads.reserved_of(usable)
    stage_share = np.ceil(model.num_layers / np.asarray(pp, dtype=np.float64)) / model.num_layers
    per_token_layer = kv_bytes_per_token_per_gpu(
        shapes, model, tp, inference_hardware.precisions.kv_bytes_per_element
    )
    kv_per_sequence = stage_share * reserved_token_layers(model, tokens_per_sequence) * per_token_layer
    # a hybrid's recurrent blocks keep a state per sequence, whatever its length
    state = stage_share * model.num_recurrent_layers * recurrent_state_bytes_per_gpu(model, tp)
    per_sequence = kv_per_sequence + state
    fraction = inference_hardware.parameters.kv_cache_memory_fraction
    capacity = np.maximum(usable - weights - workspace - reserved, 0.0) * fraction
    raised = np.zeros(np.shape(capacity), dtype=bool)
    serving = inference_hardware.serving
    if serving.kv_memory_of == "total":
        # the share is of the whole GPU; where it leaves no request's cache the server cannot start
        # at its default, so a run that served raised it: the share of the free memory stands in
        share = serving.kv_memory_share(np.asarray(tp) * np.asarray(dp_attention), fraction)
        whole = np.maximum(share * usable - weights - workspace - reserved, 0.0)
        raised = (whole < per_sequence) & (capacity >= per_sequence)
        capacity = np.where(raised, capacity, whole)
    sequences = np.floor(capacity / per_sequence) * dp_attention
    kv_sequences = sequences
    cap = inference_hardware.serving.sequence_cap
    if cap is not None:
        # the server's own default cap on sequences per scheduler (a replica or an attention-DP rank)
        per_token = per_sequence / np.asarray(tokens_per_sequence, dtype=np.float64)
        # a model whose layers keep no per-token cache holds any number of tokens
        kv_tokens = np.divide(capacity, per_token, out=np.full_like(per_token, np.inf), where=per_token > 0)
        limit = cap.limit(
            kv_tokens=kv_tokens,
            context_tokens=model.max_seq_len,
            accelerator=hardware.accelerator.name,
            memory_bytes=hardware.accelerator.memory_usable_bytes,
        )
        sequences = np.minimum(sequences, limit * dp_attention)
    rank_limit = inference_hardware.serving.decode_batch_limit(hardware.accelerator.architecture)
    if rank_limit is not None:
        # a wide-EP server runs each attention rank's decode batch up to its dispatch buffer
        sequences = np.where(dp_attention > 1, np.minimum(sequences, rank_limit * dp_attention), sequences)
    return MemoryArrays(
        weights_bytes=np.asarray(weights, dtype=np.float64),
        workspace_bytes=np.asarray(workspace, dtype=np.float64),
        reserved_bytes=np.full_like(np.asarray(weights, dtype=np.float64), reserved),
        kv_capacity_bytes=np.asarray(capacity, dtype=np.float64),
        kv_bytes_per_token=np.asarray(kv_per_sequence / tokens_per_sequence, dtype=np.float64),
        kv_bytes_per_sequence=np.asarray(per_sequence, dtype=np.float64),
        state_bytes_per_sequence=np.asarray(state, dtype=np.float64),
        max_sequences=np.asarray(sequences, dtype=np.float64),
        usable_bytes=usable,
        kv_sequences=np.asarray(kv_sequences, dtype=np.float64),
        kv_share_raised=np.asarray(raised),
    )


class Degrees(Protocol):
    """Anything with the parallel degrees as (arrays of) numbers: plans as columns."""

    @property
    def tp(self) -> Array: ...

    @property
    def pp(self) -> Array: ...

    @property
    def ep(self) -> Array: ...

    @property
    def dp_attention(self) -> Array: ...


def memory_of(
    model: TransformerSpec,
    inference_hardware: InferenceHardware,
    degrees: Degrees,
    load: ServingLoad,
    physical_experts: Array = 0.0,
) -> MemoryArrays:
    """:func:`inference_memory` of deployments ``degrees`` serving requests of ``load``."""
    return inference_memory(
        model,
        layer_shapes(model),
        inference_hardware,
        tp=degrees.tp,
        pp=degrees.pp,
        ep=degrees.ep,
        dp_attention=degrees.dp_attention,
        tokens_per_sequence=float(load.input_tokens + load.output_tokens),
        physical_experts=physical_experts,
    )


def smallest_fitting(
    model: TransformerSpec, inference_hardware: InferenceHardware, plan: InferencePlan, load: ServingLoad
) -> dict[str, int | bool] | None:
    """The fewest GPUs per replica (TP inside the scale-up domain, then PP) whose memory holds
    the model and one request, as plan settings (``tp``, ``pp``, ``ep``, ``kv_replication``);
    ``None`` if no split of the cluster fits."""
    domain = inference_hardware.hardware.domain_size
    gpus = inference_hardware.hardware.num_gpus
    heads = model.attention.num_heads
    kv_heads = model.attention.num_kv_heads
    candidates = []
    for tp, pp in itertools.product(powers_of_two(domain), powers_of_two(min(gpus, model.num_layers))):
        if (
            heads % tp
            or tp * pp > gpus
            or (model.attention.kind != "mla" and kv_heads % tp and tp % kv_heads)
        ):
            continue
        ep = max(e for e in powers_of_two(tp) if model.moe is None or model.moe.num_routed_experts % e == 0)
        candidates.append((tp * pp, pp, tp, ep if model.moe is not None else 1))
    if not candidates:
        return None
    candidates.sort()
    tokens = float(load.input_tokens + load.output_tokens)
    columns = np.asarray([[c[2], c[1], c[3]] for c in candidates], dtype=np.float64)
    memory = inference_memory(
        model,
        layer_shapes(model),
        inference_hardware,
        tp=columns[:, 0],
        pp=columns[:, 1],
        ep=columns[:, 2],
        dp_attention=np.ones(len(candidates)),
        tokens_per_sequence=tokens,
    )
    for index, (_, pp, tp, ep) in enumerate(candidates):
        if memory.max_sequences[index] >= 1:
            settings: dict[str, int | bool] = {"tp": tp, "pp": pp}
            if ep > 1:
                settings["ep"] = ep
            if model.attention.kind != "mla" and tp > kv_heads:
                settings["kv_replication"] = True
            return settings
    return None


__all__ = ["Degrees", "MemoryArrays", "inference_memory", "memory_of", "stage_weight_bytes"]
