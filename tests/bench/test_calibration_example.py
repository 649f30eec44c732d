"""The calibration example describes the same model twice; the two must agree."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from lightspeed.workload import parameter_counts

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.torch, pytest.mark.slow]
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture
def example():  # type: ignore[no-untyped-def]
    sys.path.insert(0, str(EXAMPLES))
    try:
        import calibrate_cpu_step

        yield calibrate_cpu_step
    finally:
        sys.path.remove(str(EXAMPLES))


def test_spec_and_torch_model_have_the_same_parameters(example) -> None:  # type: ignore[no-untyped-def]
    for config in (example.QUICK, example.FULL):
        model = example.Gpt(config)
        torch_params = sum(parameter.numel() for parameter in model.parameters())
        assert parameter_counts(example.spec_of(config)).total_params == torch_params


def test_one_tiny_training_step_runs(example) -> None:  # type: ignore[no-untyped-def]
    config = example.Config(num_layers=1, hidden=32, num_heads=2, ffn=64, vocab=64, seq_len=16, batch=2)
    (step_s,) = example.measure_steps_s(config, 1)
    assert step_s > 0
