"""Where the layers sit on a pipeline (issue 28, engine physics): an uneven split gives the last
stage fewer layers, as the published runs' own splits do, so the LM head, the loss and any MTP
modules stop landing on top of a full stage; multi-token-prediction modules are trained and costed."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from lightspeed.catalog import Catalog
from lightspeed.sol import TrainingPlan, estimate_training
from lightspeed.sol.train.step import pipeline_split
from lightspeed.workload import ModelRegistry


def _split(pp: int, layers: int, ends_in_layers: float) -> tuple[int, int]:
    split = pipeline_split(np.asarray([float(pp)]), layers, np.asarray([1.0]), np.asarray([ends_in_layers]))
    return int(split.last[0]), int(split.other[0])


def test_llama_3_405b_on_pp16_takes_one_layer_off_the_last_stage() -> None:
    # Llama 3 paper, section 3.3.2: 126 layers on 16 stages, one layer fewer on the first and last
    # (8 x 16 - 2); the 405B head (16,384 x 128,256 = 2.1B weights) weighs about 0.6 of a layer.
    assert _split(16, 126, 0.6) == (7, 8)


def test_deepseek_v3_on_pp16_matches_megatron_bridges_layout() -> None:
    # Megatron-Bridge recipes/deepseek/h100/deepseek_v3.py, layout (16, 1): embedding + 4 layers,
    # 14 stages of 4, then 1 layer + MTP + loss: the head, loss and MTP weigh about 3 layers.
    assert _split(16, 61, 3.0) == (1, 4)
    # never more layers moved than the shortfall 4 x 16 - 61 = 3, however heavy the ends
    assert _split(16, 61, 10.0) == (1, 4)


def test_an_even_split_stays_even_and_one_stage_holds_all() -> None:
    assert _split(8, 80, 0.6) == (10, 10)  # Megatron's default: uniform, the head on top
    assert _split(8, 80, 5.0) == (10, 10)  # no shortfall, nothing moves
    assert _split(1, 32, 2.0) == (32, 0)


def _estimate(catalog: Catalog, models: ModelRegistry, model: str, plan: TrainingPlan, **changes: int):  # type: ignore[no-untyped-def]
    spec = replace(models.get(model), **changes)
    cluster = catalog.cluster("dgx-h100", num_accelerators=plan.num_gpus)
    return estimate_training(model=spec, cluster=cluster, plan=plan)


def test_the_head_is_off_the_pacing_stage_when_the_split_is_uneven(
    catalog: Catalog, models: ModelRegistry
) -> None:
    uneven = TrainingPlan(tp=8, pp=16, dp=1, global_batch_size=64, seq_len=8192, uneven_pipeline=True)
    big, bigger = (
        _estimate(catalog, models, "llama-3-405b", uneven, vocab_size=vocab) for vocab in (128256, 160000)
    )
    # 8 layers pace the step (the last stage has 7 + a head of 0.6-0.75 of a layer): a larger
    # vocabulary changes no time of the pacing stage
    assert big.breakdown_s["compute"] == pytest.approx(bigger.breakdown_s["compute"], rel=1e-9)
    notes = " | ".join(big.assumptions)
    assert "7 of the 126 layers" in notes
    assert "a stage of 8 layers paces" in notes
    even = TrainingPlan(tp=8, pp=8, dp=1, global_batch_size=64, seq_len=8192)
    big, small = (
        _estimate(catalog, models, "llama-3-70b", even, vocab_size=vocab) for vocab in (128256, 32000)
    )
    # 80 layers on 8 stages: 10 + the head on the last stage, so a 4x smaller head is faster
    assert big.breakdown_s["compute"] > small.breakdown_s["compute"] * 1.01
    notes = " | ".join(big.assumptions)
    assert "10 of the 80 layers" in notes
    assert "the last paces" in notes


def _hardware_flop(estimate) -> float:  # type: ignore[no-untyped-def]
    return estimate.hfu * estimate.step_time_s * estimate.num_gpus * estimate.peak_flop_per_s


def test_an_mtp_module_costs_a_block_a_projection_and_the_head_again(
    catalog: Catalog, models: ModelRegistry
) -> None:
    plan = TrainingPlan(tp=1, pp=1, dp=8, global_batch_size=8, seq_len=4096, recompute="none")
    plain = _estimate(catalog, models, "llama-3-8b", plan)
    deeper = _estimate(catalog, models, "llama-3-8b", plan, num_layers=33)
    mtp = _estimate(catalog, models, "llama-3-8b", plan, num_mtp_modules=1)
    h, vocab = 4096, 128256
    tokens = 8 * 4096
    block = _hardware_flop(deeper) - _hardware_flop(plain)
    # forward + backward (x3) of 2 FLOP per weight: the 2h -> h projection and the 4096 x 128,256 head
    by_hand = block + 3 * 2 * tokens * (2 * h * h + h * vocab)
    assert _hardware_flop(mtp) - _hardware_flop(plain) == pytest.approx(by_hand, rel=1e-6)
    assert mtp.step_time_s > plain.step_time_s
    assert mtp.mfu < plain.mfu  # model FLOPs (6N + attention) do not count the MTP module
    assert any("1 multi-token-prediction module trained" in note for note in mtp.assumptions)


def test_without_a_pipeline_every_gpu_keeps_the_mtp_module(catalog: Catalog, models: ModelRegistry) -> None:
    # Llama 3 8B's block by hand: q and o 4096 x 4096, k and v 4096 x 1024, SwiGLU 3 x 4096 x 14336,
    # two norms of 4096: 218,112,000 weights; the 2h -> h projection 2 x 4096 x 4096 = 33,554,432;
    # 16-bit weights kept whole under ZeRO-1 at TP1 (the head is shared, not copied)
    plan = TrainingPlan(tp=1, pp=1, dp=8, global_batch_size=8, seq_len=4096, recompute="none")
    plain = _estimate(catalog, models, "llama-3-8b", plan)
    mtp = _estimate(catalog, models, "llama-3-8b", plan, num_mtp_modules=1)
    extra = mtp.memory_bytes["weights"] - plain.memory_bytes["weights"]
    assert extra == pytest.approx(2 * (218_112_000 + 33_554_432), rel=1e-9)
    assert mtp.memory_bytes["activations"] > plain.memory_bytes["activations"]
