"""``import_extra`` is ``require_extra`` plus the extras table's package names and the library's
traceback at DEBUG: one home for the import logic (round 13, helper P)."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest

from lightspeed import extras
from lightspeed.errors import MissingExtraError


def test_import_extra_goes_through_require_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[object, ...]] = []

    def recording(module: str, extra: str, purpose: str, *, package: str | None = None) -> object:
        calls.append((module, extra, purpose, package))
        return sys

    monkeypatch.setattr(extras, "require_extra", recording)
    assert extras.import_extra("pynvml", extra="monitor", purpose="NVML counters") is sys
    # the package pip installs comes from the extras table: module pynvml is nvidia-ml-py on PyPI
    assert calls == [("pynvml", "monitor", "NVML counters", "nvidia-ml-py")]


def test_a_broken_module_is_one_error_with_its_traceback_at_debug(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    package = "r13_p_broken_module"
    (tmp_path / f"{package}.py").write_text("raise OSError('libcuda.so.1: cannot open shared object file')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    broken = r"installed but cannot be imported \(libcuda\.so\.1: cannot"
    with (
        caplog.at_level(logging.DEBUG, logger="lightspeed.extras"),
        pytest.raises(MissingExtraError, match=broken),
    ):
        extras.import_extra(package, extra="bench", purpose="GEMM benchmarks")
    (record,) = [r for r in caplog.records if r.name == "lightspeed.extras"]
    assert record.getMessage() == f"importing {package} failed"
    assert record.exc_info is not None
    assert isinstance(record.exc_info[1], OSError)  # the library's own error, whole, for -vv


def test_a_missing_module_logs_nothing(caplog: pytest.LogCaptureFixture) -> None:
    missing = r"needs the 'r13_p_surely_absent' package; install it"
    with (
        caplog.at_level(logging.DEBUG, logger="lightspeed.extras"),
        pytest.raises(MissingExtraError, match=missing),
    ):
        extras.import_extra("r13_p_surely_absent", extra="bench", purpose="GEMM benchmarks")
    assert [r for r in caplog.records if r.name == "lightspeed.extras"] == []
