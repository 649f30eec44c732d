"""The Parquet cache of parsed traces: same tables as a parse, and never trusted when stale or damaged."""

from __future__ import annotations

import dataclasses
import json
import logging
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("pyarrow")

from lightspeed.records import to_jsonable
from lightspeed.trace import cache as cache_module
from lightspeed.trace import load_trace, summarize, top_kernels
from lightspeed.trace.cache import TraceCache
from lightspeed.trace.gpu import gpu_rows, launch_rows
from lightspeed.trace.integrity import subset
from lightspeed.trace.model import RankTrace


def _tables_equal(a: RankTrace, b: RankTrace) -> None:
    """Every column and field of two rank traces is identical (the cache must lose nothing)."""
    left, right = a.events, b.events
    assert left.names == right.names
    assert left.categories == right.categories
    for name in ("name_id", "category_id", "start_ns", "duration_ns", "tid", "stream", "correlation"):
        np.testing.assert_array_equal(getattr(left, name), getattr(right, name))
        assert getattr(left, name).dtype == getattr(right, name).dtype
    np.testing.assert_array_equal(left.flop_row, right.flop_row)
    np.testing.assert_array_equal(left.flop, right.flop)
    np.testing.assert_array_equal(left.event_index, right.event_index)
    every_row = np.arange(left.num_events)  # the cache's launch join is the parse's
    np.testing.assert_array_equal(launch_rows(left, every_row), launch_rows(right, every_row))
    assert left.device_counts == right.device_counts
    for name in ("event_index", "in_elements", "out_elements", "group_size", "element_bytes"):
        np.testing.assert_array_equal(getattr(left.collectives, name), getattr(right.collectives, name))
    assert left.collectives.collective == right.collectives.collective
    for name in ("number", "start_ns", "end_ns"):
        np.testing.assert_array_equal(getattr(a.steps, name), getattr(b.steps, name))
    assert a.to_dict() == b.to_dict()
    assert (a.origin_ns, a.skipped_events) == (b.origin_ns, b.skipped_events)


@pytest.fixture
def folder(real_trace: Any, tmp_path: Path) -> Path:
    """A copy of a real 2-rank trace (so a change to it stays here)."""
    copy = tmp_path / "trace"
    shutil.copytree(real_trace("trace_filter"), copy)
    return copy


def _entries() -> list[Path]:
    cache = TraceCache.default()
    assert cache is not None
    return cache.entries()


@pytest.mark.parametrize("name", ["trace_filter", "nccl_parser_config", "amd_trace"])
def test_a_second_load_comes_from_the_cache_and_equals_the_parse(
    name: str, real_trace: Any, caplog: pytest.LogCaptureFixture
) -> None:
    folder = real_trace(name)
    parsed = load_trace(folder, cache=False)
    assert _entries() == []  # cache=False wrote nothing
    with caplog.at_level(logging.INFO, logger="lightspeed.trace.cache"):
        first = load_trace(folder)
    entries = _entries()
    assert len(entries) == len(list(folder.glob("*.json.gz")))  # one entry per file
    assert caplog.text.count("trace cache miss") == len(entries)  # each decision said, with where
    assert all(f"wrote {entry}" in caplog.text for entry in entries)
    assert "trace cache hit" not in caplog.text
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="lightspeed.trace.cache"):
        second = load_trace(folder)
    assert caplog.text.count("trace cache hit") == len(entries)
    assert "trace cache miss" not in caplog.text
    for a, b, c in zip(parsed.ranks, first.ranks, second.ranks, strict=True):
        _tables_equal(a, b)
        _tables_equal(a, c)
    assert to_jsonable(summarize(second)) == to_jsonable(summarize(parsed))
    assert to_jsonable(top_kernels(second)) == to_jsonable(top_kernels(parsed))


def test_a_cached_file_that_moved_is_found_by_content_and_reports_its_new_path(
    folder: Path, tmp_path: Path
) -> None:
    load_trace(folder)
    moved = tmp_path / "moved"
    shutil.copytree(folder, moved)
    trace = load_trace(moved)
    assert len(_entries()) == 2  # no new entry: same bytes, same names
    assert all(Path(rank.path).parent == moved for rank in trace.ranks)


