"""Reading published-result tables (the ``published-dev.tsv`` format).

Each row describes a published training or inference run in free text:
``24?`` (uncertain), ``128 (8 kv)``, ``4h? (8192)``, ``32/DP; 16M tokens``,
``n/r`` (not reported). This module turns a row into typed fields and says,
field by field, what it could not read; it never drops a row silently.
Defaults for unreported settings are documented in ``docs/sol.md``.
"""

from __future__ import annotations

import csv
import difflib
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Protocol

from lightspeed.errors import DataFileError
from lightspeed.files import excerpt, read_text
from lightspeed.records import Record
from lightspeed.sol.validation.readings import RowError, impossible_value, split_pieces

REQUIRED_COLUMNS = ("id", "kind", "model", "GPUs", "hardware", "metric", "measured")
# Every column the readers read, as ``published-dev.tsv`` spells them (docs/sol.md).
KNOWN_COLUMNS: Final = (
    "id",
    "kind",
    "source",
    "model",
    "params_B",
    "layers",
    "hidden",
    "heads(kv)",
    "ffn",
    "vocab",
    "seq",
    "global_batch",
    "micro_batch",
    "TP",
    "PP",
    "VPP",
    "CP",
    "DP",
    "EP",
    "sharding",
    "GPUs",
    "hardware",
    "precision",
    "recompute",
    "metric",
    "measured",
    "derived_or_check",
    "confidence",
    "notes",
    "url",
)
# Other names a header gives a known column, as written after :func:`column_key` (``Seq Len``,
# ``global batch size``, ``tensor parallel``, ``num_gpus``).
COLUMN_ALIASES: Final = {
    "seq_len": "seq",
    "seqlen": "seq",
    "sequence": "seq",
    "sequence_length": "seq",
    "gbs": "global_batch",
    "global_batch_size": "global_batch",
    "batch": "global_batch",
    "batch_size": "global_batch",
    "mbs": "micro_batch",
    "micro_batch_size": "micro_batch",
    "microbatch": "micro_batch",
    "tensor_parallel": "TP",
    "pipeline_parallel": "PP",
    "virtual_pipeline": "VPP",
    "context_parallel": "CP",
    "data_parallel": "DP",
    "expert_parallel": "EP",
    "gpu": "GPUs",
    "num_gpus": "GPUs",
    "gpu_count": "GPUs",
    "heads": "heads(kv)",
    "heads_kv": "heads(kv)",
    "params": "params_B",
    "params_b": "params_B",
    "parameters": "params_B",
    "num_layers": "layers",
    "hidden_size": "hidden",
    "ffn_hidden_size": "ffn",
    "vocab_size": "vocab",
    "dtype": "precision",
    "value": "measured",
    "note": "notes",
    "comment": "notes",
    "comments": "notes",
    "remarks": "notes",
    "link": "url",
}
# The table writer's notes beside a row: a derivation or check of the figure, another run's
# figures, how sure the reading is.
NOTE_COLUMNS: Final = ("derived_or_check", "confidence", "notes", "url")
# A note that quotes the measured run's own printed figures (PublishedRow.same_run_notes).
_SAME_RUN: Final = re.compile(r"same\s+(?:output|record|run)\s*:", re.IGNORECASE)
MISSING = {
    "",
    "n/r",
    "n/a",
    "-",
    "—",
    "–",
    "n/p",
    "?",
    "none reported",
    "n.r.",
    "nr",
    "n/s",
    "not reported",
    "not stated",
    "not given",
    "not specified",
    "unspecified",
    "unknown",
    "undisclosed",
    "not disclosed",
}
# a cell opening with one of these says the source does not give it (``unknown (recalled full)``)
_MISSING_FIRST: Final = ("n/r", "not reported", "not stated", "unknown", "unspecified", "not specified")
# a sign only where no letter precedes it: "ZeRO-1" holds 1, not -1
_NUMBER = re.compile(r"(?:(?<![A-Za-z])[-+])?\d[\d,]*\.?\d*(?:[eE][-+]?\d+)?")
# A count's suffix as a decimal multiple (``2.664M``) and, for sizes rounded to powers of two, as
# a binary one (``8K`` of context is 8,192).
DECIMAL_SUFFIXES: Final = {"k": 1e3, "m": 1e6, "b": 1e9, "t": 1e12}
BINARY_SUFFIXES: Final = {"k": 1024.0, "m": 1024.0**2}
# Number formats as frameworks and papers spell them, and the keys the row readers look for:
# PyTorch's dtypes (``torch.bfloat16``, ``float16``, ``float8_e4m3fn``), torchao's ``Float8``,
# OCP's element names (``E4M3``, ``E5M2``), ``half precision`` and ``float32``.
_SPELLED_FORMATS: Final = (
    (re.compile(r"\bbfloat16\b"), "bf16"),
    (re.compile(r"\bfloat16\b|^half$|\bhalf[\s-]+precision\b"), "fp16"),
    (re.compile(r"\bfloat8\w*|\be[45]m[23]\w*"), "fp8"),
    (re.compile(r"\bfloat32\b"), "fp32"),
    # MX block-scaled formats as Megatron-Bridge's tables and others write them: ``FP8-MX``,
    # ``MX-FP8``, ``MX FP8``, ``FP8 (MX block scaling)``
    (re.compile(r"\bfp8[\s-]*mx\b|\bmx[\s-]+fp8\b|\bfp8\s*\(\s*mx\b[^)]*\)"), "mxfp8"),
    (re.compile(r"\bfp4[\s-]*mx\b|\bmx[\s-]+fp4\b|\bfp4\s*\(\s*mx\b[^)]*\)"), "mxfp4"),
)
MAX_TABLE_BYTES = 32 * 2**20
# A number as a cell writes it after its label, whole (``1e400``, ``-1``, ``nan``, ``64,``): what a
# reader checks before refusing a value no whole number reads, never cut to its first digits.
VALUE_AS_WRITTEN: Final = r"(?:[-+.]?\d|nan\b|inf)[^\s;|]*"


