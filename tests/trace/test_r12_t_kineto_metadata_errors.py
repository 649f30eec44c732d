"""A wrong metadata key of a Kineto trace is refused naming that key (not ``traceEvents``), its
value, the file and the fix, whether the key comes before the events or after them, read by the
compiled scanner or by msgspec alone. A real trace (critical_path/simple_add, HTA's test data) is
copied and one key corrupted; keys lightspeed does not read are left alone."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from expect import one_line_error
from lightspeed.errors import TraceError
from lightspeed.trace import load_trace
from lightspeed.trace.io import kineto as kineto_module
from lightspeed.trace.io import kineto_columns, kineto_parallel, kineto_stream

# (key, corrupted value, the field the refusal names, the value it shows); its fix names the key
CORRUPTED = {
    "rank as a word": ("distributedInfo", {"rank": "x", "world_size": 2}, "distributedInfo.rank", "'x'"),
    "rank a fraction": ("distributedInfo", {"rank": 1.5}, "distributedInfo.rank", "1.5"),
    "world size a list": (
        "distributedInfo",
        {"rank": 0, "world_size": [2]},
        "distributedInfo.world_size",
        "[2]",
    ),
    "backend a number": ("distributedInfo", {"rank": 0, "backend": 7}, "distributedInfo.backend", "7"),
    "distributedInfo text": ("distributedInfo", "rank 0", "distributedInfo", "'rank 0'"),
    "devices not a list": ("deviceProperties", "H100", "deviceProperties", "'H100'"),
    "device not an object": ("deviceProperties", [{"id": 0, "name": "X"}, 3], "deviceProperties[1]", "3"),
    "device id a word": (
        "deviceProperties",
        [{"id": "zero", "name": "X"}],
        "deviceProperties[0].id",
        "'zero'",
    ),
    "device name a number": ("deviceProperties", [{"id": 0, "name": 100}], "deviceProperties[0].name", "100"),
    "memory a fraction": (
        "deviceProperties",
        [{"id": 0, "name": "X", "totalGlobalMem": 8.5}],
        "deviceProperties[0].totalGlobalMem",
        "8.5",
    ),
    "schema a list": ("schemaVersion", [1], "schemaVersion", "[1]"),
    "time unit a number": ("displayTimeUnit", 1000, "displayTimeUnit", "1000"),
}


@pytest.fixture
def simple_add(real_trace: Any) -> dict[str, Any]:
    (path,) = sorted(real_trace("critical_path/simple_add").glob("*.json.gz"))
    document: dict[str, Any] = json.loads(gzip.decompress(path.read_bytes()))
    return document


def _write(tmp_path: Path, document: dict[str, Any], key: str, value: Any, after: bool) -> Path:
    """``document`` with ``key`` set to ``value``, written before the events or after them."""
    rest = {name: item for name, item in document.items() if name not in (key, "traceEvents")}
    ordered = (
        {**rest, "traceEvents": document["traceEvents"], key: value}
        if after
        else {key: value, **rest, "traceEvents": document["traceEvents"]}
    )
    path = tmp_path / "rank-1.json"
    path.write_text(json.dumps(ordered))
    return path


def _scanner(monkeypatch: pytest.MonkeyPatch, compiled: bool) -> None:
    """Read with the compiled scanner (where built) or with msgspec alone."""
    if compiled and kineto_columns.compiled_scanner() is None:
        pytest.skip("the compiled scanner is not built here")
    if not compiled:
        for module in (kineto_columns, kineto_parallel, kineto_module, kineto_stream):
            monkeypatch.setattr(module, "compiled_scanner", lambda: None)


@pytest.mark.parametrize("compiled", [True, False], ids=["scanner", "msgspec"])
@pytest.mark.parametrize("after", [False, True], ids=["before-events", "after-events"])
@pytest.mark.parametrize("case", list(CORRUPTED))
def test_a_wrong_metadata_key_is_named(
    simple_add: dict[str, Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    *,
    case: str,
    after: bool,
    compiled: bool,
) -> None:
    key, value, field, shown = CORRUPTED[case]
    _scanner(monkeypatch, compiled)
    monkeypatch.setattr(kineto_stream, "CHUNK_BYTES", 4096)  # many chunks, then the tail
    path = _write(tmp_path, simple_add, key, value, after)
    with pytest.raises(TraceError) as caught:
        load_trace(path, cache=False)
    message = str(caught.value)
    assert message.startswith(f"{path}: {field} must be "), message
    assert f"value {shown}" in message, message
    assert f"fix: fix or remove {key}" in message, message
    assert "traceEvents" not in message, message


def test_the_cli_says_it_in_one_line(simple_add: dict[str, Any], tmp_path: Path, run_cli: Any) -> None:
    path = _write(tmp_path, simple_add, "distributedInfo", {"rank": "x", "world_size": 2}, after=True)
    one_line_error(
        run_cli("trace", "summary", str(path), "--no-cache"),
        str(path),
        "distributedInfo.rank must be a whole number; value 'x'",
        "fix: fix or remove distributedInfo",
    )


@pytest.mark.parametrize("after", [False, True], ids=["before-events", "after-events"])
def test_good_metadata_in_other_forms_is_read(
    simple_add: dict[str, Any], tmp_path: Path, after: bool
) -> None:
    # a rank and world size as text, whole-number floats: read as the integers they are
    info = {"rank": " 1", "world_size": 2.0, "backend": "nccl"}
    path = _write(tmp_path, simple_add, "distributedInfo", info, after)
    (rank,) = load_trace(path, cache=False).ranks
    assert (rank.rank, rank.world_size, rank.backend) == (1, 2, "nccl")


def test_keys_lightspeed_does_not_read_are_left_alone(simple_add: dict[str, Any], tmp_path: Path) -> None:
    # baseTimeNanoseconds is not read (nor trace_id, ...): a string there stops nothing
    path = _write(tmp_path, simple_add, "baseTimeNanoseconds", "soon", after=True)
    (rank,) = load_trace(path, cache=False).ranks
    assert rank.rank == simple_add["distributedInfo"]["rank"]
