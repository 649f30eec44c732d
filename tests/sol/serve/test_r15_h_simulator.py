"""Round 15, helper H: the simulator's queue mean, the attention-DP gain and its argument checks."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from lightspeed.catalog import Catalog
from lightspeed.errors import UserInputError
from lightspeed.sol.infer.plan import InferencePlan
from lightspeed.sol.serve import (
    ArrivalProcess,
    LengthDistribution,
    SchedulerConfig,
    ServingWorkload,
    simulate,
    simulate_deployment,
    simulated_deployment,
)
from lightspeed.sol.serve.workload import Requests
from lightspeed.workload import ModelRegistry

RATE_PER_S = 80.0


def _workload(arrivals: ArrivalProcess, requests: int, isl: int, osl: int) -> ServingWorkload:
    return ServingWorkload(
        arrivals=arrivals,
        num_requests=requests,
        input_lengths=LengthDistribution.fixed(isl),
        output_lengths=LengthDistribution.fixed(osl),
    )


def test_the_mean_queue_is_the_m_d_1_queue_over_the_busy_time(
    catalog: Catalog, models: ModelRegistry
) -> None:
    """One sequence at a time, 500-token prompts and one output token: every iteration is one
    prompt of the same length D, so the replica is an M/D/1 server. Its queue (requests waiting,
    not the one served) averaged over all time is Lq = rho^2 / (2 (1 - rho)) (Pollaczek-Khinchine
    with a deterministic service), and the queue is empty while the server idles, so over the busy
    time it is Lq / rho = rho / (2 (1 - rho)): 1.65 at rho = 0.77. By Little's law it is also the
    requests' waits (TTFT - D) summed over the busy time, on the run's own sample. The queue was a
    snapshot when each iteration formed, which misses the requests that arrive during it: 1.29."""
    result = simulate(
        model=models.get("llama-3-8b"),
        cluster=catalog.cluster("dgx-h100", num_accelerators=1),
        plan=InferencePlan(tp=1, precision="fp8"),
        scheduler=SchedulerConfig(max_sequences_per_rank=1, max_batched_tokens_per_rank=512),
        workload=_workload(ArrivalProcess.poisson(RATE_PER_S), 20_000, 500, 1),
    )
    outcome = result.outcome
    service_s = float(np.median(outcome.iteration_s))
    assert np.ptp(outcome.iteration_s) < 1e-9 * service_s  # deterministic service
    rho = RATE_PER_S * service_s
    assert 0.7 < rho < 0.85
    assert result.mean_queue == pytest.approx(rho / (2.0 * (1.0 - rho)), rel=0.05)
    waits_s = outcome.first_token_s - outcome.arrival_s - service_s
    little = float(waits_s.sum()) / float(outcome.iteration_s.sum())
    assert result.mean_queue == pytest.approx(little, rel=0.005)
    assert result.max_queue >= float(outcome.iteration_queue.max())


def _adp_r1(catalog: Catalog, models: ModelRegistry, arrivals: ArrivalProcess, requests: int) -> Any:
    return simulate(
        model=models.get("deepseek-r1"),
        cluster=catalog.cluster("dgx-h200"),
        plan=InferencePlan(tp=1, ep=8, dp_attention=8, precision="fp8"),
        workload=_workload(arrivals, requests, 1000, 100),
    )


def test_a_lone_sequence_gains_nothing_from_attention_dp_balance(
    catalog: Catalog, models: ModelRegistry
) -> None:
    """DeepSeek-R1 on 8 H200, attention DP 8, one request every 100 s: each iteration holds one
    sequence on one rank (balance 1/8 while it decodes), and a rank cannot hold part of a sequence,
    so perfectly balanced the busiest rank still holds that one: nothing to gain (1x). Scaling each
    iteration's time by its balance ratio had claimed 7.24x, a 2 ms step where the deployment runs
    a batch of one sequence per rank in about 24 ms."""
    result = _adp_r1(catalog, models, ArrivalProcess.poisson(0.01), 20)
    assert result.attention_dp_balance < 0.2
    assert result.attention_dp_balanced_speedup == pytest.approx(1.0)
    outcome = result.outcome
    priced = np.isfinite(outcome.iteration_balanced_s)  # one iteration of several ranks in 8
    assert priced[0]
    assert 0 < np.count_nonzero(priced) < priced.size
    assert np.all(outcome.iteration_balanced_s[priced] <= outcome.iteration_s[priced])


def test_the_balanced_iteration_is_priced_by_the_iteration_cost(
    catalog: Catalog, models: ModelRegistry
) -> None:
    """Eight prompts at once, one per rank: 1,000 tokens on rank 0, 10 on each other. Balanced,
    each rank would prefill 1,070 / 8 = 133.75 tokens, attending (1,000 x 500 + 7 x 10 x 5) /
    1,070 tokens on average, beside the same 1,070 stage tokens in the MoE layers; the gain is
    the iteration cost of the busiest rank's shape over that one's, less than the balance
    ratio's 1,000 / 133.75 = 7.48x (weights and experts are read either way) and more than 1."""
    deployment = simulated_deployment(
        model=models.get("deepseek-v3"),
        cluster=catalog.cluster("dgx-h200"),
        plan=InferencePlan(tp=1, dp_attention=8, ep=8, precision="fp8"),
        scheduler=SchedulerConfig(router="round-robin"),
    )
    requests = Requests(
        arrival_s=np.zeros(8),
        input_tokens=np.asarray([1000] + [10] * 7),
        output_tokens=np.ones(8, dtype=np.int64),
        cached_tokens=np.zeros(8),
        concurrency=None,
    )
    result = simulate_deployment(
        deployment, _workload(ArrivalProcess.offline(), 8, 1000, 1), requests=requests
    )
    timer = deployment.timer
    busiest_s = timer.seconds(0, 0.0, 1000.0, 500.0, 1070.0)
    balanced_s = timer.seconds(0, 0.0, 1070.0 / 8, (1000 * 500 + 7 * 10 * 5) / 1070, 1070.0)
    assert result.attention_dp_balanced_speedup == pytest.approx(busiest_s / balanced_s)
    assert 1.0 < result.attention_dp_balanced_speedup < 1000 / 133.75


