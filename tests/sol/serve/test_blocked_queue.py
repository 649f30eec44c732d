"""A replica whose first waiting request finds no room (its cap on sequences reached) runs its
decode steps at once until the next completion, as an empty queue does: the run is the one the
engine gives stepping every iteration, in far fewer events."""

from __future__ import annotations

from typing import Any

import numpy as np

from lightspeed.catalog import Catalog
from lightspeed.sol.infer.plan import InferencePlan
from lightspeed.sol.serve import (
    ArrivalProcess,
    LengthDistribution,
    ServingWorkload,
    generate_requests,
    simulated_deployment,
)
from lightspeed.sol.serve.deployment import SchedulerConfig
from lightspeed.sol.serve.engine import Engine
from lightspeed.workload import ModelRegistry


class _StepByStep(Engine):
    """The engine with multi-step decode runs off: one event per decode iteration."""

    def _stretch(
        self, replica: Any, time: float, duration: float, shape: tuple[Any, ...]
    ) -> tuple[int, float]:
        return 1, duration


def test_a_full_replica_with_a_queue_runs_as_step_by_step_in_fewer_events(
    catalog: Catalog, models: ModelRegistry
) -> None:
    """Llama 3 8B on an H100 capped at 16 sequences, 300 requests waiting from the start (MLPerf
    Offline's one query) with uniform lengths: every request's first token and finish agree with
    the step-by-step run within 0.5%, and the run takes under half its iterations."""
    deployment = simulated_deployment(
        model=models.get("llama-3-8b"),
        cluster=catalog.cluster("dgx-h100", num_accelerators=1),
        plan=InferencePlan(tp=1, precision="fp8"),
        scheduler=SchedulerConfig(max_sequences_per_rank=16),
    )
    workload = ServingWorkload(
        arrivals=ArrivalProcess.offline(),
        input_lengths=LengthDistribution.uniform(100, 400),
        output_lengths=LengthDistribution.uniform(200, 600),
        num_requests=300,
    )
    requests = generate_requests(workload, seed=3)
    stretched = Engine(deployment, requests, seed=3).run()
    stepped = _StepByStep(deployment, requests, seed=3).run()
    np.testing.assert_allclose(stretched.first_token_s, stepped.first_token_s, rtol=0.005)
    np.testing.assert_allclose(stretched.finish_s, stepped.finish_s, rtol=0.005)
    assert stretched.iteration_steps.sum() == stepped.iteration_steps.sum()  # the same decode steps
    assert len(stretched.iteration_s) < 0.5 * len(stepped.iteration_s)
