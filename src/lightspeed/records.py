"""Base for the frozen dataclasses every library function returns.

``to_dict()`` turns a record into plain JSON types (dicts, lists, str, float,
int, bool, None) so that every CLI command can offer ``--json`` without
per-record code. Non-finite floats become ``None`` because JSON has no NaN.

>>> from dataclasses import dataclass
>>> @dataclass(frozen=True)
... class Point(Record):
...     x_s: float
...     tags: tuple[str, ...] = ()
>>> Point(x_s=1.5, tags=("a",)).to_dict()
{'x_s': 1.5, 'tags': ['a']}

The same concept at other layers: :mod:`lightspeed.catalog.records` (hardware records) and
:mod:`lightspeed.store.records` (records as stored).
"""

from __future__ import annotations

import dataclasses
import enum
import math
from collections.abc import Mapping
from pathlib import PurePath
from typing import Any, TypeAlias

# A decoded JSON object (a record's ``to_dict()``, a stored payload): its values are
# JSON types, checked where they are read. Public signatures name this, never ``Any``.
JsonObject: TypeAlias = Mapping[str, Any]
JsonDict: TypeAlias = dict[str, Any]


def to_jsonable(value: Any) -> Any:
    """Convert records, mappings, sequences, enums, paths and numpy scalars to JSON types."""
    kind = type(value)  # the common JSON types first: a large report holds millions of them
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if kind is float:
        return value if math.isfinite(value) else None
    if kind is dict or isinstance(value, Mapping):
        return _mapping(value)
    if kind is list or kind is tuple:
        return [to_jsonable(item) for item in value]
    if isinstance(value, Record):
        return value.to_dict()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _mapping({f.name: getattr(value, f.name) for f in dataclasses.fields(value)})
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return int(value)  # an int subclass (an IntEnum) as the plain number JSON encoders take
    if isinstance(value, float):
        return float(value) if math.isfinite(value) else None  # numpy.float64 is a float subclass
    if isinstance(value, enum.Enum):
        return to_jsonable(value.value)
    if isinstance(value, PurePath):
        return str(value)
    if isinstance(value, list | tuple | set | frozenset):
        return [to_jsonable(item) for item in value]
    item = getattr(value, "item", None)  # numpy scalar
    if callable(item):
        return to_jsonable(item())
    tolist = getattr(value, "tolist", None)  # numpy array
    if callable(tolist):
        return to_jsonable(tolist())
    raise TypeError(f"cannot convert {type(value).__name__} to JSON")


def _mapping(value: Mapping[Any, Any]) -> JsonDict:
    converted = {}
    for key, item in value.items():
        name = str(key)
        converted[name] = _counted(name, to_jsonable(item))
    return converted


def _counted(key: str, value: Any) -> Any:
    """``value`` with byte counts (a field whose name ends in ``_bytes``) as whole numbers: bytes
    are whole, and a model's reserve of 5.5% of 80 GB is 4,713,107,948 bytes, not 4,713,107,947.52.
    A key that is not a name is a label, not a field (``train/memory_per_gpu_bytes`` keys the error
    summary of that metric: fractions, never rounded)."""
    return whole_numbers(value) if key.endswith("_bytes") and key.isidentifier() else value


def whole_numbers(value: Any) -> Any:
    """Finite floats rounded to ``int``, inside lists and dicts too (JSON types in, JSON types out).

    >>> whole_numbers({"weights": 8.8e9, "reserved": 4713107947.52, "note": None})
    {'weights': 8800000000, 'reserved': 4713107948, 'note': None}
    """
    if type(value) is float:
        return round(value) if math.isfinite(value) else value
    if isinstance(value, dict):
        return {key: whole_numbers(item) for key, item in value.items()}
    if isinstance(value, list):
        return [whole_numbers(item) for item in value]
    return value


class Record:
    """Mixin for frozen dataclasses: ``to_dict()`` with JSON-safe values (byte counts whole)."""

    def to_dict(self) -> JsonDict:
        fields = dataclasses.fields(self)  # type: ignore[arg-type]  # a mixin for dataclasses
        return {
            field.name: _counted(field.name, to_jsonable(getattr(self, field.name)))
            for field in fields
            if not field.name.startswith("_")
        }
