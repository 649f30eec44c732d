"""Inference rows whose figure depends on load, predicted by the serving simulator.

A figure measured at a concurrency (trtllm-bench's and vLLM's closed loops),
at a request rate, or in an MLPerf Server or Interactive scenario depends on how
requests queue, so :mod:`lightspeed.sol.serve` simulates it; offline, static-batch
and decode-pool figures stay with the analytic steady state.

* **Closed loop** (``concurrency N``, ``N concurrent``): ``N`` users each send the
  next request when the last completes; the run has the row's request count
  (``49,152 requests``) or ten times the concurrency (at least 1,000, at most 20,000), and no
  more than four rounds of the concurrency (longer runs move the throughput by under 1%).
* **Open loop** (``request rate R``, ``R req/s arrival``; a load with an arrival rate):
  Poisson arrivals, the row's request count (``--num-prompts 200``: a benchmark's whole run,
  its drain included) or 1,000.
* **All at once** (an infinite rate, ``QPS INF``, ``--request-rate inf``, with no concurrency
  stated): the row's request count (``500 requests``) issued together, simulated as an offline
  run (:func:`all_at_once_simulation`); without a count, the server at its most load.
* **MLPerf** (a cell names MLPerf and a benchmark of ``sol/serve/data/mlperf.toml``):
  the workload's published lengths (the row's ISL/OSL override them). A row naming both
  Interactive and Server is Interactive: MLPerf v5.0 on writes the interactive setting as a
  benchmark (``llama2-70b-interactive-99``) run in LoadGen's Server scenario. Offline is the
  simulated throughput with every sample waiting; Server and Interactive are the
  highest Poisson rate whose 99th-percentile TTFT and TPOT meet the benchmark's limits
  (:func:`~lightspeed.sol.serve.capacity_at_slo.max_rate_at_slo`), times the mean output. A row
  without a layout runs the TP split whose simulated Offline throughput is highest, or on an MoE
  no single GPU holds attention data parallelism with the experts over the group where that is
  faster at its steady state (:func:`mlperf_split`), as a submitter tunes it.

Typed rows (``sol/validation/data/published-runs.toml``) are simulated from their load alone
(:func:`load_simulation`); the TSV reader also reads a request rate or count and MLPerf from
the row's text.

Metrics: throughputs over the whole run (first arrival to last completion, as the
benchmarks count them), per-user speed the mean of each request's ``1 / TPOT``,
TTFT/TPOT/latency the statistic the metric names (``median TTFT``, ``P99 TPOT``, ``p95``,
``90th percentile``, vLLM's result keys ``p99_ttft_ms`` and ``median_ttft_ms``, ``p999`` (99.9),
``99%ile``, ``(99th)``, ``99th pct``: that percentile over requests, as vLLM's and trtllm-bench's
reports give them), else the mean; a percentile that cannot be read (``p125``, ``percentile``
without a number), two in one metric, or a standard deviation (``std_ttft_ms``) is refused.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from typing import Final, NamedTuple

from lightspeed.catalog import Cluster
from lightspeed.errors import UserInputError
from lightspeed.records import JsonDict, Record
from lightspeed.sol.core.efficiency import EfficiencyModel
from lightspeed.sol.core.serving_stacks import ServingStack
from lightspeed.sol.core.uncertainty import Band
from lightspeed.sol.infer.estimate import deployment_memory, deployments_of
from lightspeed.sol.infer.inference_hardware import inference_hardware_for
from lightspeed.sol.infer.memory import memory_of
from lightspeed.sol.infer.plan import InferencePlan, ServingLoad
from lightspeed.sol.serve.capacity_at_slo import max_rate_at_slo, steady_state_rates, steady_state_workload
from lightspeed.sol.serve.deployment import SimulatedDeployment, simulated_deployment
from lightspeed.sol.serve.load_band import scaled_runs
from lightspeed.sol.serve.mlperf_inference import find_mlperf_workload
from lightspeed.sol.serve.run_metrics import ServiceLevel
from lightspeed.sol.serve.simulator import SimulationResult, simulate, simulate_deployment
from lightspeed.sol.serve.workload import RATE_ARRIVALS, ArrivalProcess, LengthDistribution, ServingWorkload
from lightspeed.sol.validation.published import VALUE_AS_WRITTEN, PublishedRow
from lightspeed.sol.validation.readings import RowError
from lightspeed.units import bytes_per_element
from lightspeed.workload import TransformerSpec

# A request count: ``49,152 requests``, ``500 prompts`` (or by its flag: :data:`_REQUEST_FLAG`).
_REQUESTS: Final = re.compile(r"(?<![\w.])(\d[\d,]*)\s*(?:requests|prompts|queries)\b")
# The rate's number is taken whole (``1e400``, ``-2`` too) and checked, never cut to its digits.
_RATE_NUMBER: Final = r"(-?\d[\d.]*(?:e[+-]?\d+)?)"
# How a load's rate is labelled: ``request rate``, ``--request-rate``, ``request_rate``, ``arrival
# rate``, ``QPS``, ``RPS``.
_RATE_LABEL: Final = r"(?:request[ _-]rate|arrival[ _-]rate|qps|rps)\s*[=:]?\s*"
_RATE: Final = re.compile(rf"{_RATE_LABEL}{_RATE_NUMBER}")
# A rate of infinity (``QPS INF``, ``--request-rate inf``, ``RPS inf``; gptManagerBenchmark's
# ``--request_rate -1``, its flag for "no delay between requests"; ``infinite rate``, ``fed at an
# infinite request rate`` in words), or vLLM's offline throughput benchmark, which hands every
# prompt to ``LLM.generate`` at once (``benchmark_throughput.py``, ``vllm bench throughput``):
# every request sent at once.
_INFINITE_RATE: Final = re.compile(
    rf"{_RATE_LABEL}(?:inf(?:inite|inity)?|∞)(?![a-z])"
    r"|request_rate\s*[=:]?\s*-1(?:\.0+)?(?![\d.])"
    r"|\binfinite\s+(?:request\s+)?rate\b"
    r"|benchmark_throughput|vllm\s+bench\s+throughput"
)
_SCENARIO: Final = re.compile(r"\b(offline|server|interactive)\b")
# An MLPerf Server or Interactive run's LoadGen target (``target_qps 392``, ``target 75 QPS``).
# The value is taken whole (``1e400``, ``-1``, ``nan`` too) and checked, never cut to its digits.
_TARGET_QPS: Final = re.compile(r"target[_ ]qps\s*[=:]?\s*(?:of\s+)?([^\s,;)]+)|target\s*([^\s,;)]+)\s*qps\b")
_MLPERF: Final = re.compile(r"\bml\s*perf\b|\bloadgen\b", re.IGNORECASE)
# A latency's percentile as tools and papers write it, read after snake case is split into words
# (vLLM's result keys ``p99_ttft_ms``, ``median_ttft_ms``): ``p99``, ``P99.9``, ``p999`` (the digits
# of the quantile 0.999: 99.9), ``99th percentile``, ``99.9-percentile``, ``99th pct``, ``99%ile``,
# ``(99th)``, ``percentile 99``; ``median`` is 50 (:func:`latency_percentile`).
_P_PERCENTILE: Final = r"\bp(?P<p>\d+(?:\.\d+)?)(?:(?=ms\b|us\b|s\b)|(?![a-z\d]|\.\d))"
_WORD_PERCENTILE: Final = (
    r"(?<![\w.])(?P<n>\d+(?:\.\d+)?)\s*(?:th|st|nd|rd)?[\s-]*(?:percentile|pctl?|perc|%\s*ile)\b"
    r"|\((?P<o>\d+(?:\.\d+)?)(?:th|st|nd|rd)\)"
    r"|\b(?:percentile|pctl)\s*[=:]?\s*(?P<a>\d+(?:\.\d+)?)(?![\d.])"
    r"|(?<![\w.])(?P<q>\d{2}(?:\.\d+)?)p\b"  # ``99p TTFT``
    r"|\bp-(?P<h>\d{1,2}(?:\.\d+)?)(?![\d.])"  # ``p-99``
)
_PERCENTILE: Final = re.compile(rf"{_P_PERCENTILE}|{_WORD_PERCENTILE}|(?P<median>\bmedian\b)")
# What still looks like a percentile once the forms above are read (``p99x``, ``p125``, ``TTFT
# percentile (ms)``, ``%ile``, ``quantile``): refused, never dropped for the mean.
_PERCENTILE_LOOK: Final = re.compile(r"\bp\d+(?:\.\d+)?(?![a-z\d.])|percentile|%\s*ile|\bpctl\b|quantile")
# A spread of latencies, not a latency (vLLM's ``std_ttft_ms``, ``TTFT stdev``): refused.
_SPREAD: Final = re.compile(r"\bstd\b|\bstdev\b|\bstd\.?\s*dev|standard\s+deviation")
# The largest value a latency column reports (``Max ITL (ms)``, ``ITL max``, ``maximum TTFT``).
_MAXIMUM: Final = re.compile(
    r"\bmax(?:imum)?\.?\s+(?:ttft|tpot|itl|e2el?|tbt|latency|inter|time|first|request)"
    r"|(?:ttft|tpot|itl|e2el?|tbt|latency)\b[^;]*?\bmax(?:imum)?\b"
)
MIN_CLOSED_REQUESTS: Final = 1000
MAX_SIMULATED_REQUESTS: Final = 20_000
CLOSED_WAVES: Final = 4
MLPERF_SIMULATED_REQUESTS: Final = 4000  # per probe: LoadGen's 24,576 samples need not all run
MLPERF_SPLIT_REQUESTS: Final = 800  # requests per replica when choosing an MLPerf row's split


@dataclass(frozen=True)
class RowSimulation(Record):
    """How a load-dependent row is simulated: ``closed``, ``open``, ``offline`` (every request
    waiting) or ``capacity`` (the highest rate meeting ``slo``). ``finite``: an offline run of
    exactly the workload's requests whose rates are the whole run's, its ramp-up and drain included
    (a benchmark that sends a stated number of requests at once and divides by the time to the last
    completion); else an offline run's rates are its steady state's (MLPerf Offline)."""

    mode: str
    workload: ServingWorkload
    slo: ServiceLevel | None = None
    mlperf: str = ""
    note: str = ""
    target_rate_per_s: float | None = None
    finite: bool = False


def row_requests(row: PublishedRow) -> int | None:
    """The request count a row's own cells state (``49,152 requests``, ``--num-prompts 200``), if
    any, never a note's (``60.4 per rank / 2 requests``); a count of none, or a flag whose value is
    no whole number (``--num-prompts 1e400``), is refused."""
    text = row.described()
    match = _REQUEST_FLAG.search(text) or _REQUESTS.search(text)
    if match is None:
        return None
    written = match.group(1).rstrip(",)")
    if not re.fullmatch(r"\d[\d,]*", written):
        raise RowError(f"the request count '{match.group(0)}' is not a whole number of requests")
    count = int(written.replace(",", ""))
    if count < 1:
        raise RowError(f"the row's run of {count} requests sends none: give the count it sent")
    return count


# a request count by its benchmark's flag, label first (vLLM's and SGLang's ``--num-prompts 200``,
# ``Num Prompts 300``, ``num_requests 256``, ``--num-prompt 1000`` (argparse takes the abbreviation),
# guidellm's ``total_requests: 100``, the serving
# benchmarks' report ``Successful requests: 100``), its value as written (checked whole: ``1e400``)
_REQUEST_FLAG: Final = re.compile(
    rf"\b(?:(?:num|total)[_ -]?(?:prompts?|requests)|successful[_ ]requests)\s*[=:]?\s*({VALUE_AS_WRITTEN})",
    re.IGNORECASE,
)


# A rate with its unit in a load cell (``4 req/s (Poisson)``, ``2 requests per second``, ``4 QPS``,
# ``rate: 4 RPS``); only the load cells are searched, so a measured ``12 req/s`` stays the figure,
# not the load.
_RATE_WITH_UNIT: Final = re.compile(
    rf"(?<![\w.]){_RATE_NUMBER}\s*(?:(?:req(?:uest)?s?|queries)\s*(?:/\s*s(?:ec(?:ond)?)?\b|per\s+sec(?:ond)?\b)"
    r"|(?:qps|rps)\b)"
)
_LOAD_CELLS: Final = ("seq", "global_batch", "micro_batch")


def row_rate(row: PublishedRow) -> float | None:
    """The request rate a row states (``request rate 4``, ``qps 2``; ``4 req/s`` in a load
    cell), if any; ``None`` for an infinite rate (:func:`sends_all_at_once`)."""
    if sends_all_at_once(row):
        return None
    match = _RATE.search(row.described().lower())
    if match is None:
        match = _RATE_WITH_UNIT.search(" | ".join(row.text(cell) for cell in _LOAD_CELLS).lower())
    if match is None:
        return None
    try:
        rate = float(match.group(1))
    except ValueError:
        rate = math.nan
    if not (math.isfinite(rate) and rate > 0.0):
        raise RowError(f"request rate {match.group(1)!r} is not a finite rate above 0 requests/s")
    return rate


def sends_all_at_once(row: PublishedRow) -> bool:
    """Whether the row states an infinite request rate (``QPS INF``, ``--request-rate inf``)."""
    return _INFINITE_RATE.search(row.described().lower()) is not None


def all_at_once_simulation(load: ServingLoad, num_requests: int) -> RowSimulation:
    """``num_requests`` requests of ``load``'s lengths all sent at once (an infinite request rate):
    simulated as an offline run, every request waiting from the start, whose rates are the whole
    run's (tokens over the time to the last completion, as the benchmarks that send them report)."""
    inputs, outputs = _fixed(load)
    count = max(1, min(num_requests, MAX_SIMULATED_REQUESTS * 3))
    workload = ServingWorkload(ArrivalProcess.offline(), inputs, outputs, count)
    return RowSimulation(
        "offline",
        workload,
        note=(
            f"simulated: {count:,} requests sent at once, rates over the whole run "
            "(ramp-up and drain included)"
        ),
        finite=True,
    )


