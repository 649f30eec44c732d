"""The compiled Kineto scanner against msgspec: the same table, or the same error, always.

The scanner (``lightspeed.trace.io._kineto_scan``, C) must accept exactly the JSON msgspec accepts
for these events and give the same values; on anything it does not handle it raises ValueError and
the chunk goes through msgspec. The reference in every test is msgspec's path
(``DecodedChunk``/``LIGHTSPEED_SCANNER=python``), an independent JSON parser.
"""

from __future__ import annotations

import gzip
import json
import logging
import os
import random
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lightspeed.errors import TraceError
from lightspeed.trace.io import kineto as kineto_module
from lightspeed.trace.io import kineto_columns, kineto_parallel, kineto_stream
from lightspeed.trace.io.kineto import read_kineto
from lightspeed.trace.io.kineto_columns import DecodedChunk, ScannedChunk, decode_chunk
from lightspeed.trace.io.kineto_schema import EVENTS_DECODER
from lightspeed.trace.io.kineto_table import TableBuilder

scan_module = kineto_columns.compiled_scanner()
needs_scanner = pytest.mark.skipif(scan_module is None, reason="the compiled scanner is not built here")
REPO = Path(__file__).resolve().parents[2]
TRACE_FILES = sorted(
    [
        *REPO.glob("tests/fixtures/traces/**/*.json.gz"),
        *REPO.glob("tests/data/shared/data/traces/**/*.json.gz"),
    ]
)


def test_the_scanner_is_built_in_ci() -> None:
    """In CI the extension must be there: a build that silently drops it would hide a slow path."""
    if os.environ.get("CI") != "true":
        pytest.skip("only checked under CI=true")
    from lightspeed.trace.io import _kineto_scan

    assert _kineto_scan.ROW_BYTES > 0
    assert kineto_columns.scanner_name() == "compiled"


COLUMNS = ("names", "categories", "name_id", "category_id", "start_ns", "duration_ns", "tid", "stream")
COLUMNS += ("correlation", "flop_row", "flop", "device_counts", "event_index")


def _built(chunks: list[Any], time_unit: str = "auto") -> dict[str, Any]:
    """Everything a builder made of ``chunks``: table columns, notes, unit, rounding."""
    builder = TableBuilder(time_unit=time_unit, round_to_us=True)
    for chunk in chunks:
        builder.add(chunk)
    table, origin_ns = builder.finish()
    columns = {name: getattr(table, name) for name in COLUMNS}
    collectives = table.collectives
    columns["collectives"] = (
        collectives.event_index.tolist(),
        collectives.collective,
        collectives.in_elements.tolist(),
        collectives.out_elements.tolist(),
        collectives.group_size.tolist(),
        collectives.element_bytes.tolist(),
    )
    return {
        "columns": columns,
        "origin_ns": origin_ns,
        "unplaced": builder.unplaced,
        "time_unit": builder.time_unit,
        "rounding_ns": builder.rounding_ns,
    }


def _assert_same(a: dict[str, Any], b: dict[str, Any]) -> None:
    assert a.keys() == b.keys()
    for key, value in a.items():
        if key != "columns":
            assert value == b[key] or str(value) == str(b[key]), key  # NaN in notes
    for name, left in a["columns"].items():
        right = b["columns"][name]
        if isinstance(left, np.ndarray):
            assert left.dtype == right.dtype, name
            assert np.array_equal(left, right, equal_nan=left.dtype.kind == "f"), name
        else:
            assert str(left) == str(right), name


def _scanned(blob: bytes) -> ScannedChunk:
    assert scan_module is not None
    return ScannedChunk(blob, scan_module.scan(blob))


def _both(blob: bytes, time_unit: str = "auto") -> None:
    """The scanner accepts ``blob`` and its table is msgspec's, field for field."""
    _assert_same(
        _built([_scanned(blob)], time_unit), _built([DecodedChunk(EVENTS_DECODER.decode(blob))], time_unit)
    )


