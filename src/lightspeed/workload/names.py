"""Model names the way sources write them, reduced to the form the registry compares.

Published rows name checkpoints, not architectures: ``meta-llama/Llama-2-70b-chat-hf``,
``Llama 3.3 70B Instruct FP8``, ``nvidia/DeepSeek-R1-FP4``, ``Mixtral 8x7B Instruct
v0.1``, ``llama2-70b-99.9`` (MLPerf). :func:`reduce_name` takes off, from the end and
repeatedly (so in any order), the words that name a tuning, a format, a release or an
MLPerf accuracy target, and the organization before a ``/``; it also writes a family
word and its number the same way glued or apart (``llama3.1`` = ``llama-3.1``, spaces =
dashes), and a family version written with a ``v`` before the size the same as without
(``LLaMA v3.1 8B`` = ``Llama 3.1 8B``, as TensorRT-LLM's tables write it), a family's
undotted ``V`` glued or apart (``DeepSeekV3`` = ``DeepSeek-V3``, as Megatron-Bridge's tables
write it), and Ollama's tag
after a colon as a word (``llama3.1:8b`` = ``llama3.1-8b``), and a family's two-digit
version glued before the size as a dotted one (``llama31_405b`` = ``llama-3.1-405b``, as
Megatron-Bridge's recipes write it). Version tags
(``v0.1``) are kept apart: Mistral's v0.1 and v0.3 differ in
vocabulary, so a name's version must be one the model lists (:class:`ReducedName`).

:func:`name_readings` gives the other ways a published cell may name a model (the text
before a note in parentheses, a bare size with the architecture a parenthesis names, the
base a known fine-tune family is named after); :func:`split_active` the active-parameter
word an MoE's name may carry or leave out (``Qwen3-235B-A22B`` = ``Qwen3-235B``).
The model twin of :mod:`lightspeed.catalog.names` (the same reduction for hardware names).

>>> reduce_name("meta-llama/Llama-2-70b-chat-hf").base
'llama2-70b'
>>> reduce_name("Mixtral 8x7B Instruct v0.1")
ReducedName(base='mixtral8x7b', versions=('v0.1',), formats=())
>>> reduce_name("nvidia/DeepSeek-R1-FP4").formats
('fp4',)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from lightspeed.datafile import normalize_name

# Fine-tunes of one architecture: chat, instruction, reasoning and base checkpoints.
TUNE_TAGS: Final = frozenset({"instruct", "chat", "it", "base", "hf", "pt", "thinking", "sft", "dpo"})
# Checkpoint formats (the weights' precision or quantization method), one word or two.
FORMAT_TAGS: Final = frozenset(
    {"fp8", "fp4", "nvfp4", "mxfp4", "awq", "gptq", "int4", "int8", "w4a16", "w8a8", "bf16", "fp16"}
    | {"w8a16", "w4a8", "nvfp4a16", "gguf"}
    | {"quantized.w4a16", "quantized.w8a8", "quantized.w8a16"}
)
# two-word formats: llm-compressor's schemes (``FP8-dynamic``, ``FP8-block``, ``W4A16-G128``),
# bitsandbytes' ``bnb-4bit`` (Unsloth's uploads)
FORMAT_PAIRS: Final = frozenset(
    {"fp8-dynamic", "fp8-kv", "fp8-block", "fp8-static", "awq-int4", "gptq-int4", "gptq-int8"}
    | {"w4a16-g128", "bnb-4bit", "bnb-8bit", "w8a8-fp8", "w8a8-int8"}
)

# MLPerf's benchmark names: the accuracy target (99% or 99.9% of the reference) and the
# interactive (tighter latency) scenario of the same model.
MLPERF_TAGS: Final = frozenset({"99", "99.9", "interactive"})
_DATE: Final = re.compile(r"\d{4}")  # release dates: -2407, -0528, -2501
_VERSION: Final = re.compile(r"v\d+\.\d+")  # v0.1, v0.3 (not v2/v3: DeepSeek-V3 is a name)
# llama-3.1 -> llama3.1, gpt-3 -> gpt3, and a family's undotted V glued the same way:
# deepseek-v3 -> deepseekv3 (Megatron-Bridge's tables write ``DeepSeekV3``)
_GLUE: Final = re.compile(r"(?<=[a-z])-(?=v?\d)")
# A dotted family version written with a v, after a word and before the size: llama-v3.1-8b
# (not a version tag, mistral-7b-instruct-v0.3-fp8, nor an undotted name, deepseek-v3).
_FAMILY_V: Final = re.compile(r"(?:^|(?<=-))([a-z]+)-v(?=\d+\.\d+-\d+(?:\.\d+)?[bm]\b)")
# A family's major and minor version glued undotted, right before the size: llama31-405b ->
# llama3.1-405b, qwen25-72b -> qwen2.5-72b (Megatron-Bridge's recipe names: ``llama31_405b``,
# ``llama32_1b``). Exactly two digits and a size next, so ``llama-33b``, ``falcon-40b`` and
# ``mpt-30b`` (sizes) and ``nllb-200-3.3b`` (three digits) stay as they are.
_UNDOTTED: Final = re.compile(r"(?:^|(?<=-))([a-z]+)([1-9])(\d)(?=-\d+(?:\.\d+)?[bmt](?:-|$))")
# An MoE's active-parameter word after its total: qwen3-235b-a22b, deepseekv3-671b-a37b.
_ACTIVE: Final = re.compile(r"(?<=\d[bt])-(a\d+(?:\.\d+)?b)(?=-|$)")


@dataclass(frozen=True)
class ReducedName:
    """A model name without organization, tuning, format, date and MLPerf tags.

    ``base`` is what names compare on; ``versions`` the version tags taken off (a name
    matches a model only with a version the model lists, or none); ``formats`` the
    checkpoint formats taken off, in the order written (``fp8``, ``fp4``, ``awq``).
    """

    base: str
    versions: tuple[str, ...]
    formats: tuple[str, ...]


def _trailing_tag(tokens: list[str]) -> tuple[int, str] | None:
    """(how many tokens, which kind) the name's last tag spans, else ``None``."""
    if len(tokens) > 2 and "-".join(tokens[-2:]) in FORMAT_PAIRS:
        return 2, "format"
    last = tokens[-1]
    if last in FORMAT_TAGS:
        return 1, "format"
    if "gguf" in tokens[:-1]:  # llama.cpp's type after a GGUF name: ``...-GGUF Q4_K_M``
        return tokens[::-1].index("gguf"), "other"
    if last in TUNE_TAGS or last in MLPERF_TAGS or _DATE.fullmatch(last):
        return 1, "other"
    if _VERSION.fullmatch(last):
        return 1, "version"
    return None


