"""The Prometheus exporter: dcgm-exporter names and units, lightspeed's goodput metrics, and a
scrape by a real Prometheus server (Debian's package) read back with PromQL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lightspeed.monitor import ExporterServer, Monitor, MonitorCollector, ReplayBackend

from .conftest import H100, HOST  # type: ignore[import-not-found]

GIB = 2.0**30
GPU = {
    "gpu_util_ratio": 0.87,
    "power_w": 612.5,
    "memory_used_bytes": 40 * GIB,
    "sm_clock_hz": 1.755e9,
    "energy_j": 123_456.789,
    "sm_active_ratio": 0.71,
}
DEVICES = [{**H100, "uuid": "GPU-abc"}, HOST]


def _capture(make_capture, tmp_path: Path) -> Path:  # type: ignore[no-untyped-def]
    samples = [{"gpu0": GPU, "host": {"cpu_util_ratio": 0.25, "process_cpu_cores": 1.5}} for _ in range(5)]
    return make_capture(tmp_path / "capture.jsonl", samples, devices=DEVICES)  # type: ignore[no-any-return]


def _goodput_run(hand_run, run_dir: Path) -> Path:  # type: ignore[no-untyped-def]
    """10 s of wall time, four 1 s steps of 1000 tokens: goodput 4 / 10 = 0.4;
    MFU = 4000 tokens x 1e9 FLOP / (10 s x 1e12 FLOP/s x 1 accelerator) = 0.4."""
    log = hand_run(run_dir).start(0.0, model_flop_per_token=1e9, peak_flop_per_s=1e12, num_accelerators=1)
    for step, wait in enumerate((1.0, 3.0, 5.0, 7.0)):
        log.phase("data_wait", wait, wait + 1.0).step(step, wait + 1.0, wait + 2.0, tokens=1000)
    return log.end(10.0)


def _families(text: str) -> dict[str, list[Any]]:
    from prometheus_client.parser import text_string_to_metric_families

    return {family.name: family.samples for family in text_string_to_metric_families(text)}


def test_metrics_use_dcgm_exporter_names_units_and_labels(make_capture, hand_run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("prometheus_client")
    run_dir = _goodput_run(hand_run, tmp_path / "run")
    monitor = Monitor(backends=[ReplayBackend(_capture(make_capture, tmp_path), loop=True)], interval_s=0.01)
    monitor.start().wait_ready()
    while monitor.latest() is None:
        monitor._stop.wait(0.01)
    server = ExporterServer(
        MonitorCollector(monitor, hostname="node1", goodput_run=run_dir), host="127.0.0.1", port=0
    )
    try:
        families = _families(server.metrics_text())
    finally:
        server.close()
        monitor.stop()
    (power,) = families["DCGM_FI_DEV_POWER_USAGE"]
    assert power.value == 612.5  # W
    assert power.labels == {
        "gpu": "0",
        "UUID": "GPU-abc",
        "device": "nvidia0",
        "modelName": "NVIDIA H100 80GB HBM3",
        "Hostname": "node1",
    }
    assert families["DCGM_FI_DEV_GPU_UTIL"][0].value == pytest.approx(87.0)  # percent
    assert families["DCGM_FI_DEV_FB_USED"][0].value == pytest.approx(40 * 1024)  # MiB
    assert families["DCGM_FI_DEV_SM_CLOCK"][0].value == pytest.approx(1755.0)  # MHz
    assert families["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"][0].value == pytest.approx(123_456_789.0)  # mJ
    assert families["DCGM_FI_PROF_SM_ACTIVE"][0].value == pytest.approx(0.71)  # a ratio in dcgm-exporter too
    assert families["lightspeed_host_cpu_utilization_ratio"][0].value == 0.25
    assert families["lightspeed_process_cpu_cores"][0].value == 1.5
    assert families["lightspeed_goodput_ratio"][0].value == pytest.approx(0.4)
    assert families["lightspeed_mfu_ratio"][0].value == pytest.approx(0.4)
    assert families["lightspeed_productive_steps"][0].value == 4
    (step,) = families["lightspeed_step_seconds"]
    assert step.value == pytest.approx(1.0)
    assert step.labels == {"run_id": "run-a", "rank": "0"}


@pytest.mark.slow
def test_a_real_prometheus_scrapes_the_exporter(make_capture, hand_run, prometheus, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """`lightspeed monitor serve` in its own process, scraped every second by Prometheus on 127.0.0.1."""
    pytest.importorskip("prometheus_client")
    run_dir = _goodput_run(hand_run, tmp_path / "run")
    command = [
        sys.executable,
        "-m",
        "lightspeed",
        "monitor",
        "serve",
        "--port",
        "0",
        "--interval",
        "100ms",
        "--replay",
        str(_capture(make_capture, tmp_path)),
        "--goodput",
        str(run_dir),
        "--json",
    ]
    serve = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ.copy()
    )
    try:
        assert serve.stdout is not None
        first = ""
        while not first.rstrip().endswith("}"):
            line = serve.stdout.readline()
            assert line, f"serve ended early: {serve.stderr.read() if serve.stderr else ''}"  # type: ignore[union-attr]
            first += line
        address = json.loads(first)
        server = prometheus([f"127.0.0.1:{address['port']}"])
        power = server.wait_for('DCGM_FI_DEV_POWER_USAGE{gpu="0",modelName="NVIDIA H100 80GB HBM3"}')
        assert float(power[0]["value"][1]) == 612.5
        util = server.wait_for("DCGM_FI_DEV_GPU_UTIL")
        assert float(util[0]["value"][1]) == pytest.approx(87.0)
        goodput = server.wait_for('lightspeed_goodput_ratio{run_id="run-a"}')
        assert float(goodput[0]["value"][1]) == pytest.approx(0.4)
        up = server.wait_for('up{job="lightspeed"}')
        assert up[0]["value"][1] == "1"
    finally:
        serve.send_signal(signal.SIGTERM)
        _, errors = serve.communicate(timeout=30)  # closes the pipes
    assert serve.returncode == 0, errors
