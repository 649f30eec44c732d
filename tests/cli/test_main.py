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


def test_an_empty_catalog_path_element_reads_nothing(run_cli, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # "LIGHTSPEED_CATALOG=/x:" used to read the current folder recursively (Path("") is ".")
    (tmp_path / "broken.toml").write_text("this is not TOML [", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    extra = tmp_path / "extra"
    extra.mkdir()
    monkeypatch.setenv("LIGHTSPEED_CATALOG", f"{extra}::")
    result = run_cli("hw", "list", "--json")
    assert result.code == 0, result.err
    monkeypatch.setenv("LIGHTSPEED_CATALOG", f"{tmp_path}")
    assert run_cli("hw", "list").code == 2  # the folder itself is read when named
