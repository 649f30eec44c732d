"""Data files: safe TOML loading and typed fields with errors that name the fix.

Data files put the unit in every key (``bandwidth_tb_per_s``, ``nominal_gb``,
``printed_tflop_per_s``). :meth:`Fields.quantity` looks for a base name with
any suffix of the wanted dimension and converts it to base SI, so a user may
write ``usable_gib = 132`` or ``usable_gb = 141.7`` and both mean what they say.
"""

from __future__ import annotations

import copy
import json
import math
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import numpy as np

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

from lightspeed import files
from lightspeed.errors import DataFileError, UserInputError
from lightspeed.records import Record

# dimension -> {key suffix: multiplier to base SI}
UNIT_SUFFIXES: Final[dict[str, dict[str, float]]] = {
    "bytes": {
        "bytes": 1.0,
        "kb": 1e3,
        "mb": 1e6,
        "gb": 1e9,
        "tb": 1e12,
        "kib": 2.0**10,
        "mib": 2.0**20,
        "gib": 2.0**30,
        "tib": 2.0**40,
    },
    "bytes_per_s": {
        "bytes_per_s": 1.0,
        "mb_per_s": 1e6,
        "gb_per_s": 1e9,
        "tb_per_s": 1e12,
        "gib_per_s": 2.0**30,
        "gbit_per_s": 1e9 / 8.0,
        "tbit_per_s": 1e12 / 8.0,
    },
    "per_s": {  # FLOP/s or OP/s
        "flop_per_s": 1.0,
        "gflop_per_s": 1e9,
        "tflop_per_s": 1e12,
        "pflop_per_s": 1e15,
        "eflop_per_s": 1e18,
        "top_per_s": 1e12,
        "pop_per_s": 1e15,
    },
    "seconds": {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9},
    "watts": {"w": 1.0, "kw": 1e3, "mw": 1e6},
    "hertz": {"hz": 1.0, "mhz": 1e6, "ghz": 1e9},
}

_DIMENSION_HINT: Final[dict[str, str]] = {
    "bytes": "_gb, _gib, _tb, _mb, _mib or _bytes",
    "bytes_per_s": "_gb_per_s, _tb_per_s, _gbit_per_s or _bytes_per_s",
    "per_s": "_tflop_per_s, _pflop_per_s, _top_per_s or _flop_per_s",
    "seconds": "_s, _ms, _us or _ns",
    "watts": "_w or _kw",
    "hertz": "_mhz, _ghz or _hz",
}


# What a figure of each dimension can physically be, in base SI, beyond being above 0: no memory
# or link moves less than 1 MB/s or more than 1 EB/s, no chip computes below 1 MFLOP/s, no clock
# ticks below 1 kHz or above 1 THz. A value outside is a typo or a unit slip (1e-300 TB/s).
PHYSICAL_RANGES: Final[dict[str, tuple[float, float, str]]] = {
    "bytes_per_s": (1e6, 1e18, "1 MB/s to 1 EB/s"),
    "per_s": (1e6, 1e21, "1 MFLOP/s to 1 ZFLOP/s"),
    "hertz": (1e3, 1e12, "1 kHz to 1 THz"),
    "bytes": (1.0, 2.0**60, "1 byte to 1 EiB"),
    "watts": (1e-3, 1e15, "1 mW to 1 PW"),
}


