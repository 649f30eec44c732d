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


def whole_number(value: Any, field: str) -> Any:
    """``value`` with a whole-number float (``85000000000.0``, as some JSON writers put every number)
    read as the integer it is; a fraction is refused, naming ``field`` (msgspec adds the path).

    >>> whole_number(85000000000.0, "totalGlobalMem"), whole_number("3", "rank")
    (85000000000, '3')
    """
    if not isinstance(value, float):
        return value
    if not value.is_integer():
        raise ValueError(f"{field} must be a whole number, got {value!r}")
    return int(value)


class DistributedInfo(msgspec.Struct):
    """``distributedInfo``: the rank and the job's world size (whole-number floats read as integers)."""

    rank: int | float | str | None = None
    world_size: int | float | str | None = None
    backend: str | None = None

    def __post_init__(self) -> None:
        self.rank = whole_number(self.rank, "rank")
        self.world_size = whole_number(self.world_size, "world_size")


class DeviceProperties(msgspec.Struct):
    """One entry of ``deviceProperties`` (whole-number floats read as integers)."""

    id: int | float | None = None
    name: str | None = None
    totalGlobalMem: int | float | None = None  # noqa: N815 - the trace's own key

    def __post_init__(self) -> None:
        self.id = whole_number(self.id, "id")
        self.totalGlobalMem = whole_number(self.totalGlobalMem, "totalGlobalMem")


class TraceDocument(msgspec.Struct):
    """The top level of a Kineto trace; events stay raw until decoded in chunks."""

    schemaVersion: int | float | str | None = None  # noqa: N815 - the trace's own key
    distributedInfo: DistributedInfo | None = None  # noqa: N815
    deviceProperties: list[DeviceProperties] | None = None  # noqa: N815
    displayTimeUnit: str | None = None  # noqa: N815
    traceEvents: list[msgspec.Raw] | None = None  # noqa: N815

    def __post_init__(self) -> None:
        self.schemaVersion = whole_number(self.schemaVersion, "schemaVersion")


class TraceTail(msgspec.Struct):
    """The end of a trace: its last events and the top-level keys written after them."""

    schemaVersion: int | float | str | None = None  # noqa: N815 - the trace's own key
    distributedInfo: DistributedInfo | None = None  # noqa: N815
    deviceProperties: list[DeviceProperties] | None = None  # noqa: N815
    displayTimeUnit: str | None = None  # noqa: N815
    traceEvents: list[Event] = []  # noqa: N815 - msgspec copies mutable defaults

    def __post_init__(self) -> None:
        self.schemaVersion = whole_number(self.schemaVersion, "schemaVersion")


EVENTS_DECODER = msgspec.json.Decoder(list[Event])
DOCUMENT_DECODER = msgspec.json.Decoder(TraceDocument | list[msgspec.Raw])
DIMS_DECODER = msgspec.json.Decoder(list[Any])
TYPES_DECODER = msgspec.json.Decoder(list[str | None])
