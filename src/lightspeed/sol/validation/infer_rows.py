"""Read published inference rows (``kind = infer`` in ``published-dev.tsv``) into typed fields
(:class:`InferenceRowSpec`); :mod:`lightspeed.sol.validation.infer_predict` predicts them.

Rules for reading a row (documented in ``docs/inference.md``; the same for every row). The parallel
layout and serving plan (parallelism, attention data parallelism, batch caps) are read by
:mod:`lightspeed.sol.validation.infer_layout`, speculative decoding by
:mod:`lightspeed.sol.validation.infer_speculation`, the weights', activations' and
KV cache's formats by :mod:`lightspeed.sol.validation.infer_precision`, the phrases of token lengths,
batches and concurrency by :mod:`lightspeed.sol.validation.infer_lengths`, the serving stack and its
release by :mod:`lightspeed.sol.validation.infer_stack`; this module reads the rest:

* **Model**: the registry model the name gives, else one built from the row's
  dimensions; a name the registry lacks (``LLaMA 70B``) resolves to the
  registry models whose names hold all its words, earliest generation first
  (tables keep the unversioned name for the first model of that size); a name none holds is
  refused as a training row's is, naming the closest registry models.
* **Hardware**: the accelerator's default catalog system, as for training rows;
  a row on fewer GPUs than one node uses part of it.
* **Load**: ``ISL/OSL a/b`` (or ``input/output a/b``; ``32k`` is 32,768) gives
  the token counts, as do the two lengths said one at a time in one cell, label
  before or after the number (``ISL 128 OSL 2048``, ``input 1024 output 512``,
  ``1024 input / 512 output tokens``, ``input size 128 and an output size 128 tokens``,
  ``512-token input sequence``, ``Input length: 32 tokens. Output length: 128 tokens.``; the
  output first too, each length by its label: ``OSL 256, ISL 4096``, ``OSL/ISL 256/1024``,
  ``256 output tokens, 1024 input tokens``:
  :func:`~lightspeed.sol.validation.infer_lengths.input_output`); ``N-token prefill`` is a prompt
  of N tokens and one output token, as is
  a first-token latency whose sequence cell gives the input length and no output length
  (``Input Length 128, Output Length -``). ``offline`` / ``max concurrency`` / ``max load``
  / ``max throughput`` is continuous batching at the KV-cache-limited maximum
  (``trtllm-bench throughput``) unless the row states a batch or a concurrency, which wins
  (``offline`` at a stated batch is that fixed batch; the note says so); two different loads in one
  row (``concurrency 16`` and a metric ``at 64 concurrent``) are refused, naming both, and a batch
  or concurrency range (``BS 1-256``, ``concurrency 64 to 128``, a sweep) is refused as runs, naming
  its cell; a length written as a range (``ISL 900-1100``) is refused, one written as approximate
  (``input ~1000``) read as written, said in the assumptions; ``batch N`` / ``batch size N`` / ``bsN``
  is a static batch of N (``gptSessionBenchmark``, LLM-Viewer; ``1,750`` is 1750; ``Batch size: fixed
  (8)``, as vLLM's latency benchmarks write it), predicted at what the KV cache holds where it holds
  fewer (said, and flagged in the row's reason; refused past 1.5x:
  :func:`~lightspeed.sol.validation.infer_predict.predict_inference_setup`); ``concurrency N`` /
  ``N concurrent`` / ``N in flight``
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
  ``latency`` the whole request (TTFT + (OSL - 1) x TPOT), each the percentile the metric names
  (:func:`~lightspeed.sol.validation.infer_load.latency_percentile`: ``p99_ttft_ms``, ``p999``,
  ``99%ile``) where the figure is simulated, else the mean; a ``decode`` token rate at one
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
from dataclasses import dataclass, replace
from typing import Final, NamedTuple

from lightspeed.catalog import Catalog
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
    StatedLayout,
    deployment,
    gpus_from_layout,
    stated_cap,
    stated_layout,
    unstated_tp,
)
from lightspeed.sol.validation.infer_lengths import (
    BARE_COUNT,
    BATCH_VALUE,
    CONCURRENCY_VALUE,
    INPUT_LENGTH,
    INPUT_ONLY,
    PREFILL,
    approximate_lengths,
    batch_ranges,
    batches_written,
    concurrencies_written,
    concurrency_ranges,
    input_output,
    length_range,
    load_list,
    stated_concurrency,
    token_count,
    written_concurrency,
)
from lightspeed.sol.validation.infer_load import (
    RowSimulation,
    all_at_once_simulation,
    load_simulation,
    mlperf_kv_precision,
    mlperf_row_simulation,
    names_mlperf,
    reading_percentile,
    row_rate,
    row_requests,
    sends_all_at_once,
)
from lightspeed.sol.validation.infer_speculation import stated_speculation
from lightspeed.sol.validation.infer_stack import row_serving_stack, stated_overlap
from lightspeed.sol.validation.plausibility import check_serving_figure
from lightspeed.sol.validation.predicted_readings import choose_reading
from lightspeed.sol.validation.published import PublishedRow, integer_cell
from lightspeed.sol.validation.readings import Reading, RowError, read_cell, split_pieces
from lightspeed.sol.validation.row_model import registry_name, resolve_model
from lightspeed.sol.validation.rows import RunSpec, row_year
from lightspeed.workload import ModelRegistry, TransformerSpec

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
    except RowError as error:
        # the training rows' refusal, with the catalog's closest names (no generation found below)
        unresolved = error
    name = re.split(r"[(,]", row.text("model"))[0].strip().lower()
    words = [word for word in _WORD_SPLIT.split(name) if word and word not in _CHECKPOINT_WORDS]
    candidates = sorted(
        name
        for name in registry.names()
        if any(_a_generation_of(words, spelling) for spelling in _spellings(registry, name))
    )
    if not candidates:
        raise unresolved
    return registry.get(candidates[0]), (
        f"model '{row.text('model')}' -> {candidates[0]} (registry names holding {', '.join(words)}: "
        f"{', '.join(candidates)}; earliest generation)"
    )


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
    spread = length_range(text)
    if spread is not None:
        words, at_middle = spread
        raise RowError(
            f"the length '{words}' is a range of tokens{_in_cell(row, words)}, not one length: write the "
            f"length the figure was measured at (for lengths drawn from the range, their mean, e.g. "
            f"'{at_middle}')"
        )
    if run is None:
        lengths = input_output(text, row.text("seq"))
    elif dataset is None:
        lengths = run[0], run[1]
    prefill = PREFILL.search(text)
    decode, prefill_pool = _names_pool(row, "decode"), _names_pool(row, "prefill")
    if decode and prefill_pool:
        raise RowError(
            "the row names both a decode pool and a prefill pool; say which pool the figure is of "
            "(e.g. 'saturated decode' or 'input N tokens (prefill)')"
        )
    if lengths:
        isl, osl = lengths
    elif prefill:
        isl, osl = token_count(prefill.group(1)), 1
    elif _first_token_only(row) and (prompt := INPUT_LENGTH.search(row.text("seq").lower())):
        # a first-token latency with the prompt's length and none for the output (``Output Length -``):
        # the first token is all it times, unless other requests decode beside it
        _no_output_length_under_load(row, text)
        isl, osl = token_count(prompt.group("isl_a") or prompt.group("isl_b")), 1
    elif decode and (context := INPUT_ONLY.search(text)):
        # A decode pool's figure with only the context stated: decode right after the prompt.
        tokens = context.group("isl_a") or context.group("isl_b")
        return _RowLoad(
            ServingLoad(token_count(tokens), 1),
            "decode",
            f"decode pool on its own at a context of {tokens} tokens, KV-limited batch",
        )
    elif prefill_pool and (context := INPUT_ONLY.search(text)):
        # A prefill pool's figure: prompts of the stated length, each ending at its first token.
        tokens = context.group("isl_a") or context.group("isl_b")
        return _RowLoad(
            ServingLoad(token_count(tokens), 1),
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
        lengths_note=run[2] if run else _approximate_note(text, row.text("seq"), isl, osl)
    )


def _approximate_note(text: str, seq: str, isl: int, osl: int) -> str:
    """What the assumptions say of lengths written as approximate (``input ~1000, output ~1000``):
    read as the numbers written, the run's nominal lengths (a benchmark's ``~1000`` is its setting,
    its requests near it), else ``''``."""
    words = approximate_lengths(text, seq)
    if words is None:
        return ""
    return f"lengths written as approximate ('{words}'): read as {isl:,} input and {osl:,} output tokens"


def _no_output_length_under_load(row: PublishedRow, text: str) -> None:
    """Refuse a first-token latency read without an output length when the row's lower-case load
    ``text`` puts other requests beside it (several users, a request rate): their decoding shares
    the GPU with each prompt, so the TTFT depends on how long they generate."""
    users = stated_concurrency(text)
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
    runs = load_list(text)
    if runs is not None:
        words, what = runs
        raise RowError(
            f"the row names several runs, '{words}': a row holds the figure of one run; write one row "
            f"per {what}, each with its own measured value"
        )
    batches, ranges = batches_written(text), batch_ranges(text)
    size = _static_batch(row, text, batches, ranges)
    written = written_concurrency(text)
    most = _MAX_LOAD.search(text)
    runs_of = [(words, "batch") for words in ranges] + [
        (words, "concurrency") for words in concurrency_ranges(text)
    ]
    if runs_of and size is None and written is None and most is None:
        raise _range_of_runs(row, *runs_of[0])
    if written is None and (unread := CONCURRENCY_VALUE.search(text)) is not None:
        raise RowError(
            f"the concurrency '{unread.group(0).strip()}' is not a whole number of requests written in "
            "digits (e.g. 64)"
        )
    _refuse_two_loads(row, batches, concurrencies_written(text, num_gpus))
    # a batch or concurrency the row states wins over words of the most load ('offline', 'max
    # throughput'): offline with a stated batch is that fixed batch
    if size is not None:
        beside = _over_most_load(most, "batch")
        return _RowLoad(ServingLoad(isl, osl, concurrency=size), "static", f"static batch of {size}{beside}")
    if written is not None:
        count, per_rank = written
        concurrency = count * num_gpus if per_rank else count
        on_each = f" ({count} per rank on each of {num_gpus} GPUs)" if per_rank else ""
        beside = _over_most_load(most, "concurrency")
        return _RowLoad(
            ServingLoad(isl, osl, concurrency=concurrency),
            "continuous",
            f"continuous batching, {concurrency} in flight{on_each}{beside}",
        )
    if most:
        return _RowLoad(
            ServingLoad(isl, osl),
            "continuous",
            "offline maximum load: continuous batching at the KV limit",
            all_at_once=sends_all_at_once(row),
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


def _range_of_runs(row: PublishedRow, words: str, what: str) -> RowError:
    """The refusal of a batch or concurrency written as a range (``batch size 32-64``,
    ``concurrency 64 to 128``): runs over many loads, one figure each, never the first of them."""
    first = re.search(r"\d[\d,]*", words)
    example = f"{what} {first.group(0) if first else 64}"
    return RowError(
        f"the {what} '{words}' is a range of runs{_in_cell(row, words)}, not the {what} the figure was "
        f"measured at: write one value per row, each with its own measured value (e.g. '{example}'), or "
        "'offline' for the server at its most load"
    )


def _in_cell(row: PublishedRow, words: str) -> str:
    """`` in the global_batch cell`` for the load cell whose lower-case text holds ``words``."""
    cell = next((name for name in ("seq", "global_batch", "metric") if words in row.text(name).lower()), None)
    return f" in the {cell} cell" if cell else ""


def _static_batch(row: PublishedRow, text: str, batches: dict[int, str], ranges: list[str]) -> int | None:
    """The static batch the lower-case load ``text`` states (the first of ``batches``, else a load
    cell holding a number alone), if any; a batch label whose value no whole number reads is
    refused (a range, ``BS 1-256``, is a sweep, not such a value)."""
    if not batches and not ranges and (unread := BATCH_VALUE.search(text)) is not None:
        raise RowError(f"the batch '{unread.group(0).strip()}' is not a whole number of sequences")
    load_cell = row.text("global_batch")
    if batches:
        return next(iter(batches))
    return integer_cell(load_cell) if BARE_COUNT.fullmatch(load_cell) else None


def _over_most_load(most: re.Match[str] | None, stated: str) -> str:
    """What a note adds where the row also says it ran at the most load (``offline``)."""
    return f" ('{most.group(0)}' with a stated {stated}: that {stated}, not the KV limit)" if most else ""


def _refuse_two_loads(row: PublishedRow, batches: dict[int, str], concurrencies: dict[int, str]) -> None:
    """Refuse a row whose load cells and metric state two different loads (``concurrency 16`` and a
    metric ``at 64 concurrent``; two batches; a batch and another concurrency), naming both; a
    metric cell of several pieces (``c=1: TTFT; c=4: total tok/s``) states one load a piece."""
    if len(split_pieces(row.text("metric"))) > 1:
        return
    if len(set(batches) | set(concurrencies)) > 1:
        stated = " and ".join(f"'{words}'" for words in (*batches.values(), *concurrencies.values()))
        raise RowError(f"the row states two loads, {stated}: keep the one its figure was measured at")


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
    ``None``: :func:`~lightspeed.sol.validation.infer_predict.inference_setup` simulates continuous
    batching at a concurrency or rate from ``load`` alone; ``overlap_scheduler`` the scheduling the
    row's server flags state (:func:`stated_overlap`), ``None`` where they state none."""

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
        static_batch=load.concurrency if batching == "static" else None,
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
    percentile = reading_percentile(reading.key, reading.metric_text)  # one it cannot read is refused here
    check_serving_figure(reading, model, cluster.system.accelerator, plan, load, num_gpus=num_gpus)
    notes = [model_note, f"hardware '{row.text('hardware')}' -> '{span}'", *plan_notes, load_note]
    static_note = _static_percentile_note(reading.metric_text, percentile) if batching == "static" else ""
    notes.extend([static_note] if static_note else [])
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


def _static_percentile_note(metric_text: str, percentile: float | None) -> str:
    """What a percentile of a static batch's latency is predicted as: the batch's requests start and
    finish together, so every one of them waits as long (``''`` where the metric names none)."""
    if percentile is None:
        return ""
    return (
        f"'{metric_text}': percentile {percentile:g} of a static batch, whose requests start and finish "
        "together: every request's latency is the batch's, so the percentile is predicted as that one"
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


__all__ = [
    "INFERENCE_METRICS",
    "InferenceRowSpec",
    "read_inference_row",
]
