"""The cache entry's columns: narrow and exact, read only when used, verified whole before use."""

from __future__ import annotations

import dataclasses
import logging
import pickle
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("pyarrow")

from lightspeed.errors import TraceError
from lightspeed.records import to_jsonable
from lightspeed.trace import load_trace, summarize, top_kernels
from lightspeed.trace.cache import TraceCache
from lightspeed.trace.cache_columns import CachedEventTable, EntryColumns, narrow, widen
from lightspeed.trace.gpu import gpu_rows, launch_rows
from lightspeed.trace.table import EventTable


@pytest.mark.parametrize(
    ("name", "values", "dtype", "stored", "scale"),
    [
        # whole microseconds: kept in microseconds; 2,000,000 > 65,535: 32 bits (signed first)
        ("start_ns", [0, 1_000, 2_000_000_000], "int32", [0, 1, 2_000_000], 1000),
        # 3,000,000,000 us > 2**31 - 1 but < 2**32: unsigned 32 bits
        ("start_ns", [0, 3_000_000_000_000], "uint32", [0, 3_000_000_000], 1000),
        # one time that is not a whole microsecond: kept in ns; 5,000,000,001 > 2**32 -> int64
        ("start_ns", [0, 1_000, 5_000_000_001], "int64", [0, 1_000, 5_000_000_001], 1),
        # ids are never scaled, however round: -1 and 2000 need int16
        ("launch_row", [-1, 1000, 2000], "int16", [-1, 1000, 2000], 1),
        ("name_id", [0, 255], "uint8", [0, 255], 1),
        ("name_id", [0, 256], "int16", [0, 256], 1),
        ("stream", [-1, 7], "int8", [-1, 7], 1),
        ("tid", [-(2**31), 2**31 - 1], "int32", [-(2**31), 2**31 - 1], 1),
        ("correlation", [0, 2**32], "int64", [0, 2**32], 1),
        ("start_ns", [], "int8", [], 1),
    ],
)
def test_each_column_takes_the_narrowest_exact_type(
    name: str, values: list[int], dtype: str, stored: list[int], scale: int
) -> None:
    column = narrow(name, np.array(values, dtype=np.int64))
    assert (column.values.dtype.name, column.values.tolist(), column.scale) == (dtype, stored, scale)
    assert widen(column.values, column.scale, np.int64).tolist() == values  # exact both ways


def test_float_columns_are_kept_as_they_are() -> None:
    flop = np.array([0.0, 2.5e9, 1e-3])
    column = narrow("flop", flop)
    assert column.values.dtype == np.float64
    assert column.scale == 1
    np.testing.assert_array_equal(column.values, flop)


def _cached(folder: Path) -> EventTable:
    load_trace(folder)  # parsed and written
    table = load_trace(folder).ranks[0].events
    assert isinstance(table, CachedEventTable)
    return table


def test_a_cached_summary_reads_only_the_columns_it_uses(real_trace: Any) -> None:
    """``trace summary`` needs only the GPU events, which the entry keeps apart (their count
    says whether a rank has any): a cached table leaves every column of the table unread."""
    folder = real_trace("nccl_parser_config")
    parsed = load_trace(folder, cache=False)
    load_trace(folder)
    cached = load_trace(folder)
    assert to_jsonable(summarize(cached)) == to_jsonable(summarize(parsed))
    for rank, parsed_rank in zip(cached.ranks, parsed.ranks, strict=True):
        entry = vars(rank.events)["_entry"]
        assert vars(entry)["_stored"] == {}  # not a column read, narrow or wide
        assert rank.has_gpu_events == parsed_rank.has_gpu_events
        assert rank.events.stored_num_gpu_events() == int(parsed_rank.gpu_mask.sum())
    # any other analysis reads what it needs, and gets what a parse gives
    assert to_jsonable(top_kernels(cached)) == to_jsonable(top_kernels(parsed))
    for a, b in zip(parsed.ranks, cached.ranks, strict=True):
        np.testing.assert_array_equal(a.events.tid, b.events.tid)
        assert b.events.tid.dtype == np.int64


def _column_bytes(parquet: Path, column: str) -> tuple[int, int]:
    """Where ``column``'s data pages lie in ``parquet`` (offset, length)."""
    import pyarrow.parquet as pq

    meta = pq.ParquetFile(parquet).metadata.row_group(0)
    chunk = next(meta.column(i) for i in range(meta.num_columns) if meta.column(i).path_in_schema == column)
    return chunk.data_page_offset, chunk.total_compressed_size


