"""Loading traces: columns, ranks, time units, and every kind of bad input as one clear error."""

from __future__ import annotations

import contextlib
import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lightspeed.errors import TraceError, UserInputError
from lightspeed.trace import load_trace


def _raw_events(folder: Path) -> dict[int, list[dict]]:
    """Independent reading with the json module: each rank's events."""
    result = {}
    for path in folder.glob("*.json.gz"):
        data = json.loads(gzip.decompress(path.read_bytes()))
        result[data["distributedInfo"]["rank"]] = data["traceEvents"]
    return result


def test_real_two_rank_folder_loads_every_complete_event(real_trace: Any) -> None:
    folder = real_trace("trace_filter")
    trace = load_trace(folder)
    raw = _raw_events(folder)
    assert trace.rank_ids == (0, 1)
    for rank in trace.ranks:
        complete = [e for e in raw[rank.rank] if "dur" in e and e.get("cat") and e["cat"] != "Trace"]
        assert rank.events.num_events == len(complete)
        gpu = [e for e in complete if e["cat"] in ("kernel", "gpu_memcpy", "gpu_memset")]
        assert int(rank.gpu_mask.sum()) == len(gpu)
        assert rank.steps.number.tolist() == [551, 552]
        assert rank.world_size == 128
        assert rank.notes == ()
        # names are interned once: the table holds each distinct name once
        assert len(rank.events.names) == len({e.get("name", "") for e in complete})


def test_ns_resolution_trace_keeps_nanoseconds_when_asked(real_trace: Any) -> None:
    path = real_trace("ns_resolution_trace")
    raw = json.loads(gzip.decompress(next(path.glob("*.json.gz")).read_bytes()))["traceEvents"]
    first = min((e for e in raw if e.get("cat") == "kernel"), key=lambda e: e["ts"])
    exact = load_trace(path, round_to_us=False).ranks[0]
    rounded = load_trace(path).ranks[0]
    kernels = exact.events.category_mask(["kernel"])
    first_row = np.flatnonzero(kernels)[np.argmin(exact.events.start_ns[kernels])]
    # the file says dur 4.928 us for this kernel: 4928 ns kept exactly
    assert first["dur"] == 4.928
    assert exact.events.duration_ns[first_row] == 4928
    # HTA-compatible mode rounds every event inwards to whole microseconds
    assert np.all(rounded.events.start_ns % 1000 == 0)
    assert np.all(rounded.events.duration_ns % 1000 == 0)


def test_nanosecond_timestamps_are_detected(write_trace, kineto: Any) -> None:
    base = 1_712_195_495_505_583_123  # ns since the epoch: far above 1e17
    events = [kineto.kernel("gemm", base + 1000, 1500, correlation=1), kineto.launch(base, 500, 1)]
    trace = load_trace(write_trace("rank-0.json", kineto.document(events)))
    rank = trace.ranks[0]
    assert rank.time_unit == "ns"
    gpu = np.flatnonzero(rank.gpu_mask)[0]
    assert rank.events.duration_ns[gpu] == 1500
    assert rank.events.start_ns[gpu] - rank.events.start_ns.min() == 1000
    assert rank.origin_ns == base


def test_time_unit_can_be_forced(write_trace, kineto: Any) -> None:
    path = write_trace("rank-0.json", kineto.document([kineto.kernel("gemm", 10, 5)]))
    assert load_trace(path, time_unit="ns").ranks[0].events.duration_ns.tolist() == [5]
    assert load_trace(path, time_unit="us").ranks[0].events.duration_ns.tolist() == [5000]
    with pytest.raises(UserInputError, match="unknown time unit"):
        load_trace(path, time_unit="ms")


def test_rank_from_file_name_when_no_distributed_info(write_trace, kineto: Any) -> None:
    path = write_trace("job_rank-3.json", kineto.document([kineto.kernel("gemm", 0, 5)], rank=None))
    rank = load_trace(path).ranks[0]
    assert rank.rank == 3
    assert any("taken from the file name" in note for note in rank.notes)


def test_missing_distributed_info_single_file_is_rank_zero_with_a_note(real_trace: Any) -> None:
    rank = load_trace(real_trace("distributed_info_unavailable")).ranks[0]
    assert rank.rank == 0
    assert any("assumed rank 0" in note for note in rank.notes)
    assert rank.device_name == "NVIDIA A100-PG509-200"


def test_two_files_without_ranks_are_ambiguous(write_trace, kineto: Any) -> None:
    first = write_trace("a.json", kineto.document([kineto.kernel("gemm", 0, 5)], rank=None))
    second = write_trace("b.json", kineto.document([kineto.kernel("gemm", 0, 5)], rank=None))
    with pytest.raises(TraceError, match="cannot tell which rank"):
        load_trace([first, second])


def test_duplicate_ranks_are_refused(write_trace, kineto: Any) -> None:
    first = write_trace("a.json", kineto.document([kineto.kernel("gemm", 0, 5)], rank=1))
    second = write_trace("b.json", kineto.document([kineto.kernel("gemm", 0, 5)], rank=1))
    with pytest.raises(TraceError, match="rank 1 is also the rank of"):
        load_trace([first, second])


def test_mixed_schema_versions_are_refused_unless_allowed(write_trace, kineto: Any) -> None:
    first = write_trace("r0.json", kineto.document([kineto.kernel("gemm", 0, 5)], rank=0, schema_version=1))
    second = write_trace("r1.json", kineto.document([kineto.kernel("gemm", 0, 5)], rank=1, schema_version=2))
    with pytest.raises(TraceError, match=r"different trace schema versions.*rank 0.*1.*rank 1.*2"):
        load_trace([first, second])
    trace = load_trace([first, second], allow_mixed_schema=True)
    assert trace.rank_ids == (0, 1)
    assert any("mixed schema versions" in note for note in trace.notes)


