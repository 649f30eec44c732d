"""The columnar cache of parsed traces: each trace file's tables as Parquet, so a second analysis
never parses the file again.

The first read of a trace file writes what the reader made of it (every rank's
event table, steps, metadata and notes) as Parquet, per rank ``rank-N.parquet``
(the table, each column in its narrowest exact type: :mod:`lightspeed.trace.cache_columns`)
and ``gpu-N.parquet`` (the rank's GPU events, :func:`lightspeed.trace.gpu.gpu_rows`), in
``<lightspeed cache>/traces/<key>/`` (see :func:`lightspeed.paths.lightspeed_cache`).
The key is the SHA-256 of the file's bytes, the file name (ranks and notes may
come from it), the reading options and :data:`PARSER_VERSION`, so a changed
trace, other options or a newer parser never meet an old entry. An entry is
checked whole before it is used: every file's size and CRC-32 (``checksums.json``),
its recorded key, parser version, columns and row counts must match; anything
else (a truncated or damaged file, a foreign one) is deleted and the trace
parsed again. Its columns are then read from the memory-mapped files when an
analysis first uses them. Entries are written to a temporary folder and renamed,
so a reader never sees half an entry. The oldest entries are evicted beyond the size
limit (``$LIGHTSPEED_TRACE_CACHE_MAX_BYTES``, default 10 GiB).

Hashing a large trace costs about as much as reading its entry, so the digest
of each trace path is remembered in ``<cache>/traces/.digests/`` with the
file's device, inode, size, modification and change times (ns), and reused
while all five are unchanged (as git's index does). A record written within
:data:`RACY_WINDOW_NS` of the file's last change is not trusted (the file
could change again within the file system's timestamp granularity and keep
its times), nor is a damaged or foreign one: those files are hashed again.
The entry stays keyed by the content digest; only the hashing is skipped.

Needs pyarrow (``pip install 'lightspeed[trace]'``); without it the cache is
off and the trace commands work as before (an INFO log says so once).
``$LIGHTSPEED_TRACE_CACHE=off`` turns it off too; ``--no-cache`` for one command.

>>> cache = TraceCache.default()
>>> cache is None or cache.folder.name == "traces"
True
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import importlib.util
import json
import logging
import math
import os
import shutil
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from lightspeed.errors import MissingExtraError, UserInputError
from lightspeed.extras import import_extra
from lightspeed.files import excerpt
from lightspeed.limits import MAX_BYTES
from lightspeed.paths import lightspeed_cache, switch_on
from lightspeed.records import JsonDict, Record
from lightspeed.trace.cache_columns import (
    GPU_TYPES,
    INTEGER_TYPES,
    TABLE_TYPES,
    CachedEventTable,
    EntryColumns,
    StoredColumn,
    narrow,
)
from lightspeed.trace.integrity import BadEvent
from lightspeed.trace.model import RankTrace, StepTable
from lightspeed.trace.table import CollectiveArgs
from lightspeed.units import GIB, parse_bytes

_LOG = logging.getLogger(__name__)
ReadOptions = dict[str, float | str | bool]  # the reading options that shape a file's tables

# Bump when any reader's output changes for the same input (columns, rounding, notes, steps).
PARSER_VERSION: Final = "2026.12-5"
CACHE_SWITCH_VARIABLE: Final = "LIGHTSPEED_TRACE_CACHE"
CACHE_LIMIT_VARIABLE: Final = "LIGHTSPEED_TRACE_CACHE_MAX_BYTES"
DEFAULT_CACHE_MAX_BYTES: Final = int(10 * GIB)
MAX_CACHE_BYTES: Final = MAX_BYTES  # 1 PiB: above any disk a cache folder lives on
_META_KEY: Final = b"lightspeed"
_HASH_BLOCK_BYTES: Final = 1 << 22
DIGEST_FOLDER: Final = ".digests"  # inside the cache folder; a dot: never taken for an entry
# A digest recorded less than this after the file last changed is not reused (git's "racy" files).
RACY_WINDOW_NS: Final = 2_000_000_000
CHECKSUMS_FILE: Final = "checksums.json"  # in each entry: every Parquet file's size and CRC-32
# Arrow's type names of the stored columns -> numpy's (the integer types narrow() chooses among
# are named alike; Arrow calls float64 "double")
_NUMPY_TYPES: Final = {np.dtype(t).name: np.dtype(t).name for t in INTEGER_TYPES} | {"double": "float64"}


@dataclass(frozen=True)
class CachedRank:
    """One rank a trace file holds, as its reader returned it: the rank it names (``None``
    when the file does not say) and the rank's trace."""

    rank: int | None
    trace: RankTrace


