"""Warm-up requests: simulated, left out of the figures (a steady-state measurement).

A closed loop of users who all send at once makes the first wave wait for each other's
prefill; benchmarks such as AIPerf (``--warmup-request-count``) leave warm-up requests out.
The expected values are computed here from the run's own per-request times with the rule
written in the test (the first requests to arrive are left out), so a wrong mask, window or
count fails.
"""

from __future__ import annotations

import numpy as np
import pytest

from lightspeed.catalog import Catalog
from lightspeed.errors import UserInputError
from lightspeed.sol.infer.plan import InferencePlan
from lightspeed.sol.serve import ArrivalProcess, LengthDistribution, ServingWorkload, simulate
from lightspeed.workload import ModelRegistry

USERS, REQUESTS, ISL, OSL = 8, 64, 4000, 64


def _run(catalog: Catalog, models: ModelRegistry, warmup: int):  # type: ignore[no-untyped-def]
    workload = ServingWorkload(
        arrivals=ArrivalProcess.closed(USERS),
        input_lengths=LengthDistribution.fixed(ISL),
        output_lengths=LengthDistribution.fixed(OSL),
        num_requests=REQUESTS,
        warmup_requests=warmup,
    )
    return simulate(
        model=models.get("llama-3-8b"),
        cluster=catalog.resolve_cluster("dgx-h100"),
        plan=InferencePlan(tp=1, precision="fp8"),
        workload=workload,
        num_gpus=1,
    )


def test_the_first_wave_is_left_out_of_the_latencies_and_the_throughput(
    catalog: Catalog, models: ModelRegistry
) -> None:
    whole, steady = _run(catalog, models, 0), _run(catalog, models, USERS)
    outcome = steady._outcome
    assert outcome is not None
    order = np.argsort(outcome.arrival_s, kind="stable")
    kept = order[USERS:]
    ttft = outcome.first_token_s[kept] - outcome.arrival_s[kept]
    assert steady.ttft.mean_s == pytest.approx(float(ttft.mean()))
    # the first wave queued behind each other's 4,000-token prompts: without it, the mean is lower
    assert steady.ttft.mean_s < whole.ttft.mean_s
    start = float(outcome.arrival_s[kept].min())
    end = float(outcome.finish_s.max())
    assert steady.output_tokens_per_s == pytest.approx((REQUESTS - USERS) * OSL / (end - start))
    assert steady.num_completed == whole.num_completed == REQUESTS  # counts stay the whole run's
    assert steady.num_warmup == USERS
    assert whole.num_warmup == 0


def test_inter_token_latency_counts_the_iterations_of_the_measured_part(
    catalog: Catalog, models: ModelRegistry
) -> None:
    steady = _run(catalog, models, USERS)
    outcome = steady._outcome
    assert outcome is not None
    start = float(np.sort(outcome.arrival_s)[USERS])
    counted = outcome.iteration_start_s >= start
    gaps = (outcome.iteration_s / outcome.iteration_steps)[counted]
    weights = (outcome.iteration_decode_sequences * outcome.iteration_steps)[counted]
    assert steady.itl.mean_s == pytest.approx(float((gaps * weights).sum() / weights.sum()))


def test_a_warm_up_that_leaves_nothing_to_measure_is_refused(run_cli) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(UserInputError, match="must leave requests to measure"):
        ServingWorkload(num_requests=10, warmup_requests=10)
    with pytest.raises(UserInputError):
        ServingWorkload(num_requests=10, warmup_requests=-1)
    result = run_cli(
        "simulate", "--model", "llama-3-8b", "--system", "dgx-h100", "--gpus", "1", "--precision", "fp8",
        "--concurrency", "4", "--requests", "20", "--warmup", "20",
    )  # fmt: skip
    assert result.code == 2
    assert "--warmup 20 must leave requests to measure" in result.err
    shown = run_cli(
        "simulate", "--model", "llama-3-8b", "--system", "dgx-h100", "--gpus", "1", "--precision", "fp8",
        "--concurrency", "4", "--requests", "20", "--warmup", "4", "--json",
    )  # fmt: skip
    assert shown.code == 0
    assert '"num_warmup": 4' in shown.out
