"""The Prometheus exporter against outside references: the units dcgm-exporter's HELP lines name
(its default-counters.csv: "GPU utilization (in %)", "SM clock frequency (in MHz)", "Framebuffer
memory used (in MiB)", "Total energy consumption since boot (in mJ)", "Power draw (in W)"),
Prometheus' naming rules (``_total`` only on counters; every series of a family has distinct
labels), RFC 3986's IPv6 literals in brackets, and a goodput run read once per change, not once per
scrape."""

from __future__ import annotations

import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from lightspeed.errors import MissingExtraError, UserInputError
from lightspeed.monitor import Monitor, MonitorCollector, ReplayBackend
from lightspeed.monitor.exporter import Exporter, ExporterServer
from lightspeed.monitor.sampler import Sample

pytest.importorskip("prometheus_client")

GIB = 2.0**30
GPU = {
    "gpu_util_ratio": 0.5,
    "power_w": 300.0,
    "memory_used_bytes": 40 * GIB,
    "sm_clock_hz": 1.98e9,
    "energy_j": 1200.0,
}


def _scrape(collector: MonitorCollector) -> dict[str, Any]:
    """Families by name, as Prometheus' own parser reads the text a scrape returns."""
    from prometheus_client import CollectorRegistry, generate_latest
    from prometheus_client.parser import text_string_to_metric_families

    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    text = generate_latest(registry).decode("utf-8")
    return {family.name: family for family in text_string_to_metric_families(text)}


def _replayed(capture: Path, hostname: str = "serving-box") -> tuple[Monitor, MonitorCollector]:
    monitor = Monitor(backends=[ReplayBackend(capture, loop=True)], interval_s=0.01)
    monitor.start().wait_ready()
    while monitor.latest() is None:
        monitor._stop.wait(0.01)
    return monitor, MonitorCollector(monitor, hostname=hostname)


