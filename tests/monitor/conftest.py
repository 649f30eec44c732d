"""Hand-written captures and goodput logs (independent of the writers under test), and a real
Prometheus server started on 127.0.0.1 for the exporter's scrape test."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

NS = 1_000_000_000
T0_NS = 1_700_000_000 * NS

H100 = {"device_id": "gpu0", "kind": "gpu", "name": "NVIDIA H100 80GB HBM3", "backend": "nvml", "index": 0}
HOST = {"device_id": "host", "kind": "host", "name": "node1", "backend": "psutil", "details": {"num_cpus": 2}}


def write_capture(
    path: Path,
    samples: list[dict[str, dict[str, float]]],
    *,
    devices: list[dict[str, Any]] | None = None,
    interval_s: float = 1.0,
    start_ns: int = T0_NS,
    host: str = "node1",
    end: bool = True,
) -> Path:
    """A capture with sample i at ``start_ns + (i + 1) * interval`` (the first covers one interval)."""
    lines = [
        {
            "v": 1,
            "type": "capture_start",
            "t_ns": start_ns,
            "host": host,
            "pid": 7,
            "interval_s": interval_s,
            "backends": ["nvml", "host"],
            "meta": {},
            "devices": devices if devices is not None else [H100, HOST],
        }
    ]
    for index, sample in enumerate(samples):
        lines.append({"type": "sample", "t_ns": start_ns + round((index + 1) * interval_s * NS), "d": sample})
    if end:
        lines.append({"type": "capture_end", "t_ns": start_ns + round((len(samples) + 1) * interval_s * NS)})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


class HandRun:
    """One rank's goodput log written line by line; times in seconds after ``T0_NS``."""

    def __init__(self, run_dir: Path, rank: int = 0, world_size: int = 1, host: str = "node1") -> None:
        self.path = run_dir / f"rank-{rank:05d}.jsonl"
        self.rank = rank
        self.world_size = world_size
        self.host = host
        self.lines: list[dict[str, Any]] = []

    def start(self, t_s: float, **fields: Any) -> HandRun:
        self.lines.append(
            {
                "v": 1,
                "seg": "s1",
                "type": "job_start",
                "t_ns": T0_NS + round(t_s * NS),
                "run_id": "run-a",
                "rank": self.rank,
                "world_size": self.world_size,
                "num_nodes": 1,
                "host": self.host,
                "pid": 1,
                "tokens_scope": "rank",
                **fields,
            }
        )
        return self

    def step(self, step: int, start_s: float, end_s: float, tokens: float = 0.0) -> HandRun:
        self.lines.append(
            {
                "v": 1,
                "seg": "s1",
                "type": "step",
                "step": step,
                "start_ns": T0_NS + round(start_s * NS),
                "end_ns": T0_NS + round(end_s * NS),
                "tokens": tokens,
                "samples": 0,
            }
        )
        return self

    def phase(self, phase: str, start_s: float, end_s: float) -> HandRun:
        self.lines.append(
            {
                "v": 1,
                "seg": "s1",
                "type": "phase",
                "phase": phase,
                "step": 0,
                "start_ns": T0_NS + round(start_s * NS),
                "end_ns": T0_NS + round(end_s * NS),
            }
        )
        return self

    def end(self, t_s: float) -> Path:
        self.lines.append(
            {"v": 1, "seg": "s1", "type": "job_end", "t_ns": T0_NS + round(t_s * NS), "status": "ok"}
        )
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text("".join(json.dumps(line) + "\n" for line in self.lines), encoding="utf-8")
        return self.path.parent


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def http_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=5) as response:
        return json.loads(response.read().decode("utf-8"))


class PrometheusServer:
    """A real Prometheus started on 127.0.0.1 that scrapes ``targets`` every second."""

    def __init__(self, binary: str, workdir: Path, targets: list[str]) -> None:
        self.port = free_port()
        config = workdir / "prometheus.yml"
        config.write_text(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
            "scrape_configs:\n  - job_name: lightspeed\n    static_configs:\n"
            f"      - targets: [{', '.join(repr(t) for t in targets)}]\n",
            encoding="utf-8",
        )
        self.log = (workdir / "prometheus.log").open("wb")
        self.process = subprocess.Popen(
            [
                binary,
                f"--config.file={config}",
                f"--storage.tsdb.path={workdir / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
            ],
            stdin=subprocess.DEVNULL,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        self.url = f"http://127.0.0.1:{self.port}"
        self._wait_ready()

    def _wait_ready(self, timeout_s: float = 60.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"prometheus exited with {self.process.returncode}")
            try:
                with urllib.request.urlopen(f"{self.url}/-/ready", timeout=2):
                    return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError("prometheus did not become ready")

    def query(self, promql: str) -> list[dict[str, Any]]:
        data = http_json(f"{self.url}/api/v1/query?{urllib.parse.urlencode({'query': promql})}")
        assert data["status"] == "success", data
        return list(data["data"]["result"])

    def wait_for(self, promql: str, timeout_s: float = 60.0) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            result = self.query(promql)
            if result:
                return result
            time.sleep(0.5)
        raise AssertionError(f"no result for {promql} within {timeout_s} s")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()


@pytest.fixture
def prometheus(tmp_path: Path) -> Iterator[Callable[[list[str]], PrometheusServer]]:
    """Start a real Prometheus (Debian's package) that scrapes the given targets.

    Outside CI a missing binary skips the test; in CI (CI=true) it fails it:
    ``./dev test`` installs the package there, so a missing one is a broken setup.
    """
    binary = shutil.which("prometheus")
    if binary is None:
        if os.environ.get("CI") == "true":
            pytest.fail(
                "the prometheus binary is missing in CI; ./dev test installs Debian's prometheus package"
            )
        pytest.skip("prometheus is not installed (Debian: apt-get install prometheus)")
    started: list[PrometheusServer] = []

    def start(targets: list[str]) -> PrometheusServer:
        workdir = tmp_path / f"prometheus-{len(started)}"
        workdir.mkdir()
        server = PrometheusServer(binary, workdir, targets)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def make_capture() -> Callable[..., Path]:
    """``write_capture`` (hand-written capture files)."""
    return write_capture


@pytest.fixture
def hand_run() -> type[HandRun]:
    """The ``HandRun`` class (hand-written goodput logs)."""
    return HandRun
