"""The last pipeline stage's memory (LM head, logits and loss, MTP modules), counted by hand.

With pipeline stages the first one holds the most micro-batches, but the last one holds the
loss over the whole vocabulary; the peak is the larger of the two.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from lightspeed.catalog import Catalog
from lightspeed.sol import TrainingPlan, estimate_training
from lightspeed.sol.core.hardware import hardware_for
from lightspeed.sol.core.shapes import layer_shapes
from lightspeed.sol.train.grid import grid_from_plans
from lightspeed.sol.train.memory import last_stage_params, training_memory
from lightspeed.sol.train.schedules import last_stage_in_flight, loss_microbatches
from lightspeed.workload import ModelRegistry

GIB = 2**30

# Gemma 3 12B (config.json): h 3840, 48 layers, 16 heads of 256, 8 KV heads, GeGLU 15,360,
# vocabulary 262,208, tied embeddings. Micro-batch 2 x 8,192 tokens, TP 1, BF16, flash attention.
TOKENS = 2 * 8192
H, FFN, VOCAB = 3840, 15360, 262_208
CHECKPOINT = TOKENS * H * 2  # a fully recomputed layer keeps its input: 125,829,120 bytes
WORKING_SET = (
    2 * TOKENS * H * 2  # the layer input and the residual after attention
    + 2 * TOKENS * H * 2  # the two norms' outputs
    + TOKENS * 16 * 256 * 2  # attention output
    + TOKENS * 16 * 4  # flash attention's fp32 log-sum-exp
    + TOKENS * (16 + 8 + 8) * 256 * 2  # Q, K, V
    + TOKENS * 2 * FFN * 2  # gate and up projections
    + TOKENS * FFN * 2  # the activation's output (down's input)
    - CHECKPOINT  # already a checkpoint
)
LOGITS = 6 * TOKENS * VOCAB  # Megatron's vocab-parallel cross-entropy: 6 bytes a logit
# one layer: Q 3840x4096, K and V 3840x2048, O 4096x3840, GeGLU 3 x 3840 x 15360, 4 RMSNorms of
# 3840 and the Q/K norms of 256; the last stage's 24 layers and its own copy of the head
LAYER = 3840 * 4096 * 2 + 3840 * 2048 * 2 + 3 * 3840 * 15360 + 4 * 3840 + 2 * 256
LAST_STAGE_PARAMS = 24 * LAYER + VOCAB * H


def _gemma(catalog: Catalog, models: ModelRegistry, pp: int):  # type: ignore[no-untyped-def]
    plan = TrainingPlan(
        tp=1,
        pp=pp,
        dp=8 // pp,
        micro_batch_size=2,
        global_batch_size=64,
        seq_len=8192,
        recompute="full",
        zero_stage=1,
    )
    cluster = catalog.cluster("dgx-h100", num_accelerators=8)
    return estimate_training(model=models.get("gemma-3-12b"), cluster=cluster, plan=plan)


def test_gemma_3_12b_on_two_stages_peaks_on_the_last_and_does_not_fit(
    catalog: Catalog, models: ModelRegistry
) -> None:
    """1F1B on 2 stages: the first holds 2 micro-batches x 24 checkpoints (7.76 GiB with the
    working set), the last 1 x 24 + the working set + 24.0 GiB of logits = 28.95 GiB; both hold
    24 layers and an embedding-sized matrix (the head: tied embeddings are not shared across
    stages). 2 + 4 + 12/4 = 9 bytes a parameter under ZeRO-1 over DP 4 with fp32 main grads."""
    estimate = _gemma(catalog, models, 2)
    assert WORKING_SET == 2_291_138_560
    activations = 24 * CHECKPOINT + WORKING_SET + LOGITS
    assert activations / GIB == pytest.approx(28.95, abs=0.01)
    assert estimate.memory_bytes["activations"] == pytest.approx(activations, rel=1e-6)
    state = sum(estimate.memory_bytes[part] for part in ("weights", "gradients", "optimizer"))
    # rel 1e-4: the workload counts two norms a layer, not Gemma 3's four (7,680 weights a layer)
    assert state == pytest.approx(9 * LAST_STAGE_PARAMS, rel=1e-4)
    total = state + activations + estimate.memory_bytes["reserved"]
    assert total / GIB == pytest.approx(86.87, abs=0.02)  # over the 79.65 GiB an H100 reports
    assert not estimate.fits


def test_the_first_stage_holds_the_peak_when_its_micro_batches_outweigh_the_logits(
    catalog: Catalog, models: ModelRegistry
) -> None:
    """Llama 3 8B (vocabulary 128,256) on 8 stages, 4,096-token micro-batches, no recompute: the
    first stage keeps 8 micro-batches of 4 layers, far above one micro-batch's 3.1 GB of logits."""
    model = models.get("llama-3-8b")
    hardware = hardware_for(catalog.cluster("dgx-h100", num_nodes=1), "bf16")
    plan = TrainingPlan(pp=8, global_batch_size=16, seq_len=4096, recompute="none").resolved(hardware.stack)
    memory = training_memory(grid_from_plans([plan]), model, layer_shapes(model), hardware, 4096)
    assert not bool(memory.peak_on_last_stage[0])
    gemma_like = plan.with_changes(pp=2, global_batch_size=4, recompute="full")
    memory = training_memory(grid_from_plans([gemma_like]), model, layer_shapes(model), hardware, 4096)
    assert bool(memory.peak_on_last_stage[0])


