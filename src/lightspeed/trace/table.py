"""Columnar event tables: one numpy array per field, names interned once.

Every reader (Kineto JSON, Nsight Systems SQLite; see :mod:`lightspeed.trace.io`)
fills the same :class:`EventTable`: a handful of int64/int32 arrays (about 80
bytes per event) plus one tuple of distinct names. Times are int64
nanoseconds from the rank's ``origin_ns``. Every analysis reads only this
table, so each works on every format.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import numpy as np
import numpy.typing as npt

from lightspeed.datafile import Fields, load_toml

if TYPE_CHECKING:
    from lightspeed.trace.gpu import GpuRows

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
NO_VALUE: Final = -1  # an id, stream or link the event does not have

# Categories of events that occupy a GPU (names of older Kineto versions included).
GPU_CATEGORIES: Final = (
    "kernel",
    "gpu_memcpy",
    "gpu_memset",
    "Kernel",
    "Memcpy",
    "Memset",
    "mtia_ccp_events",
)
DTYPES_FILE: Final = Path(__file__).resolve().parent / "data" / "dtypes.toml"


@dataclass(frozen=True, eq=False)
class CollectiveArgs:
    """Collective parameters carried by trace events, one row per carrying event.

    Sources: NCCL kernels and ``record_param_comms`` ops of recent PyTorch
    (``Collective name``, ``In/Out msg nelems``, ``Group size``, ``dtype``)
    and ``nccl:*`` annotations of older ones (``Input Dims``, ``Input type``).
    Unknown counts are -1, unknown element sizes NaN.
    """

    event_index: I64
    collective: tuple[str, ...]
    in_elements: I64
    out_elements: I64
    group_size: I64
    element_bytes: F64


@dataclass(frozen=True, eq=False)
class EventTable:
    """A rank's complete events (``ph: X``) as equal-length columns.

    ``name_id``/``category_id`` index ``names``/``categories``. ``tid`` is
    the thread (CPU events) or stream row (GPU events); ``stream`` and
    ``correlation`` are -1 where absent. FLOP estimates of the profiler
    (``with_flops=True``) are kept sparse: ``flop`` of rows ``flop_row``.
    ``device_counts`` counts GPU events per ``args.device``.
    """

    names: tuple[str, ...]
    categories: tuple[str, ...]
    name_id: npt.NDArray[np.int32]
    category_id: npt.NDArray[np.int32]
    start_ns: I64
    duration_ns: I64
    tid: I64
    stream: I64
    correlation: I64
    flop_row: I64
    flop: F64
    device_counts: dict[int, int]
    collectives: CollectiveArgs
    event_index: I64 | None = None  # each row's index in the file's events (None: not known)
    # each row's launching CPU row (-1: none), as lightspeed.trace.gpu.launch_rows joins them;
    # kept by the cache so a cached table skips the join (None: joined when asked)
    launch_row: I64 | None = None

    @classmethod
    def empty(cls) -> EventTable:
        """A table without events."""
        none = np.zeros(0, np.int64)
        return cls(
            names=(),
            categories=(),
            name_id=np.zeros(0, np.int32),
            category_id=np.zeros(0, np.int32),
            start_ns=none,
            duration_ns=none,
            tid=none,
            stream=none,
            correlation=none,
            flop_row=none,
            flop=np.zeros(0, np.float64),
            device_counts={},
            collectives=empty_collectives(),
        )

    @property
    def num_events(self) -> int:
        """Number of events in the table."""
        return int(self.start_ns.size)

    @property
    def end_ns(self) -> I64:
        """End of each event (ns from the origin)."""
        return self.start_ns + self.duration_ns

    def stored_num_gpu_events(self) -> int | None:
        """How many GPU events a cache entry keeps for this table (``None``: count them)."""
        return None

    def stored_gpu_rows(self, launched_before: int | None = None) -> GpuRows | None:
        """The GPU rows a cache entry keeps for this table, those launched before
        ``launched_before`` (ns) when given (:func:`lightspeed.trace.gpu.gpu_rows` gathers them
        when ``None``, as for a parsed table)."""
        return None

    def category_mask(self, categories: Sequence[str]) -> npt.NDArray[np.bool_]:
        """Which events belong to any of ``categories``."""
        # a lookup per category id, indexed by the column: one gather, no sort (np.isin sorts)
        wanted = np.fromiter((name in categories for name in self.categories), bool, len(self.categories))
        return wanted[self._ids("category_id")] if self.num_events else np.zeros(0, dtype=bool)

    def name_mask(self, predicate: Callable[[str], bool]) -> npt.NDArray[np.bool_]:
        """Which events have a name for which ``predicate(name)`` is true (tested once per name)."""
        hits = np.fromiter((bool(predicate(name)) for name in self.names), dtype=bool, count=len(self.names))
        return hits[self._ids("name_id")] if self.num_events else np.zeros(0, dtype=bool)

    def _ids(self, name: str) -> npt.NDArray[np.integer[Any]]:
        """An id column, in whatever integer type the table holds it (only to index with)."""
        ids: npt.NDArray[np.integer[Any]] = getattr(self, name)
        return ids


@lru_cache(maxsize=1)
def element_sizes() -> dict[str, float]:
    """Bytes per element of each trace dtype name (lower case, no ``c10::``)."""
    fields = Fields(str(DTYPES_FILE), load_toml(DTYPES_FILE))
    table = fields.table("bytes_per_element")
    assert table is not None
    return {key.lower(): table.number(key) for key in table.data}


def element_bytes(dtype: str | None) -> float:
    """Bytes per element of a trace dtype name such as ``Float`` or ``c10::BFloat16``; NaN if unknown."""
    if not dtype:
        return math.nan
    key = dtype.strip().lower().removeprefix("c10::")
    return element_sizes().get(key, math.nan)


def empty_collectives() -> CollectiveArgs:
    """A :class:`CollectiveArgs` with no rows (a format that carries no collective parameters)."""
    return CollectiveArgs(
        event_index=np.zeros(0, np.int64),
        collective=(),
        in_elements=np.zeros(0, np.int64),
        out_elements=np.zeros(0, np.int64),
        group_size=np.zeros(0, np.int64),
        element_bytes=np.zeros(0, np.float64),
    )


def intern(table: dict[Any, int], values: list[Any]) -> npt.NDArray[np.int32]:
    """Ids of ``values`` in ``table``, adding new values in first-seen order (C-level loops only).

    Known values are looked up in one pass; only a chunk that brings new values pays for a
    second (after the first chunks of a trace, almost none do).

    >>> table: dict[str, int] = {"a": 0}
    >>> intern(table, ["b", "a", "c", "b"]).tolist(), table
    ([1, 0, 2, 1], {'a': 0, 'b': 1, 'c': 2})
    """
    count = len(values)
    try:  # one C-level pass of plain lookups (a single-iterable map is the cheapest)
        return np.fromiter(map(table.__getitem__, values), dtype=np.int32, count=count)
    except KeyError:
        pass
    for value in [v for v in dict.fromkeys(values) if v not in table]:
        table[value] = len(table)
    return np.fromiter(map(table.__getitem__, values), dtype=np.int32, count=count)
