"""Attention variants in the engines: the KV-limited batch, decode KV reads, prefill and training
attention FLOPs, against hand calculations from each model's published config.json."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from grids import iteration_grid
from lightspeed.catalog import Catalog
from lightspeed.sol import (
    InferencePlan,
    ServingLoad,
    default_efficiency,
    estimate_inference,
    load_serving_stack,
)
from lightspeed.sol.core.hardware import hardware_for
from lightspeed.sol.core.shapes import layer_shapes
from lightspeed.sol.infer.inference_hardware import inference_hardware_for, load_inference_parameters
from lightspeed.sol.infer.iteration import IterationGrid, iteration_cost
from lightspeed.sol.train.grid import grid_from_plans
from lightspeed.sol.train.layer_cost import FLASH_BACKWARD_FACTOR, layer_cost
from lightspeed.sol.train.plan import TrainingPlan
from lightspeed.workload import ModelRegistry, TransformerSpec

GIB = 2**30
H100_BANDWIDTH = 3.35e12  # B/s, H100 SXM datasheet


def _without_windows(model: TransformerSpec) -> TransformerSpec:
    attention = dataclasses.replace(
        model.attention, sliding_window=None, attention_chunk_size=None, full_attention_interval=None
    )
    return dataclasses.replace(model, attention=attention)


def test_gemma3_27b_on_one_h100_at_32k(models: ModelRegistry, catalog: Catalog) -> None:
    """issue 28: 62 layers (10 global, 52 with a 1,024-token window), 16 KV heads of 128, bf16 KV."""
    gemma = models.get("gemma-3-27b")
    load = ServingLoad(input_tokens=32768, output_tokens=1)
    cluster = catalog.resolve_cluster("h100-sxm")
    estimate = estimate_inference(model=gemma, cluster=cluster, plan=InferencePlan(), load=load)
    per_token_per_layer = 2 * 16 * 128 * 2  # bytes
    request_tokens = 32768 + 1
    per_request = (10 * request_tokens + 52 * 1024) * per_token_per_layer
    assert estimate.memory_bytes["kv_cache_per_request"] == per_request
    assert per_request / GIB == pytest.approx(2.9, abs=0.01)
    capacity = estimate.memory_bytes["kv_capacity"]
    assert estimate.max_batch == math.floor(capacity / per_request) == 7
    # Sized as if every layer were global, a request takes 15.5 GiB and one fits (the old answer).
    full = _without_windows(gemma)
    old = estimate_inference(model=full, cluster=cluster, plan=InferencePlan(), load=load)
    assert old.memory_bytes["kv_cache_per_request"] == 62 * request_tokens * per_token_per_layer
    assert old.max_batch == math.floor(capacity / (62 * request_tokens * per_token_per_layer)) == 1


def _grid(**work: float) -> IterationGrid:
    return iteration_grid(ep=1.0, **work)


def _parts(model: TransformerSpec, catalog: Catalog, plan: InferencePlan, **work: float) -> dict[str, float]:
    inference_hardware = inference_hardware_for(catalog.resolve_cluster("h100-sxm"), plan)
    cost = iteration_cost(_grid(**work), model, inference_hardware)
    return {name: float(value[0]) for name, value in cost.parts.items()}


def _stream_bytes_per_s() -> float:
    return H100_BANDWIDTH * load_inference_parameters().stream_memory_efficiency


def test_decode_reads_each_layers_window(models: ModelRegistry, catalog: Catalog) -> None:
    """gpt-oss-20b: 24 layers alternating a 128-token window and full attention, 8 KV heads of 64."""
    oss = models.get("gpt-oss-20b")
    per_token_per_layer = 2 * 8 * 64 * 1  # fp8 cache
    sequences, context = 16.0, 6000.0
    parts = _parts(
        oss, catalog, InferencePlan(precision="fp8"), decode_sequences=sequences, decode_context=context
    )
    read = sequences * (12 * context + 12 * 128) * per_token_per_layer
    written = sequences * 24 * per_token_per_layer
    assert parts["kv_cache"] == pytest.approx((read + written) / _stream_bytes_per_s(), rel=1e-6)


def test_decode_of_a_chunked_layer_reads_the_current_chunk(models: ModelRegistry, catalog: Catalog) -> None:
    """Llama 4 Scout: 36 of 48 layers attend within 8,192-token chunks; at 20,000 tokens the
    current chunk holds 20,000 - 2 x 8,192 = 3,616."""
    scout = models.get("llama-4-scout")
    per_token_per_layer = 2 * 8 * 128 * 1
    plan = InferencePlan(tp=8, ep=8, precision="fp8")
    inference_hardware = inference_hardware_for(catalog.cluster("dgx-h100"), plan)
    grid = dataclasses.replace(
        _grid(decode_sequences=64.0, decode_context=20000.0), tp=np.asarray([8.0]), ep=np.asarray([8.0])
    )
    parts = iteration_cost(grid, scout, inference_hardware).parts
    read = 64 * (12 * 20000 + 36 * 3616) * per_token_per_layer / 8  # one KV head per GPU at TP 8
    written = 64 * 48 * per_token_per_layer / 8
    assert float(parts["kv_cache"][0]) == pytest.approx((read + written) / _stream_bytes_per_s(), rel=1e-6)


def test_decode_span_averages_the_chunk_position(models: ModelRegistry, catalog: Catalog) -> None:
    # Contexts spread over 16,384 +- 4,096: a chunked layer holds 8,192 - 4,096 .. 8,192 before the
    # boundary and 0 .. 4,096 after it: 2,048 on average; a full layer 16,384.
    scout = models.get("llama-4-scout")
    plan = InferencePlan(tp=8, ep=8, precision="fp8")
    inference_hardware = inference_hardware_for(catalog.cluster("dgx-h100"), plan)
    grid = dataclasses.replace(
        _grid(decode_sequences=64.0, decode_context=16384.0, decode_context_span=8192.0),
        tp=np.asarray([8.0]),
        ep=np.asarray([8.0]),
    )
    kv = float(iteration_cost(grid, scout, inference_hardware).parts["kv_cache"][0])
    per_token_per_layer = 2 * 8 * 128 * 1 / 8
    read = 64 * (12 * 16384 + 36 * 4096) * per_token_per_layer
    written = 64 * 48 * per_token_per_layer
    assert kv == pytest.approx((read + written) / _stream_bytes_per_s(), rel=1e-6)


def test_prefill_attention_flops_stop_at_the_window(models: ModelRegistry, catalog: Catalog) -> None:
    """Mistral 7B v0.1: a 32,768-token prompt, window 4,096 on all 32 layers, 32 heads of 128.
    A causal query attends W - W²/2s = 3,840 keys on average."""
    mistral = models.get("mistral-7b-v0.1")
    parts = _parts(
        mistral,
        catalog,
        InferencePlan(),
        prefill_tokens=32768.0,
        prefill_context=16384.0,
        prefill_requests=1.0,
    )
    attended = 4096 - 4096**2 / (2 * 32768)
    flop = 32 * 2 * 32768 * attended * 32 * (128 + 128)
    hopper = default_efficiency("nvidia-hopper")
    rate = (
        989.5e12
        * load_serving_stack().kernel_efficiency
        * hopper.attention_efficiency("flash", backward=False, seq_len=2 * attended)
    )
    assert parts["attention_compute"] == pytest.approx(flop / rate, rel=0.002)


def test_training_attention_flops_follow_the_window(models: ModelRegistry, catalog: Catalog) -> None:
    windowed = models.get("mistral-7b-v0.1")
    full = _without_windows(windowed)
    plan = TrainingPlan(seq_len=32768, global_batch_size=1)
    grid = grid_from_plans([plan])
    hardware = hardware_for(catalog.resolve_cluster("h100-sxm"), "bf16")

    def flop(model: TransformerSpec) -> float:
        cost = layer_cost(
            grid, model, layer_shapes(model), hardware, seq_len=32768, moe=False, recompute_fraction=0.0
        )
        return float(cost.hardware_flop[0])

    # Core attention forward per layer: 2 x s x attended x heads x (d_q + d_v); backward 2.5 x that.
    core = 2 * 32768 * 32 * 256 * (1 + FLASH_BACKWARD_FACTOR)
    assert flop(full) - flop(windowed) == pytest.approx(core * (16384 - 3840), rel=1e-9)
