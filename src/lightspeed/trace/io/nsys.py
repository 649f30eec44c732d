"""Nsight Systems exports into the trace table: kernels, copies, memsets, CUDA calls, NVTX ranges.

``nsys export --type sqlite`` writes one table per activity. Each becomes
rows of the shared :class:`~lightspeed.trace.table.EventTable`, named and
categorised as a PyTorch profiler (Kineto) trace names them, so that every
analysis reads both the same way:

===================================  ==================  =================================
table                                category            name
===================================  ==================  =================================
``CUPTI_ACTIVITY_KIND_KERNEL``       ``kernel``          ``demangledName`` (``StringIds``)
``CUPTI_ACTIVITY_KIND_MEMCPY``       ``gpu_memcpy``      ``Memcpy HtoD (Pinned -> Device)``
``CUPTI_ACTIVITY_KIND_MEMSET``       ``gpu_memset``      ``Memset (Device)``
``CUPTI_ACTIVITY_KIND_RUNTIME``      ``cuda_runtime``    ``cudaLaunchKernel`` (``_v7000`` cut)
                                     / ``cuda_driver``
``NVTX_EVENTS`` (ranges)             ``user_annotation`` ``text`` or ``textId``
===================================  ==================  =================================

GPU rows keep their device, stream and correlation id (the link to the CUDA
call that launched them); NCCL kernels are communication by their names.
NVTX ranges named like steps (``step 12``, ``iteration 12``,
``ProfilerStep#12``) are the rank's steps. Each process with GPU work is one
rank; its device name comes from ``TARGET_INFO_CUDA_GPU``,
``TARGET_INFO_CUDA_DEVICE`` + ``TARGET_INFO_GPU``, or ``TARGET_INFO_GPU``.
"""

from __future__ import annotations

import dataclasses
import math
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import chain
from pathlib import Path
from typing import Final

import numpy as np
import numpy.typing as npt

from lightspeed.datafile import Fields, load_toml
from lightspeed.errors import TraceError
from lightspeed.trace.integrity import BadEvent
from lightspeed.trace.io.nsys_devices import device_names
from lightspeed.trace.io.nsys_sqlite import Export, check_header, open_export
from lightspeed.trace.io.source import rank_from_file_name
from lightspeed.trace.model import NVTX_STEP, RankTrace, step_table
from lightspeed.trace.table import GPU_CATEGORIES, I64, NO_VALUE, EventTable, empty_collectives, intern

NSYS_FILE: Final = Path(__file__).resolve().parents[1] / "data" / "nsys.toml"
KERNEL: Final = "CUPTI_ACTIVITY_KIND_KERNEL"
MEMCPY: Final = "CUPTI_ACTIVITY_KIND_MEMCPY"
MEMSET: Final = "CUPTI_ACTIVITY_KIND_MEMSET"
RUNTIME: Final = "CUPTI_ACTIVITY_KIND_RUNTIME"
NVTX: Final = "NVTX_EVENTS"
STRINGS: Final = "StringIds"
GPU_COLUMNS: Final = ("start", "end", "deviceId", "streamId", "correlationId")
KERNEL_NAME_COLUMNS: Final = ("demangledName", "shortName", "mangledName")
EXPORT_TIMEOUT_S: Final = 1800.0
# globalTid = globalPid + thread id in its low 24 bits (the export's own encoding)
_TID_BITS: Final = 24
_API_VERSION: Final = re.compile(r"_v\d+$")
NOT_STEP_CATEGORIES: Final = (*GPU_CATEGORIES, "cuda_runtime", "cuda_driver")


@dataclass(frozen=True)
class _Names:
    """The integer codes of ``trace/data/nsys.toml``."""

    memcpy_kind: dict[int, str]
    memory_kind: dict[int, str]
    event_class: dict[int, str]
    nvtx_ranges: tuple[int, ...]


@lru_cache(maxsize=1)
def _names() -> _Names:
    fields = Fields(str(NSYS_FILE), load_toml(NSYS_FILE))

    def codes(key: str) -> dict[int, str]:
        table = fields.table(key)
        assert table is not None
        return {int(code): table.string(code) for code in table.data}

    classes = fields.table("event_class")
    assert classes is not None
    nvtx = fields.table("nvtx")
    assert nvtx is not None
    return _Names(
        memcpy_kind=codes("memcpy_kind"),
        memory_kind=codes("memory_kind"),
        event_class={int(code): category for category in classes.data for code in classes.data[category]},
        nvtx_ranges=tuple(int(code) for code in nvtx.data["ranges"]),
    )


