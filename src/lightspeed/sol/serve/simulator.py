"""``simulate``: one serving deployment under one workload, request by request.

>>> from lightspeed.catalog import load_catalog
>>> from lightspeed.workload import load_models
>>> from lightspeed.sol.infer.plan import InferencePlan
>>> result = simulate(model=load_models().get("llama-3-8b"), cluster=load_catalog().cluster("dgx-h100"),
...     plan=InferencePlan(tp=1, replicas=8, precision="fp8"),
...     workload=ServingWorkload(arrivals=ArrivalProcess.poisson(20.0), num_requests=200,
...         input_lengths=LengthDistribution.fixed(1000), output_lengths=LengthDistribution.fixed(200)))
>>> result.num_completed, 0.0 < result.ttft.p50_s < 1.0
(200, True)
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lightspeed.catalog import Cluster
from lightspeed.errors import InvalidPlanError, UserInputError
from lightspeed.limits import check_kind, check_number, check_whole
from lightspeed.records import JsonDict, Record
from lightspeed.sol.core.efficiency import EfficiencyModel
from lightspeed.sol.core.serving_stacks import ServingStack
from lightspeed.sol.infer.estimate_notes import routing_note, state_note
from lightspeed.sol.infer.plan import InferencePlan
from lightspeed.sol.serve.deployment import SchedulerConfig, SimulatedDeployment, simulated_deployment
from lightspeed.sol.serve.engine import Engine, EngineOutput
from lightspeed.sol.serve.run_metrics import (
    LatencyStats,
    ServiceLevel,
    Settling,
    SloResult,
    TimeSeries,
    in_flight_mean,
    offered_rate,
    settling,
    slo_result,
    time_series,
    weighted_percentile,
)
from lightspeed.sol.serve.speculation import AcceptanceProcess
from lightspeed.sol.serve.workload import (
    RATE_ARRIVALS,
    ArrivalProcess,
    LengthDistribution,
    Requests,
    ServingWorkload,
    generate_requests,
)
from lightspeed.units import format_duration
from lightspeed.workload import TransformerSpec

Array = Any


@dataclass(frozen=True)
class SimulationResult(Record):
    """What one simulated run reached (times in seconds, rates per second).

    ``output_tokens_per_s_per_user`` is the mean over requests of their decode speed
    (``1 / TPOT``); ``mean_in_flight`` counts measured requests arrived and not completed (the
    warm-up's left out, so it is the measured throughput times their mean latency: Little's law),
    ``mean_running`` / ``max_running`` sequences admitted to a batch, ``mean_queue`` /
    ``max_queue`` requests waiting for admission (time-weighted over iterations, each one's queue
    its mean over it: the requests arriving during it counted from when they came; the maximum the
    most waiting at an iteration's start or end);
    ``max_kv_use`` is the fullest rank's share of its KV cache. ``settling`` (arrivals at a rate,
    not a replayed trace; else ``None``) says whether the run reached its steady state while it
    was measured (:class:`~lightspeed.sol.serve.run_metrics.Settling`). With attention data
    parallelism, ``attention_dp_balance`` is TensorRT-LLM's balance ratio (the ranks' mean
    tokens over the busiest rank's, per iteration, averaged over iterations; 1 without it) and
    ``attention_dp_balanced_speedup`` what perfect balance would gain: the run's busy time over
    the same iterations' time with each one's tokens spread as evenly over the ranks as whole
    sequences allow, priced by the iteration cost (the weights and experts are read either way,
    so a lone sequence gains nothing; TensorRT-LLM's "SOL TPS" of its tech blog 10 instead scales
    each iteration's time by its balance ratio, which would have one sequence on 8 ranks 8x
    faster). ``slo`` is filled when an SLO was given. ``elapsed_s`` is the
    wall time the simulation took. ``requests_per_s`` counts the measured completions from the
    first measured arrival to the last completion (the drain after the last arrival included);
    ``served_requests_per_s`` is the rate the deployment serves, the rate the SLO's goodput is a
    share of: for requests that arrive over time (:func:`_open_loop_rate`), the rate they arrived
    at (:func:`~lightspeed.sol.serve.run_metrics.offered_rate`) where the run kept up (it settled),
    else the lower of that and the higher of two measures of its capacity: the rate the run
    completed requests at over its whole busy span (every completion, warm-up ones included, from
    the first arrival to the last completion or the horizon: a deployment that falls behind is busy
    throughout), and the rate requests flowed through decoding from the first completion to the last
    measured arrival (:func:`_decode_flow_rate`: the ramp and the drain left out); for
    a closed loop, the rate while every user is busy (:func:`_closed_loop_rate`: Little's law, the
    users over their mean latency, the start's queue and the drain left out). It is never below
    ``requests_per_s`` and otherwise never above ``offered_requests_per_s`` (at a light load, each
    request done before the next arrives, the completions read above the arrivals:
    :func:`_open_loop_rate`), the rate the measured requests arrived at (their count after the
    first over the span of their arrivals; NaN for a closed loop, whose users send as fast as they
    are served, and where fewer than two arrived). ``output_tokens_per_s`` is the measured
    completions' output tokens over the same span as ``requests_per_s`` (the drain included: a
    2,000-request MLPerf Server run at 80 req/s shows 18.0 thousand tokens/s over a span mostly
    drain), ``served_output_tokens_per_s`` the output tokens per second at the rate served:
    ``served_requests_per_s`` times the mean output tokens of the measured completions (23.9
    thousand there; NaN where none completed), the throughput of the load the run was offered.
    With ``num_warmup`` warm-up requests (the
    workload's ``warmup_requests``), the latencies, throughputs, decode speed and SLO figures
    count the other requests only, and the load figures (``mean_in_flight``, ``mean_running``,
    ``max_running``, ``mean_queue``, ``max_queue``, ``max_kv_use``) and the time series cover the
    measured window, from the first of them to arrive to the end (ITL: the iterations from then
    on); ``mean_in_flight`` is averaged over the wall time of that window, ``mean_running`` and
    ``mean_queue`` over its iterations' time (the time the GPUs are busy). The counts (requests,
    completions, preemptions, iterations) are the whole run's.
    """

    model: str
    system: str
    num_gpus: int
    plan: InferencePlan
    workload: ServingWorkload
    scheduler: SchedulerConfig
    serving: str
    seed: int
    num_requests: int
    num_arrived: int
    num_completed: int
    num_in_flight: int
    duration_s: float
    ttft: LatencyStats
    tpot: LatencyStats
    itl: LatencyStats
    e2e: LatencyStats
    requests_per_s: float
    output_tokens_per_s: float
    output_tokens_per_s_per_gpu: float
    output_tokens_per_s_per_user: float
    total_tokens_per_s: float
    mean_in_flight: float
    mean_running: float
    max_running: float
    mean_queue: float
    max_queue: float
    max_kv_use: float
    num_preemptions: int
    num_swaps: int
    num_iterations: int
    attention_dp_balance: float
    attention_dp_balanced_speedup: float
    num_cost_evaluations: int
    elapsed_s: float
    slo: SloResult | None
    series: TimeSeries
    assumptions: tuple[str, ...]
    num_warmup: int = 0
    settling: Settling | None = None
    served_requests_per_s: float = math.nan
    offered_requests_per_s: float = math.nan
    served_output_tokens_per_s: float = math.nan
    _outcome: EngineOutput | None = field(default=None, repr=False, compare=False)

    @property
    def settled(self) -> bool | None:
        """Whether the run kept up while it was measured (:attr:`settling`; ``None`` for a run not
        at a rate)."""
        return None if self.settling is None else self.settling.settled

    @property
    def outcome(self) -> EngineOutput:
        """Per-request and per-iteration arrays of the run."""
        assert self._outcome is not None
        return self._outcome

    def percentile_s(self, latency: str, percentile: float) -> float:
        """The ``percentile`` (0-100) of ``latency``, seconds (any percentile, not only the
        reported p50/p90/p99): ``ttft``, ``tpot`` or ``e2e`` over the requests that have it,
        ``itl`` over every gap between two tokens of a stream (as :attr:`itl` weighs them)."""
        if not 0.0 <= percentile <= 100.0:
            raise UserInputError(f"percentile {percentile} is not in 0..100")
        if latency == "itl":
            outcome = self.outcome
            counted = outcome.iteration_start_s >= _measured_start(outcome, self.num_warmup)
            return weighted_percentile(*_inter_token_gaps(outcome, counted), percentile)
        per_request = dict(zip(("ttft", "tpot", "e2e"), _per_request(self.outcome), strict=True))
        if latency not in per_request:
            raise UserInputError(f"latency {latency!r} is not one of ttft, tpot, itl, e2e")
        values = per_request[latency]
        values = values[np.isfinite(values)]
        return float(np.percentile(values, percentile)) if values.size else math.nan

    def summary(self) -> JsonDict:
        """The headline figures (the first keys of ``simulate --json``)."""
        return {
            "ttft_p50_s": self.ttft.p50_s,
            "ttft_p99_s": self.ttft.p99_s,
            "tpot_p50_s": self.tpot.p50_s,
            "tpot_p99_s": self.tpot.p99_s,
            "e2e_p50_s": self.e2e.p50_s,
            "output_tokens_per_s": self.output_tokens_per_s,
            "output_tokens_per_s_per_gpu": self.output_tokens_per_s_per_gpu,
            "served_output_tokens_per_s": self.served_output_tokens_per_s,
            "requests_per_s": self.requests_per_s,
            "slo_attainment": None if self.slo is None else self.slo.attainment,
            "goodput_requests_per_s": None if self.slo is None else self.slo.goodput_requests_per_s,
        }


def _balanced_speedup(iteration_s: Array, balanced_s: Array) -> float:
    """What perfect attention-DP balance would gain: the iterations' seconds over their seconds
    with each one's tokens spread evenly over the ranks, priced by the iteration cost
    (``EngineOutput.iteration_balanced_s``, priced on a regular sample of the iterations: NaN on
    the others, left out of both sums; 1 for no iterations or a balanced run).

    >>> _balanced_speedup(np.array([1.0, 1.0, 3.0]), np.array([1.0, 0.5, np.nan]))
    1.3333333333333333
    """
    priced = np.isfinite(balanced_s)
    balanced = float(np.sum(balanced_s[priced]))
    return float(np.sum(iteration_s[priced])) / balanced if balanced > 0 else 1.0


def _check_fits(deployment: SimulatedDeployment, requests: Requests) -> None:
    """Every request must fit one rank's KV cache alone, or it could never run: the most its
    layers hold on the way to its length (a sliding-window or chunked layer never more than its
    span), in tokens of a short sequence, rounded up to whole blocks."""
    longest = int((requests.input_tokens + requests.output_tokens).max())
    block = deployment.scheduler.block_tokens
    if _blocks_of(deployment.kv_reserved_tokens(longest), block) > deployment.kv_tokens_per_rank:
        raise InvalidPlanError(
            f"a request of {longest:,} tokens (prompt + output) does not fit the KV cache of one rank of "
            f"{deployment.plan.describe()} ({deployment.kv_tokens_per_rank:,} tokens); shorten the requests, "
            "use more GPUs per replica, or a narrower KV format"
        )
    prefill = deployment.prefill_pool
    prompt = int(requests.input_tokens.max())
    if (
        prefill is not None
        and _blocks_of(deployment.kv_reserved_tokens(prompt), block) > prefill.kv_tokens_per_rank
    ):
        raise InvalidPlanError(
            f"a prompt of {prompt:,} tokens does not fit the KV cache of one rank of the prefill pool "
            f"({prefill.kv_tokens_per_rank:,} tokens); shorten the prompts or give the prefill pool more "
            "GPUs (--prefill-tp, --prefill-pp)"
        )
    _check_whole_prompts(deployment, prompt)


def _check_whole_prompts(deployment: SimulatedDeployment, prompt: int) -> None:
    """A server that takes prompts only whole in steps of their own (vLLM V0 without chunked
    prefill) cannot run a prompt longer than its tokens per step: V0 refuses to start with
    ``max_num_batched_tokens`` below ``max_model_len`` and ignores a longer prompt
    (``vllm/config.py``, ``vllm/core/scheduler.py`` ``_get_prompt_limit``)."""
    budget = (deployment.prefill_pool or deployment.pool).max_batched_tokens_per_rank
    if not deployment.whole_prompts or prompt <= budget:
        return
    serving = deployment.hardware.serving.name
    given = deployment.scheduler.max_batched_tokens_per_rank is not None
    source = "--max-num-batched-tokens" if given else f"{serving}'s default for this model"
    why = "--prefill-steps separate" if deployment.scheduler.prefill_steps else f"{serving}'s default here"
    raise InvalidPlanError(
        f"a prompt of {prompt:,} tokens is longer than the {budget:,} tokens per step ({source}) of "
        f"prefill steps that take prompts only whole ({why}; vLLM V0 refuses such a prompt); raise "
        f"--max-num-batched-tokens to at least {prompt:,}, or use --prefill-steps mixed (chunked prefill)"
    )


def _blocks_of(tokens: float, block: int) -> int:
    """``tokens`` rounded up to whole KV blocks of ``block`` tokens."""
    return math.ceil(tokens / block) * block


def _sequence_cap(deployment: SimulatedDeployment) -> str:
    block = deployment.scheduler.block_tokens
    if (deployment.max_sequences_per_rank + 1) * block > deployment.kv_tokens_per_rank:
        return "as many sequences as the KV cache holds"
    return f"up to {_counted(deployment.max_sequences_per_rank, 'sequence')}"


def _counted(count: int, noun: str) -> str:
    """``1 token``, ``8,192 tokens``.

    >>> _counted(1, "token"), _counted(8192, "token")
    ('1 token', '8,192 tokens')
    """
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def _prefill_steps_note(deployment: SimulatedDeployment) -> str:
    """How the scheduler takes prompts, and why (the user's choice or the serving stack's default)."""
    if not deployment.separate_prefill:
        return "chunked prefill"
    serving = deployment.hardware.serving
    if deployment.scheduler.prefill_steps is not None:
        why = "--prefill-steps separate"
    elif serving.mla_separate_steps and deployment.model.attention.kind == "mla":
        why = f"{serving.name} turns chunked prefill off for MLA models"
    elif serving.mixed_steps_above_context:
        vendor = deployment.hardware.hardware.accelerator.vendor
        context = deployment.model.max_seq_len
        why = f"{serving.name}'s default for a context of {context:,} tokens on {vendor} GPUs"
    else:
        why = f"{serving.name}'s default"
    prompts = "whole prompts" if deployment.whole_prompts else "prompt chunks"
    return f"{prompts} in steps of their own that pause every decode: {why}"


def _assumptions(deployment: SimulatedDeployment, workload: ServingWorkload) -> tuple[str, ...]:
    config = deployment.scheduler
    steps = _prefill_steps_note(deployment)
    lines = [
        f"scheduler: continuous batching, {_sequence_cap(deployment)} and "
        f"{_counted(deployment.max_batched_tokens_per_rank, 'token')} per iteration per rank ({steps}), "
        f"KV cache {deployment.kv_tokens_per_rank:,} tokens per rank in {config.block_tokens}-token blocks, "
        f"{deployment.kv_policy} allocation"
        + (f", preemption by {config.preemption}" if deployment.kv_policy == "on-demand" else ""),
        f"router: {config.router} over replicas and attention ranks",
        "iteration time: the inference engine's iteration cost of the batch each iteration forms "
        "(cached by shape: context and prompt tokens within 2.2%)",
    ]
    if deployment.timer.overlap:
        lines.append(
            f"overlap scheduler ({deployment.hardware.serving.name}): the host forms each iteration while "
            "the GPU runs the one before, so a request that arrives during a step joins the iteration "
            "after the next (one extra step before its first token under load)"
        )
    if workload.trace is not None and workload.trace.describe_arrivals():
        lines.append(workload.trace.describe_arrivals())
    if workload.arrivals.kind == "closed":
        lines.append(
            "closed loop: the users start one after another (an idle replica runs the first request "
            "alone, the others wait for that iteration); each sends its next request when its last completes"
        )
    if deployment.num_ranks > 1:
        lines.append(
            f"attention data parallelism: {deployment.num_ranks} ranks; each iteration runs at the pace of "
            "the busiest rank (where requests land), times the serving stack's fitted attention_dp_efficiency"
        )
    lines.extend(routing_note(deployment.model, deployment.hardware, deployment.plan))
    lines.extend(state_note(deployment.model))
    if deployment.speculation is not None:
        process = deployment.speculation
        lines.append(
            "speculative decoding: acceptance per draft position "
            + ", ".join(f"{rate:g}" for rate in process.acceptance)
            + f" ({process.expected_tokens_per_pass:.2f} tokens per verify pass on average, drawn per "
            f"sequence), a draft step at {process.draft_cost_fraction:.0%} of a decode step"
        )
    if deployment.plan.disaggregated is not None:
        shape = deployment.plan.prefill_shape
        lines.append(
            (
                ""
                if shape is None
                else f"prefill pool of its own shape ({shape.describe()}; its ranks, KV cache and "
                "iteration cost its own); "
            )
            + "disaggregated: prompts prefill in the prefill pool, their KV cache crosses "
            + ("the scale-out network" if deployment.transfer_crosses_domains else "the scale-up domain")
            + " to the decode pool; the first token reaches the user when the decode pool takes the sequence"
        )
    return tuple(lines)


def simulate_deployment(
    deployment: SimulatedDeployment,
    workload: ServingWorkload,
    *,
    seed: int = 0,
    slo: ServiceLevel | None = None,
    requests: Requests | None = None,
    horizon_s: float | None = None,
) -> SimulationResult:
    """Run ``workload`` (or pre-drawn ``requests``) through an already built deployment (its
    iteration-cost cache is reused: sweeps of many rates build it once); with ``horizon_s``,
    stop at that time and count the requests still in flight."""
    check_kind(
        "deployment", deployment, SimulatedDeployment, "lightspeed.sol.serve.simulated_deployment(...)"
    )
    _check_run(workload=workload, seed=seed, slo=slo, horizon_s=horizon_s)
    check_kind(
        "requests",
        requests,
        (Requests, _OR_NONE),
        "lightspeed.sol.serve.generate_requests(workload, seed=seed); None: drawn from the workload",
        what="Requests or None",
    )
    drawn = requests if requests is not None else generate_requests(workload, seed=seed)
    _check_fits(deployment, drawn)
    clock = time.perf_counter()
    outcome = Engine(deployment, drawn, seed).run(math.inf if horizon_s is None else horizon_s)
    return _result(
        deployment,
        workload,
        outcome,
        seed=seed,
        slo=slo,
        elapsed_s=time.perf_counter() - clock,
        horizon_s=horizon_s,
    )


def _inter_token_gaps(outcome: EngineOutput, counted: Array) -> tuple[Array, Array]:
    """(gap, weight) of the gaps between a sequence's tokens, weighted by the sequences that see
    them: a decode iteration's steps share its time evenly, and its first step also carries the
    pause of the prompt-only steps just before it (separate prefill steps) for the sequences that
    pause held back (one whose prompt ran in it waited only for the steps after its own: counted
    as not held, the held count as the pause's sequence-seconds over its length, so the gaps add
    up to the requests' decode times); prompt-only steps make no gap."""
    steps = outcome.iteration_steps[counted]
    decoding = outcome.iteration_decode_sequences[counted]
    held = outcome.iteration_paused_sequences[counted]
    with np.errstate(invalid="ignore", divide="ignore"):
        gap = outcome.iteration_s[counted] / steps
    values = np.concatenate((gap + outcome.iteration_pause_s[counted], gap, gap))
    weights = np.concatenate((held, decoding - held, decoding * np.maximum(steps - 1.0, 0.0)))
    return values, weights


def _inter_token_latency(outcome: EngineOutput, counted: Array) -> LatencyStats:
    """Statistics of :func:`_inter_token_gaps`."""
    return LatencyStats.of(*_inter_token_gaps(outcome, counted))


def _measured_start(outcome: EngineOutput, num_warmup: int) -> float:
    """When the measured part of a run starts: the first arrival after ``num_warmup`` warm-up
    requests (the first arrival when every request is a warm-up one)."""
    counted_arrivals = outcome.arrival_s[_measured(outcome.arrival_s, num_warmup)]
    first = counted_arrivals if np.isfinite(counted_arrivals).any() else outcome.arrival_s
    return float(np.nanmin(first))


def _per_request(outcome: EngineOutput) -> tuple[Array, Array, Array]:
    """(TTFT, TPOT, end-to-end) per request; TPOT is NaN for one-token outputs."""
    ttft = outcome.first_token_s - outcome.arrival_s
    decoded = outcome.output_tokens - 1
    with np.errstate(invalid="ignore", divide="ignore"):
        tpot = np.where(decoded > 0, (outcome.finish_s - outcome.first_token_s) / decoded, np.nan)
    return ttft, tpot, outcome.finish_s - outcome.arrival_s


def _steps_run_by(outcome: EngineOutput, horizon_s: float | None) -> Array:
    """The steps of each iteration record that ended by ``horizon_s`` (all without one; a separate
    prompt step counts one): a fused multi-step decode record that started before the horizon holds
    every step it would run, and its steps share its time evenly, the k-th ending ``k / steps`` of
    the way through it; a step ending at the horizon counts.

    >>> from types import SimpleNamespace
    >>> record = SimpleNamespace(
    ...     iteration_steps=np.array([0.0, 1024.0]),
    ...     iteration_start_s=np.array([0.0, 0.1]),
    ...     iteration_s=np.array([0.05, 10.24]),
    ... )
    >>> _steps_run_by(record, 0.5).tolist(), _steps_run_by(record, None).tolist()
    ([1.0, 40.0], [1.0, 1024.0])
    """
    steps = np.maximum(outcome.iteration_steps, 1.0)
    if horizon_s is None:
        return steps
    with np.errstate(invalid="ignore", divide="ignore"):
        # a relative slack of 1e-9 keeps a step that ends at the horizon, rounding apart
        done = np.floor((horizon_s - outcome.iteration_start_s) * steps / outcome.iteration_s + 1e-9)
    instant = outcome.iteration_s <= 0.0  # no time to share: all its steps end when it starts
    done = np.where(instant, np.where(outcome.iteration_start_s <= horizon_s, steps, 0.0), done)
    return np.clip(done, 0.0, steps)


def _result(
    deployment: SimulatedDeployment,
    workload: ServingWorkload,
    outcome: EngineOutput,
    *,
    seed: int,
    slo: ServiceLevel | None,
    elapsed_s: float,
    horizon_s: float | None = None,
) -> SimulationResult:
    plan = deployment.plan
    measured = _measured(outcome.arrival_s, workload.warmup_requests)
    ttft, tpot, e2e = (values[measured] for values in _per_request(outcome))
    finished = np.isfinite(outcome.finish_s)
    completed = finished & measured
    start = _measured_start(outcome, workload.warmup_requests)
    if horizon_s is not None:
        end = horizon_s
    else:
        end = float(np.nanmax(outcome.finish_s)) if finished.any() else start
    arrived = np.isfinite(outcome.arrival_s) & (outcome.arrival_s <= end)
    duration = max(end - start, 1e-12)
    output_tokens = float(outcome.output_tokens[completed].sum())
    total_tokens = output_tokens + float(outcome.input_tokens[completed].sum())
    ttft_stats, tpot_stats = LatencyStats.of(ttft), LatencyStats.of(tpot)
    # the SLO scores every measured request the run offered (arrived by its end), finished or not
    scored = measured & arrived
    if horizon_s is not None and not scored.any():
        raise UserInputError(_horizon_problem(outcome, measured, horizon_s, workload.warmup_requests))
    scored_ttft, scored_tpot = (values[scored] for values in _per_request(outcome)[:2])
    iterations = np.maximum(outcome.iteration_steps, 1.0)  # a separate prompt step: one, no decode step
    counted = outcome.iteration_start_s >= start  # iterations of the measured part of the run
    with np.errstate(invalid="ignore", divide="ignore"):
        per_user = float(np.nanmean(1.0 / tpot)) if np.isfinite(tpot).any() else math.nan
    run_settling = (
        settling(
            outcome.arrival_s,
            outcome.finish_s,
            outcome.arrival_s[measured & arrived],
            queue=(outcome.iteration_start_s, outcome.iteration_s, outcome.iteration_queue),
            arrival_cv=workload.arrivals.cv if workload.arrivals.kind == "gamma" else 1.0,
        )
        if workload.arrivals.kind in RATE_ARRIVALS and workload.trace is None
        else None
    )
    overall = float(completed.sum()) / duration
    offered: float | None = None  # a closed loop's users send as fast as they are served
    if workload.arrivals.kind == "closed" and workload.trace is None:
        assert workload.arrivals.concurrency is not None
        served = _closed_loop_rate(
            outcome.arrival_s,
            outcome.finish_s,
            concurrency=workload.arrivals.concurrency,
            start_s=start,
            end_s=end,
            overall=overall,
        )
    else:
        offered = offered_rate(outcome.arrival_s[scored])
        served = _open_loop_rate(
            offered,
            completed_per_s=overall,
            kept_up=None if run_settling is None else run_settling.settled,
            busy_per_s=max(
                _busy_rate(outcome.arrival_s, outcome.finish_s, end),
                _decode_flow_rate(
                    outcome.first_token_s,
                    outcome.finish_s,
                    start_s=start,
                    end_s=float(outcome.arrival_s[scored].max(initial=start)),
                ),
            ),
            overall=overall,
        )
    # the load figures cover the measured window, as the latencies do (a warm-up's ramp left out)
    load = _MeasuredLoad.of(outcome, counted)
    return SimulationResult(
        model=deployment.model.name,
        system=deployment.cluster_name,
        num_gpus=plan.num_gpus,
        plan=plan,
        workload=workload,
        scheduler=deployment.resolved_scheduler,
        serving=deployment.hardware.serving.name,
        seed=seed,
        num_requests=int(outcome.arrival_s.size),
        num_arrived=int(arrived.sum()),
        num_completed=int(finished.sum()),
        num_in_flight=outcome.num_in_flight,
        duration_s=duration,
        ttft=ttft_stats,
        tpot=tpot_stats,
        itl=_inter_token_latency(outcome, counted),
        e2e=LatencyStats.of(e2e),
        requests_per_s=float(completed.sum()) / duration,
        output_tokens_per_s=output_tokens / duration,
        output_tokens_per_s_per_gpu=output_tokens / duration / plan.num_gpus,
        output_tokens_per_s_per_user=per_user,
        total_tokens_per_s=total_tokens / duration,
        served_output_tokens_per_s=_served_tokens_rate(served, output_tokens, int(completed.sum())),
        mean_in_flight=in_flight_mean(outcome.arrival_s[scored], outcome.finish_s[scored], start, end),
        mean_running=load.mean_running,
        max_running=load.max_running,
        mean_queue=load.mean_queue,
        max_queue=load.max_queue,
        max_kv_use=load.max_kv_use,
        num_preemptions=outcome.num_preemptions,
        num_swaps=outcome.num_swaps,
        num_iterations=int(_steps_run_by(outcome, horizon_s).sum()),
        attention_dp_balance=(
            _weighted_mean(outcome.iteration_balance, iterations) if outcome.iteration_steps.size else 1.0
        ),
        attention_dp_balanced_speedup=_balanced_speedup(outcome.iteration_s, outcome.iteration_balanced_s),
        num_cost_evaluations=outcome.cost_evaluations,
        elapsed_s=elapsed_s,
        slo=None
        if slo is None
        else slo_result(
            slo,
            ttft_s=scored_ttft,
            tpot_s=scored_tpot,
            finished=finished[scored],
            ttft=ttft_stats,
            tpot=tpot_stats,
            requests_per_s=served,
            num_gpus=plan.num_gpus,
            offered_requests_per_s=offered,
            undecided=None
            if horizon_s is None
            else _undecided(slo, scored_ttft, finished[scored], horizon_s - outcome.arrival_s[scored]),
        ),
        series=time_series(  # the measured requests in flight, as mean_in_flight counts them
            arrival_s=outcome.arrival_s[scored] - start,
            finish_s=outcome.finish_s[scored] - start,
            start_s=outcome.iteration_start_s - start,
            duration_s=outcome.iteration_s,
            queue=outcome.iteration_queue,
            running=outcome.iteration_running,
            kv_use=outcome.iteration_kv_use,
            end_s=duration,
        ),
        assumptions=_assumptions(deployment, workload),
        num_warmup=workload.warmup_requests,
        served_requests_per_s=served,
        offered_requests_per_s=math.nan if offered is None else offered,
        settling=run_settling,
        _outcome=outcome,
    )


def _horizon_problem(outcome: EngineOutput, measured: Array, horizon_s: float, warmup: int) -> str:
    """Why a run stopped at ``horizon_s`` has nothing to measure: no measured request (none of the
    first ``warmup`` to arrive) arrived by then, so every figure would be of none."""
    arrivals = outcome.arrival_s[measured]
    first = float(arrivals.min(initial=math.inf))
    which = f"the first after the {_counted(warmup, 'warm-up request')}" if warmup else "the first"
    when = f" ({which} arrives at {format_duration(first)})" if math.isfinite(first) else ""
    lower = " or lower --warmup (warmup_requests)" if warmup else ""
    return (
        f"the horizon of {format_duration(horizon_s)} ends before any measured request arrives{when}: "
        f"raise --horizon (horizon_s){lower}"
    )


def _served_tokens_rate(served_per_s: float, output_tokens: float, completed: int) -> float:
    """Output tokens per second at the rate served: ``served_per_s`` times the mean output tokens
    of the measured requests completed (NaN where none completed or no rate was served).

    >>> _served_tokens_rate(80.0, 3000.0, 10)
    24000.0
    """
    if completed <= 0 or not math.isfinite(served_per_s):
        return math.nan
    return served_per_s * output_tokens / completed


def _undecided(slo: ServiceLevel, ttft_s: Array, finished: Array, waited_s: Array) -> Array:
    """Requests in flight at a horizon that have missed no limit yet: a first token within the TTFT
    limit (their TPOT not known until they finish), or none yet after waiting ``waited_s``, no
    longer than that limit.

    >>> slo = ServiceLevel(ttft_s=1.0, tpot_s=0.1)
    >>> ttft, waited = np.array([0.5, 2.0, np.nan, np.nan, 0.5]), np.array([9.0, 9.0, 0.5, 3.0, 9.0])
    >>> _undecided(slo, ttft, np.array([False, False, False, False, True]), waited).tolist()
    [True, False, True, False, False]
    """
    limit = math.inf if slo.ttft_s is None else slo.ttft_s
    in_time = np.where(np.isfinite(ttft_s), ttft_s <= limit, waited_s <= limit)
    return np.asarray(~finished & in_time, dtype=bool)


def _measured(arrival_s: Array, warmup: int) -> Array:
    """Requests that count: all but the first ``warmup`` to arrive (arrival order, ties by index;
    a request that never arrived has no figures anyway)."""
    measured = np.ones(arrival_s.shape, dtype=bool)
    if warmup:
        order = np.argsort(np.where(np.isfinite(arrival_s), arrival_s, np.inf), kind="stable")
        measured[order[:warmup]] = False
    return measured


def _open_loop_rate(
    offered: float,
    *,
    kept_up: bool | None,
    busy_per_s: float,
    overall: float,
    completed_per_s: float = 0.0,
) -> float:
    """Requests per second a deployment serves requests that arrive over time: the rate they were
    ``offered`` at (:func:`~lightspeed.sol.serve.run_metrics.offered_rate`) where the run kept up
    (``kept_up``: it settled, :class:`~lightspeed.sol.serve.run_metrics.Settling`), else the lower
    of that and ``busy_per_s`` (:func:`_busy_rate`: a deployment that falls behind is busy from the
    first arrival to the end, so that is about its capacity, and one whose settling is not known
    is not credited with more than it completed); ``overall`` where requests do not arrive over
    time. Never above the offered rate (a run cannot serve more than it is offered) except to reach
    ``completed_per_s``, the measured completions per second, which it served: the offered rate
    counts the n - 1 arrivals after the first over their n - 1 gaps, the completions all n over
    those gaps and the last request's latency, so where that latency is shorter than a gap (a light
    load: every request done before the next arrives) the completions read above the arrivals.

    >>> _open_loop_rate(1.0, completed_per_s=0.6, kept_up=True, busy_per_s=0.8, overall=0.7)
    1.0
    >>> _open_loop_rate(1.0, completed_per_s=0.6, kept_up=False, busy_per_s=0.8, overall=0.7)
    0.8
    >>> _open_loop_rate(1.0, completed_per_s=0.6, kept_up=False, busy_per_s=1.3, overall=0.7)  # draining
    1.0
    >>> # 3 arrivals 1 s apart (offered 2 / 2 s), each done 0.5 s later: 3 completions over 2.5 s
    >>> _open_loop_rate(1.0, completed_per_s=3.0 / 2.5, kept_up=None, busy_per_s=1.2, overall=1.2)
    1.2
    """
    if not math.isfinite(offered):
        return overall
    return max(offered if kept_up else min(offered, busy_per_s), completed_per_s)


def _busy_rate(arrival_s: Array, finish_s: Array, end_s: float) -> float:
    """Completions per second of every request (warm-up ones too) from the first arrival to
    ``end_s`` (the last completion, or the horizon; ``finish_s`` ``inf`` for one not finished).

    >>> _busy_rate(np.array([0.0, 1.0, 2.0]), np.array([3.0, 4.0, np.inf]), 4.0)
    0.5
    """
    arrived = arrival_s[np.isfinite(arrival_s)]
    span = end_s - float(arrived.min()) if arrived.size else 0.0
    done = np.count_nonzero(np.isfinite(finish_s) & (finish_s <= end_s))
    return float(done) / span if span > 0 else math.nan


def _decode_flow_rate(first_token_s: Array, finish_s: Array, *, start_s: float, end_s: float) -> float:
    """Requests per second through decoding from the first completion after ``start_s`` to
    ``end_s`` (the last measured arrival, or the horizon): each request counts the share of its
    decode (first token to completion) inside that window, so the ramp before anything completes,
    the drain after the arrivals stop and the waves of requests that started together are left out
    (Little's law over the window: the mean decoding over the mean decode time). A request not
    finished counts nothing; one output token counts whole where its first token falls inside.

    >>> first = np.array([0.0, 1.0, 2.0, 3.0, 4.0])  # decodes of 2 s; window [2, 5]: 0 + 0.5 + 1 + 1 + 0.5
    >>> _decode_flow_rate(first, first + 2.0, start_s=0.0, end_s=5.0)
    1.0
    """
    finish, first = finish_s, first_token_s
    done = np.isfinite(finish)
    begin = max(start_s, float(finish[done].min(initial=np.inf)))
    if not end_s > begin:
        return math.nan
    decode = np.where(done, finish - first, np.nan)
    inside = np.clip(np.minimum(finish, end_s) - np.maximum(first, begin), 0.0, None)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(decode > 0, inside / decode, ((first >= begin) & (first <= end_s)).astype(float))
    return float(np.sum(share[done])) / (end_s - begin)


def _closed_loop_rate(
    arrival_s: Array, finish_s: Array, *, concurrency: int, start_s: float, end_s: float, overall: float
) -> float:
    """Requests per second a closed loop of ``concurrency`` users serves while every user is busy:
    from ``start_s``, or from when every user's first request has completed where that is later
    (sent all at once, the first requests queue for admission together), to the last send (after
    it users drop out). Each request counts the share of its latency inside that window (one not
    finished at ``end_s``, a horizon, as if it finished then), so every user's cycles count whole
    however the sends and completions bunch into waves: with every user busy this is Little's law,
    the users over their requests' mean latency. (Completions over their own span count the waves
    at both ends of it, up to 1 / (waves - 1) too many.) ``overall`` where no request was sent
    after the start.

    >>> arrival = np.array([0.0, 0.0, 2.0, 2.0, 4.0, 4.0])
    >>> _closed_loop_rate(arrival, arrival + 2.0, concurrency=2, start_s=0.0, end_s=6.0, overall=1.0)
    1.0
    """
    sent = np.isfinite(arrival_s)
    last_send = float(np.max(arrival_s[sent], initial=-np.inf))
    done = np.sort(finish_s[np.isfinite(finish_s)])
    first_done = float(done[concurrency - 1]) if done.size >= concurrency else math.inf
    begin = max(start_s, first_done) if max(start_s, first_done) < last_send else start_s
    if last_send <= begin:
        return overall
    arrival = arrival_s[sent]
    finish = np.minimum(finish_s[sent], end_s)
    latency = finish - arrival
    inside = np.clip(np.minimum(finish, last_send) - np.maximum(arrival, begin), 0.0, None)
    share = np.divide(inside, latency, out=np.zeros_like(inside), where=latency > 0)
    return float(share.sum()) / (last_send - begin)


def _weighted_mean(values: Array, weights: Array) -> float:
    return float((values * weights).sum() / weights.sum()) if values.size else 0.0


@dataclass(frozen=True)
class _MeasuredLoad:
    """Sequences running, requests waiting (means weighted by iteration time, and maxima) and the
    fullest rank's KV use over the iterations of the measured window. An iteration's queue is
    its mean over the iteration (the requests that arrive during it counted from when they
    came: ``EngineOutput.iteration_queue``), so the mean queue is the time-average over the busy
    time (an M/D/1 server's Lq / rho); the maximum is the most waiting at an iteration's start
    or end."""

    mean_running: float
    max_running: float
    mean_queue: float
    max_queue: float
    max_kv_use: float

    @classmethod
    def of(cls, outcome: EngineOutput, counted: Array) -> _MeasuredLoad:
        """The load over the iterations ``counted`` (those from the first measured arrival on)."""
        weights = np.maximum(outcome.iteration_s[counted], 1e-12)
        running, queue = outcome.iteration_running[counted], outcome.iteration_queue[counted]
        return cls(
            mean_running=_weighted_mean(running, weights),
            max_running=float(running.max(initial=0.0)),
            mean_queue=_weighted_mean(queue, weights),
            max_queue=float(outcome.iteration_queue_peak[counted].max(initial=0.0)),
            max_kv_use=float(outcome.iteration_kv_use[counted].max(initial=0.0)),
        )


_OR_NONE = type(None)


def _check_arguments(*, model: object, cluster: object, plan: object) -> None:
    """What is simulated: the things themselves, not their names (one line saying how to make each)."""
    check_kind("model", model, TransformerSpec, "lightspeed.model('llama-3-8b')")
    check_kind("cluster", cluster, Cluster, "lightspeed.cluster('dgx-h100', num_gpus=8)")
    check_kind(
        "plan",
        plan,
        InferencePlan,
        "lightspeed.InferencePlan(tp=8, precision='fp8')",
        what="an InferencePlan",
    )


def _check_options(
    *, scheduler: object, efficiency: object, serving: object, speculation: object, num_gpus: object
) -> None:
    """The optional settings of :func:`simulate`: each of its kind or ``None``."""
    check_kind(
        "scheduler",
        scheduler,
        (SchedulerConfig, _OR_NONE),
        "lightspeed.sol.serve.SchedulerConfig(router='round-robin'); None: the serving stack's",
        what="a SchedulerConfig or None",
    )
    check_kind(
        "efficiency",
        efficiency,
        (EfficiencyModel, _OR_NONE),
        "lightspeed.sol.core.efficiency.EfficiencyModel; None: the fitted one",
        what="an EfficiencyModel or None",
    )
    check_kind(
        "serving",
        serving,
        (str, ServingStack, _OR_NONE),
        "such as 'trtllm-2023', from sol/data/stacks.toml; None: the system's default",
        what="a serving profile's name, a ServingStack or None",
    )
    check_kind(
        "speculation",
        speculation,
        (AcceptanceProcess, _OR_NONE),
        "lightspeed.sol.serve.speculation.AcceptanceProcess; None: no speculative decoding",
        what="an AcceptanceProcess or None",
    )
    if num_gpus is not None:
        check_whole("num_gpus", num_gpus)


def _check_run(*, workload: object, seed: object, slo: object, horizon_s: object) -> None:
    """What a run takes: the workload, its seed, an SLO and a horizon (both optional)."""
    check_kind(
        "workload",
        workload,
        ServingWorkload,
        "lightspeed.ServingWorkload(arrivals=lightspeed.ArrivalProcess.poisson(20.0), num_requests=200, "
        "input_lengths=lightspeed.LengthDistribution.fixed(1000), "
        "output_lengths=lightspeed.LengthDistribution.fixed(200))",
    )
    check_whole("seed", seed, minimum=0)
    check_kind(
        "slo",
        slo,
        (ServiceLevel, _OR_NONE),
        "lightspeed.ServiceLevel(ttft_s=0.5, tpot_s=0.05); None: no SLO",
        what="a ServiceLevel or None",
    )
    if horizon_s is not None:
        check_number("horizon_s", horizon_s, above=0.0)


def simulate(
    *,
    model: TransformerSpec,
    cluster: Cluster,
    plan: InferencePlan,
    workload: ServingWorkload,
    scheduler: SchedulerConfig | None = None,
    slo: ServiceLevel | None = None,
    seed: int = 0,
    efficiency: EfficiencyModel | None = None,
    serving: str | ServingStack | None = None,
    speculation: AcceptanceProcess | None = None,
    num_gpus: int | None = None,
    horizon_s: float | None = None,
) -> SimulationResult:
    """Simulate ``workload`` on ``plan`` (see :mod:`lightspeed.sol.serve`) until every request
    completes (or until ``horizon_s``); the same seed gives the same result. Raises
    :class:`~lightspeed.errors.InvalidPlanError` for a plan that cannot exist or a request that
    could never fit its KV cache, :class:`~lightspeed.errors.UserInputError` for an argument of
    the wrong kind (a model's name where the model itself belongs)."""
    _check_arguments(model=model, cluster=cluster, plan=plan)
    _check_options(
        scheduler=scheduler,
        efficiency=efficiency,
        serving=serving,
        speculation=speculation,
        num_gpus=num_gpus,
    )
    _check_run(workload=workload, seed=seed, slo=slo, horizon_s=horizon_s)
    requests = generate_requests(workload, seed=seed)
    deployment = simulated_deployment(
        model=model,
        cluster=cluster,
        plan=plan,
        scheduler=scheduler,
        efficiency=efficiency,
        serving=serving,
        speculation=speculation,
        num_gpus=num_gpus,
    )
    return simulate_deployment(
        deployment, workload, seed=seed, slo=slo, requests=requests, horizon_s=horizon_s
    )


__all__ = [
    "ArrivalProcess",
    "LengthDistribution",
    "ServingWorkload",
    "SimulationResult",
    "simulate",
    "simulate_deployment",
]
