"""Deployments ranked by goodput per GPU at an SLO: the analytic search prunes, the simulator ranks.

:func:`search_goodput` runs the vectorized analytic search
(:func:`~lightspeed.sol.infer.search.search_inference`) with the SLO's limits
as its bounds, keeps the best deployment and those of the Pareto frontier
(the finalists: at most ``finalists``, distinct replica shapes, each at its highest
analytic throughput per GPU within the SLO's TTFT and TPOT limits, highest first; a shape
with no point within them is not a finalist, ``num_shapes_infeasible`` counts them), then
simulates each under load:

* at a given arrival rate (``rate_per_s``): goodput is the requests per second
  that meet both limits (DistServe), divided by the GPUs;
* without one: the highest rate each sustains at the SLO
  (:func:`~lightspeed.sol.serve.capacity_at_slo.max_rate_at_slo`), per GPU.

Each finalist's runs are measured at the steady state
(:func:`~lightspeed.sol.serve.capacity_at_slo.steady_state_workload`: a warm-up of what it
holds at once, unless ``warmup_requests`` gives one): a rate served is a sustained rate.
Each finalist records the warm-up and measured request counts it was run with, so that
``lightspeed simulate --arrival-rate R --requests N --warmup W`` repeats its run. A highest rate
is one sample of the arrivals (one seed): the best finalist's is rerun with ``seed_checks`` more
seeds (:class:`~lightspeed.sol.serve.capacity_at_slo.SeedCheck`, two by default), as ``simulate
--max-rate-at-slo`` reruns its own, so the ranking can say whether the winner's rate holds.
The analytic model sees a batch of identical requests; the simulator sees the
queue, so the order can change.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Final

from lightspeed.catalog import Cluster
from lightspeed.errors import InvalidPlanError, UserInputError
from lightspeed.records import Record
from lightspeed.sol.core.efficiency import EfficiencyModel
from lightspeed.sol.infer.plan import InferencePlan, ServingLoad, SpeculativeDecoding
from lightspeed.sol.infer.search import FrontierPoint, InferenceSearchResult, search_inference
from lightspeed.sol.serve.capacity_at_slo import (
    SeedCheck,
    max_rate_at_slo,
    seed_checks_at,
    steady_state_workload,
)
from lightspeed.sol.serve.deployment import SchedulerConfig, SimulatedDeployment, simulated_deployment
from lightspeed.sol.serve.run_metrics import ServiceLevel
from lightspeed.sol.serve.simulator import simulate_deployment
from lightspeed.sol.serve.workload import ArrivalProcess, LengthDistribution, ServingWorkload
from lightspeed.workload import TransformerSpec

DEFAULT_FINALISTS: Final = 6
DEFAULT_SEED_CHECKS: Final = 2  # the best finalist's highest rate rerun on this many more seeds


@dataclass(frozen=True)
class RankedDeployment(Record):
    """One finalist: its analytic throughput per GPU, and what the simulation gave at the SLO
    (good requests per second and per GPU, the share within both limits, the latencies, whether
    the run kept up while it was measured: :class:`~lightspeed.sol.serve.run_metrics.Settling`, and
    the output tokens per second at the rate it served); ``seed_checks``: for the best finalist at
    its highest rate, that rate rerun with other seeds (none otherwise)."""

    plan: InferencePlan
    analytic_output_tokens_per_s_per_gpu: float
    rate_per_s: float
    goodput_requests_per_s: float
    goodput_requests_per_s_per_gpu: float
    attainment: float
    ttft_p99_s: float
    tpot_p99_s: float
    meets: bool
    settled: bool | None = None
    warmup_requests: int = 0  # requests that warmed the run up, left out of its figures
    measured_requests: int = 0  # requests measured after them
    served_output_tokens_per_s: float = math.nan  # output tokens/s at the rate served (drain left out)
    seed_checks: tuple[SeedCheck, ...] = ()  # the best finalist's highest rate on other seeds


@dataclass(frozen=True)
class GoodputSearchResult(Record):
    """Finalists ranked by goodput per GPU (best first), the SLO and rate, and the analytic search;
    ``num_shapes_infeasible``: replica shapes the analytic search found no point of within the
    SLO's limits (not finalists), ``seed`` the simulations' request seed."""

    slo: ServiceLevel
    rate_per_s: float | None
    ranking: tuple[RankedDeployment, ...]
    analytic: InferenceSearchResult
    num_shapes_infeasible: int = 0
    seed: int = 0

    @property
    def best(self) -> RankedDeployment:
        """The finalist with the most goodput per GPU."""
        return self.ranking[0]


def _within(point: FrontierPoint, slo: ServiceLevel) -> bool:
    """Whether an analytic point meets the SLO's TTFT and TPOT limits."""
    return (slo.ttft_s is None or point.ttft_s <= slo.ttft_s) and (
        slo.tpot_s is None or point.tpot_s <= slo.tpot_s
    )


