"""GPU paths: CUDA events, L2 flush, pinned copies, CUDA graphs, NCCL (skipped without CUDA)."""

from __future__ import annotations

import pytest

from lightspeed.bench import (
    CollectiveConfig,
    DeviceSol,
    GemmShape,
    resolve_device,
    run_collectives,
    run_copy,
    run_gemm,
    run_launch,
    run_membw,
)

pytestmark = [pytest.mark.gpu, pytest.mark.torch]
SOL = DeviceSol(device_name="test-gpu", flop_per_s={"bf16": 1e15}, memory_bandwidth_bytes_per_s=3e12)


def test_gpu_gemm_bf16_is_correct() -> None:
    device = resolve_device("cuda")
    shapes = [GemmShape(m=1024, n=1024, k=1024)]
    (result,) = run_gemm(device=device, sol=SOL, dtypes=["bf16"], shapes=shapes, quick=True)
    assert result.correct
    assert result.value > 0


def test_gpu_stream_copy_and_launch() -> None:
    device = resolve_device("cuda")
    assert all(result.correct for result in run_membw(device=device, sol=SOL, array_bytes=2**26, quick=True))
    copies = run_copy(device=device, sol=SOL, sizes=[2**24], quick=True)
    assert {result.name for result in copies} == {"h2d pinned", "h2d pageable", "d2h pinned", "d2h pageable"}
    assert all(result.correct for result in copies)
    launches = run_launch(device=device, sol=SOL, quick=True)
    assert {result.name for result in launches} == {"dispatch", "launch+sync", "graph"}
    assert all(result.correct for result in launches)


def test_nccl_world_when_two_gpus() -> None:
    import torch

    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")
    config = CollectiveConfig(sizes=(2**20,), warmup=2, num_trials=2, budget_bytes=2**24, max_iterations=8)
    results = run_collectives(config=config, sol=SOL, num_processes=2, gpu=True)
    assert all(result.correct for result in results)
