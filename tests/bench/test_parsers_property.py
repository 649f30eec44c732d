"""Property tests for the parsers that read untrusted text (sysfs, /proc/cpuinfo, results files)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lightspeed.bench.membw import _parse_cache_size
from lightspeed.environment import _cpuinfo_fields
from lightspeed.errors import DataFileError
from lightspeed.gate.history import _read_json_results


@given(st.text(max_size=200))
def test_cache_size_parser_never_raises(text: str) -> None:
    size = _parse_cache_size(text)
    assert size is None or size >= 0


@given(st.integers(min_value=0, max_value=10**6), st.sampled_from(["", "K", "M", "G"]))
def test_cache_size_units(number: int, unit: str) -> None:
    factor = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30}[unit]
    assert _parse_cache_size(f"{number}{unit}") == number * factor


@given(st.text(max_size=500))
def test_cpuinfo_parser_never_raises(text: str) -> None:
    model, flags, cores = _cpuinfo_fields(text)
    assert isinstance(model, str)
    assert all(isinstance(flag, str) for flag in flags)
    assert cores is None or cores >= 1


@settings(max_examples=50, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=300))
def test_results_file_reader_accepts_or_explains(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "results.json"
    path.write_bytes(content)
    outcome: object
    try:
        outcome = _read_json_results(path)
    except DataFileError as error:
        outcome = error
    if isinstance(outcome, DataFileError):
        assert str(path) in str(outcome)
    else:
        assert isinstance(outcome, list)
        assert all(isinstance(item, dict) for item in outcome)


def test_results_file_reader_unwraps_exported_records(tmp_path: Path) -> None:
    path = tmp_path / "export.json"
    path.write_text('[{"payload": {"suite": "gemm"}}, {"suite": "membw"}]')
    assert _read_json_results(path) == [{"suite": "gemm"}, {"suite": "membw"}]
    path.write_text('{"suite": "gemm"}')
    with pytest.raises(DataFileError, match="JSON list"):
        _read_json_results(path)
    path.write_text("[" * 100_000 + "]" * 100_000)  # nesting deeper than the parser's recursion limit
    with pytest.raises(DataFileError, match="nested 100000 levels deep"):
        _read_json_results(path)
