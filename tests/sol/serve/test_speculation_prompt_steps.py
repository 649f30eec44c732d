"""Speculative decoding under a scheduler that runs prompts in steps of their own (SGLang's): a
prompt-only step drafts nothing, so it costs what it costs without speculation, and a closed loop
completes every request (the empty draft batch of such a step had made its time NaN, and every
SGLang simulation with speculation stopped after its first iteration at 0 tokens/s)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lightspeed.catalog import Catalog
from lightspeed.sol import InferencePlan
from lightspeed.sol.serve.deployment import SimulatedDeployment, simulated_deployment
from lightspeed.sol.serve.simulator import simulate_deployment
from lightspeed.sol.serve.speculation import AcceptanceProcess
from lightspeed.sol.serve.workload import ArrivalProcess, LengthDistribution, ServingWorkload
from lightspeed.workload import ModelRegistry

SPECULATION = AcceptanceProcess((0.87, 0.87, 0.87))


def _deployment(
    catalog: Catalog, models: ModelRegistry, speculation: AcceptanceProcess | None
) -> SimulatedDeployment:
    return simulated_deployment(
        model=models.get("llama-3-8b"),
        cluster=catalog.resolve_cluster("h200"),
        plan=InferencePlan(precision="fp8"),
        serving="sglang-2025",
        speculation=speculation,
    )


def test_a_prompt_only_step_drafts_nothing(catalog: Catalog, models: ModelRegistry) -> None:
    plain = _deployment(catalog, models, None)
    drafting = _deployment(catalog, models, SPECULATION)
    assert drafting.separate_prefill
    for prompt in (500.0, 4000.0):
        alone = plain.pool.timer.seconds(0, 0.0, prompt, prompt / 2)
        speculating = drafting.pool.timer.seconds(0, 0.0, prompt, prompt / 2)
        assert math.isfinite(speculating)
        assert speculating == pytest.approx(alone, rel=1e-12)
    # a decode step does draft: 3 draft steps at 5% of a one-token step each on top of the verify
    assert drafting.pool.timer.seconds(8, 1000.0, 0.0, 0.0) > plain.pool.timer.seconds(8, 1000.0, 0.0, 0.0)


def test_a_closed_loop_with_speculation_completes_every_request(
    catalog: Catalog, models: ModelRegistry
) -> None:
    workload = ServingWorkload(
        arrivals=ArrivalProcess(kind="closed", concurrency=4),
        input_lengths=LengthDistribution(mean_tokens=500),
        output_lengths=LengthDistribution(mean_tokens=64),
        num_requests=24,
    )
    result = simulate_deployment(_deployment(catalog, models, SPECULATION), workload)
    assert result.num_completed == 24
    assert result.output_tokens_per_s > 0
    # Little's law on the closed loop: the run's mean in flight = throughput x mean latency
    assert result.requests_per_s * result.e2e.mean_s == pytest.approx(result.mean_in_flight, rel=0.02)
    assert np.isfinite(result.tpot.mean_s)


def test_sglang_caps_its_batch_and_stops_overlapping_when_speculating(
    catalog: Catalog, models: ModelRegistry
) -> None:
    # sglang server_args._handle_speculative_decoding: max_running_requests 48 when unset, and
    # disable_overlap_schedule for EAGLE (NEXTN is run as EAGLE)
    plain = _deployment(catalog, models, None)
    drafting = _deployment(catalog, models, SPECULATION)
    assert plain.max_sequences_per_rank > 48
    assert plain.timer.overlap
    assert drafting.max_sequences_per_rank == 48
    assert not drafting.timer.overlap
    # vLLM keeps its own cap either way
    vllm = simulated_deployment(
        model=models.get("llama-3-8b"),
        cluster=catalog.resolve_cluster("h200"),
        plan=InferencePlan(precision="fp8"),
        serving="vllm-2025",
        speculation=SPECULATION,
    )
    assert vllm.max_sequences_per_rank == 1024
