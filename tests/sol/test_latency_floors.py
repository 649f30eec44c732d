"""Latency floors of a serving iteration: kernels, small all-reduces and host time, by hand."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from lightspeed.catalog import Catalog
from lightspeed.sol import InferencePlan, load_serving_stack
from lightspeed.sol.core.hardware import load_latency_floors
from lightspeed.sol.core.serving_stacks import load_serving_stacks
from lightspeed.sol.infer.inference_hardware import inference_hardware_for
from lightspeed.sol.infer.iteration import IterationGrid, iteration_cost, launch_and_host_s
from lightspeed.workload import ModelRegistry, TransformerSpec
from specs import tiny_spec

KERNELS_PER_DENSE_LAYER = 14  # norms, GEMMs, attention, activation, residual adds (sol/core/roofline.py)


def _grid(tp: float = 1.0, sequences: float = 1.0) -> IterationGrid:
    one = np.ones(1)
    zero = np.zeros(1)
    return IterationGrid(
        tp=tp * one,
        pp=one,
        ep=one,
        dp_attention=one,
        decode_sequences=sequences * one,
        query_tokens=one,
        decode_context=1000.0 * one,
        prefill_tokens=zero,
        prefill_context=zero,
        prefill_requests=zero,
        group_prefill_tokens=zero,
    )


def _parts(model: TransformerSpec, catalog: Catalog, tp: int = 1, **stack: object) -> dict[str, float]:
    # the per-sequence host work has its own tests (test_host_per_sequence.py): left out here
    serving = dataclasses.replace(load_serving_stack("trtllm-2025"), **{"host_per_sequence_s": 0.0, **stack})
    hardware = inference_hardware_for(catalog.cluster("dgx-h100"), InferencePlan(tp=tp), serving=serving)
    cost = iteration_cost(_grid(tp), model, hardware)
    return {name: float(value[0]) for name, value in cost.parts.items()}


def test_the_documented_floors() -> None:
    floors = load_latency_floors()
    # runtime.toml: 2.5 us per kernel (Hazy Research 2025), NCCL's LL base latency 6.6 us (tuning.cc)
    assert floors.gpu_kernel_s == pytest.approx(2.5e-6)
    assert floors.collective_base_latency_s == pytest.approx(6.6e-6)
    assert "tuning.cc" in floors.collectives_source
    assert "Hazy" in floors.launch_source


def test_launch_floor_is_kernels_per_layer_times_layers_times_kernel_time(
    models: ModelRegistry, catalog: Catalog
) -> None:
    # Llama 3 8B, CUDA graphs: 14 kernels in each of 32 layers at 2.5 us each = 1.12 ms per step,
    # on top of the weight reads, whatever the batch.
    parts = _parts(models.get("llama-3-8b"), catalog)
    assert parts["launch"] == pytest.approx(KERNELS_PER_DENSE_LAYER * 32 * 2.5e-6)
    assert parts["host"] == 0.0


def test_without_cuda_graphs_the_host_issue_rate_bounds_a_small_step(catalog: Catalog) -> None:
    # A tiny model: the GPU finishes each kernel before the host issues the next. Hopper's
    # kernel_launch_s (4 us, efficiency.toml) x 4 layers x 14 kernels = 224 us per step.
    graphs = _parts(tiny_spec(hidden_size=256), catalog)
    eager = _parts(tiny_spec(hidden_size=256), catalog, cuda_graphs=False)
    issue = 4 * KERNELS_PER_DENSE_LAYER * 4e-6
    busy = sum(graphs.values()) - graphs["launch"]
    assert busy + 4 * KERNELS_PER_DENSE_LAYER * 2.5e-6 < issue  # the host is the bound
    assert sum(eager.values()) == pytest.approx(issue)
    assert eager["launch"] == pytest.approx(issue - busy)


def test_host_time_is_serial_or_hidden_behind_the_gpu(models: ModelRegistry, catalog: Catalog) -> None:
    model = models.get("llama-3-8b")
    gpu = sum(_parts(model, catalog).values())  # graphs, no host time
    serial = _parts(model, catalog, iteration_overhead_s=1e-3, overlap_scheduler=False)
    assert serial["host"] == pytest.approx(1e-3)
    assert sum(serial.values()) == pytest.approx(gpu + 1e-3)
    # An overlap scheduler runs the host's 1 ms while the GPU computes the ~6.7 ms step: hidden;
    # 20 ms of host work outlasts it by 20 ms - the GPU step.
    hidden = _parts(model, catalog, iteration_overhead_s=1e-3, overlap_scheduler=True)
    assert hidden["host"] == 0.0
    long = _parts(model, catalog, iteration_overhead_s=20e-3, overlap_scheduler=True)
    assert long["host"] == pytest.approx(20e-3 - gpu)


def test_launch_and_host_worked_example(catalog: Catalog) -> None:
    # The docstring's example: 100 kernels, 1 ms of GPU work, no graphs at 4 us per launch.
    serving = dataclasses.replace(load_serving_stack("trtllm-2025"), cuda_graphs=False)
    hardware = inference_hardware_for(catalog.cluster("dgx-h100"), InferencePlan(), serving=serving)
    launch, host = launch_and_host_s(np.asarray([1e-3]), np.asarray([100.0]), hardware)
    assert float(launch[0]) == pytest.approx(100 * 2.5e-6)
    assert float(host[0]) == 0.0


def test_small_decode_all_reduce_pays_base_and_hop_latency(models: ModelRegistry, catalog: Catalog) -> None:
    # Llama 3 70B at TP 8, one sequence: two all-reduces per layer of 8192 x 2 bytes over NVLink 4.
    # Each on NCCL's LL protocol: 6.6 us + min(ring 14, tree 6) steps x 1 us + 16 KiB on the ring
    # (2 x 7/8 of it) at half of 450 GB/s x 0.8 (LL's flags) = 12.76 us; 80 layers: 2.04 ms, where
    # the bytes alone take 10 us. (The switch's in-network reduction, 80 us before its first
    # byte, and LL128 and Simple, 40.6 and 56 us of latency on 8 GPUs, are slower here.)
    parts = _parts(models.get("llama-3-70b"), catalog, tp=8)
    per_all_reduce = 6.6e-6 + 6 * 1e-6 + 2 * 7 / 8 * 8192 * 2 / (450e9 * 0.8) / 0.5
    assert parts["tp_comm"] == pytest.approx(2 * 80 * per_all_reduce, rel=1e-6)


def test_every_serving_profile_says_how_it_launches() -> None:
    stacks = load_serving_stacks()
    assert (stacks["trtllm-2023"].cuda_graphs, stacks["trtllm-2023"].overlap_scheduler) == (False, False)
    assert (stacks["trtllm-2024"].cuda_graphs, stacks["trtllm-2024"].overlap_scheduler) == (False, False)
    assert (stacks["trtllm-2025"].cuda_graphs, stacks["trtllm-2025"].overlap_scheduler) == (True, True)
    assert (stacks["vllm-2025"].cuda_graphs, stacks["vllm-2025"].overlap_scheduler) == (True, False)
    assert (stacks["sglang-2025"].cuda_graphs, stacks["sglang-2025"].overlap_scheduler) == (True, True)
    assert all(stack.launch_source for stack in stacks.values())
