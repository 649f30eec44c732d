"""One chunk of Kineto events as columns: from the compiled scanner, or from msgspec's structs.

:class:`~lightspeed.trace.io.kineto_table.TableBuilder` reads a chunk through
:class:`ChunkColumns` only, so selection, interning, placing and collectives run on
columns whichever way the chunk was read:

- :class:`ScannedChunk`: the compiled scanner (``_kineto_scan``, C) read the chunk's bytes
  into one C row per event with the GIL released, without a Python object per event;
  numpy views its buffer, and a Python ``str`` exists once per distinct name.
- :class:`DecodedChunk`: msgspec decoded the chunk into :class:`Event` structs, whose
  fields are pulled out into columns with C-level ``map``/``np.fromiter``.

:func:`decode_chunk` tries the scanner first; on anything it does not handle exactly (a
type msgspec would reject, an integer outside int64, an escaped or repeated key, damaged
bytes, deep nesting) the scanner raises and the chunk is decoded by msgspec, which gives the exact
values or the exact error message: results and errors never depend on whether the scanner
is built. ``LIGHTSPEED_SCANNER=python`` forces the msgspec path.
"""

from __future__ import annotations

import logging
import os
from abc import ABC, abstractmethod
from functools import cache
from itertools import compress
from operator import attrgetter
from types import ModuleType
from typing import Any, Final, NamedTuple

import msgspec
import numpy as np
import numpy.typing as npt

from lightspeed.errors import UserInputError
from lightspeed.trace.io.kineto_schema import Event, EventArgs, decode_events
from lightspeed.trace.table import F64, GPU_CATEGORIES, I64

_LOG = logging.getLogger(__name__)
SCANNER_VARIABLE: Final = "LIGHTSPEED_SCANNER"
SCANNERS: Final = ("compiled", "python")
I32 = npt.NDArray[np.int32]
Mask = npt.NDArray[np.bool_]

# C-level attribute readers: columns are built with map(), not Python loops.
_TS, _DUR, _CAT, _NAME, _TID, _ARGS = map(attrgetter, ("ts", "dur", "cat", "name", "tid", "args"))
_STREAM, _CORRELATION, _DEVICE, _FLOPS, _COLLECTIVE = map(
    attrgetter, ("stream", "correlation", "device", "flops", "collective")
)


def compiled_scanner() -> ModuleType | None:
    """The compiled scanner module, or None (not built, or ``LIGHTSPEED_SCANNER=python``)."""
    wanted = os.environ.get(SCANNER_VARIABLE, "").strip().lower() or "compiled"
    if wanted not in SCANNERS:
        raise UserInputError(
            f"unknown scanner {wanted!r} (${SCANNER_VARIABLE}); allowed: {', '.join(SCANNERS)}"
        )
    return None if wanted == "python" else _built_scanner()


@cache
def _built_scanner() -> ModuleType | None:
    try:
        from lightspeed.trace.io import _kineto_scan
    except ImportError:
        _LOG.debug("the compiled Kineto scanner is not built: events are decoded by msgspec")
        return None
    return _kineto_scan


def scanner_name() -> str:
    """Which scanner reads Kineto events here: ``compiled`` or ``python`` (msgspec)."""
    return "compiled" if compiled_scanner() is not None else "python"


def scanner_summary() -> str:
    """One line for ``lightspeed doctor``: which scanner reads Kineto events, and why."""
    try:
        compiled = compiled_scanner()
    except UserInputError as error:
        return str(error)
    if compiled is not None:
        return "Kineto events read by the compiled scanner"
    if os.environ.get(SCANNER_VARIABLE, "").strip().lower() == "python":
        return f"Kineto events read by msgspec (${SCANNER_VARIABLE}=python)"
    return "Kineto events read by msgspec: the compiled scanner is not built (reinstall with a C compiler)"


class Ids(NamedTuple):
    """An id column (``tid``, ``stream``): int64 values, and the position and value as written of
    those that are not int64 integers (text, mostly; the builder reads them as HTA does)."""

    values: I64
    others: list[tuple[int, Any]]


class KeptColumns(ABC):
    """The fields of a chunk's kept events (the builder's selection), in chunk order."""

    name_strings: list[str]  # the distinct names and each kept event's index into them,
    name_local: I32 | None  # or (None) one name per kept event
    tid: Ids
    stream: Ids
    correlation: I64
    flop: F64
    collective_positions: list[int]  # kept events with a non-empty collective name

    @abstractmethod
    def exact_ts(self) -> I64 | None:
        """The timestamps as exact integers when every one is written as an integer, else None."""

    @abstractmethod
    def devices(self, which: Mask) -> I64:
        """The ``device`` of the kept events flagged in ``which`` (GPU events)."""

    @abstractmethod
    def args_at(self, position: int) -> EventArgs:
        """The ``args`` of the kept event at ``position`` (collectives and annotations only)."""


