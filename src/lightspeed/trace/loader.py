"""Loading profiler traces into columnar tables, one per rank, whatever the profiler.

Example::

    from lightspeed.trace import load_trace
    trace = load_trace(["tests/fixtures/traces/ns_resolution/rank-0.json.gz"])
    trace.ranks[0].events.num_events
    # -> 45382

Each file's format is told by its content (:func:`lightspeed.trace.io.detect_format`):
PyTorch profiler (Kineto) JSON, plain or gzip, is read by
:mod:`lightspeed.trace.io.kineto`; an Nsight Systems SQLite export (or a
``.nsys-rep`` report, exported first with ``nsys``) by
:mod:`lightspeed.trace.io.nsys`. Both fill the same
:class:`~lightspeed.trace.table.EventTable`, so every analysis reads both.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Protocol

from lightspeed.errors import TraceError, UserInputError
from lightspeed.trace.breakdown import check_device_override
from lightspeed.trace.cache import CachedRank, TraceCache
from lightspeed.trace.integrity import check_events, skipped_note
from lightspeed.trace.io.formats import (
    GOODPUT_LOG,
    KINETO,
    MLPERF_LOG,
    MONITOR_CAPTURE,
    NCU_CSV,
    NCU_REP,
    NSYS_REP,
    NSYS_SQLITE,
    detect_format,
    wrong_format,
)
from lightspeed.trace.io.source import DEFAULT_MAX_BYTES, trace_files
from lightspeed.trace.model import RankTrace, Trace

TIME_UNITS: Final = ("auto", "us", "ns")


def load_trace(
    paths: Iterable[Path | str] | Path | str,
    *,
    max_bytes: float = DEFAULT_MAX_BYTES,
    time_unit: str = "auto",
    round_to_us: bool = True,
    allow_mixed_schema: bool = False,
    skip_bad_events: bool = False,
    cache: TraceCache | bool = True,
    device: str | None = None,
) -> Trace:
    """Load trace files (or folders of per-rank files) into columnar tables.

    ``max_bytes`` bounds each file's decompressed size (bytes). ``time_unit``
    is the unit of the files' timestamps: ``us`` (Chrome/Kineto), ``ns``, or
    ``auto`` (``ns`` when timestamps exceed 1e17). ``round_to_us`` rounds
    fractional timestamps inwards to whole microseconds as HTA 0.5 does, so
    results match HTA's; pass ``False`` to keep nanosecond resolution.
    Ranks come from ``distributedInfo.rank``, else from the file name
    (``rank-3``), else a single file is rank 0; an Nsight Systems export
    holding several processes with GPU work gives one rank per process (in
    process-id order). Ranks written with different schema versions are
    refused unless ``allow_mixed_schema``. ``time_unit`` and ``round_to_us``
    concern Kineto JSON only: Nsight Systems records integer nanoseconds.
    Impossible events (see :mod:`lightspeed.trace.integrity`) stop the load
    with an error naming the event, unless ``skip_bad_events``: then they are
    left out and counted (``num_skipped_events``, and a note every analysis shows).
    ``device`` names the accelerator every rank ran on, for traces that name none (a Kineto trace
    without ``deviceProperties``) or one the catalog does not know, so their figures get a SOL
    (a note names what the trace said where it differs).
    ``cache`` (default: the lightspeed cache folder, when pyarrow is installed) keeps each
    file's tables as Parquet, so the next load of the same file skips parsing
    (:mod:`lightspeed.trace.cache`); ``False`` neither reads nor writes it.

    Raises :class:`TraceError` for unreadable, truncated, invalid or
    ambiguous input.
    """
    if time_unit not in TIME_UNITS:
        raise UserInputError(f"unknown time unit {time_unit!r}; allowed: {', '.join(TIME_UNITS)}")
    items = [paths] if isinstance(paths, str | Path) else list(paths)
    files = trace_files(items)
    chosen = TraceCache.default() if cache is True else cache or None
    options = {
        "max_bytes": float(max_bytes),
        "time_unit": time_unit,
        "round_to_us": round_to_us,
        "skip_bad": skip_bad_events,
    }
    loaded = [item for path in files for item in _load_cached(path, chosen, options)]
    ranks = _assign_ranks(loaded)
    notes = check_schema_versions(ranks, allow_mixed_schema)
    if device is not None:
        ranks = [_with_device(rank, device) for rank in ranks]
    skipped = {rank.rank: rank.skipped_events for rank in ranks if rank.skipped_events}
    if skipped:
        notes = (*notes, skipped_note(skipped))
    return Trace(ranks=tuple(sorted(ranks, key=lambda r: r.rank)), notes=notes)


def _with_device(rank: RankTrace, device: str) -> RankTrace:
    """``rank`` on ``device``, with a note where its trace names another one (a name the catalog
    may not know, such as "NVIDIA A100-PG509-200": the user's word wins); a named device of
    another architecture or vendor is refused (:func:`~lightspeed.trace.breakdown.check_device_override`)."""
    check_device_override(str(rank.path), rank.device_name, device)
    notes = rank.notes
    if rank.device_name and rank.device_name != device:
        notes = (*notes, f"rank {rank.rank}: the trace names {rank.device_name}; --device {device} is used")
    return dataclasses.replace(rank, device_name=device, notes=notes)


@dataclass
class _Loaded:
    """A file's table before its rank is settled."""

    path: Path
    rank: int | None
    trace: RankTrace


def _load_cached(path: Path, cache: TraceCache | None, options: dict[str, Any]) -> list[_Loaded]:
    """The ranks of one file, from the cache when it holds them (parsed and kept otherwise)."""
    if cache is None:
        return _load_file(path, **options)
    found, name, digest = cache.load(path, options)
    if found is not None:
        return [_Loaded(path=path, rank=item.rank, trace=item.trace) for item in found]
    loaded = _load_file(path, **options)
    cache.save(name, digest, path, [CachedRank(rank=item.rank, trace=item.trace) for item in loaded])
    return loaded


def _load_file(
    path: Path, *, max_bytes: float, time_unit: str, round_to_us: bool, skip_bad: bool
) -> list[_Loaded]:
    """The ranks one file holds (one, except for Nsight Systems exports of several processes)."""
    found = detect_format(path)
    # readers load on first use: a file the cache holds needs no JSON decoder, pool or SQLite
    if found == KINETO:
        from lightspeed.trace.io.kineto import read_kineto

        trace, rank, _ = read_kineto(
            path, max_bytes=max_bytes, time_unit=time_unit, round_to_us=round_to_us, skip_bad_events=skip_bad
        )
        return [_Loaded(path=path, rank=rank, trace=trace)]
    if found in (NSYS_SQLITE, NSYS_REP):
        from lightspeed.trace.io.nsys import read_nsys, read_nsys_report

        read = read_nsys if found == NSYS_SQLITE else read_nsys_report
        return [
            _Loaded(path=path, rank=rank, trace=_checked(trace, path, skip_bad))
            for trace, rank in read(path, max_bytes=max_bytes)
        ]
    if found == NCU_CSV:
        raise TraceError(
            path,
            "this is Nsight Compute CSV output (per-kernel metrics, not a timeline)",
            fix=f"read it with 'lightspeed kernels report {path}' (--trace TRACE joins it with a trace)",
        )
    if found == NCU_REP:
        raise TraceError(
            path,
            "this is an Nsight Compute report (.ncu-rep, a binary format)",
            fix=f"run 'ncu --import {path} --csv --page details > {path.stem}.csv', "
            f"then 'lightspeed kernels report {path.stem}.csv'",
        )
    if found in (MLPERF_LOG, MONITOR_CAPTURE, GOODPUT_LOG):
        raise wrong_format(path, found, "a profiler trace")
    raise TraceError(path, f"unsupported trace format {found!r}")


def _checked(trace: RankTrace, path: Path, skip_bad: bool) -> RankTrace:
    """The impossible-event policy on a table a reader built without it (Nsight Systems rows)."""
    table, skipped = check_events(
        trace.events,
        path=path,
        left_out=trace.skipped_events,  # rows the reader left out (an end before the start)
        skip_bad_events=skip_bad,
        time_unit="ns",
        origin_ns=trace.origin_ns,
        events_field="row",
    )
    if not skipped:
        return trace
    return dataclasses.replace(trace, events=table, skipped_events=skipped)


def _assign_ranks(loaded: list[_Loaded]) -> list[RankTrace]:
    unknown = [item for item in loaded if item.rank is None]
    if unknown and len(loaded) > 1:
        kineto = unknown[0].trace.source_format == "kineto"
        where = ("no distributedInfo.rank and " if kineto else "") + "no rank in the file name"
        example = "rank-0.json.gz, rank-1.json.gz" if kineto else "rank-0.sqlite, rank-1.sqlite"
        raise TraceError(
            unknown[0].path,
            f"cannot tell which rank this file is: {where}",
            fix=f"rename the files {example}, ... or load them one at a time",
        )
    ranks: list[RankTrace] = []
    seen: dict[int, Path] = {}
    for item in loaded:
        trace = item.trace
        if item.rank is None and trace.source_format == "kineto":
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


class RankFile(Protocol):
    """What the cross-rank checks read of a loaded rank (a RankTrace, or a worker's part of one)."""

    @property
    def rank(self) -> int: ...
    @property
    def path(self) -> str: ...
    @property
    def schema_version(self) -> str: ...


def check_schema_versions(ranks: Sequence[RankFile], allow_mixed: bool) -> tuple[str, ...]:
    """Refuse ranks written with different schema versions (unless ``allow_mixed``: then a note)."""
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
            fix="analyse traces from one profiler version together, or pass --allow-mixed-schema",
        )
    return (f"mixed schema versions ({listing}): each rank is read on its own terms",)
