"""The serving stack's host work per sequence (TensorRT-LLM's PyTorch executor): hidden behind the
GPU step by the overlap scheduler, it bounds a step only when the GPU work is shorter."""

from __future__ import annotations

import dataclasses

import pytest

from lightspeed.catalog import Catalog
from lightspeed.sol import InferencePlan, ServingLoad, estimate_inference, load_serving_stack
from lightspeed.sol.core.serving_choice import serving_stack_for
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


@pytest.mark.parametrize(
    ("text", "version", "profile"),
    [
        ("TensorRT-LLM release/0.5.0", (0, 5), "trtllm-2023"),
        ("TensorRT-LLM v0.7a", (0, 7), "trtllm-2023-xqa"),
        ("TensorRT-LLM v0.8.0", (0, 8), "trtllm-2024"),
        ("TensorRT-LLM perf-overview, version 0.17", (0, 17), "trtllm-2024"),
        ("TensorRT-LLM 0.21", (0, 21), "trtllm-2024"),
    ],
)
def test_a_release_before_1_0_takes_the_tensorrt_engine_profile(
    text: str, version: tuple[int, int], profile: str
) -> None:
    # the year given (2025) would pick the PyTorch-backend profile: the release decides
    assert serving_stack_for(text, 2025, version)[0].name == profile


def test_the_pytorch_backends_host_work_is_not_charged_to_the_cpp_executor(
    models: ModelRegistry, catalog: Catalog
) -> None:
    # TensorRT-LLM 0.8-0.21 ran TensorRT engines under the C++ executor: no per-request Python
    # work, so Qwen3-30B-A3B at 4,096 sequences is the GPU's step there, not the 120 ms the
    # PyTorch backend's host takes (pull request #10273's 29.4 us a sequence)
    engine = load_serving_stack("trtllm-2024")
    assert engine.host_per_sequence_s == 0.0
    assert engine.kernel_efficiency == load_serving_stack("trtllm-2025").kernel_efficiency
    on_engine = estimate_inference(
        model=models.get("qwen3-30b-a3b"),
        cluster=catalog.resolve_cluster("b200", 1),
        plan=InferencePlan(tp=1, precision="nvfp4"),
        load=ServingLoad(128, 128),
        batching="decode",
        serving=engine,
    )
    assert on_engine.batch_per_replica == 4096
    assert on_engine.iteration_s < 0.5 * 4096 * PER_SEQUENCE_S
    hosted = _decode(models, catalog, "qwen3-30b-a3b", PER_SEQUENCE_S)
    assert hosted.iteration_s == pytest.approx(4096 * PER_SEQUENCE_S, rel=1e-9)


def test_a_year_alone_keeps_the_newer_profile() -> None:
    # TensorRT-LLM rows dated 2024 without a release (or with a year guessed from the GPU) keep
    # the profile they took before the engine profile existed
    assert serving_stack_for("TensorRT-LLM, H200", 2024)[0].name == "trtllm-2025"
    assert serving_stack_for("TensorRT-LLM, A100", 2020)[0].name == "trtllm-2023"
