"""The token lengths and load a published inference row writes, as sources write them.

Read from a row's text by :mod:`lightspeed.sol.validation.infer_rows` (its module docs, **Load**,
give the rules with examples): the input and output lengths (``ISL/OSL 1024/2048``, ``input 1024
output 512``, a bare ``1k/1k`` sequence cell, benchmark flags such as ``--input-len``), a prompt
alone (``2000-token prefill``), a static batch (``batch 64``, ``bs=8``) and a concurrency
(``concurrency 64``, ``64 users``, per rank or per GPU). A label whose value no whole number reads
(``batch nan``, ``1e400 users``) is matched too, so the row is refused rather than read at another
load.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from typing import Final

from lightspeed.sol.validation.infer_layout import INTEGER
from lightspeed.sol.validation.published import VALUE_AS_WRITTEN, size_cell
from lightspeed.sol.validation.readings import RowError

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
# The same pair written output first, its numbers in the label's order: ``OSL/ISL 256/1024``,
# ``output/input 256/1024``, ``256/1024 (OSL/ISL)``
_REVERSED_PAIR_LABEL = r"(?:osl\s*[/:,|]\s*isl|output\s*[/|]\s*input|out\s*/\s*in)"
_OSL_ISL = re.compile(
    rf"{_REVERSED_PAIR_LABEL}{_PAIR_WORD}\s*\)?\s*[=:]?\s*{_COUNT}\s*(?:[/:|]|,\s?)\s*{_COUNT}"
    rf"|{_COUNT}\s*/\s*{_COUNT}\s*\(?\s*{_REVERSED_PAIR_LABEL}\b"
)
# Lengths said one at a time, label before or after the number: ``ISL 128 OSL 2048``, ``ISL=128,
# OSL=2048``, ``input 1024 output 512``, ``input length 1,024 / output length 512``, ``1024 input /
# 512 output tokens``, ``1k in, 2k out``, ``2000-token prompts, 200 output tokens``, ``input size
# 128 and an output size 128 tokens``, ``input size in tokens 128``, ``512-token input sequence``,
# ``max input length 1024, max output length 1024``. Both halves sit in one cell (no ``|`` between
# them); each is read by its label, the output's first too (``OSL 256, ISL 4096``, ``Output Length
# 256, Input Length 1024``, ``256 output tokens, 1024 input tokens``).
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


# a length written as approximate: ``~1000``, ``≈1000``, ``about 1000``, ``approx. 1000``
_APPROXIMATE: Final = r"(?:~|≈|\babout\s+|\bapprox(?:\.|imately)?\s*)"


def _length_half(label: str, group: str) -> str:
    """``label N`` or ``N label`` (an optional ``tokens`` after the number), the number named
    ``group``; the number may be written as approximate (``input ~1000``: :data:`_APPROXIMATE`)."""
    return (
        rf"(?:(?:\b|(?<=_)){label}\s*(?:of\s+)?[=:]?\s*{_APPROXIMATE}?"
        rf"(?P<{group}_a>{_COUNT[1:-1]}){_NUMBER_END}{_TOKEN_WORD}"
        rf"|(?P<{group}_b>{_COUNT[1:-1]}){_NUMBER_END}{_TOKEN_WORD}\s+{label}\b{_TOKEN_WORD})"
    )


_LABELLED_LENGTHS = re.compile(
    _length_half(_IN_LABEL, "isl") + _HALF_SEPARATOR + _length_half(_OUT_LABEL, "osl")
)
_OUTPUT_FIRST_LENGTHS = re.compile(
    _length_half(_OUT_LABEL, "osl") + _HALF_SEPARATOR + _length_half(_IN_LABEL, "isl")
)
# The input length alone in the sequence cell (``Input Length 128, Output Length -``, ``ISL 2048``):
# what a first-token latency needs. (Not ``prompts``: ``1200 prompts`` counts requests.)
INPUT_LENGTH = re.compile(_length_half(rf"(?:isl|input{_LENGTH_WORD})", "isl"))


# A sequence cell that is only a pair, ``1k/1k``, ``1024 / 128 tokens``, ``1024:128``, TensorRT-LLM's
# table columns ``ISL, OSL`` as ``1000, 1000`` (a space after the comma: ``1,024`` is one number), or a pair
# after the dataset's name (``random 1024/128``, ``sonnet 550/150``): ISL/OSL, the order every
# serving benchmark writes them in.
_BARE_PAIR = re.compile(rf"\s*\(?\s*(?:[a-z]+\s+)?{_COUNT}\s*(?:[/:]|,\s)\s*{_COUNT}\s*\)?(?:\s*tokens?)?\s*")


def input_output(text: str, seq: str = "") -> tuple[int, int] | None:
    """(input, output) tokens the lower-case ``text`` states (module docs, **Load**), if any; a
    ``seq`` cell holding only ``N/M`` reads as ISL/OSL. Labels say which length is which, in either
    order.

    >>> input_output("osl/isl 256/1024"), input_output("output 256, input 1024")
    ((1024, 256), (1024, 256))
    """
    found = _lengths_written(text, seq)
    return None if found is None else (token_count(found[0]), token_count(found[1]))


def _lengths_written(text: str, seq: str) -> tuple[str, str, str] | None:
    """(input, output, the words that state both) of :func:`input_output`, as written."""
    bare = _BARE_PAIR.fullmatch(seq.lower())
    if bare:
        return bare.group(1), bare.group(2), bare.group(0).strip()
    for pattern, output_first in ((_ISL_OSL, False), (_OSL_ISL, True)):
        match = pattern.search(text)
        if match:
            first, second = (group for group in match.groups() if group is not None)
            isl, osl = (second, first) if output_first else (first, second)
            return isl, osl, match.group(0).strip()
    labelled = _LABELLED_LENGTHS.search(text) or _OUTPUT_FIRST_LENGTHS.search(text)
    if labelled is None:
        return None
    isl = labelled.group("isl_a") or labelled.group("isl_b")
    osl = labelled.group("osl_a") or labelled.group("osl_b")
    return isl, osl, labelled.group(0).strip()


def approximate_lengths(text: str, seq: str = "") -> str | None:
    """The words of the lengths :func:`input_output` reads, where they are written as approximate
    (``input ~1000, output ~1000``, ``~20k input / ~2k output``), else ``None``: the lengths are
    read as written (the figure's nominal lengths), and the caller says so.

    >>> approximate_lengths("input ~1000, output ~1000"), approximate_lengths("isl 1000 osl 1000")
    ('input ~1000, output ~1000', None)
    """
    found = _lengths_written(text, seq)
    if found is None or not re.search(_APPROXIMATE + r"\s*\d", found[2]):
        return None
    return found[2]


# A length written as a range of tokens (``ISL 900-1100``, ``input length 1k to 2k``, ``900-1100
# input tokens``): many runs, or lengths drawn from the range, never one length
_LENGTH_RANGE_LABEL: Final = rf"(?:isl|osl|(?:input|output|prompt|generation){_LENGTH_WORD})"
_RANGE_JOIN: Final = r"\s*(?:[-–]|to\b|\.\.)\s*"
_LENGTH_RANGE: Final = re.compile(
    rf"\b{_LENGTH_RANGE_LABEL}\s*(?:of\s+)?[=:]?\s*{_COUNT}{_RANGE_JOIN}{_COUNT}(?![\d.])"
    rf"|(?<![\w.,/]){_COUNT}{_RANGE_JOIN}{_COUNT}\s*-?\s*(?:tokens?\s+)?(?:isl|osl|input|output|prompt)\b"
)


def length_range(text: str) -> tuple[str, str] | None:
    """(words, the same with the range's midpoint) of a token length a lower-case ``text`` writes
    as a range (``isl 900-1100``), if any.

    >>> length_range("isl 900-1100 / osl 1000"), length_range("isl/osl 1000/1000")
    (('isl 900-1100', 'isl 1000'), None)
    """
    match = _LENGTH_RANGE.search(text)
    if match is None:
        return None
    low, high = (token_count(group) for group in match.groups() if group is not None)
    words = match.group(0).strip()
    return words, _NUMBER_RANGE.sub(str(round((low + high) / 2)), words, count=1)


_NUMBER_RANGE: Final = re.compile(rf"{_COUNT}{_RANGE_JOIN}{_COUNT}")


PREFILL = re.compile(rf"{_COUNT}\s*-?\s*token (?:prefill|prompt)")
# A pool's context alone, label before or after the number: ``input 2000 tokens``, ``ISL 2000``,
# ``ISL=2000``, ``input length 2,000``, ``input_len=2000``, ``2000 input tokens``, ``2000-token
# input``, ``8K-token inputs``, ``prompt length 2000``, ``KV length 4096``, ``context of 8k``.
INPUT_ONLY = re.compile(
    _length_half(
        rf"(?:isl|inputs?{_LENGTH_WORD}|prompts?{_LENGTH_WORD}|kv[\s_-](?:cache[\s_-])?length"
        r"|context(?:[\s_-]length)?(?:\s+of)?)",
        "isl",
    )
)

# (not a cap: ``max batch 384``, ``maximum batch size 64``, ``max_batch_size 128`` are caps, infer_layout)
# ``Batch size: fixed (8)`` (vLLM's latency benchmark descriptions) is a static batch of 8 too, as
# are ``B=64``, ``static batching, 64``, ``64 (static batch)``, ``64 (batch size)``, ``64 sequences``
BATCH = re.compile(
    r"(?<!max[ _-])(?<!maximum[ _-])\b(?:batch(?:\s*size)?|bs|b(?=\s*=))\s*[=:]?\s*(?:fixed\s*)?\(?\s*"
    rf"{INTEGER}"
    rf"|\bstatic\s+batch(?:ing)?\s*[,:]?\s*(?:of\s+)?{INTEGER}"
    rf"|(?<![\w.,]){INTEGER}\s*\(?\s*(?:static\s+batch|batch(?:\s*size)?\b|sequences\b)"
)
# a batch's label with a value no whole number reads (``batch 1e400``, ``bs=-1``, ``batch nan``):
# refused, never dropped
BATCH_VALUE = re.compile(
    r"(?<!max[ _-])(?<!maximum[ _-])\b(?:batch(?:\s*size)?|bs)\s*[=:]?\s*(?:fixed\s*)?\(?\s*"
    + VALUE_AS_WRITTEN
)
# a load cell holding a number alone: the batch the table's column names (``64``)
BARE_COUNT = re.compile(r"\s*\d[\d,]*\s*")
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
CONCURRENCY_VALUE = re.compile(
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


def token_count(text: str) -> int:
    """``1,000`` -> 1000, ``32k`` -> 32768 (a k on a token count is 1024)."""
    count = size_cell(text)
    if count is None:
        raise RowError(f"{text!r} is not a token count")
    return count


def written_concurrency(text: str) -> tuple[int, bool] | None:
    """(count, whether per rank) of the concurrency a lower-case load ``text`` writes
    (:data:`_CONCURRENCY`, :data:`_PER_RANK_LOAD`), if any."""
    found = next(_single_concurrencies(text), None)
    if found is None:
        return None
    count = int((found.group(1) or found.group(2)).replace(",", ""))
    return count, _PER_RANK_LOAD.match(text, found.end()) is not None


def _single_concurrencies(text: str) -> Iterator[re.Match[str]]:
    """Each concurrency a lower-case load ``text`` writes (:data:`_CONCURRENCY`) that is not the
    start of a range (``concurrency 64-128``: :func:`concurrency_ranges`)."""
    for match in _CONCURRENCY.finditer(text):
        if not _RANGE_AFTER.match(text, match.end()):
            yield match


# a range of concurrencies with the users' word after it (``64-128 users``, ``8 to 64 concurrent``)
_USERS_RANGE: Final = re.compile(
    r"(?<![\w.,])\d[\d,]*\s*(?:[-–]|to\b|\.\.)\s*\d[\d,]*\s*"
    r"(?:concurrent|(?:simultaneous |parallel |virtual )?(?:users|clients)\b|(?:requests?\s+)?in[ -]flight\b"
    r"|parallel\s+requests\b)"
)


def concurrency_ranges(text: str) -> list[str]:
    """The concurrency ranges a lower-case load ``text`` writes (``concurrency 64-128``,
    ``concurrency 64 to 128``, ``64-128 users``): runs over many loads, as :func:`batch_ranges`.

    >>> concurrency_ranges("concurrency 64 to 128"), concurrency_ranges("64-128 users")
    (['concurrency 64 to 128'], ['64-128 users'])
    """
    ranges = [match.group(0).strip() for match in _USERS_RANGE.finditer(text)]
    for match in _CONCURRENCY.finditer(text):
        after = _RANGE_AFTER.match(text, match.end())
        if after is not None:
            ranges.append(text[match.start() : after.end()].strip())
    return ranges


def concurrencies_written(text: str, num_gpus: int = 1) -> dict[int, str]:
    """Every concurrency a lower-case load ``text`` writes (:data:`_CONCURRENCY`), as requests in
    flight over the row's ``num_gpus`` (one stated per rank is on each GPU), to the words that state
    it, first written first: more than one is a row contradicting itself."""
    found: dict[int, str] = {}
    for match in _single_concurrencies(text):
        count = int((match.group(1) or match.group(2)).replace(",", ""))
        per_rank = _PER_RANK_LOAD.match(text, match.end()) is not None
        found.setdefault(count * num_gpus if per_rank else count, match.group(0).strip())
    return found


# a batch's label and a range of them (``BS 1-256``, ``batch 8 - 64``): a sweep, no one batch
# ``1-256``, ``1 to 256``, ``1..256``: the rest of a range after its first batch
# (not a batch followed by its lengths: ``batch 64 - 1024/1024``, ``concurrency 8 - 2k tokens``)
_RANGE_AFTER = re.compile(
    r"\s*(?:[-–]|to\b|\.\.)\s*\d[\d,]*(?!\d|\.\d|\s*(?:[/:x×]\s*\d|k\b|-?\s*tokens?\b))"
)


def batches_written(text: str) -> dict[int, str]:
    """Every static batch a lower-case load ``text`` writes (:data:`BATCH`) to the words that state
    it, first written first; a range (``BS 1-256``, a sweep of runs) is none of them
    (:func:`batch_ranges`)."""
    found: dict[int, str] = {}
    for match in BATCH.finditer(text):
        if not _RANGE_AFTER.match(text, match.end()):
            size = int(next(group for group in match.groups() if group).replace(",", ""))
            found.setdefault(size, match.group(0).strip())
    return found


def batch_ranges(text: str) -> list[str]:
    """The batch ranges a lower-case load ``text`` writes (``BS 1-256``, ``batch size 1 to 256``):
    runs over many batches.

    >>> batch_ranges("batch size 1 to 256"), batch_ranges("bs 1-256"), batch_ranges("batch 64")
    (['batch size 1 to 256'], ['bs 1-256'], [])
    """
    ranges: list[str] = []
    for match in BATCH.finditer(text):
        after = _RANGE_AFTER.match(text, match.end())
        if after is not None:
            ranges.append(text[match.start() : after.end()].strip())
    return ranges


# A list of runs where a load is written (``batch sizes 1, 8 and 64``, ``BS 1/8/64``, ``concurrency
# 1, 4, 16, 64``, ``concurrencies 8 and 16``, ``1, 8 or 64 users``): a sweep, one figure a run, never
# the load of the one figure a row holds. A number followed by a unit is no load (``bs1, 2048-token
# prefill``, ``concurrency 1, 10 requests``, ``batch 32 and 1024 input tokens``).
_LIST_UNIT: Final = r"k|tokens?|requests?|prompts?|input|output|in|out|gpus?|nodes?|x"
_LIST_NUMBER: Final = rf"(?:\d{{1,3}}(?:,\d{{3}})+|\d+)(?![\d.]|\s*-?\s*(?:(?:{_LIST_UNIT})\b|%))"
_LIST_AND: Final = r"\s*,?\s*(?:and|or|&)\s+"
_LIST_SEP: Final = rf"(?:{_LIST_AND}|\s*,\s*|\s*/\s*)"
_LIST_OF: Final = rf"{_LIST_NUMBER}(?:{_LIST_SEP}{_LIST_NUMBER})+"
_LOAD_LIST: Final = re.compile(
    r"(?P<label>\bbatch(?:es|\s*sizes?)?|\bbs|\bconcurrenc(?:y|ies)(?:\s+levels?)?|\bconc\.?)"
    rf"\s*(?:of\s+)?[=:]?\s*(?P<list>{_LIST_OF})"
    rf"|(?<![\w.,])(?P<users>{_LIST_OF})\s*(?:concurrent|users|clients)\b"
)
# a label in the plural names several runs whatever their separators (``batch sizes 1, 8``)
_PLURAL_LABEL: Final = re.compile(r"batches|sizes|concurrencies|levels")


def load_list(text: str) -> tuple[str, str] | None:
    """(the words, ``batch size`` or ``concurrency``) of a list of runs a lower-case load ``text``
    writes where one load belongs (:data:`_LOAD_LIST`), if any: two or more numbers under a label in
    the plural or joined by ``and``/``or``, or three or more with one separator, rising or falling
    (``BS 1/8/64``; not ``BS 64, 1024/1024``, a batch and its lengths).

    >>> load_list("batch sizes 1, 8 and 64"), load_list("bs 1/8/64"), load_list("batch 64")
    (('batch sizes 1, 8 and 64', 'batch size'), ('bs 1/8/64', 'batch size'), None)
    >>> load_list("1, 8 or 64 users"), load_list("bs1, 2048-token prefill"), load_list("batch 1,024")
    (('1, 8 or 64 users', 'concurrency'), None, None)
    """
    for match in _LOAD_LIST.finditer(text):
        numbers = match.group("list") or match.group("users")
        if _is_run_list(numbers, plural=bool(_PLURAL_LABEL.search(match.group("label") or ""))):
            label = match.group("label") or ""
            what = "batch size" if label.startswith(("batch", "bs")) else "concurrency"
            return match.group(0).strip(), what
    return None


def _is_run_list(numbers: str, *, plural: bool) -> bool:
    """Whether ``numbers`` (two or more, :data:`_LIST_OF`) is a list of runs (:func:`load_list`)."""
    if plural or re.search(_LIST_AND, numbers):
        return True
    values = [int(value.replace(",", "")) for value in re.findall(_LIST_NUMBER, numbers)]
    separators = set(re.findall(r"\s*([,/])\s*(?=\d)", re.sub(r"(?<=\d),(?=\d{3}\b)", "", numbers)))
    rising = all(a < b for a, b in itertools.pairwise(values))
    falling = all(a > b for a, b in itertools.pairwise(values))
    return len(values) >= 3 and len(separators) == 1 and (rising or falling)


def stated_concurrency(text: str, num_gpus: int = 1) -> int | None:
    """The requests in flight a lower-case load ``text`` states, if any: the count written, times
    ``num_gpus`` where it is stated per rank or per GPU."""
    written = written_concurrency(text)
    if written is None:
        return None
    count, per_rank = written
    return count * num_gpus if per_rank else count
