"""The parts of a PyTorch profiler (Kineto) JSON trace that lightspeed reads.

msgspec decodes straight into these structs and skips every other field
without building it, which keeps decoding fast and lean. Types are as loose
as real traces are (ROCm writes some streams as hex strings, some tools write
string thread ids); anything else is reported by msgspec with its JSON path.
"""

from __future__ import annotations

import math
from typing import Any

import msgspec


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


EVENTS_DECODER = msgspec.json.Decoder(list[Event])
DOCUMENT_DECODER = msgspec.json.Decoder(TraceDocument | list[msgspec.Raw])
DIMS_DECODER = msgspec.json.Decoder(list[Any])
TYPES_DECODER = msgspec.json.Decoder(list[str | None])