@dataclass(frozen=True)
class CacheInfo(Record):
    """What the cache holds: where, how many entries, their bytes, the limit."""

    folder: str
    num_entries: int
    total_bytes: int
    max_bytes: int

    def to_dict(self) -> JsonDict:
        """Plain JSON."""
        return dataclasses.asdict(self)


@lru_cache(maxsize=1)
def pyarrow_available() -> bool:
    """Whether pyarrow is installed and imports (said once, at INFO level, when it does not)."""
    if importlib.util.find_spec("pyarrow") is None:
        _LOG.info("trace cache off: pyarrow is not installed (pip install 'lightspeed[trace]')")
        return False
    try:  # installed but broken (built for another NumPy): the cache is off, the analysis goes on
        import_extra("pyarrow.parquet", extra="trace", purpose="the trace cache")
    except MissingExtraError as error:
        _LOG.info("trace cache off: %s", error)
        return False
    return True


def cache_limit_bytes() -> int:
    """The size limit of the cache: ``$LIGHTSPEED_TRACE_CACHE_MAX_BYTES`` (bytes), else 10 GiB."""
    text = os.environ.get(CACHE_LIMIT_VARIABLE, "").strip()
    if not text:
        return DEFAULT_CACHE_MAX_BYTES
    try:
        value = parse_bytes(text)
    except UserInputError:
        value = math.nan
    if not (math.isfinite(value) and value.is_integer() and 0 <= value <= MAX_CACHE_BYTES):
        raise UserInputError(
            f"{CACHE_LIMIT_VARIABLE}={excerpt(text)!r} is not a size the trace cache can keep; give a "
            f"whole number of bytes from 0 to {MAX_CACHE_BYTES:,.0f} (1 PiB), e.g. 10GiB or 10737418240"
        )
    return int(value)


def cache_switch_on() -> bool:
    """Whether ``$LIGHTSPEED_TRACE_CACHE`` leaves the cache on (unset, on/1/yes/true) or turns it
    off (off/0/no/false); any other value is a :class:`UserInputError` naming the variable
    (:func:`lightspeed.paths.switch_on`, which the catalog cache's switch reads too)."""
    return switch_on(CACHE_SWITCH_VARIABLE, what="the trace cache")


