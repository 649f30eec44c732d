"""Error bars of latencies under an open-loop load: the throughput band carried through the queue.

An estimate's 80% band says how much faster or slower than predicted published
deployments of its family run (:mod:`lightspeed.sol.core.uncertainty`): measured
speed / predicted speed in ``exp([low, high])``. A TTFT or TPOT measured at a
fixed arrival rate does not scale with that factor alone: near capacity a
deployment 20% slower than predicted sits at a far higher share of its capacity,
and its queue, batch and latencies grow many times over. Time scaling gives the
exact carry-over: a deployment whose every service time is ``k`` times the
simulated one serves arrivals at rate ``r`` as the simulated one serves ``r k``,
``k`` times slower (rescale the clock by ``k``). So the band of a latency at rate
``r`` is ``k_fast * L(r k_fast)`` to ``k_slow * L(r k_slow)`` with
``k = exp(-high), exp(-low)`` and ``L`` the simulated latency: two more
simulations of the same requests. Far below capacity it is the plain band
(``L`` barely moves with the rate); near capacity it opens to seconds, which is
what a throughput error of a few percent does to a queue. A closed loop (fixed
concurrency) has no rate to scale: its latencies scale by ``k`` alone. :func:`band_under_load`
runs the two on at most :data:`BAND_MAX_MEASURED_REQUESTS` measured requests (after the run's
own warm-up), so a long run does not cost three long simulations: a band is a spread of
percentiles, which 10,000 requests pin down; where the slow side is past capacity its queue
grows with the run's length, and the edge is then that of a run of that many requests.

>>> from lightspeed.catalog import load_catalog
>>> from lightspeed.workload import load_models
>>> from lightspeed.sol.core.uncertainty import Band
>>> from lightspeed.sol.infer.plan import InferencePlan
>>> from lightspeed.sol.serve.deployment import simulated_deployment
>>> from lightspeed.sol.serve.workload import ArrivalProcess, LengthDistribution, ServingWorkload
>>> deployment = simulated_deployment(model=load_models().get("llama-3-8b"),
...     cluster=load_catalog().cluster("dgx-h100"), plan=InferencePlan(tp=1, precision="fp8"))
>>> workload = ServingWorkload(ArrivalProcess.poisson(20.0), LengthDistribution.fixed(500),
...     LengthDistribution.fixed(100), num_requests=300)
>>> runs = scaled_runs(deployment, workload, Band("infer", 0.8, -0.2, 0.2, 15))
>>> low, high = runs.interval(lambda result: result.ttft.p50_s)
>>> 0.0 < low < high
True
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Final

from lightspeed.errors import UserInputError
from lightspeed.records import JsonDict
from lightspeed.sol.core.uncertainty import Band, model_interval
from lightspeed.sol.serve.deployment import SimulatedDeployment
from lightspeed.sol.serve.simulator import SimulationResult, simulate_deployment
from lightspeed.sol.serve.workload import (
    MIN_ARRIVAL_RATE_PER_S,
    RATE_ARRIVALS,
    ArrivalProcess,
    ServingWorkload,
)

# The band's runs simulate at most this many measured requests: a 100,000-request run cost three
# simulations of 100,000 (10.7 s for Llama 3 8B on one H100, one simulation 2.3 s)
BAND_MAX_MEASURED_REQUESTS: Final = 10_000


@dataclass(frozen=True)
class ScaledRuns:
    """The two runs a latency band is read from: at the rate times ``fast_scale`` (the deployment
    as much faster as the band allows) and times ``slow_scale``; each latency of a run is
    multiplied by its scale (:func:`scaled_runs`)."""

    band: Band
    fast_scale: float
    slow_scale: float
    fast: SimulationResult
    slow: SimulationResult

    def interval(self, statistic: Callable[[SimulationResult], float]) -> tuple[float, float]:
        """The band of a latency ``statistic`` (seconds) of a run."""
        return self.fast_scale * statistic(self.fast), self.slow_scale * statistic(self.slow)

    @property
    def measured_requests(self) -> int:
        """The requests each of the two runs measures (after its warm-up)."""
        return self.fast.num_requests - self.fast.num_warmup

    def intervals(self) -> JsonDict:
        """The bands of the headline latencies (seconds), the scales, the family and the requests
        the two runs measure, for JSON."""
        statistics: dict[str, Callable[[SimulationResult], float]] = {
            "ttft_p50_s": lambda run: run.ttft.p50_s,
            "ttft_p99_s": lambda run: run.ttft.p99_s,
            "tpot_p50_s": lambda run: run.tpot.p50_s,
            "tpot_p99_s": lambda run: run.tpot.p99_s,
            "e2e_p50_s": lambda run: run.e2e.p50_s,
        }
        return {
            "level": self.band.level,
            "family": self.band.family,
            "num_rows": self.band.num_rows,
            "fast_scale": self.fast_scale,
            "slow_scale": self.slow_scale,
            "measured_requests": self.measured_requests,
            **{name: list(self.interval(statistic)) for name, statistic in statistics.items()},
        }

    def describe(self) -> str:
        """One line for an estimate's assumptions."""
        return (
            f"{self.band.level:.0%} band under this load: the run re-simulated at the rate "
            f"x{self.fast_scale:.3g} and x{self.slow_scale:.3g}, its latencies scaled by the same "
            f"(a deployment k times slower serves rate r as this one serves r k, k times slower; "
            f"k from the band of family {self.band.family}, {self.band.num_rows} rows)"
        )


