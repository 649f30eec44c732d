"""Loading PyTorch profiler (Kineto) traces into columnar tables, one per rank.

>>> from lightspeed.trace import load_trace
>>> trace = load_trace(["tests/fixtures/traces/ns_resolution/rank-0.json.gz"])  # doctest: +SKIP
>>> trace.ranks[0].events.num_events  # doctest: +SKIP
45382

Each file is read with a size bound and its events decoded chunk by chunk as
the file is read (see :mod:`lightspeed.trace.stream`); each chunk goes into
numpy columns and its structs are dropped before the next is decoded, so the
parsed JSON and the table never coexist in full.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import numpy as np

from lightspeed.errors import TraceError, UserInputError
from lightspeed.records import JsonDict, Record
from lightspeed.trace.schema import TraceDocument
from lightspeed.trace.source import DEFAULT_MAX_BYTES, rank_from_file_name, trace_files
from lightspeed.trace.stream import EventStream
from lightspeed.trace.table import GPU_CATEGORIES, I64, EventTable, TableBuilder
from lightspeed.trace.validate import BadEvent, check_events, skipped_note

TIME_UNITS: Final = ("auto", "us", "ns")
_STEP_NAME: Final = re.compile(r"ProfilerStep\s*#\s*(\d+)")


@dataclass(frozen=True, eq=False)
class StepTable:
    """``ProfilerStep#N`` annotations of one rank, sorted by start (ns from the origin)."""

    number: I64
    start_ns: I64
    end_ns: I64

    @property
    def num_steps(self) -> int:
        """How many steps the rank recorded."""
        return int(self.number.size)


@dataclass(frozen=True, eq=False)
class RankTrace(Record):
    """One rank's trace: metadata, its event table and its profiler steps.

    ``origin_ns`` is the absolute time (ns, the trace's clock) of the table's
    zero, so ranks can be put on one time line. ``notes`` say what was
    assumed while loading (rank taken from the file name, ...).
    """

    rank: int
    path: str
    schema_version: str
    world_size: int | None
    backend: str | None
    device_name: str | None
    origin_ns: int
    time_unit: str
    events: EventTable
    steps: StepTable
    notes: tuple[str, ...] = ()
    skipped_events: tuple[BadEvent, ...] = ()

    @property
    def num_skipped_events(self) -> int:
        """Impossible events left out of the table (``skip_bad_events``)."""
        return len(self.skipped_events)

    @property
    def gpu_mask(self) -> np.ndarray[Any, np.dtype[np.bool_]]:
        """Which events ran on a GPU (kernels, copies, memsets)."""
        return self.events.category_mask(GPU_CATEGORIES)

    @property
    def has_gpu_events(self) -> bool:
        """Whether the rank recorded any GPU activity."""
        return bool(self.gpu_mask.any())

    def to_dict(self) -> JsonDict:
        """Metadata only (the event columns are not JSON material)."""
        return {
            "rank": self.rank,
            "path": self.path,
            "schema_version": self.schema_version,
            "world_size": self.world_size,
            "backend": self.backend,
            "device_name": self.device_name,
            "time_unit": self.time_unit,
            "num_events": self.events.num_events,
            "num_steps": self.steps.num_steps,
            "num_skipped_events": self.num_skipped_events,
            "notes": list(self.notes),
        }


@dataclass(frozen=True, eq=False)
class Trace(Record):
    """All ranks of one trace collection, sorted by rank."""

    ranks: tuple[RankTrace, ...]
    notes: tuple[str, ...] = ()

    @property
    def rank_ids(self) -> tuple[int, ...]:
        """The ranks present."""
        return tuple(rank.rank for rank in self.ranks)

    @property
    def num_skipped_events(self) -> int:
        """Impossible events left out over all ranks (``skip_bad_events``)."""
        return sum(rank.num_skipped_events for rank in self.ranks)

    def rank(self, rank: int) -> RankTrace:
        """The trace of ``rank``."""
        for item in self.ranks:
            if item.rank == rank:
                return item
        known = ", ".join(str(r) for r in self.rank_ids)
        raise UserInputError(f"no rank {rank} in this trace; ranks present: {known}")

    def to_dict(self) -> JsonDict:
        """Metadata of every rank."""
        return {
            "ranks": [rank.to_dict() for rank in self.ranks],
            "num_skipped_events": self.num_skipped_events,
            "notes": list(self.notes),
        }


