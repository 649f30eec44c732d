"""Kineto events into an :class:`~lightspeed.trace.table.EventTable`, chunk by chunk.

Each chunk comes as columns (:class:`~lightspeed.trace.io.kineto_columns.ChunkColumns`,
from the compiled scanner or from msgspec's structs) and is dropped as the table's
columns grow, so the parsed JSON and the table never coexist in full. Selection,
interning, placing, rounding, device counts and collectives run here, the same for
both sources.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Final

import msgspec
import numpy as np
import numpy.typing as npt

from lightspeed.trace.io.kineto_columns import I32, ChunkColumns, DecodedChunk, Ids, KeptColumns
from lightspeed.trace.io.kineto_schema import DIMS_DECODER, TYPES_DECODER, Event, EventArgs
from lightspeed.trace.table import (
    F64,
    GPU_CATEGORIES,
    I64,
    NO_VALUE,
    CollectiveArgs,
    EventTable,
    element_bytes,
    intern,
)

# 1e17 us after the epoch is the year ~5100; a timestamp that large is in ns.
NS_TIMESTAMP_THRESHOLD: Final = 1e17
# |ts| or |dur| (ns) a table can hold: the difference of two such times still fits an int64.
MAX_ABS_TIME_NS: Final = 4e18  # year 2096 in ns since 1970
# Ops around a ``nccl:*`` annotation whose Input Dims give the output beside the input (all-gather's
# output is the group's inputs, reduce-scatter's input the group's outputs): the group size.
BASE_COLLECTIVE_OPS: Final = ("c10d::_allgather_base_", "c10d::_reduce_scatter_base_")


@dataclass
class _Chunks:
    """Column pieces collected chunk by chunk before concatenation."""

    columns: dict[str, list[npt.NDArray[Any]]] = field(default_factory=dict)

    def add(self, name: str, values: npt.NDArray[Any]) -> None:
        self.columns.setdefault(name, []).append(values)

    def joined(self, name: str, dtype: Any) -> npt.NDArray[Any]:
        parts = self.columns.get(name, [])
        return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype=dtype)


class TableBuilder:
    """Builds an :class:`EventTable` from decoded event chunks.

    ``time_unit`` is the unit of ``ts``/``dur`` in the file (``us`` in every
    Chrome/Kineto trace, ``ns`` for tools that write nanoseconds, ``auto`` to
    decide from the first chunk: ``ns`` when timestamps exceed 1e17).
    ``round_to_us`` reproduces HTA 0.5: when any timestamp is fractional it
    rounds each event inwards to whole microseconds (start up, end down); an
    event shorter than that rounding (one inside a single microsecond) ends where
    it starts, with duration 0, where HTA would give it a negative one.
    """

    def __init__(self, *, time_unit: str, round_to_us: bool) -> None:
        self.time_unit = time_unit
        self.round_to_us = round_to_us
        self.names: dict[str, int] = {}
        self.categories: dict[str, int] = {}
        self._text_ids: dict[str, int] = {}
        self._chunks = _Chunks()
        self._float_timestamps = False
        self._num_kept = 0
        self._collective_rows: list[tuple[int, str, int, int, int, float]] = []
        self._device_counts: dict[int, int] = {}
        self._num_seen = 0  # events of earlier chunks, kept or not
        self._annotation_ids: list[int] = []  # ids of nccl:* names (annotations of older PyTorch)
        self._num_names_checked = 0  # names looked at for nccl:* so far (names are only appended)
        # (index in traceEvents, field, value, problem) of complete events no clock can place
        self.unplaced: list[tuple[int, str, float, str]] = []

    def add(self, chunk: ChunkColumns | list[Event]) -> None:
        """Append the complete events (with ``ts``, ``dur`` and a category) of one chunk (its columns,
        from the compiled scanner or from msgspec's structs; a list of structs is read as the latter)."""
        if isinstance(chunk, list):
            chunk = DecodedChunk(chunk)
        first_index = self._num_seen
        selected = self._complete(chunk)
        self._num_seen += chunk.num_events
        if selected is None:
            return
        keep, category_ids = selected
        kept = chunk.kept(keep)
        add = self._chunks.add
        add("event_index", chunk.rows[keep] + first_index)
        name_ids = _global_ids(self.names, kept.name_strings, kept.name_local)
        add("name_id", name_ids)
        add("category_id", category_ids)
        ts = chunk.ts[keep]
        add("ts", ts)
        add("dur", chunk.dur[keep])
        if self.time_unit == "ns":  # integer nanoseconds stay exact (float64 holds 2**53 only)
            exact = kept.exact_ts()
            add("ts_int", exact if exact is not None else np.rint(ts).astype(np.int64))
        add("tid", self._id_column(kept.tid))
        add("stream", self._id_column(kept.stream))
        add("correlation", kept.correlation)
        with_flop = np.flatnonzero(kept.flop > 0)
        add("flop_row", with_flop + self._num_kept)
        add("flop", kept.flop[with_flop])
        self._count_devices(category_ids, kept)
        self._collect_collectives(kept, name_ids)
        self._num_kept += len(ts)

    def _complete(self, chunk: ChunkColumns) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.int32]] | None:
        """Which of the chunk's timed events are complete and placeable, and their category ids."""
        if not self._float_timestamps:  # HTA rounds only when its ts column is float (any non-int)
            self._float_timestamps = chunk.float_timestamps()
        if self.time_unit == "auto":
            self.time_unit = _guess_time_unit(chunk.all_ts())
        # A GPU event (kernel, copy, set) with a start and no dur is as impossible as a negative
        # one: Kineto writes every GPU activity as a complete event. It is never dropped silently.
        for row in chunk.gpu_without_dur():
            self.unplaced.append((self._num_seen + row, "dur", math.nan, "a GPU event without a dur"))
        category_ids = _global_ids(self.categories, chunk.category_strings, chunk.category_local)
        real = np.array([bool(c) and c != "Trace" for c in self.categories], dtype=bool)
        complete = real[category_ids]
        keep = complete & self._placed(chunk.ts, chunk.dur, complete, chunk.rows)
        if not keep.any():
            return None
        return keep, category_ids[keep]

    def _placed(self, ts: F64, dur: F64, complete: npt.NDArray[np.bool_], rows: I64) -> npt.NDArray[np.bool_]:
        """Which complete events have a ``ts`` and times a clock can hold; the others are noted
        (``rows``: each event's position in the chunk)."""
        limit = MAX_ABS_TIME_NS / (1.0 if self.time_unit == "ns" else 1000.0)
        with np.errstate(invalid="ignore"):
            bad_ts = np.isnan(ts) | ~(np.abs(ts) <= limit)
            bad_dur = ~(np.abs(dur) <= limit) | (dur < 0)  # negative as written, before any rounding
        for row in np.flatnonzero(complete & (bad_ts | bad_dur)).tolist():
            field, value = ("ts", ts[row]) if bad_ts[row] else ("dur", dur[row])
            problem = (
                "a complete event without a ts"
                if np.isnan(value)
                else "a negative duration"
                if field == "dur" and value < 0 and abs(value) <= limit
                else "a time no clock holds"
            )
            self.unplaced.append((self._num_seen + int(rows[row]), field, float(value), problem))
        placed: npt.NDArray[np.bool_] = ~(bad_ts | bad_dur)
        return placed

    @property
    def rounding_ns(self) -> int:
        """How far rounding moved an event's end (HTA's inward rounding to whole us: up to 1 us)."""
        return 1000 if self.round_to_us and self._float_timestamps and self.time_unit != "ns" else 0

    def _count_devices(self, category_ids: npt.NDArray[np.int32], kept: KeptColumns) -> None:
        """GPU events per device id (which GPU of ``deviceProperties`` this rank used)."""
        on_gpu_category = np.fromiter(
            (c in GPU_CATEGORIES for c in self.categories), bool, len(self.categories)
        )
        on_gpu = on_gpu_category[category_ids]  # a lookup per id: no sort, as np.isin does
        found, counts = np.unique(kept.devices(on_gpu), return_counts=True)
        for device, count in zip(found.tolist(), counts.tolist(), strict=True):
            self._device_counts[device] = self._device_counts.get(device, 0) + count

    def _id_column(self, ids: Ids) -> I64:
        """Ids as int64: integers as they are; strings are parsed (HTA: ``int(s)``) or become
        stable ids below -1, numbered in the order they come."""
        if not ids.others:
            return ids.values
        values = ids.values.copy()
        for position, value in ids.others:
            values[position] = self._as_int(value)
        return values

    def _as_int(self, value: Any) -> int:
        if isinstance(value, int):
            return value if -(2**63) <= value < 2**63 else NO_VALUE
        text = str(value)
        try:
            return int(text)
        except ValueError:
            # a label such as "0x7f..." or "Spans": a stable negative id, never a real stream
            return -2 - self._text_ids.setdefault(text, len(self._text_ids))

    def _collect_collectives(self, kept: KeptColumns, name_ids: npt.NDArray[np.int32]) -> None:
        annotation_ids = self._nccl_annotation_ids()
        annotations = np.flatnonzero(np.isin(name_ids, annotation_ids)).tolist() if annotation_ids else []
        for offset in sorted({*kept.collective_positions, *annotations}):
            index, arg = self._num_kept + offset, kept.args_at(offset)
            if arg.collective:
                size = element_bytes(arg.dtype)
                row = (
                    index,
                    arg.collective,
                    _count(arg.in_elements),
                    _count(arg.out_elements),
                    _count(arg.group_size),
                    size,
                )
                self._collective_rows.append(row)
            elif len(arg.input_dims):
                local = kept.name_local
                name = kept.name_strings[offset if local is None else local[offset]]
                self._collective_rows.append(_annotation_row(index, name, arg))

    def _nccl_annotation_ids(self) -> list[int]:
        """Ids of the ``nccl:*`` names and of :data:`BASE_COLLECTIVE_OPS` so far; only names added
        since the last call are looked at (a name's id is its position: names are only ever appended)."""
        if len(self.names) > self._num_names_checked:
            added = list(self.names)[self._num_names_checked :]
            first = self._num_names_checked
            self._annotation_ids += [
                first + i
                for i, name in enumerate(added)
                if name.startswith("nccl:") or name in BASE_COLLECTIVE_OPS
            ]
            self._num_names_checked = len(self.names)
        return self._annotation_ids

    def export(self) -> dict[str, Any] | None:
        """What this builder made of its chunks, for another builder's :meth:`merge` (a worker
        process's part); ``None`` when the part cannot be merged (text ids are numbered per builder)."""
        if self._text_ids:
            return None
        return {
            "names": list(self.names),
            "categories": list(self.categories),
            "columns": self._chunks.columns,
            "float_timestamps": self._float_timestamps,
            "num_seen": self._num_seen,
            "num_kept": self._num_kept,
            "collective_rows": self._collective_rows,
            "device_counts": self._device_counts,
            "unplaced": self.unplaced,
        }

    def merge(self, part: dict[str, Any]) -> None:
        """Append a part :meth:`export` made from the chunks that follow this builder's, as if
        :meth:`add` had read them here: ids renumbered into this builder's names, rows offset."""
        name_map = intern(self.names, part["names"])
        category_map = intern(self.categories, part["categories"])
        columns: dict[str, list[npt.NDArray[Any]]] = part["columns"]
        offsets = {"event_index": self._num_seen, "flop_row": self._num_kept}
        for name, pieces in columns.items():
            for values in pieces:
                if name == "name_id":
                    values = name_map[values]
                elif name == "category_id":
                    values = category_map[values]
                elif name in offsets:
                    values = values + offsets[name]
                self._chunks.add(name, values)
        self._collective_rows += [(row[0] + self._num_kept, *row[1:]) for row in part["collective_rows"]]
        self.unplaced += [(row[0] + self._num_seen, *row[1:]) for row in part["unplaced"]]
        for device, count in part["device_counts"].items():
            self._device_counts[device] = self._device_counts.get(device, 0) + count
        self._float_timestamps = self._float_timestamps or part["float_timestamps"]
        self._num_seen += part["num_seen"]
        self._num_kept += part["num_kept"]

    def finish(self) -> tuple[EventTable, int]:
        """The table and its origin (absolute ns of time zero)."""
        start_ns, duration_ns, origin_ns = self._times()
        rows = self._collective_rows
        collectives = CollectiveArgs(
            event_index=np.array([r[0] for r in rows], dtype=np.int64),
            collective=tuple(r[1] for r in rows),
            in_elements=np.array([r[2] for r in rows], dtype=np.int64),
            out_elements=np.array([r[3] for r in rows], dtype=np.int64),
            group_size=np.array([r[4] for r in rows], dtype=np.int64),
            element_bytes=np.array([r[5] for r in rows], dtype=np.float64),
        )
        joined = self._chunks.joined
        table = EventTable(
            names=tuple(self.names),
            categories=tuple(c or "" for c in self.categories),
            name_id=joined("name_id", np.int32),
            category_id=joined("category_id", np.int32),
            start_ns=start_ns,
            duration_ns=duration_ns,
            tid=joined("tid", np.int64),
            stream=joined("stream", np.int64),
            correlation=joined("correlation", np.int64),
            flop_row=joined("flop_row", np.int64),
            flop=joined("flop", np.float64),
            device_counts=dict(self._device_counts),
            collectives=collectives,
            event_index=joined("event_index", np.int64),
        )
        return table, origin_ns

    def _times(self) -> tuple[I64, I64, int]:
        ts = self._chunks.joined("ts", np.float64)
        dur = self._chunks.joined("dur", np.float64)
        if ts.size == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), 0
        if self.time_unit == "ns":
            exact = self._chunks.joined("ts_int", np.int64)
            origin = int(exact.min())
            return exact - origin, np.rint(dur).astype(np.int64), origin
        origin_us = math.floor(float(ts.min()))
        if self.round_to_us and self._float_timestamps:
            # HTA 0.5 (trace_parser.round_down_time_stamps): ceil the start, floor the end, in float64 us
            start_us = np.ceil(ts)
            end_us = np.maximum(np.floor(ts + dur), start_us)  # never before its start: duration >= 0
            start_ns = ((start_us - origin_us) * 1000.0).astype(np.int64)
            return (
                start_ns,
                ((end_us - start_us) * 1000.0).astype(np.int64),
                origin_us * 1000,
            )
        start_ns = np.rint((ts - origin_us) * 1000.0).astype(np.int64)
        return start_ns, np.rint(dur * 1000.0).astype(np.int64), origin_us * 1000