class _Reader(Protocol):
    """What :func:`csv.reader` returns: rows, and the line it has read up to."""

    line_num: int

    def __iter__(self) -> Iterator[list[str]]: ...

    def __next__(self) -> list[str]: ...


@dataclass(frozen=True)
class PublishedRow(Record):
    """One row of a published-results table, as written (column name -> text)."""

    row_id: str
    kind: str
    line: int
    cells: dict[str, str] = field(default_factory=dict)

    def text(self, column: str) -> str:
        """The cell's text, stripped ('' when the column is absent)."""
        return self.cells.get(column, "").strip()

    def joined(self) -> str:
        """All cells in one lower-case string, the table writer's notes included (for rules on how
        the figure was counted, which a note may say: ``72-form``)."""
        return " | ".join(self.cells.values()).lower()

    def described(self) -> str:
        """The cells that describe the run, in one lower-case string (for rules on its setup): all
        but the table writer's notes (:data:`NOTE_COLUMNS`), which check the figure, guess
        (``rank presumably = GPU (DP attention)``) or quote another run's (``baseline (no overlap,
        no MTP) 51.0``)."""
        return " | ".join(self.own_cells()).lower()

    def own_cells(self) -> list[str]:
        """The texts of the cells that describe the run (:meth:`described`), as written."""
        return [text for column, text in self.cells.items() if column not in NOTE_COLUMNS]

    def same_run_notes(self) -> str:
        """The table writer's notes that quote the measured run's own output, in one lower-case
        string: a note cell that opens with ``same output:``, ``same record:`` or ``same run:``
        (the figures printed beside the measured one, ``same output: Mean TTFT 161.68 ms; Accept
        length 2.46``); '' where no note says so."""
        return " | ".join(
            text.lower()
            for column, text in self.cells.items()
            if column in NOTE_COLUMNS and _SAME_RUN.match(text.strip())
        )