class Fields:
    """A view of one TOML table that raises :class:`DataFileError` on bad fields."""

    def __init__(self, path: str, data: Mapping[str, Any], prefix: str = "") -> None:
        self.path = path
        self.data = data
        self.prefix = prefix

    def _name(self, key: str) -> str:
        return f"{self.prefix}{key}"

    # How a file of another form (a JSON config.json) words its errors: what a table is called,
    # the fix in its own syntax, and a required key that is absent.
    table_kind = "a table"

    def _fix(self, key: str, toml: str, shape: str) -> str:
        """The fix for a wrong ``key``: ``toml`` here; a JSON view writes ``"key": shape``."""
        return toml

    def _absent(self, key: str, shape: str) -> DataFileError | None:
        """The error for a required ``key`` that is absent where this form calls it missing;
        ``None`` leaves it to the type check (TOML files)."""
        return None

    def has(self, key: str) -> bool:
        """Whether ``key`` is present."""
        return key in self.data

    def table(self, key: str, required: bool = True) -> Fields | None:
        """A sub-table; ``None`` when optional and absent."""
        value = self.data.get(key)
        if value is None:
            if required:
                raise self._absent(key, "{...}") or DataFileError(
                    self.path, "missing table", field=self._name(key), fix=f"add a [{self._name(key)}] table"
                )
            return None
        if not isinstance(value, Mapping):
            raise DataFileError(
                self.path,
                f"expected {self.table_kind}",
                field=self._name(key),
                value=value,
                fix=self._fix(key, f"write [{self._name(key)}] with keys under it", "{...}"),
            )
        return type(self)(self.path, value, prefix=f"{self._name(key)}.")

    def tables(self, key: str) -> dict[str, Fields]:
        """Every sub-table of table ``key`` by name (empty when absent)."""
        outer = self.table(key, required=False)
        if outer is None:
            return {}
        result: dict[str, Fields] = {}
        for name in outer.data:
            inner = outer.table(name)
            assert inner is not None
            result[name] = inner
        return result

    def array_of_tables(self, key: str) -> list[Fields]:
        """Entries of ``[[key]]`` (empty when absent)."""
        value = self.data.get(key, [])
        if not isinstance(value, list) or not all(isinstance(item, Mapping) for item in value):
            raise DataFileError(
                self.path,
                "expected an array of tables",
                field=self._name(key),
                fix=f"write each entry as [[{self._name(key)}]]",
            )
        return [
            Fields(self.path, item, prefix=f"{self._name(key)}[{index}].") for index, item in enumerate(value)
        ]

    def string(self, key: str, default: str | None = None) -> str:
        """A required (or defaulted) string."""
        value = self.data.get(key, default)
        if value is None:
            raise self._absent(key, '"..."') or DataFileError(
                self.path, "missing field", field=self._name(key), fix=f'add {key} = "..."'
            )
        if not isinstance(value, str):
            raise DataFileError(
                self.path,
                "expected a string",
                field=self._name(key),
                value=value,
                fix=self._fix(key, f'write {key} = "..."', '"..."'),
            )
        return value

    def choice(self, key: str, allowed: Sequence[str], what: str, default: str | None = None) -> str:
        """A required (or defaulted) string that is one of ``allowed``; ``what`` names it in the
        error (``unknown MoE dispatcher``, with the value and the allowed ones)."""
        value = self.string(key, default)
        if value not in allowed:
            raise DataFileError(
                self.path,
                f"unknown {what}",
                field=self._name(key),
                value=value,
                fix=f"use one of {', '.join(allowed)}",
            )
        return value

    def name(self, key: str) -> str:
        """A required name: a string with something in it (an empty name cannot be looked up)."""
        value = self.string(key)
        if not value.strip():
            raise DataFileError(
                self.path, "empty name", field=self._name(key), fix=f'write {key} = "<a name>"'
            )
        return value.strip()

    def strings(self, key: str) -> tuple[str, ...]:
        """A list of strings (empty when absent)."""
        value = self.data.get(key, [])
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise DataFileError(
                self.path,
                "expected a list of strings",
                field=self._name(key),
                value=value,
                fix=self._fix(key, f'write {key} = ["a", "b"]', '["...", "..."]'),
            )
        return tuple(value)

    def boolean(self, key: str, default: bool | None = None) -> bool:
        """A required (or defaulted) boolean."""
        if key not in self.data and default is None and (absent := self._absent(key, "true or false")):
            raise absent
        value = self.data.get(key, default)
        if not isinstance(value, bool):
            raise DataFileError(
                self.path,
                "expected true or false",
                field=self._name(key),
                value=value,
                fix=self._fix(key, f"write {key} = true or {key} = false", "true or false"),
            )
        return value

    def integer(self, key: str, default: int | None = None, minimum: int = 0) -> int:
        """A required (or defaulted) integer >= ``minimum``."""
        if key not in self.data and default is None and (absent := self._absent(key, "<whole number>")):
            raise absent
        value = self.data.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise DataFileError(
                self.path,
                f"expected a whole number >= {minimum}",
                field=self._name(key),
                value=value,
                fix=self._fix(key, f"write {key} = <integer>", f"<whole number >= {minimum}>"),
            )
        return value

    def schema_version(self, supported: Iterable[int], *, default: int | None = None) -> int:
        """``schema_version``: one of ``supported`` (``default`` when absent, else required).

        A version this lightspeed does not read is refused naming the ones it does, so a file
        written by a newer release is never read as if it were an older one.
        """
        versions = sorted(supported)
        listed = " or ".join(str(version) for version in versions)
        version = self.data.get("schema_version", default)
        if isinstance(version, bool) or not isinstance(version, int) or version not in versions:
            raise DataFileError(
                self.path,
                f"schema_version {version!r} is not one this lightspeed reads ({listed})"
                if version is not None
                else "missing field",
                field=self._name("schema_version"),
                fix=f"write schema_version = {versions[-1]} (or use the lightspeed that wrote the file)",
            )
        return version

    def optional_integer(self, key: str) -> int | None:
        """An integer or ``None`` when absent."""
        return None if key not in self.data else self.integer(key)

    def number(self, key: str, default: float | None = None, positive: bool = True) -> float:
        """A required (or defaulted) finite number (> 0 when ``positive``)."""
        value = self.data.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise DataFileError(
                self.path,
                "expected a number",
                field=self._name(key),
                value=value,
                fix=self._fix(key, f"write {key} = <number>", "<number>"),
            )
        if positive and value <= 0:
            raise DataFileError(
                self.path,
                "expected a positive number",
                field=self._name(key),
                value=value,
                fix=self._fix(key, f"write {key} = <number above 0>", "<number above 0>"),
            )
        return float(value)

    def _quantity_key(self, base: str, dimension: str) -> tuple[str, float] | None:
        found = [
            (f"{base}_{suffix}", factor)
            for suffix, factor in UNIT_SUFFIXES[dimension].items()
            if f"{base}_{suffix}" in self.data
        ]
        if len(found) > 1:
            raise DataFileError(
                self.path,
                "the same figure is given in two units",
                field=self._name(base),
                value=[key for key, _ in found],
                fix="keep one of them",
            )
        return found[0] if found else None

    def quantity(self, base: str, dimension: str) -> float:
        """A required figure ``base_<unit>`` converted to base SI."""
        value = self.optional_quantity(base, dimension)
        if value is None:
            raise DataFileError(
                self.path,
                "missing figure",
                field=self._name(base),
                fix=f"add {base} with a unit suffix ({_DIMENSION_HINT[dimension]})",
            )
        return value

    def optional_quantity(self, base: str, dimension: str) -> float | None:
        """A figure ``base_<unit>`` in base SI, or ``None`` when absent."""
        found = self._quantity_key(base, dimension)
        if found is None:
            return None
        key, factor = found
        value = self.number(key) * factor
        if dimension in PHYSICAL_RANGES:
            low, high, words = PHYSICAL_RANGES[dimension]
            if not low <= value <= high:
                raise DataFileError(
                    self.path,
                    f"outside the physical range of {words}",
                    field=self._name(key),
                    value=self.data[key],
                    fix=f"check the number and its unit suffix ({_DIMENSION_HINT[dimension]})",
                )
        return value

    def unknown_keys(self, allowed: set[str]) -> list[str]:
        """Keys present that are not in ``allowed`` (a typo check)."""
        return sorted(key for key in self.data if key not in allowed)

    def check_source(self, key: str, sources: Mapping[str, object]) -> str:
        """The ``source`` key of this table; it must name an entry of [sources]."""
        source = self.string(key)
        if source not in sources:
            raise DataFileError(
                self.path,
                "source not declared",
                field=self._name(key),
                value=source,
                fix=f"add [sources.{source}] with title and url, or use one of: {', '.join(sorted(sources))}",
            )
        return source


