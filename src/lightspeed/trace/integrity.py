"""Impossible trace events: found over the table's columns, whatever reader built the table.

A profiler never writes an event with a negative duration, a start outside
the trace's own span by orders of magnitude, or a duration longer than that
span by as much; a complete event (one with a ``dur``) without a ``ts`` is as
impossible. Such events would turn every percentage of an analysis into
nonsense (idle above 100%, compute below 0), so the policy is:

- by default the first impossible event stops the analysis with a
  :class:`TraceError` naming its index in ``traceEvents``, the field and the value;
- with ``skip_bad_events=True`` (``--skip-bad-events``) the events are left
  out and their count is reported beside every figure (``Trace.notes``,
  ``RankTrace.num_skipped_events``).

The span is robust: the interquartile range of the starts, at least
one second. "Far" is 1,000 times that span.

>>> import numpy as np
>>> problems = impossible_events(
...     start_ns=np.array([0, 10, 20], dtype=np.int64), duration_ns=np.array([5, -1, 5], dtype=np.int64))
>>> [(int(i), field) for i, field, _ in problems]
[(1, 'dur')]
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from lightspeed.errors import TraceError
from lightspeed.records import Record
from lightspeed.trace.table import EventTable

FLAG: Final = "--skip-bad-events"
POLICY_WHERES: Final = frozenset({"traceEvents", "row"})  # where the policy finds events (Kineto, Nsight)
MIN_SPAN_NS: Final = 1_000_000_000  # a span shorter than a second still allows events a second long
FAR_FACTOR: Final = 1000.0  # three orders of magnitude beyond the span
SPAN_QUANTILES: Final = (25.0, 75.0)  # quartiles: robust to a quarter of the events being wild
FIX: Final = (
    "re-export the trace; or pass --skip-bad-events (trace and report commands) to leave such events "
    "out, their count shown beside every figure"
)


@dataclass(frozen=True)
class BadEvent(Record):
    """One impossible event: its index in ``where`` (Kineto's ``traceEvents``, an Nsight Systems
    export's table or ``row``), the field and value, and why."""

    event_index: int
    field: str
    value: float
    problem: str
    where: str = "traceEvents"


def impossible_events(
    *, start_ns: npt.NDArray[np.int64], duration_ns: npt.NDArray[np.int64], rounding_ns: int = 0
) -> list[tuple[int, str, str]]:
    """Rows of a table whose times are impossible: ``(row, field, problem)``, by row.

    Works on the columns alone (ns from any origin), so every reader's table is checked alike.
    ``rounding_ns`` is how far the reader's rounding may have pulled an end before its start
    (HTA rounds a sub-microsecond event to -1 us).
    """
    if start_ns.size == 0:
        return []
    low, high = np.percentile(start_ns, SPAN_QUANTILES)
    far = FAR_FACTOR * max(float(high - low), float(MIN_SPAN_NS))
    checks = (
        (duration_ns < -rounding_ns, "dur", "a negative duration"),
        (duration_ns > far, "dur", f"a duration over {FAR_FACTOR:g}x the trace's span"),
        (
            (start_ns < low - far) | (start_ns > high + far),
            "ts",
            f"{FAR_FACTOR:g}x the span away from the rest",
        ),
    )
    found: dict[int, tuple[str, str]] = {}
    for mask, field, problem in checks:
        for row in np.flatnonzero(mask).tolist():
            found.setdefault(row, (field, problem))
    return [(row, *found[row]) for row in sorted(found)]


def check_events(
    table: EventTable,
    *,
    path: object,
    reader_bad: Sequence[BadEvent] = (),
    left_out: Sequence[BadEvent] = (),
    skip_bad_events: bool = False,
    time_unit: str = "us",
    origin_ns: int = 0,
    rounding_ns: int = 0,
    events_field: str = "traceEvents",
) -> tuple[EventTable, tuple[BadEvent, ...]]:
    """Apply the policy to one rank's table: raise on the first impossible event, or drop them all.

    ``reader_bad`` are events the reader could not even place (no ``ts``, a value no clock
    holds); ``left_out`` are rows a reader always leaves out (an Nsight Systems row that ends
    before it starts), returned among the events left out whatever ``skip_bad_events`` says.
    ``origin_ns`` and ``time_unit`` let messages show values as the file wrote them;
    ``events_field`` names where the file keeps its events (Kineto's ``traceEvents``).
    Returns the (filtered) table and the events left out, lowest index first.
    """
    rows = impossible_events(start_ns=table.start_ns, duration_ns=table.duration_ns, rounding_ns=rounding_ns)
    index = table.event_index if table.event_index is not None else np.arange(table.num_events)
    scale = 1e-3 if time_unit == "us" else 1.0  # values shown in the file's own unit
    found = [
        BadEvent(
            event_index=int(index[row]),
            field=field,
            value=float(table.duration_ns[row] if field == "dur" else table.start_ns[row] + origin_ns)
            * scale,
            problem=problem,
            where=events_field,
        )
        for row, field, problem in rows
    ]
    bad = tuple(sorted((*reader_bad, *found), key=lambda event: event.event_index))
    if not bad:
        return table, tuple(left_out)
    if not skip_bad_events:
        first = bad[0]
        more = f" ({len(bad) - 1} more)" if len(bad) > 1 else ""
        raise TraceError(
            path,
            f"impossible event: {first.problem}{more}",
            field=f"{events_field}[{first.event_index}].{first.field}",
            value=first.value,
            fix=FIX,
        )
    keep = np.ones(table.num_events, dtype=bool)
    keep[[row for row, _, _ in rows]] = False
    return subset(table, keep), (*left_out, *bad)


def subset(table: EventTable, keep: npt.NDArray[np.bool_]) -> EventTable:
    """The rows of ``table`` where ``keep`` is true, sparse columns (FLOP, collectives) remapped."""
    if keep.all():
        return table
    new_row = np.cumsum(keep) - 1
    flop_kept = keep[table.flop_row]
    collectives = table.collectives
    kept_collectives = keep[collectives.event_index]
    chosen = np.flatnonzero(kept_collectives).tolist()
    return dataclasses.replace(
        table,
        name_id=table.name_id[keep],
        category_id=table.category_id[keep],
        start_ns=table.start_ns[keep],
        duration_ns=table.duration_ns[keep],
        tid=table.tid[keep],
        stream=table.stream[keep],
        correlation=table.correlation[keep],
        flop_row=new_row[table.flop_row[flop_kept]],
        flop=table.flop[flop_kept],
        event_index=None if table.event_index is None else table.event_index[keep],
        launch_row=None,  # rows renumbered: joined again when asked
        collectives=dataclasses.replace(
            collectives,
            event_index=new_row[collectives.event_index[kept_collectives]],
            collective=tuple(collectives.collective[i] for i in chosen),
            in_elements=collectives.in_elements[kept_collectives],
            out_elements=collectives.out_elements[kept_collectives],
            group_size=collectives.group_size[kept_collectives],
            element_bytes=collectives.element_bytes[kept_collectives],
        ),
    )


def skipped_note(skipped: dict[int, tuple[BadEvent, ...]]) -> str:
    """The note every figure carries when events were skipped: the count per rank and the first;
    why they were left out (``--skip-bad-events``, or an export's rows its reader always leaves out).
    """
    total = sum(len(events) for events in skipped.values())
    per_rank = ", ".join(f"rank {rank}: {len(events)}" for rank, events in sorted(skipped.items()) if events)
    first = next(events[0] for _, events in sorted(skipped.items()) if events)
    wheres = {event.where for events in skipped.values() for event in events}
    reasons = [FLAG] if wheres & POLICY_WHERES else []
    if wheres - POLICY_WHERES:
        reasons.append("export rows that end before they start or lack a time")
    return (
        f"{total} impossible event{'s' if total != 1 else ''} skipped ({' and '.join(reasons)}; {per_rank}); "
        f"first: {first.where}[{first.event_index}].{first.field} = {first.value:g}, {first.problem}"
    )
