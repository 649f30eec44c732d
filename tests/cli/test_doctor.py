"""``lightspeed doctor``: every extra with its version, every backend with whether it answers, one
line each, exit 0 whatever is missing. Stand-ins only for hardware (NVML, DCGM); the network
backends are probed for real: a TCP listener for Ray, an HTTP server for the exporter, the
session's PostgreSQL server for the store."""

from __future__ import annotations

import http.server
import json
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from lightspeed.doctor import check_dcgm, check_exporter, check_nvml, check_postgres, check_ray, run_checks
from lightspeed.extras import EXTRAS
from monitor.test_dcgm import bindings


class FakeNvml:
    """NVML as nvidia-ml-py exposes it, on a machine with two H100s (or no driver)."""

    class NVMLError(Exception):
        pass

    def __init__(self, *, driver: bool = True) -> None:
        self.driver = driver

    def nvmlInit(self) -> None:
        if not self.driver:
            raise self.NVMLError("Driver Not Loaded")

    def nvmlShutdown(self) -> None:
        return

    def nvmlDeviceGetCount(self) -> int:
        return 2

    def nvmlSystemGetDriverVersion(self) -> bytes:
        return b"550.54.15"

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        return index

    def nvmlDeviceGetName(self, handle: int) -> str:
        return "NVIDIA H100 80GB HBM3"


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP port on 127.0.0.1 that accepts connections (a Ray head answers this way)."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        yield server.getsockname()[1]


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def metrics_server() -> Iterator[str]:
    """A real HTTP server that serves Prometheus' text format at /metrics."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b"# HELP up Up.\n# TYPE up gauge\nup 1\n# TYPE lightspeed_step_seconds gauge\n"
            self.send_response(200 if self.path == "/metrics" else 404)
            self.end_headers()
            self.wfile.write(body if self.path == "/metrics" else b"no")

        def log_message(self, *args: Any) -> None:
            return

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_nvml_names_the_driver_and_the_gpus_or_says_why_not() -> None:
    ok = check_nvml(FakeNvml())
    assert (ok.status, ok.detail) == ("ok", "driver 550.54.15, 2 GPU(s): NVIDIA H100 80GB HBM3")
    down = check_nvml(FakeNvml(driver=False))
    assert down.status == "unreachable"
    assert "no NVIDIA driver" in down.detail


def test_dcgm_counts_the_gpus_of_its_host_engine_or_says_what_is_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert check_dcgm(bindings({0: {1002: 0.5}, 1: {1002: 0.1}}), hostname="localhost").detail == (
        "host engine at localhost, 2 GPU(s)"
    )
    assert check_dcgm(bindings({}), hostname="node7").status == "unreachable"  # nv-hostengine not running
    monkeypatch.setitem(__import__("sys").modules, "dcgm_fields", None)
    missing = check_dcgm(None, hostname="localhost")
    assert missing.status == "missing"
    assert "bindings/python3" in missing.detail


def test_ray_address_is_reached_for_real(monkeypatch: pytest.MonkeyPatch, listener: int) -> None:
    monkeypatch.setattr("lightspeed.doctor.installed_version", lambda dist, module: "2.9.0")
    assert check_ray(f"127.0.0.1:{listener}").status == "ok"
    assert check_ray(f"ray://127.0.0.1:{listener}").detail.endswith(f"127.0.0.1:{listener} answers")
    closed = check_ray(f"127.0.0.1:{_closed_port()}", timeout_s=1.0)
    assert closed.status == "unreachable"
    assert "ray start --head" in closed.detail  # the fix, as '--engine ray --address' says it
    # the address grammar of '--engine ray': an address it would refuse is not called reachable
    malformed = check_ray(f"127.0.0.1/{listener}")
    assert malformed.status == "unreachable"
    assert "is not HOST:PORT, ray://HOST:PORT or auto" in malformed.detail
    assert check_ray(None).status == "not configured"
    monkeypatch.setattr("lightspeed.doctor.installed_version", lambda dist, module: None)
    assert check_ray(None).status == "missing"


def test_postgres_store_is_reached_or_its_error_is_masked(postgres_url: str) -> None:
    ok = check_postgres(postgres_url)
    assert ok.status == "ok"
    assert "server " in ok.detail
    secret = "pw-not-this-one"
    down = check_postgres(f"postgresql://user:{secret}@127.0.0.1:{_closed_port()}/db", timeout_s=1.0)
    assert down.status == "unreachable"
    assert secret not in down.detail
    assert check_postgres(None).status == "not configured"  # the store is the SQLite file


def test_exporter_is_scraped(metrics_server: str) -> None:
    ok = check_exporter(metrics_server)
    assert (ok.status, ok.detail) == ("ok", f"http://{metrics_server}/metrics: 2 metric families")
    assert check_exporter(f"http://{metrics_server}/other").status == "unreachable"
    assert check_exporter(f"127.0.0.1:{_closed_port()}", timeout_s=1.0).status == "unreachable"
    assert check_exporter("file:///etc/passwd").status == "unreachable"  # only http(s) is fetched
    assert check_exporter(None).status == "not configured"


def test_every_extra_is_listed_with_its_versions() -> None:
    report = run_checks(nvml=FakeNvml(), dcgm=bindings({0: {1002: 0.5}}))
    assert [check.name for check in report.extras] == list(EXTRAS)
    for check in report.extras:
        assert check.versions is not None
        assert set(check.versions) == {dist for dist, _ in EXTRAS[check.name]}
        if check.status == "ok":
            assert all(f"{dist} {version}" in check.detail for dist, version in check.versions.items())
        else:
            assert f"pip install 'lightspeed[{check.name}]'" in check.detail
    assert [check.name for check in report.backends] == [
        "NVML",
        "DCGM",
        "Ray",
        "PostgreSQL",
        "Prometheus exporter",
    ]


def test_a_missing_extra_is_reported_and_the_doctor_still_exits_0(
    run_cli, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(
        "lightspeed.extras.installed_version", lambda dist, module: None if dist == "wandb" else "1.0"
    )
    result = run_cli("doctor")
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    (wandb,) = [line for line in lines if line.split()[1:2] == ["wandb"]]
    assert "missing wandb; pip install 'lightspeed[wandb]'" in wandb
    names = [*EXTRAS, "NVML", "DCGM", "Ray", "PostgreSQL", "Prometheus"]
    assert all(sum(line.split()[1:2] == [name] for line in lines) == 1 for name in names)  # one line each
    payload = json.loads(run_cli("doctor", "--json").out)
    assert {check["name"]: check["status"] for check in payload["checks"]}["wandb"] == "missing"