def _finalists(
    result: InferenceSearchResult, count: int, speculative: SpeculativeDecoding | None, slo: ServiceLevel
) -> list[tuple[InferencePlan, float]]:
    """The best deployment and each other replica shape at its highest analytic tokens/s per GPU
    within the search's bounds and the SLO's limits (a search without per-shape points: its
    frontier's points within them), highest first, at most ``count``."""
    best = result.best.plan
    chosen: dict[str, tuple[InferencePlan, float]] = {
        best.describe(): (best, result.best.output_tokens_per_s_per_gpu)
    }
    candidates = result.feasible_shapes or result.frontier
    for point in sorted(candidates, key=lambda point: -point.output_tokens_per_s_per_gpu):
        if _within(point, slo):
            chosen.setdefault(point.plan, (point.deployment, point.output_tokens_per_s_per_gpu))
    plans = []
    for plan, rate in list(chosen.values())[:count]:
        # a plan the search already set a depth on keeps it (a search over speculative depths)
        own = plan.speculative is not None
        plans.append((plan.with_changes(speculative=speculative) if speculative and not own else plan, rate))
    return plans


def search_goodput(
    *,
    model: TransformerSpec,
    cluster: Cluster,
    load: ServingLoad,
    slo: ServiceLevel,
    rate_per_s: float | None = None,
    precision: str = "bf16",
    num_requests: int = 1000,
    seed: int = 0,
    finalists: int = DEFAULT_FINALISTS,
    warmup_requests: int = 0,
    scheduler: SchedulerConfig | None = None,
    efficiency: EfficiencyModel | None = None,
    speculative: SpeculativeDecoding | None = None,
    disaggregated: bool = False,
    attention_dp: bool = True,
    num_gpus: int | None = None,
    serving: str | None = None,
    analytic: InferenceSearchResult | None = None,
    attention_weights: str | None = None,
    effective_bits: float | None = None,
    seed_checks: int = DEFAULT_SEED_CHECKS,
) -> GoodputSearchResult:
    """Rank deployments by goodput per GPU at ``slo`` (see the module docstring); requests of
    ``load``'s lengths, ``num_requests`` per simulation (the first ``warmup_requests`` not
    measured). ``analytic``: the analytic search under
    the SLO's limits when the caller has run it already (it is not run again). Without
    ``rate_per_s``, the best finalist's highest rate is rerun with ``seed_checks`` more seeds."""
    if finalists < 1:
        raise UserInputError(f"finalists must be >= 1 (got {finalists})")
    if seed_checks < 0:
        raise UserInputError(f"seed checks {seed_checks} must be 0 or more")
    analytic = analytic or search_inference(
        model=model,
        cluster=cluster,
        load=load,
        precision=precision,
        max_ttft_s=slo.ttft_s,
        max_tpot_s=slo.tpot_s,
        efficiency=efficiency,
        speculative=speculative,
        disaggregated=disaggregated,
        attention_dp=attention_dp,
        num_gpus=num_gpus,
        serving=serving,
        attention_weights=attention_weights,
        effective_bits=effective_bits,
    )
    workload = ServingWorkload(
        input_lengths=LengthDistribution.fixed(load.input_tokens),
        output_lengths=LengthDistribution.fixed(load.output_tokens),
        num_requests=num_requests,
        warmup_requests=warmup_requests,
    )
    ranked: list[tuple[RankedDeployment, SimulatedDeployment]] = []
    for plan, analytic_rate in _finalists(analytic, finalists, speculative, slo):
        try:
            deployment = simulated_deployment(
                model=model,
                cluster=cluster,
                plan=plan,
                scheduler=scheduler,
                efficiency=efficiency,
                serving=serving,
            )
        except InvalidPlanError:
            continue
        entry = _rank(deployment, workload, slo, rate=rate_per_s, seed=seed, analytic_rate=analytic_rate)
        ranked.append((entry, deployment))
    if not ranked:
        raise InvalidPlanError("no finalist of the analytic search could be simulated")
    # equal goodput (every finalist keeps up with a given rate): the one furthest inside the limits
    ranked.sort(
        key=lambda pair: (
            -pair[0].goodput_requests_per_s_per_gpu,
            -pair[0].attainment,
            -_headroom(pair[0], slo),
        )
    )
    ranking = [entry for entry, _ in ranked]
    if rate_per_s is None:
        ranking[0] = _with_seed_checks(ranking[0], ranked[0][1], workload, slo, seed=seed, count=seed_checks)
    return GoodputSearchResult(
        slo=slo,
        rate_per_s=rate_per_s,
        ranking=tuple(ranking),
        analytic=analytic,
        num_shapes_infeasible=analytic.num_shapes_infeasible,
        seed=seed,
    )