def file_digest(path: Path) -> str:
    """SHA-256 of the file's bytes (hex)."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(_HASH_BLOCK_BYTES):
            digest.update(block)
    return digest.hexdigest()


@dataclass(frozen=True)
class FileStamp:
    """What tells a file that has not changed since it was hashed: device, inode, size, and the
    modification and status-change times (ns); a rewrite changes at least one of them."""

    device: int
    inode: int
    size_bytes: int
    mtime_ns: int
    ctime_ns: int

    @classmethod
    def of(cls, path: Path) -> FileStamp:
        """The stamp of ``path`` now (a symbolic link's target)."""
        status = os.stat(path)
        return cls(status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns, status.st_ctime_ns)

    def to_list(self) -> list[int]:
        """The five numbers, as a digest record keeps them."""
        return [self.device, self.inode, self.size_bytes, self.mtime_ns, self.ctime_ns]


@dataclass(frozen=True)
class TraceCache:
    """A folder of cached trace tables with a size limit (bytes)."""

    folder: Path
    max_bytes: int = DEFAULT_CACHE_MAX_BYTES

    @classmethod
    def default(cls) -> TraceCache | None:
        """The cache in the lightspeed cache folder; ``None`` when pyarrow is missing or
        ``$LIGHTSPEED_TRACE_CACHE`` is ``off``."""
        if not cache_switch_on():
            return None
        if not pyarrow_available():
            return None
        return cls(folder=lightspeed_cache() / "traces", max_bytes=cache_limit_bytes())

    # -- keys ----------------------------------------------------------------

    def key(self, path: Path, options: ReadOptions) -> tuple[str, str]:
        """(entry name, content digest) of ``path`` read with ``options``."""
        digest = self.digest(path)
        text = json.dumps(
            {"sha256": digest, "name": path.name, "parser": PARSER_VERSION, "options": options},
            sort_keys=True,
        )
        return hashlib.sha256(text.encode()).hexdigest()[:32], digest

    def digest(self, path: Path) -> str:
        """SHA-256 of ``path``'s bytes: the recorded one while the file's stamp is unchanged and
        the record is older than the racy window, else hashed (and recorded) now."""
        record = self._digest_record(path)
        stamp = FileStamp.of(path)
        known = _recorded_digest(record, path, stamp)
        if known is not None:
            return known
        digest = file_digest(path)
        if FileStamp.of(path) == stamp:  # unchanged while it was read: the digest is of this stamp
            _write_digest_record(record, path, stamp, digest)
        return digest

    def _digest_record(self, path: Path) -> Path:
        name = hashlib.sha256(os.fsencode(path.resolve())).hexdigest()[:32]
        return self.folder / DIGEST_FOLDER / f"{name}.json"

    # -- reading -------------------------------------------------------------

    def load(self, path: Path, options: ReadOptions) -> tuple[list[CachedRank] | None, str, str]:
        """The cached ranks of ``path`` (``None`` on a miss), the entry name and the digest.

        A stale or damaged entry is deleted (and reported at INFO level) and counts as a miss.
        """
        name, digest = self.key(path, options)
        entry = self.folder / name
        if not entry.is_dir():
            _LOG.info("trace cache miss: %s (no entry %s); parsing", path, entry)
            return None, name, digest
        try:
            ranks = _read_entry(entry, digest=digest, path=path)
        except Exception as error:  # any failure to read means: not trusted, rebuilt
            _LOG.info("trace cache entry %s for %s not used (%s); parsing again", entry, path, error)
            shutil.rmtree(entry, ignore_errors=True)
            return None, name, digest
        os.utime(entry)  # most recently used: evicted last
        _LOG.info("trace cache hit: %s (%s)", path, entry)
        return ranks, name, digest

    # -- writing -------------------------------------------------------------

    def save(self, name: str, digest: str, path: Path, ranks: Sequence[CachedRank]) -> Path | None:
        """Write an entry (atomically: a temporary folder renamed); evict beyond the limit.

        Returns the entry's folder, or ``None`` when it was not written (larger than the
        limit, or the cache folder cannot be written: the analysis goes on without it).
        """
        entry = self.folder / name
        staging = self.folder / f".{name}.{os.getpid()}.{uuid.uuid4().hex[:8]}"
        try:
            staging.mkdir(parents=True)
            for index, item in enumerate(ranks):
                _write_rank(staging, item, digest=digest, part=index, parts=len(ranks))
            _write_checksums(staging)
            size = _folder_bytes(staging)
            if size > self.max_bytes:
                _LOG.info(
                    "trace cache: %s needs %d bytes, over the %d-byte limit; not kept",
                    path,
                    size,
                    self.max_bytes,
                )
                shutil.rmtree(staging, ignore_errors=True)
                return None
            try:
                staging.rename(entry)
            except OSError:  # another process wrote the same entry meanwhile: keep theirs
                shutil.rmtree(staging, ignore_errors=True)
        except OSError as error:
            _LOG.info(
                "trace cache: cannot write %s (%s); going on without it", entry, error.strerror or error
            )
            shutil.rmtree(staging, ignore_errors=True)
            return None
        _LOG.info("trace cache: wrote %s for %s", entry, path)
        self.evict()
        return entry

    def entries(self) -> list[Path]:
        """The complete entries, least recently used first."""
        if not self.folder.is_dir():
            return []
        found = [p for p in self.folder.iterdir() if p.is_dir() and not p.name.startswith(".")]
        return sorted(found, key=lambda p: p.stat().st_mtime)

    def evict(self) -> list[Path]:
        """Delete the least recently used entries until the cache fits its limit; return them."""
        entries = self.entries()
        sizes = {entry: _folder_bytes(entry) for entry in entries}
        total = sum(sizes.values())
        removed: list[Path] = []
        for entry in entries:
            if total <= self.max_bytes:
                break
            shutil.rmtree(entry, ignore_errors=True)
            total -= sizes[entry]
            removed.append(entry)
        if removed:
            _LOG.info("trace cache: evicted %d entries to stay under %d bytes", len(removed), self.max_bytes)
        return removed

    def clear(self) -> CacheInfo:
        """Delete every entry, the digest records and stray temporary folders; return what was there."""
        before = self.info()
        if self.folder.is_dir():
            for item in self.folder.iterdir():
                if item.is_dir():
                    shutil.rmtree(item, ignore_errors=True)
        return before

    def info(self) -> CacheInfo:
        """Entries and bytes held now."""
        entries = self.entries()
        return CacheInfo(
            folder=str(self.folder),
            num_entries=len(entries),
            total_bytes=sum(_folder_bytes(entry) for entry in entries),
            max_bytes=self.max_bytes,
        )


def _recorded_digest(record: Path, path: Path, stamp: FileStamp) -> str | None:
    """The digest ``record`` holds for ``path`` at ``stamp``; ``None`` when it is missing, damaged,
    foreign, of another stamp, or written within the racy window of the file's last change."""
    try:
        known = json.loads(record.read_bytes())
        same = known["path"] == os.fsdecode(path.resolve()) and known["stamp"] == stamp.to_list()
        recorded_ns, digest = int(known["recorded_ns"]), str(known["sha256"])
    except (OSError, ValueError, TypeError, KeyError):
        return None  # no record, or one that is not ours: hashed again and rewritten
    if not same or len(digest) != 64:
        return None
    if recorded_ns - max(stamp.mtime_ns, stamp.ctime_ns) < RACY_WINDOW_NS:
        return None  # the file may have changed after it was hashed and kept its times
    return digest


def _write_digest_record(record: Path, path: Path, stamp: FileStamp, digest: str) -> None:
    """Keep ``digest`` for ``path`` at ``stamp`` (atomically; a cache that cannot be written is
    skipped: the next command hashes again)."""
    text = json.dumps(
        {
            "path": os.fsdecode(path.resolve()),
            "stamp": stamp.to_list(),
            "recorded_ns": time.time_ns(),
            "sha256": digest,
        }
    )
    staging = record.with_name(f".{record.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}")
    try:
        record.parent.mkdir(parents=True, exist_ok=True)
        staging.write_text(text, encoding="utf-8")
        staging.replace(record)
    except OSError as error:
        _LOG.debug("trace cache: cannot record the digest of %s (%s)", path, error)
        with contextlib.suppress(OSError):
            staging.unlink(missing_ok=True)


def _folder_bytes(folder: Path) -> int:
    return sum(item.stat().st_size for item in folder.iterdir() if item.is_file())


# -- one rank <-> one Parquet file --------------------------------------------------------------


def _metadata(item: CachedRank, *, digest: str, part: int, parts: int) -> JsonDict:
    trace, table = item.trace, item.trace.events
    args = table.collectives
    return {
        "parser": PARSER_VERSION,
        "sha256": digest,
        "part": part,
        "parts": parts,
        "num_events": table.num_events,
        "named_rank": item.rank,
        "rank": trace.rank,
        "schema_version": trace.schema_version,
        "world_size": trace.world_size,
        "backend": trace.backend,
        "device_name": trace.device_name,
        "origin_ns": trace.origin_ns,
        "time_unit": trace.time_unit,
        "notes": list(trace.notes),
        "source_format": trace.source_format,
        # a value may be NaN (a GPU event without a dur) or infinite: JSON holds those as text
        "skipped_events": [
            [
                bad.event_index,
                bad.field,
                bad.value if math.isfinite(bad.value) else repr(bad.value),
                bad.problem,
                bad.where,
            ]
            for bad in trace.skipped_events
        ],
        "names": list(table.names),
        "categories": list(table.categories),
        "device_counts": [[device, count] for device, count in table.device_counts.items()],
        "has_event_index": table.event_index is not None,
        "has_flop": bool(table.flop_row.size),
        "steps": [trace.steps.number.tolist(), trace.steps.start_ns.tolist(), trace.steps.end_ns.tolist()],
        "collectives": [
            args.event_index.tolist(),
            list(args.collective),
            args.in_elements.tolist(),
            args.out_elements.tolist(),
            args.group_size.tolist(),
            [None if np.isnan(size) else size for size in args.element_bytes.tolist()],
        ],
    }


def _write_rank(staging: Path, item: CachedRank, *, digest: str, part: int, parts: int) -> None:
    """``rank-<part>.parquet``: the rank's table, its metadata and each row's launch; and
    ``gpu-<part>.parquet``: its GPU events with what the analyses read of them (gathered once)."""
    from lightspeed.trace.gpu import gpu_rows, launch_rows  # writing only: `trace cache info` needs neither

    table = item.trace.events
    dense_flop = np.zeros(table.num_events, dtype=np.float64)
    dense_flop[table.flop_row] = table.flop
    columns: dict[str, npt.NDArray[Any] | None] = {
        "name_id": table.name_id,
        "category_id": table.category_id,
        "start_ns": table.start_ns,
        "duration_ns": table.duration_ns,
        "tid": table.tid,
        "stream": table.stream,
        "correlation": table.correlation,
        "event_index": table.event_index,
        "flop": dense_flop if table.flop_row.size else None,
        "launch_row": launch_rows(table, np.arange(table.num_events)),
    }
    # a column the table does not have (no FLOP counts, no event index) is left out; each is kept
    # in its narrowest exact type (lightspeed.trace.cache_columns.narrow)
    stored = {name: narrow(name, values) for name, values in columns.items() if values is not None}
    gpu = gpu_rows(item.trace)
    gpu_stored = {name: narrow(name, getattr(gpu, name)) for name in GPU_TYPES}
    meta = _metadata(item, digest=digest, part=part, parts=parts)
    meta["scales"] = _scales(stored)
    meta["gpu"] = {"num_rows": int(gpu.row.size), "scales": _scales(gpu_stored)}
    _write_parquet(staging / f"rank-{part}.parquet", stored, meta)
    _write_parquet(staging / f"gpu-{part}.parquet", gpu_stored, None)


def _scales(stored: dict[str, StoredColumn]) -> dict[str, int]:
    return {name: column.scale for name, column in stored.items() if column.scale != 1}


def _write_parquet(target: Path, stored: dict[str, StoredColumn], meta: JsonDict | None) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    arrow = pa.table({name: pa.array(column.values) for name, column in stored.items()})
    # lz4 without dictionaries: the fastest to read back of the codecs measured (docs/trace.md);
    # no Arrow schema beside ours (plain integer columns need none: the footer halves)
    with pq.ParquetWriter(
        target,
        arrow.schema,
        compression="lz4",
        use_dictionary=False,
        write_page_checksum=True,
        write_statistics=False,
        store_schema=False,
    ) as writer:
        writer.write_table(arrow, row_group_size=max(1, arrow.num_rows))  # one chunk per column
        if meta is not None:
            writer.add_key_value_metadata({_META_KEY.decode(): json.dumps(meta, allow_nan=False)})


def _write_checksums(staging: Path) -> None:
    """Record each Parquet file's size and CRC-32 in the entry (checked whole before any use)."""
    sums = {file.name: [file.stat().st_size, _crc32(file.read_bytes())] for file in staging.glob("*.parquet")}
    (staging / CHECKSUMS_FILE).write_text(json.dumps(sums, sort_keys=True), encoding="utf-8")


def _crc32(data: Any) -> int:
    """CRC-32 of ``data`` by the fastest inflater's library (ISA-L's is ~3x zlib's; same value)."""
    from lightspeed.trace.io.source import inflater

    return int(inflater().module.crc32(data)) & 0xFFFFFFFF


def _read_entry(entry: Path, *, digest: str, path: Path) -> list[CachedRank]:
    sums = json.loads((entry / CHECKSUMS_FILE).read_bytes())
    num_files = len(list(entry.glob("rank-*.parquet")))
    names = [f"{kind}-{part}.parquet" for part in range(num_files) for kind in ("rank", "gpu")]
    if not num_files or sorted(sums) != sorted(names) or len(list(entry.glob("*.parquet"))) != len(names):
        raise ValueError("its files are not those its checksums name")
    ranks = [_read_rank(entry, part, sums, digest=digest, path=path) for part in range(num_files)]
    if {meta_parts for _, meta_parts in ranks} != {num_files}:
        raise ValueError(f"the entry holds {num_files} parts of another number")
    return [item for item, _ in ranks]


def _mapped_parquet(file: Path, expected: list[int]) -> Any:
    """``file`` as a ``ParquetFile`` over its memory map, after checking its size and CRC-32
    against ``expected`` (so page checksums need not be checked again). The map is a snapshot the
    analysis reads columns from later: the cache only ever replaces or deletes an entry's files,
    never rewrites one in place, and a deleted file stays readable while mapped."""
    import mmap

    import pyarrow as pa
    import pyarrow.parquet as pq

    size, crc = expected
    with file.open("rb") as handle:
        if os.fstat(handle.fileno()).st_size != size or size == 0:
            raise ValueError(f"{file.name} is not the size it was written with")
        mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    if _crc32(mapped) != crc:
        raise ValueError(f"{file.name} fails its checksum")
    # ParquetFile, not read_table: read_table imports pyarrow.dataset (0.3-0.5 s, more than the read)
    return pq.ParquetFile(pa.BufferReader(pa.py_buffer(mapped)))


def _read_rank(
    entry: Path, part: int, sums: dict[str, list[int]], *, digest: str, path: Path
) -> tuple[CachedRank, int]:
    parquet = _mapped_parquet(entry / f"rank-{part}.parquet", sums[f"rank-{part}.parquet"])
    raw = (parquet.metadata.metadata or {}).get(_META_KEY)
    if raw is None:
        raise ValueError("no lightspeed metadata")
    meta = json.loads(raw)
    if meta.get("parser") != PARSER_VERSION:
        raise ValueError(f"written by parser {meta.get('parser')!r}, this is {PARSER_VERSION!r}")
    if meta.get("sha256") != digest:
        raise ValueError("written for other file content")
    optional = {"event_index": meta["has_event_index"], "flop": meta["has_flop"]}
    present = tuple(name for name in TABLE_TYPES if optional.get(name, True))
    num_rows, gpu = int(meta["num_events"]), meta["gpu"]
    gpu_parquet = _mapped_parquet(entry / f"gpu-{part}.parquet", sums[f"gpu-{part}.parquet"])
    for file, rows, names in ((parquet, num_rows, present), (gpu_parquet, gpu["num_rows"], tuple(GPU_TYPES))):
        if file.metadata.num_rows != rows or tuple(file.schema_arrow.names) != names:
            raise ValueError("its columns do not match its metadata")
    ids = {"name_id": (0, len(meta["names"])), "category_id": (0, len(meta["categories"]))}
    columns = _entry_columns(parquet, path, present, meta["scales"], {**ids, "launch_row": (-1, num_rows)})
    gpu_bounds = {"row": (0, num_rows), "launch": (-1, num_rows)}
    gpu_columns = _entry_columns(gpu_parquet, path, tuple(GPU_TYPES), gpu["scales"], {**ids, **gpu_bounds})
    trace = _rank_trace(meta, columns, gpu_columns, path)
    return CachedRank(rank=meta["named_rank"], trace=trace), int(meta["parts"])


def _entry_columns(
    parquet: Any, path: Path, present: tuple[str, ...], scales: JsonDict, bounds: dict[str, tuple[int, int]]
) -> EntryColumns:
    return EntryColumns(
        lambda name: _numpy(parquet.read(columns=[name], use_threads=False).column(0)),
        path=str(path),
        num_rows=int(parquet.metadata.num_rows),
        present=present,
        scales={str(name): int(scale) for name, scale in scales.items()},
        bounds=bounds,
    )


def _numpy(column: Any) -> npt.NDArray[Any]:
    """A cached column as a numpy array over Arrow's buffer (no copy). Not ``to_numpy()``: that
    imports pandas when it is installed (0.3-0.5 s, more than reading the whole entry)."""
    # one chunk (as written, one row group) is used as is: combine_chunks() would copy it
    array = column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()
    arrow_type = str(array.type)
    if array.null_count or arrow_type not in _NUMPY_TYPES:
        raise ValueError(f"column {column!r:.40} is not a column of integers or floats without nulls")
    expected = np.dtype(_NUMPY_TYPES[arrow_type])
    values: npt.NDArray[Any] = np.frombuffer(
        array.buffers()[1], dtype=expected, count=len(array), offset=array.offset * expected.itemsize
    )
    return values


def _rank_trace(meta: JsonDict, columns: EntryColumns, gpu_columns: EntryColumns, path: Path) -> RankTrace:
    index, collective, in_elements, out_elements, group_size, element_bytes = meta["collectives"]
    table = CachedEventTable.from_entry(
        columns,
        gpu_columns,
        names=tuple(meta["names"]),
        categories=tuple(meta["categories"]),
        device_counts={int(device): int(count) for device, count in meta["device_counts"]},
        collectives=CollectiveArgs(
            event_index=np.array(index, dtype=np.int64),
            collective=tuple(collective),
            in_elements=np.array(in_elements, dtype=np.int64),
            out_elements=np.array(out_elements, dtype=np.int64),
            group_size=np.array(group_size, dtype=np.int64),
            element_bytes=np.array([np.nan if v is None else v for v in element_bytes], dtype=np.float64),
        ),
    )
    number, start_ns, end_ns = meta["steps"]
    return RankTrace(
        rank=int(meta["rank"]),
        path=str(path),
        schema_version=str(meta["schema_version"]),
        world_size=meta["world_size"],
        backend=meta["backend"],
        device_name=meta["device_name"],
        origin_ns=int(meta["origin_ns"]),
        time_unit=str(meta["time_unit"]),
        events=table,
        steps=StepTable(
            number=np.array(number, dtype=np.int64),
            start_ns=np.array(start_ns, dtype=np.int64),
            end_ns=np.array(end_ns, dtype=np.int64),
        ),
        notes=tuple(meta["notes"]),
        source_format=str(meta["source_format"]),
        skipped_events=tuple(
            BadEvent(int(index), str(field), float(value), str(problem), str(where))
            for index, field, value, problem, where in meta["skipped_events"]
        ),
    )
