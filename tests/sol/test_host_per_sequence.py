"""The serving stack's host work per sequence (TensorRT-LLM's PyTorch executor): hidden behind the
GPU step by the overlap scheduler, it bounds a step only when the GPU work is shorter."""

from __future__ import annotations

import dataclasses

import pytest

from lightspeed.catalog import Catalog
from lightspeed.sol import InferencePlan, ServingLoad, estimate_inference, load_serving_stack
from lightspeed.sol.infer.estimate import InferenceEstimate
from lightspeed.workload import ModelRegistry

# NVIDIA/TensorRT-LLM #10273: 45.11 ms of host time per step for 1,536 sequences per rank
PER_SEQUENCE_S = 45.11e-3 / 1536


def _decode(models: ModelRegistry, catalog: Catalog, model: str, per_sequence_s: float) -> InferenceEstimate:
    """A decode pool's step (every sequence decoding) on one B200 in NVFP4."""
    serving = dataclasses.replace(load_serving_stack("trtllm-2025"), host_per_sequence_s=per_sequence_s)
    return estimate_inference(
        model=models.get(model),
        cluster=catalog.resolve_cluster("b200", 1),
        plan=InferencePlan(tp=1, precision="nvfp4"),
        load=ServingLoad(128, 128),
        batching="decode",
        serving=serving,
    )


def test_the_shipped_figure_is_the_pull_requests() -> None:
    assert load_serving_stack("trtllm-2025").host_per_sequence_s == pytest.approx(PER_SEQUENCE_S, rel=0.01)


def test_a_small_moe_at_a_large_batch_waits_for_the_host(models: ModelRegistry, catalog: Catalog) -> None:
    # Qwen3-30B-A3B (3.3B active) at trtllm-bench's 4,096 sequences: the GPU step is far below the
    # host's 4,096 x 29.4 us = 120 ms, so the step is the host's (CUDA graphs: no kernel issue)
    gpu_only = _decode(models, catalog, "qwen3-30b-a3b", 0.0)
    assert gpu_only.batch_per_replica == 4096
    assert gpu_only.iteration_s < 0.5 * 4096 * PER_SEQUENCE_S
    hosted = _decode(models, catalog, "qwen3-30b-a3b", PER_SEQUENCE_S)
    assert hosted.iteration_s == pytest.approx(4096 * PER_SEQUENCE_S, rel=1e-9)


def test_a_gpu_bound_step_hides_the_host(models: ModelRegistry, catalog: Catalog) -> None:
    # Llama 3 70B's step is longer than the host's work for its batch: the overlap scheduler hides it
    gpu_only = _decode(models, catalog, "llama-3-70b", 0.0)
    assert gpu_only.iteration_s > gpu_only.batch_per_replica * PER_SEQUENCE_S
    hosted = _decode(models, catalog, "llama-3-70b", PER_SEQUENCE_S)
    assert hosted.iteration_s == pytest.approx(gpu_only.iteration_s, rel=1e-12)
