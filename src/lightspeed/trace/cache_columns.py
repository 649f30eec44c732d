"""The event columns of a trace cache entry: stored narrow, read when an analysis first uses them.

Writing (:func:`narrow`): each integer column is kept in the narrowest integer type that holds
its values exactly (``int8`` to ``int64``, signed or not), decided per entry from the data;
times that are all whole microseconds (every Kineto trace read with ``round_to_us``) are kept
in microseconds (``scale`` 1000). On the 2M-event tiled trace a table row takes 33 bytes
(event index included) instead of 64, and the entry 20.6 MB with its GPU events.

Reading (:class:`CachedEventTable`): an :class:`~lightspeed.trace.table.EventTable` whose
columns are read from the entry (memory-mapped, already verified whole by the cache) the first
time an analysis touches them, and widened then to the table's own types, so a cached table
equals a parsed one. The category and name masks index the narrow id columns as they are, and
the rank's GPU events (:func:`lightspeed.trace.gpu.gpu_rows`, kept beside the table when the
entry was written) are chosen by the last step's cutoff before they are widened: ``trace
summary`` reads the GPU events and no column of the table.

>>> stored = narrow("start_ns", np.array([0, 5_000, 2_000_000], dtype=np.int64))
>>> stored.values.dtype.name, stored.values.tolist(), stored.scale
('int16', [0, 5, 2000], 1000)
>>> widen(stored.values, stored.scale, np.int64).tolist()
[0, 5000, 2000000]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

import numpy as np
import numpy.typing as npt

from lightspeed.errors import TraceError
from lightspeed.trace.table import EventTable

if TYPE_CHECKING:
    from lightspeed.trace.gpu import GpuRows

# Columns of times in ns, kept in microseconds when every value is a whole microsecond.
SCALED_COLUMNS: Final = ("start_ns", "duration_ns", "launched_ns")
MICROSECOND_NS: Final = 1000
# The candidates, narrowest first (a column takes the first that holds its smallest and largest value).
INTEGER_TYPES: Final = (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64)
# The table's own type of each column (what a parse gives; a cached table widens to it).
TABLE_TYPES: Final[dict[str, type[np.generic]]] = {
    "name_id": np.int32,
    "category_id": np.int32,
    "start_ns": np.int64,
    "duration_ns": np.int64,
    "tid": np.int64,
    "stream": np.int64,
    "correlation": np.int64,
    "event_index": np.int64,
    "flop": np.float64,
    # derived once when written: each row's launching CPU row (lightspeed.trace.gpu.launch_rows)
    "launch_row": np.int64,
}
# The columns of a rank's GPU events (lightspeed.trace.gpu.GpuRows), kept beside its table.
GPU_TYPES: Final[dict[str, type[np.generic]]] = {
    "row": np.int64,
    "start_ns": np.int64,
    "duration_ns": np.int64,
    "name_id": np.int32,
    "category_id": np.int32,
    "stream": np.int64,
    "launch": np.int64,
    "launched_ns": np.int64,
}
_SPARSE_FLOP: Final = ("flop_row", "flop")  # the table's FLOP counts, from the dense column "flop"


@dataclass(frozen=True, eq=False)
class StoredColumn:
    """A column as the entry keeps it: the values divided by ``scale``, in a narrow type."""

    values: npt.NDArray[Any]
    scale: int


def narrow(name: str, values: npt.NDArray[Any]) -> StoredColumn:
    """``values`` of column ``name`` in the narrowest exact form (floats are kept as they are)."""
    if values.dtype.kind == "f":
        return StoredColumn(np.ascontiguousarray(values), 1)
    scale = 1
    if name in SCALED_COLUMNS and values.size and not (values % MICROSECOND_NS).any():
        scale, values = MICROSECOND_NS, values // MICROSECOND_NS
    low, high = (int(values.min()), int(values.max())) if values.size else (0, 0)
    chosen = next(t for t in INTEGER_TYPES if np.iinfo(t).min <= low and high <= np.iinfo(t).max)
    return StoredColumn(np.ascontiguousarray(values, dtype=chosen), scale)


def widen(values: npt.NDArray[Any], scale: int, dtype: Any) -> npt.NDArray[Any]:
    """Stored ``values`` back in the table's type and unit (exact: the writer divided exactly).

    The wide array lives in memory from Arrow's pool (pyarrow is there whenever the cache is):
    numpy's own large allocations are fresh pages each time, whose first touch costs more than
    the copy on this kind of virtual machine (2.5k page faults against 170 for a 129k-event
    rank's GPU columns, 10 against 7 ms).
    """
    import pyarrow as pa

    wide: npt.NDArray[Any] = np.frombuffer(pa.allocate_buffer(values.size * np.dtype(dtype).itemsize), dtype)
    wide[...] = values
    if scale != 1:
        wide *= scale
    return wide


@dataclass(frozen=True, eq=False)
class EntryColumns:
    """Reads one rank's columns from its (verified) Parquet file, each once, on demand.

    ``read(name)`` returns the stored column as numpy (narrow); ``scales`` the unit of each;
    ``bounds`` the range ``[low, high)`` of row and id columns (checked when read).
    """

    read: Callable[[str], npt.NDArray[Any]]
    path: str
    num_rows: int
    present: tuple[str, ...]
    scales: dict[str, int]
    bounds: dict[str, tuple[int, int]]
    _stored: dict[str, npt.NDArray[Any]] = field(default_factory=dict, repr=False)

    def stored(self, name: str) -> npt.NDArray[Any]:
        """Column ``name`` as stored (read and checked on first use)."""
        if name not in self._stored:
            try:
                values = self.read(name)
            except Exception as error:  # a verified entry that still fails: nothing to trust
                raise self._error(name, f"cannot be read ({error})") from None
            self._check(name, values)
            self._stored[name] = values
        return self._stored[name]

    def scale(self, name: str) -> int:
        """The unit of column ``name`` as stored, in the table's unit."""
        return self.scales.get(name, 1)

    def _check(self, name: str, values: npt.NDArray[Any]) -> None:
        if values.size != self.num_rows:
            raise self._error(name, f"holds {values.size} rows, not {self.num_rows}")
        if name not in self.bounds or not values.size:
            return
        low, high = self.bounds[name]
        if not low <= int(values.min()) <= int(values.max()) < high:
            raise self._error(name, f"holds a value outside [{low}, {high})")

    def _error(self, name: str, problem: str) -> TraceError:
        return TraceError(
            self.path,
            f"the trace cache entry's column {name} {problem}",
            fix="run 'lightspeed trace cache clear' (or pass --no-cache) and analyse the trace again",
        )


class _LazyColumn:
    """A column of :class:`CachedEventTable`, read from the entry on first use and then kept
    (a non-data descriptor: the kept array in the instance shadows it, as ``cached_property``)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, table: CachedEventTable | None, owner: type | None = None) -> Any:
        if table is None:
            return self
        return table._materialize(self.name)


class CachedEventTable(EventTable):
    """An :class:`EventTable` read from the trace cache: the same columns and types as the parse
    gave, each read from the entry when first used (see the module's docstring).

    Built by :meth:`from_entry`; ``dataclasses.replace`` and pickling give an ordinary table.
    """

    name_id = _LazyColumn()
    category_id = _LazyColumn()
    start_ns = _LazyColumn()
    duration_ns = _LazyColumn()
    tid = _LazyColumn()
    stream = _LazyColumn()
    correlation = _LazyColumn()
    event_index = _LazyColumn()
    launch_row = _LazyColumn()
    flop_row = _LazyColumn()
    flop = _LazyColumn()

    @classmethod
    def from_entry(cls, columns: EntryColumns, gpu_columns: EntryColumns, **fields: Any) -> CachedEventTable:
        """A table over ``columns`` and its GPU events' ``gpu_columns``; ``fields`` are the other
        fields (names, categories, device counts, collectives), from the entry's metadata."""
        table = cls.__new__(cls)
        table.__dict__.update(fields, _entry=columns, _gpu_entry=gpu_columns)
        return table

    def stored_num_gpu_events(self) -> int | None:
        """How many GPU events the entry keeps (``None`` for a table built otherwise)."""
        entry: EntryColumns | None = self.__dict__.get("_gpu_entry")
        return None if entry is None else entry.num_rows

    def stored_gpu_rows(self, launched_before: int | None = None) -> GpuRows | None:
        """The GPU events the entry keeps, those launched before ``launched_before`` (ns) when
        given (read once per cutoff; ``None`` for a table built otherwise)."""
        entry: EntryColumns | None = self.__dict__.get("_gpu_entry")
        if entry is None:
            return None
        kept: dict[int | None, GpuRows] = self.__dict__.setdefault("_gpu_rows", {})
        if launched_before not in kept:
            kept[launched_before] = _gpu_rows(entry, launched_before)
        return kept[launched_before]

    def _materialize(self, name: str) -> Any:
        entry: EntryColumns = self.__dict__["_entry"]
        if name in _SPARSE_FLOP:
            dense = entry.stored("flop") if "flop" in entry.present else np.zeros(0, dtype=np.float64)
            row = np.flatnonzero(dense > 0)
            self.__dict__.update(flop_row=row, flop=dense[row])
        elif name in entry.present:
            self.__dict__[name] = widen(entry.stored(name), entry.scale(name), TABLE_TYPES[name])
        else:  # an optional column the table does not have
            self.__dict__[name] = None
        return self.__dict__[name]

    def _stored(self, name: str) -> npt.NDArray[Any] | None:
        """The narrow column while the table has not widened it (``None`` once it has)."""
        entry: EntryColumns | None = self.__dict__.get("_entry")
        if entry is None or name in self.__dict__ or name not in entry.present:
            return None
        return entry.stored(name)

    @property
    def num_events(self) -> int:
        """Number of events in the table (known without reading a column)."""
        entry: EntryColumns | None = self.__dict__.get("_entry")
        return entry.num_rows if entry is not None else super().num_events

    def _ids(self, name: str) -> npt.NDArray[np.integer[Any]]:
        stored = self._stored(name)  # ids are never scaled: the narrow column indexes as well
        return super()._ids(name) if stored is None else stored

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as an ordinary table, every column read (an entry's memory map stays here)."""
        fields = {name: getattr(self, name) for name in EventTable.__dataclass_fields__}
        return (_event_table, (fields,))


def _gpu_rows(entry: EntryColumns, launched_before: int | None) -> GpuRows:
    """The kept GPU events, chosen on the narrow columns (then only the chosen rows are widened)."""
    from lightspeed.trace.gpu import GpuRows  # the analyses' module: loaded by the analysis

    chosen: npt.NDArray[np.bool_] | None = None
    if launched_before is not None:  # launched * scale < cutoff exactly when launched < ceil(cutoff / scale)
        bound = -(-launched_before // entry.scale("launched_ns"))
        chosen = entry.stored("launched_ns") < bound  # an event without a launch: its own start
    columns = {name: entry.stored(name) for name in GPU_TYPES}
    if chosen is not None:
        columns = {name: values[chosen] for name, values in columns.items()}
    return GpuRows(
        **{name: widen(values, entry.scale(name), GPU_TYPES[name]) for name, values in columns.items()}
    )


def _event_table(fields: dict[str, Any]) -> EventTable:
    return EventTable(**fields)
