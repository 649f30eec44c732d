"""Every installed gzip inflater (python-isal, zlib-ng, zlib) reads and refuses gzip traces alike."""

from __future__ import annotations

import gzip
import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lightspeed.errors import TraceError, UserInputError
from lightspeed.trace import load_trace
from lightspeed.trace.io import source
from lightspeed.trace.io.source import INFLATERS, inflater, trace_blocks

INSTALLED = [name for name, module in INFLATERS.items() if importlib.util.find_spec(module.split(".")[0])]


@pytest.fixture(params=INSTALLED)
def chosen(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("LIGHTSPEED_INFLATER", request.param)
    inflater.cache_clear()
    yield request.param
    inflater.cache_clear()


def _document(kineto: Any, num_kernels: int) -> bytes:
    events = [kineto.kernel("gemm", 10 * i, 5) for i in range(num_kernels)]
    return json.dumps(kineto.document(events)).encode()


def test_each_inflater_reads_several_members_and_padding(chosen: str, tmp_path: Path, kineto: Any) -> None:
    text = _document(kineto, 3)
    path = tmp_path / "rank-0.json.gz"
    path.write_bytes(gzip.compress(text[:50]) + gzip.compress(text[50:]) + b"\x00" * 16)
    assert inflater().name == chosen
    assert b"".join(trace_blocks(path)) == text
    assert load_trace(path).ranks[0].events.num_events == 3


def test_each_inflater_names_truncation_and_corruption(chosen: str, tmp_path: Path, kineto: Any) -> None:
    packed = gzip.compress(_document(kineto, 200))
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(packed[: len(packed) // 2])
    with pytest.raises(TraceError, match="gzip stream is truncated"):
        load_trace(cut)
    damaged = bytearray(packed)
    damaged[12:40] = b"\xff" * 28  # inside the deflate stream
    bad = tmp_path / "bad.json.gz"
    bad.write_bytes(bytes(damaged))
    with pytest.raises(TraceError, match="corrupt gzip data"):
        load_trace(bad)


def test_each_inflater_stops_a_gzip_bomb_at_the_limit(chosen: str, tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.json.gz"
    bomb.write_bytes(gzip.compress(b" " * (64 << 20), compresslevel=9))  # 64 MiB from ~64 KiB
    with pytest.raises(TraceError, match="beyond the"):
        sum(len(block) for block in trace_blocks(bomb, max_bytes=1 << 20))


def test_an_unknown_or_missing_inflater_is_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    inflater.cache_clear()
    with pytest.raises(UserInputError, match=r"unknown inflater 'snappy'.*allowed: isal, zlib-ng, zlib"):
        inflater("snappy")
    monkeypatch.setitem(source.INFLATERS, "isal", "no_such_module_here")
    inflater.cache_clear()
    with pytest.raises(UserInputError, match=r"not installed; pip install 'lightspeed\[trace\]'"):
        inflater("isal")
    inflater.cache_clear()
    assert inflater().name in ("zlib-ng", "zlib")  # the next one installed
    inflater.cache_clear()