def read_table(path: Path) -> list[PublishedRow]:
    """Rows of a tab-separated published-results file (blank lines skipped; lines and cells as
    :func:`table_lines` and :func:`unquoted` read them).

    Every row has one cell per header column (empty columns with no name after the last named one,
    a spreadsheet's trailing tab, are dropped where every row leaves them empty): a row with fewer
    or more (a file cut short, a tab typed inside a cell) is refused naming its line, as is a NUL
    byte in a cell (a corrupt or binary file; read on, ``13\\x007`` would be taken for 13), as is a
    table with no row under its header or an id two rows share (the id names the row in the report
    and its JSON). A row's own values are not checked here: a measured value no measurement has is
    that row's error (:func:`check_measured`), the other rows are still predicted.
    """
    text = read_text(path, max_bytes=MAX_TABLE_BYTES, what="published-results table (TSV)")
    lines = table_lines(text)
    if not lines or "\t" not in lines[0]:
        raise DataFileError(
            path,
            "not a tab-separated table with a header line",
            line=1,
            fix="use the columns of published-dev.tsv, separated by tabs",
        )
    reader = csv.reader(lines, delimiter="\t", quoting=csv.QUOTE_NONE)
    written = _header(path, reader)
    if "\x00" in text:
        _refuse_nul(path, lines, written)
    header = known_columns(path, _named(written))
    missing = [column for column in REQUIRED_COLUMNS if column not in header]
    if missing:
        raise DataFileError(
            path, f"missing columns {', '.join(missing)}", line=1, fix="use the header of published-dev.tsv"
        )
    try:
        # a last line with no line end may be a file cut short (a copy, a download)
        cut_at = None if text.endswith(("\n", "\r")) else len(lines)
        rows = list(_rows(path, reader, header, unnamed=len(written) - len(header), cut_at=cut_at))
    except csv.Error as error:
        raise DataFileError(
            path, f"not a readable table ({error})", line=reader.line_num, fix="check that line's cells"
        ) from None
    if not rows:
        raise DataFileError(
            path,
            "no rows under the header",
            line=1,
            fix="add one row per published run under the header, one cell per column (n/r for a "
            "figure not given)",
        )
    _refuse_repeated_ids(path, rows)
    return rows


def _header(path: Path, reader: _Reader) -> list[str]:
    """The column names on the table's first line (a :class:`DataFileError` where csv cannot read it)."""
    try:
        return [unquoted(cell) for cell in next(reader)]
    except csv.Error as error:
        raise DataFileError(
            path, f"not a readable table ({error})", line=1, fix="check the header line"
        ) from None


# A table's line ends: what spreadsheets and editors write. Every other character Python's
# ``str.splitlines`` breaks at (a form feed, a vertical tab, U+2028/U+2029 pasted from a PDF, NEL,
# the file/group/record separators) is part of a cell's text, read as a space.
_LINE_END: Final = re.compile(r"\r\n|\r|\n")
_BREAK_IN_CELL: Final = re.compile("[\v\f\x1c-\x1e\x85\u2028\u2029]")


def table_lines(text: str) -> list[str]:
    """The lines of a table's ``text``, split at ``\\n``, ``\\r\\n`` and ``\\r`` only (no empty last
    line after a final line end), every other line break read as a space.

    >>> table_lines("id\\tkind\\r\\nA1\\tmy\\u2028blog\\fpost\\n")
    ['id\\tkind', 'A1\\tmy blog post']
    """
    lines = _LINE_END.split(_BREAK_IN_CELL.sub(" ", text))
    return lines[:-1] if lines and not lines[-1] else lines


def unquoted(cell: str) -> str:
    """A cell wholly enclosed in double quotes, as CSV writes one, without them (``""`` inside is
    one quote); any other cell as written.

    >>> unquoted('"Llama 3 70B"'), unquoted('"say ""hi"" now"'), unquoted('"a" b'), unquoted('8 "x"')
    ('Llama 3 70B', 'say "hi" now', '"a" b', '8 "x"')
    """
    stripped = cell.strip()
    if len(stripped) < 2 or stripped[0] != '"' or stripped[-1] != '"':
        return cell
    inside = stripped[1:-1]
    if '"' in inside.replace('""', ""):
        return cell  # a quote not doubled inside: not one quoted cell (``"a" and "b"``)
    return inside.replace('""', '"')


def _named(header: list[str]) -> list[str]:
    """``header`` without the empty names after its last named column (a spreadsheet's trailing
    tab); an empty name before a named one is left for :func:`known_columns` to refuse."""
    count = len(header)
    while count > 0 and not header[count - 1].strip():
        count -= 1
    return header[:count]


def column_key(name: str) -> str:
    """A header name as the columns are matched: lower case, spaces, hyphens and underscores alike,
    a parenthesis a separator (``Global Batch`` and ``global-batch`` are ``global_batch``,
    ``Heads (KV)`` is ``heads_kv``).

    >>> column_key(" Global  Batch "), column_key("heads(kv)"), column_key("Params-B")
    ('global_batch', 'heads_kv', 'params_b')
    """
    return "_".join(re.findall(r"[a-z0-9/]+", name.lower()))


_COLUMN_KEYS: Final = {column_key(column): column for column in KNOWN_COLUMNS} | COLUMN_ALIASES


