"""What one GPU of an inference stage holds and runs: its share of a linear layer, of the KV
cache and recurrent state per token or sequence, and the layers and kernels of the busiest
pipeline stage (arrays over deployments)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from lightspeed.sol.core.roofline import kernels_per_layer_forward, local_dims
from lightspeed.sol.core.shapes import LayerShapes, Linear
from lightspeed.workload import TransformerSpec

Array = Any


def inference_local_dims(linear: Linear, tp: Array) -> tuple[Array, Array]:
    """(k, n) of a linear on one GPU; an expert's up projection splits like a column, its down like a row."""
    if linear.split == "expert":
        linear = replace(linear, split="column" if linear.name.endswith("up") else "row")
    return local_dims(linear, tp)


def kv_elements_per_token_per_gpu(shapes: LayerShapes, model: TransformerSpec, tp: Array) -> Array:
    """KV-cache values one token adds per layer on one GPU of a ``tp`` group.

    GQA/MHA heads split over TP (a head replicated on ``tp / kv_heads`` GPUs when
    ``tp`` exceeds the KV heads); MLA's latent is not split: every TP rank holds it.
    """
    if model.attention.kind == "mla":
        return np.asarray(shapes.kv_cache_elements_per_token, dtype=np.float64) * np.ones_like(tp)
    return 2.0 * kv_heads_per_gpu(shapes, tp) * shapes.k_head_dim


def kv_bytes_per_token_per_gpu(
    shapes: LayerShapes, model: TransformerSpec, tp: Array, kv_bytes_per_element: float
) -> Array:
    """KV-cache bytes one token adds per layer on one GPU of a ``tp`` group: its KV values
    (:func:`kv_elements_per_token_per_gpu`) and a sparse layer's indexer key, whole on every
    rank as the indexer is."""
    values = kv_elements_per_token_per_gpu(shapes, model, tp) * kv_bytes_per_element
    return values + float(model.attention.index_key_bytes)


def kv_heads_per_gpu(shapes: LayerShapes, tp: Array) -> Array:
    """GQA/MHA KV heads on one GPU of a ``tp`` group: split over TP, one at least (a head is
    replicated on ``tp / kv_heads`` GPUs when ``tp`` exceeds the KV heads)."""
    result: Array = np.maximum(float(shapes.num_kv_heads) / np.asarray(tp, dtype=np.float64), 1.0)
    return result


def recurrent_state_bytes_per_gpu(model: TransformerSpec, tp: Array) -> Array:
    """Bytes of one recurrent block's state one sequence keeps on one GPU of a ``tp`` group (0
    without recurrent blocks): :attr:`~lightspeed.workload.MambaSpec.sequence_state_bytes` (or
    the Gated DeltaNet's) split with the heads and channels."""
    split = np.asarray(tp, dtype=np.float64)
    mixer = model.recurrent
    result: Array = (0.0 if mixer is None else mixer.sequence_state_bytes) / split
    return result


def stage_layers(model: TransformerSpec, pp: Array) -> tuple[Array, Array]:
    """(dense, MoE) layers on the busiest stage: ``ceil(layers / pp)`` in the model's mix."""
    layers = np.ceil(model.num_layers / np.asarray(pp, dtype=np.float64))
    moe_share = model.num_moe_layers / model.num_layers
    return layers * (1.0 - moe_share), layers * moe_share


def stage_kernels(model: TransformerSpec, pp: Array) -> Array:
    """Kernels one iteration of the busiest stage launches."""
    num_dense, num_moe = stage_layers(model, pp)
    dense = kernels_per_layer_forward(model, moe=False)
    return num_dense * dense + num_moe * kernels_per_layer_forward(model, moe=True)


__all__ = [
    "inference_local_dims",
    "kv_bytes_per_token_per_gpu",
    "kv_elements_per_token_per_gpu",
    "kv_heads_per_gpu",
    "recurrent_state_bytes_per_gpu",
    "stage_kernels",
    "stage_layers",
]
