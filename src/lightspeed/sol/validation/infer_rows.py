"""Predict published inference rows (``kind = infer`` in ``published-dev.tsv``).

Rules for reading a row (documented in ``docs/inference.md``; the same for every row). The parallel
layout and serving plan (parallelism, attention data parallelism, batch caps, speculative
decoding) are read by :mod:`lightspeed.sol.validation.infer_layout`, the weights', activations' and
KV cache's formats by :mod:`lightspeed.sol.validation.infer_precision`; this module reads the rest:

* **Model**: the registry model the name gives, else one built from the row's
  dimensions; a name the registry lacks (``LLaMA 70B``) resolves to the
  registry models whose names hold all its words, earliest generation first
  (tables keep the unversioned name for the first model of that size).
* **Hardware**: the accelerator's default catalog system, as for training rows;
  a row on fewer GPUs than one node uses part of it.
* **Load**: ``ISL/OSL a/b`` (or ``input/output a/b``; ``32k`` is 32,768) gives
  the token counts, as do the two lengths said one at a time in one cell, label
  before or after the number (``ISL 128 OSL 2048``, ``input 1024 output 512``,
  ``1024 input / 512 output tokens``, ``input size 128 and an output size 128 tokens``,
  ``512-token input sequence``, ``Input length: 32 tokens. Output length: 128 tokens.``:
  :func:`_input_output`); ``N-token prefill`` is a prompt of N tokens and one output token, as is
  a first-token latency whose sequence cell gives the input length and no output length
  (``Input Length 128, Output Length -``). ``offline`` / ``max concurrency`` / ``max load``
  / ``max throughput`` is continuous batching at the KV-cache-limited maximum
  (``trtllm-bench throughput``); ``batch N`` / ``batch size N`` / ``bsN`` is a static batch
  of N (``gptSessionBenchmark``, LLM-Viewer; ``1,750`` is 1750; ``Batch size: fixed (8)``, as
  vLLM's latency benchmarks write it); ``concurrency N`` / ``N concurrent`` / ``N in flight``
  is continuous batching with N requests in flight; ``request rate R`` / ``R req/s`` Poisson
  arrivals at R per second; an infinite request rate (``QPS INF``,
  ``--request-rate inf``) without a concurrency every request sent at once (the row's request
  count simulated as an offline run, its rates the whole run's: ramp-up and drain included);
  nothing stated, a throughput metric is
  the server at its most load and a per-user speed or a latency one request at a time. A
  stated cap on sequences is the plan's ``max_batch``
  (:func:`~lightspeed.sol.validation.infer_layout.stated_cap`), never a static batch.
* **Metric**: ``first-token latency``/``TTFT`` is the TTFT of that load;
  ``TPOT``/``ITL``/``inter-token`` the time per output token; another
  ``latency`` the whole request (TTFT + (OSL - 1) x TPOT); a ``decode`` token rate at one
  request at a time that request's speed (:func:`_decode_speed`); ``req/s`` requests
  per second; a tokens/s metric ``per user`` is 1/TPOT, ``/GPU`` or ``per GPU``
  output tokens/s per GPU, ``total token`` or ``input`` without ``output``
  input plus output tokens/s; any other tokens/s is output tokens/s for all
  the row's GPUs together, as the metric cell says (the version pinned in the
  source is the one read). ``ms`` and ``us`` are converted to seconds; a
  metric saying ``decode``, or a sequence or batch cell saying ``saturated
  decode``, ``(decode``, ``decode phase``, ``decode pool`` or ``decode-only``, is a
  decode pool on its own (``batching="decode"``); the same words with ``prefill``,
  and a context stated as ``input N tokens``, a prefill pool (N-token prompts,
  one output token each, at the most load the pool holds).
* **Serving stack**: the one the source names, dated by its
  TensorRT-LLM version when it gives one (``v0.17``, ``release/0.17``, or in words, ``generated
  using version 0.17``, in a source naming TensorRT-LLM; beside the name as release notes, pip
  and containers write it, ``TensorRT-LLM 0.17.0``, ``trtllm==0.14.0``, ``vllm/vllm-openai:v0.8.5``);
  a release written beside another server, ``SGLang v0.3.0``, is that server's and makes it the
  row's (:func:`row_serving_stack`).
* **Load-dependent figures** (continuous batching at a concurrency or a request rate,
  MLPerf Server, Interactive and Offline rows) are simulated request by request
  (:mod:`lightspeed.sol.validation.infer_load`); an MLPerf row without a TP cell runs the
  TP whose simulated Offline throughput is highest, the rest of the GPUs as replicas.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Final, NamedTuple

from lightspeed.catalog import Catalog, Cluster
from lightspeed.errors import UnsupportedError, UserInputError
from lightspeed.records import Record
from lightspeed.sol.core.efficiency import EfficiencyModel
from lightspeed.sol.core.serving_packages import package_serving_stack
from lightspeed.sol.core.stacks import ServingStack, load_serving_stack, serving_stack_for
from lightspeed.sol.core.uncertainty import band_for, family_of
from lightspeed.sol.core.uncertainty import load_bands as shipped_bands
from lightspeed.sol.infer.estimate import InferenceEstimate, estimate_inference
from lightspeed.sol.infer.plan import InferencePlan, ServingLoad
from lightspeed.sol.serve.benchmark_datasets import find_benchmark_dataset
from lightspeed.sol.serve.mlperf_inference import load_mlperf_workload
from lightspeed.sol.serve.workload import MAX_REQUEST_TOKENS
from lightspeed.sol.validation import infer_precision
from lightspeed.sol.validation.hardware_text import (
    cluster_of,
    node_gpus,
    one_named_system,
    read_hardware,
    row_gpus,
)
from lightspeed.sol.validation.infer_layout import (
    INTEGER,
    StatedLayout,
    deployment,
    gpus_from_layout,
    stated_cap,
    stated_layout,
    stated_speculation,
    unstated_tp,
)
from lightspeed.sol.validation.infer_load import (
    RowSimulation,
    all_at_once_simulation,
    latency_percentile,
    load_simulation,
    mlperf_kv_precision,
    mlperf_row_simulation,
    names_mlperf,
    row_rate,
    row_requests,
    sends_all_at_once,
    simulate_row,
)
from lightspeed.sol.validation.published import VALUE_AS_WRITTEN, PublishedRow, integer_cell, size_cell
from lightspeed.sol.validation.readings import Reading, RowError, read_cell
from lightspeed.sol.validation.row_model import registry_name, resolve_model
from lightspeed.sol.validation.rows import (
    SERVE_FLOP_PER_TOKEN_PER_PARAM,
    RunSpec,
    check_below_peak,
    choose_reading,
    row_year,
)
from lightspeed.sol.validation.validate import RowLabel, ValidationRow, predicted_row
from lightspeed.workload import ModelRegistry, TransformerSpec, parameter_counts

INFERENCE_METRICS = (
    "output_tokens_per_s",
    "output_tokens_per_s_per_gpu",
    "output_tokens_per_s_per_user",
    "total_tokens_per_s",
    "total_tokens_per_s_per_gpu",
    "input_tokens_per_s",
    "input_tokens_per_s_per_gpu",
    "requests_per_s",
    "ttft_s",
    "tpot_s",
    "itl_s",
    "request_latency_s",
)
_COUNT = r"(\d[\d,]*(?:\.\d+)?k?)"
_PAIR_LABEL = r"(?:isl\s*[/:,|]\s*osl|input\s*[/|]\s*output|in\s*/\s*out)"
# ``ISL/OSL 1024/2048``, ``(ISL/OSL) 128/128``, ``ISL/OSL=1k/2k``, ``ISL:OSL 1024:2048``, ``ISL, OSL:
# 1000, 1000``, NVIDIA's table headers ``Input | Output Sequence Lengths 2,048 | 128``; a label
# naming the pair's lengths and the pair said with a comma, ``Input/Output Lengths 2048, 2048``
# (TensorRT-LLM's tables); or the pair first: ``128/2048 (ISL/OSL)``
_PAIR_WORD = r"(?:\s*(?:sequence\s+)?(?:lengths?|lens?|sizes?))?(?:\s*\(tokens?\))?"
_ISL_OSL = re.compile(
    rf"{_PAIR_LABEL}{_PAIR_WORD}\s*\)?\s*[=:]?\s*{_COUNT}\s*(?:[/:|]|,\s?)\s*{_COUNT}"
    rf"|{_COUNT}\s*/\s*{_COUNT}\s*\(?\s*{_PAIR_LABEL}\b"
)
# Lengths said one at a time, label before or after the number: ``ISL 128 OSL 2048``, ``ISL=128,
# OSL=2048``, ``input 1024 output 512``, ``input length 1,024 / output length 512``, ``1024 input /
# 512 output tokens``, ``1k in, 2k out``, ``2000-token prompts, 200 output tokens``, ``input size
# 128 and an output size 128 tokens``, ``input size in tokens 128``, ``512-token input sequence``,
# ``max input length 1024, max output length 1024``. Both halves sit in one cell (no ``|`` between
# them) and the input comes first.
# (benchmark flags too: vLLM's ``--input-len 1024 --output-len 128``, ``random_input_len=1024``,
# ``--random-input-len``, SGLang's ``--random-input 1024 --random-output 128``, genai-perf's
# ``--synthetic-input-tokens-mean 1024 --output-tokens-mean 128``, ``--input-sequence-length``,
# ``prompt_len=1024 gen_len=128``, and the OpenAI API's ``max_tokens 128`` for the output)
_LENGTH_WORD = (
    r"(?:[\s_-]+(?:sequence|size|length|len|tokens?)(?:[\s_-]+(?:length|len|size|in\s+tokens))?)?"
    r"(?:[\s_-]+(?:mean|avg|average))?(?:\s*\(tokens?\))?"
)
_IN_LABEL = rf"(?:isl|input{_LENGTH_WORD}|prompts?{_LENGTH_WORD}|context|in)"
_OUT_LABEL = (
    rf"(?:osl|output{_LENGTH_WORD}|generation(?:\s+length)?|generated?|max[\s_-]?(?:new[\s_-])?tokens"
    rf"|gen{_LENGTH_WORD}|out)"
)
_TOKEN_WORD = r"(?:\s*-?\s*tokens?)?"
# between the halves: punctuation (a sentence's full stop too: ``Input length: 32 tokens. Output
# length: 128 tokens.``), ``and``, and the articles and caps sources put before a length (``and a
# fixed 128-token output``, ``, max output length 1024``; a flag's dashes and dataset prefix,
# ``--output-len``, ``random_output_len``; an approximate length, ``~20k input / ~2k output``; a
# mean, ``Average input length: 803 tokens; Average output length: 3,653 tokens``, trtllm-bench's
# ``Average Input Length (tokens): 128.0000; Average Output Length (tokens): 128.0000``; a shape, ``4k in
# × 4k out``, ``32k in x 128 out``)
_HALF_SEPARATOR = (
    r"[\s,;/&+().~≈×-]*(?:(?:and|x)\s+)?(?:(?:an?|the|fixed|max(?:imum)?|about|average|avg|mean)\s+)*"
    r"(?:[a-z]+[_-])?"
)
# the end of a number: no digit after it, and no decimal point (a full stop ending a sentence is not one)
_NUMBER_END = r"(?!\d|\.\d)"


def _length_half(label: str, group: str) -> str:
    """``label N`` or ``N label`` (an optional ``tokens`` after the number), the number named ``group``."""
    return (
        rf"(?:(?:\b|(?<=_)){label}\s*(?:of\s+)?[=:]?\s*(?P<{group}_a>{_COUNT[1:-1]}){_NUMBER_END}{_TOKEN_WORD}"
        rf"|(?P<{group}_b>{_COUNT[1:-1]}){_NUMBER_END}{_TOKEN_WORD}\s+{label}\b{_TOKEN_WORD})"
    )


_LABELLED_LENGTHS = re.compile(
    _length_half(_IN_LABEL, "isl") + _HALF_SEPARATOR + _length_half(_OUT_LABEL, "osl")
)
# The input length alone in the sequence cell (``Input Length 128, Output Length -``, ``ISL 2048``):
# what a first-token latency needs. (Not ``prompts``: ``1200 prompts`` counts requests.)
_INPUT_LENGTH = re.compile(_length_half(rf"(?:isl|input{_LENGTH_WORD})", "isl"))


# A sequence cell that is only a pair, ``1k/1k``, ``1024 / 128 tokens``, ``1024:128``, TensorRT-LLM's
# table columns ``ISL, OSL`` as ``1000, 1000`` (a space after the comma: ``1,024`` is one number), or a pair
# after the dataset's name (``random 1024/128``, ``sonnet 550/150``): ISL/OSL, the order every
# serving benchmark writes them in.
_BARE_PAIR = re.compile(rf"\s*\(?\s*(?:[a-z]+\s+)?{_COUNT}\s*(?:[/:]|,\s)\s*{_COUNT}\s*\)?(?:\s*tokens?)?\s*")


def _input_output(text: str, seq: str = "") -> tuple[int, int] | None:
    """(input, output) tokens the lower-case ``text`` states (module docs, **Load**), if any; a
    ``seq`` cell holding only ``N/M`` reads as ISL/OSL."""
    bare = _BARE_PAIR.fullmatch(seq.lower())
    if bare:
        return _tokens(bare.group(1)), _tokens(bare.group(2))
    match = _ISL_OSL.search(text)
    if match:
        isl, osl = (group for group in match.groups() if group is not None)
        return _tokens(isl), _tokens(osl)
    labelled = _LABELLED_LENGTHS.search(text)
    if labelled is None:
        return None
    isl = labelled.group("isl_a") or labelled.group("isl_b")
    osl = labelled.group("osl_a") or labelled.group("osl_b")
    return _tokens(isl), _tokens(osl)


_PREFILL = re.compile(rf"{_COUNT}\s*-?\s*token (?:prefill|prompt)")
# A pool's context alone, label before or after the number: ``input 2000 tokens``, ``ISL 2000``,
# ``ISL=2000``, ``input length 2,000``, ``input_len=2000``, ``2000 input tokens``, ``2000-token
# input``, ``8K-token inputs``, ``prompt length 2000``, ``KV length 4096``, ``context of 8k``.
_INPUT_ONLY = re.compile(
    _length_half(
        rf"(?:isl|inputs?{_LENGTH_WORD}|prompts?{_LENGTH_WORD}|kv[\s_-](?:cache[\s_-])?length"
        r"|context(?:[\s_-]length)?(?:\s+of)?)",
        "isl",
    )
)
_TRT_VERSION = re.compile(r"(?:release/|\bv)0\.(\d+)")
# ``generated using version 0.17``: a version said in words, read where the source names TensorRT-LLM
_TRT_VERSION_WORD = re.compile(r"\bversion\s+0\.(\d+)")
# a TensorRT-LLM row run on the PyTorch backend (``PyTorch backend``, ``--backend pytorch``), which
# 0.17-0.21 offered beside TensorRT engines: its release dates it but does not pick the engine profile
_PYTORCH_BACKEND = re.compile(r"pytorch backend|backend[\s=]+pytorch")
# a server's name with its release right after it (``SGLang v0.3.0``, ``vllm==0.8.5``,
# ``rocm/vllm:..._vllm_0.10.2_...``, ``vllm/vllm-openai:v0.8.5``, ``TensorRT-LLM 0.17.0``,
# ``trtllm==0.14.0``, ``TensorRT LLM 1.0``, NGC's ``tensorrt-llm/release:0.21.0``): the release is
# that server's, never TensorRT-LLM's unless it is TensorRT-LLM, and of the servers a row names (a
# page comparing two) the first one written with its release is the one the row ran
_NAMED_RELEASE = re.compile(
    r"(?<![a-z])(?P<server>tensorrt[-_ ]?llm|trt[-_]?llm|vllm(?:-openai)?|sglang)[\s_=:/-]*"
    r"(?:(?:version|release)[\s_=:/-]*)?v?(?P<major>\d)\.(?P<minor>\d+)"
)
# (not a cap: ``max batch 384``, ``maximum batch size 64``, ``max_batch_size 128`` are caps, infer_layout)
# ``Batch size: fixed (8)`` (vLLM's latency benchmark descriptions) is a static batch of 8 too, as
# are ``B=64``, ``static batching, 64``, ``64 (static batch)``, ``64 (batch size)``, ``64 sequences``
_BATCH = re.compile(
    r"(?<!max[ _-])(?<!maximum[ _-])\b(?:batch(?:\s*size)?|bs|b(?=\s*=))\s*[=:]?\s*(?:fixed\s*)?\(?\s*"
    rf"{INTEGER}"
    rf"|\bstatic\s+batch(?:ing)?\s*[,:]?\s*(?:of\s+)?{INTEGER}"
    rf"|(?<![\w.,]){INTEGER}\s*\(?\s*(?:static\s+batch|batch(?:\s*size)?\b|sequences\b)"
)
# a batch's label with a value no whole number reads (``batch 1e400``, ``bs=-1``, ``batch nan``):
# refused, never dropped
_BATCH_VALUE = re.compile(
    r"(?<!max[ _-])(?<!maximum[ _-])\b(?:batch(?:\s*size)?|bs)\s*[=:]?\s*(?:fixed\s*)?\(?\s*"
    + VALUE_AS_WRITTEN
)
# a load cell holding a number alone: the batch the table's column names (``64``)
_BARE_COUNT = re.compile(r"\s*\d[\d,]*\s*")
# ``concurrency 64``, ``max concurrency 256`` (vLLM's ``--max-concurrency``), ``conc=64``,
# ``conc. 64``, ``c=64``, ``64 concurrent``, ``Concurrent 8`` (Vultr's cookbook tables),
# ``64 users`` / ``64 clients`` (closed-loop users, one
# request each in flight), ``64 in flight``, ``64 parallel requests`` (not vLLM's report of the run,
# ``Peak concurrent requests: 984``); never the digits of a
# number written otherwise (``-1 concurrent``, ``1e400 users``: refused by the load words below).
_CONCURRENCY = re.compile(
    rf"(?:concurrency|\bconc\.?|\bc|\b(?:num[ _-]?)?(?:users|clients)|\bnum[ _-]?concurrent"
    r"|(?<!peak )\bconcurrent[ _-](?:requests|users)"
    rf"|(?<!peak )\bconcurrent(?=\s*[=:]?\s*\d))\s*[=:]?\s*{INTEGER}"
    r"|(?<![\w.,+-])(\d+)\s*(?:concurrent|(?:simultaneous |parallel |virtual )?(?:users|clients)\b"
    r"|(?:requests?\s+)?in[ -]flight\b|parallel\s+requests\b)"
)
# a concurrency's label with a value no whole number reads (``concurrency -1``, ``1e400 concurrent
# requests``, ``nan users``): refused, never dropped (a throughput would be read at the most load)
_CONCURRENCY_VALUE = re.compile(
    rf"(?:\bconcurrency|(?<!peak )\bconcurrent(?:[ _-](?:requests|users))?)\s*[=:]?\s*{VALUE_AS_WRITTEN}"
    rf"|(?<![\w.])[-+]?{VALUE_AS_WRITTEN}\s*"
    r"(?:concurrent|(?:simultaneous |parallel |virtual )?(?:users|clients)\b)"
)
# a concurrency stated per rank or per GPU (``2 concurrent requests per rank``, ``concurrency 64 per
# GPU``, as the LMSYS MTP post's tables write an attention-DP deployment's load): each of the row's
# GPUs holds that many (a rank is one GPU's process)
_PER_RANK_LOAD = re.compile(
    r"\s*(?:requests?|users?|sequences?)?\s*(?:per|/|on\s+each)\s*(?:attention[ -]?(?:dp\s+)?)?(?:dp\s+)?"
    r"(?:rank|gpu)\b"
)


@dataclass(frozen=True)
class InferenceRowSetup(Record):
    """Everything needed to predict one inference row, plus what was assumed."""

    model: TransformerSpec
    plan: InferencePlan
    load: ServingLoad
    batching: str
    metric: str
    measured: float
    assumptions: tuple[str, ...]
    reading: Reading | None = None
    readings: tuple[Reading, ...] = ()
    serving: ServingStack | None = None
    simulation: RowSimulation | None = None


# Words that name a checkpoint's format or tuning, not its architecture ("Llama 4 Maverick
# FP8", "Qwen3 32B Instruct AWQ"): ignored when a model name is matched word by word.
_CHECKPOINT_WORDS = frozenset(
    {"fp8", "fp4", "nvfp4", "mxfp4", "bf16", "fp16", "int8", "int4", "w4a16", "w8a8", "awq", "gptq"}
    | {"instruct", "chat", "it", "base", "hf", "preview"}
)


# a model name's words: ``codellama-70b`` holds ``codellama`` and ``70b``, not ``llama`` (a row's
# ``LLaMA 70B`` is a Llama, never a Code Llama)
_WORD_SPLIT = re.compile(r"[\s_/-]+")


def _a_generation_of(words: list[str], spelling: str) -> bool:
    """Whether a registry spelling is a generation of the family a row's ``words`` name: it holds
    every word, and its other words only number a version or name a tuning or format
    (``llama-2-70b`` for ``LLaMA 70B``; not ``code-llama-70b``, another family)."""
    tokens = [token for token in _WORD_SPLIT.split(spelling) if token]
    extra = set(tokens) - set(words)
    return set(words) <= set(tokens) and all(
        _VERSION_WORD.fullmatch(token) or token in _CHECKPOINT_WORDS for token in extra
    )


_VERSION_WORD = re.compile(r"v?\d+(?:\.\d+)*")


def _spellings(registry: ModelRegistry, name: str) -> tuple[str, ...]:
    """A model's canonical name and its aliases (``llama-4-maverick-17b-128e-instruct``)."""
    return (name, *registry.entry(name).spec.aliases)