def _global_ids(table: dict[Any, int], strings: list[Any], local: I32 | None) -> I32:
    """The builder's ids (``table``) of a chunk's values, given as the chunk's distinct ``strings`` and
    each value's index into them (``local``), or one string per value (``local`` None). New values
    are added in the order they first appear, however the chunk numbered them: the table is the
    same from either source.

    >>> table = {"a": 0}
    >>> _global_ids(table, ["c", "a", "b"], np.array([2, 1, 0, 2], dtype=np.int32)).tolist(), table
    ([1, 0, 2, 1], {'a': 0, 'b': 1, 'c': 2})
    """
    if local is None:
        return intern(table, strings)
    known = np.fromiter((table.get(s, -1) for s in strings), dtype=np.int32, count=len(strings))
    ids = known[local]
    missing = ids < 0
    if missing.any():
        unique, first = np.unique(local[missing], return_index=True)
        new = unique[np.argsort(first)]
        known[new] = intern(table, [strings[i] for i in new.tolist()])
        ids = known[local]
    return ids


def _guess_time_unit(ts: F64) -> str:
    """``ns`` when timestamps are too large to be microseconds (past year 5000), else ``us``.

    The median decides, so that one absurd timestamp cannot turn a whole trace into ns.
    """
    present = np.abs(ts[np.isfinite(ts)])
    # the lower median: a value of the trace, never the mean of two (which overflows near 1.8e308)
    typical = float(np.quantile(present, 0.5, method="lower")) if present.size else 0.0
    return "ns" if typical > NS_TIMESTAMP_THRESHOLD else "us"