def _event(**fields: Any) -> dict[str, Any]:
    event = {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10, "dur": 2}
    event.update(fields)
    return {key: value for key, value in event.items() if value is not ...}


def _blob(events: list[Any]) -> bytes:
    return json.dumps(events, ensure_ascii=False).encode()


# --- every trace in the repository -------------------------------------------------------------


@needs_scanner
@pytest.mark.parametrize("path", TRACE_FILES, ids=lambda path: path.parent.name + "/" + path.name[:30])
def test_every_repository_trace_gives_the_same_table(
    path: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def read() -> dict[str, Any]:
        trace, rank, source = read_kineto(path, max_bytes=2**34, time_unit="auto", round_to_us=True)
        built = _built([])  # the shape of the comparison; filled from the trace
        table = trace.events
        for name in built["columns"]:
            if name != "collectives":
                built["columns"][name] = getattr(table, name)
        built["columns"]["collectives"] = str(table.collectives)
        built.update(origin_ns=trace.origin_ns, unplaced=str(trace.skipped_events), time_unit=trace.time_unit)
        built.update(rounding_ns=0, rank=(rank, source), steps=str(trace.steps), notes=trace.notes)
        return built

    text_bytes = len(gzip.decompress(path.read_bytes()))
    monkeypatch.setattr(kineto_stream, "CHUNK_BYTES", max(2048, text_bytes // 8))  # the last is msgspec's
    scanned = []
    real_scan = scan_module.scan  # type: ignore[union-attr]

    def counted(blob: bytes, *whole: bool) -> Any:
        result = real_scan(blob, *whole)
        scanned.append(len(blob))
        return result

    monkeypatch.setattr(kineto_columns, "compiled_scanner", lambda: _Counting(counted))
    compiled = read()
    monkeypatch.setattr(kineto_columns, "compiled_scanner", lambda: None)
    python = read()
    _assert_same(compiled, python)
    if path.parent.name != "amd_trace":  # ROCm writes streams as text: msgspec reads those
        assert scanned, "the compiled scanner read no chunk of this trace"


class _Counting:
    """The scanner module with ``scan`` counted."""

    def __init__(self, scan: Any) -> None:
        self.scan = scan
        self.FIELDS = scan_module.FIELDS  # type: ignore[union-attr]
        self.ROW_BYTES = scan_module.ROW_BYTES  # type: ignore[union-attr]


# --- hand-written events the scanner must read exactly as msgspec ------------------------------

EDGE_CASES: dict[str, list[Any]] = {
    "escaped names": [_event(name='a"b\\c/d\b\f\n\r\t'), _event(name="\x00\x1f")],
    "non-ASCII names": [_event(name="é名前😀"), _event(name="\u2028\ufeff")],
    "names with event separators": [_event(name='x}, {"ts": 1'), _event(name="}, {"), _event(name="[]")],
    "integer and float times": [
        _event(ts=1, dur=0.5),
        _event(ts=1.25, dur=3),
        _event(ts=1700000000123.456, dur=7.1),
    ],
    "negative zero and tiny": [_event(ts=-0.0, dur=0.0), _event(ts=0, dur=1e-300), _event(ts=5e-324, dur=1)],
    "long decimals": [_event(ts=0.1 + 0.2, dur=1 / 3), _event(ts=123456789.12345678, dur=2.5e-7)],
    "huge and bad times": [_event(ts=1e300, dur=1), _event(ts=1, dur=-5), _event(ts=1, dur=1e200)],
    "missing fields": [
        _event(ts=...),
        _event(dur=...),
        _event(cat=...),
        _event(name=...),
        _event(tid=...),
        {"ph": "i", "name": "instant", "ts": 3},
        {},
    ],
    "null category": [_event(cat=None), _event(cat="Trace"), _event(cat="")],
    "GPU events without a dur": [
        _event(dur=...),
        _event(cat="gpu_memcpy", dur=...),
        _event(cat="cpu_op", dur=...),
    ],
    "text ids": [
        _event(tid="thread 7"),
        _event(tid=" 12 ", args={"stream": "0x7f"}),
        _event(tid="thread 7", args={"stream": "7"}),
        _event(tid="1_000", args={"stream": "Spans"}),
        _event(tid=3, args={"stream": 7}),
    ],
    "args": [
        _event(args={"stream": 7, "correlation": 12, "device": 1, "flops": 1e30, "External id": 3}),
        _event(args={"flops": 123456789012, "stream": -3, "extra": {"a": [1, {"b": None}], "c": [[[]]]}}),
        _event(args={"Input Dims": [[2, 3], [4]], "Input type": ["float", None], "Call stack": "x"}),
        _event(cat="gpu_memcpy", args={"device": 3}),
        _event(args={}),
    ],
    "collectives": [
        _event(
            name="ncclDevKernel_AllReduce",
            args={
                "Collective name": "allreduce",
                "In msg nelems": 10,
                "Out msg nelems": 10,
                "Group size": 8,
                "dtype": "Float",
            },
        ),
        _event(args={"Collective name": "", "dtype": None}),
        _event(
            cat="user_annotation",
            name="nccl:all_reduce",
            args={"Input Dims": [[1024], [1024]], "Input type": ["c10::BFloat16", ""]},
        ),
        _event(cat="user_annotation", name="nccl:broadcast", args={"Input Dims": "odd"}),
    ],
    "skipped values of every kind": [
        _event(extra=[True, False, None, -1.5e-7, "s\u00e9", {"k": {"k": [0]}}], pid="text", ph="X")
    ],
}


@needs_scanner
@pytest.mark.parametrize("case", EDGE_CASES, ids=list(EDGE_CASES))
def test_edge_cases_give_msgspecs_table(case: str) -> None:
    for ensure_ascii in (False, True):  # raw UTF-8, then \\u escapes (surrogate pairs included)
        _both(json.dumps(EDGE_CASES[case], ensure_ascii=ensure_ascii).encode())


@needs_scanner
def test_written_forms_of_numbers() -> None:
    forms = [
        "1",
        "-0",
        "0.5",
        "1e3",
        "1E+2",
        "15e-1",
        "1.000000000000000000000001",
        "100000000000000000000e-20",
    ]
    forms += [
        "9007199254740993",
        "9007199254740993.0",
        "1e-400",
        "2.2250738585072011e-308",
        "-9223372036854775808",
    ]
    for form in forms:
        blob = f'[{{"cat": "kernel", "name": "k", "ts": {form}, "dur": {form}}}]'.encode()
        _both(blob)
        _both(blob, time_unit="ns")
    assert _scanned(b'[{"ts": 15e-1}]').ts.size == 0  # no dur: not timed
    assert _scanned(b'[{"ts": 1, "dur": 15e-1}]').dur.tolist() == [1.5]


@needs_scanner
def test_nanosecond_traces_keep_integers_exact() -> None:
    base = 1_700_000_000_123_456_789  # past 2**53: float64 would round it
    events = [_event(ts=base + i, dur=3) for i in range(5)] + [_event(cat="cpu_op", ts=base + 7, dur=1)]
    _both(_blob(events))
    _both(
        _blob([*events, _event(ts=float(base), dur=2.0)])
    )  # a float among them: rounded, like msgspec's path
    built = _built([_scanned(_blob(events))])
    assert built["time_unit"] == "ns"
    assert built["columns"]["start_ns"].tolist() == [0, 1, 2, 3, 4, 7]


@needs_scanner
def test_non_utf8_bytes_in_skipped_strings_are_read_like_msgspec() -> None:
    _both(b'[{"cat": "kernel", "name": "k", "ts": 1, "dur": 2, "pid": "\xff\xfe", "args": {"x": "\xc0"}}]')


# --- what the scanner leaves to msgspec -------------------------------------------------------

FALLBACKS = {
    "integer beyond int64": b'[{"cat": "kernel", "name": "k", "ts": 9223372036854775808, "dur": 2}]',
    "huge integer flops": b'[{"cat": "kernel", "name": "k", "ts": 1, "dur": 2, "args": {"flops": 1'
    + b"0" * 30
    + b"}}]",
    "escaped key": b'[{"cat": "kernel", "n\\u0061me": "k", "ts": 1, "dur": 2}]',
    "duplicate key": b'[{"cat": "kernel", "name": "a", "name": "b", "ts": 1, "dur": 2}]',
    "deep nesting": b'[{"cat": "kernel", "ts": 1, "dur": 2, "x": ' + b"[" * 100 + b"]" * 100 + b"}]",
}
ERRORS = {
    "truncated": b'[{"cat": "kernel", "name": "k", "ts": 1, "dur"',
    "truncated string": b'[{"cat": "kernel", "name": "k}, {',
    "damaged byte": b'[{"cat": "kernel", "name": "k", "ts": 1, "dur": 2\x00}]',
    "NaN literal": b'[{"cat": "kernel", "ts": NaN, "dur": 2}]',
    "Infinity literal": b'[{"x": Infinity}]',
    "leading zero": b'[{"ts": 01, "dur": 2}]',
    "plus sign": b'[{"ts": +1, "dur": 2}]',
    "bare decimal point": b'[{"ts": 1., "dur": 2}]',
    "trailing comma in an event": b'[{"ts": 1, "dur": 2,}]',
    "trailing comma in the array": b'[{"ts": 1, "dur": 2},]',
    "trailing bytes": b'[{"ts": 1, "dur": 2}] {}',
    "lone high surrogate": b'[{"name": "\\ud800"}]',
    "lone low surrogate": b'[{"x": "\\udc00"}]',
    "bad escape": b'[{"x": "\\q"}]',
    "bad unicode escape": b'[{"x": "\\u12G4"}]',
    "control character": b'[{"name": "a\tb"}]',
    "invalid UTF-8 name": b'[{"name": "\xff"}]',
    "UTF-8 surrogate name": b'[{"name": "\xed\xa0\x80"}]',
    "number out of range": b'[{"cat": "kernel", "ts": 1e400, "dur": 2}]',
    "null name": b'[{"name": null}]',
    "null args": b'[{"args": null}]',
    "float correlation": b'[{"args": {"correlation": 1.0}}]',
    "not an object": b"[1]",
    "not an array": b'{"ts": 1}',
    "empty": b"",
}


@needs_scanner
@pytest.mark.parametrize("case", FALLBACKS, ids=list(FALLBACKS))
def test_what_the_scanner_leaves_gets_msgspecs_answer(case: str) -> None:
    blob = FALLBACKS[case]
    with pytest.raises(ValueError, match=r"."):
        _scanned(blob)
    chunk = decode_chunk(blob)
    assert isinstance(chunk, DecodedChunk)
    _assert_same(_built([chunk]), _built([DecodedChunk(EVENTS_DECODER.decode(blob))]))


@needs_scanner
@pytest.mark.parametrize("case", ERRORS, ids=list(ERRORS))
def test_errors_are_msgspecs_errors(case: str) -> None:
    blob = ERRORS[case]
    with pytest.raises(ValueError, match=r"."):
        _scanned(blob)
    with pytest.raises((msgspec.DecodeError, msgspec.ValidationError)) as expected:
        EVENTS_DECODER.decode(blob)
    with pytest.raises(type(expected.value), match=None) as got:
        decode_chunk(blob)
    assert str(got.value) == str(expected.value)


# --- random events and random damage -------------------------------------------------------------

_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12)
_NUMBER = st.one_of(
    st.integers(-(2**63), 2**63 - 1),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
)
_VALUE = st.recursive(
    st.one_of(st.none(), st.booleans(), _NUMBER, _TEXT),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_TEXT, inner, max_size=3)),
    max_leaves=8,
)
_ARGS = st.fixed_dictionaries(
    {},
    optional={
        "stream": st.one_of(st.integers(-5, 2**62), _TEXT),
        "correlation": st.integers(-5, 2**40),
        "device": st.integers(-1, 8),
        "flops": _NUMBER,
        "Collective name": st.sampled_from(["", "allreduce", "broadcast"]),
        "In msg nelems": st.integers(-1, 2**40),
        "Group size": st.integers(-1, 64),
        "dtype": st.one_of(st.none(), st.sampled_from(["Float", "BFloat16", "Int"])),
        "Input Dims": _VALUE,
        "Input type": _VALUE,
        "other": _VALUE,
    },
)
_EVENT = st.fixed_dictionaries(
    {},
    optional={
        "cat": st.one_of(
            st.none(), st.sampled_from(["kernel", "cpu_op", "gpu_memcpy", "Trace", "", "python_function"])
        ),
        "name": st.one_of(_TEXT, st.sampled_from(["nccl:all_reduce", "aten::mm", "}, {"])),
        "tid": st.one_of(st.integers(-(2**63), 2**63 - 1), _TEXT),
        "ts": _NUMBER,
        "dur": _NUMBER,
        "args": _ARGS,
        "ph": st.sampled_from(["X", "f", "s", "i"]),
        "pid": _VALUE,
    },
)