def _resolve_model(registry: ModelRegistry, row: PublishedRow) -> tuple[TransformerSpec, str]:
    stated = re.split(r"[(,]", row.text("model"))[0].strip()
    unsupported = registry.unsupported_model(stated) if stated else None
    if unsupported is not None:  # not a near name either: its layers are not modelled
        raise RowError(unsupported.refusal(stated))
    try:
        return resolve_model(registry, row)
    except RowError:
        pass
    name = re.split(r"[(,]", row.text("model"))[0].strip().lower()
    words = [word for word in _WORD_SPLIT.split(name) if word and word not in _CHECKPOINT_WORDS]
    candidates = sorted(
        name
        for name in registry.names()
        if any(_a_generation_of(words, spelling) for spelling in _spellings(registry, name))
    )
    if not candidates:
        raise RowError(f"model {row.text('model')!r} is neither in the registry nor described by the row")
    return registry.get(candidates[0]), (
        f"model '{row.text('model')}' -> {candidates[0]} (registry names holding {', '.join(words)}: "
        f"{', '.join(candidates)}; earliest generation)"
    )


def _tokens(text: str) -> int:
    """``1,000`` -> 1000, ``32k`` -> 32768 (a k on a token count is 1024)."""
    count = size_cell(text)
    if count is None:
        raise RowError(f"{text!r} is not a token count")
    return count


