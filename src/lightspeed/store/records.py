"""What goes into the results store and what comes out of it.

One layout serves every kind of result (``benchmark``, ``prediction``,
``goodput``, ...): a named metric with its value, unit and speed of light, plus
a JSON payload with whatever else that kind needs. Values are base SI
(``unit`` says which: ``FLOP/s``, ``B/s``, ``s``).

The same concept at other layers: :mod:`lightspeed.records` (the base every result record derives
from) and :mod:`lightspeed.catalog.records` (hardware records).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Final, TypeAlias

from lightspeed.errors import StoreError, UserInputError
from lightspeed.records import JsonDict, JsonObject, Record
from lightspeed.units import fraction_of_sol, unit_direction

# A JSON value as stored: an object for everything lightspeed writes; a string for text that was
# not JSON (kept whole by migration 3, or damaged by hand); any other JSON value in principle.
StoredJson: TypeAlias = JsonObject | list[Any] | str | int | float | bool | None
KIND_PATTERN: Final = re.compile(r"[a-z][a-z0-9_-]{0,31}")
KNOWN_KINDS: Final = ("benchmark", "prediction", "goodput", "trace", "monitor")


def check_kind(kind: str) -> str:
    """``kind`` if it is a short lowercase word (``benchmark``, ``prediction`` ...)."""
    if not KIND_PATTERN.fullmatch(kind):
        raise UserInputError(
            f"record kind {kind!r} is not a short lowercase word; use e.g. {', '.join(KNOWN_KINDS)}"
        )
    return kind


def check_known_kind(kind: str, *, option: str = "--kind") -> str:
    """``kind`` if it is one lightspeed writes; else one line listing them (a filter on a typo
    would silently match nothing)."""
    if kind not in KNOWN_KINDS:
        raise UserInputError(f"{option} {kind!r} is not a kind of run; use one of {', '.join(KNOWN_KINDS)}")
    return kind


def known_direction(unit: str, payload: StoredJson = None) -> bool | None:
    """Whether a smaller value is better, as far as the record says: the payload's
    ``lower_is_better`` when it holds a boolean one, else what the unit decides
    (:func:`unit_direction`), else ``None`` (unknown).

    >>> known_direction("ms/token"), known_direction("count")
    (True, None)
    >>> known_direction("count", {"lower_is_better": True})
    True
    """
    hint = payload.get("lower_is_better") if isinstance(payload, dict) else None
    return hint if isinstance(hint, bool) else unit_direction(unit)


def lower_is_better(unit: str, payload: StoredJson = None) -> bool:
    """Whether a smaller value is better: :func:`known_direction`, else higher is better.

    >>> (lower_is_better("s"), lower_is_better("B/s"), lower_is_better("s", {"lower_is_better": False}))
    (True, False, False)
    >>> lower_is_better("kWh"), lower_is_better("ms/token"), lower_is_better("count")
    (True, True, False)
    """
    return known_direction(unit, payload) is True


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


class UnusablePayloadError(StoreError):
    """A stored payload that is not a JSON object was asked for as one."""


@dataclass(frozen=True)
class StoredRecord(Record):
    """One record read back from the store, with its run and environment.

    ``payload`` and ``fingerprint`` are the stored JSON objects. A stored value that is not an
    object (a JSON string kept by migration 3 for text that was not JSON, or text damaged by
    hand) is kept whole in ``stored_payload`` / ``stored_fingerprint``: exports and pushes carry
    it as it is, and reading it as an object raises :class:`UnusablePayloadError` naming the run
    and the record (one line, exit 2 in the CLI).
    """

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
    stored_fingerprint: StoredJson
    stored_payload: StoredJson

    @property
    def payload(self) -> JsonObject:
        """The payload as a JSON object (:class:`UnusablePayloadError` when it is not one)."""
        return self._object(self.stored_payload, "payload")

    @property
    def fingerprint(self) -> JsonObject:
        """The run's environment as a JSON object (:class:`UnusablePayloadError` when it is not one)."""
        return self._object(self.stored_fingerprint, f"environment {self.fingerprint_id}")

    def _object(self, value: StoredJson, what: str) -> JsonObject:
        if isinstance(value, dict):
            return value
        raise UnusablePayloadError(
            f"run {self.run_id} record {self.record_id} ({self.name}): its {what} is not a JSON object "
            f"but {_shown(value)}, kept as it was stored; fix: leave this run out, or correct that "
            "row in the database"
        )

    @property
    def lower_is_better(self) -> bool:
        """Whether a smaller value is better (see :func:`lower_is_better`)."""
        return lower_is_better(self.unit, self.stored_payload)

    @property
    def fraction_of_sol(self) -> float | None:
        """The fraction of the speed of light reached (see :func:`fraction_of_sol`): ``value / sol``,
        or ``sol / value`` for a lower-is-better metric such as a time or a latency per token;
        ``None`` when neither the payload nor the unit says which way is better
        (:func:`known_direction`): a ratio taken the wrong way round would read as its inverse."""
        direction = known_direction(self.unit, self.stored_payload)
        if direction is None:
            return None
        return fraction_of_sol(self.value, self.sol, lower_better=direction)

    def to_dict(self) -> JsonDict:
        """Every field (``payload`` and ``fingerprint`` as stored), plus the derived
        ``fraction_of_sol`` (the CSV export's column of that name)."""
        data = super().to_dict()
        data["fingerprint"] = data.pop("stored_fingerprint")
        data["payload"] = data.pop("stored_payload")
        return {**data, "fraction_of_sol": self.fraction_of_sol}


def _shown(value: StoredJson) -> str:
    """A stored value for a message: its type and the start of its text."""
    text = value if isinstance(value, str) else repr(value)
    short = text if len(text) <= 40 else text[:37] + "..."
    return f"{type(value).__name__} {short!r}"


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