class JsonFields(Fields):
    """A view of one JSON object (a ``config.json``, a command's ``--json`` output read back): a
    missing key is called missing, and each fix is written as JSON (``"vocab_size": <whole
    number>``), not as TOML."""

    table_kind = "a JSON object"

    def _pair(self, key: str, shape: str) -> str:
        """``"key": shape``, and the object it belongs in when nested (``in the "text_config"
        object``)."""
        inside = self.prefix.rstrip(".")
        return f'"{key}": {shape}' + (f' in the "{inside}" object' if inside else "")

    def _fix(self, key: str, toml: str, shape: str) -> str:
        return f"write {self._pair(key, shape)}"

    def _absent(self, key: str, shape: str) -> DataFileError | None:
        return DataFileError(
            self.path, "missing key", field=self._name(key), fix=f"add {self._pair(key, shape)}"
        )

    def present(self, key: str) -> bool:
        """Whether ``key`` holds a value (JSON writes an absent figure as ``null``)."""
        return self.data.get(key) is not None


MAX_DATA_FILE_BYTES: Final = files.DEFAULT_MAX_BYTES
MAX_INT64: Final = 2**63 - 1  # times in ns and counts live in int64 columns


def whole_number(event: Mapping[str, Any], key: str, *, path: object, line: int | None = None) -> int:
    """``event[key]``: a whole number from 0 to the int64 maximum (a time in ns, a count).

    >>> whole_number({"t_ns": 1_700_000_000 * 10**9}, "t_ns", path="log.jsonl", line=3)
    1700000000000000000
    >>> whole_number({"t_ns": 2**64}, "t_ns", path="log.jsonl", line=3)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    lightspeed.errors.DataFileError: log.jsonl:3: expected a whole number from 0 to 9,223,...,807 (int64); ...
    """
    value = event.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_INT64:
        raise DataFileError(
            path,
            f"expected a whole number from 0 to {MAX_INT64:,} (int64)",
            line=line,
            field=key,
            value=value,
        )
    return value