# A decode or prefill pool's figure, said in the sequence or batch cell ("saturated decode",
# "input 2000 tokens (prefill)", "decode phase"; {0} is the phase); "prefill/decode" or "PD"
# alone describe a whole deployment.
_POOL_PHRASES = r"saturated {0}|\({0}|{0} phase|{0} pool|{0}[- ]only"
# Phrases for a throughput run at the server's most load (batching up to the KV-cache limit).
# (``max concurrency N`` with a number is vLLM's ``--max-concurrency``: N in flight.)
_MAX_LOAD = re.compile(r"offline|max concurrency(?!\s*[=:]?\s*\d)|max load|max[ -]throughput|peak throughput")


# A load of one request at a time: ``one request per time``, ``single request``, ``single user``,
# ``concurrency 1``, ``concurrency of 1``, ``single concurrency`` (TensorRT-LLM's min-latency
# blogs), ``batch size 1``, ``bs1``.
_SINGLE_REQUEST = re.compile(
    r"\b(?:one|single|1)\s+(?:concurrent\s+)?(?:request|user\b|client\b|stream\b)"
    r"|\bsingle[\s-]+concurren|concurrency\s*(?:of\s*)?[=:]?\s*1(?![\d.]|,\d)"
    r"|\b(?:batch(?:\s*size)?|bs)\s*[=:]?\s*1(?![\d.]|,\d)"
)


