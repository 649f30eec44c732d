"""Copies of the shipped stacks data file with one edit (importable as ``stacks_files``: pytest's
pythonpath has tests/), for tests that a broken field is refused with its name."""

from __future__ import annotations

import re
from pathlib import Path

STACKS_TOML = Path(__file__).parents[1] / "src" / "lightspeed" / "sol" / "data" / "stacks.toml"


def edited_stacks(tmp_path: Path, pattern: str, replacement: str) -> Path:
    """A copy of the shipped stacks.toml in ``tmp_path`` with the first match of ``pattern``
    (a regular expression, which must match) replaced."""
    text, count = re.subn(pattern, replacement, STACKS_TOML.read_text(encoding="utf-8"), count=1)
    assert count == 1, pattern
    path = tmp_path / "stacks.toml"
    path.write_text(text, encoding="utf-8")
    return path
