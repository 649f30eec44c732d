"""The quantity a metric piece of a published row names: the training and inference vocabularies.

:func:`train_key` and :func:`infer_key` turn a lower-case metric piece into the key of the quantity
it names (``tokens_per_s_per_gpu``, ``step_time_s``, ``mfu``, ``ttft_s``, ``output_tokens_per_s``
...; ``''`` when it names none), as logs, papers and benchmark tools word it; :func:`piece_key`
picks the vocabulary of a row's kind. A formula written in the metric explains it and does not
name it (:func:`without_formulas`), except that one counting prompt and generated tokens makes a
token rate the total one (:func:`total_by_formula`). :func:`not_predicted_reason` says why a
metric that names a figure is not one a prediction can be judged against (``goodput``, a peak).
The cells' numbers, units and scopes are read by :mod:`lightspeed.sol.validation.readings`.
"""

from __future__ import annotations

import re
from typing import Final

# A speed one user sees: ``tokens/s/user``, ``per-user``, ``interactivity``, ``perceived tokens per
# second`` (what a streaming reader perceives, one request's own rate).
PER_USER: Final = re.compile(
    r"/\s*user|\bper[\s-]+(?:user|request)\b|interactivity|perceived|\brequest\s+output\s+throughput"
)


# Per accelerator, as sources write it: a GPU, a TPU chip, a Gaudi card, an NPU, a device, or the
# part by name (Fast-LLM's ``tokens/s/H100``, ``per A100``, ``/MI300X``), or a rank (one GPU's
# process: the LMSYS MTP post's ``Throughput (tokens/sec) Per Rank``).
PER_ACCELERATOR: Final = re.compile(
    r"(?:/\s*|\bper[\s-]+)"
    r"(?:gpu|chip|accelerator|device|card|rank|[hnx]pu|g?[abhlv]\d{2,3}|mi\d{3}[ax]?|gaudi\s*\d?)s?\b"
)


# A token rate as sources write it: ``tok/s``, ``tokens/sec``, ``tokens per second``, ``TPS``
# (NVIDIA's blogs, torchtitan's tables), ``WPS`` (torchtitan's older logs), ``TGS``, and named
# without ``/s``: genai-perf's ``Output Token Throughput (per sec)``, LLMPerf's
# ``mean_output_throughput_token_per_s`` (snake case read as words).
_TOKEN_RATE: Final = re.compile(
    r"tok(?:en)?s?\s*/\s*s|\btokens?[\s_]+per[\s_]+s(?:ec(?:ond)?)?\b|\b[tw]ps\b|\btgs\b|\btokens?\s+throughput\b"
)
# Tokens per GPU per second (``TGS``, as InternEvo's and other logs write it; ``tokens per GPU per
# second``, ``tokens/GPU/s``, FlagPerf's ``token/p/s``, per processor): a per-GPU rate.
_PER_GPU_TOKEN_RATE: Final = re.compile(
    r"\btgs\b|\btok(?:en)?s?\s*(?:/|per)\s*(?:gpu|chip|device|card|p)\s*(?:/|per)\s*s(?:ec(?:ond)?)?\b"
)


# The time of one training step as logs and papers word it: ``step time``, ``iteration time``,
# ``time per step``, NeMo Automodel's ``Time per Global Step``, ``wall-clock per step``, ``seconds
# per iteration``, ``sec/it``, ``ms/step``.
_STEP_TIME: Final = re.compile(
    r"(?:iter(?:ation)?|step)[\s-]+tim(?:e|ing)"
    r"|(?:time|wall[\s-]*clock)\s*(?:per|/)\s*(?:(?:global|training|train)\s+)?(?:step|iter(?:ation)?)\b"
    r"|\b(?:seconds?|secs?|s|ms|milliseconds?)\s*(?:/|per)\s*(?:step|it(?:er(?:ation)?)?)\b"
)
# Steps per second (Hugging Face's ``train_steps_per_second``, tqdm's ``it/s``): a step time's inverse.
_STEP_RATE: Final = re.compile(r"\b(?:steps?|it(?:er(?:ation)?s?)?)\s*(?:/|per)\s*s(?:ec(?:ond)?)?\b")
# FLOP utilization spelled out: ``Model FLOPs Utilization``, ``hardware FLOP utilisation``.
_SPELLED_UTILIZATION: Final = re.compile(r"\b(model|hardware)\s+flops?\s+utili[sz]ation")
# Training samples per second: ``samples/s``, ``samples/sec``, ``samp/s``, ``seq/s``,
# ``sequences per second``.
_SAMPLE_RATE_TRAIN: Final = re.compile(
    r"(?:samp(?:les?)?|seqs?|sequences?)\s*(?:/\s*s(?:ec(?:ond)?)?\b|per\s+sec(?:ond)?\b)"
)