def _load_cells(row: PublishedRow) -> str:
    return " | ".join(row.text(column) for column in ("seq", "global_batch")).lower()


def _names_pool(row: PublishedRow, phase: str) -> bool:
    """Whether the row's figure is of a ``phase`` ("decode", "prefill") pool on its own: the
    metric says so, or the sequence or batch cell does in one of :data:`_POOL_PHRASES`. A metric
    naming the phase at one request at a time (``decode tokens/sec at one request per time``) is
    that request's speed in the phase, not a pool's."""
    load_cells = _load_cells(row)
    said_in_cells = re.search(_POOL_PHRASES.format(phase), load_cells) is not None
    said_in_metric = phase in row.text("metric").lower() and not _SINGLE_REQUEST.search(load_cells)
    return said_in_metric or said_in_cells


def _decode_speed(row: PublishedRow, reading: Reading) -> tuple[Reading, str]:
    """A token rate the metric says is of decode, at one request at a time, is the speed that
    request sees (1/TPOT, ``output_tokens_per_s_per_user``), with a note; else ``reading``."""
    decode = "decode" in reading.metric_text.lower()
    if reading.key != "output_tokens_per_s" or not decode or not _SINGLE_REQUEST.search(_load_cells(row)):
        return reading, ""
    note = f"'{reading.metric_text}' at one request at a time: that request's decode speed (1/TPOT)"
    return replace(reading, key="output_tokens_per_s_per_user", scope="user"), note


class _RowLoad(NamedTuple):
    """A row's load as its cells state it: the load, the batching mode, how the load was read
    (``note``) and, where the row names a dataset instead of lengths, where they came from."""

    load: ServingLoad
    batching: str
    note: str
    lengths_note: str = ""
    all_at_once: bool = False  # every request sent at once (an infinite rate, or vLLM's default)


# vLLM's serving benchmark (``vllm bench serve``, ``benchmarks/benchmark_serving.py``): its
# ``--request-rate`` defaults to inf ("all the requests are sent at time 0"), so a row naming it
# with no rate and no concurrency sent every request at once
_VLLM_SERVING_BENCHMARK = re.compile(r"vllm\s+bench\s+serve|benchmark_serving")


def _at_vllm_default_rate(row: PublishedRow) -> bool:
    """Whether the row names vLLM's serving benchmark and states no rate: its default, inf (the
    caller checks that no concurrency, batch or maximum load is stated either)."""
    return _VLLM_SERVING_BENCHMARK.search(row.described()) is not None and row_rate(row) is None


# what a serving benchmark reports it sent (vLLM's and SGLang's ``Total input tokens: 1273893``,
# ``Total generated tokens: 169680``): over the run's request count, the lengths that ran, which
# differ from the commanded ones where the tool draws them from a range (SGLang's random dataset
# draws each length up to the one commanded unless ``--random-range-ratio 1``)
_TOTAL_INPUT: Final = re.compile(r"\btotal\s+input\s+tokens\s*[:=]?\s*(\d[\d,]*)(?![\d.])")
_TOTAL_OUTPUT: Final = re.compile(r"\btotal\s+(?:generated|output)\s+tokens\s*[:=]?\s*(\d[\d,]*)(?![\d.])")


def _run_lengths(row: PublishedRow, text: str) -> tuple[int, int, str] | None:
    """(input, output, note) mean tokens of the requests the run sent, from the totals its report
    gives in the lower-case load ``text`` over the row's request count; ``None`` without both."""
    total_in, total_out = _TOTAL_INPUT.search(text), _TOTAL_OUTPUT.search(text)
    requests = row_requests(row) if total_in and total_out else None
    if total_in is None or total_out is None or requests is None:
        return None
    tokens_in, tokens_out = (int(found.group(1).replace(",", "")) for found in (total_in, total_out))
    isl, osl = round(tokens_in / requests), round(tokens_out / requests)
    if not (1 <= isl <= MAX_REQUEST_TOKENS and 1 <= osl <= MAX_REQUEST_TOKENS):
        raise RowError(
            f"the run's totals ({tokens_in:,} input, {tokens_out:,} generated tokens over {requests:,} "
            f"requests) give a request {isl:,} / {osl:,} tokens, outside 1 to {MAX_REQUEST_TOKENS:,}: "
            "check the totals and the request count"
        )
    note = (
        f"lengths: the run's means, {tokens_in:,} input and {tokens_out:,} generated tokens over "
        f"{requests:,} requests ({isl:,} / {osl:,} tokens)"
    )
    return isl, osl, note