@pytest.mark.parametrize("damage", ["truncated", "flipped bytes", "empty", "foreign file"])
def test_a_damaged_entry_is_detected_deleted_and_rebuilt(
    folder: Path, damage: str, caplog: pytest.LogCaptureFixture
) -> None:
    parsed = load_trace(folder, cache=False)
    load_trace(folder)
    for entry in _entries():
        target = entry / "rank-0.parquet"
        data = target.read_bytes()
        if damage == "truncated":
            target.write_bytes(data[: len(data) // 2])
        elif damage == "flipped bytes":  # inside the column pages, not the footer: only checksums see it
            middle = bytearray(data)
            for offset in range(200, 260):
                middle[offset] ^= 0xFF
            target.write_bytes(bytes(middle))
        elif damage == "empty":
            target.write_bytes(b"")
        else:
            target.write_text(json.dumps({"not": "parquet"}))
    with caplog.at_level(logging.INFO, logger="lightspeed.trace.cache"):
        again = load_trace(folder)
    assert "not used" in caplog.text
    assert "parsing again" in caplog.text
    for a, b in zip(parsed.ranks, again.ranks, strict=True):
        _tables_equal(a, b)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="lightspeed.trace.cache"):
        load_trace(folder)  # rebuilt: a clean hit now
    assert "not used" not in caplog.text
    assert "trace cache hit" in caplog.text


def test_an_entry_of_another_parser_version_is_not_trusted(
    folder: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    load_trace(folder)
    old = {entry.name for entry in _entries()}
    monkeypatch.setattr(cache_module, "PARSER_VERSION", "a-newer-parser")
    with caplog.at_level(logging.INFO, logger="lightspeed.trace.cache"):
        load_trace(folder)
    assert "trace cache hit" not in caplog.text  # the key carries the version: a miss
    assert {entry.name for entry in _entries()} - old  # new entries written
    # an entry whose recorded version differs under the same key (a hand-copied folder) is refused
    cache = TraceCache.default()
    assert cache is not None
    source = folder / "sampled_rank-0.json.gz"
    entry = cache.folder / cache.key(source, _options())[0]
    assert entry.is_dir()
    monkeypatch.setattr(cache_module, "PARSER_VERSION", "yet-another")
    shutil.copytree(entry, cache.folder / cache.key(source, _options())[0])
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="lightspeed.trace.cache"):
        load_trace(folder)
    assert "written by parser 'a-newer-parser', this is 'yet-another'" in caplog.text


def _options() -> dict[str, Any]:
    from lightspeed.trace.io.source import DEFAULT_MAX_BYTES

    return {
        "max_bytes": float(DEFAULT_MAX_BYTES),
        "time_unit": "auto",
        "round_to_us": True,
        "skip_bad": False,
    }


def test_a_changed_trace_is_parsed_again(write_trace: Any, kineto: Any) -> None:
    path = write_trace("rank-0.json.gz", kineto.document([kineto.kernel("gemm", 0, 5)]))
    assert load_trace(path).ranks[0].events.num_events == 1
    write_trace("rank-0.json.gz", kineto.document([kineto.kernel("gemm", 0, 5), kineto.kernel("gemm", 9, 5)]))
    assert load_trace(path).ranks[0].events.num_events == 2
    assert len(_entries()) == 2


def test_skipped_events_with_values_json_cannot_hold_survive_the_cache(write_trace: Any, kineto: Any) -> None:
    """A kernel without a dur is skipped with a NaN value, which JSON metadata cannot hold as a
    number (it is kept as text); the cached entry gives back the same skipped events."""
    events = [kineto.kernel(f"gemm{i}", 1000 + 20 * i, 10) for i in range(4)]
    del events[1]["dur"]
    events[2]["ts"] = 1e300  # a time no clock holds
    path = write_trace("rank-0.json", kineto.document(events))
    parsed = load_trace(path, skip_bad_events=True).ranks[0].skipped_events
    cached = load_trace(path, skip_bad_events=True).ranks[0].skipped_events  # from the entry
    assert len(_entries()) == 1
    assert [(bad.event_index, bad.field, bad.problem) for bad in cached] == [
        (bad.event_index, bad.field, bad.problem) for bad in parsed
    ]
    values = [bad.value for bad in cached]
    assert np.isnan(values[0])
    assert values[1] == 1e300


def test_options_that_change_the_table_are_part_of_the_key(write_trace: Any, kineto: Any) -> None:
    events = [kineto.kernel("gemm", 0.4, 5.2), kineto.kernel("gemm", 10, 5)]
    path = write_trace("rank-0.json.gz", kineto.document(events))
    rounded = load_trace(path).ranks[0].events.duration_ns.tolist()
    exact = load_trace(path, round_to_us=False).ranks[0].events.duration_ns.tolist()
    assert rounded == [4000, 5000]  # HTA's inward rounding: ceil(0.4) .. floor(5.6)
    assert exact == [5200, 5000]
    assert load_trace(path).ranks[0].events.duration_ns.tolist() == rounded  # each from its own entry


def test_the_size_limit_evicts_the_least_recently_used(
    write_trace: Any, kineto: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = [
        write_trace(
            f"t{i}/rank-0.json.gz", kineto.document([kineto.kernel(f"k{i}", j, 1) for j in range(50)])
        )
        for i in range(3)
    ]
    load_trace(paths[0])
    one_entry = cache_module._folder_bytes(_entries()[0])
    monkeypatch.setenv("LIGHTSPEED_TRACE_CACHE_MAX_BYTES", str(int(2.5 * one_entry)))
    load_trace(paths[1])
    load_trace(paths[0])  # used again: now the most recent
    load_trace(paths[2])  # three do not fit: the least recently used (paths[1]) goes
    kept = {json.loads(_meta(entry))["names"][0] for entry in _entries()}
    assert kept == {"k0", "k2"}
    monkeypatch.setenv("LIGHTSPEED_TRACE_CACHE_MAX_BYTES", "10")  # smaller than any entry: nothing kept
    load_trace(paths[1])
    assert {json.loads(_meta(entry))["names"][0] for entry in _entries()} <= {"k0", "k2"}


def _meta(entry: Path) -> bytes:
    import pyarrow.parquet as pq

    return pq.read_schema(entry / "rank-0.parquet").metadata[b"lightspeed"]


def test_without_pyarrow_the_cache_is_off_and_said_once(
    folder: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    real_find_spec = cache_module.importlib.util.find_spec
    monkeypatch.setattr(
        cache_module.importlib.util,
        "find_spec",
        lambda name, *args: None if name == "pyarrow" else real_find_spec(name, *args),
    )
    cache_module.pyarrow_available.cache_clear()
    try:
        with caplog.at_level(logging.INFO, logger="lightspeed.trace.cache"):
            first = load_trace(folder)
            load_trace(folder)
        assert caplog.text.count("trace cache off: pyarrow is not installed") == 1
        assert first.ranks
        assert TraceCache.default() is None
    finally:
        cache_module.pyarrow_available.cache_clear()
    assert not (cache_module.lightspeed_cache() / "traces").exists()  # nothing written


def test_cli_no_cache_info_and_clear(folder: Path, run_cli: Any) -> None:
    assert run_cli("trace", "summary", str(folder), "--json", "--no-cache").code == 0
    assert _entries() == []
    served = run_cli("-v", "trace", "summary", str(folder), "--json")
    again = run_cli("-v", "trace", "summary", str(folder), "--json")
    assert served.code == again.code == 0
    assert served.out == again.out
    # -v shows each decision: a miss and where the entry went, then a hit
    assert served.err.count("trace cache miss") == 2
    assert served.err.count("trace cache: wrote") == 2
    assert again.err.count("trace cache hit") == 2
    info = run_cli("trace", "cache", "info", "--json")
    assert json.loads(info.out)["num_entries"] == 2
    cleared = run_cli("trace", "cache", "clear", "--json")
    assert json.loads(cleared.out)["num_entries"] == 2
    assert _entries() == []
    text = run_cli("trace", "cache", "info")
    assert "holds 0 entries" in text.out


def test_cli_cache_commands_say_when_the_cache_is_off(run_cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LIGHTSPEED_TRACE_CACHE", "off")
    result = run_cli("trace", "cache", "clear")
    assert result.code == 2
    assert "trace cache is off" in result.err
    assert len(result.err.splitlines()) == 1


def test_a_cache_hit_loads_nothing_it_does_not_need(folder: Path) -> None:
    """Imports that once cost more than the whole read (0.2-0.5 s each) stay out of a cached
    ``trace summary``: pyarrow's ``read_table`` pulls in ``pyarrow.dataset``, ``to_numpy`` pulls in
    pandas when installed, and the HTML report and its palette pull in jinja2 and the training engine.
    Nor does it load a parser (the Kineto reader and its worker pool, the Nsight Systems reader),
    the ``--jobs``/Ray machinery of ``lightspeed.trace.ranks`` or the other analyses: the CLI
    resolves each analysis when it runs (together ~25 ms of a 0.5 s command, which
    ``-X importtime`` does not show: it misses modules loaded by ``importlib.import_module``)."""
    import os
    import subprocess
    import sys

    load_trace(folder)  # written here; read by the command in a fresh process, same cache folder
    unwanted = (
        "pandas",
        "pyarrow.dataset",
        "jinja2",
        "lightspeed.report.html",
        "lightspeed.sol.train.step",
        "lightspeed.trace.io.kineto",
        "lightspeed.trace.io.kineto_parallel",
        "lightspeed.trace.io.nsys",
        "lightspeed.trace.ranks",
        "concurrent.futures.process",
        # the other analyses (the summary's report module names their reports for types only),
        # and numpy.ma (np.unique loads it, ~13 ms)
        "lightspeed.trace.launch",
        "lightspeed.trace.kernels",
        "lightspeed.trace.diff",
        "lightspeed.trace.comms",
        "numpy.ma",
    )
    script = (
        "import sys; from lightspeed.cli.main import main; "
        f"code = main(['-v', 'trace', 'summary', {str(folder)!r}, '--json']); "
        f"print(code, sorted(m for m in {unwanted!r} if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=os.environ.copy(), check=True
    )
    assert done.stdout.strip().splitlines()[-1] == "0 []"
    assert done.stderr.count("trace cache hit") == 2  # read from the cache, not parsed


def test_the_cached_launch_join_equals_the_join_of_a_parse_on_events_out_of_order(
    write_trace: Any, kineto: Any
) -> None:
    """The cache keeps each row's launching CPU row, joined once when written. On a trace whose
    launches, kernels and correlations come in no order (two launches sharing a correlation,
    kernels without a launch, a launch without a kernel) it equals the parse's own join, row by
    row, and every figure of the summary is the same."""
    launches = [
        kineto.launch(300, 4, 9),
        kineto.launch(100, 4, 5),
        kineto.launch(200, 4, 7),
        kineto.launch(150, 4, 5),  # the same correlation as the launch at 100: the first row wins
        kineto.launch(50, 4, 2),  # launches nothing
        kineto.launch(400, 4, 11),
    ]
    kernels = [
        kineto.kernel("nccl:all_reduce ncclDevKernel_AllReduce", 330, 40, correlation=11, stream=9),
        kineto.kernel("gemm_a", 310, 30, correlation=9),
        kineto.kernel("gemm_b", 120, 60, correlation=5),
        kineto.kernel("orphan", 500, 10, correlation=42),  # no launch has it
        kineto.kernel("gemm_c", 210, 50, correlation=7),
        kineto.kernel("Memcpy DtoH", 260, 20, correlation=-1, cat="gpu_memcpy"),
    ]
    steps = [kineto.step(2, 190, 200), kineto.step(1, 40, 150), kineto.step(3, 390, 200)]
    order = [6, 0, 9, 1, 14, 2, 7, 3, 12, 10, 4, 8, 5, 11, 13]
    events = [(launches + kernels + steps)[i] for i in order]
    assert sorted(order) == list(range(len(launches) + len(kernels) + len(steps)))
    path = write_trace("rank-0.json.gz", kineto.document(events))
    parsed = load_trace(path, cache=False)
    load_trace(path)  # parsed and written
    cached = load_trace(path)
    table = parsed.ranks[0].events
    assert table.launch_row is None  # a parse joins when asked
    rows = np.arange(table.num_events)
    joined = launch_rows(table, rows)
    np.testing.assert_array_equal(cached.ranks[0].events.launch_row, joined)
    np.testing.assert_array_equal(launch_rows(cached.ranks[0].events, rows[::-1]), joined[::-1])
    start_us = (table.start_ns + parsed.ranks[0].origin_ns) // 1000  # the file's ts
    name = [table.names[i] for i in table.name_id]
    launched = {name[row]: int(start_us[joined[row]]) for row in rows if joined[row] >= 0}
    assert launched["gemm_b"] == 100  # the first of the two launches with correlation 5
    assert launched["gemm_a"] == 300
    assert "orphan" not in launched
    assert "Memcpy DtoH" not in launched
    # the GPU rows the entry keeps (gathered when written) are the parse's, column by column
    kept, gathered = gpu_rows(cached.ranks[0]), gpu_rows(parsed.ranks[0])
    assert cached.ranks[0].events.stored_gpu_rows() is kept
    for field in kept.__dataclass_fields__:
        np.testing.assert_array_equal(getattr(kept, field), getattr(gathered, field))
        assert getattr(kept, field).dtype == getattr(gathered, field).dtype
    # the last step's cutoff is applied to the narrow columns (microseconds): the same rows for a
    # cutoff on, just before or just after each launch, whole microsecond or not
    for cutoff in sorted({int(t) + d for t in gathered.launched_ns for d in (-1, 0, 1, 500)}):
        narrow_cut, wide_cut = (gpu_rows(t.ranks[0], launched_before=cutoff) for t in (cached, parsed))
        for field in kept.__dataclass_fields__:
            np.testing.assert_array_equal(getattr(narrow_cut, field), getattr(wide_cut, field))
    launched_at = (kept.launched_ns + parsed.ranks[0].origin_ns) // 1000  # the file's ts
    launched_us = dict(zip([name[row] for row in kept.row], launched_at.tolist(), strict=True))
    assert launched_us["gemm_b"] == 100
    assert launched_us["orphan"] == 500  # no launch: its own start
    keep = np.ones(table.num_events, dtype=bool)
    keep[0] = False
    assert subset(cached.ranks[0].events, keep).launch_row is None  # rows renumbered: joined anew
    assert to_jsonable(summarize(cached)) == to_jsonable(summarize(parsed))
    assert to_jsonable(summarize(cached, include_last_step=True)) == to_jsonable(
        summarize(parsed, include_last_step=True)
    )


@pytest.mark.parametrize("flop", [True, False])
@pytest.mark.parametrize("event_index", [True, False])
def test_columns_a_table_may_lack_round_trip(
    write_trace: Any, kineto: Any, flop: bool, event_index: bool
) -> None:
    """FLOP counts (``with_flops=True``) and the event index are kept only where the table has
    them (a dense FLOP column of zeros was 10 MB of every 2M-event entry); both ways the cached
    table equals the parsed one."""
    counted = {"flops": 2.5e9} if flop else {}
    events = [
        kineto.cpu_op("aten::mm", 10, 30, **counted),
        kineto.launch(12, 3, 1),
        kineto.kernel("gemm", 20, 15, correlation=1),
    ]
    path = write_trace("rank-0.json", kineto.document(events))
    parsed = load_trace(path, cache=False).ranks[0]
    if not event_index:
        parsed = dataclasses.replace(parsed, events=dataclasses.replace(parsed.events, event_index=None))
    cache = TraceCache.default()
    assert cache is not None
    name, digest = cache.key(path, _options())
    entry = cache.save(name, digest, path, [cache_module.CachedRank(rank=0, trace=parsed)])
    assert entry is not None
    import pyarrow.parquet as pq

    written = pq.read_schema(entry / "rank-0.parquet").names
    assert ("flop" in written, "event_index" in written) == (flop, event_index)
    found, _, _ = cache.load(path, _options())
    assert found is not None
    _tables_equal(parsed, found[0].trace)
    assert parsed.events.flop.tolist() == ([2.5e9] if flop else [])
