"""Roofline time of one operation on one GPU, vectorized over plans.

Each operation takes the longer of ``FLOP / (peak x GEMM efficiency)`` and ``bytes / (HBM
bandwidth x memory efficiency)``, combined near the ridge point as the device family says
(:meth:`~lightspeed.sol.core.efficiency.EfficiencyModel.kernel_s`): the training and inference
engines both time their GEMMs and streaming kernels here.
"""

from __future__ import annotations

from typing import Any

from lightspeed.sol.core.hardware import Hardware
from lightspeed.sol.core.shapes import Linear
from lightspeed.units import bytes_per_element
from lightspeed.workload import TransformerSpec

Array = Any

# Kernel launches per transformer layer forward (norms, GEMMs, attention,
# activation, residual adds; MoE adds routing, permutation and expert GEMMs).
KERNELS_PER_DENSE_LAYER_FORWARD = 14.0
KERNELS_PER_MOE_LAYER_FORWARD = 24.0
# A sparse-attention layer's lightning indexer adds its own: three projection GEMMs, the key's
# LayerNorm and RoPE, the FP8 quantization and cache store of the key, the query's quantization,
# the MQA-logits kernel and the top-k (DeepSeek-V3.2-Exp inference/model.py; TensorRT-LLM's
# DeepSeek-V3.2 blog fuses the key's quantization and store into one kernel).
KERNELS_PER_INDEXER_FORWARD = 8.0
# Half a dense layer is its attention block (norm, QKV, RoPE, attention, output, residual, ...),
# the other half its MLP; the MoE block launches what a dense layer's MLP does not. A Mamba-2
# block: norm, in_proj, the causal convolution, the five kernels of the chunked scan
# (mamba_ssm's chunk cumsum, chunk state, state passing, BMM and chunk scan), the gated norm,
# out_proj and the residual add.
KERNELS_PER_ATTENTION_BLOCK_FORWARD = KERNELS_PER_DENSE_LAYER_FORWARD / 2.0
KERNELS_PER_MAMBA_BLOCK_FORWARD = 11.0
# A Gated DeltaNet block: norm, in_proj, the causal convolution, the L2 norms of q and k, the
# decay and write-strength gates, the six kernels of FLA's chunk_gated_delta_rule (chunk-local
# cumsum, K·Kᵀ, the triangular solve, W and U, the chunk states, the output), the gated norm,
# out_proj and the residual add.
KERNELS_PER_GDN_BLOCK_FORWARD = 15.0


def kernels_per_layer_forward(model: TransformerSpec, *, moe: bool) -> float:
    """Kernels one layer of ``model`` launches in a forward pass (its indexer's included; a
    hybrid's average layer: its share of each kind of block)."""
    base = KERNELS_PER_MOE_LAYER_FORWARD if moe else KERNELS_PER_DENSE_LAYER_FORWARD
    if model.is_hybrid:
        attention, recurrent, mlp = model.block_shares
        half = KERNELS_PER_ATTENTION_BLOCK_FORWARD
        ffn = base - half if moe else mlp * half
        mixer = KERNELS_PER_GDN_BLOCK_FORWARD if model.gated_delta_net else KERNELS_PER_MAMBA_BLOCK_FORWARD
        base = attention * half + recurrent * mixer + ffn
    return base + (KERNELS_PER_INDEXER_FORWARD if model.attention.index_n_heads is not None else 0.0)


def gemm_s(hardware: Hardware, m: Array, n: Array, k: Array, compute_row: str | None = None) -> Array:
    """Roofline time of an ``(m x k) @ (k x n)`` GEMM on ``compute_row`` (default: the run's precision)."""
    row = compute_row or hardware.compute_row
    flop = 2.0 * m * n * k
    compute = flop / hardware.gemm_flop_per_s(m, n, k, row)
    inputs = min(bytes_per_element(row), hardware.activation_bytes_per_element)
    traffic = (m * k + k * n) * inputs + m * n * hardware.activation_bytes_per_element
    memory = traffic / (hardware.memory_bandwidth_bytes_per_s * hardware.efficiency.memory_efficiency)
    return hardware.efficiency.kernel_s(compute, memory)


def memory_s(hardware: Hardware, num_bytes: Array) -> Array:
    """Time of a streaming (memory-bound) kernel moving ``num_bytes``."""
    return num_bytes / (hardware.memory_bandwidth_bytes_per_s * hardware.efficiency.memory_efficiency)


def local_dims(linear: Linear, tp: Array) -> tuple[Array, Array]:
    """(k, n) of a linear on one GPU."""
    if linear.split == "column":
        return float(linear.in_features), linear.out_features / tp
    if linear.split == "row":
        return linear.in_features / tp, float(linear.out_features)
    return float(linear.in_features), float(linear.out_features)


def linears_cost(
    hardware: Hardware,
    linears: tuple[Linear, ...],
    m: Array,
    tp: Array,
    copies: Array = 1.0,
    *,
    compute_row: str | None = None,
) -> tuple[Array, Array, Array, Array]:
    """(forward s, input-grad s, weight-grad s, forward FLOP) of linears on ``m`` tokens."""
    forward = input_grad = weight_grad = flop = 0.0
    for linear in linears:
        k, n = local_dims(linear, tp)
        forward = forward + copies * gemm_s(hardware, m, n, k, compute_row)
        input_grad = input_grad + copies * gemm_s(hardware, m, k, n, compute_row)
        weight_grad = weight_grad + copies * gemm_s(hardware, k, n, m, compute_row)
        flop = flop + copies * 2.0 * m * n * k
    return forward, input_grad, weight_grad, flop


def linear_io_elements(linears: tuple[Linear, ...], m: Array, tp: Array, copies: Array = 1.0) -> Array:
    """Input plus output elements of ``linears`` on ``m`` tokens: what an FP8 recipe casts
    (the input forward, the output gradient backward)."""
    total: Array = 0.0
    for linear in linears:
        k, n = local_dims(linear, tp)
        total = total + copies * m * (k + n)
    return total