def _load(row: PublishedRow, num_gpus: int = 1) -> _RowLoad:
    """The load the row's sequence, batch and metric cells state (:class:`_RowLoad`); a concurrency
    stated per rank is over the row's ``num_gpus``. Where the run's report gives the tokens it sent
    and the row its request count, their means are the lengths (:func:`_run_lengths`)."""
    text = " | ".join(row.text(column) for column in ("seq", "global_batch", "metric")).lower()
    run = _run_lengths(row, text)
    dataset = find_benchmark_dataset(_load_cells(row))
    # the run's means stand for the lengths, or beside a dataset for its means (below)
    lengths: tuple[int, int] | None = None
    if run is None:
        lengths = _input_output(text, row.text("seq"))
    elif dataset is None:
        lengths = run[0], run[1]
    prefill = _PREFILL.search(text)
    decode, prefill_pool = _names_pool(row, "decode"), _names_pool(row, "prefill")
    if decode and prefill_pool:
        raise RowError(
            "the row names both a decode pool and a prefill pool; say which pool the figure is of "
            "(e.g. 'saturated decode' or 'input N tokens (prefill)')"
        )
    if lengths:
        isl, osl = lengths
    elif prefill:
        isl, osl = _tokens(prefill.group(1)), 1
    elif _first_token_only(row) and (prompt := _INPUT_LENGTH.search(row.text("seq").lower())):
        # a first-token latency with the prompt's length and none for the output (``Output Length -``):
        # the first token is all it times, unless other requests decode beside it
        _no_output_length_under_load(row, text)
        isl, osl = _tokens(prompt.group("isl_a") or prompt.group("isl_b")), 1
    elif decode and (context := _INPUT_ONLY.search(text)):
        # A decode pool's figure with only the context stated: decode right after the prompt.
        tokens = context.group("isl_a") or context.group("isl_b")
        return _RowLoad(
            ServingLoad(_tokens(tokens), 1),
            "decode",
            f"decode pool on its own at a context of {tokens} tokens, KV-limited batch",
        )
    elif prefill_pool and (context := _INPUT_ONLY.search(text)):
        # A prefill pool's figure: prompts of the stated length, each ending at its first token.
        tokens = context.group("isl_a") or context.group("isl_b")
        return _RowLoad(
            ServingLoad(_tokens(tokens), 1),
            "continuous",
            f"prefill pool on its own: {tokens}-token prompts at the most load it holds",
        )
    elif dataset is not None:
        # a dataset named without lengths (``ShareGPT``): its mean request, said in the assumptions,
        # or the means of the requests the run sent where its report gives them
        means = (run[0], run[1]) if run else (dataset.mean_input_tokens, dataset.mean_output_tokens)
        batched = _batching(row, text, *means, decode, num_gpus=num_gpus)
        requests = row_requests(row)
        users = batched.load.concurrency
        in_flight_at_once = batched.all_at_once or (
            users is not None and requests is not None and users >= requests
        )
        if in_flight_at_once and _is_throughput(row):
            # sent at once, the run lasts until its longest reply ends: the spread of the dataset's
            # lengths, which its means leave out, sets the whole-run rate
            raise RowError(
                f"every request is sent at once and the row gives only the {dataset.display_name} dataset: "
                "its whole-run throughput hangs on the dataset's longest replies, which its mean lengths "
                "leave out; give the lengths (ISL/OSL), or a concurrency below the request count or a rate"
            )
        return batched._replace(lengths_note=run[2] if run else dataset.note())
    else:
        raise RowError(
            "the row gives no ISL/OSL or prompt length (write them in the seq cell, e.g. 'ISL/OSL 1024/256')"
        )
    return _batching(row, text, isl, osl, decode, num_gpus=num_gpus)._replace(
        lengths_note=run[2] if run else ""
    )


def _written_concurrency(text: str) -> tuple[int, bool] | None:
    """(count, whether per rank) of the concurrency a lower-case load ``text`` writes
    (:data:`_CONCURRENCY`, :data:`_PER_RANK_LOAD`), if any."""
    found = _CONCURRENCY.search(text)
    if found is None:
        return None
    count = int((found.group(1) or found.group(2)).replace(",", ""))
    return count, _PER_RANK_LOAD.match(text, found.end()) is not None


def _stated_concurrency(text: str, num_gpus: int = 1) -> int | None:
    """The requests in flight a lower-case load ``text`` states, if any: the count written, times
    ``num_gpus`` where it is stated per rank or per GPU."""
    written = _written_concurrency(text)
    if written is None:
        return None
    count, per_rank = written
    return count * num_gpus if per_rank else count


def _no_output_length_under_load(row: PublishedRow, text: str) -> None:
    """Refuse a first-token latency read without an output length when the row's lower-case load
    ``text`` puts other requests beside it (several users, a request rate): their decoding shares
    the GPU with each prompt, so the TTFT depends on how long they generate."""
    users = _stated_concurrency(text)
    at_once = sends_all_at_once(row) or (users is None and _at_vllm_default_rate(row))
    if (users or 1) > 1 or row_rate(row) is not None or at_once:
        raise RowError(
            "the row's first-token latency is under load but no output length is read, and the "
            "other requests' decoding sets it: write both lengths, e.g. 'ISL/OSL 20000/2000'"
        )


def _batching(
    row: PublishedRow, text: str, isl: int, osl: int, decode: bool, *, num_gpus: int = 1
) -> _RowLoad:
    """The load of requests of ``isl`` and ``osl`` tokens under the batch, concurrency or rate the
    lower-case load ``text`` states (module docs, **Load**) on the row's ``num_gpus``."""
    if decode:
        return _RowLoad(ServingLoad(isl, osl), "decode", "decode pool on its own, KV-limited batch")
    batch = _BATCH.search(text)
    if batch is None and (unread := _BATCH_VALUE.search(text)) is not None:
        raise RowError(f"the batch '{unread.group(0).strip()}' is not a whole number of sequences")
    load_cell = row.text("global_batch")
    size = (
        int(next(group for group in batch.groups() if group).replace(",", ""))
        if batch
        else integer_cell(load_cell)
        if _BARE_COUNT.fullmatch(load_cell)
        else None
    )
    written = _written_concurrency(text)
    if written is None and (unread := _CONCURRENCY_VALUE.search(text)) is not None:
        raise RowError(
            f"the concurrency '{unread.group(0).strip()}' is not a whole number of requests written in "
            "digits (e.g. 64)"
        )
    if _MAX_LOAD.search(text):
        return _RowLoad(
            ServingLoad(isl, osl),
            "continuous",
            "offline maximum load: continuous batching at the KV limit",
            all_at_once=sends_all_at_once(row),
        )
    if size is not None:
        return _RowLoad(ServingLoad(isl, osl, concurrency=size), "static", f"static batch of {size}")
    if written is not None:
        count, per_rank = written
        concurrency = count * num_gpus if per_rank else count
        on_each = f" ({count} per rank on each of {num_gpus} GPUs)" if per_rank else ""
        return _RowLoad(
            ServingLoad(isl, osl, concurrency=concurrency),
            "continuous",
            f"continuous batching, {concurrency} in flight{on_each}",
        )
    stated_inf = sends_all_at_once(row)
    if stated_inf or _at_vllm_default_rate(row):
        said = (
            "an infinite request rate" if stated_inf else "vLLM's serving benchmark at its default rate (inf)"
        )
        return _RowLoad(
            ServingLoad(isl, osl),
            "continuous",
            f"{said}: every request sent at once, continuous batching at the KV limit",
            all_at_once=True,
        )
    if _is_throughput(row) and row_rate(row) is None:
        return _RowLoad(
            ServingLoad(isl, osl),
            "continuous",
            "a throughput with no load stated: the server at its most load (continuous batching at the "
            "KV limit), as throughput benchmarks run",
        )
    stated = " | ".join(row.text(cell) for cell in ("global_batch", "micro_batch"))
    words = stated.lower().replace("_", " ")
    if _SINGLE_REQUEST.search(words):
        return _RowLoad(
            ServingLoad(isl, osl, concurrency=1), "continuous", "one request at a time, as the row says"
        )
    if _LOAD_WORDS.search(words) and row_rate(row) is None and not names_mlperf(row):
        raise RowError(
            f"the load {stated.strip(' |')!r} is not one lightspeed reads; write it as 'concurrency N', "
            "'request rate R' (per second), 'batch N' (static) or 'offline'"
        )
    return _RowLoad(
        ServingLoad(isl, osl, concurrency=1), "continuous", "no batch stated: one request at a time"
    )