def without_formats(name: str) -> str:
    """``name`` normalized, without the checkpoint-format tags at its end (an exact name under a
    quantized upload's name).

    >>> without_formats("Qwen/Qwen3-235B-A22B-Instruct-2507-FP8")
    'qwen/qwen3-235b-a22b-instruct-2507'
    >>> without_formats("RedHatAI/Meta-Llama-3.1-70B-Instruct-FP8-dynamic")
    'redhatai/meta-llama-3.1-70b-instruct'
    """
    tokens = normalize_name(name).split("-")
    while len(tokens) > 1 and (tag := _trailing_tag(tokens)) is not None and tag[1] == "format":
        del tokens[-tag[0] :]
    return "-".join(tokens)


def reduce_name(name: str) -> ReducedName:
    """``name`` reduced for comparison (see the module docs); the base keeps at least one word.

    >>> reduce_name("Llama 3.1 405B FP8").base == reduce_name("llama-3.1-405b").base
    True
    >>> reduce_name("Qwen3-235B-A22B-Instruct-2507-FP8").base
    'qwen3-235b-a22b'
    >>> reduce_name("LLaMA v3.1 70B").base == reduce_name("Llama-3.1-70B").base
    True
    >>> reduce_name("llama3.1:70b-instruct-fp16").base  # Ollama's tags: family:size-variant
    'llama3.1-70b'
    >>> reduce_name("llama31_405b").base  # Megatron-Bridge's recipe names
    'llama3.1-405b'
    """
    key = normalize_name(name).rsplit("/", 1)[-1].replace(":", "-")
    key = re.sub(r"^meta-(?=llama)", "", key)
    key = _FAMILY_V.sub(r"\1-", key)
    tokens = [token for token in key.split("-") if token]
    versions: list[str] = []
    formats: list[str] = []
    while len(tokens) > 1 and (tag := _trailing_tag(tokens)) is not None:
        count, kind = tag
        removed = "-".join(tokens[-count:])
        del tokens[-count:]
        if kind == "version":
            versions.append(removed)
        elif kind == "format":
            formats.append(removed)
    base = _UNDOTTED.sub(r"\1\2.\3", _GLUE.sub("", "-".join(tokens)))
    return ReducedName(base=base, versions=tuple(sorted(versions)), formats=tuple(reversed(formats)))


def split_active(base: str) -> tuple[str, str | None]:
    """(``base`` without its MoE active-parameter word, that word or ``None``) of a reduced base.

    Tables write an MoE by its total alone (``Qwen3 235B``) or with its active count where the
    model's own name has none (``DeepSeek-V3 671B-A37B``); the registry compares these once
    nothing matches the whole name.

    >>> split_active(reduce_name("Qwen3-235B-A22B").base)
    ('qwen3-235b', 'a22b')
    >>> split_active("llama3-70b")
    ('llama3-70b', None)
    """
    match = _ACTIVE.search(base)
    if match is None:
        return base, None
    return base[: match.start()] + base[match.end() :], match.group(1)


