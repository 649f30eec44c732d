"""S1 (issue 27 area): the rate a simulated deployment serves (closed loops, horizons, open loops),
the standard deviation of uniform lengths, and whole-prompt steps longer than the step budget."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest

from lightspeed.catalog import load_catalog
from lightspeed.errors import InvalidPlanError
from lightspeed.sol.infer.plan import InferencePlan
from lightspeed.sol.serve.capacity_at_slo import steady_state_rates
from lightspeed.sol.serve.deployment import SchedulerConfig, SimulatedDeployment, simulated_deployment
from lightspeed.sol.serve.run_metrics import ServiceLevel
from lightspeed.sol.serve.simulator import SimulationResult, _closed_loop_rate, simulate
from lightspeed.sol.serve.workload import ArrivalProcess, LengthDistribution, ServingWorkload
from lightspeed.workload import load_models

SLO = ServiceLevel(ttft_s=10.0, tpot_s=0.1)


def _deployment() -> SimulatedDeployment:
    """Llama 3 8B in FP8 on one H100."""
    return simulated_deployment(
        model=load_models().get("llama-3-8b"),
        cluster=load_catalog().cluster("dgx-h100"),
        plan=InferencePlan(tp=1, precision="fp8"),
    )


def _workload_1000_500() -> ServingWorkload:
    """2,000 requests of 1,000-token prompts and 500-token answers (the arrivals replaced)."""
    return ServingWorkload(
        arrivals=ArrivalProcess.poisson(1.0),
        num_requests=2000,
        input_lengths=LengthDistribution.fixed(1000),
        output_lengths=LengthDistribution.fixed(500),
    )


def _simulate(arrivals: ArrivalProcess, requests: int, *, horizon_s: float | None = None) -> SimulationResult:
    """Llama 3 8B in FP8 on one H100, 1,000-token prompts and 500-token answers."""
    return simulate(
        model=load_models().get("llama-3-8b"),
        cluster=load_catalog().cluster("dgx-h100"),
        plan=InferencePlan(tp=1, precision="fp8"),
        workload=ServingWorkload(
            arrivals=arrivals,
            num_requests=requests,
            input_lengths=LengthDistribution.fixed(1000),
            output_lengths=LengthDistribution.fixed(500),
        ),
        slo=SLO,
        horizon_s=horizon_s,
    )


# --- defect 1: the served rate -------------------------------------------------------------------


def test_s1_a_closed_loop_serves_its_users_over_their_latency() -> None:
    """64 users, 256 requests (four waves): every user stays busy until the last send, so Little's
    law holds: served = requests in flight / mean latency (63.9 / 4.17 s = 15.3 req/s). Counting
    the waves of sends over their span read 19.2 req/s (+25%: 255 over three cycles, not 192)."""
    result = _simulate(ArrivalProcess.closed(64), 256)
    little = result.mean_in_flight / result.e2e.mean_s
    assert result.served_requests_per_s == pytest.approx(little, rel=0.03)
    assert result.served_requests_per_s == pytest.approx(64 / result.e2e.mean_s, rel=0.03)
    assert result.slo is not None
    assert result.slo.served_requests_per_s == result.served_requests_per_s
    assert result.slo.goodput_requests_per_s == pytest.approx(result.slo.attainment * little, rel=0.03)


@pytest.mark.parametrize("num_requests", [200, 300])
def test_s1_a_closed_loop_of_part_waves_also_keeps_littles_law(num_requests: int) -> None:
    """Requests that are not a whole number of waves (300 = 4.7 per user) end the sends mid-wave:
    still the users over their mean latency, within 3%."""
    result = _simulate(ArrivalProcess.closed(64), num_requests)
    assert result.served_requests_per_s == pytest.approx(64 / result.e2e.mean_s, rel=0.03)


def _closed_loop(users: int, requests: int, cycle_s: float, queue_s: float) -> tuple[Any, Any]:
    """A closed loop worked by hand: user u's first request waits u * queue_s for admission, then
    every request takes cycle_s; the next request goes to the user who completes first."""
    free = [(0.0, user) for user in range(users)]
    arrival, finish = np.empty(requests), np.empty(requests)
    for index in range(requests):
        free.sort()
        sent, user = free.pop(0)
        latency = cycle_s + (user * queue_s if index < users else 0.0)
        arrival[index], finish[index] = sent, sent + latency
        free.append((sent + latency, user))
    return arrival, finish


@pytest.mark.parametrize("requests", [12, 14, 40])
def test_s1_a_hand_made_closed_loop_serves_users_over_cycle(requests: int) -> None:
    """Three users of a 2 s cycle serve 3 / 2 = 1.5 req/s, whatever the requests' count and the
    first requests' wait for admission (0, 0.3 and 0.6 s)."""
    arrival, finish = _closed_loop(3, requests, cycle_s=2.0, queue_s=0.3)
    end = float(finish.max())
    rate = _closed_loop_rate(arrival, finish, concurrency=3, start_s=0.0, end_s=end, overall=0.0)
    assert rate == pytest.approx(1.5, rel=1e-9)