# Words that say a load cell states a load (``users``, ``concurrency``, ``rate``, ``QPS``): a cell
# with one that no rule above read is refused, never taken for one request at a time.
_LOAD_WORDS = re.compile(
    r"\b(?:users?|clients?|concurren\w*|rate|qps|rps|in[ -]flight|parallel|arrivals?|poisson)\b"
)


# The metrics a server's load sets from outside (per-user speeds and latencies are read at one request).
_THROUGHPUT_KEYS = frozenset(
    {
        "output_tokens_per_s",
        "output_tokens_per_s_per_gpu",
        "total_tokens_per_s",
        "total_tokens_per_s_per_gpu",
        "input_tokens_per_s",
        "input_tokens_per_s_per_gpu",
        "requests_per_s",
    }
)


def _first_metric_key(row: PublishedRow) -> str:
    """The quantity the row's (first) metric names, read by the metric reader ('' if none)."""
    readings = read_cell(row.text("metric"), row.text("measured"), kind="infer")
    return readings[0].key if readings else ""


def _first_token_only(row: PublishedRow) -> bool:
    """Whether the row's (first) metric is a first-token latency (TTFT)."""
    return _first_metric_key(row) == "ttft_s"


def _is_throughput(row: PublishedRow) -> bool:
    """Whether the row's (first) metric is a server's throughput."""
    return _first_metric_key(row) in _THROUGHPUT_KEYS


def _metric(row: PublishedRow, num_gpus: int = 1, node_size: int | None = 8) -> Reading:
    """The first inference metric of the row's cells (paired by position, units and scope
    read, per-node values made per GPU)."""
    readings = read_cell(row.text("metric"), row.text("measured"), kind="infer")
    if not readings or all(reading.value is None for reading in readings):
        raise RowError(f"measured value {row.text('measured')!r} has no number")
    return choose_reading(readings, INFERENCE_METRICS, num_gpus, node_size)


@dataclass(frozen=True, kw_only=True)
class InferenceRowSpec(RunSpec):
    """A published inference run in typed fields, nothing left to read from text: what the
    structured rows hold and what the TSV reader makes of a row. ``serving`` names the profile of
    the server the run used (``docs/inference.md``); ``simulation`` how the TSV reader found a
    load-dependent figure is to be simulated (an MLPerf scenario, a request rate or count), else
    ``None``: :func:`inference_setup` simulates continuous batching at a concurrency or rate from
    ``load`` alone; ``overlap_scheduler`` the scheduling the row's server flags state
    (:func:`stated_overlap`), ``None`` where they state none."""

    plan: InferencePlan
    load: ServingLoad
    batching: str
    serving: str
    simulation: RowSimulation | None = None
    overlap_scheduler: bool | None = None  # as the row's server flags set it; None: the profile's


def _row_gpus(catalog: Catalog, row: PublishedRow, stated: StatedLayout) -> tuple[int, str]:
    """(GPUs, note): the GPUs or hardware cell's count (:func:`row_gpus`), else, where neither counts
    them, what the stated degrees multiply to (:func:`gpus_from_layout`), else one system the
    hardware cell names (:func:`one_named_system`)."""
    try:
        return row_gpus(catalog, row)
    except RowError:
        derived = gpus_from_layout(row, stated) or one_named_system(catalog, row)
        if derived is None:
            raise
        return derived


# MLPerf closed LLM submissions quantize the KV cache with the weights: NVIDIA's FP8 and FP4
# TensorRT-LLM engines keep it in FP8, and AMD's Quark checkpoints list "KV Cache Entries" among
# their quantized tensors (amd/Mixtral-8x7B-Instruct-v0.1_FP8_MLPerf_V3 model card, MLPerf v5.1),
# which vLLM's default (the model's 16-bit dtype) would not.
_MLPERF_KV_NOTE: Final = (
    "KV cache fp8: MLPerf closed submissions quantize it with the weights (NVIDIA's TensorRT-LLM engines; "
    "AMD's Quark MLPerf checkpoints list KV cache entries among the quantized tensors)"
)


def _output_flop_per_s_per_gpu(reading: Reading, model: TransformerSpec, num_gpus: int) -> float | None:
    """The FLOP/s per GPU an output-token rate implies at 2 FLOPs per active parameter per token (a
    speculative token is verified by the target model all the same); ``None`` for other readings
    (input and total token rates can count prompt tokens a prefix cache served without compute)."""
    per_gpu = {"output_tokens_per_s": num_gpus, "output_tokens_per_s_per_gpu": 1}.get(reading.key)
    if per_gpu is None or reading.value is None:
        return None
    return reading.value / per_gpu * SERVE_FLOP_PER_TOKEN_PER_PARAM * parameter_counts(model).active_params


def read_inference_row(row: PublishedRow, catalog: Catalog, registry: ModelRegistry) -> InferenceRowSpec:
    """An inference row of a published-results table in typed fields (the rules in the module docs)."""
    stated = stated_layout(row)
    num_gpus, gpus_note = _row_gpus(catalog, row, stated)
    resolved, model_note = _resolve_model(registry, row)
    model, state_note = infer_precision.stated_state_dtype(row, resolved)
    hardware, span = read_hardware(catalog, row.text("hardware"))
    cluster, _ = cluster_of(catalog, hardware, num_gpus)
    load, batching, load_note, simulation = _row_load(row, num_gpus)
    mlperf = load_mlperf_workload(simulation.mlperf) if simulation is not None and simulation.mlperf else None
    precision = infer_precision.precision(row, cluster.system.accelerator, model, mlperf=mlperf)
    split = unstated_tp(
        row,
        stated,
        model=model,
        cluster=cluster,
        precision=precision,
        load=load,
        simulation=simulation,
        num_gpus=num_gpus,
    )
    if split.pp is not None:  # no scale-up domain holds the model: pipelined across domains
        stated = stated._replace(pp=split.pp)
    if split.dep is not None:  # an MLPerf row's most productive layout: attention DP, EP over it
        stated = stated._replace(shorthand=("dep", split.dep))
    one_pool = batching == "decode" or _names_pool(row, "prefill")
    plan, plan_notes = deployment(row, model, num_gpus, precision, stated, tp=split.tp, one_pool=one_pool)
    plan, cap_note = stated_cap(row, plan)
    plan_notes = [*plan_notes, cap_note] if cap_note else plan_notes
    mlperf_kv = mlperf_kv_precision(plan.precision) if mlperf is not None else None
    if mlperf_kv is not None and plan.kv_precision is None:
        plan = plan.with_changes(kv_precision=mlperf_kv)
        plan_notes = [*plan_notes, _MLPERF_KV_NOTE]
    reading, speed_note = _decode_speed(row, _metric(row, num_gpus, node_gpus(cluster.system)))
    assert reading.value is not None
    check_below_peak(
        reading,
        _output_flop_per_s_per_gpu(reading, model, num_gpus),
        cluster.system.accelerator,
        "2 FLOPs per active parameter per output token",
    )
    notes = [model_note, f"hardware '{row.text('hardware')}' -> '{span}'", *plan_notes, load_note]
    notes.extend([state_note] if state_note else [])
    notes.extend([speed_note] if speed_note else [])
    notes.extend([gpus_note] if gpus_note else [])
    notes.extend([split.note] if split.note else [])
    plan, speculation_note = stated_speculation(row, plan)
    notes.extend([speculation_note] if speculation_note else [])
    year, year_note = row_year(row, cluster.system.accelerator)
    serving, serving_note = row_serving_stack(row, year, cluster.system.accelerator.vendor, year_note)
    notes.append(serving_note)
    overlap, overlap_note = stated_overlap(row, serving)
    notes.extend([overlap_note] if overlap_note else [])
    return InferenceRowSpec(
        row_id=row.row_id,
        model=model,
        model_name=registry_name(registry, resolved),
        hardware=hardware,
        num_gpus=num_gpus,
        plan=plan,
        load=load,
        batching=batching,
        metric=reading.key,
        measured=reading.value,
        serving=serving.name,
        simulation=simulation,
        overlap_scheduler=overlap,
        assumptions=tuple(notes),
        reading=reading,
        readings=read_cell(row.text("metric"), row.text("measured"), kind="infer"),
    )