def _fixed(load: ServingLoad) -> tuple[LengthDistribution, LengthDistribution]:
    return LengthDistribution.fixed(load.input_tokens), LengthDistribution.fixed(load.output_tokens)


def load_simulation(
    load: ServingLoad, batching: str, num_requests: int | None = None
) -> RowSimulation | None:
    """The simulation of continuous batching at a concurrency (closed loop) or an arrival rate
    (Poisson), with ``num_requests`` when the row states it (see the module); ``None`` for other
    loads (offline, static batches, decode pools, one request at a time)."""
    if batching != "continuous":
        return None
    inputs, outputs = _fixed(load)
    cap = MAX_SIMULATED_REQUESTS * 3
    if load.arrival_rate_per_s is not None:
        count = max(1, min(num_requests or MIN_CLOSED_REQUESTS, cap))
        rate = load.arrival_rate_per_s
        workload = ServingWorkload(ArrivalProcess.poisson(rate), inputs, outputs, count)
        return RowSimulation("open", workload, note=f"simulated: Poisson {rate:g} req/s, {count} requests")
    if load.concurrency is None or load.concurrency <= 1:
        return None
    default = min(max(10 * load.concurrency, MIN_CLOSED_REQUESTS), MAX_SIMULATED_REQUESTS)
    # at most CLOSED_WAVES rounds of the concurrency: longer runs change the throughput by under 1%
    # (I101: 49,152 requests or 12,288 give 35,314 and 35,302 tokens/s) and cost the fit script time
    stated = max(1, min(num_requests or default, cap))
    count = min(stated, max(CLOSED_WAVES * load.concurrency, MIN_CLOSED_REQUESTS))
    workload = ServingWorkload(ArrivalProcess.closed(load.concurrency), inputs, outputs, count)
    return RowSimulation(
        "closed",
        workload,
        note=f"simulated: closed loop of {load.concurrency} users, {count:,} requests",
    )


