"""The training engine against training steps measured on an H200 lent to this project
(benchmarks/measured_training.py over benchmarks/data/h200-training/, made by
benchmarks/gpu_train_step.py; never fitted on)."""

from __future__ import annotations

from types import ModuleType

import pytest

from scripts import load_script


@pytest.fixture(scope="module")
def result() -> dict:  # type: ignore[type-arg]
    module: ModuleType = load_script("benchmarks/measured_training.py")
    return module.check()


def test_the_four_runs_are_predicted_within_15_percent(result: dict) -> None:  # type: ignore[type-arg]
    # measured medians: 1B 326 ms eager, 277 ms compiled; 3B 409 ms eager, 350 ms compiled
    rows = {(row["model"], row["compile"]): row for row in result["rows"]}
    assert rows[("llama-3.2-1b", False)]["measured_step_s"] == pytest.approx(0.326, abs=0.001)
    assert rows[("llama-3.2-3b", True)]["measured_step_s"] == pytest.approx(0.350, abs=0.001)
    assert len(rows) == 4
    for row in rows.values():
        assert abs(row["time_error"]) <= 0.15, row
    assert result["median_abs_error"] <= 0.08


def test_the_compiled_profile_is_faster_as_measured(result: dict) -> None:  # type: ignore[type-arg]
    """Compiling each block saved 15% (1B) and 15% (3B) of the step on the H200; the engine's
    compiled profile (Inductor-fused elementwise kernels) must be faster too, by less than twice
    that."""
    rows = {(row["model"], row["compile"]): row for row in result["rows"]}
    for model in ("llama-3.2-1b", "llama-3.2-3b"):
        eager, compiled = rows[(model, False)], rows[(model, True)]
        measured_saving = 1.0 - compiled["measured_step_s"] / eager["measured_step_s"]
        engine_saving = 1.0 - compiled["engine_step_s"] / eager["engine_step_s"]
        assert 0.14 <= measured_saving <= 0.16
        assert 0.0 < engine_saving < 2.0 * measured_saving


@pytest.mark.torch
def test_the_measured_model_has_the_registrys_shapes() -> None:
    """gpu_train_step.py builds Llama 3.2 1B from the registry: one layer of it holds
    2048 x (32 + 2 x 8) x 64 (QKV) + 32 x 64 x 2048 (O) + 3 x 2048 x 8192 (SwiGLU) = 60,817,408
    weights, the tied embedding 128,256 x 2048 = 262,668,288, and three RMSNorm scales of 2,048;
    its FLOPs per token at 4,096 tokens are 6 x (16 layers + the head) + 6 x 16 x 4096 x 2048."""
    torch = pytest.importorskip("torch")
    script = load_script("benchmarks/gpu_train_step.py")
    from lightspeed.workload import load_models

    spec = load_models().get("llama-3.2-1b")
    with torch.device("meta"):
        model = script.Model(spec, layers=1, seq=64)
    assert sum(p.numel() for p in model.parameters()) == 60_817_408 + 262_668_288 + 3 * 2048
    flop = script.model_flop_per_token(spec, layers=16, seq=4096)
    assert flop == 6 * (16 * 60_817_408 + 262_668_288) + 6 * 16 * 4096 * 2048