class ChunkColumns(ABC):
    """The timed events (with a ``dur``) of one chunk, and what the builder needs of the others."""

    num_events: int  # events in the chunk, timed or not
    rows: I64  # each timed event's position in the chunk
    ts: F64  # absent: NaN
    dur: F64
    category_strings: list[str | None]  # the distinct categories (None: absent or null) and each
    category_local: I32 | None  # timed event's index into them, or (None) one per timed event

    def __len__(self) -> int:
        return self.num_events

    @abstractmethod
    def float_timestamps(self) -> bool:
        """Whether some event's ``ts`` is absent or not written as an integer (HTA then rounds)."""

    @abstractmethod
    def all_ts(self) -> F64:
        """Every event's ``ts`` (NaN when absent): the time unit is guessed from them."""

    @abstractmethod
    def gpu_without_dur(self) -> list[int]:
        """Positions of the GPU events (kernel, copy, set) with a ``ts`` and no ``dur``."""

    @abstractmethod
    def kept(self, keep: Mask) -> KeptColumns:
        """The kept timed events' other fields (``keep``: one flag per timed event)."""

    @abstractmethod
    def event_names(self) -> list[str]:
        """Every event's name, in chunk order (for checks; the builder reads only kept names)."""


def decode_chunk(blob: bytes) -> ChunkColumns:
    """One chunk (the bytes of a JSON array of events): scanned when the scanner handles it, else
    decoded by msgspec, whose errors (``msgspec.DecodeError``, ``ValidationError``) pass through."""
    scanner = compiled_scanner()
    if scanner is not None:
        try:
            return ScannedChunk(blob, scanner.scan(blob))
        except ValueError as error:
            _LOG.debug("chunk decoded by msgspec: the scanner stopped (%s)", error)
    return DecodedChunk(decode_events(blob))


# --- from the compiled scanner -------------------------------------------------------------------


@cache
def _row_dtype() -> np.dtype[Any]:
    """The scanner's row (its FIELDS) as a numpy dtype: each field a strided view of the rows."""
    scanner = _built_scanner()
    assert scanner is not None  # rows exist only where the scanner does
    names, formats, offsets = zip(*scanner.FIELDS, strict=True)
    return np.dtype({"names": names, "formats": formats, "offsets": offsets, "itemsize": scanner.ROW_BYTES})


def _with_none(strings: list[str], local: I32) -> tuple[list[str | None], I32]:
    """Local ids where -1 (absent) becomes an id of its own for None."""
    return [*strings, None], np.where(local < 0, len(strings), local).astype(np.int32)


class ScannedChunk(ChunkColumns):
    """A chunk read by the compiled scanner: numpy views of its rows' fields (no copy), and each
    column the builder reads gathered once, field by field, for the events it needs."""

    def __init__(self, blob: bytes, scanned: tuple[Any, list[str], list[str], list[str], int]) -> None:
        """``scanned``: what the scanner made of ``blob`` (rows, names, categories, texts, end)."""
        rows, names, categories, texts, end = scanned
        self._blob = blob  # the spans of Input Dims / Input type point into it
        self.end = end  # the offset in blob just past the array
        self._rows = np.frombuffer(rows, dtype=_row_dtype())
        self._names = names
        self._texts = texts
        self.num_events = len(self._rows)
        dur = self._rows["dur"]
        self._timed = ~np.isnan(dur)
        self.rows = np.flatnonzero(self._timed)
        self.ts = self._rows["ts"][self.rows]
        self.dur = dur[self.rows]
        self._category_names = categories
        self.category_strings, self.category_local = _with_none(categories, self._rows["cat"][self.rows])

    def field(self, name: str, rows: I64) -> Any:
        """One field of the rows at ``rows`` (positions in the chunk), as a contiguous array."""
        return self._rows[name][rows]

    def float_timestamps(self) -> bool:
        return not bool(np.all(self._rows["flags"] & 1))

    def all_ts(self) -> F64:
        return np.ascontiguousarray(self._rows["ts"])

    def gpu_without_dur(self) -> list[int]:
        gpu = np.array([c in GPU_CATEGORIES for c in self._category_names] + [False], dtype=bool)
        rows = self._rows
        found = ~self._timed & gpu[rows["cat"]] & ~np.isnan(rows["ts"])
        return np.flatnonzero(found).tolist() if found.any() else []

    def kept(self, keep: Mask) -> KeptColumns:
        return _ScannedKept(self, self.rows[keep])

    def event_names(self) -> list[str]:
        names = self._names
        return [names[i] for i in self._rows["name"].tolist()]


