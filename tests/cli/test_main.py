"""The entry point: usage errors are one line and exit 2."""

from __future__ import annotations

from lightspeed import __version__


def test_version(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("--version")
    assert result.code == 0
    assert __version__ in result.out


def test_unknown_command_is_one_line_exit_2(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("frobnicate")
    assert result.code == 2
    assert result.err.count("\n") == 1
    assert result.err.startswith("lightspeed: error:")
    assert "frobnicate" in result.err


def test_help_lists_commands(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("--help")
    assert result.code == 0
    assert "Usage" in result.out