def deployment_band(deployment: SimulatedDeployment) -> Band:
    """The 80% band of the family of ``deployment``'s model and GPU (inference, dense, MoE or
    hybrid, by architecture; :func:`lightspeed.sol.core.uncertainty.model_interval`)."""
    architecture = deployment.hardware.hardware.accelerator.architecture
    return model_interval("infer", deployment.model, architecture)


def rate_scaled(workload: ServingWorkload, scale: float) -> ServingWorkload:
    """``workload`` with its Poisson or gamma arrival rate times ``scale`` (the same CV)."""
    arrivals = workload.arrivals
    if arrivals.kind not in RATE_ARRIVALS or arrivals.rate_per_s is None or workload.trace is not None:
        raise UserInputError(f"{arrivals.kind} arrivals have no rate to scale (give Poisson or gamma)")
    # a rate near the floor scaled down stays at it (one request a century: slower is no rate)
    rate = max(arrivals.rate_per_s * scale, MIN_ARRIVAL_RATE_PER_S)
    scaled = (
        ArrivalProcess.poisson(rate)
        if arrivals.kind == "poisson"
        else ArrivalProcess.gamma(rate, arrivals.cv)
    )
    return replace(workload, arrivals=scaled)


def scaled_runs(
    deployment: SimulatedDeployment, workload: ServingWorkload, band: Band, *, seed: int = 0
) -> ScaledRuns:
    """The runs of ``workload`` (open-loop arrivals at a rate) whose latencies, scaled, bound the
    ``band`` of the latencies of ``deployment`` under that load (see the module docstring)."""
    fast_scale, slow_scale = math.exp(-band.high), math.exp(-band.low)
    return ScaledRuns(
        band=band,
        fast_scale=fast_scale,
        slow_scale=slow_scale,
        fast=simulate_deployment(deployment, rate_scaled(workload, fast_scale), seed=seed),
        slow=simulate_deployment(deployment, rate_scaled(workload, slow_scale), seed=seed),
    )


def band_under_load(
    deployment: SimulatedDeployment,
    workload: ServingWorkload,
    *,
    seed: int = 0,
    max_measured_requests: int = BAND_MAX_MEASURED_REQUESTS,
) -> ScaledRuns | None:
    """The runs that bound the latencies of ``deployment`` under ``workload``'s load with the band of
    its family (:func:`deployment_band`), or ``None`` when its arrivals have no rate to scale
    (a closed loop scales by the band alone; offline and trace replays are not a load). The two
    runs measure at most ``max_measured_requests`` (:func:`capped_workload`)."""
    if workload.arrivals.kind not in RATE_ARRIVALS or workload.trace is not None:
        return None
    capped = capped_workload(workload, max_measured_requests)
    return scaled_runs(deployment, capped, deployment_band(deployment), seed=seed)


def capped_workload(workload: ServingWorkload, max_measured_requests: int) -> ServingWorkload:
    """``workload`` measuring at most ``max_measured_requests`` after the same warm-up.

    >>> from lightspeed.sol.serve.workload import ServingWorkload
    >>> capped_workload(ServingWorkload(num_requests=100_000, warmup_requests=500), 10_000).num_requests
    10500
    """
    if max_measured_requests < 1:
        raise UserInputError(
            f"the band's runs must measure at least one request (got {max_measured_requests})"
        )
    measured = workload.num_requests - workload.warmup_requests
    if measured <= max_measured_requests:
        return workload
    return replace(workload, num_requests=workload.warmup_requests + max_measured_requests)


__all__ = [
    "BAND_MAX_MEASURED_REQUESTS",
    "ScaledRuns",
    "band_under_load",
    "capped_workload",
    "deployment_band",
    "rate_scaled",
    "scaled_runs",
]