@needs_scanner
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    events=st.lists(_EVENT, max_size=8), ascii_only=st.booleans(), unit=st.sampled_from(["auto", "us", "ns"])
)
def test_random_events_give_msgspecs_table_or_go_to_msgspec(
    events: list[Any], ascii_only: bool, unit: str
) -> None:
    blob = json.dumps(events, ensure_ascii=ascii_only).encode()
    _same_or_msgspecs(blob, unit)


def _same_or_msgspecs(blob: bytes, unit: str = "auto") -> None:
    """The scanner's table equals msgspec's; where the scanner declines, msgspec's answer is used."""
    try:
        reference: Any = _built([DecodedChunk(EVENTS_DECODER.decode(blob))], unit)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError) as error:
        reference = error
    try:
        scanned = _scanned(blob)
    except ValueError:
        return  # declined: msgspec reads it (decode_chunk), exactly
    assert not isinstance(reference, Exception), f"the scanner accepted what msgspec rejects: {reference}"
    _assert_same(_built([scanned], unit), reference)


@needs_scanner
@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), edits=st.integers(1, 4))
def test_damaged_chunks_never_crash_and_never_disagree(seed: int, edits: int) -> None:
    """Bytes deleted, inserted or changed anywhere in a real-looking chunk."""
    rng = random.Random(seed)
    events = [
        item
        for case in ("args", "collectives", "escaped names", "integer and float times")
        for item in EDGE_CASES[case]
    ]
    blob = bytearray(json.dumps(events, ensure_ascii=rng.random() < 0.5).encode())
    for _ in range(edits):
        at = rng.randrange(len(blob) + 1)
        kind = rng.randrange(3)
        byte = rng.choice(b'{}[]",:\\-.0123456789eEtnfu \x00\xff')
        if kind == 0 and at < len(blob):
            del blob[at]
        elif kind == 1:
            blob.insert(at, byte)
        elif at < len(blob):
            blob[at] = byte
    _same_or_msgspecs(bytes(blob))


