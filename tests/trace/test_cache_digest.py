"""The cache's digest records: an unchanged trace is not hashed again, a changed one always is."""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("pyarrow")

from lightspeed.records import to_jsonable
from lightspeed.trace import cache as cache_module
from lightspeed.trace import load_trace, summarize
from lightspeed.trace.cache import DIGEST_FOLDER, RACY_WINDOW_NS, TraceCache

LATER_NS = 10 * RACY_WINDOW_NS  # how much later than the real clock a "later" record is written


@pytest.fixture
def hashed(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The files the cache hashes (SHA-256 over their bytes), in order."""
    calls: list[Path] = []
    real = cache_module.file_digest

    def counting(path: Path) -> str:
        calls.append(path)
        return real(path)

    monkeypatch.setattr(cache_module, "file_digest", counting)
    return calls


@pytest.fixture
def records_written_later(monkeypatch: pytest.MonkeyPatch) -> None:
    """Digest records carry a time well past the racy window (as if the command ran 20 s after the
    file was written), so they can be trusted without the test waiting."""
    monkeypatch.setattr(cache_module, "time", SimpleNamespace(time_ns=lambda: time.time_ns() + LATER_NS))


def _trace(write_trace: Any, kineto: Any, kernel: str) -> Path:
    events = [kineto.kernel(kernel, 10 * i, 5) for i in range(4)]
    return write_trace("rank-0.json", kineto.document(events))


def _records() -> list[Path]:
    cache = TraceCache.default()
    assert cache is not None
    return sorted((cache.folder / DIGEST_FOLDER).glob("*.json"))


@pytest.mark.usefixtures("records_written_later")
def test_an_unchanged_file_is_hashed_once_and_still_found_by_content(
    write_trace: Any, kineto: Any, hashed: list[Path], caplog: pytest.LogCaptureFixture
) -> None:
    path = _trace(write_trace, kineto, "gemmA")
    parsed = load_trace(path, cache=False)
    first = load_trace(path)
    assert hashed == [path]
    with caplog.at_level(logging.INFO, logger="lightspeed.trace.cache"):
        second = load_trace(path)
    assert hashed == [path]  # the recorded digest was reused
    assert "trace cache hit" in caplog.text
    assert to_jsonable(summarize(second)) == to_jsonable(summarize(first)) == to_jsonable(summarize(parsed))
    (record,) = _records()
    assert json.loads(record.read_text())["stamp"][2] == path.stat().st_size


@pytest.mark.usefixtures("records_written_later")
def test_a_file_rewritten_with_the_same_size_and_mtime_is_hashed_again_and_misses(
    write_trace: Any, kineto: Any, hashed: list[Path], caplog: pytest.LogCaptureFixture
) -> None:
    path = _trace(write_trace, kineto, "gemmA")
    assert load_trace(path).ranks[0].events.names == ("gemmA",)
    before = path.stat()
    replacement = path.with_name("new.json")  # a new file (new inode) renamed over the old one
    replacement.write_bytes(path.read_bytes().replace(b"gemmA", b"gemmB"))
    os.replace(replacement, path)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # its mtime as before
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    assert (after.st_ino, after.st_ctime_ns) != (before.st_ino, before.st_ctime_ns)
    with caplog.at_level(logging.INFO, logger="lightspeed.trace.cache"):
        again = load_trace(path)
    assert hashed == [path, path]
    assert "trace cache miss" in caplog.text
    assert again.ranks[0].events.names == ("gemmB",)


def test_a_digest_recorded_within_the_racy_window_is_not_trusted(
    write_trace: Any, kineto: Any, hashed: list[Path]
) -> None:
    """The real clock: the file was written just now, so its record is racy (a change within the
    file system's timestamp granularity could keep every time) and the file is hashed each time."""
    path = _trace(write_trace, kineto, "gemmA")
    load_trace(path)
    (record,) = _records()
    written = json.loads(record.read_text())
    assert written["recorded_ns"] - max(written["stamp"][3:]) < RACY_WINDOW_NS
    load_trace(path)
    assert hashed == [path, path]


@pytest.mark.usefixtures("records_written_later")
@pytest.mark.parametrize(
    "damage", ["not json", "a list", "a digest too short", "another path", "empty", "a folder"]
)
def test_a_damaged_or_foreign_record_is_ignored_and_rewritten(
    write_trace: Any, kineto: Any, hashed: list[Path], damage: str
) -> None:
    path = _trace(write_trace, kineto, "gemmA")
    parsed = to_jsonable(summarize(load_trace(path)))
    (record,) = _records()
    good = json.loads(record.read_text())
    if damage == "a folder":
        record.unlink()
        record.mkdir()
    else:
        record.write_text(
            {
                "not json": "{stamp: [",
                "a list": "[1, 2, 3]",
                "a digest too short": json.dumps({**good, "sha256": "ab"}),
                "another path": json.dumps({**good, "path": "/elsewhere/rank-0.json"}),
                "empty": "",
            }[damage]
        )
    assert to_jsonable(summarize(load_trace(path))) == parsed
    assert hashed == [path, path]  # not trusted: hashed again
    if damage != "a folder":  # a folder in its place cannot be replaced by a file: left, never trusted
        assert json.loads(record.read_text()) | {"recorded_ns": 0} == good | {"recorded_ns": 0}
        load_trace(path)
        assert hashed == [path, path]  # rewritten: trusted again


def test_clear_removes_the_digest_records(write_trace: Any, kineto: Any) -> None:
    load_trace(_trace(write_trace, kineto, "gemmA"))
    assert _records()
    cache = TraceCache.default()
    assert cache is not None
    cache.clear()
    assert _records() == []