def test_help_names_the_unit_of_the_exported_value(make_capture, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    capture = make_capture(tmp_path / "c.jsonl", [{"gpu0": GPU, "host": {"cpu_util_ratio": 0.25}}] * 3)
    monitor, collector = _replayed(capture)
    try:
        families = _scrape(collector)
    finally:
        monitor.stop()
    expected = {
        "DCGM_FI_DEV_GPU_UTIL": ("(in %", 50.0),
        "DCGM_FI_DEV_FB_USED": ("(in MiB", 40960.0),
        "DCGM_FI_DEV_SM_CLOCK": ("(in MHz", 1980.0),
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": ("(in mJ", 1.2e6),
        "DCGM_FI_DEV_POWER_USAGE": ("(in W", 300.0),
    }
    for name, (unit, value) in expected.items():
        assert unit in families[name].documentation, (name, families[name].documentation)
        assert families[name].samples[0].value == pytest.approx(value)
    assert "(ratio, 0 to 1" in families["lightspeed_host_cpu_utilization_ratio"].documentation


def test_gpus_without_an_index_get_distinct_labels(make_capture, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    gpus = [
        {"device_id": f"gpu{i}", "kind": "gpu", "name": "NVIDIA H100 80GB HBM3", "backend": "nvml"}
        for i in (0, 1)
    ]
    capture = make_capture(
        tmp_path / "c.jsonl", [{"gpu0": {"power_w": 100.0}, "gpu1": {"power_w": 300.0}}] * 3, devices=gpus
    )
    monitor, collector = _replayed(capture)
    try:
        samples = _scrape(collector)["DCGM_FI_DEV_POWER_USAGE"].samples
    finally:
        monitor.stop()
    assert sorted(sample.value for sample in samples) == [100.0, 300.0]
    label_sets = {tuple(sorted(sample.labels.items())) for sample in samples}
    assert len(label_sets) == 2  # Prometheus drops a scrape with two series of the same labels


def test_a_replayed_capture_is_labelled_with_the_host_that_recorded_it(make_capture, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    capture = make_capture(
        tmp_path / "c.jsonl", [{"gpu0": GPU, "host": {"cpu_util_ratio": 0.25}}] * 3, host="node7"
    )
    monitor, collector = _replayed(capture, hostname="serving-box")
    try:
        families = _scrape(collector)
    finally:
        monitor.stop()
    assert families["DCGM_FI_DEV_POWER_USAGE"].samples[0].labels["Hostname"] == "node7"
    assert families["lightspeed_host_cpu_utilization_ratio"].samples[0].labels["Hostname"] == "node7"


# --- the goodput run --------------------------------------------------------------------------------


def _no_devices() -> Any:
    """A monitor with nothing sampled yet: only the goodput families are scraped."""
    return SimpleNamespace(latest=lambda: None, devices=(), backends=[])


def _run(hand_run, run_dir: Path, num_steps: int) -> Path:  # type: ignore[no-untyped-def]
    """``num_steps`` steps of 1 s, 1000 tokens each, one after another from t=0."""
    log = hand_run(run_dir).start(0.0)
    for step in range(num_steps):
        log.step(step, float(step), step + 1.0, tokens=1000)
    return log.end(float(num_steps))  # type: ignore[no-any-return]


def _counting_reads(monkeypatch: pytest.MonkeyPatch, block_on: int | None = None) -> Any:
    """Wrap the exporter's ``read_run``: count the reads; read number ``block_on`` waits for
    ``reads.release`` (a read still in progress)."""
    from lightspeed.monitor import exporter

    real = exporter.read_run
    reads = SimpleNamespace(count=0, release=threading.Event(), finished=0)

    def read_run(path: Any, **options: Any) -> Any:
        reads.count += 1
        if reads.count == block_on:
            reads.release.wait(30)  # a safety net only: the test releases it
        result = real(path, **options)
        reads.finished += 1
        return result

    monkeypatch.setattr(exporter, "read_run", read_run)
    return reads


def test_the_productive_step_count_is_a_gauge_without_a_total_suffix(hand_run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    collector = MonitorCollector(_no_devices(), hostname="n", goodput_run=_run(hand_run, tmp_path / "r", 4))
    families = _scrape(collector)
    assert families["lightspeed_productive_steps"].type == "gauge"
    assert families["lightspeed_productive_steps"].samples[0].value == 4
    for name, family in families.items():  # Prometheus: "_total" is for counters only
        assert not (family.type == "gauge" and name.endswith("_total")), name


def test_scrapes_do_not_read_the_goodput_run_again(
    hand_run,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
) -> None:
    reads = _counting_reads(monkeypatch)
    collector = MonitorCollector(
        _no_devices(), hostname="n", goodput_run=_run(hand_run, tmp_path / "r", 4), refresh_s=3600.0
    )
    for _ in range(3):
        assert _scrape(collector)["lightspeed_step_seconds"].samples[0].value == pytest.approx(1.0)
    assert reads.count == 1


def test_the_goodput_run_is_read_again_only_when_it_changes(
    hand_run,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
) -> None:
    run_dir = _run(hand_run, tmp_path / "r", 4)
    reads = _counting_reads(monkeypatch)
    collector = MonitorCollector(_no_devices(), hostname="n", goodput_run=run_dir, refresh_s=0.0)
    assert collector.goodput is not None
    for _ in range(3):  # every scrape may look, none finds a change
        assert _scrape(collector)["lightspeed_productive_steps"].samples[0].value == 4
        collector.goodput.wait()
    assert reads.count == 1
    _run(hand_run, run_dir, 6)  # the run went on: two more steps
    _scrape(collector)
    collector.goodput.wait()
    assert _scrape(collector)["lightspeed_productive_steps"].samples[0].value == 6
    collector.goodput.wait()
    assert reads.count == 2


def test_a_scrape_does_not_wait_for_a_read_in_progress(
    hand_run,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
) -> None:
    run_dir = _run(hand_run, tmp_path / "r", 4)
    reads = _counting_reads(monkeypatch, block_on=2)
    collector = MonitorCollector(_no_devices(), hostname="n", goodput_run=run_dir, refresh_s=0.0)
    assert collector.goodput is not None
    _scrape(collector)
    collector.goodput.wait()
    _run(hand_run, run_dir, 6)
    during = _scrape(collector)  # starts the second read, which is held
    held = reads.finished
    reads.release.set()
    collector.goodput.wait()
    assert held == 1  # the scrape came back while the second read was still held
    assert during["lightspeed_productive_steps"].samples[0].value == 4  # the last complete read
    assert _scrape(collector)["lightspeed_productive_steps"].samples[0].value == 6


# --- messages ---------------------------------------------------------------------------------------


def test_an_ipv6_exporter_url_puts_the_host_in_brackets() -> None:
    assert Exporter(host="::1", port=9400).url == "http://[::1]:9400/metrics"  # RFC 3986, section 3.2.2
    assert Exporter(host="127.0.0.1", port=9400).url == "http://127.0.0.1:9400/metrics"


def test_a_host_that_is_not_of_this_machine_is_blamed_not_the_port() -> None:
    collector = MonitorCollector(_no_devices(), hostname="n")
    # 192.0.2.1 is TEST-NET-1 (RFC 5737): a valid address that no machine here has
    with pytest.raises(UserInputError) as raised:
        ExporterServer(collector, host="192.0.2.1", port=0)
    message = str(raised.value)
    assert "--host 192.0.2.1" in message
    assert "--port" not in message


def test_missing_dcgm_bindings_say_how_to_get_dcgm(monkeypatch: pytest.MonkeyPatch) -> None:
    from lightspeed.monitor import DcgmBackend

    monkeypatch.setitem(__import__("sys").modules, "dcgm_fields", None)
    with pytest.raises(MissingExtraError) as raised:
        DcgmBackend().open()
    message = str(raised.value)
    assert "lightspeed[monitor]" not in message  # that extra does not bring DCGM
    assert "DCGM" in message
    assert "/usr/local/dcgm/bindings/python3" in message
    assert "PYTHONPATH" in message


def test_serve_on_a_foreign_host_is_one_line_naming_the_host(run_cli, make_capture, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    capture = make_capture(tmp_path / "c.jsonl", [{"gpu0": GPU, "host": {"cpu_util_ratio": 0.25}}] * 3)
    result = run_cli(
        "monitor", "serve", "--port", "0", "--host", "192.0.2.1", "--replay", str(capture), "--duration", "1"
    )
    assert result.code == 2
    assert result.err.strip().count("\n") == 0
    assert "--host 192.0.2.1" in result.err


def test_a_stale_sample_is_not_exported_but_its_age_is(make_capture, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A sampler that hangs in a backend call stays alive with an old sample: past 3 intervals
    (at least 5 s) the device series are left out, so Prometheus marks them stale instead of a
    dashboard showing 300 W as live, and lightspeed_sample_age_seconds says how old it is."""
    capture = make_capture(tmp_path / "c.jsonl", [{"gpu0": GPU}] * 3)
    monitor, collector = _replayed(capture)
    monitor.stop()
    latest = monitor.latest()
    assert latest is not None
    fresh = _scrape(collector)
    assert fresh["DCGM_FI_DEV_POWER_USAGE"].samples[0].value == 300.0
    assert fresh["lightspeed_sample_age_seconds"].samples[0].value < 5.0
    monitor._ring.append(Sample(t_epoch_s=latest.t_epoch_s - 60.0, reading=latest.reading))
    stale = _scrape(collector)
    assert "DCGM_FI_DEV_POWER_USAGE" not in stale
    assert stale["lightspeed_sample_age_seconds"].samples[0].value >= 60.0