@needs_scanner
def test_a_whole_trace_file_is_read_alike_in_tiny_chunks(
    real_trace: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Many chunks: names interned across chunks, rows offset, collectives numbered alike."""
    path = next(real_trace("nccl_parser_config").glob("*.json.gz"))
    small = tmp_path / "small.json.gz"
    small.write_bytes(gzip.compress(gzip.decompress(path.read_bytes())))
    monkeypatch.setattr(kineto_stream, "CHUNK_BYTES", 20_000)

    def table(scanner: Any) -> Any:
        monkeypatch.setattr(kineto_columns, "compiled_scanner", lambda: scanner)
        trace, _, _ = read_kineto(small, max_bytes=2**34, time_unit="auto", round_to_us=True)
        return trace.events

    compiled, python = table(scan_module), table(None)
    assert compiled.names == python.names
    for name in ("name_id", "category_id", "start_ns", "duration_ns", "stream", "correlation", "event_index"):
        assert np.array_equal(getattr(compiled, name), getattr(python, name)), name
    assert str(compiled.collectives) == str(python.collectives)
    assert len(compiled.collectives.collective) > 0


# --- the pipelined read: chunks scanned in a thread ----------------------------------------------


def _read(path: Path, monkeypatch: pytest.MonkeyPatch, scanner: Any) -> Any:
    monkeypatch.setattr(kineto_columns, "compiled_scanner", lambda: scanner)
    monkeypatch.setattr(kineto_parallel, "compiled_scanner", lambda: scanner)
    monkeypatch.setattr(kineto_module, "compiled_scanner", lambda: scanner)
    monkeypatch.setattr(kineto_stream, "compiled_scanner", lambda: scanner)
    return read_kineto(path, max_bytes=2**34, time_unit="auto", round_to_us=True)[0]


@needs_scanner
def test_the_pipelined_read_is_the_serial_read(
    kineto: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Many chunks through the scanning thread; a cut inside a name sends the file to the serial
    read (same table), and damage gives the serial read's error."""
    monkeypatch.setattr(kineto_stream, "CHUNK_BYTES", 4096)
    events = [kineto.kernel(f"k{i % 37}", 10 * i + 0.5, 4.25, correlation=i) for i in range(3000)]
    events[1000]["tid"] = "thread 7"
    path = tmp_path / "rank-0.json.gz"
    path.write_bytes(gzip.compress(json.dumps(kineto.document(events)).encode()))
    with caplog.at_level(logging.DEBUG, logger="lightspeed.trace.io.kineto_parallel"):
        piped = _read(path, monkeypatch, scan_module)
    assert "falls back" not in caplog.text
    _same_trace(piped, _read(path, monkeypatch, None))

    for event in events[1500:]:  # names full of the text between two events: cuts fall inside them
        event["name"] += ' }, {"ts": 1} }, {'
    path.write_bytes(gzip.compress(json.dumps(kineto.document(events)).encode()))
    with caplog.at_level(logging.DEBUG, logger="lightspeed.trace.io.kineto_parallel"):
        piped = _read(path, monkeypatch, scan_module)
    assert "pipelined read of" in caplog.text
    assert "falls back to serial" in caplog.text
    _same_trace(piped, _read(path, monkeypatch, None))

    text = json.dumps(kineto.document(events[:1500]))
    middle = text.index('"name": "k5"', len(text) // 2)
    damaged = tmp_path / "rank-1.json"
    damaged.write_text(text[:middle] + "#" + text[middle + 1 :])
    with pytest.raises(TraceError) as piped_error:
        _read(damaged, monkeypatch, scan_module)
    with pytest.raises(TraceError) as serial_error:
        _read(damaged, monkeypatch, None)
    assert str(piped_error.value) == str(serial_error.value)
    assert "not valid JSON" in str(serial_error.value)


def _same_trace(a: Any, b: Any) -> None:
    for name in COLUMNS:
        left, right = getattr(a.events, name), getattr(b.events, name)
        assert np.array_equal(left, right) if isinstance(left, np.ndarray) else left == right, name
    assert str(a.events.collectives) == str(b.events.collectives)
    assert (a.origin_ns, a.time_unit, a.skipped_events) == (b.origin_ns, b.time_unit, b.skipped_events)


# --- choosing the scanner ---------------------------------------------------------------------------


def test_the_scanner_variable(
    run_cli: Any, kineto: Any, write_trace: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``python`` forces msgspec (same answer), an unknown name is one line and exit 2, and the doctor's
    trace line says which scanner reads traces."""
    from lightspeed.doctor import extra_checks

    path = write_trace("rank-0.json", kineto.document([kineto.kernel("k", 10.5, 4.25)]))
    compiled = run_cli("trace", "summary", str(path), "--json", "--no-cache")
    monkeypatch.setenv(kineto_columns.SCANNER_VARIABLE, "python")
    assert kineto_columns.compiled_scanner() is None
    (trace_line,) = [check.detail for check in extra_checks() if check.name == "trace"]
    assert "Kineto events read by msgspec ($LIGHTSPEED_SCANNER=python)" in trace_line
    python = run_cli("trace", "summary", str(path), "--json", "--no-cache")
    assert (compiled.code, python.code) == (0, 0)
    assert python.out == compiled.out
    monkeypatch.setenv(kineto_columns.SCANNER_VARIABLE, "fast")
    refused = run_cli("trace", "summary", str(path), "--json", "--no-cache")
    assert refused.code == 2
    assert "unknown scanner 'fast' ($LIGHTSPEED_SCANNER); allowed: compiled, python" in refused.err
    assert len(refused.err.strip().splitlines()) == 1
    if scan_module is not None:
        monkeypatch.setenv(kineto_columns.SCANNER_VARIABLE, "compiled")
        (trace_line,) = [check.detail for check in extra_checks() if check.name == "trace"]
        assert trace_line.endswith("Kineto events read by the compiled scanner")


@needs_scanner
def test_the_last_chunk_and_the_keys_after_it(
    kineto: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The last chunk is scanned too, and the keys after the array decoded by msgspec as one document
    would be; a second traceEvents key (msgspec keeps the last) or damage after the array go to
    msgspec's whole-tail decode, whose answer or error is the one given."""
    events = [json.dumps(kineto.kernel(f"k{i}", 10 * i + 0.5, 4.25, correlation=i)) for i in range(5)]
    after = '"distributedInfo": {"rank": 1, "world_size": 2}, "deviceProperties": [{"id": 0, "name": "X"}]'
    joined = ", ".join(events)
    texts = {
        "keys after": '{"schemaVersion": 1, "traceEvents": [' + joined + "], " + after + "}",
        "array format": "[" + joined + "]",
        "two traceEvents": '{"traceEvents": ['
        + events[0]
        + '], "traceEvents": ['
        + ", ".join(events[1:])
        + "]}",
        "damage after": '{"traceEvents": [' + joined + '], "distributedInfo": {"rank": 1,}}',
    }
    calls: list[bool] = []
    real_scan = scan_module.scan  # type: ignore[union-attr]

    def counted(blob: bytes, *whole: bool) -> Any:
        calls.append(bool(whole) and not whole[0])
        return real_scan(blob, *whole)

    for case, text in texts.items():
        path = tmp_path / f"rank-0.{case.replace(' ', '_')}.json"
        path.write_text(text)
        calls.clear()
        try:
            scanned: Any = _read(path, monkeypatch, _Counting(counted))
        except TraceError as error:
            scanned = error
        try:
            python: Any = _read(path, monkeypatch, None)
        except TraceError as error:
            python = error
        if isinstance(python, Exception):
            assert str(scanned) == str(python), case
            assert case == "damage after"
            continue
        _same_trace(scanned, python)
        assert (scanned.rank, scanned.world_size, scanned.device_name) == (
            python.rank,
            python.world_size,
            python.device_name,
        ), case
        assert len(scanned.events.start_ns) == (4 if case == "two traceEvents" else 5), case
        assert calls == [case != "array format"], case  # the tail went through the scanner
        assert scanned.world_size == (2 if case == "keys after" else None), case


def test_the_time_unit_of_timestamps_near_the_float_limit() -> None:
    # hypothesis found two stamps of 8.99e307: the mean of the two middle values overflowed (a
    # RuntimeWarning, an error under pytest); the lower median is one of the trace's own values
    from lightspeed.trace.io.kineto_table import _guess_time_unit

    assert _guess_time_unit(np.array([8.98846567431158e307, 8.988465674311579e307])) == "ns"
    assert _guess_time_unit(np.array([1.0e15, 2.0e15, 3.0e18, 4.0e18])) == "us"  # the lower of the middle two
