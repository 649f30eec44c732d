"""One PyTorch profiler (Kineto) JSON file into a :class:`~lightspeed.trace.model.RankTrace`.

Each file is read with a size bound and its events read chunk by chunk as
the file is read (see :mod:`lightspeed.trace.io.kineto_stream`); each chunk
goes into numpy columns and is dropped before the next is read, so the
parsed JSON and the table never coexist in full. With the compiled scanner
(:mod:`lightspeed.trace.io.kineto_columns`) chunks are scanned in a thread
while this one builds the columns of the one before.
"""

from __future__ import annotations

from pathlib import Path

from lightspeed.errors import TraceError
from lightspeed.trace.integrity import BadEvent, check_events
from lightspeed.trace.io.kineto_columns import compiled_scanner
from lightspeed.trace.io.kineto_metadata import TraceMetadata, trace_metadata
from lightspeed.trace.io.kineto_parallel import ParallelReadError, num_workers, read_parallel, read_pipelined
from lightspeed.trace.io.kineto_stream import EventStream
from lightspeed.trace.io.kineto_table import TableBuilder
from lightspeed.trace.io.source import rank_from_file_name
from lightspeed.trace.model import PROFILER_STEP, RankTrace, step_table
from lightspeed.trace.table import EventTable


def read_kineto(
    path: Path, *, max_bytes: float, time_unit: str, round_to_us: bool, skip_bad_events: bool = False
) -> tuple[RankTrace, int | None, str]:
    """The rank trace of one Kineto file, its rank (None when unknown) and where the rank came from.

    Example::

        trace, rank, source = read_kineto(Path("rank-0.json.gz"), max_bytes=2**32,
                                          time_unit="auto", round_to_us=True)
        source
        # -> 'distributedInfo'
    """
    builder, stream = _build(path, max_bytes=max_bytes, time_unit=time_unit, round_to_us=round_to_us)
    metadata = trace_metadata(stream.document, path)
    table, origin_ns = builder.finish()
    table, skipped = check_events(
        table,
        path=path,
        reader_bad=[BadEvent(*row) for row in builder.unplaced],
        skip_bad_events=skip_bad_events,
        time_unit=builder.time_unit,
        origin_ns=origin_ns,
        rounding_ns=builder.rounding_ns,
    )
    rank, rank_source = _rank_of(path, metadata)
    notes = (
        [] if rank_source == "distributedInfo" else [f"{path.name}: no distributedInfo.rank; {rank_source}"]
    )
    if metadata.schema_version is None:
        notes.append(f"{path.name}: no schemaVersion")
    trace = RankTrace(
        rank=rank if rank is not None else 0,
        path=str(path),
        schema_version="" if metadata.schema_version is None else str(metadata.schema_version),
        world_size=metadata.world_size,
        backend=metadata.backend,
        device_name=_device_name(metadata, table),
        origin_ns=origin_ns,
        time_unit=builder.time_unit,
        events=table,
        steps=step_table(table, pattern=PROFILER_STEP),
        notes=tuple(notes),
        skipped_events=skipped,
    )
    return trace, rank, rank_source


def _build(
    path: Path, *, max_bytes: float, time_unit: str, round_to_us: bool
) -> tuple[TableBuilder, EventStream]:
    """The filled table builder and the stream it read (in worker processes for a large file when
    asked; with the compiled scanner, chunks are scanned in a thread while this one builds)."""
    workers = num_workers(path)
    if workers:
        builder = TableBuilder(time_unit=time_unit, round_to_us=round_to_us)
        try:
            return builder, read_parallel(path, max_bytes=max_bytes, builder=builder, workers=workers)
        except ParallelReadError:
            pass
    if compiled_scanner() is not None:  # it releases the GIL: scan in a thread, build here
        builder = TableBuilder(time_unit=time_unit, round_to_us=round_to_us)
        try:
            return builder, read_pipelined(path, max_bytes=max_bytes, builder=builder)
        except ParallelReadError:
            pass
    stream = EventStream(path, max_bytes=max_bytes)
    builder = TableBuilder(time_unit=time_unit, round_to_us=round_to_us)
    for events in stream.chunks():  # each chunk's structs are dropped before the next is decoded
        builder.add(events)
    return builder, stream


def _rank_of(path: Path, metadata: TraceMetadata) -> tuple[int | None, str]:
    rank, world_size = metadata.rank, metadata.world_size
    if rank is not None:
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


def _device_name(metadata: TraceMetadata, table: EventTable) -> str | None:
    """The name of the GPU this rank's kernels ran on (``deviceProperties``)."""
    devices = [d for d in metadata.devices if d.name]
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