def train_key(metric: str) -> str:
    """The training quantity a lower-case metric piece names ('' if none)."""
    if "gpu-hours" in metric or "gpu hours" in metric:
        return "gpu_hours"
    if _STEP_TIME.search(metric):
        return "step_time_s"
    if _STEP_RATE.search(metric):
        return "steps_per_s"
    spelled = _SPELLED_UTILIZATION.search(metric)
    if "hfu" in metric or (spelled and spelled.group(1) == "hardware"):
        return "hfu"
    if "mfu" in metric or spelled:
        return "mfu"
    if names_peta(metric):
        # ``PFLOP/s per GPU`` is one GPU's rate, in PFLOP/s (converted by the cell reader)
        return "tflop_per_s_per_gpu" if PER_ACCELERATOR.search(metric) else "pflop_per_s"
    if _names_tera(metric):
        # ``TFLOP/s (aggregate)`` is the job's rate, as ``aggregate PFLOP/s`` is
        aggregate = _AGGREGATE.search(metric) and not PER_ACCELERATOR.search(metric)
        return "pflop_per_s" if aggregate else "tflop_per_s_per_gpu"
    if "memory" in metric and ("gib" in metric or "gb" in metric):
        return "memory_per_gpu_bytes"
    if _PER_GPU_TOKEN_RATE.search(metric):
        return "tokens_per_s_per_gpu"
    if _TOKEN_RATE.search(metric):
        return "tokens_per_s"
    if _SAMPLE_RATE_TRAIN.search(metric):
        return "samples_per_s"
    if _TIME_TO_TRAIN.search(metric) or metric.startswith(("days", "hours")):
        return "time_to_train_s"
    return ""


_AGGREGATE: Final = re.compile(r"\b(?:aggregate|total|cluster|whole\s+job)\b")


def names_peta(metric: str) -> bool:
    return "pflop" in metric or "petaflop" in metric or "aggregate pf" in metric


def _names_tera(metric: str) -> bool:
    return "tflop" in metric or "teraflop" in metric or bool(re.search(r"\btf\b(?!\s*32)", metric))


# "time to train", "time-to-train", "train(ing) time to/for N tokens", "wall-clock (time) to N tokens"
_TIME_TO_TRAIN: Final = re.compile(
    r"time[\s-]+to[\s-]+train|train(?:ing)?[\s-]+time|wall[\s-]*clock(?:[\s-]+time)?\s+(?:to|for)\b"
)


# The right-hand side of a formula written in a metric cell ("out_tps=OSL*BS/latency/TP").
_FORMULA: Final = re.compile(r"=[^,;)]*")


def piece_key(metric: str, kind: str) -> str:
    lowered = without_formulas(metric.lower()).replace("_", " ")
    return train_key(lowered) if kind == "train" else infer_key(lowered)


def without_formulas(metric: str) -> str:
    """``metric`` with the right-hand side of every formula in it left out.

    >>> without_formulas("output tokens/s/GPU (offline, out_tps=OSL*BS/latency/TP)")
    'output tokens/s/GPU (offline, out_tps)'
    """
    return _FORMULA.sub("", metric)


def total_by_formula(key: str, metric: str, lowered: str) -> str:
    """``key``, or the total token rate where a token rate that names no side is defined by a
    formula counting both (vLLM's offline benchmark: ``tokens_per_second (= total_num_tokens /
    elapsed_time)``, prompt and generated tokens together)."""
    if key != "output_tokens_per_s" or re.search(r"output|generat|complet|decode", lowered):
        return key
    formulas = " ".join(_FORMULA.findall(metric)).replace("_", " ")
    return "total_tokens_per_s" if _BOTH_SIDES.search(formulas) else key


