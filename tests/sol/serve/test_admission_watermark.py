"""vLLM V0 admits a prompt only while 1% of its KV blocks stay free (its block manager's
watermark); without it a server whose prompt steps pause every decode readmits the request it
just preempted into the room that request freed, and no decode ever runs. The simulator stops
such a run with the reason instead of simulating without end."""

from __future__ import annotations

import dataclasses

import pytest

from lightspeed.catalog import Catalog
from lightspeed.errors import InvalidPlanError
from lightspeed.sol.core.serving_stacks import load_serving_stack
from lightspeed.sol.infer.plan import InferencePlan
from lightspeed.sol.serve import (
    ArrivalProcess,
    LengthDistribution,
    ServingWorkload,
    SimulationResult,
    simulate,
)
from lightspeed.workload import ModelRegistry

# Llama 3 70B in FP8 on 2 H100s holds about 118 requests of 4,000 tokens: 300 sent at once, on
# demand, outgrow it and must be preempted
_WORKLOAD = ServingWorkload(
    arrivals=ArrivalProcess.offline(),
    input_lengths=LengthDistribution.fixed(2000),
    output_lengths=LengthDistribution.fixed(2000),
    num_requests=300,
)


def _run(catalog: Catalog, models: ModelRegistry, watermark: float) -> SimulationResult:
    v0 = dataclasses.replace(load_serving_stack("vllm-2024"), admission_watermark=watermark)
    return simulate(
        model=models.get("llama-3-70b"),
        cluster=catalog.cluster("dgx-h100"),
        plan=InferencePlan(tp=2, precision="fp8"),
        workload=_WORKLOAD,
        serving=v0,
        num_gpus=2,
    )


def test_vllm_v0_keeps_a_watermark_of_free_blocks(catalog: Catalog, models: ModelRegistry) -> None:
    serving = load_serving_stack("vllm-2024")
    assert serving.admission_watermark == pytest.approx(0.01)
    assert "watermark_blocks" in serving.admission_watermark_source
    result = _run(catalog, models, serving.admission_watermark)
    # every request completes, each preempted a handful of times at most
    assert result.num_completed == _WORKLOAD.num_requests
    assert 0 < result.num_preemptions < 5 * _WORKLOAD.num_requests


def test_a_run_that_only_preempts_stops_with_the_reason(catalog: Catalog, models: ModelRegistry) -> None:
    with pytest.raises(InvalidPlanError, match="thrashes under this load"):
        _run(catalog, models, 0.0)
