"""Predict published inference rows (``kind = infer`` in ``published-dev.tsv``).

Rules for reading a row (documented in ``docs/inference.md``; the same for every row):

* **Model**: the registry model the name gives, else one built from the row's
  dimensions; a name the registry lacks (``LLaMA 70B``) resolves to the
  registry models whose names hold all its words, earliest generation first
  (tables keep the unversioned name for the first model of that size).
* **Hardware**: the accelerator's default catalog system, as for training rows;
  a row on fewer GPUs than one node uses part of it.
* **Parallelism** (:func:`_stated_layout`): each degree from its own cell, else its label or flag
  in another layout cell (``TP8EP8``, ``tp8_ep8``, ``TP4PP2``, ``4x2 (TPxPP)``, ``--ep-size 8``,
  ``moe_expert_parallel_size=8``, ``--tensor-parallel-size 4 --pipeline-parallel-size 2``), else
  in the source, hardware or precision cell (said in the notes); a count of copies (``2 replicas
  of TP4``, ``8 x TP1 instances``) is replicas, never TP. No TP anywhere: tp=1, or the smallest TP
  that holds the model (:func:`~lightspeed.sol.validation.infer_load.fitting_split`), said in the
  notes. The GPUs left over are replicas; a DP degree or count of copies saying otherwise refuses
  the row, and fills the GPUs when no cell counts them (:func:`_gpus_from_layout`). A row with none
  of them that says it ran ``a single instance`` (``one replica``) is one TP group over its GPUs
  (:func:`_one_instance`). ``DEP8`` / ``TEP8`` (TensorRT-LLM's and InferenceMAX's recipes) are
  attention DP 8 / TP 8 with EP 8; vLLM's ``--enable-expert-parallel`` is EP = TP x DP. Pools
  counted as ``1P1D`` / ``1 prefill + 1 decode`` are the plan's ``disaggregated``; disaggregation
  named without the counts is refused unless the figure is of one pool (:func:`_pools`).
* **Precision**: ``FP4`` on an NVIDIA GPU is NVFP4 (what ModelOpt and
  TensorRT-LLM ship, 16-value blocks with an FP8 scale), on AMD MXFP4 (32-value
  blocks with an 8-bit exponent scale); otherwise the cell's
  format (``fp16 (presumed)`` is fp16); none stated is bf16. Weight-only quantization
  (``INT8 weight-only``, ``W4A16``, ``W8A16``; AWQ, GPTQ and INT4 checkpoints, 4-bit unless
  they say 8) stores the weights in 8 or 4 bits and runs the GEMMs in 16 bits
  (:func:`_weight_only`); INT8 on an MoE served by TensorRT-LLM is weight-only in the engine
  itself (its MoE plugin has no INT8-activation kernel).
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
  stated cap on sequences (``max_batch N [per rank]``, ``maximum batch size N``, ``Max Num Seqs N``,
  ``max_running_requests N``, in a load cell, the sharding cell or the source's command) is the
  plan's ``max_batch`` (:func:`_stated_cap`), never a static batch.
* **Speculative decoding** (:func:`_stated_speculation`): the draft tokens a step (``MTP 3``,
  ``3-token MTP``, ``num_nextn_predict_layers=3``, ``"num_speculative_tokens": 3``, SGLang's
  ``--speculative-num-steps 3``, or its ``--speculative-num-draft-tokens 4`` less the token it
  verifies with them; a tree, top-k above 1, is refused) with an acceptance rate or length.
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
* **Attention data parallelism** on an MoE row that names it (``attention DP``, ``ADP``,
  TensorRT-LLM's ``enable_attention_dp``, SGLang's ``--enable-dp-attention``) or whose EP spans
  several DP ranks' TP groups (vLLM's DP with expert parallelism): as many groups as the DP
  degree, of the TP's GPUs each where they fit, else of TP / DP (SGLang's ``--tp 8 --dp 8``); with
  no DP degree one-GPU groups, as many as the TP (as the EP when TP is 1)
  (:func:`_attention_groups`); the **KV cache** format the precision cell names
  (:func:`_kv_precision`); the **serving stack** the source names, dated by its
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

from lightspeed.catalog import Accelerator, Catalog, Cluster
from lightspeed.errors import InvalidPlanError, UnsupportedError, UserInputError
from lightspeed.records import Record
from lightspeed.sol.core.efficiency import EfficiencyModel
from lightspeed.sol.core.stacks import ServingStack, load_serving_stack, serving_stack_for
from lightspeed.sol.core.uncertainty import interval_for
from lightspeed.sol.infer.estimate import InferenceEstimate, estimate_inference
from lightspeed.sol.infer.plan import InferencePlan, ServingLoad, SpeculativeDecoding, sixteen_bit_format
from lightspeed.sol.serve.benchmark_datasets import find_benchmark_dataset
from lightspeed.sol.serve.mlperf_inference import MlperfWorkload, load_mlperf_workload
from lightspeed.sol.validation.hardware_text import cluster_of, read_hardware, row_gpus
from lightspeed.sol.validation.infer_load import (
    RowSimulation,
    all_at_once_simulation,
    fitting_split,
    latency_percentile,
    load_simulation,
    mlperf_row_simulation,
    mlperf_split,
    names_mlperf,
    row_rate,
    row_requests,
    sends_all_at_once,
    simulate_row,
)
from lightspeed.sol.validation.published import (
    PublishedRow,
    RowError,
    format_keys,
    integer_cell,
    is_missing,
    size_cell,
)
from lightspeed.sol.validation.readings import Reading, read_cell
from lightspeed.sol.validation.rows import RunSpec, choose_reading, registry_name, resolve_model, row_year
from lightspeed.sol.validation.validate import RowLabel, ValidationRow, predicted_row
from lightspeed.workload import ModelRegistry, TransformerSpec
from lightspeed.workload.names import FORMAT_TAGS, checkpoint_format

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
_PAIR_LABEL = r"(?:isl\s*/\s*osl|input\s*/\s*output|in\s*/\s*out)"
# ``ISL/OSL 1024/2048``, ``(ISL/OSL) 128/128``, ``ISL/OSL=1k/2k``; a label naming the pair's lengths
# and the pair said with a comma, ``Input/Output Lengths 2048, 2048`` (TensorRT-LLM's tables); or the
# pair first: ``128/2048 (ISL/OSL)``
_PAIR_WORD = r"(?:\s*(?:sequence\s+)?(?:lengths?|lens?|sizes?))?"
_ISL_OSL = re.compile(
    rf"{_PAIR_LABEL}{_PAIR_WORD}\s*\)?\s*[=:]?\s*{_COUNT}\s*[/,]\s*{_COUNT}"
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
    r"(?:[\s_-]+(?:mean|avg|average))?"
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
# ``--output-len``, ``random_output_len``)
_HALF_SEPARATOR = r"[\s,;/&+().-]*(?:and\s+)?(?:(?:an?|the|fixed|max(?:imum)?)\s+)*(?:[a-z]+[_-])?"
# the end of a number: no digit after it, and no decimal point (a full stop ending a sentence is not one)
_NUMBER_END = r"(?!\d|\.\d)"


def _length_half(label: str, group: str) -> str:
    """``label N`` or ``N label`` (an optional ``tokens`` after the number), the number named ``group``."""
    return (
        rf"(?:(?:\b|(?<=_)){label}\s*[=:]?\s*(?P<{group}_a>{_COUNT[1:-1]}){_NUMBER_END}{_TOKEN_WORD}"
        rf"|(?P<{group}_b>{_COUNT[1:-1]}){_NUMBER_END}{_TOKEN_WORD}\s+{label}\b{_TOKEN_WORD})"
    )


_LABELLED_LENGTHS = re.compile(
    _length_half(_IN_LABEL, "isl") + _HALF_SEPARATOR + _length_half(_OUT_LABEL, "osl")
)
# The input length alone in the sequence cell (``Input Length 128, Output Length -``, ``ISL 2048``):
# what a first-token latency needs. (Not ``prompts``: ``1200 prompts`` counts requests.)
_INPUT_LENGTH = re.compile(_length_half(rf"(?:isl|input{_LENGTH_WORD})", "isl"))


# A sequence cell that is only a pair, ``1k/1k``, ``1024 / 128 tokens``, ``1024:128``, or a pair
# after the dataset's name (``random 1024/128``, ``sonnet 550/150``): ISL/OSL, the order every
# serving benchmark writes them in.
_BARE_PAIR = re.compile(rf"\s*(?:[a-z]+\s+)?{_COUNT}\s*[/:]\s*{_COUNT}(?:\s*tokens?)?\s*")


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
_INPUT_ONLY = re.compile(rf"(?:input|kv length|context)\s*(?:of\s*)?{_COUNT}\s*(?:tokens)?")
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
# a count as tables write it, with or without thousands separators (``Batch Size 1,750``)
# A whole count: never the first digits of a longer number (``1e400`` is no 1, ``8.5`` no 8).
_INTEGER = r"(\d{1,3}(?:,\d{3})+|\d+)(?![\d.]|,\d|e[+-]?\d)"
# (not a cap: ``max batch 384``, ``maximum batch size 64``, ``max_batch_size 128`` are :data:`_SEQUENCE_CAP`)
# ``Batch size: fixed (8)`` (vLLM's latency benchmark descriptions) is a static batch of 8 too
_BATCH = re.compile(
    rf"(?<!max[ _-])(?<!maximum[ _-])\b(?:batch(?:\s*size)?|bs)\s*[=:]?\s*(?:fixed\s*)?\(?\s*{_INTEGER}"
)
# A cap on the sequences a server runs at once, as its options say it: ``max_batch 384 per rank``,
# ``maximum batch size 64`` (TensorRT-LLM's ``--max_batch_size``), ``Max Num Seqs 3200`` (vLLM's
# ``--max-num-seqs``), ``max_running_requests 4096`` (SGLang's ``--max-running-requests``).
_SEQUENCE_CAP = re.compile(
    r"max(?:imum)?[ _-]?(?:batch(?:[ _-]?size)?|num[ _-]?seqs|running[ _-]?requests)\s*[=:]?\s*"
    rf"{_INTEGER}(?P<per_rank>\s*(?:per|/)\s*(?:attention\s+)?(?:rank|gpu|dp\s+rank)\b)?"
)
# ``concurrency 64``, ``max concurrency 256`` (vLLM's ``--max-concurrency``), ``conc=64``,
# ``conc. 64``, ``c=64``, ``64 concurrent``, ``64 users`` / ``64 clients`` (closed-loop users, one
# request each in flight), ``64 in flight``, ``64 parallel requests``.
_CONCURRENCY = re.compile(
    rf"(?:concurrency|\bconc\.?|\bc|\b(?:num[ _-]?)?(?:users|clients)|\bnum[ _-]?concurrent"
    rf"|\bconcurrent[ _-](?:requests|users))\s*[=:]?\s*{_INTEGER}"
    r"|(\d+)\s*(?:concurrent|(?:simultaneous |parallel |virtual )?(?:users|clients)\b"
    r"|(?:requests?\s+)?in[ -]flight\b|parallel\s+requests\b)"
)
_ATTENTION_DP = re.compile(r"attention[ _-]?dp|\badp\b|dp[ _-]attention")


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
    words = [word for word in re.split(r"[\s_-]+", name) if word and word not in _CHECKPOINT_WORDS]
    candidates = sorted(
        name
        for name in registry.names()
        if any(all(word in spelling for word in words) for spelling in _spellings(registry, name))
    )
    if not candidates:
        raise RowError(f"model {row.text('model')!r} is neither in the registry nor described by the row")
    return registry.get(candidates[0]), (
        f"model '{row.text('model')}' -> {candidates[0]} (registry names holding {', '.join(words)}: "
        f"{', '.join(candidates)}; earliest generation)"
    )


# Checkpoint formats a model name states that run as one of the engine's precisions (AWQ, GPTQ,
# INT4 and W4A16 name weight-only formats: :func:`_weight_only`).
_WEIGHT_ONLY_CHECKPOINTS: Final = frozenset({"awq", "gptq", "int4", "w4a16", "w8a16", "nvfp4a16", "bnb"})
_NAMED_FORMATS: Final = {
    **{key: key for key in ("fp8", "fp4", "nvfp4", "mxfp4", "int8", "bf16", "fp16")},
    "w8a8": "int8",
}


class RowPrecision(NamedTuple):
    """A row's weight format, the note saying why, a per-layer mixed checkpoint's effective
    bits (``None``: every linear layer in ``format``) and the format its GEMMs take their inputs
    in (``None``: the engine's rule, the weights' own where the GPU computes in it)."""

    format: str
    note: str
    effective_bits: float | None = None
    activation: str | None = None


# Weight-only quantization (TensorRT-LLM docs/source/precision.md, "INT4 and INT8 Weight-Only
# (W4A16 and W8A16)": weights stored in 8 or 4 bits and dequantized on the fly in the GEMMs,
# activations in FP16/BF16), as rows and checkpoint names write it: ``INT8 weight-only``,
# ``W4A16``, an AWQ or GPTQ checkpoint (4-bit unless it says 8: ``GPTQ-Int8``).
_WEIGHT_ONLY = re.compile(r"weight[- ]?only|\bw[48]a16\b|\bawq\b|\bgptq\b|\b4[- ]?bit\b|\bbnb\b|bitsandbytes")
_EIGHT_BIT = re.compile(r"int8|\bw8a16\b|\b8[- ]?bit")
_FOUR_BIT = re.compile(r"int4|\bw4a16\b|\bawq\b|\bgptq\b|\b4[- ]?bit")
_WEIGHT_ONLY_SOURCE: Final = (
    "TensorRT-LLM docs/source/precision.md: weight-only formats dequantize the weights in the GEMMs, "
    "which compute in FP16/BF16"
)


def _weight_only_format(lowered: str, vendor: str) -> str:
    """The stored format of a weight-only checkpoint ``lowered`` names: a float format it names
    (``FP8 weight-only``, as Marlin runs FP8 on Ampere; a bare FP4 is the vendor's), else an integer
    one, 8-bit when it says so, 4-bit when it says so (AWQ and GPTQ are 4-bit), else 8-bit
    (TensorRT-LLM's default ``--weight_only_precision``)."""
    for key in ("nvfp4", "mxfp4", "fp8"):
        if key in lowered:
            return key
    if "fp4" in lowered:
        vendor_format = _vendor_format("fp4", vendor)
        return vendor_format[0] if vendor_format else "fp4"
    return "int8" if _EIGHT_BIT.search(lowered) or not _FOUR_BIT.search(lowered) else "int4"


def _weight_only(text: str, accelerator: Accelerator, said: str) -> RowPrecision:
    """The weight-only checkpoint ``text`` (a precision cell or a checkpoint name naming one)
    stands for (:func:`_weight_only_format`), with a note quoting ``said``."""
    weights = _weight_only_format(text.lower(), accelerator.vendor)
    inputs = sixteen_bit_format(accelerator)
    note = f"{said} -> weight-only {weights}: GEMMs in {inputs} ({_WEIGHT_ONLY_SOURCE})"
    return RowPrecision(weights, note, None, inputs)


def _precision(
    row: PublishedRow,
    accelerator: Accelerator,
    model: TransformerSpec,
    *,
    mlperf: MlperfWorkload | None = None,
) -> RowPrecision:
    """The row's weight format and note: the precision cell's, else the model name's, else (an
    MLPerf row of benchmark ``mlperf``) the checkpoint its submitters' code builds
    (:func:`_mlperf_checkpoint`) or their convention (:func:`_mlperf_precision`), else the format
    the model is released in (bf16 for most)."""
    precision = RowPrecision(*_stated_precision(row, accelerator, model, mlperf=mlperf))
    cell = row.text("precision")
    if precision.note.startswith("precision not stated") and _KV_PRECISION.search(format_keys(cell)):
        # the cell names the KV cache's format alone: the weights' is the name's or the release's
        note = precision.note.replace(
            "precision not stated", f"precision '{cell}' names only the KV cache's", 1
        )
        precision = precision._replace(note=note)
    checkpoint, written = _checkpoint_in_model_cell(row.text("model"))
    named = _NAME_WEIGHTS.get(written or "", written)
    if named and named != precision.format and not (named == "fp4" and precision.format.endswith("fp4")):
        said = f"the model name '{checkpoint.strip()}' states {written}, the precision cell wins"
        precision = precision._replace(note=f"{precision.note}; {said}")
    return precision


# the weights' format a checkpoint name's format tag stands for, where it is not the tag itself
_NAME_WEIGHTS: Final = {
    **dict.fromkeys(("awq", "gptq", "w4a16", "w4a8", "bnb"), "int4"),
    "w8a16": "int8",
    "w8a8": "int8",
    "nvfp4a16": "nvfp4",
}


# W4A8 (TensorRT-LLM's w4a8_awq, docs/source/precision.md: INT4 weights, FP8 activations, on Hopper
# and later; QServe's W4A8 on GPUs without FP8 runs INT8 activations)
_W4A8 = re.compile(r"\bw4a8\b")
# quantization methods a cell names instead of a format: SmoothQuant and bare W8A8 are INT8
# weights and activations (TensorRT-LLM docs/source/precision.md; llm-compressor's ``W8A8`` is
# INT8, ``W8A8-FP8`` FP8), vLLM's ``--quantization modelopt`` is ModelOpt's FP8 checkpoint and
# ``modelopt_fp4`` its NVFP4 one
_NAMED_METHODS: Final = (
    (re.compile(r"modelopt[-_ ]?fp4"), "nvfp4"),
    (re.compile(r"\bsmooth[- ]?quant\b|\bw8a8\b"), "int8"),
    (re.compile(r"\bmodelopt\b"), "fp8"),
)
# 16 bits without a format (``16-bit``, a benchmark table's ``16 (Quantization: 16)``): unquantized
_SIXTEEN_BITS = re.compile(r"^\s*16\b|\b16[- ]?bits?\b|quanti[sz]ation:?\s*16\b")
# a format written in a way no reader here takes, which must not pass for an unstated one:
# ``8-bit`` (INT8 or FP8?), ``W4A4`` (NVFP4, MXFP4 or INT4?), ``FP6``, llama.cpp's GGUF types
# (``Q4_K_M``, ``Q8_0``), ``mixed``, ``compressed-tensors``
_UNREAD_FORMAT = re.compile(
    r"\b\d+[- ]?bits?\b|\bw\d+a\d+\b|\bfp[1-7]\b|\bgguf\b|\bq\d_(?:k|\d)\w*|\bmixed\b"
    r"|compressed[- ]tensors|quanti[sz]"
)


def _w4a8(accelerator: Accelerator, said: str) -> RowPrecision:
    """INT4 weights with 8-bit GEMM inputs: FP8 where the GPU computes in it, else INT8."""
    inputs = "fp8" if "fp8" in accelerator.compute else "int8"
    note = f"{said} -> int4 weights, GEMMs in {inputs} (W4A8: TensorRT-LLM docs/source/precision.md)"
    return RowPrecision("int4", note, None, inputs)


def _cell_precision(cell: str, accelerator: Accelerator) -> tuple[str, str] | RowPrecision | None:
    """The weights' format a precision cell states, leaving out the KV cache's (``bf16 weights,
    fp8 KV cache`` is bf16); ``None`` when it states none. A cell naming a format no reader takes
    is refused, never read as unstated."""
    vendor = accelerator.vendor
    text = format_keys(_KV_PRECISION.sub(" ", format_keys(cell)))
    said = f"precision '{cell}'"
    if _W4A8.search(text):
        return _w4a8(accelerator, said)
    if _WEIGHT_ONLY.search(text):
        return _weight_only(text, accelerator, said)
    for key in ("nvfp4", "mxfp4", "fp4", "fp8", "int8", "int4", "fp16", "bf16", "fp32"):
        if key in text:
            return _vendor_format(key, vendor) or (key, f"{said} -> {key}")
    for pattern, key in _NAMED_METHODS:
        if pattern.search(text):
            return _vendor_format(key, vendor) or (key, f"{said} -> {key}")
    if _SIXTEEN_BITS.search(text):
        sixteen = sixteen_bit_format(accelerator)
        return sixteen, f"{said} -> {sixteen} (16 bits: the GPU's 16-bit float)"
    unread = _UNREAD_FORMAT.search(text)
    if unread is not None:
        raise RowError(
            f"{said}: '{unread.group(0)}' names a format lightspeed does not read; write the weights' "
            "format (bf16, fp16, fp8, int8, int4 weight-only, nvfp4, mxfp4) in the cell"
        )
    return None


def _stated_precision(
    row: PublishedRow, accelerator: Accelerator, model: TransformerSpec, *, mlperf: MlperfWorkload | None
) -> tuple[str, str] | RowPrecision:
    vendor = accelerator.vendor
    cell = row.text("precision")
    stated = _cell_precision(cell, accelerator)
    if stated is not None:
        return stated
    checkpoint, written = _checkpoint_in_model_cell(row.text("model"))
    if written == "gguf":
        raise RowError(
            f"model '{row.text('model')}' is a GGUF (llama.cpp) checkpoint, whose block formats and "
            "kernels lightspeed does not model; name the format it runs in, or leave the row out"
        )
    said = f"precision not stated; the model name '{checkpoint.strip()}'"
    if written == "w4a8":
        return _w4a8(accelerator, said)
    if written in _WEIGHT_ONLY_CHECKPOINTS:
        return _weight_only(checkpoint, accelerator, said)
    named = _named_precision(checkpoint, written, vendor)
    if named[1] != _NOT_STATED:
        return named
    released = named
    if model.release_format != "bf16":
        released = (
            model.release_format,
            (f"precision not stated: {model.release_format}, the format {model.display_name} is released in"),
        )
    if mlperf is None:
        return released
    return _mlperf_checkpoint(row, accelerator, mlperf) or _mlperf_precision(accelerator) or released


# The round an MLPerf row is from (``MLPerf Inference v5.0``, ``inference_results_v5.1``).
_MLPERF_ROUND = re.compile(r"\b(?:mlperf inference|inference_results)[ _]v(\d+\.\d+)\b")


def _mlperf_checkpoint(
    row: PublishedRow, accelerator: Accelerator, mlperf: MlperfWorkload
) -> RowPrecision | None:
    """The checkpoint the benchmark's data file says the submitters' code builds for the row's
    round and GPU (``sol/serve/data/mlperf.toml``), with a note; ``None`` when it lists none."""
    found = _MLPERF_ROUND.search(row.joined().lower())
    if found is None:
        return None
    checkpoint = mlperf.checkpoint(accelerator.architecture, accelerator.name, found.group(1))
    if checkpoint is None:
        return None
    mixed = (
        f" at {checkpoint.effective_bits:g} effective bits (per-layer mixed)"
        if checkpoint.effective_bits
        else ""
    )
    note = (
        f"precision not stated: {checkpoint.precision}{mixed}, the checkpoint the MLPerf v{found.group(1)} "
        f"code builds for {mlperf.display_name} on {accelerator.architecture} ({checkpoint.source}, "
        "sol/serve/data/mlperf.toml)"
    )
    return RowPrecision(checkpoint.precision, note, checkpoint.effective_bits)


# MLPerf Inference closed LLM submissions quantize to the narrowest float format the accelerator
# computes: NVIDIA's "LLM submissions use FP8 or FP4 if the NVIDIA accelerator supports that
# feature" (inference_results_v4.1, closed/NVIDIA/documentation/calibration.md), AMD's v4.1
# MI300X Llama 2 70B code is ``test_VllmFp8`` (closed/AMD/code/llama2-70b-99.9), and its v5.1
# MI355X submission introduced FP4. Summaries (``mlperf_log_summary.txt``) do not say it.
_MLPERF_FORMATS: Final = ("fp4", "fp8")


def _mlperf_precision(accelerator: Accelerator) -> tuple[str, str] | None:
    """An MLPerf row's format when it states none: the narrowest of :data:`_MLPERF_FORMATS` the
    accelerator has tensor-core rows for, with a note; ``None`` when it has neither."""
    for key in _MLPERF_FORMATS:
        if key in accelerator.compute:
            precision, _ = _vendor_format(key, accelerator.vendor) or (key, "")
            return precision, (
                f"precision not stated: {precision}, as MLPerf closed LLM submissions quantize to the "
                f"narrowest float format the accelerator computes ({key} on {accelerator.name})"
            )
    return None


_NOT_STATED: Final = "precision not stated: bf16"


def _checkpoint_in_model_cell(cell: str) -> tuple[str, str | None]:
    """(the checkpoint name, the format it states) a model cell writes: the name itself, else a
    name or bare format in its parentheses or after a comma (``Llama 3.1 70B
    (amd/Llama-3.1-70B-Instruct-FP8-KV)``, ``Llama-3.1-70B-Instruct (FP8)``, ``Llama 3.3 70B,
    FP8``); the name and ``None`` when none states one."""
    name, *rest = re.split(r"[(),]", cell)
    for part in (name, *rest):
        bare = part.strip().lower()
        written = checkpoint_format(part) or (bare if bare in FORMAT_TAGS else None)
        if written is not None:
            return part, written
    return name, None


def _named_precision(model: str, named: str | None, vendor: str) -> tuple[str, str]:
    """The precision ``named`` (the format the checkpoint name ``model`` states, e.g.
    ``nvidia/DeepSeek-R1-FP4``'s fp4) stands for, else bf16, with a note."""
    key = _NAMED_FORMATS.get(named or "")
    if key is None:
        if named is not None:
            return "bf16", f"the model name '{model}' states {named}, a format not modelled: bf16"
        return "bf16", _NOT_STATED
    precision, note = _vendor_format(key, vendor) or (key, "")
    said = f"precision not stated; the model name '{model.strip()}' states {named}: {precision}"
    return precision, said + (f" ({note})" if note else "")


def _vendor_format(key: str, vendor: str) -> tuple[str, str] | None:
    """A bare FP4 read as the vendor's FP4 format, with the note saying so; else ``None``."""
    if key == "fp4" and vendor == "NVIDIA":
        return "nvfp4", "FP4 on NVIDIA read as NVFP4 (ModelOpt/TensorRT-LLM checkpoints)"
    if key == "fp4" and vendor == "AMD":
        return "mxfp4", "FP4 on AMD read as MXFP4 (the OCP MX format AMD's kernels use)"
    return None


# Draft-then-verify decoding the row names (DeepSeek's MTP layers and TensorRT-LLM's
# ``num_nextn_predict_layers``, EAGLE, Medusa, a draft model), as a word or inside a flag or key
# (``speculative_config``, ``--speculative-num-steps``).
_SPECULATION = r"(?:mtp|nextn|speculative|eagle\d*|medusa|draft[ _]model|draft[ _]tokens?)"
_SPECULATIVE = re.compile(rf"(?<![a-z]){_SPECULATION}(?![a-z])", re.IGNORECASE)
_NOT_SPECULATIVE = re.compile(rf"\b(?:no|without|w/o|disabled?)\s+{_SPECULATION}", re.IGNORECASE)


def _names_speculation(row: PublishedRow) -> bool:
    """Whether a cell says the run decoded speculatively (``MTP 3 layers``), not that it did not
    (``no MTP``)."""
    return any(_SPECULATIVE.search(cell) and not _NOT_SPECULATIVE.search(cell) for cell in row.cells.values())


# Draft tokens per step as rows write them: ``MTP 3``, ``MTP=3``, ``3 MTP layers``, ``3 nextn
# steps``, ``3 draft tokens``, ``3-token MTP``, ``num_draft_tokens 3``, ``draft length 4``, ``Eagle3
# draft 3``, ``speculative tokens 5``, vLLM's ``--num-speculative-tokens 3`` (``"num_speculative_tokens":
# 3`` in its ``speculative_config``), TensorRT-LLM's ``num_nextn_predict_layers=3`` (its MTP
# decoding config: the MTP modules, one draft token each); not ``EAGLE-3``, the method's version.
# SGLang's flags are read before them (:func:`_sglang_drafts`).
_DRAFT_TOKENS = re.compile(
    r"\bmtp\s*[=:]?\s*(\d+)(?![\d.])"
    r"|\b(\d+)\s*(?:mtp|nextn)\s+(?:layers?|modules?|heads?|steps?|tokens?)\b"
    r"|\b(\d+)\s*(?:draft|speculative)\s+tokens?\b"
    r"|\b(\d+)\s*-?\s*tokens?\s+(?:mtp|eagle\d*|draft|speculative)\b"
    r"|(?:num[_ -]?draft[_ -]?tokens|draft[_ -]?(?:len(?:gth)?|tokens)"
    r"|num[_ -]?nextn[_ -]?predict[_ -]?layers|speculative[_ -](?:num[_ -])?(?:draft[_ -])?tokens"
    r"|spec(?:ulative)?[_ -]len(?:gth)?)[\"']?\s*[=:]?\s*(\d+)"
    r"|\bdraft\s*[=:]?\s*(\d+)(?![\d.a-z])",
    re.IGNORECASE,
)
# SGLang's EAGLE and MTP flags (python/sglang/srt/server_args.py): ``--speculative-num-steps N``
# drafts N tokens a step; ``--speculative-num-draft-tokens M`` counts the tokens the verify pass
# takes, the last accepted one with the drafts, which SGLang sets to N + 1 when
# ``--speculative-eagle-topk`` is 1; a top-k above 1 drafts a tree of candidates.
_SGLANG_STEPS = re.compile(r"speculative[_-]num[_-]steps[\s=:]*(\d+)", re.IGNORECASE)
_SGLANG_TOPK = re.compile(r"speculative[_-]eagle[_-]topk[\s=:]*(\d+)", re.IGNORECASE)
_SGLANG_VERIFIED = re.compile(r"speculative[_-]num[_-]draft[_-]tokens[\s=:]*(\d+)", re.IGNORECASE)
# The mean tokens a verify pass yields (``acceptance length 2.5``, ``AL 2.5``, ``accept length``,
# ``mean accepted tokens 2.5``), or the chance a draft token is kept (``acceptance rate 0.7``,
# ``acceptance 70%``).
_ACCEPTANCE_LENGTH = re.compile(
    r"(?:accept(?:ance|ed)?[_ -]?len(?:gth)?|\bal\b|(?:mean|average|avg)\.?\s+accepted\s+tokens"
    r"|accepted\s+tokens\s+per\s+(?:step|pass|iteration))\s*[=:]?\s*(\d+(?:\.\d+)?)",
    re.IGNORECASE,
)
_ACCEPTANCE_RATE = re.compile(
    r"accept(?:ance)?(?P<rate>[_ -]?rate)?\s*(?:of\s*)?[=:]?\s*(?P<value>\d+(?:\.\d+)?)\s*(?P<percent>%?)",
    re.IGNORECASE,
)


def _sglang_drafts(text: str) -> tuple[int, str] | None:
    """(draft tokens a step, how read) of SGLang's flags (:data:`_SGLANG_STEPS`), ``None`` where the
    row writes none; a tree of drafts (top-k above 1) is refused: lightspeed models a chain."""
    topk = _SGLANG_TOPK.search(text)
    if topk is not None and int(topk.group(1)) > 1:
        raise RowError(
            f"'{topk.group(0)}' drafts a tree of candidates; lightspeed models speculative decoding as a "
            "chain of draft tokens (top-k 1)"
        )
    steps = _SGLANG_STEPS.search(text)
    if steps is not None:
        return int(steps.group(1)), f" (SGLang's --speculative-num-steps {steps.group(1)})"
    verified = _SGLANG_VERIFIED.search(text)
    if verified is None:
        return None
    count = int(verified.group(1)) - 1
    how = (
        f" (SGLang's --speculative-num-draft-tokens {verified.group(1)} less the last accepted token, "
        "verified with the drafts)"
    )
    return count, how


def _draft_tokens(text: str) -> tuple[int, str] | None:
    """(draft tokens a step, how read) the lower-case ``text`` states (:func:`_sglang_drafts`,
    :data:`_DRAFT_TOKENS`), ``None`` where it states none."""
    sglang = _sglang_drafts(text)
    if sglang is not None:
        return sglang
    drafts = _DRAFT_TOKENS.search(text)
    return None if drafts is None else (int(next(group for group in drafts.groups() if group)), "")


def _acceptance(text: str, count: int) -> tuple[SpeculativeDecoding, str] | None:
    """(decoding of ``count`` draft tokens a step, what was read) at the acceptance length or rate
    the lower-case ``text`` states, ``None`` where it states neither. A bare ``acceptance 2.5`` (no
    ``rate``, no ``%``) between 1 and ``count + 1`` is a length: a rate is a share (0.7 or 70%)."""
    length = _ACCEPTANCE_LENGTH.search(text)
    if length is not None:
        return _from_length(count, length.group(1), f"acceptance length {length.group(1)}")
    rate = _ACCEPTANCE_RATE.search(text)
    if rate is None:
        return None
    value, percent = rate.group("value"), rate.group("percent")
    if not (rate.group("rate") or percent) and 1.0 < float(value) < count + 1.0:
        said = f"'{rate.group(0).strip()}' read as an acceptance length (a rate is 0.7 or 70%)"
        return _from_length(count, value, said)
    decoding = SpeculativeDecoding(count, float(value) / (100.0 if percent or float(value) > 1.0 else 1.0))
    return decoding, f"acceptance rate {value}{percent}"


def _from_length(count: int, length: str, said: str) -> tuple[SpeculativeDecoding, str]:
    """(decoding of ``count`` draft tokens whose verify passes yield ``length`` tokens, note)."""
    decoding = SpeculativeDecoding.from_acceptance_length(count, float(length))
    return decoding, f"{said} (each draft token kept with probability {decoding.acceptance_rate:.2f})"


def _stated_speculation(row: PublishedRow, plan: InferencePlan) -> tuple[InferencePlan, str]:
    """``plan`` decoding speculatively as the row states it (draft tokens per step,
    :func:`_draft_tokens`, and an acceptance rate or length, :func:`_acceptance`), with its note;
    where the row names speculation without both, ``plan`` as it is and a note saying it is
    predicted without."""
    if not _names_speculation(row):
        return plan, ""
    text = row.joined()
    drafts = _draft_tokens(text)
    try:
        accepted = _acceptance(text, drafts[0]) if drafts is not None else None
    except InvalidPlanError as error:
        raise RowError(f"speculative decoding as the row states it: {error}") from None
    if drafts is None or accepted is None:
        return plan, (
            "speculative decoding named but not modelled: the row states no draft tokens per step "
            "and acceptance rate or length, so it is predicted without it"
        )
    decoding, said = accepted
    note = f"speculative decoding as the row states it: {drafts[0]} draft tokens a step{drafts[1]}, {said}"
    return replace(plan, speculative=decoding), note


_KV_FORMAT = r"(fp8|fp16|bf16|int8|nvfp4)"
# ``bf16/FP16 KV cache``, ``FP8 KV``, ``KV cache fp8``, ``KV cache: fp8``, ``kv cache in fp8``,
# vLLM's ``--kv-cache-dtype fp8`` (``kv_cache_dtype=fp8``); ``bf16 attention``, ``bf16 MLA``,
# ``attention in bf16``: the attention kernels read the cache in the format they compute in. None
# of them is the weights' format.
_KV_PRECISION = re.compile(
    rf"\b{_KV_FORMAT}\s*(?:/\s*\w+\s*)?(?:kv\w*|attention|mla)\b|\b(?:attention|mla) in {_KV_FORMAT}\b"
    rf"|(?:--)?\bkv(?:[-_ ]?cache)?(?:[-_ ]?dtype)?\s*(?:[:=]|\bin\b)?\s*{_KV_FORMAT}\b"
)


def _kv_precision(row: PublishedRow) -> str | None:
    """The KV-cache format the precision cell names (``bf16/FP16 KV cache``, ``FP8 KV``, ``KV
    cache: fp8``, ``--kv-cache-dtype fp8``, ``bf16 attention``, ``bf16 MLA``), if any."""
    match = _KV_PRECISION.search(format_keys(row.text("precision")))
    if match is None:
        return None
    return next(group for group in match.groups() if group)


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


# A load of one request at a time: ``one request per time``, ``single request``, ``concurrency 1``,
# ``batch size 1``, ``bs1``.
_SINGLE_REQUEST = re.compile(
    r"\b(?:one|single|1)\s+(?:concurrent\s+)?request|concurrency\s*[=:]?\s*1(?![\d.]|,\d)"
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


def _load(row: PublishedRow) -> _RowLoad:
    """The load the row's sequence, batch and metric cells state (:class:`_RowLoad`)."""
    text = " | ".join(row.text(column) for column in ("seq", "global_batch", "metric")).lower()
    lengths = _input_output(text, row.text("seq"))
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
        # the first token is all it times
        isl, osl = _tokens(prompt.group("isl_a") or prompt.group("isl_b")), 1
    elif decode and (context := _INPUT_ONLY.search(text)):
        # A decode pool's figure with only the context stated: decode right after the prompt.
        return _RowLoad(
            ServingLoad(_tokens(context.group(1)), 1),
            "decode",
            f"decode pool on its own at a context of {context.group(1)} tokens, KV-limited batch",
        )
    elif prefill_pool and (context := _INPUT_ONLY.search(text)):
        # A prefill pool's figure: prompts of the stated length, each ending at its first token.
        return _RowLoad(
            ServingLoad(_tokens(context.group(1)), 1),
            "continuous",
            f"prefill pool on its own: {context.group(1)}-token prompts at the most load it holds",
        )
    elif dataset := find_benchmark_dataset(_load_cells(row)):
        # a dataset named without lengths (``ShareGPT``): its mean request, said in the assumptions
        batched = _batching(row, text, dataset.mean_input_tokens, dataset.mean_output_tokens, decode)
        return _RowLoad(*batched, lengths_note=dataset.note())
    else:
        raise RowError(
            "the row gives no ISL/OSL or prompt length (write them in the seq cell, e.g. 'ISL/OSL 1024/256')"
        )
    return _RowLoad(*_batching(row, text, isl, osl, decode))


def _batching(row: PublishedRow, text: str, isl: int, osl: int, decode: bool) -> tuple[ServingLoad, str, str]:
    """(load, batching mode, note) of requests of ``isl`` and ``osl`` tokens under the batch,
    concurrency or rate the lower-case load ``text`` states (module docs, **Load**)."""
    if decode:
        return ServingLoad(isl, osl), "decode", "decode pool on its own, KV-limited batch"
    batch = _BATCH.search(text)
    concurrency = _CONCURRENCY.search(text)
    if _MAX_LOAD.search(text):
        return (
            ServingLoad(isl, osl),
            "continuous",
            "offline maximum load: continuous batching at the KV limit",
        )
    if batch:
        size = int(batch.group(1).replace(",", ""))
        return ServingLoad(isl, osl, concurrency=size), "static", f"static batch of {size}"
    if concurrency:
        size = int((concurrency.group(1) or concurrency.group(2)).replace(",", ""))
        return ServingLoad(isl, osl, concurrency=size), "continuous", f"continuous batching, {size} in flight"
    if sends_all_at_once(row):
        return (
            ServingLoad(isl, osl),
            "continuous",
            "an infinite request rate: every request sent at once, continuous batching at the KV limit",
        )
    if _is_throughput(row) and row_rate(row) is None:
        return (
            ServingLoad(isl, osl),
            "continuous",
            "a throughput with no load stated: the server at its most load (continuous batching at the "
            "KV limit), as throughput benchmarks run",
        )
    stated = " | ".join(row.text(cell) for cell in ("global_batch", "micro_batch"))
    words = stated.lower().replace("_", " ")
    if _SINGLE_REQUEST.search(words):
        return ServingLoad(isl, osl, concurrency=1), "continuous", "one request at a time, as the row says"
    if _LOAD_WORDS.search(words) and row_rate(row) is None and not names_mlperf(row):
        raise RowError(
            f"the load {stated.strip(' |')!r} is not one lightspeed reads; write it as 'concurrency N', "
            "'request rate R' (per second), 'batch N' (static) or 'offline'"
        )
    return ServingLoad(isl, osl, concurrency=1), "continuous", "no batch stated: one request at a time"


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


def _metric(row: PublishedRow, num_gpus: int = 1, node_gpus: int = 8) -> Reading:
    """The first inference metric of the row's cells (paired by position, units and scope
    read, per-node values made per GPU)."""
    readings = read_cell(row.text("metric"), row.text("measured"), kind="infer")
    if not readings or all(reading.value is None for reading in readings):
        raise RowError(f"measured value {row.text('measured')!r} has no number")
    return choose_reading(readings, INFERENCE_METRICS, num_gpus, node_gpus)


@dataclass(frozen=True, kw_only=True)
class InferenceRowSpec(RunSpec):
    """A published inference run in typed fields, nothing left to read from text: what the
    structured rows hold and what the TSV reader makes of a row. ``serving`` names the profile of
    the server the run used (``docs/inference.md``); ``simulation`` how the TSV reader found a
    load-dependent figure is to be simulated (an MLPerf scenario, a request rate or count), else
    ``None``: :func:`inference_setup` simulates continuous batching at a concurrency or rate from
    ``load`` alone."""

    plan: InferencePlan
    load: ServingLoad
    batching: str
    serving: str
    simulation: RowSimulation | None = None


# The cells a row writes its parallel layout in, several degrees to a cell allowed (``TP8 EP8``),
# and the cells that describe the run in prose (``vllm serve ... -tp 4`` in the source, ``H200,
# TP4`` in the hardware cell, ``fp8 TP4`` in the precision cell), where a degree is read only with
# its label or flag.
_LAYOUT_CELLS: Final = ("TP", "PP", "DP", "EP", "sharding")
_PROSE_CELLS: Final = ("source", "hardware", "precision")
# A degree's flag or config key spelled out (``-``, ``_`` or spaces between the words): vLLM's
# ``--tensor-parallel-size`` / ``--pipeline-parallel-size`` / ``--data-parallel-size``
# (vllm/engine/arg_utils.py; ``tensor_parallel_size=4`` in its Python API), Megatron's ``Tensor
# Model Parallel Size`` and ``--expert-model-parallel-size``, TensorRT-LLM's LLM API
# ``moe_expert_parallel_size`` (tensorrt_llm/llmapi/llm_args.py). Not the experts' own TP
# (TensorRT-LLM's ``moe_tensor_parallel_size``, Megatron's ``--expert-tensor-parallel-size``) nor the
# virtual pipeline's size.
_PARALLEL_SIZE = r"parallel(?:ism)?[\s_-]+(?:size|degree)"
_DEGREE_FLAGS: Final = {
    "tp": rf"(?<!expert[\s_-])(?<!moe[\s_-])tensor[\s_-]+(?:model[\s_-]+)?{_PARALLEL_SIZE}",
    "pp": rf"(?<!virtual[\s_-])pipeline[\s_-]+(?:model[\s_-]+)?{_PARALLEL_SIZE}",
    "ep": rf"expert[\s_-]+(?:model[\s_-]+)?{_PARALLEL_SIZE}",
    "dp": rf"data[\s_-]+{_PARALLEL_SIZE}",
}


def _degree_label(name: str) -> re.Pattern[str]:
    """``name`` (``tp``, ``pp``, ``ep``, ``dp``) labelling its degree: ``TP4``, ``tp=4``, ``TP 4``,
    ``TP: 4``, the ``pp2`` of ``tp4pp2`` and the ``ep8`` of ``tp8_ep8``; the serving tools' short
    flags (SGLang's ``--tp 4`` / ``--tp-size 4`` / ``--ep-size 8`` / ``--dp 8``, vLLM's ``-tp 4`` /
    ``-pp 2`` / ``-dp 8``, trtllm-serve's ``--tp_size 8`` / ``--ep_size 8``, TensorRT-LLM's
    ``moe_ep_size``), a JSON key (``"tp": 4``); or its spelled-out flag (:data:`_DEGREE_FLAGS`). Not
    the end of a longer word (``MTP 3``, ``ETP1``, ``steps 3``, ``DEP8``), nor TensorRT-LLM's
    ``moe_tp_size`` (the experts' TP), nor the first of a range or list (a sweep's ``TP 1/2/4/8``,
    a citation's pages ``pp 12-25``)."""
    experts_tp = r"(?<!moe_)" if name == "tp" else ""
    label = rf"(?<![a-z]){experts_tp}{name}(?:[_-]?size)?"
    number = r"(\d+)(?![\d.])(?!\s*[-–/,]\s*\d)"
    return re.compile(rf"(?:{label}|{_DEGREE_FLAGS[name]})[\"']?\s*[=:]?\s*{number}", re.IGNORECASE)


_DEGREE_LABELS: Final = {name: _degree_label(name) for name in _DEGREE_FLAGS}
# Two degrees written as a product with their names after or before it: ``4x2 (TPxPP)``, ``TPxPP
# 4x2``, ``TP/PP = 4/2``.
_TIMES = r"\s*[x×*/]\s*"
_NAMES = rf"(tp|pp|ep|dp){_TIMES}(tp|pp|ep|dp)"
_PAIR_AFTER = re.compile(rf"(\d+){_TIMES}(\d+)\s*\(?\s*{_NAMES}\b", re.IGNORECASE)
_PAIR_BEFORE = re.compile(rf"\b{_NAMES}\s*[=:]?\s*\(?\s*(\d+){_TIMES}(\d+)", re.IGNORECASE)
# A count of model copies before their layout: ``2 replicas of TP4``, ``8 x TP1 instances``, ``2x
# TP4``, ``2 replicas``.
_REPLICA_COUNT = re.compile(
    r"(?<![\w.])(\d+)\s*(?:[x×*]\s*(?=tp\s*[=:]?\s*\d)|(?:model\s+)?(?:replicas?|instances?|engines?|copies)\b)",
    re.IGNORECASE,
)
# The MoE recipes' shorthand of TensorRT-LLM's DeepSeek-R1 blogs and InferenceMAX: ``DEP8`` is
# attention data parallelism over 8 GPUs with the experts over the same 8 (``--tp 8 --ep 8
# --enable_attention_dp``: 8 attention groups of one GPU), ``TEP8`` tensor parallelism over 8 GPUs
# with the experts over them (``--tp 8 --ep 8``).
_SHORTHAND = re.compile(r"(?<![a-z])([dt])ep[\s_-]*(\d+)(?![\d.])", re.IGNORECASE)
# vLLM's ``--enable-expert-parallel`` (``enable_expert_parallel=True``): the experts spread over all
# the engine's GPUs, EP = TP x DP (docs.vllm.ai, serving/expert_parallel_deployment.md).
_VLLM_EXPERT_PARALLEL = re.compile(r"enable[\s_-]expert[\s_-]parallel(?!\w|\s*[=:]\s*false)", re.IGNORECASE)


class _StatedLayout(NamedTuple):
    """The parallel layout a row writes, ``None`` where no cell states a degree: TP, PP, EP and DP
    (:func:`_stated_degree`), the copies a phrase counts (``2 replicas of TP4``), a recipe shorthand
    (``('dep', 8)``), whether vLLM's ``--enable-expert-parallel`` is set, and notes on degrees read in
    the prose cells."""

    tp: int | None = None
    pp: int | None = None
    ep: int | None = None
    dp: int | None = None
    replicas: int | None = None
    shorthand: tuple[str, int] | None = None
    vllm_expert_parallel: bool = False
    notes: tuple[str, ...] = ()

    @property
    def splits(self) -> bool:
        """Whether the row states how the model is split or copied (TP, EP, DP, replicas, a shorthand)."""
        stated = (self.tp, self.ep, self.dp, self.replicas, self.shorthand)
        return self.vllm_expert_parallel or any(value is not None for value in stated)


def _texts(row: PublishedRow, cells: tuple[str, ...]) -> list[tuple[str, str]]:
    """(cell, text) of each of ``cells`` the row fills."""
    return [(cell, row.text(cell)) for cell in cells if not is_missing(row.text(cell))]


def _first_match(row: PublishedRow, pattern: re.Pattern[str], cells: tuple[str, ...]) -> re.Match[str] | None:
    """The first match of ``pattern`` in ``cells``, in their order."""
    return next((match for _, text in _texts(row, cells) if (match := pattern.search(text))), None)


def _paired_degrees(row: PublishedRow) -> dict[str, int]:
    """The degrees the layout cells write as a product with their names (:data:`_PAIR_AFTER`)."""
    degrees: dict[str, int] = {}
    for _, text in _texts(row, _LAYOUT_CELLS):
        for match in _PAIR_AFTER.finditer(text):
            first, second, name_a, name_b = match.groups()
            degrees.update({name_a.lower(): int(first), name_b.lower(): int(second)})
        for match in _PAIR_BEFORE.finditer(text):
            name_a, name_b, first, second = match.groups()
            degrees.update({name_a.lower(): int(first), name_b.lower(): int(second)})
    return degrees


def _own_degree(text: str, name: str) -> int | None:
    """The degree a cell of its own states: its leading number (``8``, ``1 for attention (--tp 8
    ...)``), else its label or flag (``TP=8``), else its only number; counts of copies, products and
    shorthands set aside (``2 replicas of TP4`` is TP 4)."""
    for phrase in (_REPLICA_COUNT, _SHORTHAND, _PAIR_AFTER, _PAIR_BEFORE):
        text = phrase.sub(" ", text)
    if re.match(r"\s*\d", text):
        return integer_cell(text)
    found = _DEGREE_LABELS[name].search(text)
    return int(found.group(1)) if found else integer_cell(text)


def _labelled_degree(row: PublishedRow, name: str, cells: tuple[str, ...]) -> tuple[int, str] | None:
    """(degree, the cell and words stating it) of ``name`` written with its label or flag in
    ``cells``; ``None`` where none does. Cells stating it twice differently refuse the row."""
    found: dict[int, str] = {}
    for cell, text in _texts(row, cells):
        for match in _DEGREE_LABELS[name].finditer(text):
            found.setdefault(int(match.group(1)), f"the {cell} cell's '{match.group(0).strip()}'")
    if len(found) > 1:
        said = " and ".join(found.values())
        raise RowError(
            f"{said} state different {name.upper()}s: write the one the figure ran in the {name.upper()} cell"
        )
    return next(iter(found.items()), None)


def _stated_degree(row: PublishedRow, name: str) -> tuple[int | None, str]:
    """(degree, note) of ``name`` as the row states it: a product naming it (``4x2 (TPxPP)``), its
    own cell (:func:`_own_degree`), its label or flag in another layout cell (``TP8 EP8`` in the TP
    cell, ``--ep-size 8`` in the sharding cell), else in a prose cell (said in the note); ``None``
    where no cell states it."""
    column = name.upper()
    paired = _paired_degrees(row).get(name)
    if paired is not None:
        return paired, ""
    if not is_missing(row.text(column)) and (own := _own_degree(row.text(column), name)) is not None:
        return own, ""
    labelled = _labelled_degree(row, name, tuple(cell for cell in _LAYOUT_CELLS if cell != column))
    if labelled is not None:
        return labelled[0], ""
    prose = _labelled_degree(row, name, _PROSE_CELLS)
    if prose is None:
        return None, ""
    return prose[0], f"{column} {prose[0]} from {prose[1]} (the {column} cell gives none)"


def _stated_layout(row: PublishedRow) -> _StatedLayout:
    """The parallel layout the row's cells state (:class:`_StatedLayout`)."""
    degrees = {name: _stated_degree(row, name) for name in ("tp", "pp", "ep", "dp")}
    copies = _first_match(row, _REPLICA_COUNT, _LAYOUT_CELLS)
    shorthand = _first_match(row, _SHORTHAND, _LAYOUT_CELLS + _PROSE_CELLS)
    return _StatedLayout(
        tp=degrees["tp"][0],
        pp=degrees["pp"][0],
        ep=degrees["ep"][0],
        dp=degrees["dp"][0],
        replicas=int(copies.group(1)) if copies else None,
        shorthand=(shorthand.group(1).lower() + "ep", int(shorthand.group(2))) if shorthand else None,
        vllm_expert_parallel=_first_match(row, _VLLM_EXPERT_PARALLEL, _LAYOUT_CELLS + _PROSE_CELLS)
        is not None,
        notes=tuple(note for _, note in degrees.values() if note),
    )


def _shorthand_layout(stated: _StatedLayout) -> tuple[int, int, int, str]:
    """(attention TP, EP, attention groups, note) of a recipe shorthand (:data:`_SHORTHAND`); a
    degree stated beside it that says otherwise refuses the row."""
    assert stated.shorthand is not None
    kind, size = stated.shorthand
    dep = kind == "dep"
    consistent = {"tp": {1, size} if dep else {size}, "ep": {size}, "dp": {size} if dep else {1}}
    for name, values in consistent.items():
        value = getattr(stated, name)
        if value is not None and value not in values:
            raise RowError(
                f"{kind.upper()}{size} puts {'attention DP' if dep else 'TP'} {size} and EP {size} on {size} "
                f"GPUs, but the row states {name.upper()} {value}: write the degrees in their cells"
            )
    layout = f"{size} attention groups of one GPU (attention DP)" if dep else f"TP {size}"
    note = (
        f"{kind.upper()}{size}: {layout}, the experts over the {size} GPUs (EP {size}), as TensorRT-LLM's "
        "and InferenceMAX's recipes name it"
    )
    return (1, size, size, note) if dep else (size, size, 1, note)


def _vllm_expert_parallel(stated: _StatedLayout, tp: int) -> tuple[int, str]:
    """(EP, note) of vLLM's ``--enable-expert-parallel``: TP x DP; an EP cell saying otherwise
    refuses the row."""
    dp = stated.dp or 1
    if stated.ep is not None and stated.ep != tp * dp:
        raise RowError(
            f"vLLM's --enable-expert-parallel spreads the experts over TP x DP = {tp} x {dp} = {tp * dp} "
            f"GPUs, not the EP {stated.ep} the row states"
        )
    return tp * dp, f"vLLM's --enable-expert-parallel: EP = TP x DP = {tp} x {dp} = {tp * dp}"


def _attention_groups(tp: int, ep: int, dp: int | None, stage_gpus: int) -> tuple[int, int, str]:
    """(attention groups, GPUs per group, how read) of an MoE row running attention data parallel
    with ``stage_gpus`` GPUs a stage: the DP degree when the row states one (``8 (attention DP)``,
    ``144 (MLA/shared expert DP)``), of the TP's GPUs each where TP x DP GPUs fit a stage (vLLM's
    ``-tp``, each DP rank's TP), else of TP / DP (SGLang's ``--tp 8 --dp 8 --enable-dp-attention``
    and TensorRT-LLM's ``tp_size`` with attention DP count all the groups' GPUs); with no DP degree
    the TP's GPUs as one-GPU groups (TensorRT-LLM's ``--tp 8 --enable_attention_dp``), or, with a
    TP of 1, one group per GPU of the EP group (SGLang's ``--dp-size`` equal to ``--ep-size``)."""
    if dp is not None and dp > 1:
        if tp * dp <= stage_gpus:
            return dp, tp, ""
        if tp % dp == 0:
            how = (
                f" (TP {tp} counts the GPUs of all {dp} groups, as SGLang's --tp with --dp and "
                "TensorRT-LLM's tp_size with attention DP do)"
            )
            return dp, tp // dp, how
        raise RowError(
            f"attention DP {dp} with TP {tp}: {tp * dp} GPUs a stage are more than the {stage_gpus} the row "
            f"has, and {dp} groups do not split TP {tp}; write the GPUs of one attention group in the TP cell"
        )
    if tp == 1 and ep > 1:
        return ep, 1, ""
    return tp, 1, ""


def _parallel_degrees(
    row: PublishedRow, model: TransformerSpec, num_gpus: int, stated: _StatedLayout, tp_given: int | None
) -> tuple[int, int, int, int, list[str]]:
    """(TP, PP, EP, attention groups, notes) of the row's deployment: its stated degrees, 1 where
    unstated (said for TP), a recipe shorthand (:func:`_shorthand_layout`), vLLM's expert parallelism
    (:func:`_vllm_expert_parallel`), and on an MoE attention data parallelism where the row names it
    or its EP spans several DP ranks' TP groups (:func:`_attention_groups`)."""
    pp = stated.pp or 1
    tp = tp_given or stated.tp or 1
    notes = list(stated.notes)
    if tp_given is None and stated.tp is None and stated.shorthand is None:
        notes.append("no TP stated in any cell: tp=1")
    if model.moe is None and stated.shorthand is not None:
        kind = stated.shorthand[0].upper()
        raise RowError(f"{kind} names an expert-parallel recipe; {model.name} has no experts")
    if stated.shorthand is not None:
        tp, ep, groups, note = _shorthand_layout(stated)
        return tp, pp, ep, groups, [*notes, note]
    ep = stated.ep or 1
    if model.moe is None:
        return tp, pp, ep, 1, notes
    if stated.vllm_expert_parallel:
        ep, note = _vllm_expert_parallel(stated, tp)
        notes.append(note)
    named = _ATTENTION_DP.search(row.joined()) is not None
    if not named and not (stated.dp is not None and stated.dp > 1 and ep > tp):
        return tp, pp, ep, 1, notes
    if not named:
        notes.append(
            f"EP {ep} is wider than TP {tp}: the DP {stated.dp} ranks share the experts, so their attention "
            "is data parallel (vLLM's DP with expert parallelism, SGLang's DP attention)"
        )
    groups, tp, how = _attention_groups(tp, ep, stated.dp, num_gpus // pp)
    notes.append(f"attention data parallelism: {groups} attention groups of {tp} GPU(s) per stage{how}")
    return tp, pp, ep, groups, notes


def _replicas(num_gpus: int, tp: int, pp: int, groups: int, stated: _StatedLayout) -> int:
    """The replicas of ``tp x groups x pp`` GPUs the row's ``num_gpus`` hold; a count of copies or a
    DP degree (one not spent on attention groups) that says otherwise refuses the row."""
    per_replica = tp * groups * pp
    if num_gpus % per_replica:
        split = f"TP x PP = {tp * pp}" if groups == 1 else f"TP x attention groups x PP = {per_replica}"
        raise RowError(f"{num_gpus} GPUs do not split into {split}")
    copies = stated.replicas or (stated.dp if groups == 1 else None)
    if copies is not None and copies * per_replica != num_gpus:
        raise RowError(
            f"the row states {copies} replicas (DP) of {per_replica} GPUs (TP {tp}, PP {pp}): "
            f"{copies * per_replica} GPUs, not the {num_gpus} it reports"
        )
    return num_gpus // per_replica


# Prefill/decode disaggregation with its pools counted, as Dynamo, SGLang and vLLM write it: ``1P1D``,
# ``2P3D``, ``2P:7D`` (x prefill instances, y decode instances), ``1 prefill + 1 decode instance``,
# ``1 prefill worker TP4, 1 decode worker TP4``.
_POOL_COUNTS = re.compile(
    r"(?<![\w.])(\d+)\s*p\s*[:/+,-]?\s*(\d+)\s*d\b"
    r"|(?<![\w.])(\d+)\s*(?:x\s*)?prefill\b[^;|]{0,40}?(?<![\w.])(\d+)\s*(?:x\s*)?decode\b",
    re.IGNORECASE,
)
# Words naming disaggregated serving, with or without the pools' counts (``disaggregated``, ``PD
# disaggregation``, ``xPyD``).
_DISAGGREGATION = re.compile(r"disaggregat\w*|\bxpyd\b", re.IGNORECASE)


def _stated_pools(row: PublishedRow) -> tuple[int, int, str, str] | None:
    """(prefill replicas, decode replicas, the cell stating them, its text) the layout cells, else
    the prose cells, count (:data:`_POOL_COUNTS`); ``None`` where none does."""
    for cell, text in _texts(row, _LAYOUT_CELLS + _PROSE_CELLS):
        match = _POOL_COUNTS.search(text)
        if match is not None:
            prefill, decode = (int(group) for group in match.groups() if group is not None)
            return prefill, decode, cell, text
    return None


def _pools(row: PublishedRow, replicas: int, tp: int, one_pool: bool) -> tuple[tuple[int, int] | None, str]:
    """(the plan's ``disaggregated``, note): the prefill and decode replicas the row counts, each of
    the row's replica shape; ``None`` where the row counts none or its figure is of one pool. A row
    naming disaggregation without the counts, or counts that are not its replicas, or pools of
    different TPs, is refused."""
    stated = _stated_pools(row)
    if stated is None:
        named = _first_match(row, _DISAGGREGATION, _LAYOUT_CELLS)
        if named is not None and not one_pool:
            raise RowError(
                f"the row names disaggregated serving ('{named.group(0)}') without its pools: write how many "
                "prefill and decode replicas ran (e.g. '1P1D'), or the pool the figure is of"
            )
        return None, ""
    prefill, decode, cell, text = stated
    if one_pool:
        return None, f"{prefill}P{decode}D deployment: the figure is of one pool, predicted on its own"
    pool_tps = {int(match.group(1)) for match in _DEGREE_LABELS["tp"].finditer(text)}
    if pool_tps - {tp}:
        raise RowError(
            f"the pools run TP {', '.join(str(value) for value in sorted(pool_tps | {tp}))}; lightspeed "
            "models prefill and decode pools of one replica shape"
        )
    if prefill + decode != replicas:
        raise RowError(
            f"{prefill}P{decode}D is {prefill + decode} replicas, but the row's GPUs hold {replicas} of its "
            "replica shape: give each pool's GPUs in the TP/PP cells"
        )
    return (prefill, decode), f"disaggregated: {prefill} prefill, {decode} decode replicas (the {cell} cell)"


def _gpus_from_layout(row: PublishedRow, stated: _StatedLayout) -> tuple[int, str] | None:
    """(GPUs, note) of a row whose GPUs no cell counts but which states its TP and its copies (a DP
    degree, ``2 replicas of TP4``, ``1P1D``): TP x PP x copies, PP 1 unless stated; ``None`` where
    one is unstated, or where its DP may count attention groups (attention data parallelism, a
    recipe shorthand, expert parallelism wider than TP), whose size depends on the server."""
    pools = _stated_pools(row)
    copies = stated.replicas or stated.dp or (pools[0] + pools[1] if pools else None)
    if stated.tp is None or copies is None:
        return None
    wide = (stated.ep or 1) > stated.tp or stated.vllm_expert_parallel or stated.shorthand is not None
    if wide or _ATTENTION_DP.search(row.joined()):
        return None
    pp = stated.pp or 1
    gpus = stated.tp * pp * copies
    unstated = "" if stated.pp else " (no PP stated: 1)"
    return gpus, f"GPUs not reported: TP x PP x replicas = {stated.tp} x {pp} x {copies} = {gpus}{unstated}"


def _row_gpus(catalog: Catalog, row: PublishedRow, stated: _StatedLayout) -> tuple[int, str]:
    """(GPUs, note): the GPUs or hardware cell's count (:func:`row_gpus`), else, where neither counts
    them, what the stated degrees multiply to (:func:`_gpus_from_layout`)."""
    try:
        return row_gpus(catalog, row)
    except RowError:
        derived = _gpus_from_layout(row, stated)
        if derived is None:
            raise
        return derived


def _deployment(
    row: PublishedRow,
    model: TransformerSpec,
    num_gpus: int,
    precision: RowPrecision,
    stated: _StatedLayout,
    *,
    tp: int | None = None,
    one_pool: bool = False,
) -> tuple[InferencePlan, list[str]]:
    """The deployment a row describes (degrees, attention data parallelism, pools, formats) and
    notes; ``precision`` is the row's format, ``tp`` replaces a TP no cell states, ``one_pool`` says
    the figure is of a prefill or decode pool on its own."""
    _check_expert_parallel_degree(row, model, stated)
    tp, pp, ep, groups, layout_notes = _parallel_degrees(row, model, num_gpus, stated, tp)
    replicas = _replicas(num_gpus, tp, pp, groups, stated)
    pools, pools_note = _pools(row, replicas, tp, one_pool)
    kv_precision = _kv_precision(row)
    notes = [precision[1], *layout_notes, *([pools_note] if pools_note else [])]
    if kv_precision is not None:
        notes.append(f"KV cache {kv_precision} (the precision cell says so)")
    plan = InferencePlan(
        tp=tp,
        pp=pp,
        ep=ep,
        dp_attention=groups,
        replicas=1 if pools else replicas,
        disaggregated=pools,
        precision=precision.format,
        activation_precision=precision.activation,
        effective_bits=precision.effective_bits,
        kv_precision=kv_precision,
        kv_replication=model.attention.kind != "mla" and tp > model.attention.num_kv_heads,
    )
    return plan, notes


# Words saying a deployment spreads its experts over GPUs (``Large-Scale Expert Parallelism``,
# ``wide EP``), read in the cells that describe the run (not its source's title).
_EXPERT_PARALLEL = re.compile(r"\bexpert[ -]parallel(?:ism)?\b|\b(?:wide|large[ -]scale)[ -]ep\b")
_DEPLOYMENT_CELLS: Final = ("sharding", "TP", "PP", "DP", "global_batch", "seq", "hardware")


def _check_expert_parallel_degree(row: PublishedRow, model: TransformerSpec, stated: _StatedLayout) -> None:
    """Refuse an MoE row that says its experts are spread over GPUs without saying over how many
    (no EP degree, recipe shorthand or vLLM's ``--enable-expert-parallel``, whose EP is TP x DP):
    any EP the reader chose would predict another deployment than the one measured."""
    if model.moe is None or stated.ep is not None or stated.shorthand or stated.vllm_expert_parallel:
        return
    cells = " | ".join(row.text(cell) for cell in _DEPLOYMENT_CELLS).lower()
    named = _EXPERT_PARALLEL.search(cells)
    if named:
        raise RowError(
            f"the row names expert parallelism ('{named.group(0)}') but no EP degree: fill the EP cell "
            "(and DP for attention data parallelism, GPUs for the pool the figure is of)"
        )


def read_inference_row(row: PublishedRow, catalog: Catalog, registry: ModelRegistry) -> InferenceRowSpec:
    """An inference row of a published-results table in typed fields (the rules in the module docs)."""
    stated = _stated_layout(row)
    num_gpus, gpus_note = _row_gpus(catalog, row, stated)
    model, model_note = _resolve_model(registry, row)
    hardware, span = read_hardware(catalog, row.text("hardware"))
    cluster, _ = cluster_of(catalog, hardware, num_gpus)
    load, batching, load_note, simulation = _row_load(row)
    mlperf = load_mlperf_workload(simulation.mlperf) if simulation is not None and simulation.mlperf else None
    precision = _precision(row, cluster.system.accelerator, model, mlperf=mlperf)
    split_tp, split_note = _unstated_tp(
        row,
        stated,
        model=model,
        cluster=cluster,
        precision=precision,
        load=load,
        simulation=simulation,
        num_gpus=num_gpus,
    )
    one_pool = batching == "decode" or _names_pool(row, "prefill")
    plan, plan_notes = _deployment(row, model, num_gpus, precision, stated, tp=split_tp, one_pool=one_pool)
    plan, cap_note = _stated_cap(row, plan)
    plan_notes = [*plan_notes, cap_note] if cap_note else plan_notes
    reading, speed_note = _decode_speed(row, _metric(row, num_gpus, cluster.system.num_accelerators))
    assert reading.value is not None
    notes = [model_note, f"hardware '{row.text('hardware')}' -> '{span}'", *plan_notes, load_note]
    notes.extend([speed_note] if speed_note else [])
    notes.extend([gpus_note] if gpus_note else [])
    notes.extend([split_note] if split_note else [])
    plan, speculation_note = _stated_speculation(row, plan)
    notes.extend([speculation_note] if speculation_note else [])
    year, year_note = row_year(row, cluster.system.accelerator)
    serving, serving_note = row_serving_stack(row, year, cluster.system.accelerator.vendor, year_note)
    notes.append(serving_note)
    return InferenceRowSpec(
        row_id=row.row_id,
        model=model,
        model_name=registry_name(registry, model),
        hardware=hardware,
        num_gpus=num_gpus,
        plan=plan,
        load=load,
        batching=batching,
        metric=reading.key,
        measured=reading.value,
        serving=serving.name,
        simulation=simulation,
        assumptions=tuple(notes),
        reading=reading,
        readings=read_cell(row.text("metric"), row.text("measured"), kind="infer"),
    )


def _unstated_tp(
    row: PublishedRow,
    stated: _StatedLayout,
    *,
    model: TransformerSpec,
    cluster: Cluster,
    precision: RowPrecision,
    load: ServingLoad,
    simulation: RowSimulation | None,
    num_gpus: int,
) -> tuple[int | None, str]:
    """(TP, note) of a row whose cells state no TP: an MLPerf row's most productive split
    (:func:`mlperf_split`), a row saying it ran one instance (:func:`_one_instance`), else, where no
    cell splits or copies the model, the smallest TP that holds it (:func:`fitting_split`);
    ``(None, '')`` where the stated degrees decide."""
    if stated.tp is not None:
        return None, ""
    if simulation is not None and simulation.mlperf:
        return mlperf_split(
            model,
            cluster,
            precision.format,
            simulation.workload,
            num_gpus=num_gpus,
            effective_bits=precision.effective_bits,
        )
    if not stated.splits and stated.pp is None and _ONE_INSTANCE.search(row.joined()):
        return _one_instance(cluster, num_gpus)
    if not stated.splits:
        return fitting_split(model, cluster, precision.format, load, num_gpus=num_gpus) or (None, "")
    return None, ""


# The cells a server's cap is written in: the load cells, and a server's options in the sharding
# cell or the source's command line (``trtllm-bench throughput --max_batch_size 64``).
_CAP_CELLS: Final = ("seq", "global_batch", "micro_batch", "sharding", "source")


def _stated_cap(row: PublishedRow, plan: InferencePlan) -> tuple[InferencePlan, str]:
    """``plan`` with the cap on sequences its cells state (:data:`_SEQUENCE_CAP`, :data:`_CAP_CELLS`) as its
    ``max_batch`` per replica (a cap ``per rank`` counts once per attention rank), and a note;
    ``plan`` unchanged where the row states none."""
    cap = _SEQUENCE_CAP.search(" | ".join(row.text(cell) for cell in _CAP_CELLS).lower())
    if cap is None:
        return plan, ""
    per_rank = int(cap.group(1).replace(",", ""))
    if per_rank < 1:
        return plan, ""
    ranks = plan.dp_attention if cap.group("per_rank") else 1
    where = f" x {ranks} attention ranks" if ranks > 1 else ""
    note = f"server cap of {per_rank} sequences{' per rank' if cap.group('per_rank') else ''}{where}"
    return replace(plan, max_batch=per_rank * ranks), f"{note}: at most {per_rank * ranks} per replica"


# One server instance over all the row's GPUs (``a single instance on all eight GPUs``, ``one
# replica``): the GPUs are one tensor-parallel group, not replicas.
_ONE_INSTANCE = re.compile(r"\b(?:single|one)\s+(?:model\s+)?(?:instance|replica|engine)\b")


def _one_instance(cluster: Cluster, num_gpus: int) -> tuple[int | None, str]:
    """(TP, note) of a row running one instance over its ``num_gpus``: all of them in one TP group
    when the scale-up domain holds them, else ``(None, '')`` (the row's own cells decide)."""
    if num_gpus <= 1 or num_gpus > cluster.system.scale_up_domain_size:
        return None, ""
    return num_gpus, f"one instance over all {num_gpus} GPUs, as the row says: tp={num_gpus}, no replicas"


def _row_load(row: PublishedRow) -> tuple[ServingLoad, str, str, RowSimulation | None]:
    """(load, batching, note, simulation): an MLPerf row's benchmark, else the row's cells (a
    request rate the row states makes the load an open loop); a figure that depends on load gets
    the simulation that predicts it."""
    if not names_mlperf(row):
        load, batching, note, lengths_note = _load(row)
        rate = row_rate(row)
        if rate is not None and batching == "continuous":
            load = replace(load, concurrency=None, arrival_rate_per_s=rate)
            note = f"continuous batching, Poisson arrivals at {rate:g} requests/s"
        note = "; ".join(part for part in (lengths_note, note) if part)
        requests = row_requests(row)
        open_ended = batching == "continuous" and load.concurrency is None and rate is None
        if open_ended and requests and sends_all_at_once(row):
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
    it ran the PyTorch backend), as a vLLM version does (0.4-0.7: the V0 engine,
    2024; from 0.8 the V1 engine); a row naming no server takes the vendor's default
    (:func:`~lightspeed.sol.core.stacks.default_serving_stack`). A profile chosen by ``year``
    when no version dates the row says where that year came from (``year_note``, e.g. "no year in
    the source: 2020 for Ampere")."""
    source = row.text("source")
    named = _named_release(source.lower())
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
        year, release = (2024 if not major and minor <= 7 else 2025), (None if major else named.version)
        if major:
            year_note = f"release {major}.{minor}"
    try:
        stack, note = serving_stack_for(
            " ".join((source, row.text("metric"))), year, release, vendor, server=named.server
        )
    except UnsupportedError as error:
        raise RowError(str(error)) from error
    dated_by_year = release is None and note.endswith(f", {year}")
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
    efficiency: EfficiencyModel | None = None,
) -> Callable[[PublishedRow, Catalog, ModelRegistry], ValidationRow]:
    """A predictor for :func:`~lightspeed.sol.validation.validate.validate_published`'s ``infer`` argument."""

    def predict(row: PublishedRow, catalog: Catalog, registry: ModelRegistry) -> ValidationRow:
        setup, cluster = inference_row_setup(row, catalog, registry)
        return predict_inference_setup(RowLabel(row.row_id, row.text("source")), setup, cluster, efficiency)

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
    band = interval_for(
        "infer", moe=setup.model.moe is not None, architecture=cluster.system.accelerator.architecture
    )
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
            if "interval_under_load" in reached:
                low, high = reached["interval_under_load"]
                interval = (min(low, predicted), max(high, predicted))
                notes.append(str(reached.pop("interval_note")))
            plan = {**setup.plan.to_dict(), "simulated": setup.simulation.mode, **reached}
            assumptions = (*setup.assumptions, *(note for note in notes if note not in setup.assumptions))
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
    )


def _analytic(
    setup: InferenceRowSetup, cluster: Cluster, efficiency: EfficiencyModel | None
) -> tuple[float, dict[str, object], tuple[str, ...]]:
    estimate = estimate_inference(
        model=setup.model,
        cluster=cluster,
        plan=setup.plan,
        load=setup.load,
        efficiency=efficiency,
        batching=setup.batching,
        serving=setup.serving,
    )
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
