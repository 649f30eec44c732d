"""A large Kineto file read by worker processes gives the serial table, column for column, and the
serial error when it has one (chunks made small here so that small files have many)."""

from __future__ import annotations

import gzip
import json
import logging
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lightspeed.errors import TraceError
from lightspeed.trace import load_trace
from lightspeed.trace.io import kineto_parallel, kineto_stream

pytestmark = pytest.mark.slow  # starts a pool of worker processes


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every file counts as large and is cut into 64 KiB chunks."""
    monkeypatch.setattr(kineto_stream, "CHUNK_BYTES", 64 << 10)
    monkeypatch.setattr(kineto_parallel, "MIN_PARALLEL_BYTES", 0)


def _load(path: Path, workers: int, monkeypatch: pytest.MonkeyPatch, **options: Any) -> Any:
    monkeypatch.setenv("LIGHTSPEED_PARSE_WORKERS", str(workers))
    return load_trace(path, cache=False, **options)


def _same_tables(serial: Any, parallel: Any) -> None:
    for a, b in zip(serial.ranks, parallel.ranks, strict=True):
        x, y = a.events, b.events
        assert x.names == y.names
        assert x.categories == y.categories
        for name in ("name_id", "category_id", "start_ns", "duration_ns", "tid", "stream", "correlation",
                     "flop_row", "flop", "event_index"):  # fmt: skip
            np.testing.assert_array_equal(getattr(x, name), getattr(y, name), err_msg=name)
        for name in ("event_index", "in_elements", "out_elements", "group_size", "element_bytes"):
            np.testing.assert_array_equal(getattr(x.collectives, name), getattr(y.collectives, name))
        assert x.collectives.collective == y.collectives.collective
        assert x.device_counts == y.device_counts
        assert a.to_dict() == b.to_dict()
        assert (a.origin_ns, a.skipped_events) == (b.origin_ns, b.skipped_events)
        np.testing.assert_array_equal(a.steps.start_ns, b.steps.start_ns)


@pytest.mark.parametrize("name", ["nccl_parser_config", "ns_resolution_trace", "trace_filter"])
@pytest.mark.usefixtures("small_chunks")
def test_workers_build_the_serial_table(
    name: str,
    real_trace: Any,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    source = sorted(real_trace(name).glob("*.json.gz"))[0]
    path = tmp_path / source.name
    shutil.copy(source, path)
    serial = _load(path, 0, monkeypatch)
    with caplog.at_level(logging.DEBUG, logger="lightspeed.trace.io.kineto_parallel"):
        parallel = _load(path, 2, monkeypatch)
    assert "with 2 worker processes" in caplog.text  # the workers did read it
    _same_tables(serial, parallel)
    exact = _load(path, 2, monkeypatch, round_to_us=False, time_unit="us")
    _same_tables(_load(path, 0, monkeypatch, round_to_us=False, time_unit="us"), exact)


def _document(kineto: Any, num: int, **changes: Any) -> dict[str, Any]:
    events = [kineto.kernel(f"k{i % 37}", 10 * i + 0.5, 4.25, correlation=i) for i in range(num)]
    for index, change in changes.items():
        events[int(index.removeprefix("at"))].update(change)
    return kineto.document(events)


def test_text_thread_ids_and_bad_events_read_as_serially(
    kineto: Any,
    small_chunks: None,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    path = tmp_path / "rank-0.json.gz"
    document = _document(kineto, 6000, at3000={"tid": "stream 7"}, at4500={"dur": -3})
    path.write_bytes(gzip.compress(json.dumps(document).encode()))
    serial = _load(path, 0, monkeypatch, skip_bad_events=True)
    with caplog.at_level(logging.DEBUG, logger="lightspeed.trace.io.kineto_parallel"):
        parallel = _load(path, 2, monkeypatch, skip_bad_events=True)
    assert "falls back to serial" in caplog.text  # text ids are numbered in file order: serially
    _same_tables(serial, parallel)
    assert parallel.ranks[0].num_skipped_events == 1


def test_damage_gives_the_serial_error(
    kineto: Any, small_chunks: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    text = json.dumps(_document(kineto, 6000))
    middle = text.index('"name": "k5"', len(text) // 2)
    damaged = tmp_path / "rank-0.json"
    damaged.write_text(text[:middle] + "#" + text[middle + 1 :])
    typed = tmp_path / "rank-1.json"
    typed.write_text(text[:middle] + '"name": 5' + text[middle + len('"name": "k5"') :])
    for path in (damaged, typed):
        with pytest.raises(TraceError) as serial:
            _load(path, 0, monkeypatch)
        with pytest.raises(TraceError) as parallel:
            _load(path, 2, monkeypatch)
        assert str(parallel.value) == str(serial.value)


def test_impossible_events_found_by_workers_keep_their_file_index(
    kineto: Any, small_chunks: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "rank-0.json.gz"
    document = _document(kineto, 6000, at4500={"dur": -3})
    path.write_bytes(gzip.compress(json.dumps(document).encode()))
    expected = next(i for i, event in enumerate(document["traceEvents"]) if event.get("dur") == -3)
    assert expected > 4000  # the document's own events come first
    parallel = _load(path, 2, monkeypatch, skip_bad_events=True)
    _same_tables(_load(path, 0, monkeypatch, skip_bad_events=True), parallel)
    (bad,) = parallel.ranks[0].skipped_events
    assert (bad.event_index, bad.field) == (expected, "dur")  # its index in traceEvents, across chunks