# An MLPerf summary's rates as its log writes them, label first (``Samples per second: 1115.68``,
# ``Completed tokens per second: 31106.28``)
_FIELD_VALUE: Final = r"\s+per\s+second\s*[:=]\s*(\d[\d,]*(?:\.\d+)?)"
_SAMPLE_RATE_FIELD: Final = re.compile(r"(?:completed\s+)?samples" + _FIELD_VALUE)
_TOKEN_RATE_FIELD: Final = re.compile(r"(?:completed\s+)?tokens" + _FIELD_VALUE)


def _tokens_per_sample(row: PublishedRow) -> float | None:
    """The mean output tokens per sample an MLPerf row's own rates give (its tokens per second over
    its samples per second, both of one run, written as the summary's fields or as the row's
    metric and measured value), else ``None``."""
    text = row.joined()
    samples = _SAMPLE_RATE_FIELD.search(text)
    tokens = _TOKEN_RATE_FIELD.search(text)
    metric = row.text("metric").lower()
    if tokens is None and "tokens per second" in metric and "samples" not in metric:
        tokens = re.match(r"\s*(\d[\d,]*(?:\.\d+)?)", row.text("measured"))
    if samples is None and "samples per second" in metric and "tokens" not in metric:
        samples = re.match(r"\s*(\d[\d,]*(?:\.\d+)?)", row.text("measured"))
    if samples is None or tokens is None:
        return None
    token_rate, sample_rate = (float(found.group(1).replace(",", "")) for found in (tokens, samples))
    if not sample_rate > 0.0:
        return None
    per_sample = token_rate / sample_rate
    return per_sample if 1.0 <= per_sample <= 1e6 else None


