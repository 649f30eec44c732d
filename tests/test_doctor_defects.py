"""``lightspeed doctor`` tells the truth about what would work: an extra whose package is older than
``pyproject.toml``'s floor, or cannot be imported, is not marked installed; a malformed --exporter
is one line (exit 0, the doctor reports), never a traceback. Version orders are PEP 440's."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from lightspeed.doctor import check_exporter, extra_checks

FORM = "give HOST:PORT or an http:// URL"


@pytest.mark.parametrize(
    ("address", "problem"),
    [
        ("http://[::1", "Invalid IPv6 URL"),
        ("[::1]:x", "x"),
        ("127.0.0.1:99999", "1 to 65535"),  # a TCP port is 16 bits
    ],
)
def test_a_malformed_exporter_address_is_reported_not_raised(address: str, problem: str) -> None:
    check = check_exporter(address, timeout_s=1.0)
    assert check.status == "unreachable"
    assert FORM in check.detail
    assert problem in check.detail


def test_the_cli_refuses_a_malformed_exporter_in_one_line(run_cli) -> None:  # type: ignore[no-untyped-def]
    # a malformed --exporter is bad input (one line, exit 2, no table); one nothing answers at is
    # a finding of the doctor (exit 0)
    result = run_cli("doctor", "--exporter", "[::1]:x", "--json")
    assert result.code == 2, result.err
    assert result.out == ""
    assert len(result.err.strip().splitlines()) == 1
    assert "Traceback" not in result.err


def _versions(monkeypatch: pytest.MonkeyPatch, **versions: str) -> None:
    """Every distribution installed in version 99.0, but those named (``psutil="5.0.0"``)."""
    monkeypatch.setattr(
        "lightspeed.extras.installed_version",
        lambda dist, module: versions.get(dist.replace("-", "_"), "99.0"),
    )


def test_an_extra_older_than_the_floor_is_not_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    _versions(monkeypatch, psutil="5.0.0")  # pyproject.toml: monitor = [..., "psutil>=5.9", ...]
    (monitor,) = [check for check in extra_checks() if check.name == "monitor"]
    assert monitor.status == "missing"
    assert "psutil 5.0.0 is older than 5.9" in monitor.detail
    assert "pip install --upgrade 'lightspeed[monitor]'" in monitor.detail


def test_an_extra_that_cannot_be_imported_is_not_installed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pytest.importorskip("psutil")
    _versions(monkeypatch, psutil="7.0.0")
    folder = tmp_path / "psutil"
    folder.mkdir()
    (folder / "__init__.py").write_text("raise ImportError('libfoo.so: cannot open shared object file')\n")
    for name in [name for name in sys.modules if name == "psutil" or name.startswith("psutil.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.syspath_prepend(str(tmp_path))
    (monitor,) = [check for check in extra_checks() if check.name == "monitor"]
    assert monitor.status == "missing"
    assert "psutil 7.0.0 cannot be imported (libfoo.so: cannot open shared object file)" in monitor.detail


@pytest.mark.parametrize(
    ("version", "specifier", "allowed"),
    [
        ("5.10.0", ">=5.9", True),  # 10 > 9 as numbers, not as text
        ("5.8.9", ">=5.9", False),
        ("2.5.1+cu121", ">=2.1", True),  # a local version label
        ("3.1.0rc1", ">=3.1", False),  # a pre-release comes before its release
        ("3.1", ">=3.1.0", True),  # trailing zeros do not count
        ("1.10.0", "!=1.10.0,<2,>=1.8", False),  # alembic's excluded release
        ("2.0", "!=1.10.0,<2,>=1.8", False),
        ("1.13.2", "!=1.10.0,<2,>=1.8", True),
        ("3.0.0", "<3,>=1.4", False),
    ],
)
def test_version_ranges_follow_pep_440(version: str, specifier: str, allowed: bool) -> None:
    from lightspeed.extras import version_problem

    assert (version_problem("package", version, specifier) is None) == allowed