@pytest.mark.parametrize(
    ("argument", "value", "says"),
    [
        ("model", "llama-3-8b", "model must be a TransformerSpec (lightspeed.model("),
        ("cluster", "dgx-h100", "cluster must be a Cluster"),
        ("plan", None, "plan must be an InferencePlan"),
        ("workload", None, "workload must be a ServingWorkload"),
        ("slo", {"ttft_s": 1.0}, "slo must be a ServiceLevel or None"),
        ("scheduler", {"router": "round-robin"}, "scheduler must be a SchedulerConfig or None"),
        ("seed", "1", "seed must be a whole number"),
        ("efficiency", "fitted", "efficiency must be an EfficiencyModel or None"),
        ("serving", 3, "serving must be a serving profile's name"),
        ("speculation", 0.5, "speculation must be an AcceptanceProcess or None"),
        ("num_gpus", "8", "num_gpus must be a whole number"),
        ("horizon_s", "10", "horizon_s must be a finite number"),
    ],
)
def test_simulate_refuses_an_argument_of_the_wrong_kind(
    catalog: Catalog, models: ModelRegistry, argument: str, value: object, says: str
) -> None:
    """A name where the thing belongs (or a dict, a string for a number) is one UserInputError
    naming the argument and how to make it, not an AttributeError from deep in the engine."""
    arguments: dict[str, Any] = {
        "model": models.get("llama-3-8b"),
        "cluster": catalog.cluster("dgx-h100", num_accelerators=1),
        "plan": InferencePlan(tp=1, precision="fp8"),
        "workload": _workload(ArrivalProcess.poisson(5.0), 4, 100, 4),
        argument: value,
    }
    with pytest.raises(UserInputError) as caught:
        simulate(**arguments)
    assert says in str(caught.value)


def test_simulate_deployment_refuses_a_name_for_the_deployment(
    catalog: Catalog, models: ModelRegistry
) -> None:
    with pytest.raises(UserInputError, match="deployment must be a SimulatedDeployment"):
        simulate_deployment("llama-3-8b", _workload(ArrivalProcess.poisson(5.0), 4, 100, 4))  # type: ignore[arg-type]
