"""The parts of a PyTorch profiler (Kineto) JSON trace that lightspeed reads.

msgspec decodes straight into these structs and skips every other field
without building it, which keeps decoding fast and lean. Types are as loose
as real traces are (ROCm writes some streams as hex strings, some tools write
string thread ids); anything else is reported by msgspec with its JSON path.
An ``args`` value of ``null`` reads as absent (a newer profiler may write
one): a chunk holding one is decoded again by a decoder that allows it
(:func:`decode_events`), so the usual chunk pays nothing for it.
"""

from __future__ import annotations

import math
from typing import Any, cast

import msgspec
from msgspec.structs import force_setattr


class EventArgs(msgspec.Struct, frozen=True, gc=False):
    """The ``args`` of one event: links, placement and collective parameters.

    Absent integers read as -1 (no id, no stream), absent counts likewise.
    """

    stream: int | str = -1
    correlation: int = -1
    device: int = -1
    flops: int | float = 0
    collective: str = msgspec.field(default="", name="Collective name")
    in_elements: int = msgspec.field(default=-1, name="In msg nelems")
    out_elements: int = msgspec.field(default=-1, name="Out msg nelems")
    group_size: int = msgspec.field(default=-1, name="Group size")
    dtype: str | None = None
    # Kept undecoded: only nccl:* annotations need them, every cpu_op may carry them.
    # (msgspec.Raw cannot be optional: an empty Raw means absent.)
    input_dims: msgspec.Raw = msgspec.field(default_factory=msgspec.Raw, name="Input Dims")
    input_type: msgspec.Raw = msgspec.field(default_factory=msgspec.Raw, name="Input type")


NO_ARGS = EventArgs()


class Event(msgspec.Struct, gc=False):
    """One trace event; complete events (``ph: X``) are those with a ``dur`` (``ph`` itself is not read)."""

    cat: str | None = None
    name: str = ""
    # no pid: nothing reads it, and a field msgspec skips costs less than one it decodes (~4%)
    tid: int | str = -1
    # absent times read as NaN (columns are built with np.fromiter, which takes no None)
    ts: int | float = math.nan
    dur: int | float = math.nan
    args: EventArgs = NO_ARGS


class TraceDocument(msgspec.Struct):
    """The top level of a Kineto trace; events stay raw until decoded in chunks.

    The metadata keys are decoded as plain JSON values and checked by
    :func:`~lightspeed.trace.io.kineto_metadata.trace_metadata`, which names the key that is wrong
    (msgspec's error would name only ``traceEvents`` for a key after the events).
    """

    schemaVersion: Any = None  # noqa: N815 - the trace's own key
    distributedInfo: Any = None  # noqa: N815
    deviceProperties: Any = None  # noqa: N815
    displayTimeUnit: Any = None  # noqa: N815
    traceEvents: list[msgspec.Raw] | None = None  # noqa: N815


class TraceTail(msgspec.Struct):
    """The end of a trace: its last events and the top-level keys written after them."""

    schemaVersion: Any = None  # noqa: N815 - the trace's own key
    distributedInfo: Any = None  # noqa: N815
    deviceProperties: Any = None  # noqa: N815
    displayTimeUnit: Any = None  # noqa: N815
    traceEvents: list[Event] = []  # noqa: N815 - msgspec copies mutable defaults


class _NullableArgs(EventArgs, frozen=True, gc=False):
    """:class:`EventArgs` where ``null`` reads as the field's absent value."""

    stream: int | str | None = -1  # type: ignore[assignment]
    correlation: int | None = -1  # type: ignore[assignment]
    device: int | None = -1  # type: ignore[assignment]
    flops: int | float | None = 0  # type: ignore[assignment]
    collective: str | None = msgspec.field(default="", name="Collective name")  # type: ignore[assignment]
    in_elements: int | None = msgspec.field(default=-1, name="In msg nelems")  # type: ignore[assignment]
    out_elements: int | None = msgspec.field(default=-1, name="Out msg nelems")  # type: ignore[assignment]
    group_size: int | None = msgspec.field(default=-1, name="Group size")  # type: ignore[assignment]

    def __post_init__(self) -> None:
        for name, absent in _ABSENT.items():
            if getattr(self, name) is None:
                force_setattr(self, name, absent)


_ABSENT = {
    field.name: field.default
    for field in msgspec.structs.fields(EventArgs)
    if field.name not in ("dtype", "input_dims", "input_type")
}


class _NullableEvent(Event, gc=False):
    args: _NullableArgs = _NullableArgs()


class _NullableTail(TraceTail):
    traceEvents: list[_NullableEvent] = []  # type: ignore[assignment]  # noqa: N815


EVENTS_DECODER = msgspec.json.Decoder(list[Event])
DOCUMENT_DECODER = msgspec.json.Decoder(TraceDocument | list[msgspec.Raw])
DIMS_DECODER = msgspec.json.Decoder(list[Any])
_NULLABLE_EVENTS_DECODER = msgspec.json.Decoder(list[_NullableEvent])
_TAIL_DECODER = msgspec.json.Decoder(TraceTail)
_NULLABLE_TAIL_DECODER = msgspec.json.Decoder(_NullableTail)


def decode_events(blob: bytes) -> list[Event]:
    """A JSON array of events; an ``args`` value of ``null`` reads as absent (errors: msgspec's)."""
    try:
        events: list[Event] = EVENTS_DECODER.decode(blob)
    except msgspec.ValidationError as error:
        if not _null_in_args(error):
            raise
        events = cast("list[Event]", _NULLABLE_EVENTS_DECODER.decode(blob))  # a subtype of Event
    return events


def decode_tail(blob: bytes) -> TraceTail:
    """The end of a trace (its last events, the keys after them), ``null`` args as absent."""
    try:
        tail: TraceTail = _TAIL_DECODER.decode(blob)
    except msgspec.ValidationError as error:
        if not _null_in_args(error):
            raise
        tail = _NULLABLE_TAIL_DECODER.decode(blob)
    return tail


def _null_in_args(error: msgspec.ValidationError) -> bool:
    message = str(error)
    return "got `null`" in message and ".args." in message


TYPES_DECODER = msgspec.json.Decoder(list[str | None])