def names_mlperf(row: PublishedRow) -> bool:
    """Whether a cell of the run's own names MLPerf (or LoadGen); a note comparing with an MLPerf
    figure does not make the row an MLPerf run."""
    return _MLPERF.search(row.described()) is not None


def mlperf_row_simulation(row: PublishedRow, load: ServingLoad | None) -> RowSimulation:
    """The simulation of an MLPerf row: its benchmark, scenario and lengths (see the module)."""
    text = row.joined()
    workload = find_mlperf_workload(" ".join((row.text("model"), text)))
    if workload is None:
        raise RowError("the row names MLPerf but none of its LLM benchmarks (see sol/serve/data/mlperf.toml)")
    # the scenario the row's own cells name, not a note quoting another run's (``derived_or_check``)
    own = row.described()
    scenarios = {match.group(1) for match in _SCENARIO.finditer(own)} or {
        match.group(1) for match in _SCENARIO.finditer(text.lower())
    }
    if scenarios == {"interactive", "server"}:
        # MLPerf v5.0 on names the interactive setting as a benchmark run in LoadGen's Server
        # scenario (``llama2-70b-interactive-99``, ``Scenario : Server``): its tighter limits hold
        scenarios = {"interactive"}
    if len(scenarios) != 1:
        raise RowError(
            "an MLPerf row must name one scenario (Offline, Server or Interactive); "
            f"found {', '.join(sorted(scenarios)) or 'none'}"
        )
    scenario = scenarios.pop()
    lengths: tuple[LengthDistribution | None, LengthDistribution | None] = (
        _fixed(load) if load is not None else (None, None)
    )
    own_output = None
    if load is None and workload.lengths()[1] is None:
        own_output = _tokens_per_sample(row)
        if own_output is not None:
            lengths = (None, LengthDistribution.fixed(round(own_output)))
    simulated = workload.workload(
        "offline" if scenario == "offline" else "server",
        rate_per_s=1.0,
        num_requests=MLPERF_SIMULATED_REQUESTS,
        input_lengths=lengths[0],
        output_lengths=lengths[1],
    )
    slo = workload.slo(scenario)
    target = (
        "every sample waiting"
        if slo is None
        else f"highest rate meeting {slo.describe()}, at the steady state (LoadGen runs ten minutes: "
        "the requests the deployment holds at once warm it up unmeasured)"
    )
    note = (
        f"MLPerf {workload.display_name}, {scenario}: {target}; lengths ISL "
        f"{simulated.input_lengths.describe()}, OSL {simulated.output_lengths.describe()}"
    )
    if load is None and workload.input_assumption:
        note += f" (prompt lengths: {workload.input_assumption})"
    if own_output is not None:
        note += (
            f" (output: the run's own tokens per sample, {own_output:,.1f}: MLCommons publishes no output "
            "lengths for this benchmark)"
        )
    mode = "offline" if scenario == "offline" else "capacity"
    qps = _TARGET_QPS.search(text.lower())
    target_rate = _target_rate(qps.group(1) or qps.group(2)) if qps and mode == "capacity" else None
    return RowSimulation(mode, simulated, slo, workload.name, note, target_rate)


def _target_rate(text: str) -> float:
    """A stated LoadGen target in queries per second: a finite number above 0."""
    try:
        rate = float(text)
    except ValueError:
        rate = math.nan
    if not math.isfinite(rate) or rate <= 0.0:
        raise RowError(
            f"target_qps {text!r} is not a rate: write a finite number of queries per second above 0"
        )
    return rate


class MlperfLayout(NamedTuple):
    """The layout an MLPerf row without one runs (:func:`mlperf_split`): TP replicas (``groups``
    1), or on an MoE ``groups`` attention ranks of one GPU each with the experts over them (DEP,
    ``tp`` 1); and what was chosen over what."""

    tp: int
    groups: int
    note: str


