"""The request-level serving simulator: requests through a scheduler, beneath the inference engine.

A discrete-event simulation of one serving deployment (Vidur's and vLLM's split
into small objects): a request generator (:mod:`~lightspeed.sol.serve.workload`),
a router over replicas and attention ranks, a replica scheduler with continuous
batching, chunked prefill, caps and preemption, a paged KV cache
(:mod:`~lightspeed.sol.serve.engine`), prefill/decode pools, speculative decoding
as an acceptance process (:mod:`~lightspeed.sol.serve.speculation`), the
execution-time model (the ``sol/infer`` iteration cost, :mod:`~lightspeed.sol.serve.timing`)
and a metrics collector (:mod:`~lightspeed.sol.serve.run_metrics`). Seeded and deterministic.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lightspeed.lazy import attach

if TYPE_CHECKING:
    from lightspeed.sol.serve.capacity_at_slo import (
        CapacityResult,
        LoadPoint,
        SteadyRates,
        UnloadedLatency,
        check_slo_reachable,
        load_sweep,
        max_rate_at_slo,
        saturation_rate,
        steady_state_rates,
        steady_state_workload,
        unloaded_latency,
    )
    from lightspeed.sol.serve.deployment import (
        KV_POLICIES,
        PREEMPTION_MODES,
        PREFILL_STEPS,
        ROUTERS,
        SchedulerConfig,
        SimulatedDeployment,
        simulated_deployment,
    )
    from lightspeed.sol.serve.goodput_search import GoodputSearchResult, RankedDeployment, search_goodput
    from lightspeed.sol.serve.load_band import ScaledRuns, band_under_load, rate_scaled, scaled_runs
    from lightspeed.sol.serve.mlperf_inference import (
        MLPERF_SCENARIOS,
        MlperfWorkload,
        find_mlperf_workload,
        load_mlperf_workload,
        load_mlperf_workloads,
    )
    from lightspeed.sol.serve.run_metrics import LatencyStats, ServiceLevel, Settling, SloResult, TimeSeries
    from lightspeed.sol.serve.simulator import SimulationResult, simulate, simulate_deployment
    from lightspeed.sol.serve.speculation import AcceptanceProcess
    from lightspeed.sol.serve.workload import (
        ARRIVAL_KINDS,
        LENGTH_KINDS,
        ArrivalProcess,
        LengthDistribution,
        RequestTrace,
        ServingWorkload,
        generate_requests,
        load_lengths,
        load_request_trace,
    )

__all__ = [
    "ARRIVAL_KINDS",
    "KV_POLICIES",
    "LENGTH_KINDS",
    "MLPERF_SCENARIOS",
    "PREEMPTION_MODES",
    "PREFILL_STEPS",
    "ROUTERS",
    "AcceptanceProcess",
    "ArrivalProcess",
    "CapacityResult",
    "GoodputSearchResult",
    "LatencyStats",
    "LengthDistribution",
    "LoadPoint",
    "MlperfWorkload",
    "RankedDeployment",
    "RequestTrace",
    "ScaledRuns",
    "SchedulerConfig",
    "ServiceLevel",
    "ServingWorkload",
    "Settling",
    "SimulatedDeployment",
    "SimulationResult",
    "SloResult",
    "SteadyRates",
    "TimeSeries",
    "UnloadedLatency",
    "band_under_load",
    "check_slo_reachable",
    "find_mlperf_workload",
    "generate_requests",
    "load_lengths",
    "load_mlperf_workload",
    "load_mlperf_workloads",
    "load_request_trace",
    "load_sweep",
    "max_rate_at_slo",
    "rate_scaled",
    "saturation_rate",
    "scaled_runs",
    "search_goodput",
    "simulate",
    "simulate_deployment",
    "simulated_deployment",
    "steady_state_rates",
    "steady_state_workload",
    "unloaded_latency",
]

if not TYPE_CHECKING:
    __getattr__, __dir__ = attach(__name__, __file__)