def known_columns(path: Path, header: list[str]) -> list[str]:
    """``header`` with each name as the readers spell its column (:data:`KNOWN_COLUMNS`), matched
    by :func:`column_key` or an alias (:data:`COLUMN_ALIASES`). A name no column has is refused,
    naming the nearest one and listing them all: its cells would be read by nothing, and a
    setting written under it (``Sequence Length 32K``) silently predicted at a default. So is a
    column named twice (``seq`` and ``Seq``: which one holds the run's?)."""
    columns: list[str] = []
    for position, name in enumerate(header, start=1):
        column = _COLUMN_KEYS.get(column_key(name))
        if column is None:
            raise _unknown_column(path, position, name)
        if column in columns:
            first = header[columns.index(column)]
            raise DataFileError(
                path,
                f"column {excerpt(name)!r} (column {position}) is {column}, as {excerpt(first)!r} "
                f"(column {columns.index(column) + 1}) is",
                line=1,
                fix="keep one of them",
            )
        columns.append(column)
    return columns


def _unknown_column(path: Path, position: int, name: str) -> DataFileError:
    """The error for a header ``name`` (at ``position``) no column has."""
    close = difflib.get_close_matches(column_key(name), list(_COLUMN_KEYS), n=1, cutoff=0.6)
    hint = f"did you mean {_COLUMN_KEYS[close[0]]!r}? " if close else ""
    written = excerpt(name) if name.strip() else ""
    what = f"unknown column {written!r}" if written else "a column with no name"
    return DataFileError(
        path,
        f"{what} (column {position})",
        line=1,
        fix=f"{hint}name each column one of {', '.join(KNOWN_COLUMNS)} (case, spaces and '_' "
        "alike), or delete it",
    )


def _refuse_nul(path: Path, lines: list[str], header: list[str]) -> None:
    """Raise :class:`DataFileError` naming the line and column of the first NUL byte in ``lines``."""
    number, line = next((number, line) for number, line in enumerate(lines, start=1) if "\x00" in line)
    cell = line[: line.index("\x00")].count("\t")
    column = f"column {header[cell]!r}" if number > 1 and cell < len(header) else f"cell {cell + 1}"
    raise DataFileError(
        path,
        f"NUL byte in {column if number > 1 else f'the header ({column})'}",
        line=number,
        fix="a NUL byte is not text (a corrupt or binary file): restore the file or delete the byte",
    )


def _refuse_repeated_ids(path: Path, rows: list[PublishedRow]) -> None:
    """Refuse a table where two rows share an id, naming both lines: each row is one entry of the
    report and of its JSON, keyed by its id (a row pasted twice would also count twice)."""
    first_line: dict[str, int] = {}
    for row in rows:
        line = first_line.setdefault(row.row_id, row.line)
        if line != row.line:
            raise DataFileError(
                path,
                f"id {excerpt(row.row_id)} repeats line {line}",
                line=row.line,
                field="id",
                fix="give each row its own id (delete the row if it is the same run pasted twice)",
            )


def check_measured(row: PublishedRow) -> None:
    """Raise :class:`RowError` (the row is not predicted, with this reason) for a measured value no
    measurement can have (``-137``, ``nan``, ``1e400``, ``inf (44%)``): reading it as 137 or 44
    would compare a prediction with a number the source never gave; then for a setting cell no
    reader can take (:func:`check_cells`)."""
    for piece in split_pieces(row.text("measured")):
        problem = impossible_value(piece)
        if problem:
            raise RowError(
                f"measured value {excerpt(piece)!r} is {problem}; fix: write the value the source "
                "reports (a number above 0), or n/r"
            )
    check_cells(row)


@dataclass(frozen=True)
class _Count:
    """What a cell holding one whole number counts: its words in the error's fix, an example, and
    the least value a run can have."""

    what: str
    example: str
    least: int = 0