class _ScannedKept(KeptColumns):
    def __init__(self, chunk: ScannedChunk, rows: I64) -> None:
        self._chunk = chunk
        self._positions = rows  # in the chunk
        field = chunk.field
        self.name_strings = chunk._names
        self.name_local = field("name", rows)
        self.tid = self._ids(field("tid", rows), field("tid_text", rows))
        self.stream = self._ids(field("stream", rows), field("stream_text", rows))
        self.correlation = field("correlation", rows)
        self.flop = field("flops", rows)
        self.collective_positions = np.flatnonzero(field("collective", rows) >= 0).tolist()

    def devices(self, which: Mask) -> I64:
        devices: I64 = self._chunk.field("device", self._positions[which])
        return devices

    def _ids(self, values: I64, text_ids: I32) -> Ids:
        positions = np.flatnonzero(text_ids >= 0)
        if not len(positions):
            return Ids(values, [])
        texts = self._chunk._texts
        written = zip(positions.tolist(), text_ids[positions].tolist(), strict=True)
        return Ids(values, [(position, texts[text]) for position, text in written])

    def exact_ts(self) -> I64 | None:
        rows = self._positions
        whole = bool(np.all(self._chunk.field("flags", rows) & 1))
        exact: I64 = self._chunk.field("ts_int", rows)
        return exact if whole else None

    def args_at(self, position: int) -> EventArgs:
        row = self._chunk._rows[self._positions[position]]
        texts, blob = self._chunk._texts, self._chunk._blob
        return EventArgs(
            collective=texts[row["collective"]] if row["collective"] >= 0 else "",
            in_elements=int(row["in_elements"]),
            out_elements=int(row["out_elements"]),
            group_size=int(row["group_size"]),
            dtype=texts[row["dtype"]] if row["dtype"] >= 0 else None,
            input_dims=msgspec.Raw(blob[row["dims_start"] : row["dims_end"]]),
            input_type=msgspec.Raw(blob[row["types_start"] : row["types_end"]]),
        )


# --- from msgspec's structs ---------------------------------------------------------------------


class DecodedChunk(ChunkColumns):
    """A chunk decoded by msgspec: columns pulled out of its structs with C-level maps.

    Events without a ``dur`` (flows, instants, metadata: about 40% of a Kineto trace) are dropped
    first, so that only timed events pay for their timestamps and categories.
    """

    def __init__(self, events: list[Event]) -> None:
        self._events = events
        count = self.num_events = len(events)
        dur = np.fromiter(map(_DUR, events), dtype=np.float64, count=count)  # absent: NaN
        has_dur = ~np.isnan(dur)
        self.rows = np.flatnonzero(has_dur)
        self._has_dur = has_dur
        timed = self._timed = events if len(self.rows) == count else list(compress(events, has_dur.tolist()))
        self.ts = np.fromiter(map(_TS, timed), dtype=np.float64, count=len(timed))  # absent: NaN
        self.dur = dur[self.rows]
        self.category_strings = list(map(_CAT, timed))
        self.category_local = None

    def float_timestamps(self) -> bool:
        return not set(map(type, map(_TS, self._events))) <= {int}

    def all_ts(self) -> F64:
        return np.fromiter(map(_TS, self._events), dtype=np.float64, count=self.num_events)

    def gpu_without_dur(self) -> list[int]:
        """(The events without a ``dur`` are mostly flows: their categories are looked at in one
        C-level pass, row by row only when a GPU category is among them.)"""
        without = (~self._has_dur).tolist()
        if set(map(_CAT, compress(self._events, without))).isdisjoint(GPU_CATEGORIES):
            return []
        rows = np.flatnonzero(~self._has_dur).tolist()
        return [
            row
            for row, event in zip(rows, compress(self._events, without), strict=True)
            if event.cat in GPU_CATEGORIES and event.ts == event.ts  # not NaN
        ]

    def kept(self, keep: Mask) -> KeptColumns:
        timed = self._timed
        return _DecodedKept(timed if keep.all() else list(compress(timed, keep.tolist())))

    def event_names(self) -> list[str]:
        return list(map(_NAME, self._events))


def _ids(items: list[Any], field: attrgetter[Any]) -> Ids:
    """``field`` of each item: integers as int64 in one C-level pass (then a Python one only when
    some are not)."""
    try:
        return Ids(np.fromiter(map(field, items), dtype=np.int64, count=len(items)), [])
    except (TypeError, ValueError, OverflowError):
        items = list(map(field, items))
    others = [(i, v) for i, v in enumerate(items) if not (type(v) is int and -(2**63) <= v < 2**63)]
    values = np.array(items, dtype=object)
    values[[i for i, _ in others]] = 0
    return Ids(values.astype(np.int64), others)


class _DecodedKept(KeptColumns):
    def __init__(self, kept: list[Event]) -> None:
        self._kept = kept
        count = len(kept)
        self.name_strings = list(map(_NAME, kept))
        self.name_local = None
        self.tid = _ids(kept, _TID)
        args: list[EventArgs] = list(map(_ARGS, kept))
        self._args = args
        self.stream = _ids(args, _STREAM)
        self.correlation = np.fromiter(map(_CORRELATION, args), dtype=np.int64, count=count)
        self.flop = np.fromiter(map(_FLOPS, args), dtype=np.float64, count=count)
        self.collective_positions = list(compress(range(count), map(_COLLECTIVE, args)))  # non-empty

    def exact_ts(self) -> I64 | None:
        kept = self._kept
        if not set(map(type, map(_TS, kept))) <= {int}:
            return None
        return np.fromiter(map(_TS, kept), np.int64, len(kept))

    def devices(self, which: Mask) -> I64:
        return np.fromiter(map(_DEVICE, compress(self._args, which.tolist())), dtype=np.int64)

    def args_at(self, position: int) -> EventArgs:
        return self._args[position]