def check_version(
    data: Mapping[str, Any], readable: Iterable[int], *, path: object, what: str, line: int | None = None
) -> int:
    """``data["v"]``, the version of a log or capture line: one this lightspeed reads.

    >>> check_version({}, {1}, path="c.jsonl", what="capture", line=1)
    Traceback (most recent call last):
    ...
    lightspeed.errors.DataFileError: c.jsonl:1: capture has no version; field 'v'; fix: ...
    """
    versions = sorted(readable)
    listed = " or ".join(map(str, versions))
    version = data.get("v")
    if isinstance(version, bool) or version not in versions:
        found = "has no version" if version is None else f"version {version!r} is not {listed}"
        raise DataFileError(
            path,
            f"{what} {found}",
            line=line,
            field="v",
            fix=f"this lightspeed reads version {listed}: read the file with the lightspeed that wrote it",
        )
    return int(version)


def finite_number(
    event: Mapping[str, Any], key: str, *, path: object, line: int | None = None, default: float | None = None
) -> float:
    """``event[key]`` (``default`` when absent): a finite number >= 0."""
    value = event.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < math.inf:
        raise DataFileError(path, "expected a finite number >= 0", line=line, field=key, value=value)
    return float(value)


def normalize_name(name: str) -> str:
    """Canonical lookup form of a hardware or model name: lower case, spaces and
    underscores as hyphens.

    >>> normalize_name("NVIDIA H100 80GB HBM3")
    'nvidia-h100-80gb-hbm3'
    >>> normalize_name("Llama_3.1 8B")
    'llama-3.1-8b'
    """
    return "-".join(name.strip().lower().replace("_", " ").split())


def merge_tables(
    base: Mapping[str, Any],
    override: Mapping[str, Any],
    *,
    quantity: Callable[[str], str | None] | None = None,
) -> dict[str, Any]:
    """``base`` with ``override``'s keys laid over it, tables merged key by key (what an
    ``extends`` record means); neither argument is changed. With ``quantity`` (a key's quantity
    without its unit, e.g. ``usable`` for ``usable_gib``), an overriding key drops the base's
    other spellings of the same quantity.

    >>> merge_tables({"a": 1, "t": {"x": 1, "y": 2}}, {"t": {"y": 3}})
    {'a': 1, 't': {'x': 1, 'y': 3}}
    """
    merged = copy.deepcopy(dict(base))
    for key, value in override.items():
        measured = quantity(key) if quantity is not None else None
        if measured is not None and quantity is not None:
            for old in [k for k in merged if k != key and quantity(k) == measured]:
                del merged[old]
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = merge_tables(merged[key], value, quantity=quantity)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def expand_paths(paths: Iterable[Path]) -> list[Path]:
    """Files named directly plus every ``*.toml`` below named folders (``--catalog`` paths)."""
    found: list[Path] = []
    for path in paths:
        files.check_input(
            path, what="catalog TOML file or folder", fix="check the --catalog path", folder_ok=True
        )
        found.extend(sorted(path.rglob("*.toml")) if path.is_dir() else [path])
    return found


# Containers inside containers (arrays, objects, inline tables, dotted keys). Real files nest
# fewer than ten levels; the parsers recurse once per level and fail near 1,000.
MAX_NESTING_DEPTH: Final = 100
_JSON_STRING: Final = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_TOML_STRING_OR_COMMENT: Final = re.compile(
    rb'"""(?:[^\\]|\\.)*?"""|\'\'\'.*?\'\'\'|"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'|#[^\n]*', re.DOTALL
)
_NOT_BRACKET: Final = re.compile(rb"[^\[\]{}]+")


