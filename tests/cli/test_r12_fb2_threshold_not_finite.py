"""A percentage written as NaN or infinity (``nan%``, ``inf%``, ``-inf%``) is said to be no finite
number, not to overflow a 64-bit float (only a number past 1.8e308, such as 1e400%, overflows)."""

from __future__ import annotations

from pathlib import Path

import pytest

from expect import one_line_error


@pytest.mark.parametrize("text", ["nan%", "NaN%", "inf%", "-inf%", "+inf%", "infinity%", "nan", "-inf"])
def test_a_not_finite_threshold_is_said_so(run_cli, tmp_path: Path, text: str) -> None:  # type: ignore[no-untyped-def]
    line = one_line_error(
        run_cli("compare", str(tmp_path / "base.json"), str(tmp_path / "cur.json"), "--threshold", text),
        f"{text} is not a finite number",
    )
    assert "overflows" not in line


@pytest.mark.parametrize("text", ["1e400%", "1e400"])
def test_a_threshold_past_a_float_still_overflows(run_cli, tmp_path: Path, text: str) -> None:  # type: ignore[no-untyped-def]
    one_line_error(
        run_cli("compare", str(tmp_path / "base.json"), str(tmp_path / "cur.json"), "--threshold", text),
        f"{text} overflows a 64-bit float",
    )
