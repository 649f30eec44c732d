"""The simulator's per-iteration cost lookup derives nothing per call that a deployment fixes: a
decode-only shape is answered whole from its cache, the kernel and issue seconds of a step are read,
not recomputed, and the engine reads its pools' figures once per replica, not every iteration
(``benchmarks/serve_speed.py``: 100,000 requests in at most 5 s). The answers stay the formula's."""

from __future__ import annotations

from typing import Any

import pytest

from lightspeed.catalog import Catalog
from lightspeed.sol.infer.inference_hardware import inference_hardware_for
from lightspeed.sol.infer.plan import InferencePlan
from lightspeed.sol.serve import (
    ArrivalProcess,
    LengthDistribution,
    ServingWorkload,
    generate_requests,
    simulated_deployment,
)
from lightspeed.sol.serve.deployment import SimulatedPool
from lightspeed.sol.serve.engine import Engine
from lightspeed.sol.serve.speculation import AcceptanceProcess
from lightspeed.sol.serve.timing import IterationTimer
from lightspeed.workload import ModelRegistry


def _timer(catalog: Catalog, models: ModelRegistry, speculation: AcceptanceProcess | None = None) -> Any:
    plan = InferencePlan(tp=1, precision="fp8")
    hardware = inference_hardware_for(catalog.cluster("dgx-h100"), plan)
    return IterationTimer(
        model=models.get("llama-3-8b"),
        hardware=hardware,
        plan=plan,
        max_sequences=64,
        speculation=speculation,
    )


def test_a_decode_only_shape_is_answered_from_its_cache(catalog: Catalog, models: ModelRegistry) -> None:
    """Contexts 900 and 905 share a bucket (log2: 9.814 and 9.822, x 16 = 157.0 and 157.1, both
    rounding to 157): the second step of 8 sequences at 905 is the first's answer, the replica's
    launch and host time not worked out again."""
    timer = _timer(catalog, models)
    calls = []
    replica_s = timer.replica_s
    timer.replica_s = lambda *args: calls.append(args) or replica_s(*args)
    first = timer.seconds(8, 900.0, 0.0, 0.0)
    assert timer.seconds(8, 905.0, 0.0, 0.0) == first
    assert len(calls) == 1
    assert timer.lookups == 2  # both asked, one worked out
    assert timer.seconds(9, 905.0, 0.0, 0.0) != first  # decoding sequences are exact, not bucketed
    assert len(calls) == 2


def test_replica_seconds_are_the_formula_with_drafts(catalog: Catalog, models: ModelRegistry) -> None:
    """Two draft tokens at a draft cost of 0.05: 0.1 draft steps, so a step that decodes runs 1.1
    times the kernels' fixed and issue time, a prompt-only step 1 times (written out from the
    timer's per-round constants; trtllm-2025 overlaps the host with the GPU)."""
    timer = _timer(catalog, models, AcceptanceProcess(acceptance=(0.7, 0.7), draft_cost_fraction=0.05))
    assert timer.draft_steps == pytest.approx(0.1, rel=1e-15)
    assert timer.overlap
    busy = 0.004
    for sequences, kernels in ((0.0, 1.0), (16.0, 1.1)):
        for issued in (0.0, 1.0):
            gpu = busy + timer.kernel_s * kernels
            host = timer.host_s + timer.host_per_sequence_s * sequences
            issue = timer.issue_s * kernels * issued
            assert timer.replica_s(busy, sequences, issued) == pytest.approx(
                max(gpu, issue + host), rel=1e-12
            )


def test_the_engine_reads_its_pools_figures_once_per_replica(
    catalog: Catalog, models: ModelRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two replicas over 200 requests run hundreds of iterations; the pool's query tokens (a
    property that converts the timer's) are read twice, once by each replica."""
    deployment = simulated_deployment(
        model=models.get("llama-3-8b"),
        cluster=catalog.cluster("dgx-h100", num_accelerators=2),
        plan=InferencePlan(tp=1, replicas=2, precision="fp8"),
    )
    workload = ServingWorkload(
        arrivals=ArrivalProcess.poisson(20.0),
        input_lengths=LengthDistribution.uniform(100, 800),
        output_lengths=LengthDistribution.uniform(20, 200),
        num_requests=200,
    )
    requests = generate_requests(workload, seed=1)
    reads = []
    query_tokens = SimulatedPool.query_tokens

    def counted(pool: SimulatedPool) -> float:
        reads.append(pool)
        return float(query_tokens.fget(pool))  # type: ignore[misc]

    monkeypatch.setattr(SimulatedPool, "query_tokens", property(counted))
    output = Engine(deployment, requests, seed=1).run()
    assert len(output.iteration_s) > 200
    assert len(reads) == 2