def test_damage_in_a_column_the_analysis_never_reads_is_still_detected_and_rebuilt(
    real_trace: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Columns are read on first use, but the entry is verified whole (a CRC-32 per file) before
    any: a flipped byte in ``tid``, which ``trace summary`` never reads, makes the entry a miss,
    deleted and written again, and the figures come from a fresh parse."""
    folder = tmp_path / "trace"
    shutil.copytree(real_trace("trace_filter"), folder)
    parsed = load_trace(folder, cache=False)
    load_trace(folder)
    cache = TraceCache.default()
    assert cache is not None
    for entry in cache.entries():
        target = entry / "rank-0.parquet"
        offset, length = _column_bytes(target, "tid")
        data = bytearray(target.read_bytes())
        data[offset + length // 2] ^= 0x01  # one bit, inside the tid column's pages
        target.write_bytes(bytes(data))
    with caplog.at_level(logging.INFO, logger="lightspeed.trace.cache"):
        again = load_trace(folder)
    assert caplog.text.count("rank-0.parquet fails its checksum") == 2
    assert "parsing again" in caplog.text
    assert not any(isinstance(rank.events, CachedEventTable) for rank in again.ranks)  # parsed
    assert to_jsonable(summarize(again)) == to_jsonable(summarize(parsed))
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="lightspeed.trace.cache"):
        rebuilt = load_trace(folder)
    assert caplog.text.count("trace cache hit") == 2
    for a, b in zip(parsed.ranks, rebuilt.ranks, strict=True):
        np.testing.assert_array_equal(a.events.tid, b.events.tid)


def test_a_missing_or_foreign_checksums_file_is_not_trusted(
    real_trace: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = tmp_path / "trace"
    shutil.copytree(real_trace("trace_filter"), folder)
    load_trace(folder)
    cache = TraceCache.default()
    assert cache is not None
    first, second = cache.entries()
    (first / "checksums.json").unlink()
    (second / "checksums.json").write_text('{"rank-0.parquet": [1, 2]}')
    with caplog.at_level(logging.INFO, logger="lightspeed.trace.cache"):
        load_trace(folder)
    assert caplog.text.count("parsing again") == 2
    assert "its files are not those its checksums name" in caplog.text


def test_a_column_that_fails_when_read_later_is_one_error_naming_it() -> None:
    """After the entry was verified a column can still fail (a reader bug, a file written by
    another tool with a valid checksum): an id outside its list is a TraceError naming the
    column and the fix, never a wrong figure."""
    columns = EntryColumns(
        lambda name: np.array([0, 7], dtype=np.int8),
        path="rank-0.json",
        num_rows=2,
        present=("name_id",),
        scales={},
        bounds={"name_id": (0, 3)},
    )
    with pytest.raises(TraceError, match=r"column name_id holds a value outside \[0, 3\).*trace cache clear"):
        columns.stored("name_id")
    failing = EntryColumns(
        lambda name: (_ for _ in ()).throw(OSError("gone")),
        path="rank-0.json",
        num_rows=2,
        present=("tid",),
        scales={},
        bounds={},
    )
    with pytest.raises(TraceError, match="column tid cannot be read"):
        failing.stored("tid")


def test_a_cached_table_pickles_and_replaces_as_an_ordinary_table(real_trace: Any) -> None:
    table = _cached(real_trace("trace_filter"))
    parsed = load_trace(real_trace("trace_filter"), cache=False).ranks[0].events
    copy = pickle.loads(pickle.dumps(table))  # every column read: the memory map stays behind
    assert type(copy) is EventTable
    for name in ("name_id", "start_ns", "duration_ns", "tid", "stream", "correlation"):
        np.testing.assert_array_equal(getattr(copy, name), getattr(parsed, name))
    np.testing.assert_array_equal(copy.launch_row, launch_rows(parsed, np.arange(parsed.num_events)))
    shifted = dataclasses.replace(table, start_ns=table.start_ns + 1)
    assert shifted.stored_gpu_rows() is None  # its own columns now: the GPU rows are gathered anew
    np.testing.assert_array_equal(gpu_rows(_rank(shifted)).start_ns, gpu_rows(_rank(table)).start_ns + 1)


def _rank(events: EventTable) -> Any:
    from lightspeed.trace.model import RankTrace, StepTable

    none = np.zeros(0, dtype=np.int64)
    return RankTrace(
        rank=0,
        path="",
        schema_version="",
        world_size=None,
        backend=None,
        device_name=None,
        origin_ns=0,
        time_unit="us",
        events=events,
        steps=StepTable(none, none, none),
    )


def test_a_cached_cpu_only_trace_still_has_no_gpu_events(real_trace: Any) -> None:
    """The kept GPU events' count answers ``has_gpu_events``: zero for a CPU-only trace, whose
    summary from the cache is the parse's error."""
    folder = real_trace("cpu_only")
    load_trace(folder)
    cached = load_trace(folder)
    assert [rank.events.stored_num_gpu_events() for rank in cached.ranks] == [0] * len(cached.ranks)
    assert not any(rank.has_gpu_events for rank in cached.ranks)
    with pytest.raises(TraceError, match="no GPU events"):
        summarize(cached)