def test_s1_a_horizon_run_that_falls_behind_serves_between_its_completions_and_its_capacity() -> None:
    """40 req/s offered to a deployment that completes fewer, stopped at 60 s: served is at least
    the completions by the horizon over the 60 s from the first arrival (the requests/s line's
    figure, which counts the ramp before anything completes), and at most what the deployment
    completes at its steady state with every request waiting (an independent measure: runs of N
    and 2N waiting requests differenced): the flow through decoding after the first completion
    lies between them."""
    result = _simulate(ArrivalProcess.poisson(40.0), 5000, horizon_s=60.0)
    completed = int(np.isfinite(result.outcome.finish_s).sum())
    assert result.requests_per_s == pytest.approx(completed / 60.0, rel=0.01)
    assert result.served_requests_per_s > result.requests_per_s
    capacity = steady_state_rates(_deployment(), _workload_1000_500()).requests_per_s
    assert result.served_requests_per_s < capacity
    assert result.served_requests_per_s < result.offered_requests_per_s


def test_s1_a_horizon_run_that_keeps_up_serves_its_arrival_rate() -> None:
    """10 req/s, which the deployment keeps up with, stopped at 60 s: the requests still decoding
    at the horizon are the pipeline, not a shortfall: served is the arrival rate (requests over
    the span of their arrivals)."""
    result = _simulate(ArrivalProcess.poisson(10.0), 5000, horizon_s=60.0)
    assert result.settled
    arrived = np.sort(result.outcome.arrival_s[result.outcome.arrival_s <= 60.0])
    offered = (arrived.size - 1) / (arrived[-1] - arrived[0])
    assert result.served_requests_per_s == pytest.approx(offered, rel=1e-9)


def test_s1_an_open_loop_that_keeps_up_serves_its_arrival_rate() -> None:
    """300 requests at 20 req/s: the arrival rate over the span of arrivals, as before (within 2%)."""
    result = _simulate(ArrivalProcess.poisson(10.0), 2000)
    assert result.settled
    arrival = result.outcome.arrival_s
    assert result.served_requests_per_s == pytest.approx(1999 / (arrival.max() - arrival.min()), rel=1e-12)


# --- defect 2: the spread of uniform lengths -------------------------------------------------------


def test_s1_uniform_lengths_have_their_standard_deviation() -> None:
    """Whole numbers 100..3,000 (2,901 values): sd = sqrt((2,901^2 - 1) / 12) = 837.45; drawn, the
    same within 1%."""
    lengths = LengthDistribution.uniform(100, 3000)
    assert lengths.std_tokens == pytest.approx(math.sqrt((2901**2 - 1) / 12), rel=1e-12)
    assert lengths.std_tokens == pytest.approx(837.45, abs=0.01)
    drawn = lengths.sample(np.random.default_rng(0), 200_000)
    assert float(drawn.std()) == pytest.approx(lengths.std_tokens, rel=0.01)
    assert LengthDistribution.uniform(7, 7).std_tokens == 0.0  # one value


