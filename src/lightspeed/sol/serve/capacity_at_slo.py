"""Load against latency: sweeps of arrival rate, the highest rate a deployment sustains at an SLO.

A deployment's capacity at an SLO is DistServe's goodput (Zhong et al., OSDI
2024): the highest Poisson arrival rate at which the SLO's share of requests
(``attainment``, 90% by default; 99% for MLPerf's Server scenario) meets both
the TTFT and the TPOT limit. :func:`max_rate_at_slo` brackets it between zero
and the rate the deployment completes requests at when every request is
waiting (the simulated Offline throughput at its steady state,
:func:`steady_state_rates`) and bisects, each probe a full simulation of the
same requests' lengths on the same (cached) deployment.

>>> from lightspeed.catalog import load_catalog
>>> from lightspeed.workload import load_models
>>> from lightspeed.sol.infer.plan import InferencePlan
>>> from lightspeed.sol.serve.deployment import simulated_deployment
>>> from lightspeed.sol.serve.run_metrics import ServiceLevel
>>> from lightspeed.sol.serve.workload import LengthDistribution, ServingWorkload
>>> deployment = simulated_deployment(model=load_models().get("llama-3-8b"),
...     cluster=load_catalog().cluster("dgx-h100"), plan=InferencePlan(tp=1, precision="fp8"))
>>> workload = ServingWorkload(input_lengths=LengthDistribution.fixed(500),
...     output_lengths=LengthDistribution.fixed(100), num_requests=300)
>>> capacity = max_rate_at_slo(deployment, workload=workload, slo=ServiceLevel(ttft_s=0.5, tpot_s=0.02))
>>> 0.0 < capacity.max_rate_per_s < capacity.saturation_rate_per_s
True
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Final

from lightspeed.errors import UserInputError
from lightspeed.records import Record
from lightspeed.sol.serve.deployment import SimulatedDeployment
from lightspeed.sol.serve.run_metrics import ServiceLevel
from lightspeed.sol.serve.simulator import SimulationResult, simulate_deployment
from lightspeed.sol.serve.workload import (
    MIN_ARRIVAL_RATE_PER_S,
    ArrivalProcess,
    LengthDistribution,
    ServingWorkload,
)
from lightspeed.units import format_duration

DEFAULT_RATE_TOLERANCE: Final = 0.02  # bisect until the bracket is within 2% of the rate
MAX_PROBES: Final = 12
SWEEP_FRACTIONS: Final = (0.1, 0.25, 0.4, 0.55, 0.7, 0.8, 0.9, 0.95, 1.0)
# Steady-state runs: the shorter holds this many times what the deployment holds at once
STEADY_WAVES: Final = 3
MAX_STEADY_REQUESTS: Final = 20_000
# a limit is out of reach only where the floor exceeds it by more than float rounding: a request
# arriving at an idle deployment later than time zero has the same TTFT to the last few bits
FLOOR_RELATIVE_SLACK: Final = 1e-9


@dataclass(frozen=True)
class LoadPoint(Record):
    """One simulated arrival rate (requests per second) and what it reached (seconds, per second);
    ``settled``: whether the run kept up while it was measured
    (:class:`~lightspeed.sol.serve.run_metrics.Settling`; ``None`` for a run not at a rate).
    ``output_tokens_per_s`` is the run's own (its drain included), ``served_output_tokens_per_s``
    the output tokens per second at the rate it served
    (:attr:`~lightspeed.sol.serve.simulator.SimulationResult.served_output_tokens_per_s`; NaN: not
    recorded), the throughput of that load."""

    rate_per_s: float
    ttft_p50_s: float
    ttft_p99_s: float
    tpot_p50_s: float
    tpot_p99_s: float
    e2e_p50_s: float
    output_tokens_per_s: float
    requests_per_s: float
    attainment: float | None
    meets: bool | None
    settled: bool | None = None
    served_output_tokens_per_s: float = math.nan

    @classmethod
    def of(cls, rate_per_s: float, result: SimulationResult) -> LoadPoint:
        """The point of one run."""
        slo = result.slo
        return cls(
            rate_per_s=rate_per_s,
            ttft_p50_s=result.ttft.p50_s,
            ttft_p99_s=result.ttft.p99_s,
            tpot_p50_s=result.tpot.p50_s,
            tpot_p99_s=result.tpot.p99_s,
            e2e_p50_s=result.e2e.p50_s,
            output_tokens_per_s=result.output_tokens_per_s,
            requests_per_s=result.requests_per_s,
            attainment=None if slo is None else slo.attainment,
            meets=None if slo is None else slo.meets,
            settled=result.settled,
            served_output_tokens_per_s=result.served_output_tokens_per_s,
        )

    @property
    def sustained(self) -> bool:
        """The run met the SLO and settled (:func:`max_rate_at_slo` keeps only such a rate)."""
        return bool(self.meets) and self.settled is not False


@dataclass(frozen=True)
class SeedCheck(Record):
    """The run at the highest rate found, drawn again with another ``seed`` (other arrival times
    and lengths): its share of requests within the SLO, whether it met the SLO, whether it settled,
    and whether that rate is sustained on it (met and settled)."""

    seed: int
    attainment: float
    meets: bool
    settled: bool | None
    sustained: bool


@dataclass(frozen=True)
class CapacityResult(Record):
    """The highest rate meeting ``slo`` (0 when even the lowest probe misses it), the goodput there,
    the saturation rate that bounded the search, and every probe in the order simulated.

    The goodput (per second and per GPU) is the run's at that rate, the same seed's
    (:attr:`~lightspeed.sol.serve.run_metrics.SloResult.goodput_requests_per_s`: its share of
    requests within the SLO times the rate its arrivals came at, ``offered_requests_per_s``, a
    Poisson sample of ``max_rate_per_s``, at most the rate it served), so ``simulate
    --arrival-rate`` at that rate with that seed and warm-up shows the same goodput. It is not the
    probe's completions per second: a finite run also counts the spread of its requests' own
    lengths at the end (the last long answers finish seconds after the last arrival), which put a
    deployment that keeps up at 61.3 req/s at 51 req/s in a 2,000-request MLPerf Server run.

    The rate is one sample of the arrival process: another seed draws other arrivals and finds a
    rate a few percent away. ``seed_checks`` reruns the run at the rate found with the next seeds
    (:class:`SeedCheck`), so the output can say whether the rate holds on them. ``limited_by`` says
    what bounds the rate, from the lowest probe rejected above it (:func:`limited_by`): ``slo``
    where it missed the SLO, ``settling`` where it met the SLO but its run did not settle (the
    rejected rates are not shown to be unsustainable: a longer run may settle there), and
    ``throughput`` where no probe was rejected (every one up to the saturation rate met the SLO and
    settled: no latency limit binds, the rate is within the search's tolerance of the saturation
    rate)."""

    slo: ServiceLevel
    max_rate_per_s: float
    goodput_requests_per_s: float
    goodput_requests_per_s_per_gpu: float
    saturation_rate_per_s: float
    num_gpus: int
    probes: tuple[LoadPoint, ...]
    limited_by: str = "slo"
    offered_requests_per_s: float = math.nan  # the found run's arrivals' own rate (NaN: none found)
    seed: int = 0
    seed_checks: tuple[SeedCheck, ...] = ()


def _at_rate(
    deployment: SimulatedDeployment,
    workload: ServingWorkload,
    rate: float,
    slo: ServiceLevel | None,
    seed: int,
) -> SimulationResult:
    arrivals = (
        ArrivalProcess.gamma(rate, workload.arrivals.cv)
        if workload.arrivals.kind == "gamma"
        else (ArrivalProcess.poisson(rate))
    )
    return simulate_deployment(deployment, replace(workload, arrivals=arrivals), seed=seed, slo=slo)


@dataclass(frozen=True)
class SteadyRates(Record):
    """What a deployment completes per second with every request waiting (MLPerf's Offline), at its
    steady state (:func:`steady_state_rates`), and the two runs it is measured between."""

    requests_per_s: float
    output_tokens_per_s: float
    total_tokens_per_s: float
    short_run_requests: int
    long_run_requests: int
    short_run_output_tokens_per_s: float
    mean_running: float
    replicas: int = 1  # the runs are of one replica, each rate multiplied by this many

    @property
    def input_tokens_per_s(self) -> float:
        """Prompt tokens completed per second (the total less the output)."""
        return self.total_tokens_per_s - self.output_tokens_per_s


def held_sequences(deployment: SimulatedDeployment, workload: ServingWorkload) -> int:
    """Requests the deployment holds at once: each replica's attention ranks at their cap on
    sequences or at what their KV cache holds of requests of the workload's mean length."""
    mean_tokens = workload.input_lengths.mean_tokens + workload.output_lengths.mean_tokens
    per_rank = min(deployment.max_sequences_per_rank, deployment.kv_tokens_per_rank / max(mean_tokens, 1.0))
    replicas = max(deployment.serving_replicas, deployment.decode_replicas, 1)
    return int(per_rank * deployment.num_ranks * replicas)


def steady_state_rates(
    deployment: SimulatedDeployment, workload: ServingWorkload, seed: int = 0
) -> SteadyRates:
    """Rates with every request waiting from the start, at the steady state.

    A run of a few thousand waiting requests is mostly its ramp-up (every replica filling its
    batch) and its drain (the last requests finishing at a falling batch); a real Offline run
    (LoadGen's last at least ten minutes) or a server kept saturated is mostly steady. Runs of N
    and 2N requests (the same first N, the same ramp and a like drain; N at least
    :data:`STEADY_WAVES` times what the deployment holds at once, at most :data:`MAX_STEADY_REQUESTS`)
    differ by N requests at the steady state: each rate is that difference over the time it adds.

    Replicas that share no pool (``plan.replicas`` of an undisaggregated plan) run their waiting
    requests independently, so one replica is simulated (N of the workload's count at least, and
    at least :data:`STEADY_WAVES` times what it holds) and its rates are multiplied by their count
    (``replicas``): the bound on N then holds a steady state of one replica where the whole
    deployment's would not fit (72 GB200 in nine replicas hold 44,000 DeepSeek-R1 requests at
    once), and a deployment of many small replicas runs more waves than three (36 replicas of
    Llama 3.1 405B on 72 GB300: 39 waves of one replica where all 36 ran three, +6.7 points; the
    rate still rises past three waves: 20.3, 22.5 and 23.4 thousand tokens/s for one to three
    waves of Llama 2 70B on an MI300X)."""
    copies = deployment.serving_replicas
    one = replace(deployment, plan=deployment.plan.with_changes(replicas=1)) if copies > 1 else deployment
    held = held_sequences(one, workload)
    # the one replica runs the whole workload's count: as many sampled lengths as all of them had
    count = min(max(workload.num_requests, STEADY_WAVES * held), MAX_STEADY_REQUESTS)
    offline = replace(workload, arrivals=ArrivalProcess.offline(), num_requests=count, warmup_requests=0)
    short = simulate_deployment(one, offline, seed=seed)
    long = simulate_deployment(one, replace(offline, num_requests=2 * count), seed=seed)
    added_s = long.duration_s - short.duration_s
    scale = max(copies, 1)

    def steady(field: str) -> float:
        added = getattr(long, field) * long.duration_s - getattr(short, field) * short.duration_s
        # (both are positive for any finite rate; else the long run's own mean)
        rate = added / added_s if added_s > 0.0 and added > 0.0 else float(getattr(long, field))
        return rate * scale

    return SteadyRates(
        requests_per_s=steady("requests_per_s"),
        output_tokens_per_s=steady("output_tokens_per_s"),
        total_tokens_per_s=steady("total_tokens_per_s"),
        short_run_requests=short.num_requests,
        long_run_requests=long.num_requests,
        short_run_output_tokens_per_s=short.output_tokens_per_s * scale,
        mean_running=long.mean_running * scale,
        replicas=scale,
    )


def _check_no_trace(workload: ServingWorkload, what: str) -> None:
    """Refuse a rate search over a replayed trace: the trace keeps its own arrival times."""
    if workload.trace is not None:
        raise UserInputError(
            f"{what} varies the arrival rate, but a replayed trace keeps its own arrival times; "
            "drop --trace (its lengths can come in as --isl-dist/--osl-dist file:PATH:COLUMN) or "
            "drop --max-rate-at-slo/--sweep"
        )


@dataclass(frozen=True)
class UnloadedLatency(Record):
    """The TTFT and TPOT (seconds) of the workload's shortest request (``input_tokens`` prompt,
    ``output_tokens`` output) alone on an idle deployment: under any load a request waits for or
    shares its iterations with others, so no arrival rate brings a request below them. ``tpot_s``
    is NaN for a one-token output (no decode step)."""

    ttft_s: float
    tpot_s: float
    input_tokens: int
    output_tokens: int

    def describe(self) -> str:
        """``one request of 500 prompt and 200 output tokens alone``."""
        return f"one request of {self.input_tokens:,} prompt and {self.output_tokens:,} output tokens alone"


def unloaded_latency(
    deployment: SimulatedDeployment, workload: ServingWorkload, seed: int = 0
) -> UnloadedLatency:
    """The latency floor of ``workload`` on ``deployment`` (:class:`UnloadedLatency`): one request
    of its shortest lengths (a fixed length itself, else the lower bound), simulated alone with the
    workload's prefix hits (the same scheduler, timer and P/D transfer as every probe of a search)."""
    shortest = (workload.input_lengths.shortest_tokens, workload.output_lengths.shortest_tokens)
    alone = replace(
        workload,
        arrivals=ArrivalProcess.offline(),
        input_lengths=LengthDistribution.fixed(shortest[0]),
        output_lengths=LengthDistribution.fixed(shortest[1]),
        num_requests=1,
        warmup_requests=0,
        trace=None,
    )
    result = simulate_deployment(deployment, alone, seed=seed)
    return UnloadedLatency(
        ttft_s=result.ttft.p50_s,
        tpot_s=result.tpot.p50_s,
        input_tokens=shortest[0],
        output_tokens=shortest[1],
    )


def check_slo_reachable(
    deployment: SimulatedDeployment,
    workload: ServingWorkload,
    slo: ServiceLevel,
    *,
    source: str = "the SLO",
    seed: int = 0,
) -> UnloadedLatency:
    """Refuse an SLO with a limit under the deployment's unloaded floor (:func:`unloaded_latency`),
    which no arrival rate meets, before a search spends its probes finding a rate of 0; ``source``
    names the SLO in the message (``--slo``). Under speculative decoding a request's TPOT depends on
    its drafts' acceptance draws, so only the TTFT limit is checked there. A trace is refused as
    :func:`max_rate_at_slo` refuses it. Returns the floor."""
    _check_no_trace(workload, "the highest rate at an SLO")
    floor = unloaded_latency(deployment, workload, seed=seed)
    tpot_floor = math.nan if deployment.speculation is not None else floor.tpot_s
    missed = [
        (name, limit, floor_s)
        for name, limit, floor_s in (("ttft", slo.ttft_s, floor.ttft_s), ("tpot", slo.tpot_s, tpot_floor))
        if limit is not None and math.isfinite(floor_s) and floor_s > limit * (1.0 + FLOOR_RELATIVE_SLACK)
    ]
    if not missed:
        return floor
    limits = ",".join(f"{name}={_duration_text(limit)}" for name, limit, _ in missed)
    floors = " and ".join(f"{name.upper()} of {format_duration(floor_s)}" for name, _, floor_s in missed)
    raised = " and ".join(f"{name} above {format_duration(floor_s)}" for name, _, floor_s in missed)
    shorter = ", or shorter prompts (--isl)" if any(name == "ttft" for name, _, _ in missed) else ""
    verb, it = ("is", "it") if len(missed) == 1 else ("are", "them")
    raise UserInputError(
        f"{source} {limits} {verb} under this deployment's unloaded {floors} ({floor.describe()}): no "
        f"arrival rate meets {it}; raise {raised}, or give a faster deployment (e.g. a higher --tp, a "
        f"lower --precision){shorter}"
    )


def _duration_text(duration_s: float) -> str:
    """A limit as ``--slo`` reads it back: ``1ns``, ``50ms``."""
    return format_duration(duration_s).replace(" ", "")


def steady_state_workload(deployment: SimulatedDeployment, workload: ServingWorkload) -> ServingWorkload:
    """``workload`` measured at its steady state, as LoadGen measures a Server or Interactive run.

    LoadGen's runs last at least ten minutes (``min_duration``; NVIDIA's Mixtral Server runs
    forty), so the first seconds, while an empty deployment fills up, weigh nothing in them; a
    simulated run of a few thousand requests at the same rate is mostly that ramp-up, and its
    batch never reaches the size the rate holds at the steady state (near capacity its TPOT and
    TTFT come out a third to a half of the steady values). The first requests, as many as the
    deployment holds at once (:func:`held_sequences`: at least one turnover of everything in
    flight, since the steady in-flight count cannot exceed it), at most
    :data:`MAX_STEADY_REQUESTS`, warm it up and are not measured (``warmup_requests``); at least as
    many again, and at least ``workload``'s own count, are. A workload with a warm-up of its own
    keeps it."""
    if workload.warmup_requests or workload.trace is not None:
        return workload  # a replayed trace is the run it records
    warmup = min(held_sequences(deployment, workload), MAX_STEADY_REQUESTS)
    measured = max(workload.num_requests, warmup)
    return replace(workload, num_requests=warmup + measured, warmup_requests=warmup)


def saturation_rate(deployment: SimulatedDeployment, workload: ServingWorkload, seed: int = 0) -> float:
    """Requests per second the deployment completes with every request waiting, at the steady
    state (:func:`steady_state_rates`)."""
    return steady_state_rates(deployment, workload, seed).requests_per_s


def max_rate_at_slo(
    deployment: SimulatedDeployment,
    *,
    workload: ServingWorkload,
    slo: ServiceLevel,
    seed: int = 0,
    tolerance: float = DEFAULT_RATE_TOLERANCE,
    steady: bool = True,
    seed_checks: int = 0,
    check_floor: bool = False,
    slo_source: str = "the SLO",
) -> CapacityResult:
    """Bisect for the highest arrival rate whose run meets ``slo`` and settled (see the module
    docstring; a run that did not settle, :class:`~lightspeed.sol.serve.run_metrics.Settling`, is
    not a rate sustained).
    ``workload`` gives the lengths and the number of requests per probe (its arrivals are
    replaced by Poisson ones, or gamma ones with its CV). A rate a deployment *sustains* is a
    steady-state question, so each probe is measured after a warm-up
    (:func:`steady_state_workload`) unless ``steady`` is off: from an empty start the batch never
    grows to what the rate holds, and where a TPOT limit binds the capacity came out 7-11% high
    (Llama 3 70B on 8 H100 and 8B on one, 2,000/200 and 500/200 tokens). The rate found is one
    sample of the arrivals: ``seed_checks`` more seeds (``seed + 1`` on) rerun the run at it
    (:class:`SeedCheck`; ``simulate --max-rate-at-slo`` asks for two). ``check_floor`` refuses a
    limit under the deployment's unloaded latency before any probe (:func:`check_slo_reachable`,
    the SLO named ``slo_source``); without it such an SLO is searched and its rate is 0 (a ranking
    of deployments keeps the ones that miss it)."""
    if not 0.0 < tolerance < 1.0:
        raise UserInputError(f"rate tolerance {tolerance} must be in (0, 1)")
    if seed_checks < 0:
        raise UserInputError(f"seed checks {seed_checks} must be 0 or more")
    _check_no_trace(workload, "the highest rate at an SLO")
    if check_floor:
        check_slo_reachable(deployment, workload, slo, source=slo_source, seed=seed)
    if steady:
        workload = steady_state_workload(deployment, workload)
    ceiling = saturation_rate(deployment, workload, seed)
    low, high, best = 0.0, ceiling, None
    probes: list[LoadPoint] = []
    for _ in range(MAX_PROBES):
        rate = (low + high) / 2.0
        if rate < MIN_ARRIVAL_RATE_PER_S:  # below one request a century no rate is left to try
            break
        result = _at_rate(deployment, workload, rate, slo, seed)
        assert result.slo is not None
        probes.append(LoadPoint.of(rate, result))
        if _sustained(result):
            low, best = rate, result
        else:
            high = rate
        if high - low <= tolerance * max(low, 1e-9):
            break
    # the found run's own goodput: what simulate at that rate, seed and warm-up shows
    found = None if best is None else best.slo
    goodput = 0.0 if found is None else found.goodput_requests_per_s
    gpus = deployment.plan.num_gpus
    checks = seed_checks_at(deployment, workload, low, slo, seed=seed, count=seed_checks if best else 0)
    return CapacityResult(
        slo=slo,
        max_rate_per_s=low,
        goodput_requests_per_s=goodput,
        goodput_requests_per_s_per_gpu=goodput / gpus,
        saturation_rate_per_s=ceiling,
        num_gpus=gpus,
        probes=tuple(probes),
        limited_by=limited_by(probes, low),
        offered_requests_per_s=math.nan if found is None else found.offered_requests_per_s,
        seed=seed,
        seed_checks=checks,
    )


# what bounds the highest rate at an SLO (CapacityResult.limited_by)
LIMITED_BY_SLO: Final = "slo"
LIMITED_BY_SETTLING: Final = "settling"
LIMITED_BY_THROUGHPUT: Final = "throughput"


def limited_by(probes: Sequence[LoadPoint], rate_per_s: float) -> str:
    """What bounds the rate found (``rate_per_s``): the lowest probe above it, rejected, missed the
    SLO (``slo``) or met it without settling (``settling``); none rejected, the search rose to the
    saturation rate (``throughput``). A search with no probe is ``slo`` (no rate found)."""
    if not probes:
        return LIMITED_BY_SLO
    rejected = [probe for probe in probes if probe.rate_per_s > rate_per_s and not probe.sustained]
    if not rejected:
        return LIMITED_BY_THROUGHPUT if all(probe.meets for probe in probes) else LIMITED_BY_SLO
    bound = min(rejected, key=lambda probe: probe.rate_per_s)
    return LIMITED_BY_SETTLING if bound.meets else LIMITED_BY_SLO


def seed_checks_at(
    deployment: SimulatedDeployment,
    workload: ServingWorkload,
    rate: float,
    slo: ServiceLevel,
    *,
    seed: int,
    count: int,
) -> tuple[SeedCheck, ...]:
    """The run at ``rate`` (``workload``'s requests as they are: no warm-up is added) drawn again
    with seeds ``seed + 1`` to ``seed + count`` (:class:`SeedCheck`)."""
    checks = []
    for other in range(seed + 1, seed + 1 + count):
        result = _at_rate(deployment, workload, rate, slo, other)
        assert result.slo is not None
        checks.append(
            SeedCheck(
                seed=other,
                attainment=result.slo.attainment,
                meets=result.slo.meets,
                settled=result.settled,
                sustained=_sustained(result),
            )
        )
    return tuple(checks)


def _sustained(result: SimulationResult) -> bool:
    """A probe's rate is sustained where its run meets the SLO and settled: a run still falling
    behind (or draining) while measured shows latencies of a queue not yet grown (a lower bound)."""
    assert result.slo is not None
    return result.slo.meets and result.settled is not False


def load_sweep(
    deployment: SimulatedDeployment,
    *,
    workload: ServingWorkload,
    rates: tuple[float, ...] | None = None,
    slo: ServiceLevel | None = None,
    seed: int = 0,
    steady: bool = True,
) -> tuple[LoadPoint, ...]:
    """Latency and throughput at each of ``rates`` (default: fractions of the saturation rate
    from 10% to 100%), for a latency-versus-load figure; each point at its steady state
    (:func:`steady_state_workload`) unless ``steady`` is off."""
    _check_no_trace(workload, "a latency-load sweep")
    if steady:
        workload = steady_state_workload(deployment, workload)
    chosen = rates
    if chosen is None:
        ceiling = saturation_rate(deployment, workload, seed)
        chosen = tuple(ceiling * fraction for fraction in SWEEP_FRACTIONS)
    return tuple(LoadPoint.of(rate, _at_rate(deployment, workload, rate, slo, seed)) for rate in chosen)


__all__ = [
    "LIMITED_BY_SETTLING",
    "LIMITED_BY_SLO",
    "LIMITED_BY_THROUGHPUT",
    "CapacityResult",
    "LoadPoint",
    "SeedCheck",
    "SteadyRates",
    "UnloadedLatency",
    "check_slo_reachable",
    "held_sequences",
    "limited_by",
    "load_sweep",
    "max_rate_at_slo",
    "saturation_rate",
    "seed_checks_at",
    "steady_state_rates",
    "unloaded_latency",
]