def test_micro_batches_the_last_stage_holds_per_schedule() -> None:
    """p = 4 stages, m = 8 micro-batches. Megatron's interleaved schedule
    (forward_backward_pipelining_with_interleaving) warms the last rank up with
    ``(p - 1 - rank) * 2 + (v - 1) * p = 4`` chunks of half a stage at v = 2, then one more
    forward before its first backward: 5 halves = 2.5 stages' worth, one micro-batch of logits.
    1F1B and ZB1P run each of the last stage's forwards into its backward: 1. GPipe: all 8.
    DualPipe's end GPU is also the first stage: p + 1 = 5."""
    base = TrainingPlan(pp=4, global_batch_size=8, seq_len=4096)
    plans = [
        base,
        base.with_changes(schedule="zb1p"),
        base.with_changes(schedule="gpipe"),
        base.with_changes(schedule="interleaved", vpp=2),
        base.with_changes(schedule="dualpipev"),
        base.with_changes(pp=1, global_batch_size=8),
    ]
    grid = grid_from_plans(plans)
    assert list(last_stage_in_flight(grid)) == [1.0, 1.0, 8.0, 2.5, 5.0, 1.0]
    assert list(loss_microbatches(grid)) == [1.0, 1.0, 8.0, 1.0, 1.0, 1.0]


def test_dualpipev_end_gpu_holds_the_embedding_and_the_head(catalog: Catalog, models: ModelRegistry) -> None:
    """DualPipeV folds the pipeline into a V: GPU 0 runs the first chunk and the last, so it holds
    the embedding (128,256 x 4,096 for Llama 3 8B) and the head (the same shape, untied)."""
    model = models.get("llama-3-8b")
    plan = TrainingPlan(pp=4, global_batch_size=8, seq_len=4096, schedule="dualpipev")
    params = last_stage_params(grid_from_plans([plan]), model, layer_shapes(model))
    assert float(params.ends[0]) == 2 * 128_256 * 4096
    assert float(params.layers_per_stage[0]) == 8  # 32 layers / 4 GPUs, as two chunks of 4


def test_the_last_stage_holds_its_own_layers_and_the_mtp_modules(models: ModelRegistry) -> None:
    """DeepSeek-V3 on 16 stages (Megatron-Bridge's layout: 1 layer + MTP + loss on the last): the
    last stage holds 1 MoE layer + the MTP block (a MoE block like the last), the head
    (129,280 x 7,168), the MTP's 2h -> h projection (14,336 x 7,168) and its embedding of the next
    tokens (Megatron-Core builds one where ``mtp_process``)."""
    model = models.get("deepseek-v3")
    plan = TrainingPlan(pp=16, ep=8, global_batch_size=64, seq_len=4096)
    grid = grid_from_plans([plan])
    params = last_stage_params(grid, model, layer_shapes(model), np.asarray([1.0]))
    assert float(params.layers_per_stage[0]) == 2
    assert float(params.moe_layers_per_stage[0]) == 2
    assert float(params.mtp_blocks[0]) == 1
    assert float(params.ends[0]) == 2 * 129_280 * 7168 + 14_336 * 7168


def test_meta_405b_plan_still_fits_with_its_uneven_last_stage(
    catalog: Catalog, models: ModelRegistry
) -> None:
    """Llama 3 405B as Meta trained it (paper, section 3.3.2): TP 8, PP 16, interleaved with 6
    chunks, 126 layers with one off the first and last stages, micro-batch 1 of 8,192 tokens,
    sharded optimizer state. The first stage (8 layers, 16 micro-batches in flight) holds more
    than the last (7 layers, 13.5 stages' worth: 16 - 15/6, and 0.73 GiB of logits)."""
    plan = TrainingPlan(
        tp=8,
        pp=16,
        vpp=6,
        dp=128,
        schedule="interleaved",
        micro_batch_size=1,
        global_batch_size=2048,
        seq_len=8192,
        uneven_pipeline=True,
        zero_stage=1,
        recompute="selective",
    )
    cluster = catalog.cluster("dgx-h100", num_accelerators=16_384)
    estimate = estimate_training(model=models.get("llama-3-405b"), cluster=cluster, plan=plan)
    assert estimate.fits
    assert "7 of the 126 layers" in " | ".join(estimate.assumptions)


def test_plan_train_says_when_the_last_stage_holds_the_memory_peak(run_cli) -> None:  # type: ignore[no-untyped-def]
    """Llama 3 8B at pp=2, full recompute, micro-batch 1: the first stage keeps 2 x 16 checkpoints
    of 8,192 x 4,096 x 2 B (2.1 GB) and the last stage 1 x 16 of them beside 6 B x 8,192 x 128,256
    logits (6.3 GB): the last stage is the peak, and the estimate says so."""
    result = run_cli(
        "plan", "train", "--model", "llama-3-8b", "--system", "dgx-h100", "--gpus", "8", "--seq", "8192",
        "--global-batch", "64", "--pp", "2", "--tp", "1", "--micro-batch", "1", "--recompute", "full",
        "--zero", "1", "--json",
    )  # fmt: skip
    assert result.code == 0, result.err
    assert any("memory peaks on the last stage" in note for note in json.loads(result.out)["assumptions"])