def load_trace(
    paths: Iterable[Path | str] | Path | str,
    *,
    max_bytes: float = DEFAULT_MAX_BYTES,
    time_unit: str = "auto",
    round_to_us: bool = True,
    allow_mixed_schema: bool = False,
    skip_bad_events: bool = False,
) -> Trace:
    """Load trace files (or folders of per-rank files) into columnar tables.

    ``max_bytes`` bounds each file's decompressed size (bytes). ``time_unit``
    is the unit of the files' timestamps: ``us`` (Chrome/Kineto), ``ns``, or
    ``auto`` (``ns`` when timestamps exceed 1e17). ``round_to_us`` rounds
    fractional timestamps inwards to whole microseconds as HTA 0.5 does, so
    results match HTA's; pass ``False`` to keep nanosecond resolution.
    Ranks come from ``distributedInfo.rank``, else from the file name
    (``rank-3``), else a single file is rank 0. Ranks written with different
    ``schemaVersion`` values are refused unless ``allow_mixed_schema``.
    Impossible events (see :mod:`lightspeed.trace.validate`) stop the load
    with an error naming the event, unless ``skip_bad_events``: then they are
    left out and counted (``num_skipped_events``, and a note every analysis shows).

    Raises :class:`TraceError` for unreadable, truncated, invalid or
    ambiguous input.
    """
    if time_unit not in TIME_UNITS:
        raise UserInputError(f"unknown time unit {time_unit!r}; allowed: {', '.join(TIME_UNITS)}")
    items = [paths] if isinstance(paths, str | Path) else list(paths)
    files = trace_files(items)
    loaded = [
        _load_file(
            path, max_bytes=max_bytes, time_unit=time_unit, round_to_us=round_to_us, skip_bad=skip_bad_events
        )
        for path in files
    ]
    ranks = _assign_ranks(loaded)
    notes = _check_schema_versions(ranks, allow_mixed_schema)
    skipped = {rank.rank: rank.skipped_events for rank in ranks if rank.skipped_events}
    if skipped:
        notes = (*notes, skipped_note(skipped))
    return Trace(ranks=tuple(sorted(ranks, key=lambda r: r.rank)), notes=notes)


@dataclass
class _Loaded:
    """A file's table before its rank is settled."""

    path: Path
    rank: int | None
    rank_source: str
    trace: RankTrace


def _load_file(path: Path, *, max_bytes: float, time_unit: str, round_to_us: bool, skip_bad: bool) -> _Loaded:
    stream = EventStream(path, max_bytes=max_bytes)
    builder = TableBuilder(time_unit=time_unit, round_to_us=round_to_us)
    for events in stream.chunks():  # each chunk's structs are dropped before the next is decoded
        builder.add(events)
    document = stream.document
    table, origin_ns = builder.finish()
    table, skipped = check_events(
        table,
        path=path,
        reader_bad=[BadEvent(*row) for row in builder.unplaced],
        skip_bad_events=skip_bad,
        time_unit=builder.time_unit,
        origin_ns=origin_ns,
        rounding_ns=builder.rounding_ns,
    )
    rank, rank_source = _rank_of(path, document)
    notes = (
        [] if rank_source == "distributedInfo" else [f"{path.name}: no distributedInfo.rank; {rank_source}"]
    )
    if document.schemaVersion is None:
        notes.append(f"{path.name}: no schemaVersion")
    info = document.distributedInfo
    trace = RankTrace(
        rank=rank if rank is not None else 0,
        path=str(path),
        schema_version="" if document.schemaVersion is None else str(document.schemaVersion),
        world_size=_as_int(info.world_size) if info else None,
        backend=info.backend if info else None,
        device_name=_device_name(document, table),
        origin_ns=origin_ns,
        time_unit=builder.time_unit,
        events=table,
        steps=_steps(table),
        notes=tuple(notes),
        skipped_events=skipped,
    )
    return _Loaded(path=path, rank=rank, rank_source=rank_source, trace=trace)


