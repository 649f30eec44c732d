"""Inference rows whose figure depends on load, predicted by the serving simulator.

A figure measured at a concurrency (trtllm-bench's and vLLM's closed loops),
at a request rate, or in an MLPerf Server or Interactive scenario depends on how
requests queue, so :mod:`lightspeed.sol.serve` simulates it; offline, static-batch
and decode-pool figures stay with the analytic steady state.

* **Closed loop** (``concurrency N``, ``N concurrent``): ``N`` users each send the
  next request when the last completes; the run has the row's request count
  (``49,152 requests``) or ten times the concurrency (at least 1,000, at most 20,000), and no
  more than four rounds of the concurrency (longer runs move the throughput by under 1%).
* **Open loop** (``request rate R``, ``R req/s arrival``): Poisson arrivals.
* **MLPerf** (a cell names MLPerf and a benchmark of ``sol/serve/data/mlperf.toml``):
  the workload's published lengths (the row's ISL/OSL override them). Offline is the
  simulated throughput with every sample waiting; Server and Interactive are the
  highest Poisson rate whose 99th-percentile TTFT and TPOT meet the benchmark's limits
  (:func:`~lightspeed.sol.serve.capacity.max_rate_at_slo`), times the mean output.

Metrics: throughputs over the whole run (first arrival to last completion, as the
benchmarks count them), per-user speed the mean of each request's ``1 / TPOT``,
TTFT/TPOT/latency the means over requests.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from lightspeed.catalog import Cluster
from lightspeed.records import JsonDict, Record
from lightspeed.sol.core.efficiency import EfficiencyModel
from lightspeed.sol.core.stacks import ServingStack
from lightspeed.sol.infer.plan import InferencePlan, ServingLoad
from lightspeed.sol.serve.capacity import max_rate_at_slo
from lightspeed.sol.serve.deployment import simulated_deployment
from lightspeed.sol.serve.metrics import ServiceLevel
from lightspeed.sol.serve.mlperf import MlperfWorkload, find_mlperf_workload
from lightspeed.sol.serve.simulator import SimulationResult, simulate_deployment
from lightspeed.sol.serve.workload import ArrivalProcess, LengthDistribution, ServingWorkload
from lightspeed.sol.validation.published import PublishedRow, RowError
from lightspeed.workload import TransformerSpec

_REQUESTS: Final = re.compile(r"(\d[\d,]*)\s*(?:requests|prompts|queries)\b")
_RATE: Final = re.compile(r"(?:request[ -]rate|arrival[ -]rate|qps)\s*[=:]?\s*(\d+(?:\.\d+)?)")
_SCENARIO: Final = re.compile(r"\b(offline|server|interactive)\b")
_MLPERF: Final = re.compile(r"\bml\s*perf\b|\bloadgen\b", re.IGNORECASE)
MIN_CLOSED_REQUESTS: Final = 1000
MAX_SIMULATED_REQUESTS: Final = 20_000
CLOSED_WAVES: Final = 4
MLPERF_SIMULATED_REQUESTS: Final = 4000  # per probe: LoadGen's 24,576 samples need not all run


@dataclass(frozen=True)
class RowSimulation(Record):
    """How a load-dependent row is simulated: ``closed``, ``open``, ``offline`` (every request
    waiting) or ``capacity`` (the highest rate meeting ``slo``)."""

    mode: str
    workload: ServingWorkload
    slo: ServiceLevel | None = None
    mlperf: str = ""
    note: str = ""


def _count(text: str, default: int) -> int:
    match = _REQUESTS.search(text)
    count = int(match.group(1).replace(",", "")) if match else default
    return max(1, min(count, MAX_SIMULATED_REQUESTS * 3))


def _fixed(load: ServingLoad) -> tuple[LengthDistribution, LengthDistribution]:
    return LengthDistribution.fixed(load.input_tokens), LengthDistribution.fixed(load.output_tokens)


def loaded_row_simulation(row: PublishedRow, load: ServingLoad, batching: str) -> RowSimulation | None:
    """The simulation of a continuous-batching row at a concurrency or rate (``None`` otherwise)."""
    if batching != "continuous":
        return None
    text = row.joined().lower()
    inputs, outputs = _fixed(load)
    rate = _RATE.search(text)
    if rate is not None:
        count = _count(text, MIN_CLOSED_REQUESTS)
        workload = ServingWorkload(ArrivalProcess.poisson(float(rate.group(1))), inputs, outputs, count)
        return RowSimulation(
            "open", workload, note=f"simulated: Poisson {rate.group(1)} req/s, {count} requests"
        )
    if load.concurrency is None or load.concurrency <= 1:
        return None
    default = min(max(10 * load.concurrency, MIN_CLOSED_REQUESTS), MAX_SIMULATED_REQUESTS)
    # at most CLOSED_WAVES rounds of the concurrency: longer runs change the throughput by under 1%
    # (I101: 49,152 requests or 12,288 give 35,314 and 35,302 tokens/s) and cost the fit script time
    count = min(_count(text, default), max(CLOSED_WAVES * load.concurrency, MIN_CLOSED_REQUESTS))
    workload = ServingWorkload(ArrivalProcess.closed(load.concurrency), inputs, outputs, count)
    return RowSimulation(
        "closed",
        workload,
        note=f"simulated: closed loop of {load.concurrency} users, {count:,} requests",
    )


def names_mlperf(row: PublishedRow) -> bool:
    """Whether a cell names MLPerf (or LoadGen)."""
    return _MLPERF.search(row.joined()) is not None


def mlperf_row_simulation(
    row: PublishedRow, load: ServingLoad | None
) -> tuple[RowSimulation, MlperfWorkload]:
    """The simulation of an MLPerf row: its benchmark, scenario and lengths (see the module)."""
    text = row.joined()
    workload = find_mlperf_workload(" ".join((row.text("model"), text)))
    if workload is None:
        raise RowError("the row names MLPerf but none of its LLM benchmarks (see sol/serve/data/mlperf.toml)")
    scenarios = {match.group(1) for match in _SCENARIO.finditer(text.lower())}
    if len(scenarios) != 1:
        raise RowError(
            "an MLPerf row must name one scenario (Offline, Server or Interactive); "
            f"found {', '.join(sorted(scenarios)) or 'none'}"
        )
    scenario = scenarios.pop()
    lengths = _fixed(load) if load is not None else (None, None)
    simulated = workload.workload(
        "offline" if scenario == "offline" else "server",
        rate_per_s=1.0,
        num_requests=MLPERF_SIMULATED_REQUESTS,
        input_lengths=lengths[0],
        output_lengths=lengths[1],
    )
    slo = workload.slo(scenario)
    target = "every sample waiting" if slo is None else f"highest rate meeting {slo.describe()}"
    note = (
        f"MLPerf {workload.display_name}, {scenario}: {target}; lengths ISL "
        f"{simulated.input_lengths.describe()}, OSL {simulated.output_lengths.describe()}"
    )
    if load is None and workload.input_assumption:
        note += f" (prompt lengths: {workload.input_assumption})"
    mode = "offline" if scenario == "offline" else "capacity"
    return RowSimulation(mode, simulated, slo, workload.name, note), workload


def _metric_value(result: SimulationResult, metric: str, num_gpus: int) -> float:
    output = result.output_tokens_per_s
    values = {
        "output_tokens_per_s": output,
        "output_tokens_per_s_per_gpu": output / num_gpus,
        "output_tokens_per_s_per_user": result.output_tokens_per_s_per_user,
        "total_tokens_per_s": result.total_tokens_per_s,
        "total_tokens_per_s_per_gpu": result.total_tokens_per_s / num_gpus,
        "requests_per_s": result.requests_per_s,
        "ttft_s": result.ttft.mean_s,
        "tpot_s": result.tpot.mean_s,
        "request_latency_s": result.e2e.mean_s,
    }
    if metric not in values:
        raise RowError(f"metric {metric!r} has no simulated value")
    return values[metric]


def simulate_row(
    simulation: RowSimulation,
    *,
    model: TransformerSpec,
    cluster: Cluster,
    plan: InferencePlan,
    metric: str,
    serving: ServingStack | None,
    efficiency: EfficiencyModel | None = None,
) -> tuple[float, JsonDict]:
    """(predicted value of ``metric``, what the run reached) for a load-dependent row."""
    deployment = simulated_deployment(
        model=model, cluster=cluster, plan=plan, efficiency=efficiency, serving=serving
    )
    workload = simulation.workload
    if simulation.mode == "capacity":
        assert simulation.slo is not None
        capacity = max_rate_at_slo(deployment, workload=workload, slo=simulation.slo)
        output_mean = workload.output_lengths.mean_tokens
        rates = {
            "requests_per_s": capacity.max_rate_per_s,
            "output_tokens_per_s": capacity.max_rate_per_s * output_mean,
            "output_tokens_per_s_per_gpu": capacity.max_rate_per_s * output_mean / plan.num_gpus,
        }
        if metric not in rates:
            raise RowError(f"an MLPerf Server row's metric must be a rate (got {metric})")
        return rates[metric], {"max_rate_per_s": capacity.max_rate_per_s, "num_probes": len(capacity.probes)}
    if simulation.mode == "offline":
        workload = ServingWorkload(
            ArrivalProcess.offline(), workload.input_lengths, workload.output_lengths, workload.num_requests
        )
    result = simulate_deployment(deployment, workload)
    reached = {
        "ttft_s": result.ttft.mean_s,
        "tpot_s": result.tpot.mean_s,
        "mean_running": result.mean_running,
        "num_requests": result.num_requests,
    }
    return _metric_value(result, metric, plan.num_gpus), reached


__all__ = [
    "RowSimulation",
    "loaded_row_simulation",
    "mlperf_row_simulation",
    "names_mlperf",
    "simulate_row",
]