# Requests per second (``req/s``, ``requests/sec``, ``requests per second``, ``RPS``, genai-perf's
# ``Request Throughput (per sec)``); not a token rate that mentions a request (``tokens/sec at one
# request per time``).
_REQUEST_RATE: Final = re.compile(
    r"\breq(?:uest)?s?\s*(?:/\s*s(?:ec(?:ond)?)?\b|per\s+sec(?:ond)?\b)|\brps\b|\brequests?\s+throughput\b"
)
_SAMPLE_RATE: Final = re.compile(r"(?:samples?|quer(?:y|ies))\s*(?:/\s*s\b|per second)|\bqps\b")


# The time per output token as sources write it: ``TPOT``, ``time per output token``, MLPerf's
# ``Time to Output Token`` (``Mean Time to Output Token (ns)``), ``latency per token``,
# ``per-token latency``, ``ms/token``: one request's decode time over its tokens.
_PER_OUTPUT_TOKEN: Final = re.compile(
    r"\btpot\b|(?:per|to)[\s-]+output[\s-]+token|(?:latency|time)\s+per\s+token|per[\s-]+token\s+latency"
    r"|\b(?:ms|milliseconds?|s|secs?|seconds?)\s*(?:/|per)\s*(?:output\s+)?token\b"
)
# The gap between two tokens of a stream as sources write it: ``ITL`` (vLLM, SGLang, genai-perf's
# ``Inter Token Latency``), ``inter-token latency``, ``TBT`` / ``time between tokens`` (Sarathi,
# DistServe), ``token-to-token latency``: its mean and percentiles are over every gap, not over
# requests (a prompt that stalls a batch makes a long gap for every stream in it).
_INTER_TOKEN: Final = re.compile(
    r"\bitl\b|\binter[\s-]*token\b|\btbt\b|time\s+between\s+tokens|token[\s-]+to[\s-]+token"
)
# A request's whole latency: ``E2E``, vLLM's ``E2EL``, ``end-to-end``, ``request latency``, k6's
# ``http_req_duration``.
_END_TO_END: Final = re.compile(
    r"\be2el?\b|end[\s-]+to[\s-]+end|\blatenc(?:y|ies)\b|\breq(?:uest)?\s+duration\b"
)


# The first token as sources write it: ``first-token latency``, ``TTFT``, ``1st Token Latency (ms)``.
_FIRST_TOKEN: Final = re.compile(r"\b(?:first|1st)[\s-]+token\b|ttft")
# Prompt tokens processed per second (``prefill throughput``, vLLM's ``Avg prompt throughput``,
# SGLang's ``Input token throughput``, ``input tokens/s``): the input side of a token rate, named
# next to the rate, not as a length (``tokens/s at 1000 input tokens`` is output tokens).
_INPUT_SIDE: Final = re.compile(r"(?<![\dk]\s)\b(?:input|prompt|prefill)\s+(?:tokens?|tok|throughput)\b")
# Both sides counted (``Total Token throughput``, ``input+output tokens/s``, ``(input + output) tok/s``).
# A rate of prompt and generated tokens together: ``total tokens``, ``total tok/s`` (SGLang's
# cookbook tables), vLLM's offline benchmark's ``total_num_tokens / elapsed_time``, ``input +
# output``, ``prompt + generated``.
_BOTH_SIDES: Final = re.compile(
    r"\btotal[\s_]+(?:num[\s_]+)?(?:tokens?|tok)\b"
    r"|\b(?:input|prompt)\s*(?:\+|and|&)\s*(?:output|generat|completion)"
)
# Figures no steady-state prediction is: ``goodput`` (the requests within an SLO), a ``peak`` rate
# over a short window, a benchmark's ``total latency`` or ``duration`` (grows with the request
# count), ``time to second token``, request counts.
_NOT_A_SERVING_RATE: Final = re.compile(
    r"\bgoodput\b|\bpeak\s+(?:output\s+token|concurren)|total\s+latency"
    r"|(?:benchmark|total|test|run|wall)\s+duration|second\s+token|successful\s+requests"
)


