"""The execution-time model is the engine's iteration cost: cached lookups stay within the buckets' width."""

from __future__ import annotations

import numpy as np
import pytest

from lightspeed.catalog import Catalog
from lightspeed.sol.core.serving_stacks import load_serving_stack
from lightspeed.sol.infer.inference_hardware import inference_hardware_for
from lightspeed.sol.infer.iteration import IterationGrid, iteration_cost, launch_and_host_s
from lightspeed.sol.infer.per_gpu import stage_kernels
from lightspeed.sol.infer.plan import InferencePlan
from lightspeed.sol.serve.timing import IterationTimer, bucket, bucket_center
from lightspeed.workload import ModelRegistry


def test_buckets_are_within_half_a_step() -> None:
    for value in (1.0, 3.0, 17.0, 1000.0, 123456.0):
        center = bucket_center(bucket(value, 16), 16)
        assert abs(center / value - 1.0) <= 2 ** (1 / 32) - 1 + 1e-12
    assert bucket(0.5, 16) == 0
    assert bucket_center(0, 16) == 0.0


@pytest.mark.parametrize(
    ("name", "plan"),
    [
        ("llama-3-8b", InferencePlan(tp=1, precision="fp8")),
        ("llama-3-70b", InferencePlan(tp=4, pp=2, precision="fp8")),
        ("mixtral-8x7b", InferencePlan(tp=2, ep=2, precision="bf16")),
    ],
)
def test_lookups_match_the_engine(
    catalog: Catalog, models: ModelRegistry, name: str, plan: InferencePlan
) -> None:
    """Random batch shapes: the cached time is the iteration cost of the exact shape within 3%
    (buckets of 2.2% on context and prompt tokens, 4.4% on the prompts' attended context)."""
    model = models.get(name)
    hardware = inference_hardware_for(catalog.cluster("dgx-h100"), plan)
    timer = IterationTimer(model=model, hardware=hardware, plan=plan, max_sequences=256)
    rng = np.random.default_rng(0)
    errors, shapes = [], []
    for _ in range(120):
        decode = int(rng.integers(0, 256))
        context = float(rng.uniform(10, 8000))
        prompt = float(rng.choice([0.0, rng.uniform(1, 8192)]))
        attended = float(rng.uniform(1, 8000)) if prompt else 0.0
        if not (decode or prompt):
            continue
        one = np.ones(1)
        grid = IterationGrid(
            tp=plan.tp * one,
            pp=plan.pp * one,
            ep=plan.ep * one,
            dp_attention=one,
            decode_sequences=np.ceil(decode / plan.pp) * one,
            query_tokens=one,
            decode_context=context * one,
            prefill_tokens=prompt / plan.pp * one,
            prefill_context=attended * one,
            prefill_requests=(1.0 if prompt else 0.0) * one,
            group_prefill_tokens=prompt / plan.pp * one,
        )
        exact = float(iteration_cost(grid, model, hardware).time_s[0]) * plan.pp
        errors.append(timer.seconds(decode, context, prompt, attended) / exact - 1.0)
        shapes.append((decode, context, prompt, attended))
    assert max(abs(error) for error in errors) < 0.03
    evaluations = timer.evaluations
    for shape in shapes:
        timer.seconds(*shape)
    assert timer.evaluations == evaluations  # the second pass is served from the cache


@pytest.mark.parametrize("serving", ["trtllm-2023", "trtllm-2025", "vllm-2025"])
def test_launch_and_host_time_is_the_engines(catalog: Catalog, models: ModelRegistry, serving: str) -> None:
    """The timer's scalar launch/host time equals the engine's launch_and_host_s for stacks with and
    without CUDA graphs and an overlap scheduler, at pp = 2 (a round of two stage iterations)."""
    model = models.get("llama-3-8b")
    plan = InferencePlan(tp=1, pp=2, precision="fp8")
    hardware = inference_hardware_for(catalog.cluster("dgx-h100"), plan, serving=load_serving_stack(serving))
    timer = IterationTimer(model=model, hardware=hardware, plan=plan, max_sequences=64)
    kernels = stage_kernels(model, 2.0)
    for stage_busy_s in (1e-5, 1e-4, 1e-3, 2e-2):
        for sequences in (0, 64, 4096):  # a stage iteration runs half the replica's sequences
            launch, host = launch_and_host_s(np.asarray(stage_busy_s), kernels, hardware, sequences / 2)
            expected = 2 * (stage_busy_s + float(launch) + float(host))
            assert timer.replica_s(2 * stage_busy_s, sequences) == pytest.approx(expected, rel=1e-12)
