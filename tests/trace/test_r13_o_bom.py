"""Round 13, helper O: a Kineto trace that opens with a UTF-8 byte-order mark (Notepad, some
exporters) is read like the same trace without it, plain and gzipped, by every trace command; it
used to be refused as "byte 0 is b'\\xef', not '{' or '['"."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from expect import one_line_error
from lightspeed.errors import TraceError
from lightspeed.trace import load_trace
from lightspeed.trace.io.kineto_stream import EventStream

BOM = b"\xef\xbb\xbf"  # U+FEFF in UTF-8: three bytes
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "traces" / "cuda_event_sync_multi_stream"
TRACE = FIXTURE / "event_sync_trace.json.gz"


def _with_bom(tmp_path: Path, *, compressed: bool) -> tuple[Path, Path]:
    """The fixture's text as a plain (or gzipped) file, and the same text behind a BOM."""
    text = gzip.decompress(TRACE.read_bytes())
    plain, marked = tmp_path / "plain" / "trace.json", tmp_path / "marked" / "trace.json"
    for path, data in ((plain, text), (marked, BOM + text)):
        path.parent.mkdir()
        if compressed:
            path = path.with_suffix(".json.gz")
            path.write_bytes(gzip.compress(data))
        else:
            path.write_bytes(data)
    suffix = ".json.gz" if compressed else ".json"
    return plain.with_suffix(suffix), marked.with_suffix(suffix)


@pytest.mark.parametrize("compressed", [False, True])
def test_a_trace_behind_a_bom_reads_as_without_it(tmp_path: Path, compressed: bool) -> None:
    plain, marked = _with_bom(tmp_path, compressed=compressed)
    a, b = load_trace(plain.parent), load_trace(marked.parent)
    for one, other in zip(a.ranks, b.ranks, strict=True):
        assert len(one.events.names) > 0
        assert one.events.names == other.events.names
        assert np.array_equal(one.events.start_ns, other.events.start_ns)


@pytest.mark.parametrize("command", ["summary", "kernels", "idle"])
def test_trace_commands_accept_a_bom(run_cli, tmp_path: Path, command: str) -> None:  # type: ignore[no-untyped-def]
    plain, marked = _with_bom(tmp_path, compressed=False)
    with_bom = run_cli("trace", command, str(marked), "--json")
    assert with_bom.code == 0, with_bom.err
    without = run_cli("trace", command, str(plain), "--json")
    assert json.loads(with_bom.out.replace(str(marked), str(plain))) == json.loads(without.out)


def test_a_bom_alone_is_an_empty_trace_and_offsets_count_it(tmp_path: Path) -> None:
    """After the three BOM bytes, ``x`` is byte 3 of the file (0-based): the message counts the BOM."""
    empty = tmp_path / "empty.json"
    empty.write_bytes(BOM + b"  \n")
    with pytest.raises(TraceError, match="file is empty"):
        list(EventStream(empty).chunks())
    damaged = tmp_path / "damaged.json"
    damaged.write_bytes(BOM + b"x")
    with pytest.raises(TraceError, match=r"byte 3 is b'x'"):
        list(EventStream(damaged).chunks())


def test_only_a_leading_bom_is_skipped(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A BOM is a mark at the start, not whitespace: one after a space is still damage."""
    path = tmp_path / "trace.json"
    path.write_bytes(b" " + BOM + b'{"traceEvents": []}')
    one_line_error(run_cli("trace", "summary", str(path)), "byte 1 is b'\\xef'")
