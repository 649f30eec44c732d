"""Whether a published figure is one a run can reach: the checks every row passes before it is
predicted, table and structured rows alike.

A training rate above one GPU's fastest dense peak at 6 FLOPs per active parameter per token, or a
time shorter than that rate takes, a serving throughput above that peak at 2 FLOPs per active
parameter per output token (a rate of prompt tokens or requests by the output tokens of the requests
it counts), a serving latency far under its physical floor (the active weights streamed once per
token, the prompt at the fastest peak) or over a day, and a serving throughput over 100x under one
request decoding alone on one GPU (:func:`one_stream_tokens_per_s`), mean the unit or the scope was
misread: the row is refused with the ratio, never predicted. The fix is said in the syntax of the row's format
(:class:`~lightspeed.sol.validation.readings.RowSyntax`: a table's cells, a structured row's fields).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Final

from lightspeed.catalog import Accelerator
from lightspeed.records import Record
from lightspeed.sol.infer.plan import InferencePlan, ServingLoad
from lightspeed.sol.validation.readings import TABLE_ROW, Reading, RowError, RowSyntax
from lightspeed.units import bytes_per_element
from lightspeed.workload import TransformerSpec, kv_cache_bytes_per_token, parameter_counts

# FLOPs each token costs at the least: a training step's forward and backward matmuls (6 per active
# parameter), a served token's forward matmuls (2); attention only adds to them
TRAIN_FLOP_PER_TOKEN_PER_PARAM: Final = 6.0


SERVE_FLOP_PER_TOKEN_PER_PARAM: Final = 2.0


def fastest_dense_peak(accelerator: Accelerator) -> float | None:
    """One GPU's fastest dense peak in any floating-point format (FLOP/s), the ceiling every
    figure is checked against; ``None`` where the catalog gives none."""
    peaks = [figure.dense_per_s for key, figure in accelerator.compute.items() if not key.startswith("int")]
    return max(peaks) if peaks else None


def times(ratio: float, relation: str = "") -> str:
    """``12.5x`` (``12.5x under`` with a ``relation``): a ratio in a refusal's words; ``far above``
    (``far under``) where it is too large to print (a figure of ``1e308`` overflows it to infinity:
    never ``inf`` or ``nan`` in user text).

    >>> times(12.5), times(float("inf")), times(1e3, "under"), times(float("nan"), "under")
    ('12.5x', 'far above', '1e+03x under', 'far under')
    """
    if not math.isfinite(ratio):
        return f"far {relation or 'above'}"
    return f"{ratio:,.3g}x {relation}".rstrip()


# figures that are times: a rate too fast is written as a time too short
_TIME_KEYS: Final = frozenset({"step_time_s", "time_to_train_s", "gpu_hours"})


def check_below_peak(
    reading: Reading,
    flop_per_s_per_gpu: float | None,
    accelerator: Accelerator,
    flop_basis: str,
    *,
    syntax: RowSyntax = TABLE_ROW,
) -> None:
    """Refuse a reading whose rate, at the fewest FLOPs the work can cost (``flop_basis`` says
    which), is more than one GPU's fastest dense peak in any floating-point format: no run reaches
    it, so the unit or the scope was misread (a job's rate under a per-GPU label, ``k`` for ``M``).
    A time (a step time, a time to train) is checked as the rate it implies. ``flop_per_s_per_gpu``
    is ``None`` where the reading implies no rate; the fix is said in the row format's ``syntax``."""
    peak = fastest_dense_peak(accelerator)
    if flop_per_s_per_gpu is None or peak is None or flop_per_s_per_gpu <= peak:
        return
    time = reading.key in _TIME_KEYS
    raise RowError(
        f"'{reading.metric_text}' = '{reading.value_text}' {'implies' if time else 'is'} "
        f"{times(flop_per_s_per_gpu / peak)} one {accelerator.name}'s fastest dense peak ({peak / 1e12:,.0f} "
        f"TFLOP/s) at {flop_basis}: no run reaches that; check {syntax.unit} and "
        + ("the tokens it counts" if time else syntax.scope)
    )


def check_training_figure(
    reading: Reading,
    model: TransformerSpec,
    accelerator: Accelerator,
    num_gpus: int,
    *,
    seq_len: int,
    tokens_per_step: float | None,
    syntax: RowSyntax = TABLE_ROW,
) -> None:
    """Refuse a training figure no run reaches, the one check of table and structured rows: a
    reading's own problem (a utilization of 100% or more, :func:`~.readings.utilization_problem`),
    and a rate above one GPU's fastest dense peak at 6 FLOPs per active parameter per token, or a
    time below the one that rate takes (a step of ``tokens_per_step`` tokens, ``None`` where the
    batch was assumed; a time to train or GPU-hours of the tokens the reading counts); the fix is
    said in the row format's ``syntax``."""
    if reading.problem:
        raise RowError(reading.problem)
    implied = _training_flop_per_s_per_gpu(reading, model, num_gpus, seq_len, tokens_per_step)
    check_below_peak(reading, implied, accelerator, "6 FLOPs per active parameter per token", syntax=syntax)
    _check_not_too_slow(reading, implied, accelerator, num_gpus, syntax=syntax)


# The least share of one GPU's fastest dense peak a training figure, a rate or a time, may imply (at
# 6 FLOPs per active parameter per token): 0.5%. The slowest published runs reach about 5% of their
# BF16 peak (small models, slow networks), at least 1.25% of the fastest peak (FP4 on Blackwell is 4x
# BF16); a figure in the wrong unit (s for ms, tokens/s for thousands of them, 1,000x) or a thousands
# slip is a hundred times below this
TRAINING_MIN_PEAK_FRACTION: Final = 0.005
# a number written with a point every three digits (``5.000``, ``1.050``, ``82.000``): Europe's
# thousands separator, 5,000 and 1,050
_EUROPEAN_THOUSANDS: Final = re.compile(r"^\s*\d{1,3}(?:\.\d{3})+\s*$")


def _check_not_too_slow(
    reading: Reading,
    flop_per_s_per_gpu: float | None,
    accelerator: Accelerator,
    num_gpus: int,
    *,
    syntax: RowSyntax,
) -> None:
    """Refuse a training figure (a rate, a step time, a time to train, GPU-hours) so slow that the
    rate it implies is under :data:`TRAINING_MIN_PEAK_FRACTION` of one GPU's fastest dense peak: the
    unit or the number was misread (``16,000`` s for a 16 s step, ``1.050`` tokens/s for 1,050)."""
    peak = fastest_dense_peak(accelerator)
    if flop_per_s_per_gpu is None or peak is None:
        return
    fraction = flop_per_s_per_gpu / peak
    if fraction >= TRAINING_MIN_PEAK_FRACTION:
        return
    time = reading.key in _TIME_KEYS
    raise RowError(
        f"'{reading.metric_text}' = '{reading.value_text}' {'implies' if time else 'is'} {fraction:.2%} of "
        f"one {accelerator.name}'s fastest dense peak ({peak / 1e12:,.0f} TFLOP/s) at 6 FLOPs per active "
        f"parameter per token, under the {TRAINING_MIN_PEAK_FRACTION:.1%} the slowest published runs "
        f"exceed: {_likely_slip(reading, fraction, time=time)}{_one_gpus(reading, fraction, num_gpus)}; "
        f"check {syntax.unit} and " + ("the tokens it counts" if time else syntax.scope)
    )


def _one_gpus(reading: Reading, fraction: float, num_gpus: int) -> str:
    """``, or one GPU's figure ...``: a job's rate on several GPUs may be one GPU's, mislabelled."""
    if reading.key not in _JOB_RATE_KEYS or num_gpus <= 1:
        return ""
    return f", or one GPU's figure under the job's label ({num_gpus:,}x: {fraction * num_gpus:.1%} of peak)"


# training rates of the whole job (a time is the job's too, but no one GPU's figure is a time)
_JOB_RATE_KEYS: Final = frozenset({"tokens_per_s", "samples_per_s"})


def _likely_slip(reading: Reading, fraction: float, *, time: bool, of_what: str = "of peak") -> str:
    """The likely cause of a figure far too slow, in words: a European thousands separator
    (``5.000`` for 5,000), else a unit 1,000x off, with the share (``fraction`` ``of_what``) the
    right one would be."""
    written = reading.value_text.strip()
    if _EUROPEAN_THOUSANDS.match(written):
        return f"'{written}' may be {written.replace('.', ',')} written with a European thousands separator"
    unit = "in a unit 1,000x shorter" if time else "1,000x larger"
    return f"a unit slip (the same figure {unit} would be {fraction * 1e3:.1%} {of_what})"


def _training_flop_per_s_per_gpu(
    reading: Reading,
    model: TransformerSpec,
    num_gpus: int,
    seq_len: int,
    tokens_per_step: float | None = None,
) -> float | None:
    """The FLOP/s per GPU a training reading implies at 6 FLOPs per active parameter per token (its
    own figure for TFLOP/s, the tokens over the time for a time); ``None`` for a reading that
    implies no rate."""
    value = reading.value
    if value is None or not value > 0:
        return None
    if reading.key == "tflop_per_s_per_gpu":
        return value * 1e12
    tokens = _training_tokens_per_s_per_gpu(
        reading.key,
        value,
        num_gpus,
        seq_len=seq_len,
        tokens_per_step=tokens_per_step,
        num_tokens=reading.num_tokens,
    )
    return (
        None
        if tokens is None
        else tokens * TRAIN_FLOP_PER_TOKEN_PER_PARAM * parameter_counts(model).active_params
    )


def _training_tokens_per_s_per_gpu(
    key: str,
    value: float,
    num_gpus: int,
    *,
    seq_len: int,
    tokens_per_step: float | None,
    num_tokens: float | None,
) -> float | None:
    """Tokens per second per GPU a training figure ``value`` of ``key`` states (``None``: none)."""
    rates = {
        "tokens_per_s": value / num_gpus,
        "tokens_per_s_per_gpu": value,
        "samples_per_s": value * seq_len / num_gpus,
        "samples_per_s_per_gpu": value * seq_len,
    }
    if key in rates:
        return rates[key]
    if key == "step_time_s" and tokens_per_step is not None:
        return tokens_per_step / value / num_gpus
    if key == "time_to_train_s" and num_tokens is not None:
        return num_tokens / value / num_gpus
    if key == "gpu_hours" and num_tokens is not None:
        return num_tokens / (value * 3600.0)
    return None


# How far under its physical floor a serving latency may be before it is refused: a decode step can
# emit several tokens of one stream (speculative decoding's accepted drafts: EAGLE-3 reports
# acceptance lengths of up to about 6.5, DeepSeek-V3's MTP about 1.8) and the floors take the
# fastest peak and the fewest bytes; 10 covers them, and a unit misread (ms for s, us for ms) is
# 1,000 times off
LATENCY_FLOOR_TOLERANCE: Final = 10.0


# The longest a served request's latency may be: a day (86,400 s). The benchmarks the rows quote
# (vLLM's and SGLang's bench_serving, trtllm-bench, genai-perf, MLPerf's LoadGen, whose runs last
# about ten minutes) time requests that end inside their run, and the slowest serving published, a
# 175B model streamed from host memory and disk to one GPU (FlexGen's offloading runs), takes hours
# per batch, not days; a latency over a day (a TTFT of 1e30 ms) is a misread unit or exponent. The
# floors below bound a latency from under; this bounds it from over, whatever the catalog knows.
LATENCY_CEILING_S: Final = 86_400.0

# the serving latencies in the words a refusal uses
LATENCY_WORDS: Final = {
    "ttft_s": "TTFT",
    "tpot_s": "TPOT",
    "itl_s": "ITL",
    "request_latency_s": "end-to-end request latency",
}
_SERVING_TIME_KEYS: Final = frozenset(LATENCY_WORDS)


@dataclass(frozen=True)
class ServingFloor(Record):
    """The least time (s) one request's first token and each later token take on a deployment:
    ``step_s`` streams the active weights once from the HBM of one replica's GPUs, ``prefill_s``
    computes the prompt at their fastest dense peak (2 FLOPs per active parameter per token)."""

    step_s: float
    prefill_s: float
    output_tokens: int

    def of(self, key: str) -> float | None:
        """The floor of a latency ``key`` (s), ``None`` for another quantity."""
        first = max(self.step_s, self.prefill_s)
        floors = {
            "ttft_s": first,
            "tpot_s": self.step_s,
            "itl_s": self.step_s,
            "request_latency_s": first + max(self.output_tokens - 1, 0) * self.step_s,
        }
        return floors.get(key)


def serving_floor(
    model: TransformerSpec, accelerator: Accelerator, plan: InferencePlan, load: ServingLoad
) -> ServingFloor | None:
    """The :class:`ServingFloor` of ``model`` served as ``plan`` (one replica's GPUs share the work;
    its weights in the fewer bytes of its precision and ``effective_bits``) at ``load``'s lengths;
    ``None`` where the catalog lacks a figure."""
    peak = fastest_dense_peak(accelerator)
    bandwidth = accelerator.memory_bandwidth_bytes_per_s
    if peak is None or not bandwidth:
        return None
    weight_bytes = _weight_bytes_per_param(plan)
    replica_gpus = plan.tp * plan.pp * plan.dp_attention
    active = parameter_counts(model).active_params
    return ServingFloor(
        step_s=active * weight_bytes / (replica_gpus * bandwidth),
        prefill_s=SERVE_FLOP_PER_TOKEN_PER_PARAM * active * load.input_tokens / (replica_gpus * peak),
        output_tokens=load.output_tokens,
    )


def _output_share(key: str, load: ServingLoad) -> float | None:
    """The output tokens one unit of a serving throughput ``key`` (with no ``_per_gpu``) counts, at
    ``load``'s requests of ``input_tokens`` -> ``output_tokens``: a prefix cache may serve a prompt
    without compute, never a request's output tokens, each at least one forward pass of the active
    weights. ``None`` for a key that is no throughput."""
    isl, osl = load.input_tokens, load.output_tokens
    shares = {
        "output_tokens_per_s": 1.0,
        "input_tokens_per_s": osl / isl,
        "total_tokens_per_s": osl / (isl + osl),
        "requests_per_s": float(osl),
    }
    return shares.get(key)


def _output_tokens_per_s_per_gpu(reading: Reading, load: ServingLoad, num_gpus: int) -> float | None:
    """The output tokens per second per GPU a serving throughput implies at ``load``'s lengths on
    the row's ``num_gpus`` (:func:`_output_share`); ``None`` for a reading that is no throughput."""
    value = reading.value
    base = reading.key.removesuffix("_per_gpu")
    share = _output_share(base, load)
    if share is None or value is None:
        return None
    per_gpu = value if base != reading.key else value / num_gpus
    return per_gpu * share


def _throughput_basis(reading: Reading, load: ServingLoad) -> str:
    """How :func:`check_below_peak` counts a serving throughput's FLOPs, in words."""
    basis = "2 FLOPs per active parameter per output token"
    if reading.key.startswith("output_tokens"):
        return basis
    return f"{basis}, {load.output_tokens:,} output tokens per request of {load.input_tokens:,} prompt tokens"


def check_serving_figure(
    reading: Reading,
    model: TransformerSpec,
    accelerator: Accelerator,
    plan: InferencePlan,
    load: ServingLoad,
    *,
    num_gpus: int | None = None,
    syntax: RowSyntax = TABLE_ROW,
) -> None:
    """Refuse a serving figure no run reaches, the one check of table and structured rows: a
    throughput above one GPU's fastest dense peak at 2 FLOPs per active parameter per output token
    (:func:`check_below_peak`; a rate of prompt tokens or requests by the output tokens of the
    requests it counts, at ``load``'s lengths on the row's ``num_gpus``, ``None``: the plan's), a
    reading's own problem, a latency more than :data:`LATENCY_FLOOR_TOLERANCE` times under its
    :func:`serving_floor` or over :data:`LATENCY_CEILING_S` (a one-user speed as the time per token
    it implies): the unit was misread. The fix is said in the row format's ``syntax``."""
    gpus = plan.num_gpus if num_gpus is None else num_gpus
    output_rate = _output_tokens_per_s_per_gpu(reading, load, gpus)
    flop_rate = None if output_rate is None else output_rate * SERVE_FLOP_PER_TOKEN_PER_PARAM * _active(model)
    check_below_peak(reading, flop_rate, accelerator, _throughput_basis(reading, load), syntax=syntax)
    if reading.problem:
        raise RowError(reading.problem)
    floor = serving_floor(model, accelerator, plan, load)
    if output_rate is not None and flop_rate is not None and floor is not None:
        _check_throughput_not_too_slow(
            reading,
            model,
            accelerator,
            num_gpus=gpus,
            output_tokens_per_s=output_rate * gpus,
            flop_per_s_per_gpu=flop_rate,
            floor=floor,
            load=load,
            syntax=syntax,
        )
        _check_not_slower_than_one_stream(
            reading, model, accelerator, plan, load, output_tokens_per_s=output_rate * gpus, syntax=syntax
        )
    value = reading.value
    if value is None or not value > 0 or not math.isfinite(value):
        return
    per_user = reading.key == "output_tokens_per_s_per_user"
    if reading.key not in _SERVING_TIME_KEYS and not per_user:
        return
    seconds = 1.0 / value if per_user else value
    _check_under_a_day(reading, seconds, per_user=per_user, syntax=syntax)
    if floor is not None and (per_user or reading.key in _DECODE_STEP_KEYS):
        _check_step_not_too_long(reading, seconds, accelerator, floor, per_user=per_user, syntax=syntax)
    least = None if floor is None else floor.step_s if per_user else floor.of(reading.key)
    if least is None or seconds * LATENCY_FLOOR_TOLERANCE >= least:
        return
    what = (
        f"the {1.0 / least:,.0f} tokens/s one stream reaches"
        if per_user
        else f"the least {LATENCY_WORDS[reading.key]} of {least * 1e3:.3g} ms"
    )
    relation = times(least / seconds, "above" if per_user else "under")
    raise RowError(
        f"'{reading.metric_text}' = '{reading.value_text}' is {relation} {what} on {accelerator.name} (the "
        "active weights streamed once per token from the replica's HBM, the prompt at the fastest dense "
        f"peak): no run is more than {LATENCY_FLOOR_TOLERANCE:g}x past it; check {syntax.latency_unit} and "
        "the GPUs"
    )


# The longest a decode step may take, in multiples of the slowest one a GPU can run at its full
# speed: every byte of its memory read once (weights and every request's KV cache live there) and a
# whole prompt computed at the fastest dense peak. The slowest published steps take about 5 times
# that (70B models under heavy load, MLPerf's interactive runs); 100 leaves 20 times over them, and a
# time per token in the wrong unit (s for ms) is 1,000 times off
DECODE_STEP_CEILING_FACTOR: Final = 100.0
_DECODE_STEP_KEYS: Final = frozenset({"tpot_s", "itl_s"})


def _check_step_not_too_long(
    reading: Reading,
    seconds: float,
    accelerator: Accelerator,
    floor: ServingFloor,
    *,
    per_user: bool,
    syntax: RowSyntax,
) -> None:
    """Refuse a time per output token (a TPOT, an ITL, a one-user speed's time per token,
    ``seconds``) over :data:`DECODE_STEP_CEILING_FACTOR` times the slowest decode step at full
    speed (:data:`DECODE_STEP_CEILING_FACTOR`'s note): the unit was misread."""
    slowest = _slowest_step_s(accelerator, floor)
    if seconds <= DECODE_STEP_CEILING_FACTOR * slowest:
        return
    what = "one token every" if per_user else "a time per token of"
    raise RowError(
        f"'{reading.metric_text}' = '{reading.value_text}' is {what} {seconds:,.3g} s, "
        f"{times(seconds / slowest)} the slowest decode step on {accelerator.name} ({slowest * 1e3:.3g} ms: "
        "every byte of a GPU's memory read once and a whole prompt at the fastest dense peak): no run is "
        f"more than {DECODE_STEP_CEILING_FACTOR:g}x past it: a unit slip (ms written as s?); check "
        f"{syntax.latency_unit}"
    )


def _slowest_step_s(accelerator: Accelerator, floor: ServingFloor) -> float:
    """The slowest decode step a GPU runs at full speed (s): every byte of its memory read once and
    a whole prompt at the fastest dense peak (:data:`DECODE_STEP_CEILING_FACTOR`)."""
    return accelerator.memory_nominal_bytes / accelerator.memory_bandwidth_bytes_per_s + floor.prefill_s


# the fewest bytes a KV cache keeps a value in (FP4 caches on Blackwell)
_LEAST_KV_PRECISION: Final = "fp4"


def _most_running(model: TransformerSpec, accelerator: Accelerator, load: ServingLoad, num_gpus: int) -> int:
    """The most requests ``num_gpus`` GPUs can run at once: their whole memory as KV cache in
    :data:`_LEAST_KV_PRECISION`, a request of the load's prompt and output tokens each; at least one
    (requests past it wait in a queue, and waiting emits no tokens)."""
    per_request = kv_cache_bytes_per_token(model, _LEAST_KV_PRECISION) * (
        load.input_tokens + load.output_tokens
    )
    if not per_request > 0:
        return 1
    return max(1, int(num_gpus * accelerator.memory_nominal_bytes // per_request))


def _check_throughput_not_too_slow(
    reading: Reading,
    model: TransformerSpec,
    accelerator: Accelerator,
    *,
    num_gpus: int,
    output_tokens_per_s: float,
    flop_per_s_per_gpu: float,
    floor: ServingFloor,
    load: ServingLoad,
    syntax: RowSyntax,
) -> None:
    """Refuse a serving throughput (the job's ``output_tokens_per_s`` on ``num_gpus``) so slow that
    each request in flight (the load's concurrency, at most :func:`_most_running`; one where it runs
    as many as fit) would wait longer for each
    output token than :data:`DECODE_STEP_CEILING_FACTOR` times the slowest decode step, with the
    prompts of the requests in flight spread over their output tokens (a prefill-only run, one
    output token a request, computes every prompt in each step): the number was misread (``5.000``
    for 5,000). An open loop (a request rate) may keep under one request in flight, so its
    throughput has no such floor."""
    if load.arrival_rate_per_s is not None or not output_tokens_per_s > 0:
        return
    in_flight = min(load.concurrency or 1, _most_running(model, accelerator, load, num_gpus))
    seconds = in_flight / output_tokens_per_s
    prompts_per_step = max(1.0, in_flight / load.output_tokens)
    slowest = _slowest_step_s(accelerator, floor) + (prompts_per_step - 1.0) * floor.prefill_s
    if seconds <= DECODE_STEP_CEILING_FACTOR * slowest:
        return
    peak = fastest_dense_peak(accelerator)
    share = f"{flop_per_s_per_gpu / peak:.3%} of one GPU's fastest dense peak, " if peak else ""
    requests = f"each of {in_flight:,} requests" if in_flight > 1 else "even one request"
    raise RowError(
        f"'{reading.metric_text}' = '{reading.value_text}' implies one output token every {seconds:,.3g} s "
        f"for {requests} in flight ({share}{_throughput_basis(reading, load)}), {times(seconds / slowest)} "
        f"the slowest decode step on {accelerator.name} ({slowest * 1e3:.3g} ms), past the "
        f"{DECODE_STEP_CEILING_FACTOR:g}x no run exceeds: {_likely_slip(reading, 0.0, time=False)}; check "
        f"{syntax.unit} and {syntax.scope}"
    )


# How many times slower than one request decoding alone (:func:`one_stream_tokens_per_s`) a serving
# deployment's output rate may be: batching, more GPUs and more requests only add to that stream's
# rate, and the stream itself reaches a good share of its roofline (single-request decode runs at
# about half the HBM bandwidth in vLLM and TensorRT-LLM); 100 leaves room for a slow stack, for
# tensor parallelism's collectives at batch 1, and for weights streamed from host memory, while a
# thousands slip (``1.050`` for 1,050) or a unit 1,000x off falls far below it
ONE_STREAM_FLOOR_FACTOR: Final = 100.0
# the widest KV cache a server keeps (16-bit); one request reads its own at its longest every step
_WIDEST_KV_PRECISION: Final = "bf16"


def one_stream_tokens_per_s(
    model: TransformerSpec, accelerator: Accelerator, plan: InferencePlan, load: ServingLoad
) -> float | None:
    """The output tokens per second one request reaches decoding alone on ONE GPU at its HBM
    roofline: each token reads the active weights (in the plan's weight bytes) and the request's
    own KV cache at its longest (prompt and output, 16-bit) once, and its prompt is computed at the
    fastest dense peak, spread over its output tokens. A deployment of any size is no slower than
    that by more than :data:`ONE_STREAM_FLOOR_FACTOR`; ``None`` where the catalog lacks a figure."""
    peak = fastest_dense_peak(accelerator)
    bandwidth = accelerator.memory_bandwidth_bytes_per_s
    if peak is None or not bandwidth:
        return None
    weight_bytes = _weight_bytes_per_param(plan) * _active(model)
    kv_bytes = kv_cache_bytes_per_token(model, _WIDEST_KV_PRECISION) * (
        load.input_tokens + load.output_tokens
    )
    prefill_s = SERVE_FLOP_PER_TOKEN_PER_PARAM * _active(model) * load.input_tokens / peak
    return 1.0 / ((weight_bytes + kv_bytes) / bandwidth + prefill_s / load.output_tokens)


def _weight_bytes_per_param(plan: InferencePlan) -> float:
    """Bytes a weight takes in ``plan``: its precision's, fewer where ``effective_bits`` says so."""
    weight_bytes = bytes_per_element(plan.precision)
    if plan.effective_bits is not None:
        weight_bytes = min(weight_bytes, plan.effective_bits / 8.0)
    return weight_bytes


def _check_not_slower_than_one_stream(
    reading: Reading,
    model: TransformerSpec,
    accelerator: Accelerator,
    plan: InferencePlan,
    load: ServingLoad,
    *,
    output_tokens_per_s: float,
    syntax: RowSyntax,
) -> None:
    """Refuse a serving throughput (the job's ``output_tokens_per_s``) more than
    :data:`ONE_STREAM_FLOOR_FACTOR` times under :func:`one_stream_tokens_per_s`; an open loop's
    under the output tokens its requests bring too (``requests/s x output tokens``: a server that
    keeps up emits those, one that does not runs at least one stream): the number or its unit was
    misread."""
    stream = one_stream_tokens_per_s(model, accelerator, plan, load)
    if stream is None or not output_tokens_per_s > 0:
        return
    least = stream
    if load.arrival_rate_per_s is not None:
        least = min(stream, load.arrival_rate_per_s * load.output_tokens)
    if output_tokens_per_s * ONE_STREAM_FLOOR_FACTOR >= least:
        return
    share = output_tokens_per_s / stream
    offered = f" (the requests sent, {least:,.3g} output tokens/s, are fewer)" if least < stream else ""
    raise RowError(
        f"'{reading.metric_text}' = '{reading.value_text}' is {_output_words(reading, output_tokens_per_s)}"
        f"{share:.3%} of the {stream:,.0f} output tokens/s one request reaches decoding alone on one "
        f"{accelerator.name}{offered} (its active weights and KV cache read once a token from HBM, its "
        f"prompt at the fastest dense peak): no deployment is more than {ONE_STREAM_FLOOR_FACTOR:g}x "
        f"slower: {_likely_slip(reading, share, time=False, of_what='of it')}; check {syntax.unit} and "
        f"{syntax.scope}"
    )


def _output_words(reading: Reading, output_tokens_per_s: float) -> str:
    """``''`` for the job's output rate as written, else the output rate it implies."""
    if reading.key == "output_tokens_per_s":
        return ""
    return f"{output_tokens_per_s:,.3g} output tokens/s for the job, "


def _active(model: TransformerSpec) -> float:
    return float(parameter_counts(model).active_params)


def _check_under_a_day(reading: Reading, seconds: float, *, per_user: bool, syntax: RowSyntax) -> None:
    """Refuse a latency (or a one-user speed's time per token, ``seconds``) over
    :data:`LATENCY_CEILING_S`."""
    if seconds <= LATENCY_CEILING_S:
        return
    what = "one token every" if per_user else "a latency of"
    raise RowError(
        f"'{reading.metric_text}' = '{reading.value_text}' is {what} {seconds:,.3g} s, "
        f"{times(seconds / LATENCY_CEILING_S)} a day: no served request waits more than a day "
        f"({LATENCY_CEILING_S:,.0f} s; benchmarks time requests that end inside a run of minutes); "
        f"check {syntax.latency_unit}"
    )


__all__ = [
    "DECODE_STEP_CEILING_FACTOR",
    "LATENCY_CEILING_S",
    "LATENCY_FLOOR_TOLERANCE",
    "ONE_STREAM_FLOOR_FACTOR",
    "SERVE_FLOP_PER_TOKEN_PER_PARAM",
    "TRAINING_MIN_PEAK_FRACTION",
    "TRAIN_FLOP_PER_TOKEN_PER_PARAM",
    "ServingFloor",
    "check_below_peak",
    "check_serving_figure",
    "check_training_figure",
    "fastest_dense_peak",
    "one_stream_tokens_per_s",
    "serving_floor",
    "times",
]