@dataclass
class _Rows:
    """Rows of every activity, as columns, before they are split into processes."""

    names: dict[str, int] = field(default_factory=dict)
    categories: dict[str, int] = field(default_factory=dict)
    parts: dict[str, list[npt.NDArray[np.int64]]] = field(default_factory=dict)
    # table -> rows left out because they end before they start or lack a time (said in notes)
    left_out: dict[str, int] = field(default_factory=dict)
    # each such row, with its process (globalPid, 0 when unknown): counted among the skipped events
    left_out_rows: list[tuple[int, BadEvent]] = field(default_factory=list)

    def add(self, category: str, name_ids: npt.NDArray[np.int64], columns: dict[str, I64]) -> None:
        """Append rows of one category (``columns``: start, end, tid, stream, correlation, device, pid)."""
        code = intern(self.categories, [category])[0]
        self.parts.setdefault("name_id", []).append(name_ids)
        self.parts.setdefault("category_id", []).append(np.full(name_ids.size, code, dtype=np.int64))
        for key, values in columns.items():
            self.parts.setdefault(key, []).append(values)

    def column(self, key: str) -> I64:
        parts = self.parts.get(key, [])
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)

    def name_ids(self, texts: list[str]) -> npt.NDArray[np.int64]:
        return intern(self.names, texts).astype(np.int64)


def read_nsys(path: Path, *, max_bytes: float) -> list[tuple[RankTrace, int | None]]:
    """Every process with GPU work in one export, as ``(rank trace, rank or None when unknown)``.

    Example::

        ranks = read_nsys(Path("concurrent.s16.sqlite"), max_bytes=2**32)
        ranks[0][0].device_name
        # -> 'GeForce GTX 1060 with Max-Q Design'
    """
    check_header(path, max_bytes=max_bytes)
    with open_export(path) as export:
        rows = _read_rows(export)
        devices = device_names(export)
        version = export.meta("EXPORT_SCHEMA_VERSION")
        session_ns = _session_start_ns(export)
    return _ranks(path, rows, devices, version=version, session_ns=session_ns)


