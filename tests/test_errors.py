"""The error tree and its messages."""

from __future__ import annotations

import pytest

from lightspeed.errors import (
    DataFileError,
    LightspeedError,
    MissingExtraError,
    UnknownNameError,
    closest_names,
    require_extra,
)


def test_unknown_name_lists_closest() -> None:
    error = UnknownNameError("device", "h100-sx", ["h100-sxm", "h200-sxm", "mi300x"])
    assert isinstance(error, LightspeedError)
    assert "h100-sxm" in str(error).split("closest:")[1]
    assert "mi300x" not in str(error)


def test_closest_names_prefers_substrings_and_typos() -> None:
    assert closest_names("h800", ["h800-sxm", "h800-pcie", "b200"])[:2] == ["h800-sxm", "h800-pcie"]


def test_data_file_error_names_file_field_value_and_fix() -> None:
    error = DataFileError(
        "a.toml", "expected a number", field="memory.usable_gb", value="x", fix="write 80", line=3
    )
    assert str(error) == "a.toml:3: expected a number; field 'memory.usable_gb'; value 'x'; fix: write 80"


def test_missing_extra_names_the_pip_extra() -> None:
    with pytest.raises(MissingExtraError, match=r"pip install 'lightspeed\[bench\]'"):
        require_extra("surely_not_a_module_xyz", "bench", "GEMM benchmarks")
