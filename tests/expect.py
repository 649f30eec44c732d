"""Assertions shared by the CLI tests (importable as ``expect``: pytest's pythonpath has tests/)."""

from __future__ import annotations

from typing import Protocol


class _Result(Protocol):
    code: int
    out: str
    err: str


def one_line_error(result: _Result, *fragments: str) -> str:
    """Assert the house rule for bad input and return the line: exit code 2, exactly one
    line on stderr starting ``lightspeed: error:``, no traceback, each fragment present."""
    assert result.code == 2, f"exit {result.code}; stdout: {result.out[-500:]}; stderr: {result.err[-500:]}"
    assert "Traceback" not in result.err, result.err
    assert result.err.count("\n") == 1, repr(result.err)
    assert result.err.endswith("\n"), repr(result.err)
    line = result.err.rstrip("\n")
    assert line.startswith("lightspeed: error:"), line
    for fragment in fragments:
        assert fragment in line, f"{fragment!r} not in {line!r}"
    return line
