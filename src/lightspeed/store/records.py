"""What goes into the results store and what comes out of it.

One layout serves every kind of result (``benchmark``, ``prediction``,
``goodput``, ...): a named metric with its value, unit and speed of light, plus
a JSON payload with whatever else that kind needs. Values are base SI
(``unit`` says which: ``FLOP/s``, ``B/s``, ``s``).

The same concept at other layers: :mod:`lightspeed.records` (the base every result record derives
from) and :mod:`lightspeed.catalog.records` (hardware records).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Final

from lightspeed.errors import UserInputError
from lightspeed.records import JsonDict, JsonObject, Record

KIND_PATTERN: Final = re.compile(r"[a-z][a-z0-9_-]{0,31}")
KNOWN_KINDS: Final = ("benchmark", "prediction", "goodput", "trace", "monitor")


def check_kind(kind: str) -> str:
    """``kind`` if it is a short lowercase word (``benchmark``, ``prediction`` ...)."""
    if not KIND_PATTERN.fullmatch(kind):
        raise UserInputError(
            f"record kind {kind!r} is not a short lowercase word; use e.g. {', '.join(KNOWN_KINDS)}"
        )
    return kind


def _check_text(what: str, text: str) -> None:
    """Refuse text that one of the backends cannot store, alike on every backend."""
    if "\x00" in text:  # PostgreSQL text cannot hold NUL
        raise UserInputError(f"{what} {text!r} holds a NUL character; remove it")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (e.g. bytes decoded with surrogateescape)
        raise UserInputError(f"{what} {text!r} is not valid Unicode; remove the stray surrogate") from None


def check_label(label: str) -> str:
    """``label`` if every backend can store it (no NUL character, valid Unicode)."""
    _check_text("run label", label)
    return label


@dataclass(frozen=True)
class NewRecord(Record):
    """One result to store.

    ``name`` says what was measured or predicted (``gemm fp32 4096x4096x4096``),
    ``metric`` which quantity (``flop_per_s``, ``step_time_s``), ``value`` its
    value in base SI ``unit``; ``sol`` the speed of light in the same unit
    (``None`` when unknown); ``payload`` any JSON-serialisable details.
    """

    name: str
    metric: str
    value: float | None
    unit: str
    sol: float | None = None
    payload: JsonObject = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.name or not self.metric:
            raise UserInputError("a stored record needs a non-empty name and metric")
        for label, text in (("name", self.name), ("metric", self.metric), ("unit", self.unit)):
            _check_text(f"record {label}", text)


@dataclass(frozen=True)
class StoredRecord(Record):
    """One record read back from the store, with its run and environment."""

    record_id: int
    run_id: str
    kind: str
    created_s: float
    name: str
    metric: str
    value: float | None
    unit: str
    sol: float | None
    fingerprint_id: str
    fingerprint: JsonObject
    payload: JsonObject

    @property
    def fraction_of_sol(self) -> float | None:
        """``value / sol`` when both are known and positive, else ``None``."""
        if self.value is None or self.sol is None or self.sol <= 0 or not math.isfinite(self.value):
            return None
        return self.value / self.sol

    def to_dict(self) -> JsonDict:
        """Every field, plus the derived ``fraction_of_sol`` (the CSV export's column of that name)."""
        return {**super().to_dict(), "fraction_of_sol": self.fraction_of_sol}


@dataclass(frozen=True)
class RunSummary(Record):
    """One run: records written together under one id.

    ``completed_s`` is ``None`` while a run is still being written (or when
    its writer died); such runs are hidden unless asked for.
    """

    run_id: str
    kind: str
    label: str
    created_s: float
    completed_s: float | None
    num_records: int
    fingerprint_id: str
    host_name: str

    @property
    def complete(self) -> bool:
        """Whether every record of the run was written."""
        return self.completed_s is not None