# The cells that hold one whole number (its first, where text follows: ``8 (attention)``), in
# every row; a training row's sequence and batch cells too (an inference row writes its load in
# words there: ``ISL/OSL 1000/1000``, ``max throughput``).
_COUNT_CELLS: Final = {
    # a degree of 0 is no layout (none is 1, or n/r where the source does not say): never unstated
    "TP": _Count("the tensor-parallel degree", "8", least=1),
    "PP": _Count("the pipeline-parallel degree", "2", least=1),
    "VPP": _Count("the virtual pipeline stages per GPU", "2"),
    "CP": _Count("the context-parallel degree", "2", least=1),
    "DP": _Count("the data-parallel degree", "8", least=1),
    "EP": _Count("the expert-parallel degree", "8", least=1),
    "GPUs": _Count("how many GPUs ran", "64", least=1),
    "layers": _Count("the layer count", "80"),
    "hidden": _Count("the hidden size", "8192"),
    "heads(kv)": _Count("the attention heads", "64 (8 kv)"),
    "micro_batch": _Count("the micro-batch in sequences", "1"),
}
_TRAIN_COUNT_CELLS: Final = {
    "seq": _Count("the sequence length in tokens", "8192 or 8K", least=1),
    "global_batch": _Count("the global batch in sequences", "512"),
}
# A count cell's opening number as written: a sign, digits, a fraction or exponent, a K/M suffix.
_OPENING_NUMBER: Final = re.compile(
    r"\s*[~≈]?\s*(?P<number>[-+−]?\d[\d,]*(?:\.\d*)?(?:e[-+]?\d+)?)(?P<suffix>[km](?![a-z]))?", re.IGNORECASE
)
# One word in a count cell that says the setting is off or unused, or the GPUs cell's one GPU
# (``single``); any other word alone is no number a reader takes (``eight``, ``banana``).
_NO_COUNT_WORDS: Final = frozenset(
    {"none", "no", "off", "disabled", "false", "na", "null", "nil", "yes", "on", "enabled", "true", "auto"}
    | {"dualpipe"}  # VPP: DeepSeek's bidirectional schedule, no virtual stages
)
_ONE_GPU_WORDS: Final = frozenset({"one", "single"})
_SPELLED_NUMBERS: Final = {
    name: value
    for value, name in enumerate(
        [
            "zero",
            "one",
            "two",
            "three",
            "four",
            "five",
            "six",
            "seven",
            "eight",
            "nine",
            "ten",
            "eleven",
            "twelve",
            "thirteen",
            "fourteen",
            "fifteen",
            "sixteen",
        ]
    )
}
# Number formats as precision cells write them (``FP8``, ``int4``, ``bfloat16``, ``float8_e4m3fn``),
# and the ones that exist: a format of other bits (``int3``, ``fp12``) names none.
_FORMAT_TOKEN: Final = re.compile(r"(?<![a-z0-9])(?:u?int|fp|bf|mxfp|nvfp|b?float)\d+(?!\d)")
_KNOWN_FORMATS: Final = frozenset(
    {"fp4", "fp6", "fp8", "fp16", "fp32", "fp64", "bf16", "tf32", "mxfp4", "mxfp6", "mxfp8", "nvfp4"}
    | {"int2", "int4", "int8", "int16", "int32", "uint4", "uint8"}
    | {"float8", "float16", "float32", "float64", "bfloat16"}
)
# Input and output lengths written as labels and numbers in pairs (``ISL/OSL 1000/1000``).
_LENGTH_PAIRS: Final = re.compile(
    r"(?P<labels>[a-z]+(?:\s*/\s*[a-z]+)+)\s*[=:]?\s*"
    r"(?P<values>\d[\d,.]*\s*[km]?(?![a-z])(?:\s*/\s*\d[\d,.]*\s*[km]?(?![a-z]))+)"
)


def check_cells(row: PublishedRow) -> None:
    """Raise :class:`RowError` naming the column, the cell and what to write for a setting cell
    no reader can take, where the readers would otherwise predict at a default as if the source
    had not given it (an empty, ``n/r`` or ``-`` cell is not given; a cell written but unreadable
    is not): a count cell (:data:`_COUNT_CELLS`) opening with a negative or fractional number, 0
    GPUs or a training row's sequence of 0 tokens, or holding one word that is no number
    (``eight``, ``banana``); a precision naming a format no number format is (``int3``); an
    inference row's lengths with more or fewer numbers than labels (``ISL/OSL 1000/1000/1000``).
    """
    cells = _COUNT_CELLS | _TRAIN_COUNT_CELLS if row.kind == "train" else _COUNT_CELLS
    for column, count in cells.items():
        _check_count(column, row.text(column), count)
    _check_formats(row.text("precision"))
    if row.kind == "infer":
        _check_length_pairs(row.text("seq"))


def _check_count(column: str, text: str, count: _Count) -> None:
    """Refuse a count cell's ``text`` no count is (:func:`check_cells`)."""
    if is_missing(text):
        return
    opening = _OPENING_NUMBER.match(text)
    if opening is None:
        _check_word(column, text, count)
        return
    number = opening["number"].replace(",", "").replace("−", "-")
    value = float(number)
    scales = (1.0,) if not opening["suffix"] else _suffix_scales(opening["suffix"])
    problem = (
        "too large to be a number"
        if not math.isfinite(value)
        else "not a whole number >= 0 (negative)"
        if value < 0
        else ""
        if any(value * scale == int(value * scale) for scale in scales)
        else "not a whole number >= 0 (a fraction)"
    )
    if not problem and value < count.least:
        problem = f"{value:g}, and a run has at least {count.least}"
    if problem:
        raise RowError(
            f"{column} {excerpt(text)!r} is {problem}; write {count.what} as a whole number"
            f"{' >= 1' if count.least else ''} (e.g. {count.example}), or n/r where the source "
            "does not give it"
        )


