"""JSON conversion of records: byte counts are whole numbers however the value is held."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lightspeed.records import Record, to_jsonable


@dataclass(frozen=True)
class _Plain:
    memory_bytes: float


@dataclass(frozen=True)
class _Held(Record):
    figures: dict[str, float]


def _exactly(value: Any) -> Any:
    """``value`` with each number's type beside it: 8e10 == 80000000000 in Python, not in JSON."""
    if isinstance(value, dict):
        return {key: _exactly(item) for key, item in value.items()}
    return (type(value).__name__, value)


def test_byte_counts_are_whole_in_plain_dicts_dataclasses_and_records() -> None:
    """A *_bytes value is an int in JSON (80e9 was written 80000000000.0, a reserve of 5.5% of
    80 GB of weights 4713107947.52), whether it sits in a plain dict (``hw list``), a dataclass or a
    record; other floats stay floats."""
    assert _exactly(to_jsonable({"memory_bytes": 80e9, "share": 0.5})) == {
        "memory_bytes": ("int", 80_000_000_000),
        "share": ("float", 0.5),
    }
    assert _exactly(to_jsonable(_Plain(memory_bytes=4713107947.52))) == {"memory_bytes": ("int", 4713107948)}
    assert _exactly(to_jsonable(_Held(figures={"memory_bytes": 24e9}))["figures"]) == {
        "memory_bytes": ("int", 24_000_000_000)
    }