def _tp_sizes(gpus: int, domain: int) -> list[int]:
    """TP sizes an MLPerf submitter tunes over: powers of two inside the scale-up domain that
    divide ``gpus`` (replicas fill the rest)."""
    return [size for size in (1, 2, 4, 8, 16, 32, 64) if size <= min(gpus, domain) and not gpus % size]


def mlperf_kv_precision(weights: str) -> str | None:
    """The KV-cache format of an MLPerf closed submission whose weights are in ``weights``: FP8
    where the weights are 8 bits or narrower (the submitters quantize it with them), else the
    model's own (``None``)."""
    return "fp8" if bytes_per_element(weights) <= 1 else None


def _plan(tp: int, groups: int, gpus: int, precision: str, effective_bits: float | None) -> InferencePlan:
    """Replicas of ``tp`` GPUs, or of ``groups`` attention ranks with the experts over them, with
    the KV cache an MLPerf submission keeps (:func:`mlperf_kv_precision`)."""
    return InferencePlan(
        tp=tp,
        ep=groups,
        dp_attention=groups,
        replicas=gpus // (tp * groups),
        precision=precision,
        effective_bits=effective_bits,
        kv_precision=mlperf_kv_precision(precision),
    )


def _waiting(workload: ServingWorkload, plan: InferencePlan) -> ServingWorkload:
    """``workload`` with :data:`MLPERF_SPLIT_REQUESTS` a replica of ``plan``, all waiting at once."""
    return replace(
        workload, arrivals=ArrivalProcess.offline(), num_requests=MLPERF_SPLIT_REQUESTS * plan.replicas
    )


def _offline_rate(
    model: TransformerSpec, cluster: Cluster, plan: InferencePlan, workload: ServingWorkload
) -> float:
    """Simulated Offline output tokens per second of ``plan``, from a run of
    :data:`MLPERF_SPLIT_REQUESTS` per replica (one replica, scaled, on one node): cheap, and
    enough to rank TP splits, which hold alike."""
    single = cluster.num_nodes == 1 and plan.replicas > 1
    run = plan.with_changes(replicas=1) if single else plan
    result = simulate(model=model, cluster=cluster, plan=run, workload=_waiting(workload, run))
    return result.output_tokens_per_s * (plan.replicas if single else 1)


def _steady_rate(
    model: TransformerSpec, cluster: Cluster, plan: InferencePlan, workload: ServingWorkload
) -> float:
    """Simulated Offline output tokens per second of ``plan`` at its steady state
    (:func:`~lightspeed.sol.serve.capacity_at_slo.steady_state_rates`): what weighs a layout that
    holds many more requests at once against one that holds few, where a finite run's drain
    favours the second."""
    deployment = simulated_deployment(model=model, cluster=cluster, plan=plan)
    return steady_state_rates(deployment, _waiting(workload, plan)).output_tokens_per_s


def _copies(count: int) -> str:
    """``x8 replicas``, ``x1 replica``."""
    return f"x{count} replica{'s' if count > 1 else ''}"


def mlperf_split(
    model: TransformerSpec,
    cluster: Cluster,
    precision: str,
    workload: ServingWorkload,
    *,
    num_gpus: int | None = None,
    effective_bits: float | None = None,
    expert_layouts: bool = True,
) -> MlperfLayout:
    """The layout of an MLPerf row that states none, as its submitter tunes it (replicas filling
    the row's ``num_gpus``, default all of ``cluster``'s; weights in ``precision``, a mixed
    checkpoint at ``effective_bits``):

    * the TP split (:func:`_tp_sizes`) with the most simulated Offline throughput
      (:func:`_offline_rate`);
    * on an MoE that no single GPU holds (``expert_layouts``: the row states no EP or DP of its
      own), against it attention data parallelism over the largest of those sizes with the
      experts over the group (DEP), both at their steady state (:func:`_steady_rate`). NVIDIA's
      MLPerf v5.1 configs run DeepSeek-R1 so (``closed/NVIDIA/configs/*/Offline/deepseek-r1.py``:
      ``tensor_parallelism: 8``, ``enable_attention_dp: True``, ``moe_expert_parallelism: 8``) and
      Mixtral 8x7B, which one GPU holds, as TP1 replicas (``mixtral-8x7b.py``): TP1 replicas
      exchange nothing, and DEP would share only the experts' memory for an all-to-all a layer.
    """
    gpus = num_gpus or cluster.num_accelerators
    sizes = _tp_sizes(gpus, cluster.system.scale_up_domain_size)
    rates: list[tuple[float, int]] = []
    for tp in sizes:
        try:
            rates.append(
                (_offline_rate(model, cluster, _plan(tp, 1, gpus, precision, effective_bits), workload), tp)
            )
        except UserInputError:
            continue
    if not rates:
        raise RowError(f"{model.name} in {precision} fits no split of {cluster.name}")
    _, tp = max(rates)
    note = f"MLPerf row without a layout: tp={tp} {_copies(gpus // tp)}, the most simulated throughput"
    fits_one_gpu = any(size == 1 for _, size in rates)
    if not expert_layouts or model.moe is None or fits_one_gpu or sizes[-1] < 2:
        return MlperfLayout(tp, 1, f"{note} of {len(rates)} TP splits")
    groups = sizes[-1]
    try:
        dep = _steady_rate(model, cluster, _plan(1, groups, gpus, precision, effective_bits), workload)
    except UserInputError:
        return MlperfLayout(tp, 1, f"{note} of {len(rates)} TP splits (DEP{groups} does not fit)")
    split = _steady_rate(model, cluster, _plan(tp, 1, gpus, precision, effective_bits), workload)
    weighed = f"at their steady state: {dep:,.0f} against {split:,.0f} tokens/s"
    if dep > split:
        return MlperfLayout(
            1,
            groups,
            f"MLPerf row without a layout: DEP{groups} (attention DP {groups}, EP {groups}) "
            f"{_copies(gpus // groups)}, over the best of {len(rates)} TP splits (tp={tp}) {weighed}",
        )
    return MlperfLayout(tp, 1, f"{note} of {len(rates)} TP splits, over DEP{groups} {weighed}")


