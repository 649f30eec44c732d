"""Streaming decode: chunk cuts between events give exactly the events a full JSON parse gives."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lightspeed.errors import TraceError
from lightspeed.trace import load_trace
from lightspeed.trace.io import kineto_stream as stream_module
from lightspeed.trace.io.kineto_stream import EventStream


def _names(path: Path) -> list[str]:
    return [name for chunk in EventStream(path).chunks() for name in chunk.event_names()]


def _expected_names(document: dict[str, Any] | list[Any]) -> list[str]:
    events = document if isinstance(document, list) else document["traceEvents"]
    return [event.get("name", "") for event in events]


def test_tiny_chunks_give_the_same_table(real_trace: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = real_trace("trace_filter")
    whole = load_trace(folder)
    monkeypatch.setattr(stream_module, "CHUNK_BYTES", 300)
    cut = load_trace(folder)
    for a, b in zip(whole.ranks, cut.ranks, strict=True):
        assert a.events.names == b.events.names
        assert np.array_equal(a.events.start_ns, b.events.start_ns)
        assert np.array_equal(a.events.name_id, b.events.name_id)
        assert np.array_equal(a.events.correlation, b.events.correlation)


def test_cuts_inside_names_and_nested_objects(
    write_trace: Any, kineto: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    events = [kineto.kernel(f"odd}}, {{name {i}", i * 10, 5) for i in range(30)]
    events[3]["args"]["nested"] = [{"a": 1}, {"b": 2}, {"c": {"d": [{"e": 3}, {"f": 4}]}}]
    document = kineto.document(events)
    path = write_trace("rank-0.json", document)
    monkeypatch.setattr(stream_module, "CHUNK_BYTES", 50)
    assert _names(path) == _expected_names(document)


def test_fallback_after_many_failed_cuts(
    write_trace: Any, kineto: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = "x" + "}, {" * 40  # a cut after every one of these falls inside the string
    document = kineto.document([kineto.kernel(name, i, 1) for i in range(20)])
    path = write_trace("rank-0.json.gz", document)
    monkeypatch.setattr(stream_module, "CHUNK_BYTES", 10)
    assert _names(path) == _expected_names(document)
    assert load_trace(path).ranks[0].events.num_events == 20


def test_keys_after_the_events_and_the_key_inside_a_string(write_trace: Any, kineto: Any) -> None:
    events = json.dumps([kineto.kernel("gemm", 0, 5)])
    text = (
        '{"note": "\\"traceEvents\\": [ looks like a key", "traceEvents": '
        + events
        + ', "distributedInfo": {"rank": 5, "world_size": 8}, "schemaVersion": 1}'
    )
    rank = load_trace(write_trace("trace.json", text)).ranks[0]
    assert rank.rank == 5
    assert rank.world_size == 8
    assert rank.events.num_events == 1


def test_array_format_in_chunks(write_trace: Any, kineto: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    events = [kineto.kernel(f"k{i}", i, 1) for i in range(50)]
    path = write_trace("rank-0.json", events)
    monkeypatch.setattr(stream_module, "CHUNK_BYTES", 100)
    assert _names(path) == _expected_names(events)


def test_error_index_counts_earlier_chunks(
    write_trace: Any, kineto: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    events = [kineto.kernel(f"k{i}", i, 1) for i in range(40)]
    events[30]["args"]["correlation"] = "not a number"
    path = write_trace("rank-0.json", kineto.document(events))
    monkeypatch.setattr(stream_module, "CHUNK_BYTES", 200)
    # the document's first event is the process_name metadata event, so kernel 30 is event 31
    with pytest.raises(TraceError, match=r"traceEvents\[31\]\.args\.correlation"):
        load_trace(path)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    names=st.lists(st.text(alphabet=st.sampled_from('ab}{, "[]\\:'), max_size=12), min_size=1, max_size=25),
    chunk=st.integers(min_value=1, max_value=400),
)
def test_any_names_any_chunk_size(
    names: list[str], chunk: int, tmp_path: Path, kineto: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    document = kineto.document([kineto.kernel(name, i, 1) for i, name in enumerate(names)])
    path = tmp_path / "rank-0.json.gz"
    path.write_bytes(gzip.compress(json.dumps(document, indent=1).encode()))
    monkeypatch.setattr(stream_module, "CHUNK_BYTES", chunk)
    assert _names(path) == _expected_names(document)