def _count(value: int | None) -> int:
    return NO_VALUE if value is None or value < 0 else int(value)


def _dims_and_types(arg: EventArgs) -> tuple[list[Any], list[str | None]]:
    """An op's ``Input Dims`` and ``Input type`` (empty where absent or not JSON lists)."""
    try:
        dims = DIMS_DECODER.decode(arg.input_dims) if len(arg.input_dims) else []
        types = TYPES_DECODER.decode(arg.input_type) if len(arg.input_type) else []
    except (msgspec.DecodeError, msgspec.ValidationError):
        return [], []
    return dims, types


def _base_op_row(index: int, name: str, arg: EventArgs) -> tuple[int, str, int, int, int, float]:
    """A ``c10d::_allgather_base_`` / ``_reduce_scatter_base_`` op: its ``Input Dims`` are
    ``[[output], [input], ...]``, so it gives both element counts (the group is their ratio),
    which the ``nccl:*`` annotation inside it (input only) does not."""
    dims, types = _dims_and_types(arg)
    shapes = [
        shape if isinstance(shape, list) and all(isinstance(d, int) for d in shape) else None
        for shape in dims[:2]
    ]
    if len(shapes) < 2 or shapes[0] is None or shapes[1] is None:
        return (index, name, NO_VALUE, NO_VALUE, NO_VALUE, math.nan)
    output, given = math.prod(shapes[0]), math.prod(shapes[1])
    return (index, name, given, output, NO_VALUE, element_bytes(next((t for t in types if t), None)))


def _annotation_row(index: int, name: str, arg: EventArgs) -> tuple[int, str, int, int, int, float]:
    """A ``nccl:<collective>`` annotation: elements from ``Input Dims``, size from ``Input type``
    (a :data:`BASE_COLLECTIVE_OPS` op: :func:`_base_op_row`)."""
    if name in BASE_COLLECTIVE_OPS:
        return _base_op_row(index, name, arg)
    elements = NO_VALUE
    size = math.nan
    dims, types = _dims_and_types(arg)
    shapes = [
        shape
        for shape in dims
        if isinstance(shape, list) and shape and all(isinstance(d, int) for d in shape)
    ]
    if shapes:
        elements = sum(math.prod(shape) for shape in shapes)
        size = element_bytes(next((t for t in types if t), None))
    return (index, name.removeprefix("nccl:"), elements, NO_VALUE, NO_VALUE, size)