def infer_key(metric: str) -> str:
    """The inference quantity a lower-case metric piece names ('' if none).

    >>> infer_key("bs1, 2048-token prefill, first-token latency"), infer_key("output tokens/s/user")
    ('ttft_s', 'output_tokens_per_s_per_user')
    >>> infer_key("mean time to output token (ns)"), infer_key("inter token latency (ms) avg")
    ('tpot_s', 'itl_s')
    >>> infer_key("input token throughput (tok/s)"), infer_key("goodput (req/s)")
    ('input_tokens_per_s', '')
    >>> infer_key("latency tok/s (c=1)")  # a latency written as a token rate: one request's speed
    'output_tokens_per_s_per_user'
    """
    if _NOT_A_SERVING_RATE.search(metric):
        return ""
    if _FIRST_TOKEN.search(metric):
        return "ttft_s"
    if _INTER_TOKEN.search(metric):
        return "itl_s"
    if _PER_OUTPUT_TOKEN.search(metric):
        return "tpot_s"
    if _END_TO_END.search(metric):
        return "output_tokens_per_s_per_user" if _TOKEN_RATE.search(metric) else "request_latency_s"
    if _REQUEST_RATE.search(metric) or _SAMPLE_RATE.search(metric):  # MLPerf's samples (queries) too
        return "requests_per_s"
    if _TOKEN_RATE.search(metric):
        return _token_rate_key(metric)
    if _TOKEN_THROUGHPUT.search(metric):  # ``Total Output Throughput``, ``decode throughput per GPU``
        return "output_tokens_per_s"
    return _token_rate_key(metric) if "throughput" in metric else ""


# a throughput of generated tokens named without its unit: trtllm-bench's ``Total Output
# Throughput``, ``output throughput per GPU``, ``decode throughput``
_TOKEN_THROUGHPUT: Final = re.compile(r"\b(?:output|decode|generation)\s+throughput\b")


def _token_rate_key(metric: str) -> str:
    """Which token rate a metric that names one counts ('' for a ``throughput`` with no token in
    it: the unit beside the number decides, :func:`~lightspeed.sol.validation.readings.read_cell`)."""
    if not _TOKEN_RATE.search(metric):
        return ""
    if PER_USER.search(metric):
        return "output_tokens_per_s_per_user"
    if _BOTH_SIDES.search(metric):
        return "total_tokens_per_s"
    if _INPUT_SIDE.search(metric) and "output" not in metric:
        return "input_tokens_per_s"
    return "output_tokens_per_s"


def not_predicted_reason(metric: str) -> str:
    """Why a metric that names a serving figure is not one a prediction can be judged against
    (``''`` if it is, or names nothing).

    >>> not_predicted_reason("Goodput (req/s)").startswith("goodput counts only the requests within an SLO")
    True
    """
    match = _NOT_A_SERVING_RATE.search(metric.lower())
    if match is None:
        if metric.strip() and not piece_key(metric, "train") and not piece_key(metric, "infer"):
            return (
                f"{metric.strip()!r} names no quantity and unit lightspeed reads: write them in the "
                "metric cell (e.g. tokens/s/GPU, TFLOP/s/GPU, step time (s), MFU, TTFT (ms))"
            )
        return ""
    word = match.group(0)
    if word == "goodput":
        return (
            "goodput counts only the requests within an SLO the row must give "
            "(lightspeed simulate --slo predicts it)"
        )
    if word.startswith("peak"):
        return "a peak over a short window is not a steady rate (give the mean rate)"
    if "second" in word:
        return "the time to a second token is not predicted (give TTFT and ITL or TPOT)"
    return (
        "a whole benchmark's duration or count depends on how many requests it sent "
        "(give a rate or a latency)"
    )


__all__ = [
    "PER_ACCELERATOR",
    "PER_USER",
    "infer_key",
    "names_peta",
    "not_predicted_reason",
    "piece_key",
    "total_by_formula",
    "train_key",
    "without_formulas",
]