def _suffix_scales(suffix: str) -> tuple[float, ...]:
    """The values a K or M after a count may mean: decimal (``2.664M``) or binary (``8K``)."""
    letter = suffix.lower()
    return (DECIMAL_SUFFIXES[letter], BINARY_SUFFIXES[letter])


def _check_word(column: str, text: str, count: _Count) -> None:
    """Refuse a count cell that is one word no count is (``eight``, ``banana``); prose (``DP
    attention``, ``multi-NUMA TP (size not stated)``) is left to the readers."""
    word = text.strip().lower()
    if not word.isalpha() or not word.isascii() or word in _NO_COUNT_WORDS:
        return
    if column == "GPUs" and word in _ONE_GPU_WORDS:
        return
    spelled = _SPELLED_NUMBERS.get(word)
    digits = f" ({spelled})" if spelled is not None else ""
    raise RowError(
        f"{column} {excerpt(text)!r} is not a number; write {count.what} in digits{digits}"
        f"{'' if digits else f' (e.g. {count.example})'}, or n/r where the source does not give it"
    )


def _check_formats(text: str) -> None:
    """Refuse a precision cell that names a number format of bits no format has (``int3``)."""
    if is_missing(text):
        return
    for token in _FORMAT_TOKEN.findall(text.lower()):
        if token not in _KNOWN_FORMATS:
            raise RowError(
                f"precision {excerpt(text)!r} names {token!r}, no number format lightspeed knows; "
                "write the run's format (bf16, fp16, fp8, fp4, nvfp4, mxfp8, mxfp4, int8, int4, "
                "fp32), or n/r where the source does not give it"
            )


def _check_length_pairs(text: str) -> None:
    """Refuse an inference row's ``seq`` cell that pairs labels and lengths unevenly
    (``ISL/OSL 1000/1000/1000``) or writes a length that is no whole token count (``1000.5``, 0)."""
    for pair in _LENGTH_PAIRS.finditer(text.lower()):
        labels = [label.strip() for label in pair["labels"].split("/")]
        values = [value.strip() for value in pair["values"].split("/")]
        if len(labels) != len(values):
            raise RowError(
                f"seq {excerpt(text)!r} gives {len(values)} numbers for {len(labels)} labels "
                f"({'/'.join(labels).upper()}); write one length per label (e.g. ISL/OSL 1024/256)"
            )
        for value in values:
            number = float(value.rstrip("km ").replace(",", "") or "nan")
            if value[-1:].isdigit() and (number != int(number) or number < 1):
                raise RowError(
                    f"seq {excerpt(text)!r}: {value!r} is not a whole number of tokens >= 1; write "
                    "each length in tokens (e.g. ISL/OSL 1024/256)"
                )


def _rows(
    path: Path, reader: _Reader, header: list[str], *, unnamed: int = 0, cut_at: int | None
) -> Iterator[PublishedRow]:
    """The rows after the header (blank lines skipped), each cell :func:`unquoted`. A row whose cell
    count differs from the header's is a :class:`DataFileError`, but for the cells of the
    ``unnamed`` empty columns after the header's last name, which a row may hold or drop when they
    are empty; ``cut_at``: the last line, when no line end follows it."""
    for written in reader:
        number = reader.line_num  # the file's line: blank lines counted
        raw = [unquoted(cell) for cell in written]
        if not any(value.strip() for value in raw):
            continue
        if unnamed and len(header) < len(raw) <= len(header) + unnamed:
            raw = _without_unnamed(path, number, raw, len(header))
        if len(raw) != len(header):
            raise _cell_count_error(path, number, len(raw), len(header), cut=number == cut_at)
        cells = dict(zip(header, raw, strict=True))
        yield PublishedRow(
            row_id=cells.get("id", "").strip() or f"line{number}",
            kind=cells.get("kind", "").strip().lower(),
            line=number,
            cells=cells,
        )


