"""``monitor serve`` and ``watch``: a sampler that stops ends serving (no stale values), a replay
without --loop ends, and warnings are printed in the house form."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from lightspeed.monitor.backend import Backend, DeviceInfo, Reading

from .conftest import write_capture  # type: ignore[import-not-found]

GPU = DeviceInfo(device_id="gpu0", kind="gpu", name="NVIDIA H100 80GB HBM3", backend="nvml", index=0)


class LostAfter(Backend):
    """A GPU that answers ``num_reads`` times, then is lost (as NVML or a restarted DCGM says)."""

    name = "nvml"
    min_interval_s = 0.0

    def __init__(self, num_reads: int) -> None:
        self.num_reads = num_reads
        self.reads = 0

    def open(self) -> tuple[DeviceInfo, ...]:
        return (GPU,)

    def read(self) -> Reading:
        self.reads += 1
        if self.reads > self.num_reads:
            raise RuntimeError("NVML: GPU is lost")
        return {"gpu0": {"power_w": 300.0}}


def _lost_gpu(monkeypatch: pytest.MonkeyPatch, num_reads: int) -> None:
    def make(names: Any = None, **_: Any) -> tuple[list[Backend], frozenset[str]]:
        return [LostAfter(num_reads)], frozenset()

    monkeypatch.setattr("lightspeed.cli.monitor.make_backends", make)


def _truncated_capture(path: Path) -> Path:
    """Three samples 50 ms apart and a last line a crash cut short."""
    write_capture(
        path, [{"gpu0": {"power_w": 100.0 * (i + 1)}} for i in range(3)], interval_s=0.05, end=False
    )
    with path.open("a", encoding="utf-8") as handle:
        handle.write('{"type": "sample", "t_n')
    return path


def test_serve_stops_with_one_line_when_its_gpu_is_lost(
    run_cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    _lost_gpu(monkeypatch, 3)
    # --duration only bounds a hang: serve must end as soon as the sampler stops
    result = run_cli("monitor", "serve", "--port", "0", "--interval", "50ms", "--duration", "60", "--json")
    assert result.code == 2
    assert "sampling stopped: RuntimeError: NVML: GPU is lost" in result.err
    assert len(result.err.strip().splitlines()) == 1
    assert "Traceback" not in result.err
    url = json.loads(result.out)["url"]
    with pytest.raises(urllib.error.URLError):  # the target is down: Prometheus drops its series
        urllib.request.urlopen(url, timeout=5)


def test_watch_ends_with_one_line_when_its_gpu_is_lost(run_cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    _lost_gpu(monkeypatch, 2)
    result = run_cli("monitor", "watch", "--interval", "50ms", "--json")
    assert result.code == 2
    assert "sampling stopped: RuntimeError: NVML: GPU is lost" in result.err
    assert len(result.err.strip().splitlines()) == 1
    assert len(result.out.splitlines()) == 2  # the two samples taken before it was lost


def test_serve_of_a_replay_without_loop_stops_at_its_end(run_cli: Any, tmp_path: Path) -> None:
    capture = write_capture(
        tmp_path / "c.jsonl", [{"gpu0": {"power_w": 100.0 * (i + 1)}} for i in range(3)], interval_s=0.05
    )
    result = run_cli(
        "monitor", "serve", "--port", "0", "--replay", str(capture), "--no-loop", "--interval", "50ms",
        "--duration", "60",
    )  # fmt: skip
    assert result.code == 0, result.err
    assert "the replay ended" in result.err


def test_watch_prints_a_replays_warnings_in_the_house_form(run_cli: Any, tmp_path: Path) -> None:
    capture = _truncated_capture(tmp_path / "trunc.jsonl")
    result = run_cli("monitor", "watch", "--replay", str(capture), "--interval", "50ms", "--count", "1")
    assert result.code == 0, result.err
    assert "lightspeed: warning: " in result.err
    assert "cut short" in result.err
    assert "TruncatedLogWarning" not in result.err
    assert ".py:" not in result.err  # no source location, no source line


def test_serve_prints_a_replays_warnings_in_the_house_form(run_cli: Any, tmp_path: Path) -> None:
    capture = _truncated_capture(tmp_path / "trunc.jsonl")
    result = run_cli(
        "monitor", "serve", "--port", "0", "--replay", str(capture), "--no-loop", "--interval", "50ms",
        "--duration", "60",
    )  # fmt: skip
    assert result.code == 0, result.err
    assert result.err.startswith("lightspeed: warning: ")
    assert "TruncatedLogWarning" not in result.err