def read_bounded(path: Path, *, max_bytes: int = MAX_DATA_FILE_BYTES, what: str = "data file") -> bytes:
    """The bytes of ``path``: a regular file, at most ``max_bytes`` (see :mod:`lightspeed.files`).

    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "x.json"
    >>> _ = path.write_text("[1]")
    >>> read_bounded(path)
    b'[1]'
    """
    return files.read_bounded(path, max_bytes=max_bytes, what=what)


def read_text(path: Path, *, max_bytes: int = MAX_DATA_FILE_BYTES, what: str = "data file") -> str:
    """The UTF-8 text of ``path`` (bounded as :func:`read_bounded`); other bytes are a clear error."""
    return files.read_text(path, max_bytes=max_bytes, what=what)


def nesting_depth(data: bytes, *, toml: bool = False) -> int:
    """How deep containers nest in JSON (or TOML) text, strings and comments left out.

    Computed with C-speed scans (regular expressions, numpy), never by recursion.

    >>> nesting_depth(b'{"a": [[1], "[[["]}')
    3
    """
    if data.count(b"[") + data.count(b"{") <= 1:
        return min(1, data.count(b"[") + data.count(b"{"))
    text = (_TOML_STRING_OR_COMMENT if toml else _JSON_STRING).sub(b"", data)
    dotted = max((line.count(b".") for line in text.splitlines()), default=0) if toml else 0
    brackets = np.frombuffer(_NOT_BRACKET.sub(b"", text), dtype=np.uint8)
    if brackets.size == 0:
        return dotted
    steps = np.where((brackets == ord("[")) | (brackets == ord("{")), 1, -1)
    return int(np.cumsum(steps).max()) + dotted


def check_nesting(
    data: bytes,
    *,
    path: object,
    line: int | None = None,
    toml: bool = False,
    max_depth: int = MAX_NESTING_DEPTH,
) -> None:
    """Raise :class:`DataFileError` when ``data`` nests deeper than ``max_depth`` levels."""
    if data.count(b"[") + data.count(b"{") + (data.count(b".") if toml else 0) <= max_depth:
        return  # cannot be deeper: the common case costs two C-level counts
    depth = nesting_depth(data, toml=toml)
    if depth > max_depth:
        raise DataFileError(
            path,
            f"nested {depth} levels deep, above the limit of {max_depth}",
            line=line,
            fix="real data files nest fewer than 10 levels; check that this is the right file",
        )


def load_json(
    path: Path, *, max_bytes: int = MAX_DATA_FILE_BYTES, what: str = "JSON file", fix: str = ""
) -> Any:
    """Parse one JSON file with a size and a depth bound; NaN and Infinity are refused.

    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "x.json"
    >>> _ = path.write_text('{"a": [1, 2]}')
    >>> load_json(path)
    {'a': [1, 2]}
    """
    data = files.strip_bom(read_bounded(path, max_bytes=max_bytes, what=what))
    if not data.strip():
        raise DataFileError(path, "file is empty", fix=fix or f"write the {what} into it")
    check_nesting(data, path=path)
    try:
        return json.loads(data.decode("utf-8"), parse_constant=_reject_constant)
    except json.JSONDecodeError as error:
        raise DataFileError(
            path,
            f"not valid JSON ({error.msg})",
            line=error.lineno,
            fix=fix or "correct the syntax at that line",
        ) from None
    except UnicodeDecodeError:
        raise DataFileError(path, "file is not UTF-8 text", fix=fix or "save it as UTF-8 JSON") from None
    except (ValueError, RecursionError) as error:
        if _is_digit_limit(error):
            raise too_many_digits(path, data, "JSON") from None
        raise DataFileError(path, f"not valid JSON ({error})", fix=fix or "correct the file") from None


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number JSON allows")


# Python reads a whole number of at most this many digits (sys.set_int_max_str_digits, 4,300 by
# default: reading more takes quadratic time); no figure in a data file has more than 20.
MAX_INTEGER_DIGITS: Final = getattr(sys, "get_int_max_str_digits", lambda: 4300)() or 4300
# a whole number (not a float's digits) longer than that, TOML's 1_000 separators allowed
_LONG_INTEGER: Final = re.compile(rb"(?<![\d_.])\d(?:_?\d){%d,}(?![\d_.eE])" % MAX_INTEGER_DIGITS)