def _as_int(value: int | str | None) -> int | None:
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None


def _rank_of(path: Path, document: TraceDocument) -> tuple[int | None, str]:
    info = document.distributedInfo
    rank = _as_int(info.rank) if info is not None else None
    if rank is not None:
        world_size = _as_int(info.world_size) if info is not None else None
        if rank < 0 or (world_size is not None and not 0 <= rank < world_size):
            raise TraceError(
                path,
                "impossible rank" + (f" for a world size of {world_size}" if world_size is not None else ""),
                field="distributedInfo.rank",
                value=rank,
                fix="a rank is 0 .. world_size - 1; re-export the trace or fix distributedInfo",
            )
        return rank, "distributedInfo"
    from_name = rank_from_file_name(path)
    if from_name is not None:
        return from_name, f"rank {from_name} taken from the file name"
    return None, "rank unknown"


def _device_name(document: TraceDocument, table: EventTable) -> str | None:
    """The name of the GPU this rank's kernels ran on (``deviceProperties``)."""
    devices = [d for d in document.deviceProperties or [] if d.name]
    if not devices:
        return None
    used = {device: count for device, count in table.device_counts.items() if device >= 0}
    if used:
        device_id = max(used, key=lambda device: (used[device], -device))
        for device in devices:
            if device.id == device_id:
                return device.name
    names = {d.name for d in devices}
    return devices[0].name if len(names) == 1 else None


def _steps(table: EventTable) -> StepTable:
    numbers = np.array(
        [int(m.group(1)) if (m := _STEP_NAME.match(n)) else -1 for n in table.names], dtype=np.int64
    )
    step_of_event = numbers[table.name_id] if table.num_events else np.zeros(0, dtype=np.int64)
    # the CPU annotation only: Kineto mirrors steps on the GPU timeline as gpu_user_annotation
    on_gpu = table.category_mask((*GPU_CATEGORIES, "gpu_user_annotation"))
    chosen = np.flatnonzero((step_of_event >= 0) & ~on_gpu)
    order = chosen[np.argsort(table.start_ns[chosen], kind="stable")]
    return StepTable(
        number=step_of_event[order],
        start_ns=table.start_ns[order],
        end_ns=table.start_ns[order] + table.duration_ns[order],
    )


def _assign_ranks(loaded: list[_Loaded]) -> list[RankTrace]:
    unknown = [item for item in loaded if item.rank is None]
    if unknown and len(loaded) > 1:
        raise TraceError(
            unknown[0].path,
            "cannot tell which rank this file is: no distributedInfo.rank and no rank in the file name",
            fix="rename the files rank-0.json.gz, rank-1.json.gz, ... or load them one at a time",
        )
    ranks: list[RankTrace] = []
    seen: dict[int, Path] = {}
    for item in loaded:
        trace = item.trace
        if item.rank is None:
            trace = _with_note(trace, f"{item.path.name}: no distributedInfo.rank; assumed rank 0")
        if trace.rank in seen:
            raise TraceError(
                item.path,
                f"rank {trace.rank} is also the rank of {seen[trace.rank]}",
                fix="load one file per rank (a folder should hold one collection)",
            )
        seen[trace.rank] = item.path
        ranks.append(trace)
    return ranks


def _with_note(trace: RankTrace, note: str) -> RankTrace:
    notes = (*(n for n in trace.notes if "no distributedInfo.rank" not in n), note)
    return dataclasses.replace(trace, notes=notes)


def _check_schema_versions(ranks: list[RankTrace], allow_mixed: bool) -> tuple[str, ...]:
    versions = Counter(r.schema_version for r in ranks if r.schema_version)
    if len(versions) <= 1:
        return ()
    listing = ", ".join(
        f"rank {r.rank} ({Path(r.path).name}): {r.schema_version}" for r in ranks if r.schema_version
    )
    if not allow_mixed:
        raise TraceError(
            ranks[0].path,
            f"ranks were written with different trace schema versions ({listing})",
            fix="analyse traces from one PyTorch version together, or pass --allow-mixed-schema",
        )
    return (f"mixed schema versions ({listing}): each rank is read on its own terms",)
