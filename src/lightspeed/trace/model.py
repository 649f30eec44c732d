"""What every reader produces: one :class:`RankTrace` per rank, gathered in a :class:`Trace`.

A rank's events are an :class:`~lightspeed.trace.table.EventTable` whatever
the file they came from (Kineto JSON, Nsight Systems SQLite); its steps are
the annotations named like steps (``ProfilerStep#N`` in Kineto, NVTX ranges
such as ``step 12`` in Nsight Systems).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Final

import numpy as np

from lightspeed.errors import UserInputError
from lightspeed.records import JsonDict, Record
from lightspeed.trace.integrity import BadEvent
from lightspeed.trace.table import GPU_CATEGORIES, I64, EventTable

# Kineto's step annotations (HTA matches the same prefix).
PROFILER_STEP: Final = re.compile(r"ProfilerStep\s*#\s*(\d+)")
# NVTX ranges a training loop pushes per step: "ProfilerStep#3", "step 3", "train_step_3",
# "iteration 3", "iter-3", "Step: 3" (case-insensitive, the whole name).
NVTX_STEP: Final = re.compile(
    r"^\s*(?:ProfilerStep\s*#\s*|(?:train(?:ing)?[\s_-]*)?(?:step|iter(?:ation)?)[\s_#:=-]*)(\d+)\s*$",
    re.IGNORECASE,
)


@dataclass(frozen=True, eq=False)
class StepTable:
    """Step annotations of one rank, sorted by start (ns from the origin)."""

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
    assumed while loading (rank taken from the file name, ...). ``source_format``
    names the reader: ``kineto`` or ``nsys``.
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
    source_format: str = "kineto"
    skipped_events: tuple[BadEvent, ...] = ()

    @property
    def num_skipped_events(self) -> int:
        """Impossible events left out of the table (``skip_bad_events``)."""
        return len(self.skipped_events)

    @cached_property
    def gpu_mask(self) -> np.ndarray[Any, np.dtype[np.bool_]]:
        """Which events ran on a GPU (kernels, copies, memsets); computed once per rank (read-only)."""
        mask = self.events.category_mask(GPU_CATEGORIES)
        mask.flags.writeable = False  # shared by every analysis of this rank
        return mask

    @property
    def has_gpu_events(self) -> bool:
        """Whether the rank recorded any GPU activity."""
        kept = self.events.stored_num_gpu_events()  # a cached table knows without its categories
        return kept > 0 if kept is not None else bool(self.gpu_mask.any())

    def to_dict(self) -> JsonDict:
        """Metadata only (the event columns are not JSON material)."""
        return {
            "rank": self.rank,
            "path": self.path,
            "format": self.source_format,
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


# Kineto mirrors steps on the GPU timeline as gpu_user_annotation: steps are the CPU annotations.
NOT_STEP_CATEGORIES: Final = (*GPU_CATEGORIES, "gpu_user_annotation")


def step_table(
    table: EventTable, *, pattern: re.Pattern[str], exclude_categories: Sequence[str] = NOT_STEP_CATEGORIES
) -> StepTable:
    """The events outside ``exclude_categories`` whose name ``pattern`` matches (group 1: the number).

    >>> step_table(EventTable.empty(), pattern=PROFILER_STEP).num_steps
    0
    """
    numbers = np.array(
        [int(m.group(1)) if (m := pattern.match(n)) else -1 for n in table.names], dtype=np.int64
    )
    step_of_event = numbers[table.name_id] if table.num_events else np.zeros(0, dtype=np.int64)
    chosen = np.flatnonzero((step_of_event >= 0) & ~table.category_mask(exclude_categories))
    order = chosen[np.argsort(table.start_ns[chosen], kind="stable")]
    return StepTable(
        number=step_of_event[order],
        start_ns=table.start_ns[order],
        end_ns=table.start_ns[order] + table.duration_ns[order],
    )