def _rank(
    deployment: SimulatedDeployment,
    workload: ServingWorkload,
    slo: ServiceLevel,
    *,
    rate: float | None,
    seed: int,
    analytic_rate: float,
) -> RankedDeployment:
    gpus = deployment.plan.num_gpus
    # a rate served (given or the highest sustained) is measured at the steady state
    workload = steady_state_workload(deployment, workload)
    capacity = None
    if rate is None:
        capacity = max_rate_at_slo(deployment, workload=workload, slo=slo, seed=seed)
        rate = capacity.max_rate_per_s
    result = simulate_deployment(
        deployment,
        replace(workload, arrivals=ArrivalProcess.poisson(max(rate, 1e-9))),
        seed=seed,
        slo=slo,
    )
    assert result.slo is not None
    # at each one's highest rate, DistServe's goodput (that rate times the share within the SLO);
    # at a given rate, the good share of that rate where the run keeps up (not of its own sample's
    # arrivals, which differ with each finalist's warm-up: ranking on them ranks sampling noise),
    # of what it served where it falls behind
    if capacity is not None:
        goodput = capacity.goodput_requests_per_s
    elif result.settled:
        goodput = rate * result.slo.attainment
    else:
        goodput = min(rate * result.slo.attainment, result.slo.goodput_requests_per_s)
    return RankedDeployment(
        plan=deployment.plan,
        analytic_output_tokens_per_s_per_gpu=analytic_rate,
        rate_per_s=rate,
        goodput_requests_per_s=goodput,
        goodput_requests_per_s_per_gpu=goodput / gpus,
        attainment=result.slo.attainment,
        ttft_p99_s=result.ttft.p99_s,
        tpot_p99_s=result.tpot.p99_s,
        meets=result.slo.meets,
        settled=result.settled,
        warmup_requests=workload.warmup_requests,
        measured_requests=workload.num_requests - workload.warmup_requests,
        served_output_tokens_per_s=result.served_output_tokens_per_s,
    )


def _with_seed_checks(
    entry: RankedDeployment,
    deployment: SimulatedDeployment,
    workload: ServingWorkload,
    slo: ServiceLevel,
    *,
    seed: int,
    count: int,
) -> RankedDeployment:
    """``entry`` with its highest rate rerun on ``count`` more seeds, on the requests its search ran
    (the same warm-up and measured counts); unchanged where no rate was found."""
    if count == 0 or entry.rate_per_s <= 0.0:
        return entry
    steady = steady_state_workload(deployment, workload)
    checks = seed_checks_at(deployment, steady, entry.rate_per_s, slo, seed=seed, count=count)
    return replace(entry, seed_checks=checks)


def _headroom(entry: RankedDeployment, slo: ServiceLevel) -> float:
    """How far inside its limits a deployment's 99th percentiles stay: the smallest of limit / p99."""
    ratios = [
        limit / max(p99, 1e-12)
        for limit, p99 in ((slo.ttft_s, entry.ttft_p99_s), (slo.tpot_s, entry.tpot_p99_s))
        if limit is not None and math.isfinite(p99)
    ]
    return min(ratios, default=0.0)


__all__ = ["GoodputSearchResult", "RankedDeployment", "search_goodput"]