def _row_load(row: PublishedRow, num_gpus: int = 1) -> tuple[ServingLoad, str, str, RowSimulation | None]:
    """(load, batching, note, simulation): an MLPerf row's benchmark, else the row's cells (a
    request rate the row states makes the load an open loop); a figure that depends on load gets
    the simulation that predicts it."""
    if not names_mlperf(row):
        loaded = _load(row, num_gpus)
        load, batching, note = loaded.load, loaded.batching, loaded.note
        rate = row_rate(row)
        if rate is not None and batching == "continuous":
            load = replace(load, concurrency=None, arrival_rate_per_s=rate)
            note = f"continuous batching, Poisson arrivals at {rate:g} requests/s"
        note = "; ".join(part for part in (loaded.lengths_note, note) if part)
        requests = row_requests(row)
        open_ended = batching == "continuous" and load.concurrency is None and rate is None
        if open_ended and requests and loaded.all_at_once:
            return load, batching, note, all_at_once_simulation(load, requests)
        return load, batching, note, load_simulation(load, batching, requests)
    try:
        stated: ServingLoad | None = _load(row).load
    except RowError:
        stated = None  # the benchmark's published lengths
    simulation = mlperf_row_simulation(row, stated)
    workload = simulation.workload
    load = ServingLoad(
        max(round(workload.input_lengths.mean_tokens), 1), max(round(workload.output_lengths.mean_tokens), 1)
    )
    return load, "continuous", simulation.note, simulation


def inference_setup(
    spec: InferenceRowSpec, catalog: Catalog, *, serving: ServingStack | None = None
) -> tuple[InferenceRowSetup, Cluster]:
    """(setup, cluster) of a typed inference row, on its own serving profile or on ``serving``."""
    chosen = serving or load_serving_stack(spec.serving)
    if serving is None and spec.overlap_scheduler is not None:
        chosen = replace(chosen, overlap_scheduler=spec.overlap_scheduler)
    cluster, cluster_notes = cluster_of(catalog, spec.hardware, spec.num_gpus)
    notes = [*spec.assumptions, *cluster_notes]
    if chosen.name != spec.serving:
        notes.append(f"predicted on the serving profile {chosen.name}, not the run's own {spec.serving}")
    setup = InferenceRowSetup(
        spec.model,
        spec.plan,
        spec.load,
        spec.batching,
        spec.metric,
        spec.measured,
        tuple(notes),
        spec.reading,
        spec.readings,
        chosen,
        spec.simulation or load_simulation(spec.load, spec.batching),
    )
    return setup, cluster


def inference_row_setup(
    row: PublishedRow, catalog: Catalog, registry: ModelRegistry
) -> tuple[InferenceRowSetup, Cluster]:
    """(setup, cluster) of an inference row of a table (see the module docstring for the rules)."""
    return inference_setup(read_inference_row(row, catalog, registry), catalog)


# Server flags that turn the one-step-ahead scheduler on or off (vLLM's --async-scheduling and
# --no-async-scheduling, async_scheduling in its config; SGLang's --enable-overlap-schedule, opt-in
# before 0.3.6, and --disable-overlap-schedule; TensorRT-LLM's disable_overlap_scheduler)
_OVERLAP_ON: Final = re.compile(
    r"(?<![\w-])--(?:async-scheduling|enable-overlap-schedule)(?![\w-])"
    r"|\basync_scheduling\s*[=:]\s*true\b|\bdisable_overlap_scheduler\s*[=:]\s*false\b",
    re.IGNORECASE,
)
_OVERLAP_OFF: Final = re.compile(
    r"(?<![\w-])--(?:no-async-scheduling|disable-overlap-schedule)(?![\w-])"
    r"|\basync_scheduling\s*[=:]\s*false\b|\bdisable_overlap_scheduler\s*[=:]\s*true\b",
    re.IGNORECASE,
)


def stated_overlap(row: PublishedRow, serving: ServingStack) -> tuple[bool | None, str]:
    """(whether the row's server formed each iteration while the GPU ran the one before, note) as
    its flags state it (``--async-scheduling``, ``--disable-overlap-schedule``,
    ``disable_overlap_scheduler: true``), else ``(None, "")``: the profile's default. A row stating
    both is refused."""
    text = row.described()
    on, off = _OVERLAP_ON.search(text), _OVERLAP_OFF.search(text)
    if on and off:
        raise RowError(
            f"the row turns the overlap scheduler both on ({on.group(0)}) and off ({off.group(0)}); "
            "keep the flag the run used"
        )
    stated = on or off
    if stated is None:
        return None, ""
    if bool(on) == serving.overlap_scheduler:
        return None, f"{stated.group(0)}: as {serving.name} schedules by default"
    verb = "forms each iteration while the GPU runs the one before" if on else "schedules between GPU steps"
    default = "between GPU steps" if on else "ahead"
    return bool(on), f"{stated.group(0)}: the server {verb} ({serving.name} schedules {default} by default)"


class _Release(NamedTuple):
    """The first release a source writes beside a server's name: the server as the profiles'
    ``frameworks`` name it, and the release."""

    server: str | None = None
    version: tuple[int, int] | None = None


def _named_release(lowered: str) -> _Release:
    match = _NAMED_RELEASE.search(lowered)
    if match is None:
        return _Release()
    name = match.group("server")
    server = "vllm" if name.startswith("vllm") else name if name == "sglang" else "tensorrt-llm"
    return _Release(server, (int(match.group("major")), int(match.group("minor"))))


def _tensorrt_release(source: str, named: _Release) -> tuple[int, int] | None:
    """The TensorRT-LLM release a source gives: beside the name; else, where no other server's
    release is written, as a branch (``release/0.5.0``), a bare ``v0.17``, or in words in a source
    naming TensorRT-LLM (``generated using version 0.17``)."""
    if named.server is not None:
        return named.version if named.server == "tensorrt-llm" else None
    lowered = source.lower()
    version = _TRT_VERSION.search(source)
    if version is None and "tensorrt" in lowered:
        version = _TRT_VERSION_WORD.search(lowered)
    return None if version is None else (0, int(version.group(1)))