def _without_unnamed(path: Path, line: int, raw: list[str], named: int) -> list[str]:
    """``raw``'s cells under the header's ``named`` columns; a :class:`DataFileError` where a cell
    after them, under a column with no name, holds text (which column would it be?)."""
    for position, cell in enumerate(raw[named:], start=named + 1):
        if cell.strip():
            raise DataFileError(
                path,
                f"a column with no name (column {position}) holds {excerpt(cell.strip())!r}",
                line=line,
                fix="name that column on the header line, or delete the cell",
            )
    return raw[:named]


def _cell_count_error(path: Path, line: int, found: int, expected: int, *, cut: bool) -> DataFileError:
    """A row of ``found`` tab-separated cells under a header of ``expected`` (``cut``: the file's
    last line, with no line end: the file looks cut short)."""
    if cut and found < expected:
        return DataFileError(
            path,
            f"the last row has {found} cells, the header {expected}, and no line end: the file looks "
            "cut short",
            line=line,
            fix="copy the whole table again",
        )
    return DataFileError(
        path,
        f"row has {found} cell{'' if found == 1 else 's'}, the header {expected}",
        line=line,
        fix="write one cell per header column, separated by single tabs (n/r for a figure not given); "
        "a tab typed inside a cell (quoted or not) splits it, and an editor that trims trailing "
        "whitespace drops the tabs of empty last cells",
    )


def is_missing(text: str) -> bool:
    """Whether a cell says 'not reported' in one of the table's ways."""
    lowered = text.strip().lower()
    return lowered in MISSING or lowered.startswith(_MISSING_FIRST)


def format_keys(text: str) -> str:
    """A precision cell in lower case with its spelled-out number formats replaced by the
    readers' keys (``float8 rowwise`` -> ``fp8 rowwise``, ``torch.bfloat16`` -> ``torch.bf16``).

    >>> format_keys("Float8 (torchao, tensorwise)"), format_keys("FP8 (E4M3)"), format_keys("half")
    ('fp8 (torchao, tensorwise)', 'fp8 (fp8)', 'fp16')
    >>> format_keys("FP8-MX"), format_keys("MX FP8"), format_keys("MXFP8 (FP8-MX)")
    ('mxfp8', 'mxfp8', 'mxfp8 (mxfp8)')
    """
    lowered = text.strip().lower()
    for spelled, key in _SPELLED_FORMATS:
        lowered = spelled.sub(key, lowered)
    return lowered


def first_number(text: str) -> float | None:
    """The first number in ``text``, honoring a K/M/B/T suffix right after it
    (``2.664M`` -> 2.664e6, ``1,513`` -> 1513); ``None`` if there is none."""
    match = _NUMBER.search(text)
    if match is None:
        return None
    value = float(match.group(0).replace(",", ""))
    if not math.isfinite(value):
        raise RowError(f"{excerpt(match.group(0))!r} is too large to be a number")
    after = text[match.end() : match.end() + 1].lower()
    if after in DECIMAL_SUFFIXES and not text[match.end() : match.end() + 2].lower().endswith(("b/", "bp")):
        value *= DECIMAL_SUFFIXES[after]
    return value


def size_cell(text: str, default: int | None = None) -> int | None:
    """A size sources round to powers of two (a sequence length, a token count, a batch, a GPU
    count): as :func:`integer_cell`, but a K or M right after the number is 1024 or 1024**2
    (``8K`` -> 8192, ``128k context`` -> 131072, ``16K H100s`` -> 16384).

    >>> size_cell("8K"), size_cell("32k tokens"), size_cell("1,000"), size_cell("n/r", 4096)
    (8192, 32768, 1000, 4096)
    """
    if is_missing(text):
        return default
    match = _NUMBER.search(text)
    if match is None:
        return default
    binary = BINARY_SUFFIXES.get(text[match.end() : match.end() + 1].lower())
    if binary is None:
        return integer_cell(text, default)
    value = float(match.group(0).replace(",", "")) * binary
    if not math.isfinite(value):
        raise RowError(f"{excerpt(match.group(0))!r} is too large to be a number")
    if value < 0 or value != int(value):
        raise RowError(f"{excerpt(text)!r} is not a whole number >= 0")
    return int(value)


# The cells a parallel layout is written in; a row may put several degrees in one (``TP8 EP8``).
_PARALLEL_CELLS: Final = ("TP", "PP", "CP", "DP", "EP", "VPP", "sharding")