# How far over what the KV cache holds a stated static batch is still predicted (at what it holds,
# flagged): the KV capacity rests on shares the run may set otherwise (the runtime's share of free
# memory, 0.9 by default in TensorRT-LLM and vLLM and raised to 0.95-0.98 by tuned runs; the
# workspace and reserve estimates), worth tens of percent of it. Past 1.5x no such setting holds the
# batch: the row's GPUs, precision or lengths must differ from what was read, and a figure at the
# cap would be another run's, so the row is refused.
MAX_STATIC_BATCH_OVER_KV: Final = 1.5


def fitting_split(
    model: TransformerSpec,
    cluster: Cluster,
    precision: str,
    load: ServingLoad,
    *,
    num_gpus: int | None = None,
    across: str = "pp",
    static_batch: float | None = None,
) -> tuple[int, int, str] | None:
    """(TP, PP, note) of a row that names no TP, EP or attention DP: the smallest TP (a power of two
    inside the scale-up domain, dividing the row's ``num_gpus``, default all of ``cluster``'s) whose
    GPUs hold the model with one request of the row's lengths, replicas filling the rest, as an
    operator sizes a deployment (``1`` when one GPU holds it: every GPU a replica); where no scale-up
    domain holds it, the domain's TP times the fewest pipeline stages across domains that do
    (DeepSeek-R1 in FP8 on two 8-GPU H100 nodes: TP 8 x PP 2, as vLLM's multi-node guide runs it),
    or with ``across="tp"`` the fewest domains in one TP group (TP 16: SGLang's ``--tp 16 --nnodes
    2``). A row's ``static_batch`` (over all its GPUs) is held if any of those splits holds it, each
    replica its share (within :data:`MAX_STATIC_BATCH_OVER_KV` of what its KV cache holds), as an
    operator sizes for the batch it runs (Llama 2 70B in FP8 with a batch of 1,750 on two Gaudi 2: TP 2,
    where TP 1 x 2 holds 236 of its 875 a replica). ``None`` when no split holds one request."""
    gpus = num_gpus or cluster.num_accelerators
    one_request = ServingLoad(load.input_tokens, load.output_tokens)
    holds = f"{model.name} in {precision} and a request of the row's lengths"
    domain = min(gpus, cluster.system.scale_up_domain_size)
    splits = [(tp, 1) for tp in (1, 2, 4, 8, 16, 32, 64) if tp <= domain and not gpus % tp]
    if across == "tp":
        splits += [(domain * nodes, 1) for nodes in (2, 4, 8, 16) if not gpus % (domain * nodes)]
    else:
        splits += [(domain, pp) for pp in (2, 4, 8, 16) if not gpus % (domain * pp)]
    if static_batch:
        for tp, pp in splits:
            plan = InferencePlan(tp=tp, pp=pp, replicas=gpus // (tp * pp), precision=precision)
            share = math.ceil(static_batch / plan.replicas)
            hardware = inference_hardware_for(cluster, plan, None, None, model=model)
            memory = memory_of(model, hardware, deployments_of(plan, 1.0), one_request, 0.0)
            # the KV cache holds the share, or so nearly that the row is predicted at what it holds
            if bool(memory.fits[0]) and float(memory.kv_sequences[0]) * MAX_STATIC_BATCH_OVER_KV >= share:
                held = f"{model.name} in {precision} and the row's static batch of {static_batch:g}"
                return tp, pp, _split_note(tp, pp, domain, plan.replicas, f"{held} ({share} a replica)")
    for tp, pp in splits:
        plan = InferencePlan(tp=tp, pp=pp, replicas=gpus // (tp * pp), precision=precision)
        hardware = inference_hardware_for(cluster, plan, None, None, model=model)
        if bool(deployment_memory(model, hardware, plan, one_request).fits[0]):
            return tp, pp, _split_note(tp, pp, domain, gpus // (tp * pp), holds)
    return None


def _split_note(tp: int, pp: int, domain: int, copies: int, holds: str) -> str:
    """What :func:`fitting_split` chose, and why."""
    replicas = _copies(copies)
    if pp > 1:
        return (
            f"row without TP: tp={tp} pp={pp} {replicas}, no scale-up domain of {domain} GPUs holds "
            f"{holds}: the fewest pipeline stages across domains that do"
        )
    if tp > domain:
        return (
            f"row without TP: tp={tp} {replicas}, no scale-up domain of {domain} GPUs holds {holds}: "
            "the fewest domains in one TP group that do (SGLang's multi-node TP)"
        )
    if tp == 1:
        return f"row without TP: tp=1 {replicas}, one GPU holds {holds}"
    return f"row without TP: tp={tp} {replicas}, the smallest TP whose GPUs hold {holds}"


def latency_percentile(metric_text: str) -> float | None:
    """The percentile a latency metric names (``median TTFT`` 50, ``P99 TPOT`` 99, ``p99_ttft_ms``
    99, ``TTFT p999 ms`` 99.9, ``90th percentile``, ``TTFT 99%ile``, ``Max ITL`` 100), ``None`` for a
    mean (``mean``, ``average`` or nothing said). A percentile that cannot be read (``p125``, ``TTFT
    percentile``), or two that differ (``p50/p99``), is refused with the reason: never the mean.

    >>> [latency_percentile(text) for text in ("P99 ITL (ms)", "Max ITL (ms)", "ITL (ms) avg")]
    [99.0, 100.0, None]
    >>> [latency_percentile(text) for text in ("p99_ttft_ms", "TTFT p999 ms", "TTFT (99th) ms")]
    [99.0, 99.9, 99.0]
    >>> [latency_percentile(text) for text in ("99p TTFT (ms)", "p-99 TTFT (ms)", "TTFT p-50")]
    [99.0, 99.0, 50.0]
    """
    text = metric_text.lower().replace("_", " ")
    if _SPREAD.search(text):
        raise RowError(
            f"the metric '{metric_text}' is a spread of latencies (a standard deviation), which lightspeed "
            "does not predict: give the mean, the median or a percentile"
        )
    read: dict[float, str] = {}
    for match in _PERCENTILE.finditer(text):
        read.setdefault(_percentile_value(match, metric_text), match.group(0).strip())
    unread = _PERCENTILE_LOOK.search(_PERCENTILE.sub(" ", text))
    if unread is not None:
        raise RowError(
            f"the percentile '{unread.group(0)}' in the metric '{metric_text}' is not one lightspeed reads: "
            "write it as p99, p99.9 (or p999), median, or 99th percentile"
        )
    if len(read) > 1:
        named = " and ".join(f"'{words}' ({value:g})" for value, words in read.items())
        raise RowError(
            f"the metric '{metric_text}' names two percentiles, {named}: give one per metric "
            "(split the cell with ';' and give a value for each)"
        )
    if read:
        return next(iter(read))
    return 100.0 if _MAXIMUM.search(text) else None


def _percentile_value(match: re.Match[str], metric_text: str) -> float:
    """The percentile one :data:`_PERCENTILE` match reads: ``median`` 50; ``p`` and two digits at
    most that number (``p5``, ``p99.9``), more digits the quantile's (``p999`` 99.9, ``p9999``
    99.99; ``p100`` the maximum); refused outside 0-100 or written otherwise (``p125``)."""
    if match.group("median"):
        return 50.0
    written = match.group("p")
    if written is None:
        number = float(next(group for group in match.group("n", "o", "a", "q", "h") if group))
    elif "." in written or len(written) <= 2 or written == "100":
        number = float(written)
    elif written.startswith("9"):
        number = float(f"{written[:2]}.{written[2:]}")
    else:
        number = math.nan
    if not 0.0 <= number <= 100.0:
        raise RowError(
            f"the percentile '{match.group(0).strip()}' in the metric '{metric_text}' is not one between "
            "0 and 100: write it as p99, p99.9 (or p999), median, or 99th percentile"
        )
    return number


def reading_percentile(metric: str, metric_text: str) -> float | None:
    """The percentile of a latency ``metric`` its text names (:func:`latency_percentile`); ``None``
    for other metrics (a throughput's text is not read for one)."""
    return latency_percentile(metric_text) if metric in _LATENCIES else None


_LATENCIES: Final = {"ttft_s": "ttft", "tpot_s": "tpot", "itl_s": "itl", "request_latency_s": "e2e"}


def _metric_value(result: SimulationResult, metric: str, num_gpus: int, percentile: float | None) -> float:
    if percentile is not None and metric in _LATENCIES:
        return result.percentile_s(_LATENCIES[metric], percentile)
    output = result.output_tokens_per_s
    values = {
        "output_tokens_per_s": output,
        "output_tokens_per_s_per_gpu": output / num_gpus,
        "output_tokens_per_s_per_user": result.output_tokens_per_s_per_user,
        "total_tokens_per_s": result.total_tokens_per_s,
        "total_tokens_per_s_per_gpu": result.total_tokens_per_s / num_gpus,
        "input_tokens_per_s": result.total_tokens_per_s - output,
        "input_tokens_per_s_per_gpu": (result.total_tokens_per_s - output) / num_gpus,
        "requests_per_s": result.requests_per_s,
        "ttft_s": result.ttft.mean_s,
        "tpot_s": result.tpot.mean_s,
        "itl_s": result.itl.mean_s,
        "request_latency_s": result.e2e.mean_s,
    }
    if metric not in values:
        raise RowError(f"metric {metric!r} has no simulated value")
    return values[metric]


# The rates an Offline run's steady state defines (``steady_state_rates``), by metric
# (``_per_gpu``: divided by the deployment's GPUs).
_STEADY_RATES: Final = {
    "output_tokens_per_s": "output_tokens_per_s",
    "output_tokens_per_s_per_gpu": "output_tokens_per_s",
    "total_tokens_per_s": "total_tokens_per_s",
    "total_tokens_per_s_per_gpu": "total_tokens_per_s",
    "input_tokens_per_s": "input_tokens_per_s",
    "input_tokens_per_s_per_gpu": "input_tokens_per_s",
    "requests_per_s": "requests_per_s",
}


def _steady_offline_rate(
    deployment: SimulatedDeployment, workload: ServingWorkload, metric: str, num_gpus: int
) -> tuple[float, JsonDict]:
    """(``metric``, what the runs reached) of an MLPerf Offline row: LoadGen issues Offline samples
    for at least ten minutes, so the run is the deployment's steady state
    (:func:`~lightspeed.sol.serve.capacity_at_slo.steady_state_rates`)."""
    rates = steady_state_rates(deployment, workload)
    rate = float(getattr(rates, _STEADY_RATES[metric]))
    value = rate / num_gpus if metric.endswith("_per_gpu") else rate
    reached: JsonDict = {
        "steady_state": (
            f"difference of runs of {rates.short_run_requests} and {rates.long_run_requests} samples"
            + (f" on one of {rates.replicas} replicas, times {rates.replicas}" if rates.replicas > 1 else "")
        ),
        "short_run_output_tokens_per_s": rates.short_run_output_tokens_per_s,
        "mean_running": rates.mean_running,
        "num_requests": rates.long_run_requests,
    }
    return value, reached


_CAPACITY_RATES: Final = ("requests_per_s", "output_tokens_per_s", "output_tokens_per_s_per_gpu")


def simulate_row(
    simulation: RowSimulation,
    *,
    model: TransformerSpec,
    cluster: Cluster,
    plan: InferencePlan,
    metric: str,
    serving: ServingStack | None,
    efficiency: EfficiencyModel | None = None,
    percentile: float | None = None,
    band: Band | None = None,
) -> tuple[float, JsonDict]:
    """(predicted value of ``metric``, what the run reached) for a load-dependent row; a latency
    metric is its ``percentile`` over requests when one is given, else the mean. With ``band``, a
    latency measured under open-loop arrivals at a rate also gets its band under that load
    (``interval_under_load``, :mod:`lightspeed.sol.serve.load_band`): near capacity a throughput
    error moves the queue far more than the latency band of the family says."""
    deployment = simulated_deployment(
        model=model, cluster=cluster, plan=plan, efficiency=efficiency, serving=serving
    )
    workload = simulation.workload
    if simulation.mode == "capacity":
        # LoadGen's Server and Interactive runs last ten minutes: measured at the steady state
        workload = steady_state_workload(deployment, workload)
    if simulation.mode == "capacity" and metric not in _CAPACITY_RATES:
        if simulation.target_rate_per_s is None:
            raise RowError(
                f"an MLPerf Server row's metric must be a rate, or the row must state the target QPS "
                f"its latencies were measured at (got {metric} and no 'target_qps N')"
            )
        workload = replace(workload, arrivals=ArrivalProcess.poisson(simulation.target_rate_per_s))
    elif simulation.mode == "capacity":
        assert simulation.slo is not None
        capacity = max_rate_at_slo(deployment, workload=workload, slo=simulation.slo)
        output_mean = workload.output_lengths.mean_tokens
        rates = {
            "requests_per_s": capacity.max_rate_per_s,
            "output_tokens_per_s": capacity.max_rate_per_s * output_mean,
            "output_tokens_per_s_per_gpu": capacity.max_rate_per_s * output_mean / plan.num_gpus,
        }
        return rates[metric], {
            "max_rate_per_s": capacity.max_rate_per_s,
            "num_probes": len(capacity.probes),
            "num_requests": workload.num_requests,
            "warmup_requests": workload.warmup_requests,
        }
    if simulation.mode == "offline":
        workload = ServingWorkload(
            ArrivalProcess.offline(), workload.input_lengths, workload.output_lengths, workload.num_requests
        )
        if metric in _STEADY_RATES and not simulation.finite:
            return _steady_offline_rate(deployment, workload, metric, plan.num_gpus)
    result = simulate_deployment(deployment, workload)
    reached: JsonDict = {
        "ttft_s": result.ttft.mean_s,
        "tpot_s": result.tpot.mean_s,
        "mean_running": result.mean_running,
        "num_requests": result.num_requests,
    }
    if workload.warmup_requests:
        reached["warmup_requests"] = workload.warmup_requests
    if result.settling is not None:
        reached["settled"] = result.settled
        if result.settled is False:
            reached["settling_note"] = result.settling.describe()
    if percentile is not None and metric in _LATENCIES:
        reached["percentile"] = percentile
    if band is not None and metric in _LATENCIES and workload.arrivals.kind in RATE_ARRIVALS:
        runs = scaled_runs(deployment, workload, band)
        low, high = runs.interval(lambda run: _metric_value(run, metric, plan.num_gpus, percentile))
        reached["interval_under_load"] = [low, high]
        reached["interval_note"] = runs.describe()
    return _metric_value(result, metric, plan.num_gpus, percentile), reached


__all__ = [
    "MlperfLayout",
    "RowSimulation",
    "all_at_once_simulation",
    "latency_percentile",
    "load_simulation",
    "mlperf_kv_precision",
    "mlperf_row_simulation",
    "mlperf_split",
    "names_mlperf",
    "reading_percentile",
    "row_rate",
    "row_requests",
    "sends_all_at_once",
    "simulate_row",
]
