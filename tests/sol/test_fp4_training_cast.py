"""A 4-bit training run quantizes as an 8-bit one does: each linear's input forward and its output
gradient backward are cast (row-wise and column-wise copies with their block scales), and NVFP4's
per-tensor scale needs an amax pass first. The engine had charged FP8 runs only, so an NVFP4 run
cast for free (Nemotron 3 Super NVFP4 on GB300: +128% where MXFP8 was +51%)."""

from __future__ import annotations

import pytest

from lightspeed.catalog import Catalog
from lightspeed.sol import TrainingPlan, estimate_training
from lightspeed.sol.core.stacks import load_stack
from lightspeed.workload import ModelRegistry


def test_cast_bytes_per_element_by_hand() -> None:
    stack = load_stack("megatron-core-2025")  # FP8 current scaling
    # NVFP4: amax pass 2 + read 2 + two 4-bit copies with an E4M3 scale per 16 values
    assert stack.cast_bytes("nvfp4") == 2 + 2 + 2 * (0.5 + 1 / 16)
    assert stack.cast_bytes("fp4") == stack.cast_bytes("nvfp4")  # Transformer Engine's FP4 recipe
    # MXFP4: no per-tensor amax; an E8M0 scale per 32 values
    assert stack.cast_bytes("mxfp4") == 2 + 2 * (0.5 + 1 / 32)
    assert stack.cast_bytes("mxfp8") == 2 + 2 * (1 + 1 / 32)
    assert stack.cast_bytes("fp8") == 2 + 2 + 2 * 1  # current scaling: amax, read, two copies


def _memory_bound_s(catalog: Catalog, models: ModelRegistry, precision: str) -> float:
    plan = TrainingPlan(tp=1, dp=8, global_batch_size=64, seq_len=4096, precision=precision, recompute="none")
    estimate = estimate_training(
        model=models.get("llama-3-8b"),
        cluster=catalog.cluster("dgx-b200"),
        plan=plan,
        stack="megatron-core-2025",
    )
    return float(estimate.breakdown_s["memory_bound"])


@pytest.mark.parametrize("precision", ["nvfp4", "mxfp4"])
def test_an_fp4_step_pays_its_casts(catalog: Catalog, models: ModelRegistry, precision: str) -> None:
    # Llama 3 8B by hand: per layer the linears' (in + out) widths are qkv 4096 + 6144, o 4096 +
    # 4096, gate/up 4096 + 28672, down 14336 + 4096 = 69,632; 4,096 tokens a micro-batch, 8
    # micro-batches a GPU (64 / dp 8), 32 layers; half the cast forward, half backward.
    widths = (4096 + 6144) + (4096 + 4096) + (4096 + 28672) + (14336 + 4096)
    assert widths == 69_632
    per_element = load_stack("megatron-core-2025").cast_bytes(precision)
    cast_bytes = 32 * 8 * 4096 * widths * per_element
    b200 = catalog.accelerator("b200")
    bandwidth = b200.memory_bandwidth_bytes_per_s * 0.85  # nvidia-blackwell memory_efficiency
    extra = _memory_bound_s(catalog, models, precision) - _memory_bound_s(catalog, models, "bf16")
    assert extra == pytest.approx(cast_bytes / bandwidth, rel=1e-6)