# A parallel degree's flag or config key spelled out (``-``, ``_`` or spaces between the words), for
# training and serving rows alike: Megatron-LM's ``--tensor-model-parallel-size 8`` and
# ``--expert-model-parallel-size``, Megatron-Core and NeMo's ``tensor_model_parallel_size=8``
# (megatron/training/arguments.py), torchtitan's ``tensor_parallel_degree = 8`` (its job config's
# ``[parallelism]``), vLLM's ``--tensor-parallel-size`` / ``--pipeline-parallel-size`` /
# ``--data-parallel-size`` (vllm/engine/arg_utils.py), a table's ``Tensor Model Parallel Size``,
# TensorRT-LLM's LLM API ``moe_expert_parallel_size`` (tensorrt_llm/llmapi/llm_args.py). The
# experts' own TP (Megatron's ``--expert-tensor-parallel-size``, TensorRT-LLM's
# ``moe_tensor_parallel_size``) is ETP, not TP, and the virtual pipeline's size VPP, not PP.
_PARALLEL_SIZE = r"parallel(?:ism)?[\s_-]+(?:size|degree)"
DEGREE_FLAGS: Final = {
    "tp": rf"(?<!expert[\s_-])(?<!moe[\s_-])tensor[\s_-]+(?:model[\s_-]+)?{_PARALLEL_SIZE}",
    "pp": rf"(?<!virtual[\s_-])pipeline[\s_-]+(?:model[\s_-]+)?{_PARALLEL_SIZE}",
    "cp": rf"context[\s_-]+{_PARALLEL_SIZE}",
    "dp": rf"data[\s_-]+{_PARALLEL_SIZE}",
    "ep": rf"expert[\s_-]+(?:model[\s_-]+)?{_PARALLEL_SIZE}",
    # also said without "size": ``expert TP 4``, ``expert tensor parallel 4``
    "etp": rf"expert[\s_-]+(?:tensor[\s_-]+(?:model[\s_-]+)?(?:{_PARALLEL_SIZE}|parallel(?:ism)?)|tp)",
    "vpp": rf"virtual[\s_-]+pipeline[\s_-]+(?:model[\s_-]+)?{_PARALLEL_SIZE}",
}


# a parallel degree written with its label (``TP1``, ``dp=4``): a number of that degree, no other
LABELLED_DEGREES: Final = re.compile(r"\b(?:tp|pp|dp|cp|ep|etp|sp)\s*[=:]?\s*\d+(?![\w.])", re.IGNORECASE)


def degree_cell(row: PublishedRow, column: str, default: int | None = None) -> int | None:
    """A parallel degree (``TP``, ``PP``, ``CP``, ``EP``): its own cell's leading number (``8``,
    ``1 for attention (--tp 8 ...)``) or the degree it writes with its label (``TP=8``, ``tp8``),
    else the degree labelled in another parallel cell (``TP8 EP8`` in the TP cell gives EP 8), else
    ``default``."""
    label = re.compile(rf"\b{column}\s*[=:]?\s*(\d+)(?![\d.])", re.IGNORECASE)
    own = row.text(column)
    if re.match(r"\s*\d", own):
        return integer_cell(own, default)
    found = label.search(own)
    if found is not None:
        return _labelled(found.group(1))
    # a number another degree's label holds is not this one's (``yes (-ep, TP1 DP4 EP)`` is no EP 1)
    value = integer_cell(LABELLED_DEGREES.sub(" ", own))
    if value is not None:
        return value
    for other in _PARALLEL_CELLS:
        found = label.search(row.text(other)) if other != column else None
        if found is not None:
            return _labelled(found.group(1))
    return default


def _labelled(digits: str) -> int:
    """A degree written after its label (the ``8`` of ``TP8``), of at most 18 digits: ``int()``
    refuses a string of over 4,300, and no degree is near 10^18."""
    if len(digits.lstrip("0")) > 18:
        raise RowError(f"{excerpt(digits)!r} is too large to be a parallel degree")
    return int(digits)


def parenthesized_number(text: str) -> float | None:
    """A number inside parentheses (``4h? (8192)`` -> 8192), else ``None``."""
    match = re.search(r"\(([^)]*)\)", text)
    return first_number(match.group(1)) if match else None


def integer_cell(text: str, default: int | None = None) -> int | None:
    """An integer setting: ``8``, ``1 (recalled)``, ``24?``; ``default`` when missing."""
    if is_missing(text):
        return default
    value = first_number(text)
    if value is None:
        return default
    if value < 0 or value != int(value):
        raise RowError(f"{excerpt(text)!r} is not a whole number >= 0")
    return int(value)
