"""The doctor audit's fixes: ``auto`` is this node's Ray cluster (found as Ray finds it), a port
out of range or not a number is said in the doctor's own words, and a SQLite store the results
cannot go to is flagged, without the doctor creating anything."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from lightspeed.doctor import check_exporter, check_postgres, check_ray


@pytest.fixture
def ray_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("lightspeed.doctor.installed_version", lambda dist, module: "2.9.0")


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP port on 127.0.0.1 that accepts connections (a Ray head answers this way)."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        yield server.getsockname()[1]


def test_auto_reaches_the_cluster_ray_start_left_on_this_node(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ray_installed: None, listener: int
) -> None:
    # 'ray start' writes the address to $RAY_TMPDIR/ray/ray_current_cluster; ray.init("auto") reads it
    monkeypatch.setenv("RAY_TMPDIR", str(tmp_path))
    (tmp_path / "ray").mkdir()
    (tmp_path / "ray" / "ray_current_cluster").write_text(f"127.0.0.1:{listener}\n")
    for address in ("auto", "ray://auto"):
        check = check_ray(address)
        assert (check.status, check.detail) == (
            "ok",
            f"ray 2.9.0; auto: this node's cluster at 127.0.0.1:{listener} answers",
        )


def test_auto_without_a_cluster_on_this_node_is_unreachable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ray_installed: None
) -> None:
    monkeypatch.setenv("RAY_TMPDIR", str(tmp_path))
    check = check_ray("auto")
    assert check.status == "unreachable"
    assert f"auto finds no Ray cluster on this node ({tmp_path}/ray/ray_current_cluster" in check.detail
    assert "ray start --head" in check.detail
    assert check_ray("local").status == "not configured"  # 'local' starts a new Ray, as no address does


def test_the_run_checks_read_auto_from_ray_address(
    run_cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("ray")
    monkeypatch.setenv("RAY_TMPDIR", str(tmp_path))
    monkeypatch.setenv("RAY_ADDRESS", "auto")
    result = run_cli("doctor", "--json")
    assert result.code == 0, result.err
    (ray,) = [check for check in json.loads(result.out)["checks"] if check["name"] == "Ray"]
    assert ray["status"] == "unreachable"
    assert "auto finds no Ray cluster" in ray["detail"]


@pytest.mark.parametrize("address", ["ray://x:99999", "127.0.0.1:65536", "head:0"])
def test_a_ray_port_out_of_range_says_so(address: str, ray_installed: None) -> None:
    check = check_ray(address)
    assert check.status == "unreachable"
    assert f"Ray address {address!r}: the port must be 1 to 65535" in check.detail
    assert "is not HOST:PORT" not in check.detail


def test_an_exporter_port_that_is_not_a_number_is_said_in_our_words() -> None:
    check = check_exporter("[::1]:x")
    assert check.status == "unreachable"
    assert check.detail.startswith("--exporter '[::1]:x': the port 'x' is not a number; give HOST:PORT")
    assert "could not be cast" not in check.detail  # urllib's wording


def test_a_store_under_a_file_is_flagged(tmp_path: Path) -> None:
    (tmp_path / "plain").write_text("x")
    check = check_postgres(str(tmp_path / "plain" / "results.sqlite"))
    assert check.status == "unreachable"
    assert f"{tmp_path / 'plain'} is not a folder" in check.detail
    assert "fix: set LIGHTSPEED_HOME to a folder you can write" in check.detail


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
def test_a_home_under_proc_is_flagged(run_cli, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("LIGHTSPEED_HOME", "/proc/x")  # os.access lets root write /proc; nothing can be made
    result = run_cli("doctor", "--json")
    assert result.code == 0, result.err
    (store,) = [check for check in json.loads(result.out)["checks"] if check["name"] == "PostgreSQL"]
    assert store["status"] == "unreachable"
    expected = (
        "the SQLite file /proc/x/results.sqlite, which cannot be written: nothing can be created in /proc"
    )
    assert expected in store["detail"]


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root writes a read-only file")
def test_a_read_only_store_file_is_flagged(tmp_path: Path) -> None:
    store = tmp_path / "results.sqlite"
    store.write_bytes(b"")
    store.chmod(0o444)
    check = check_postgres(str(store))
    assert check.status == "unreachable"
    assert "read-only" in check.detail


def test_a_store_that_can_be_created_passes_and_nothing_is_made(tmp_path: Path) -> None:
    store = tmp_path / "new" / "deeper" / "results.sqlite"  # the store makes both folders on its first write
    check = check_postgres(str(store))
    assert check.status == "not configured"
    assert check.detail.endswith(f"results go to the SQLite file {store}")
    assert list(tmp_path.iterdir()) == []  # the doctor probes, it creates nothing