def read_nsys_report(path: Path, *, max_bytes: float) -> list[tuple[RankTrace, int | None]]:
    """A ``.nsys-rep`` report: exported to SQLite with ``nsys export`` (needs nsys on PATH), then read."""
    nsys = shutil.which("nsys")
    if nsys is None:
        raise TraceError(
            path,
            "reading a .nsys-rep report needs Nsight Systems' nsys command, which is not on PATH",
            fix=f"run 'nsys export --type sqlite --output {path.stem}.sqlite {path}' and pass "
            f"{path.stem}.sqlite (or put nsys on PATH)",
        )
    with tempfile.TemporaryDirectory(prefix="lightspeed-nsys-") as folder:
        output = Path(folder) / f"{path.stem}.sqlite"
        command = [nsys, "export", "--type", "sqlite", "--force-overwrite", "true", "--output", str(output)]
        try:
            done = subprocess.run(
                [*command, str(path)], capture_output=True, text=True, timeout=EXPORT_TIMEOUT_S, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            raise TraceError(path, f"nsys export did not finish ({error})") from None
        if done.returncode != 0 or not output.is_file():
            last = (done.stderr or done.stdout or "").strip().splitlines()
            raise TraceError(
                path,
                f"nsys export failed (exit {done.returncode}: {last[-1] if last else 'no output'})",
                fix=f"run 'nsys export --type sqlite {path}' by hand to see why",
            )
        ranks = read_nsys(output, max_bytes=max_bytes)
    note = f"{path.name}: read via nsys export"
    return [(dataclasses.replace(trace, path=str(path), notes=(*trace.notes, note)), r) for trace, r in ranks]


def _read_rows(export: Export) -> _Rows:
    if not export.has(STRINGS):
        raise TraceError(
            export.path,
            f"unknown Nsight Systems export schema: no {STRINGS} table",
            fix="is this an 'nsys export --type sqlite' file? export the report again",
        )
    export.require(STRINGS, ("id", "value"))
    if not any(export.has(table) for table in (KERNEL, MEMCPY, MEMSET)):
        raise TraceError(
            export.path,
            f"no CUDA activity in this export (no {KERNEL}, {MEMCPY} or {MEMSET} table)",
            fix="profile with CUDA tracing on: nsys profile --trace=cuda,nvtx ...",
        )
    rows = _Rows()
    with_pid = all("globalPid" in export.columns(t) for t in (KERNEL, MEMCPY, MEMSET) if export.has(t))
    for reader in (_kernels, _memcpys, _memsets):
        reader(export, rows, with_pid)
    _runtime_calls(export, rows, with_pid)
    _nvtx_ranges(export, rows, with_pid)
    return rows


_VALID_TIMES: Final = '"start" IS NOT NULL AND "end" IS NOT NULL AND "end" >= "start"'


def _gpu_rows(export: Export, table: str, extra: list[tuple[str, int]], with_pid: bool, rows: _Rows) -> I64:
    """start, end, device, stream, correlation, globalPid and ``extra`` columns of a GPU table."""
    columns = [('"start"', 0), ('"end"', 0), ('"deviceId"', -1), ('"streamId"', -1), ('"correlationId"', -1)]
    columns.append(('"globalPid"', 0) if with_pid else ("0", 0))
    _count_left_out(export, table, _VALID_TIMES, rows, '"globalPid"' if with_pid else "0")
    return export.integers(table, [*columns, *extra], _VALID_TIMES)


def _count_left_out(export: Export, table: str, valid: str, rows: _Rows, process: str) -> None:
    """Count the rows ``valid`` leaves out (a time missing, an end before the start): never silently;
    each is kept as a :class:`BadEvent` of its process (``process``: the SQL of its globalPid)."""
    found = export.fetchall(
        f'SELECT rowid, "start", "end", {process} FROM "{table}" WHERE NOT ({valid}) ORDER BY rowid'
    )
    if found:
        rows.left_out[table] = len(found)
    for rowid, start, end, pid in found:
        event = _left_out_row(table, rowid, start, end)
        rows.left_out_rows.append((pid if isinstance(pid, int) else 0, event))


def _left_out_row(table: str, rowid: object, start: object, end: object) -> BadEvent:
    """The :class:`BadEvent` of one row an export's reader leaves out."""
    index = rowid if isinstance(rowid, int) else -1
    if isinstance(start, int) and isinstance(end, int):
        return BadEvent(
            index, "dur", float(end - start), f"an end {start - end:,} ns before its start", where=table
        )
    missing = "start" if not isinstance(start, int) else "end"
    return BadEvent(index, missing, math.nan, f"no {missing} time", where=table)


def _gpu_columns(data: I64) -> dict[str, I64]:
    return {
        "start": data[:, 0],
        "end": data[:, 1],
        "device": data[:, 2],
        "stream": data[:, 3],
        "tid": data[:, 3],  # Kineto puts GPU events on a thread per stream
        "correlation": data[:, 4],
        "pid": data[:, 5],
    }


def _kernels(export: Export, rows: _Rows, with_pid: bool) -> None:
    if not export.has(KERNEL):
        return
    export.require(KERNEL, GPU_COLUMNS)
    found = [c for c in KERNEL_NAME_COLUMNS if c in export.columns(KERNEL)]
    if not found:
        export.require(KERNEL, ("demangledName or shortName",))
    column = found[0]
    data = _gpu_rows(export, KERNEL, [(f'"{column}"', -1)], with_pid, rows)
    strings = export.strings(
        f'SELECT "id", "value" FROM "{STRINGS}" WHERE "id" IN (SELECT DISTINCT "{column}" FROM "{KERNEL}")'
    )
    names = _mapped(data[:, 6], rows, lambda code: strings.get(code, f"kernel {code}"))
    rows.add("kernel", names, _gpu_columns(data))


def _memcpys(export: Export, rows: _Rows, with_pid: bool) -> None:
    if not export.has(MEMCPY):
        return
    export.require(MEMCPY, (*GPU_COLUMNS, "copyKind"))
    kinds = _names()
    source = '"srcKind"' if "srcKind" in export.columns(MEMCPY) else "-1"
    target = '"dstKind"' if "dstKind" in export.columns(MEMCPY) else "-1"
    data = _gpu_rows(export, MEMCPY, [('"copyKind"', 0), (source, 7), (target, 7)], with_pid, rows)
    key = data[:, 6] * 10_000 + (data[:, 7] + 1) * 100 + (data[:, 8] + 1)

    def name(code: int) -> str:
        direction = kinds.memcpy_kind.get(code // 10_000, f"kind {code // 10_000}")
        memories = [kinds.memory_kind.get(part - 1, "Unknown") for part in ((code // 100) % 100, code % 100)]
        return f"Memcpy {direction} ({memories[0]} -> {memories[1]})"

    rows.add("gpu_memcpy", _mapped(key, rows, name), _gpu_columns(data))


def _memsets(export: Export, rows: _Rows, with_pid: bool) -> None:
    if not export.has(MEMSET):
        return
    export.require(MEMSET, GPU_COLUMNS)
    kind = '"memKind"' if "memKind" in export.columns(MEMSET) else "2"
    data = _gpu_rows(export, MEMSET, [(kind, 2)], with_pid, rows)
    memory = _names().memory_kind
    rows.add(
        "gpu_memset",
        _mapped(data[:, 6], rows, lambda code: f"Memset ({memory.get(code, 'Unknown')})"),
        _gpu_columns(data),
    )


def _cpu_columns(data: I64, with_pid: bool) -> dict[str, I64]:
    tid = data[:, 2]
    return {
        "start": data[:, 0],
        "end": data[:, 1],
        "device": np.full(tid.size, NO_VALUE, dtype=np.int64),
        "stream": np.full(tid.size, NO_VALUE, dtype=np.int64),
        "tid": tid,
        "correlation": data[:, 3],
        "pid": (tid >> _TID_BITS) << _TID_BITS if with_pid else np.zeros(tid.size, dtype=np.int64),
    }


def _runtime_calls(export: Export, rows: _Rows, with_pid: bool) -> None:
    if not export.has(RUNTIME):
        return
    export.require(RUNTIME, ("start", "end", "globalTid", "correlationId", "nameId"))
    has_class = "eventClass" in export.columns(RUNTIME)
    process = f'("globalTid" >> {_TID_BITS}) << {_TID_BITS}' if with_pid else "0"
    _count_left_out(export, RUNTIME, f'{_VALID_TIMES} AND "globalTid" IS NOT NULL', rows, process)
    data = export.integers(
        RUNTIME,
        [
            ('"start"', 0),
            ('"end"', 0),
            ('"globalTid"', 0),
            ('"correlationId"', -1),
            ('"nameId"', -1),
            ('"eventClass"' if has_class else "0", 0),
        ],
        f'{_VALID_TIMES} AND "globalTid" IS NOT NULL',
    )
    strings = export.strings(
        f'SELECT "id", "value" FROM "{STRINGS}" WHERE "id" IN (SELECT DISTINCT "nameId" FROM "{RUNTIME}")'
    )
    for event_class, category in _names().event_class.items():
        chosen = data[data[:, 5] == event_class]
        if chosen.size:
            names = _mapped(
                chosen[:, 4], rows, lambda code: _API_VERSION.sub("", strings.get(code, f"call {code}"))
            )
            rows.add(category, names, _cpu_columns(chosen, with_pid))


def _nvtx_ranges(export: Export, rows: _Rows, with_pid: bool) -> None:
    if not export.has(NVTX):
        return
    export.require(NVTX, ("start", "end", "eventType", "globalTid"))
    columns = export.columns(NVTX)
    text = '"text"' if "text" in columns else "NULL"
    text_id = 'COALESCE("textId", -1)' if "textId" in columns else "-1"
    ranges = ", ".join(str(code) for code in _names().nvtx_ranges)
    found = export.fetchall(
        f'SELECT "start", "end", "globalTid", {text_id}, {text} FROM "{NVTX}" '
        f'WHERE "eventType" IN ({ranges}) AND "start" IS NOT NULL AND "end" IS NOT NULL '
        'AND "end" >= "start" AND "globalTid" IS NOT NULL'
    )
    if not found:
        return
    strings = (
        export.strings(
            f'SELECT "id", "value" FROM "{STRINGS}" WHERE "id" IN (SELECT DISTINCT "textId" FROM "{NVTX}")'
        )
        if "textId" in columns
        else {}
    )
    try:
        data = np.fromiter(
            chain.from_iterable(row[:4] for row in found), dtype=np.int64, count=4 * len(found)
        ).reshape(-1, 4)
    except (TypeError, ValueError, OverflowError):
        raise TraceError(export.path, f"{NVTX} holds a non-integer time or thread") from None
    texts = [
        text if isinstance(text, str) else strings.get(int(data[i, 3]), "")
        for i, (*_, text) in enumerate(found)
    ]
    columns_of = _cpu_columns(np.column_stack([data[:, :3], np.full(len(found), NO_VALUE)]), with_pid)
    rows.add("user_annotation", rows.name_ids(texts), columns_of)


def _mapped(codes: I64, rows: _Rows, name: Callable[[int], str]) -> npt.NDArray[np.int64]:
    """Name ids for integer codes, naming each distinct code once."""
    unique, inverse = np.unique(codes, return_inverse=True)
    ids = rows.name_ids([name(int(code)) for code in unique])
    result: npt.NDArray[np.int64] = ids[inverse.reshape(-1)] if unique.size else ids
    return result


def _session_start_ns(export: Export) -> int:
    """Absolute UTC ns of the session's time zero (``TARGET_INFO_SESSION_START_TIME``), else 0."""
    if "utcEpochNs" not in export.columns("TARGET_INFO_SESSION_START_TIME"):
        return 0
    row = export.connection.execute(
        'SELECT "utcEpochNs" FROM "TARGET_INFO_SESSION_START_TIME" LIMIT 1'
    ).fetchone()
    return int(row[0]) if row and isinstance(row[0], int) else 0


def _ranks(
    path: Path, rows: _Rows, devices: dict[int, str], *, version: str | None, session_ns: int
) -> list[tuple[RankTrace, int | None]]:
    """One rank per process with GPU work, in process order."""
    pid = rows.column("pid")
    category = rows.column("category_id")
    gpu_codes = [code for name, code in rows.categories.items() if name in GPU_CATEGORIES]
    on_gpu = np.isin(category, gpu_codes)
    processes = np.unique(pid[on_gpu]).tolist()
    if not processes:
        processes = [0]
    names = tuple(rows.names)
    categories = tuple(rows.categories)
    notes = [] if version else [f"{path.name}: no EXPORT_META_DATA; export schema version unknown"]
    notes += [
        f"{path.name}: {count:,} rows of {table} left out: they end before they start or lack a time"
        for table, count in rows.left_out.items()
    ]
    result: list[tuple[RankTrace, int | None]] = []
    for index, process in enumerate(processes):
        chosen = np.flatnonzero(pid == process) if len(processes) > 1 else np.arange(pid.size)
        table, origin = _table(rows, chosen, names, categories)
        rank, rank_notes = _rank_of(path, index, len(processes), process)
        # a left-out row of a process without GPU work is counted on the first rank
        left_out = tuple(
            event
            for pid, event in rows.left_out_rows
            if len(processes) == 1 or pid == process or (index == 0 and pid not in processes)
        )
        trace = RankTrace(
            rank=0 if rank is None else rank,
            path=str(path),
            schema_version=f"nsys export {version}" if version else "",
            world_size=len(processes) if len(processes) > 1 else None,
            backend=None,
            device_name=_device_name(table, devices),
            origin_ns=session_ns + origin,
            time_unit="ns",
            events=table,
            steps=step_table(table, pattern=NVTX_STEP, exclude_categories=NOT_STEP_CATEGORIES),
            notes=(*notes, *rank_notes),
            source_format="nsys",
            skipped_events=left_out,
        )
        result.append((trace, rank))
    return result


def _rank_of(path: Path, index: int, count: int, process: int) -> tuple[int | None, list[str]]:
    if count > 1:
        pid = (process >> _TID_BITS) & ((1 << _TID_BITS) - 1)
        return index, [f"{path.name}: rank {index} is process {pid} ({index + 1} of {count} with GPU work)"]
    from_name = rank_from_file_name(path)
    if from_name is not None:
        return from_name, [f"{path.name}: rank {from_name} taken from the file name"]
    return None, [f"{path.name}: no rank in the file name; assumed rank 0"]


def _table(
    rows: _Rows, chosen: I64, names: tuple[str, ...], categories: tuple[str, ...]
) -> tuple[EventTable, int]:
    start = rows.column("start")[chosen]
    order = chosen[np.argsort(start, kind="stable")]
    start = rows.column("start")[order]
    origin = int(start.min()) if start.size else 0
    category = rows.column("category_id")[order].astype(np.int32)
    device = rows.column("device")[order]
    gpu = np.isin(category, [i for i, name in enumerate(categories) if name in GPU_CATEGORIES])
    used, counts = np.unique(device[gpu], return_counts=True)
    table = EventTable(
        names=names,
        categories=categories,
        name_id=rows.column("name_id")[order].astype(np.int32),
        category_id=category,
        start_ns=start - origin,
        duration_ns=rows.column("end")[order] - start,
        tid=rows.column("tid")[order],
        stream=rows.column("stream")[order],
        correlation=rows.column("correlation")[order],
        flop_row=np.zeros(0, np.int64),
        flop=np.zeros(0, np.float64),
        device_counts=dict(zip(used.tolist(), counts.tolist(), strict=True)),
        collectives=empty_collectives(),
    )
    return table, origin


def _device_name(table: EventTable, devices: dict[int, str]) -> str | None:
    """The GPU the rank's GPU events ran on most often."""
    used = {device: count for device, count in table.device_counts.items() if device >= 0}
    if not used:
        return None
    device = max(used, key=lambda d: (used[d], -d))
    return devices.get(device)
