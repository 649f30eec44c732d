"""The GPU events an analysis counts, linked to their CPU launches and steps.

GPU events are kernels, copies and memsets (not ``cuda_sync`` records: those
time a CPU thread waiting). Each is linked by ``correlation`` to the CPU
runtime/driver call that launched it and placed in the ``ProfilerStep`` that
call fell in (its own start time when it has no launch).

As HTA does, when a collection holds two or more profiler step numbers its
last (highest) step number is left out (the profiler usually cuts it short):
on every rank that has that step, only GPU events launched before it began
are kept (an event without a launch by its own start), unless
``include_last_step``. A rank that lacks that step (it recorded fewer steps)
keeps all of its steps.

Exact duplicate rows (same name, stream, start and end: one event written
twice, which a CUDA stream cannot run) are counted once; ``num_duplicates``
says how many were left out and :func:`duplicates_note` says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from lightspeed.trace.intervals import is_sorted
from lightspeed.trace.kinds import classify_ids
from lightspeed.trace.model import RankTrace, StepTable, Trace
from lightspeed.trace.table import I64, NO_VALUE, EventTable

# CPU-side categories whose events launch GPU work (older Kineto: Runtime/Driver).
LAUNCH_CATEGORIES: Final = ("cuda_runtime", "cuda_driver", "Runtime", "Driver")


def devices_note(rank: RankTrace) -> str | None:
    """A note when one rank's GPU events ran on two or more devices (``args.device``): the
    analyses treat a rank as one GPU, so its figures are the devices' union, not either's."""
    used = sorted(device for device, count in rank.events.device_counts.items() if device >= 0 and count)
    if len(used) < 2:
        return None
    return (
        f"rank {rank.rank}: GPU events on {len(used)} devices ({', '.join(map(str, used))}) in one trace; "
        "the breakdown is their union (one trace per device gives each its own)"
    )


@dataclass(frozen=True, eq=False)
class GpuEvents:
    """One rank's counted GPU events as columns (ns from the rank's origin).

    ``launch`` is the row of the launching CPU event in the rank's table (-1
    when unknown), ``step`` the profiler step number (-1 outside any step).
    """

    rank: int
    row: I64
    start_ns: I64
    end_ns: I64
    kind: npt.NDArray[np.int8]
    stream: I64
    name_id: npt.NDArray[np.int32]
    launch: I64
    step: I64
    last_step_excluded: bool
    num_duplicates: int = 0  # exact repeats (name, stream, start, end) left out

    @property
    def size(self) -> int:
        """Number of GPU events."""
        return int(self.row.size)

    def subset(self, mask: npt.NDArray[np.bool_]) -> GpuEvents:
        """The events where ``mask`` is true."""
        return GpuEvents(
            rank=self.rank,
            row=self.row[mask],
            start_ns=self.start_ns[mask],
            end_ns=self.end_ns[mask],
            kind=self.kind[mask],
            stream=self.stream[mask],
            name_id=self.name_id[mask],
            launch=self.launch[mask],
            step=self.step[mask],
            last_step_excluded=self.last_step_excluded,
            num_duplicates=self.num_duplicates,
        )


def dropped_step(trace: Trace, *, include_last_step: bool = False) -> int | None:
    """The profiler step number every analysis leaves out: the collection's highest when it holds
    two or more distinct step numbers (HTA), ``None`` when none is (or ``include_last_step``)."""
    numbers = {int(n) for rank in trace.ranks for n in rank.steps.number}
    return max(numbers) if len(numbers) >= 2 and not include_last_step else None


@dataclass(frozen=True, eq=False)
class GpuRows:
    """A rank's GPU events in table order, with what every analysis reads of them: ``row`` in the
    table, start, duration, name, category, stream, the launching CPU row (``launch``, -1: none)
    and ``launched_ns``, when the event was launched (its launch's start; its own without one)."""

    row: I64
    start_ns: I64
    duration_ns: I64
    name_id: npt.NDArray[np.int32]
    category_id: npt.NDArray[np.int32]
    stream: I64
    launch: I64
    launched_ns: I64

    def subset(self, keep: npt.NDArray[np.bool_]) -> GpuRows:
        """The events where ``keep`` is true."""
        return GpuRows(**{name: getattr(self, name)[keep] for name in self.__dataclass_fields__})


def gpu_rows(rank: RankTrace, *, launched_before: int | None = None) -> GpuRows:
    """The GPU events of ``rank``; with ``launched_before`` (ns), only those launched before it
    (``launched_ns``: an event without a launch by its own start). A table read from the cache
    holds them, gathered when the entry was written."""
    table = rank.events
    stored = table.stored_gpu_rows(launched_before)
    if stored is not None:
        return stored
    rows = np.flatnonzero(rank.gpu_mask)
    launch = launch_rows(table, rows)
    start = table.start_ns[rows]
    found = GpuRows(
        row=rows,
        start_ns=start,
        duration_ns=table.duration_ns[rows],
        name_id=table.name_id[rows],
        category_id=table.category_id[rows],
        stream=table.stream[rows],
        launch=launch,
        launched_ns=np.where(launch >= 0, table.start_ns[np.maximum(launch, 0)], start),
    )
    if launched_before is None:
        return found
    return found.subset(found.launched_ns < launched_before)


def gpu_events(rank: RankTrace, *, dropped_step: int | None) -> GpuEvents:
    """The GPU events of ``rank``, without those launched in or after its step ``dropped_step``
    (see :func:`dropped_step`; all of them when the rank has no step of that number) and without
    exact duplicates (:func:`duplicate_rows`: counted once, ``num_duplicates`` left out)."""
    table = rank.events
    cutoff = step_start(rank.steps, dropped_step)
    found = gpu_rows(rank, launched_before=cutoff)
    repeated = duplicate_rows(found.start_ns, found.duration_ns, found.stream, found.name_id)
    num_duplicates = int(repeated.sum())
    if num_duplicates:
        found = found.subset(~repeated)
    return GpuEvents(
        rank=rank.rank,
        row=found.row,
        start_ns=found.start_ns,
        end_ns=found.start_ns + found.duration_ns,
        kind=classify_ids(found.name_id, found.category_id, table.names, table.categories),
        stream=found.stream,
        name_id=found.name_id,
        launch=found.launch,
        step=step_of(rank.steps, found.launched_ns),
        last_step_excluded=cutoff is not None,
        num_duplicates=num_duplicates,
    )


def duplicate_rows(
    start_ns: I64, duration_ns: I64, stream: I64, name_id: npt.NDArray[np.int32]
) -> npt.NDArray[np.bool_]:
    """Which events repeat an earlier one exactly (same start, duration, stream and name); the
    first of each set is kept. Only events that share a start with another are sorted by all four,
    so a trace without shared starts costs a sort of its starts (none when they are in order).

    >>> duplicate_rows(np.array([5, 0, 5, 5]), np.array([2, 1, 2, 2]), np.array([7, 7, 7, 8]),
    ...                np.array([1, 1, 1, 1], dtype=np.int32)).tolist()
    [False, False, True, False]
    """
    repeated = np.zeros(start_ns.size, dtype=bool)
    if start_ns.size < 2:
        return repeated
    by_start = start_ns if is_sorted(start_ns) else np.sort(start_ns)  # values only: no argsort
    same = by_start[1:] == by_start[:-1]
    if not same.any():
        return repeated
    shared = by_start[1:][same]  # in order: a start two or more events share, once per repeat
    tied = shared[np.r_[True, shared[1:] != shared[:-1]]]
    if tied.size * 16 < start_ns.size:  # few: look up the events that have one
        position = np.minimum(np.searchsorted(tied, start_ns), tied.size - 1)
        candidates = np.flatnonzero(tied[position] == start_ns)
    else:  # many (whole-microsecond starts on many streams): every event is one
        candidates = np.arange(start_ns.size)
    keys = [key[candidates] for key in (start_ns, duration_ns, stream, name_id)]
    # one sort of a hash of the four keys (stable: the earliest row of a set comes first); equal
    # rows hash alike, and each is checked against the row before it, so a collision only
    # leaves a repeat in, never takes a different row out
    order = np.argsort(_mixed(keys), kind="stable")
    same_as_before = np.ones(order.size - 1, dtype=bool)
    for key in keys:
        in_order = key[order]
        same_as_before &= in_order[1:] == in_order[:-1]
    repeated[candidates[order[1:][same_as_before]]] = True
    return repeated


def _mixed(keys: Sequence[npt.NDArray[np.integer]]) -> npt.NDArray[np.uint64]:
    """A 64-bit hash of each row of ``keys`` (multiply-xorshift; wraps around by design)."""
    mixed = np.zeros(keys[0].size, dtype=np.uint64)
    for key in keys:
        mixed ^= key.astype(np.uint64)
        mixed *= np.uint64(0x9E3779B97F4A7C15)
        mixed ^= mixed >> np.uint64(29)
    return mixed


def duplicates_note(events: GpuEvents) -> str | None:
    """A note when exact duplicate GPU events were left out (:func:`duplicate_rows`)."""
    if not events.num_duplicates:
        return None
    return (
        f"rank {events.rank}: {events.num_duplicates} GPU event(s) repeat another exactly (same name, "
        "stream, start and end: a row written twice) and are counted once"
    )


def step_start(steps: StepTable, number: int | None) -> int | None:
    """When step ``number`` began (ns; the earliest start if several share it), ``None`` when there
    is no such step: the cutoff of the GPU events and FLOPs a rank counts."""
    if number is None:
        return None
    starts = steps.start_ns[steps.number == number]
    return int(starts.min()) if starts.size else None


def launch_rows(table: EventTable, rows: I64) -> I64:
    """For each GPU event row, the row of the CPU launch with the same correlation (-1 if none):
    the first such launch in the table when several share it. A table read from the cache carries
    every row's answer (``launch_row``), joined when it was written."""
    if table.launch_row is not None:
        joined: I64 = table.launch_row[rows]
        return joined
    cpu = np.flatnonzero(table.category_mask(LAUNCH_CATEGORIES) & (table.correlation >= 0))
    result = np.full(rows.size, NO_VALUE, dtype=np.int64)
    if cpu.size == 0 or rows.size == 0:
        return result
    keys = table.correlation[cpu]
    if not is_sorted(keys):  # launches usually come in correlation order: then no sort
        order = np.argsort(keys, kind="stable")
        keys, cpu = keys[order], cpu[order]
    wanted = table.correlation[rows]
    position = np.searchsorted(keys, wanted)
    found = (position < keys.size) & (wanted >= 0)
    found[found] = keys[position[found]] == wanted[found]
    result[found] = cpu[position[found]]
    return result


def step_of(steps: StepTable, when_ns: I64) -> I64:
    """The profiler step number containing each time (-1 outside every step)."""
    if steps.num_steps == 0 or when_ns.size == 0:
        return np.full(when_ns.size, NO_VALUE, dtype=np.int64)
    # the last step starting at or before each time, as a slot of tables with a first slot for
    # "before every step" (which no time is inside): three arrays of the events' length, no more
    slot = np.searchsorted(steps.start_ns, when_ns, side="right")
    ends = np.concatenate([[np.iinfo(np.int64).min], steps.end_ns])
    numbers = np.concatenate([[NO_VALUE], steps.number])
    result: I64 = numbers[slot]
    result[when_ns >= ends[slot]] = NO_VALUE
    return result
