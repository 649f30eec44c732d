"""Bad values at the edge (review 14, helper B): a malformed ``doctor --exporter`` is bad input
(one line, exit 2) where an unreachable well-formed one stays a doctor finding; ``LIGHTSPEED_HOME``
naming a file and a store path ending in a separator are said as what they are; ``tour --out`` on
a file is the tour's one line, not click's."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest

from lightspeed.errors import StoreError, UserInputError
from lightspeed.store import open_store, store_location
from lightspeed.tour import steps as tour

FORM = "give HOST:PORT or an http:// URL"


def _closed_port() -> int:
    """A local TCP port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# ---- doctor --exporter ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("ftp://x", "only http and https are scraped"),
        ("notaurl", "names no port"),
        ("127.0.0.1:0", "the port must be 1 to 65535"),
        ("[::1]:x", "the port 'x' is not a number"),
    ],
)
def test_a_malformed_exporter_is_refused_in_one_line(run_cli, value: str, problem: str) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("doctor", "--exporter", value, "--json")
    assert result.code == 2
    assert result.out == ""  # no doctor table: refused before any check
    assert result.err.count("\n") == 1
    assert f"--exporter {value!r}" in result.err
    assert problem in result.err
    assert FORM in result.err
    assert "Traceback" not in result.err


def test_an_unreachable_well_formed_exporter_is_a_finding_with_exit_0(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("doctor", "--exporter", f"127.0.0.1:{_closed_port()}", "--timeout", "1", "--json")
    assert result.code == 0, result.err
    (exporter,) = [
        check for check in json.loads(result.out)["checks"] if check["name"] == "Prometheus exporter"
    ]
    assert exporter["status"] == "unreachable"


# ---- LIGHTSPEED_HOME and LIGHTSPEED_STORE --------------------------------------------------------


def test_a_home_that_is_a_file_is_named_as_such(
    run_cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    home = tmp_path / "afile"
    home.write_text("not a folder\n", encoding="utf-8")
    monkeypatch.setenv("LIGHTSPEED_HOME", str(home))
    result = run_cli("results", "list")
    assert result.code == 2
    assert result.err.count("\n") == 1
    assert f"LIGHTSPEED_HOME {home} is a file, not a folder" in result.err
    assert "set LIGHTSPEED_HOME to a folder" in result.err
    assert "does not exist" not in result.err
    assert home.read_text(encoding="utf-8") == "not a folder\n"


def test_a_writer_under_a_home_that_is_a_file_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "afile"
    home.write_text("", encoding="utf-8")
    monkeypatch.setenv("LIGHTSPEED_HOME", str(home))
    with pytest.raises(StoreError) as raised:
        open_store()  # the default store, created by a writer
    assert str(raised.value) == (
        f"cannot create the results store folder {home}: LIGHTSPEED_HOME {home} is a file, not a folder; "
        "fix: set LIGHTSPEED_HOME to a folder (or LIGHTSPEED_STORE to the store's file)"
    )


def test_a_store_under_a_file_names_that_file(
    run_cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    blocking = tmp_path / "afile"
    blocking.write_text("", encoding="utf-8")
    monkeypatch.setenv("LIGHTSPEED_STORE", str(blocking / "results.sqlite"))
    result = run_cli("results", "list")
    assert result.code == 2
    assert (
        f"{blocking} is a file, not a folder; fix: set LIGHTSPEED_STORE to a path in a folder" in result.err
    )


@pytest.mark.parametrize("value", ["x.sqlite/", "runs/x.sqlite//", "sqlite:////tmp/runs/x.sqlite/"])
def test_a_store_path_ending_in_a_separator_is_refused(
    run_cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LIGHTSPEED_STORE", value)
    result = run_cli("results", "list")
    assert result.code == 2
    assert result.err.count("\n") == 1
    assert f"LIGHTSPEED_STORE {value!r} ends in a separator, so it names a folder" in result.err
    assert "does not exist" not in result.err


def test_a_store_option_ending_in_a_separator_names_the_option() -> None:
    with pytest.raises(
        UserInputError, match=r"^--to 'y\.sqlite/' ends in a separator.*drop the separator \(y\.sqlite\)"
    ):
        store_location("y.sqlite/", given_as="--to")
    # a path without one is read as before
    assert store_location("y.sqlite", given_as="--to").display == "y.sqlite"


# ---- tour --out ----------------------------------------------------------------------------------


def test_tour_out_on_a_regular_file_is_the_tours_one_line(  # type: ignore[no-untyped-def]
    run_cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran: list[str] = []
    monkeypatch.setattr(tour, "STEPS", (("probe", "Probe", lambda _: ran.append("probe") or []),))
    afile = tmp_path / "afile"
    afile.write_text("", encoding="utf-8")
    result = run_cli("tour", "--quick", "--out", str(afile), "--json")
    assert result.code == 2
    assert result.err.count("\n") == 1
    assert f"--out {afile}: {afile} is a file, not a folder; pick another --out" in result.err
    assert "Directory" not in result.err
    assert ran == []


def test_tour_out_on_a_fifo_names_it_a_fifo(  # type: ignore[no-untyped-def]
    run_cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran: list[str] = []
    monkeypatch.setattr(tour, "STEPS", (("probe", "Probe", lambda _: ran.append("probe") or []),))
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    result = run_cli("tour", "--quick", "--out", str(fifo), "--json")
    assert result.code == 2
    assert f"--out {fifo}: {fifo} is a FIFO (named pipe), not a folder; pick another --out" in result.err
    assert ran == []