def test_s1_empirical_lengths_have_the_spread_they_are_drawn_with() -> None:
    """Drawn with replacement from 1, 2, 3, 10: mean 4, sd sqrt((9 + 4 + 1 + 36) / 4) = 3.536."""
    lengths = LengthDistribution.empirical([1, 2, 3, 10])
    assert lengths.std_tokens == pytest.approx(math.sqrt(50 / 4))
    drawn = lengths.sample(np.random.default_rng(0), 200_000)
    assert float(drawn.std()) == pytest.approx(lengths.std_tokens, rel=0.01)


def test_s1_the_cli_reports_the_spread_of_uniform_prompts(run_cli: Any) -> None:
    result = run_cli(
        "simulate", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--isl-dist", "uniform:100-3000",
        "--osl", "10", "--requests", "20", "--json",
    )  # fmt: skip
    assert result.code == 0, result.err
    lengths = json.loads(result.out)["workload"]["input_lengths"]
    assert lengths["std_tokens"] == pytest.approx(837.45, abs=0.01)


# --- defect 3: whole prompts longer than the step budget --------------------------------------------


SEPARATE = (
    "simulate", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--isl", "2000", "--osl", "1",
    "--arrival-rate", "0.01", "--requests", "5", "--prefill-steps", "separate", "--serving", "vllm-2024",
)  # fmt: skip


def test_s1_whole_prompt_steps_refuse_a_prompt_over_the_budget(run_cli: Any) -> None:
    """vLLM V0 without chunked prefill cannot schedule a 2,000-token prompt under 512 tokens per
    step: one line naming both settings and the fix, exit 2 (it used to chunk it silently)."""
    result = run_cli(*SEPARATE, "--max-num-batched-tokens", "512", "--json")
    assert result.code == 2
    message = result.err.strip()
    assert "\n" not in message
    assert "Traceback" not in message
    fixes = ("--max-num-batched-tokens to at least 2,000", "--prefill-steps mixed")
    for part in ("2,000 tokens", "512", *fixes):
        assert part in message


def test_s1_whole_prompt_steps_run_a_prompt_within_the_budget(run_cli: Any) -> None:
    result = run_cli(*SEPARATE, "--max-num-batched-tokens", "2000", "--json")
    assert result.code == 0, result.err
    mixed = run_cli(*SEPARATE[:-4], "--prefill-steps", "mixed", "--max-num-batched-tokens", "512", "--json")
    assert mixed.code == 0, mixed.err  # chunked prefill takes the prompt in chunks


def test_s1_the_library_refuses_whole_prompts_over_the_budget() -> None:
    """The default budget of vLLM V0's separate steps is the model's context (8,192 for Llama 3 8B):
    a 10,000-token prompt is refused there too; SGLang's separate steps chunk it."""
    workload = ServingWorkload(
        arrivals=ArrivalProcess.poisson(0.01),
        num_requests=2,
        input_lengths=LengthDistribution.fixed(10_000),
        output_lengths=LengthDistribution.fixed(1),
    )
    model, cluster = load_models().get("llama-3-8b"), load_catalog().cluster("dgx-h100")
    plan = InferencePlan(tp=1)
    with pytest.raises(InvalidPlanError, match="at least 10,000"):
        simulate(model=model, cluster=cluster, plan=plan, workload=workload, serving="vllm-2024")
    chunks = simulate(
        model=model,
        cluster=cluster,
        plan=plan,
        workload=workload,
        serving="sglang-2025",
        scheduler=SchedulerConfig(prefill_steps="separate"),
    )
    assert chunks.num_completed == 2
