"""The columnar cache of parsed traces: each trace file's tables as Parquet, so a second analysis
never parses the file again.

The first read of a trace file writes what the reader made of it (every rank's
event table, steps, metadata and notes) as one Parquet file per rank, in
``<lightspeed cache>/traces/<key>/`` (see :func:`lightspeed.paths.lightspeed_cache`).
The key is the SHA-256 of the file's bytes, the file name (ranks and notes may
come from it), the reading options and :data:`PARSER_VERSION`, so a changed
trace, other options or a newer parser never meet an old entry. An entry is
checked before it is used: its recorded key, parser version and row counts
must match, and Parquet's page checksums must verify; anything else (a
truncated or damaged file, a foreign one) is deleted and the trace parsed
again. Entries are written to a temporary folder and renamed, so a reader
never sees half an entry. The oldest entries are evicted beyond the size
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
from lightspeed.paths import lightspeed_cache
from lightspeed.records import JsonDict, Record
from lightspeed.trace.integrity import BadEvent
from lightspeed.trace.model import RankTrace, StepTable
from lightspeed.trace.table import CollectiveArgs, EventTable
from lightspeed.units import GIB

_LOG = logging.getLogger(__name__)
ReadOptions = dict[str, float | str | bool]  # the reading options that shape a file's tables

# Bump when any reader's output changes for the same input (columns, rounding, notes, steps).
PARSER_VERSION: Final = "2026.12-2"
CACHE_SWITCH_VARIABLE: Final = "LIGHTSPEED_TRACE_CACHE"
CACHE_LIMIT_VARIABLE: Final = "LIGHTSPEED_TRACE_CACHE_MAX_BYTES"
DEFAULT_CACHE_MAX_BYTES: Final = int(10 * GIB)
_META_KEY: Final = b"lightspeed"
_HASH_BLOCK_BYTES: Final = 1 << 22
DIGEST_FOLDER: Final = ".digests"  # inside the cache folder; a dot: never taken for an entry
# A digest recorded less than this after the file last changed is not reused (git's "racy" files).
RACY_WINDOW_NS: Final = 2_000_000_000
# The event columns kept as Parquet columns, with their dtypes (event_index and flop only where
# the table has them: no index known, no FLOP counts recorded).
_COLUMNS: Final = (
    ("name_id", np.int32),
    ("category_id", np.int32),
    ("start_ns", np.int64),
    ("duration_ns", np.int64),
    ("tid", np.int64),
    ("stream", np.int64),
    ("correlation", np.int64),
    ("event_index", np.int64),
    ("flop", np.float64),
    # derived once when written: each row's launching CPU row (lightspeed.trace.gpu.launch_rows)
    ("launch_row", np.int64),
)


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
        value = int(float(text))
    except ValueError:
        value = -1
    if value < 0:
        raise UserInputError(f"${CACHE_LIMIT_VARIABLE} must be a number of bytes >= 0, got {text!r}")
    return value


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
        if os.environ.get(CACHE_SWITCH_VARIABLE, "").strip().lower() in ("off", "0", "no", "false"):
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
                _write_rank(
                    staging / f"rank-{index}.parquet", item, digest=digest, part=index, parts=len(ranks)
                )
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


def _write_rank(target: Path, item: CachedRank, *, digest: str, part: int, parts: int) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from lightspeed.trace.gpu import launch_rows  # writing only: `trace cache info` needs no analysis

    table = item.trace.events
    dense_flop = np.zeros(table.num_events, dtype=np.float64)
    dense_flop[table.flop_row] = table.flop
    columns = {
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
    arrow = pa.table(  # a column the table does not have (no FLOP counts, no event index) is left out
        {
            name: pa.array(np.ascontiguousarray(values, dtype=dtype))
            for name, dtype in _COLUMNS
            if (values := columns[name]) is not None
        }
    )
    meta = json.dumps(_metadata(item, digest=digest, part=part, parts=parts), allow_nan=False)
    arrow = arrow.replace_schema_metadata({_META_KEY: meta.encode()})
    # lz4 without dictionaries: the fastest to read back of the codecs measured (docs/trace.md)
    pq.write_table(
        arrow,
        target,
        compression="lz4",
        use_dictionary=False,
        write_page_checksum=True,
        write_statistics=False,
        row_group_size=max(1, arrow.num_rows),  # one chunk per column: read back without a copy
    )


def _read_entry(entry: Path, *, digest: str, path: Path) -> list[CachedRank]:
    files = sorted(entry.glob("rank-*.parquet"), key=lambda p: int(p.stem.split("-")[1]))
    if not files:
        raise ValueError("no Parquet files in the entry")
    ranks = [_read_rank(file, digest=digest, path=path) for file in files]
    parts = {meta_parts for _, meta_parts in ranks}
    if parts != {len(files)}:
        raise ValueError(f"the entry holds {len(files)} of {parts} parts")
    return [item for item, _ in ranks]


def _read_rank(file: Path, *, digest: str, path: Path) -> tuple[CachedRank, int]:
    import pyarrow.parquet as pq

    # ParquetFile, not read_table: read_table imports pyarrow.dataset (0.3-0.5 s, more than the read)
    with pq.ParquetFile(file, page_checksum_verification=True) as parquet:
        arrow = parquet.read()
    raw = (arrow.schema.metadata or {}).get(_META_KEY)
    if raw is None:
        raise ValueError("no lightspeed metadata")
    meta = json.loads(raw)
    if meta.get("parser") != PARSER_VERSION:
        raise ValueError(f"written by parser {meta.get('parser')!r}, this is {PARSER_VERSION!r}")
    if meta.get("sha256") != digest:
        raise ValueError("written for other file content")
    optional = {"event_index": meta["has_event_index"], "flop": meta["has_flop"]}
    expected = [name for name, _ in _COLUMNS if optional.get(name, True)]
    if arrow.num_rows != meta["num_events"] or arrow.column_names != expected:
        raise ValueError("its columns do not match its metadata")
    columns = {name: _numpy(arrow.column(name), dtype) for name, dtype in _COLUMNS if name in expected}
    return CachedRank(rank=meta["named_rank"], trace=_rank_trace(meta, columns, path)), int(meta["parts"])


def _numpy(column: Any, dtype: Any) -> npt.NDArray[Any]:
    """A cached column as a numpy array over Arrow's buffer (no copy). Not ``to_numpy()``: that
    imports pandas when it is installed (0.3-0.5 s, more than reading the whole entry)."""
    import pyarrow as pa

    # one chunk (as written, one row group) is used as is: combine_chunks() would copy it
    array = column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()
    expected = np.dtype(dtype)
    if array.null_count or array.type != pa.from_numpy_dtype(expected):
        raise ValueError(f"column {column!r:.40} is not {expected} without nulls")
    values: npt.NDArray[Any] = np.frombuffer(
        array.buffers()[1], dtype=expected, count=len(array), offset=array.offset * expected.itemsize
    )
    return values


def _rank_trace(meta: JsonDict, columns: dict[str, Any], path: Path) -> RankTrace:
    names, categories = tuple(meta["names"]), tuple(meta["categories"])
    for ids, known in ((columns["name_id"], names), (columns["category_id"], categories)):
        if ids.size and not 0 <= int(ids.min()) <= int(ids.max()) < len(known):
            raise ValueError("an id outside its name list")
    launch = columns["launch_row"]
    if launch.size and not -1 <= int(launch.min()) <= int(launch.max()) < launch.size:
        raise ValueError("a launch row outside the table")
    flop = columns.get("flop")
    flop_row = np.flatnonzero(flop > 0) if flop is not None else np.zeros(0, dtype=np.int64)
    index, collective, in_elements, out_elements, group_size, element_bytes = meta["collectives"]
    table = EventTable(
        names=names,
        categories=categories,
        name_id=columns["name_id"],
        category_id=columns["category_id"],
        start_ns=columns["start_ns"],
        duration_ns=columns["duration_ns"],
        tid=columns["tid"],
        stream=columns["stream"],
        correlation=columns["correlation"],
        flop_row=flop_row,
        flop=flop[flop_row] if flop is not None else np.zeros(0, dtype=np.float64),
        device_counts={int(device): int(count) for device, count in meta["device_counts"]},
        collectives=CollectiveArgs(
            event_index=np.array(index, dtype=np.int64),
            collective=tuple(collective),
            in_elements=np.array(in_elements, dtype=np.int64),
            out_elements=np.array(out_elements, dtype=np.int64),
            group_size=np.array(group_size, dtype=np.int64),
            element_bytes=np.array([np.nan if v is None else v for v in element_bytes], dtype=np.float64),
        ),
        event_index=columns.get("event_index"),
        launch_row=launch,
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
            BadEvent(int(index), str(field), float(value), str(problem))
            for index, field, value, problem in meta["skipped_events"]
        ),
    )