def row_serving_stack(
    row: PublishedRow, year: int, vendor: str | None = None, year_note: str = ""
) -> tuple[ServingStack, str]:
    """The serving profile of a row on ``vendor``'s accelerators; a TensorRT-LLM version dates it
    (0.5-0.7: 2023, to 0.16: 2024) and picks the profile standing for that release where one does
    (0.5-0.6 and 0.7 differ in decode attention; 0.8-0.21 ran TensorRT engines, unless the row says
    it ran the PyTorch backend), as a vLLM version does (0.4-0.7: the V0 engine, 2024; from 0.8
    the V1 engine; from 0.14, 2026, with async scheduling) and an SGLang one (0.1-0.3: no overlap
    scheduler); a row naming a product that ships a server (NVIDIA NIM, Triton's TensorRT-LLM
    container) and no release of a server, nor a server the product does not ship, runs what the
    product's release ships
    (:func:`~lightspeed.sol.core.serving_packages.package_serving_stack`); a row naming no
    server takes the vendor's default
    (:func:`~lightspeed.sol.core.stacks.default_serving_stack`). A profile chosen by ``year``
    when no version dates the row says where that year came from (``year_note``, e.g. "no year in
    the source: 2020 for Ampere")."""
    source = row.text("source")
    named = _named_release(source.lower())
    if named.server is None:  # a package's release dates the server it ships (no other named)
        packaged = package_serving_stack(source, year)
        if packaged is not None and (vendor is None or vendor in packaged[0].vendors):
            return packaged
    release = None
    if trt := _tensorrt_release(source, named):
        major, minor = trt
        year = 2025 if major or minor > 16 else 2024 if minor > 7 else 2023
        release = None if major else trt
        if major:  # from 1.0 the PyTorch backend is the default, which no release range picks
            year_note = f"release {major}.{minor}, the PyTorch backend by default"
        if not major and _PYTORCH_BACKEND.search(source.lower()):
            release, year_note = None, f"release 0.{minor} on the PyTorch backend"
    elif named.server == "vllm" and named.version is not None:
        major, minor = named.version
        year = 2024 if not major and minor <= 7 else 2025 if not major and minor <= 13 else 2026
        release = None if major else named.version
        if major:
            year_note = f"release {major}.{minor}"
    elif named.server == "sglang" and named.version is not None:
        release = named.version  # 0.1-0.3: scheduling between GPU steps (sglang-2024)
    try:
        stack, note = serving_stack_for(
            " ".join((source, row.text("metric"))), year, release, vendor, server=named.server
        )
    except UnsupportedError as error:
        raise RowError(str(error)) from error
    dated_by_year = release is None and note.endswith(str(year))
    return stack, f"{note} ({year_note})" if dated_by_year and year_note else note


def _value(estimate: InferenceEstimate, metric: str) -> float:
    load = estimate.load
    sides = {
        "total_tokens_per_s": load.input_tokens + load.output_tokens,
        "input_tokens_per_s": load.input_tokens,
    }
    side = sides.get(metric.removesuffix("_per_gpu"))
    if side is not None:
        rate = estimate.requests_per_s * side
        return rate / estimate.num_gpus if metric.endswith("_per_gpu") else rate
    if metric == "itl_s":  # every gap of a steady batch is one decode iteration
        return estimate.tpot_s
    if metric == "request_latency_s":
        return estimate.ttft_s + (load.output_tokens - 1) * estimate.tpot_s
    return float(getattr(estimate, metric))


def inference_predictor(
    efficiency: EfficiencyModel | None = None, *, load_bands: bool = True
) -> Callable[[PublishedRow, Catalog, ModelRegistry], ValidationRow]:
    """A predictor for :func:`~lightspeed.sol.validation.validate.validate_published`'s ``infer``
    argument; ``load_bands`` off skips the two runs that draw a latency under load its band (the
    family's band is drawn instead), for callers that read only the predictions."""

    def predict(row: PublishedRow, catalog: Catalog, registry: ModelRegistry) -> ValidationRow:
        setup, cluster = inference_row_setup(row, catalog, registry)
        label = RowLabel(row.row_id, row.text("source"))
        return predict_inference_setup(label, setup, cluster, efficiency, load_bands=load_bands)

    return predict


def predict_inference_setup(
    label: RowLabel,
    setup: InferenceRowSetup,
    cluster: Cluster,
    efficiency: EfficiencyModel | None = None,
    *,
    load_bands: bool = True,
) -> ValidationRow:
    """The prediction of an inference row from its setup (the fit script swaps ``setup.serving``):
    simulated when the figure depends on load, else the analytic steady state. A latency measured
    at an arrival rate gets its band under that load (:mod:`lightspeed.sol.serve.load_band`: two
    more runs) unless ``load_bands`` is off (the fit script, which reads only the prediction)."""
    family = family_of("infer", setup.model, cluster.system.accelerator)
    band = band_for(shipped_bands(), family)
    interval: tuple[float, float] | None = None
    try:
        if setup.simulation is not None:
            predicted, reached = simulate_row(
                setup.simulation,
                model=setup.model,
                cluster=cluster,
                plan=setup.plan,
                metric=setup.metric,
                serving=setup.serving,
                efficiency=efficiency,
                percentile=latency_percentile(setup.reading.metric_text) if setup.reading else None,
                band=band if load_bands else None,
            )
            notes = [setup.simulation.note]
            if "settling_note" in reached:
                notes.append(str(reached.pop("settling_note")))
            if "interval_under_load" in reached:
                low, high = reached["interval_under_load"]
                interval = (min(low, predicted), max(high, predicted))
                notes.append(str(reached.pop("interval_note")))
            plan = {**setup.plan.to_dict(), "simulated": setup.simulation.mode, **reached}
            # the engine's own assumptions (weights and GEMMs, KV cache, efficiency), as plan infer
            # prints them for the same plan: the simulation prices its steps with that engine
            engine = _engine_assumptions(setup, cluster, efficiency)
            assumptions = tuple(dict.fromkeys((*setup.assumptions, *notes, *engine)))
        else:
            predicted, plan, assumptions = _analytic(setup, cluster, efficiency)
    except UserInputError as error:
        raise RowError(str(error)) from None
    return predicted_row(
        label,
        kind="infer",
        metric=setup.metric,
        measured=setup.measured,
        predicted=predicted,
        plan=plan,
        assumptions=assumptions,
        reading=setup.reading,
        readings=setup.readings,
        band=band,
        interval=interval,
        stack=setup.serving.name if setup.serving is not None else "",
        family=family,
    )


def _estimate(
    setup: InferenceRowSetup, cluster: Cluster, efficiency: EfficiencyModel | None
) -> InferenceEstimate:
    """The analytic steady state of the row's plan and load."""
    return estimate_inference(
        model=setup.model,
        cluster=cluster,
        plan=setup.plan,
        load=setup.load,
        efficiency=efficiency,
        batching=setup.batching,
        serving=setup.serving,
    )


def _engine_assumptions(
    setup: InferenceRowSetup, cluster: Cluster, efficiency: EfficiencyModel | None
) -> tuple[str, ...]:
    """The engine's assumptions on the row's plan (weights and GEMMs, KV cache, efficiency), with
    which the simulation prices its steps. A load the steady state refuses (an arrival rate above
    what the plan serves, which the simulation queues) is taken at the plan's own batch: these
    assumptions do not depend on it."""
    try:
        return _estimate(setup, cluster, efficiency).assumptions
    except UserInputError:
        unloaded = replace(setup.load, arrival_rate_per_s=None, concurrency=None)
        return _estimate(replace(setup, load=unloaded), cluster, efficiency).assumptions


def _analytic(
    setup: InferenceRowSetup, cluster: Cluster, efficiency: EfficiencyModel | None
) -> tuple[float, dict[str, object], tuple[str, ...]]:
    estimate = _estimate(setup, cluster, efficiency)
    plan = {
        **setup.plan.to_dict(),
        "batch_per_replica": estimate.batch_per_replica,
        "max_batch": estimate.max_batch,
        "ttft_s": estimate.ttft_s,
        "tpot_s": estimate.tpot_s,
        "bound": estimate.bound,
    }
    return _value(estimate, setup.metric), plan, setup.assumptions + estimate.assumptions


__all__ = [
    "INFERENCE_METRICS",
    "InferenceRowSetup",
    "InferenceRowSpec",
    "inference_predictor",
    "inference_row_setup",
    "inference_setup",
    "predict_inference_setup",
    "read_inference_row",
]