def _is_digit_limit(error: BaseException) -> bool:
    """Whether ``error`` is Python's refusal of an integer of too many digits (``int("9" * 5000)``)."""
    return isinstance(error, ValueError) and "integer string conversion" in str(error)


def too_many_digits(path: object, data: bytes | str, form: str) -> DataFileError:
    """The error for a whole number of more digits than Python reads (:data:`MAX_INTEGER_DIGITS`),
    naming the line of the first such number in ``data`` (``form``: ``JSON``, ``TOML``)."""
    text = data.encode("utf-8", "replace") if isinstance(data, str) else data
    strings = _TOML_STRING_OR_COMMENT if form == "TOML" else _JSON_STRING
    text = strings.sub(lambda match: b"\n" * match.group().count(b"\n"), text)  # lines kept
    found = _LONG_INTEGER.search(text)
    line = text.count(b"\n", 0, found.start()) + 1 if found is not None else None
    digits = f"{len(found.group().replace(b'_', b'')):,} digits" if found is not None else "too many digits"
    return DataFileError(
        path,
        f"not valid {form} (a whole number of {digits}, above the {MAX_INTEGER_DIGITS:,} that can be read)",
        line=line,
        fix="write the number the source gives (no figure needs more than 20 digits); check that this is "
        "the right file",
    )


def toml_value(value: Any, *, wrap_at: int | None = None) -> str:
    """``value`` (a bool, int, finite float, string, or a list or tuple of them) written as TOML;
    a list longer than ``wrap_at`` characters is written one item per line.

    >>> toml_value(["a", 1, 2.5, True])
    '["a", 1, 2.5, true]'
    >>> print(toml_value(["abc", "def"], wrap_at=10))
    [
        "abc",
        "def",
    ]
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise UserInputError(f"{value} cannot be written to TOML")
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # a JSON string is a valid TOML basic string
    if isinstance(value, list | tuple):
        items = [toml_value(item) for item in value]
        one_line = "[" + ", ".join(items) + "]"
        if wrap_at is None or len(one_line) <= wrap_at:
            return one_line
        return "[\n" + "".join(f"    {item},\n" for item in items) + "]"
    raise TypeError(f"cannot write {type(value).__name__} to TOML")


def load_toml(path: Path | str, *, what: str = "data file") -> dict[str, Any]:
    """Parse one TOML file with a size and a depth bound; a syntax error names the file, line and fix
    (``path`` a path or its text, as the library's loaders take it)."""
    path = Path(path)
    data = files.strip_bom(read_bounded(path, what=what))
    if not data.strip():
        raise DataFileError(path, "file is empty", fix=f"write the {what} into it")
    check_nesting(data, path=path, toml=True)
    try:
        parsed: dict[str, Any] = tomllib.loads(data.decode("utf-8"))
    except tomllib.TOMLDecodeError as error:
        raise DataFileError(path, f"invalid TOML ({error})", fix="correct the syntax at that line") from None
    except UnicodeDecodeError:
        raise DataFileError(path, "file is not UTF-8 text", fix="save it as UTF-8 TOML") from None
    except ValueError as error:
        if _is_digit_limit(error):
            raise too_many_digits(path, data, "TOML") from None
        raise
    except RecursionError:
        raise DataFileError(
            path, "nested too deeply to parse", fix="check that it is the right file"
        ) from None
    return parsed


@dataclass(frozen=True)
class Source(Record):
    """A document figures were read from: its title, address and a note."""

    key: str
    title: str
    url: str = ""
    note: str = ""

    @property
    def citation(self) -> str:
        """``title (url)``, or the title alone when there is no address."""
        return f"{self.title} ({self.url})" if self.url else self.title


def parse_sources(fields: Fields) -> dict[str, Source]:
    """The ``[sources.<key>]`` tables of a data file; at least one is required."""
    sources = {
        key: Source(
            key=key, title=table.string("title"), url=table.string("url", ""), note=table.string("note", "")
        )
        for key, table in fields.tables("sources").items()
    }
    if not sources:
        raise DataFileError(
            fields.path,
            "record has no sources",
            field="sources",
            fix='add [sources.<key>] with title = "..." and url = "..."',
        )
    return sources