def test_truncated_gzip_of_a_real_trace(real_trace: Any, tmp_path: Path) -> None:
    source = next(real_trace("trace_filter").glob("*.json.gz"))
    cut = tmp_path / "rank-0.json.gz"
    cut.write_bytes(source.read_bytes()[: source.stat().st_size // 2])
    with pytest.raises(TraceError, match="gzip stream is truncated"):
        load_trace(cut)


def test_truncated_json_of_a_real_trace(real_trace: Any, tmp_path: Path) -> None:
    source = next(real_trace("trace_filter").glob("*.json.gz"))
    text = gzip.decompress(source.read_bytes())
    cut = tmp_path / "rank-0.json.gz"
    cut.write_bytes(gzip.compress(text[: len(text) // 2]))
    with pytest.raises(TraceError, match="JSON is truncated"):
        load_trace(cut)


def test_invalid_json(write_trace) -> None:
    with pytest.raises(TraceError, match="not valid JSON"):
        load_trace(write_trace("rank-0.json", '{"traceEvents": [{"ph": "X",, }]}'))


def test_decompression_is_bounded(real_trace: Any) -> None:
    folder = real_trace("trace_filter")
    with pytest.raises(TraceError, match=r"beyond the .* limit.*--max-bytes"):
        load_trace(folder, max_bytes=100_000)


def test_plain_json_is_bounded_too(write_trace, kineto: Any) -> None:
    path = write_trace("rank-0.json", kineto.document([kineto.kernel("gemm", 0, 5)]))
    with pytest.raises(TraceError, match="limit"):
        load_trace(path, max_bytes=50)


def test_gzip_with_several_members(write_trace, tmp_path: Path, kineto: Any) -> None:
    text = json.dumps(kineto.document([kineto.kernel("gemm", 0, 5), kineto.kernel("gemm", 10, 5)])).encode()
    path = tmp_path / "rank-0.json.gz"
    path.write_bytes(gzip.compress(text[:40]) + gzip.compress(text[40:]))
    assert load_trace(path).ranks[0].events.num_events == 2


def test_wrong_event_field_type_names_the_event(write_trace, kineto: Any) -> None:
    events = [
        kineto.kernel("gemm", 0, 5),
        {"ph": "X", "cat": "kernel", "name": "x", "ts": 1, "dur": 2, "args": {"correlation": "seven"}},
    ]
    with pytest.raises(TraceError, match=r"traceEvents\[2\]\.args\.correlation"):
        load_trace(write_trace("rank-0.json", kineto.document(events)))


def test_json_array_format(write_trace, kineto: Any) -> None:
    events = [kineto.kernel("gemm", 0, 5), kineto.step(1, 0, 10)]
    rank = load_trace(write_trace("rank-0.json", events)).ranks[0]
    assert rank.events.num_events == 2
    assert rank.schema_version == ""


def test_not_a_trace(write_trace) -> None:
    with pytest.raises(TraceError, match="no traceEvents"):
        load_trace(write_trace("rank-0.json", {"hello": 1}))


def test_folder_without_traces_and_missing_path(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("x", encoding="utf-8")
    with pytest.raises(TraceError, match="no trace files in this folder"):
        load_trace(tmp_path)
    with pytest.raises(TraceError, match="no such file"):
        load_trace(tmp_path / "missing.json")


def test_device_name_is_the_gpu_the_kernels_ran_on(write_trace, kineto: Any) -> None:
    content = kineto.document([kineto.kernel("gemm", 0, 5, device=1)])
    content["deviceProperties"] = [{"id": 0, "name": "Other GPU"}, {"id": 1, "name": kineto.H100_NAME}]
    content["traceEvents"][1]["args"]["device"] = 1
    assert load_trace(write_trace("rank-0.json", content)).ranks[0].device_name == kineto.H100_NAME


def test_hex_stream_labels_are_not_streams(write_trace, kineto: Any) -> None:
    # ROCm writes runtime streams as "0x0": HTA's int() fails and treats them as no stream
    event = kineto.launch(0, 5, 1)
    event["args"]["stream"] = "0x7f00"
    rank = load_trace(
        write_trace("rank-0.json", kineto.document([event, kineto.kernel("k", 6, 2, correlation=1)]))
    ).ranks[0]
    assert rank.events.stream.min() < -1


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(blob=st.binary(max_size=300))
def test_arbitrary_bytes_never_raise_anything_but_trace_error(write_trace, blob: bytes) -> None:
    path = write_trace("rank-0.json", blob)
    with contextlib.suppress(TraceError):  # success is fine too (e.g. "[]")
        load_trace(path)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(min_value=0, max_value=10_000))
def test_any_truncation_is_a_trace_error_or_a_clean_load(write_trace, cut: int, kineto: Any) -> None:
    text = json.dumps(
        kineto.document([kineto.kernel("gemm", 0, 5), kineto.launch(0, 1, 1), kineto.step(1, 0, 10)])
    ).encode()
    path = write_trace("rank-0.json.gz", text[: cut % (len(text) + 1)])
    with contextlib.suppress(TraceError):
        load_trace(path)
    # and when it fails, the message names the file
    if cut % (len(text) + 1) < len(text) // 2:
        with pytest.raises(TraceError, match=r"rank-0\.json\.gz"):
            load_trace(path)
