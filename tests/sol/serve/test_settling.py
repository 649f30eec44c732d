"""Whether a simulated run at an arrival rate reached its steady state while it was measured.

A run of a few thousand requests from an empty deployment, at a rate near or over what the
deployment sustains, ends before its queue shows: its latencies look benign (Llama 3.1 8B on one
H100 under vLLM offered 10% over its saturation rate: mean TTFT 57 ms in 2,000 requests, 109 s in
the last 20,000 of 40,000). :class:`Settling` compares the requests in flight over the two halves of the
measured arrivals; the expected values below are computed by hand from the rule written in each
test, so a wrong window, half or normalisation fails.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from lightspeed.catalog import Catalog
from lightspeed.sol.infer.plan import InferencePlan
from lightspeed.sol.serve import ArrivalProcess, LengthDistribution, ServingWorkload
from lightspeed.sol.serve.capacity_at_slo import saturation_rate
from lightspeed.sol.serve.deployment import simulated_deployment
from lightspeed.sol.serve.run_metrics import SETTLED_BACKLOG, Settling, settling
from lightspeed.sol.serve.simulator import simulate_deployment
from lightspeed.workload import ModelRegistry

# arrivals at t = 0, 1, ..., 99 s: the measured span is [0, 99], its middle 49.5
ARRIVALS = np.arange(100, dtype=np.float64)


def test_a_deployment_that_keeps_up_holds_as_many_in_both_halves() -> None:
    # every request lasts 10 s. First half [0, 49.5]: requests 0-39 stay 10 s each (400), 40-49
    # stay 49.5 - a (9.5 + 8.5 + ... + 0.5 = 50): 450 / 49.5 = 9.0909. Second half [49.5, 99]:
    # 40-49 stay a + 10 - 49.5 (0.5 ... 9.5 = 50), 50-89 10 s each (400), 90-99 stay 99 - a
    # (9 + 8 + ... + 0 = 45): 495 / 49.5 = 10. Backlog (10 - 9.0909) / 50 requests = 1.8%.
    found = settling(ARRIVALS, ARRIVALS + 10.0, ARRIVALS)
    assert found is not None
    assert found.first_half_in_flight == pytest.approx(450 / 49.5)
    assert found.second_half_in_flight == pytest.approx(10.0)
    assert found.backlog_share == pytest.approx((10.0 - 450 / 49.5) / 50)
    assert found.settled
    assert found.describe() == ""


def test_a_deployment_that_serves_nothing_falls_behind_by_everything_offered() -> None:
    # no request finishes: in flight at t is floor(t) + 1. First half: 1 + 2 + ... + 49 over
    # [0, 49) and 50 over [49, 49.5]: (1225 + 25) / 49.5. Second half: 50 over [49.5, 50), then
    # 51 ... 99 a second each: (25 + 3675) / 49.5. Backlog: their difference over 50 requests.
    found = settling(ARRIVALS, np.full(100, np.inf), ARRIVALS)
    assert found is not None
    first, second = 1250 / 49.5, 3700 / 49.5
    assert (found.first_half_in_flight, found.second_half_in_flight) == pytest.approx((first, second))
    assert found.backlog_share == pytest.approx((second - first) / 50)
    assert not found.settled
    assert "rose from 25.3" in found.describe()
    assert "falling behind by 99%" in found.describe()


def test_the_bound_and_a_draining_backlog() -> None:
    at_bound = Settling(
        first_half_in_flight=100.0,
        second_half_in_flight=100.0 + SETTLED_BACKLOG * 500,
        measured_arrivals=1000,
    )
    assert at_bound.backlog_share == pytest.approx(SETTLED_BACKLOG)
    assert at_bound.settled
    draining = Settling(first_half_in_flight=300.0, second_half_in_flight=200.0, measured_arrivals=1000)
    assert draining.backlog_share == pytest.approx(-0.2)  # 100 fewer over 500 arrivals
    assert not draining.settled
    assert "fell from 300.0" in draining.describe()
    assert "20%" in draining.describe()
    record = draining.to_dict()
    assert (record["backlog_share"], record["settled"]) == (pytest.approx(-0.2), False)


def test_warm_up_requests_are_not_in_the_measured_span() -> None:
    # measured: the arrivals from t = 50 on; the requests before them still count while in flight
    found = settling(ARRIVALS, ARRIVALS + 10.0, ARRIVALS[50:])
    assert found is not None
    assert found.measured_arrivals == 50
    # [50, 74.5]: requests 41-49 overlap it (a + 10 - 50: 1 ... 9 = 45), 50-64 10 s each (150),
    # 65-74 stay 74.5 - a (9.5 ... 0.5 = 50): 245 / 24.5 = 10
    assert found.first_half_in_flight == pytest.approx(10.0)


def test_no_span_no_verdict() -> None:
    assert settling(ARRIVALS, ARRIVALS + 1.0, ARRIVALS[:1]) is None
    assert settling(ARRIVALS, ARRIVALS + 1.0, np.zeros(5)) is None  # all at one instant


@pytest.fixture(scope="module")
def eight_b(catalog: Catalog, models: ModelRegistry):  # type: ignore[no-untyped-def]
    deployment = simulated_deployment(
        model=models.get("llama-3.1-8b"),
        cluster=catalog.resolve_cluster("dgx-h100"),
        plan=InferencePlan(tp=1, precision="bf16"),
        serving="vllm-2025",
        num_gpus=1,
    )
    workload = ServingWorkload(
        arrivals=ArrivalProcess.poisson(1.0),
        input_lengths=LengthDistribution.fixed(500),
        output_lengths=LengthDistribution.uniform(250, 750),
        num_requests=1000,
    )
    return deployment, workload, saturation_rate(deployment, workload)


def test_a_simulated_run_over_saturation_is_flagged_and_one_at_a_third_is_not(eight_b) -> None:  # type: ignore[no-untyped-def]
    deployment, workload, saturation = eight_b
    light = simulate_deployment(
        deployment, replace(workload, arrivals=ArrivalProcess.poisson(saturation / 3), warmup_requests=200)
    )
    assert light.settling is not None
    assert light.settling.settled
    assert light.settled is True
    over = simulate_deployment(
        deployment, replace(workload, arrivals=ArrivalProcess.poisson(1.5 * saturation))
    )
    assert over.settling is not None
    assert not over.settling.settled
    assert over.settled is False
    # offered 1.5 times what it completes, it falls behind by a third of the arrivals at the least
    # once its batch is full; from an empty start, by more than the bound in any case
    assert over.settling.backlog_share > 2 * SETTLED_BACKLOG


def test_closed_loops_and_offline_runs_have_no_verdict(eight_b) -> None:  # type: ignore[no-untyped-def]
    deployment, workload, _ = eight_b
    for arrivals in (ArrivalProcess.closed(16), ArrivalProcess.offline()):
        result = simulate_deployment(deployment, replace(workload, arrivals=arrivals, num_requests=64))
        assert result.settling is None
        assert result.settled is None
