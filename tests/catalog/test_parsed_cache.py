"""The parsed catalog kept between commands: read back only for exactly the files it was parsed
from, rebuilt when unreadable, never in the way when the cache folder cannot be written."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lightspeed.catalog import load_catalog, registry
from lightspeed.catalog.parsed_cache import SWITCH_VARIABLE
from lightspeed.paths import lightspeed_cache

EXTRA = """\
schema_version = 1
kind = "accelerator"
name = "cache-probe-gpu"
extends = "h100-sxm"
display_name = "{display}"
"""


def _entries() -> list[Path]:
    return sorted((lightspeed_cache() / "catalog").glob("*.pickle"))


def _refuse_to_parse(files: list[Path]) -> None:
    raise AssertionError("parsed although an entry for these files exists")


def test_a_second_load_reads_the_entry_and_equals_the_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    first = load_catalog()
    assert len(_entries()) == 1
    monkeypatch.setattr(registry, "_parse_catalog", _refuse_to_parse)
    assert load_catalog() == first


def test_an_edited_extra_file_is_parsed_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    extra = tmp_path / "probe.toml"
    extra.write_text(EXTRA.format(display="first"), encoding="utf-8")
    assert load_catalog([extra]).accelerator("cache-probe-gpu").display_name == "first"
    extra.write_text(EXTRA.format(display="second, longer"), encoding="utf-8")
    os.utime(extra, ns=(extra.stat().st_atime_ns, extra.stat().st_mtime_ns + 1_000_000))
    assert load_catalog([extra]).accelerator("cache-probe-gpu").display_name == "second, longer"
    assert len(_entries()) == 2  # one per set of files
    assert load_catalog().accelerators.keys().isdisjoint({"cache-probe-gpu"})  # the shipped set alone


def test_a_corrupt_entry_is_rebuilt_not_trusted() -> None:
    expected = load_catalog()
    (entry,) = _entries()
    entry.write_bytes(b"\x80\x05not a pickle")
    assert load_catalog() == expected
    (rebuilt,) = _entries()
    assert rebuilt.read_bytes()[:2] == b"\x80\x05"
    assert rebuilt.stat().st_size > 1000


def test_an_entry_of_another_kind_is_not_returned(monkeypatch: pytest.MonkeyPatch) -> None:
    load_catalog()
    (entry,) = _entries()
    entry.write_bytes(__import__("pickle").dumps({"not": "a catalog"}))
    assert load_catalog().accelerator("h100-sxm").name == "h100-sxm"


def test_an_unwritable_cache_or_the_switch_leaves_the_command_to_parse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder would be", encoding="utf-8")
    monkeypatch.setenv("LIGHTSPEED_CACHE", str(blocker))
    assert load_catalog().accelerator("b200").name == "b200"
    monkeypatch.setenv("LIGHTSPEED_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv(SWITCH_VARIABLE, "off")
    assert load_catalog().accelerator("b200").name == "b200"
    assert not (tmp_path / "cache").exists()


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX owners and modes")
@pytest.mark.parametrize("loosened", ["entry", "folder"])
def test_an_entry_others_could_write_is_never_unpickled(
    loosened: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pickle another user could have planted runs code when loaded (DESIGN: never unpickle
    what is not ours): a group- or world-writable entry or folder is parsed from TOML instead."""
    expected = load_catalog()
    (entry,) = _entries()
    assert entry.parent.stat().st_mode & 0o777 == 0o700  # made private
    (entry if loosened == "entry" else entry.parent).chmod(0o666 if loosened == "entry" else 0o777)
    parsed: list[int] = []
    original = registry._parse_catalog
    monkeypatch.setattr(registry, "_parse_catalog", lambda files: parsed.append(1) or original(files))
    assert load_catalog() == expected
    assert parsed == [1]
