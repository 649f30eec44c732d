"""Read the formats a published inference row runs in from its cells (``kind = infer`` rows, read
by :mod:`lightspeed.sol.validation.infer_rows`; the rules are documented in ``docs/inference.md``):
the weights' format and the one the GEMMs take their inputs in from the precision cell, else the
model name's checkpoint, else an MLPerf submission's or the model's release format
(:func:`precision`), and the KV cache's.

* **Precision**: ``FP4`` on an NVIDIA GPU is NVFP4 (what ModelOpt and
  TensorRT-LLM ship, 16-value blocks with an FP8 scale), on AMD MXFP4 (32-value
  blocks with an 8-bit exponent scale); otherwise the cell's
  format (``fp16 (presumed)`` is fp16); none stated is bf16. Weight-only quantization
  (``INT8 weight-only``, ``W4A16``, ``W8A16``; AWQ, GPTQ and INT4 checkpoints, 4-bit unless
  they say 8) stores the weights in 8 or 4 bits and runs the GEMMs in 16 bits
  (:func:`_weight_only`); INT8 on an MoE served by TensorRT-LLM is weight-only in the engine
  itself (its MoE plugin has no INT8-activation kernel).
* **KV cache**: the format the precision cell names (:func:`kv_precision`).
"""

from __future__ import annotations

import re
from typing import Final, NamedTuple

from lightspeed.catalog import Accelerator
from lightspeed.sol.infer.plan import sixteen_bit_format
from lightspeed.sol.serve.mlperf_inference import MlperfWorkload
from lightspeed.sol.validation.published import PublishedRow, format_keys, is_missing
from lightspeed.sol.validation.readings import RowError
from lightspeed.workload import TransformerSpec
from lightspeed.workload.names import FORMAT_TAGS, checkpoint_format
from lightspeed.workload.recurrent import STATE_PRECISIONS

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


def precision(
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
    # a cell the writer opens with n/r states no format; a format its note names is another run's
    # (``n/r (the page uses GLM-4.6-FP8 for its FP8 runs)``)
    stated = None if is_missing(cell) else _cell_precision(cell, accelerator)
    if stated is not None and not (mlperf is not None and _QUANTIZED_FROM.search(cell.lower())):
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


# An MLPerf submission's weight type with a quantization among its weight transformations
# (``fp16 (weight_data_types ...; weight_transformations: quantization, affine fusion)``, as NVIDIA's
# v4.1 measurements JSON files write it): the type the weights were quantized from, not the one the
# run computes in, which the benchmark's convention gives (:func:`_mlperf_precision`).
_QUANTIZED_FROM: Final = re.compile(r"\bquantiz(?:ation|ed)\b")


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


_KV_FORMAT = r"(fp8|fp16|bf16|int8|nvfp4|16[\s-]*bits?)(?:[_-]?e[45]m[23])?"
# ``bf16/FP16 KV cache``, ``FP8 KV``, ``KV cache fp8``, ``KV cache: fp8``, ``kv cache in fp8``,
# ``16-bit KV cache``, ``KV cache in 16 bits``, ``bf16 attn``, ``attention: BF16``, ``MLA and
# combine in BF16``, ``BF16 (MLA, combine)``, ``BF16 core MLA``,
# vLLM's ``--kv-cache-dtype fp8`` (``kv_cache_dtype=fp8``, SGLang's ``fp8_e4m3``), TensorRT-LLM's
# ``kv_cache_config dtype: fp8``; ``bf16 attention``, ``bf16 MLA``,
# ``attention in bf16``: the attention kernels read the cache in the format they compute in. None
# of them is the weights' format.
_KV_PRECISION = re.compile(
    rf"\b{_KV_FORMAT}\s*(?:/\s*\w+\s*)?(?:kv\w*|attention|attn|(?:core\s+)?mla)\b"
    rf"|\b(?:attention|attn|mla)(?:\s+and\s+\w+)?\s*(?:in|[:=])\s*{_KV_FORMAT}\b"
    rf"|\b{_KV_FORMAT}\s*\((?:[^)]*[\s,])?mla\b|\b{_KV_FORMAT}\s+for\s+(?:core\s+)?(?:mla|attention)\b"
    rf"|(?:--)?\bkv(?:[-_ ]?cache)?(?:[-_ ]?config)?(?:[-_ ]?dtype)?\s*(?:[:=]|\bin\b)?\s*{_KV_FORMAT}\b"
)


# A checkpoint named for its FP8 KV cache (AMD's Quark ``amd/Llama-3.1-70B-Instruct-FP8-KV``):
# its KV-cache scales are what the run's ``--kv-cache-dtype fp8`` uses.
_FP8_KV_CHECKPOINT: Final = re.compile(r"fp8[-_]kv\b", re.IGNORECASE)


def kv_precision(row: PublishedRow) -> str | None:
    """The KV-cache format the precision cell names (``bf16/FP16 KV cache``, ``FP8 KV``, ``KV
    cache: fp8``, ``--kv-cache-dtype fp8``, ``--kv-cache-dtype=fp8_e4m3``, ``bf16 attention``,
    ``bf16 MLA``), or fp8 where the model cell names an ``-FP8-KV`` checkpoint; else ``None``."""
    match = _KV_PRECISION.search(format_keys(row.text("precision")))
    if match is None:
        return "fp8" if _FP8_KV_CHECKPOINT.search(row.text("model")) else None
    kv = next(group for group in match.groups() if group)
    return "bf16" if kv.startswith("16") else kv  # ``16-bit KV cache``: the same bytes either way


# A server's flag for the format of a hybrid's recurrent state: vLLM's ``--mamba-ssm-cache-dtype``,
# SGLang's ``--mamba-ssm-dtype`` (``auto``: the model's own, as if unsaid).
_STATE_DTYPE_FLAG: Final = re.compile(
    r"mamba[_-]ssm[_-](?:cache[_-])?dtype[\s=:\"']*(float32|bfloat16|float16|fp32|bf16|fp16|auto)\b",
    re.IGNORECASE,
)


def stated_state_dtype(row: PublishedRow, model: TransformerSpec) -> tuple[TransformerSpec, str]:
    """``model`` with its recurrent state in the format the row's server flag names
    (:data:`_STATE_DTYPE_FLAG`), with a note; unchanged, with no note, where the row names none or
    ``auto``; unchanged, with a note saying so, for a model without recurrent blocks."""
    match = _STATE_DTYPE_FLAG.search(row.described())
    if match is None or match.group(1).lower() == "auto":
        return model, ""
    said = match.group(0).strip()
    if model.recurrent is None:
        return model, f"'{said}' left aside: {model.name} has no recurrent state to store"
    dtype = match.group(1).lower()
    dtype = STATE_PRECISIONS.get(dtype, dtype)
    return model.with_state_dtype(dtype), f"recurrent state {dtype} (the row's '{said}')"


__all__ = [
    "RowPrecision",
    "kv_precision",
    "precision",
    "stated_state_dtype",
]