# A bare size, the whole text before a parenthesis that names the architecture: ``70B (Meta Llama3
# architecture)``.
_BARE_SIZE: Final = re.compile(r"\d+(?:\.\d+)?\s*[bmt]", re.IGNORECASE)
_SIZE_WORD: Final = re.compile(r"(?<![a-z0-9.])\d+(?:\.\d+)?\s*[bmt]\b", re.IGNORECASE)
# words that say a parenthesis names a model's architecture, not a variant or a framework (the
# same words :mod:`lightspeed.sol.validation.rows` reads)
_ARCHITECTURE_WORDS: Final = re.compile(
    r"\b(?:architecture|arch|config|shapes|same\s+as|like)\b", re.IGNORECASE
)
# Fine-tune families named after the checkpoint they tune, with its architecture unchanged: Nous
# Research's Hermes (``Hermes-3-Llama-3.1-405B``, ``Nous-Hermes-2-Mixtral-8x7B-DPO``,
# ``Hermes-2-Pro-Llama-3-8B``), Teknium's OpenHermes (``OpenHermes-2.5-Mistral-7B``),
# Cognitive Computations' Dolphin (``dolphin-2.9-llama3-8b``) and AI2's Tulu
# (``Llama-3.1-Tulu-3-8B``). A list, not a rule for any name that holds a base's name: pruned or
# searched models (``Llama-3.3-Nemotron-Super-49B``), distillations into another base
# (``DeepSeek-R1-Distill-Qwen-7B`` is Qwen2.5-Math-7B) and draft heads (``EAGLE3-LLaMA3.1-8B``)
# name a base whose shapes they do not have.
_FINE_TUNER: Final = re.compile(
    r"(?:^|-)(?:(?:nous-)?(?:open)?hermes(?:-?\d+(?:\.\d+)*)?(?:-pro)?|(?:dolphin|tulu)(?:-?\d+(?:\.\d+)*)?)(?=-)"
)


def name_readings(name: str) -> list[str]:
    """``name`` and the other ways it may name a model, to be tried in order.

    The text before a parenthesis (``Qwen3-235B (MoE, 22B active)``: the note is the row's, not
    the name's); a bare size with the architecture its parenthesis names (``70B (Meta Llama3
    architecture)`` = ``Meta Llama3 70B``); a parenthesis that names the architecture with its size
    (``LlamaT 7B (Llama 2 7B architecture)``); and each of these without a fine-tune family's
    word (``Hermes-3-Llama-3.1-405B`` = ``Llama-3.1-405B``, :data:`_FINE_TUNER`).

    >>> name_readings("70B (Meta Llama3 architecture)")
    ['70B (Meta Llama3 architecture)', '70B', 'Meta Llama3 70B']
    >>> name_readings("NousResearch/Hermes-3-Llama-3.1-405B-FP8")[-1]
    'llama-3.1-405b-fp8'
    """
    readings = [name]
    before = name.split("(", 1)[0].strip()
    if before and before != name.strip():
        readings.append(before)
        bare_size = _BARE_SIZE.fullmatch(before) is not None
        for inside in re.findall(r"\(([^)]*)\)", name):
            architecture = _ARCHITECTURE_WORDS.sub(" ", inside).strip(" ,;:-")
            if not architecture:
                continue
            if bare_size and not _SIZE_WORD.search(architecture):
                readings.append(f"{architecture} {before}")
            elif _ARCHITECTURE_WORDS.search(inside) and _SIZE_WORD.search(architecture):
                readings.append(architecture)
            elif not _SIZE_WORD.search(before) and _SIZE_WORD.match(inside.strip()):
                # ``Llama 3.3 (70B)``: the family, then its size
                readings.append(f"{before} {inside.strip()}")
    for reading in list(readings):
        # two names of one architecture (``DeepSeek-V3 and R1``, ``DeepSeek-V3 / R1``): the first;
        # an MoE's word (``DeepSeek-V3 671B MoE``) names no model
        first = re.split(r"\s+(?:and|&)\s+|\s+/\s+", reading, maxsplit=1)[0].strip()
        readings.append(first)
        readings.append(re.sub(r"[\s_-]+moe\b", "", first, flags=re.IGNORECASE).strip())
    for reading in list(readings):
        tail = normalize_name(reading).rsplit("/", 1)[-1]
        untuned = _FINE_TUNER.sub("", tail).strip("-")
        if untuned and untuned != tail:
            readings.append(untuned)
    return list(dict.fromkeys(readings))


def checkpoint_format(name: str) -> str | None:
    """The format a checkpoint's name states (``nvidia/DeepSeek-R1-FP4`` -> ``fp4``;
    ``...-FP8-dynamic`` -> ``fp8``; ``...-quantized.w8a8`` -> ``w8a8``), else ``None``.

    >>> checkpoint_format("RedHatAI/Meta-Llama-3.1-70B-Instruct-FP8-dynamic")
    'fp8'
    >>> checkpoint_format("Llama 3.3 70B Instruct") is None
    True
    """
    formats = reduce_name(name).formats
    if not formats:
        return None
    scheme, _, second = formats[0].partition("-")
    if scheme == "w8a8" and second:  # llm-compressor's W8A8-FP8 and W8A8-INT8: the second word
        return second
    return scheme.removeprefix("quantized.")


__all__ = [
    "FORMAT_TAGS",
    "MLPERF_TAGS",
    "TUNE_TAGS",
    "ReducedName",
    "checkpoint_format",
    "name_readings",
    "reduce_name",
    "split_active",
    "without_formats",
]
