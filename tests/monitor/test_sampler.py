"""The sampler thread: non-blocking start, bounded ring, notes said once, errors raised to the caller."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from lightspeed.errors import UnsupportedError, UserInputError
from lightspeed.monitor import Backend, DeviceInfo, Monitor, ReplayBackend, read_capture
from lightspeed.monitor.backend import Reading


class Counting(Backend):
    """A backend that counts its reads; ``gate`` makes open() wait until the test lets it."""

    name = "counting"
    min_interval_s = 0.0

    def __init__(
        self, gate: threading.Event | None = None, fail_open: bool = False, fail_read: bool = False
    ) -> None:
        self.gate = gate
        self.fail_open = fail_open
        self.fail_read = fail_read
        self.reads = 0
        self.closed = False

    def open(self) -> tuple[DeviceInfo, ...]:
        if self.gate is not None and not self.gate.wait(30):
            raise AssertionError("the test never opened the gate")
        if self.fail_open:
            raise UnsupportedError("no such device here")
        return (DeviceInfo(device_id="dev", kind="gpu", name="fake", backend=self.name),)

    def read(self) -> Reading:
        self.reads += 1
        if self.fail_read:
            raise RuntimeError("a bug in a backend")
        return {"dev": {"power_w": float(self.reads), "energy_j": None}}

    def close(self) -> None:
        self.closed = True


def test_start_returns_before_the_backends_open() -> None:
    gate = threading.Event()
    backend = Counting(gate)
    monitor = Monitor(backends=[backend], interval_s=0.01).start()
    assert monitor.devices == ()  # open() is still waiting on the gate: start() did not
    gate.set()
    assert monitor.wait_ready()[0].device_id == "dev"
    monitor.stop()
    assert backend.closed


def test_ring_is_bounded_and_a_missing_metric_is_said_once(tmp_path: Path) -> None:
    backend = Counting()
    path = tmp_path / "c.jsonl"
    with Monitor(backends=[backend], interval_s=0.005, max_samples=3, capture_path=path) as monitor:
        monitor.wait_ready()
        while monitor.num_samples < 10:
            threading.Event().wait(0.01)
    assert len(monitor.samples()) == 3
    assert monitor.samples()[-1].reading["dev"]["power_w"] == monitor.num_samples
    notes = [note for note in monitor.notes if note.metric == "energy_j"]
    assert len(notes) == 1
    capture = read_capture(path)
    assert capture.num_samples == monitor.num_samples  # the file keeps every sample, the ring the last 3
    assert [note.metric for note in capture.notes] == ["energy_j"]
    assert capture.complete


def test_open_error_is_raised_to_the_caller_and_optional_backends_are_left_out() -> None:
    monitor = Monitor(backends=[Counting(fail_open=True)], interval_s=0.01).start()
    with pytest.raises(UnsupportedError, match="no such device"):
        monitor.wait_ready()
    bad = Counting(fail_open=True)
    bad.name = "flaky"
    good = Counting()
    with Monitor(backends=[good, bad], interval_s=0.01, optional=frozenset({"flaky"})) as monitor:
        assert [device.device_id for device in monitor.wait_ready()] == ["dev"]
    assert any("flaky left out" in note.text for note in monitor.notes)


def test_a_bug_on_the_thread_is_raised_by_stop() -> None:
    monitor = Monitor(backends=[Counting(fail_read=True)], interval_s=0.01).start()
    monitor.wait_ready()
    with pytest.raises(RuntimeError, match="a bug in a backend"):
        monitor.stop()


@pytest.mark.parametrize("interval", [0.0, -1.0, float("nan"), float("inf"), 7200.0])
def test_bad_intervals_are_refused(interval: float) -> None:
    with pytest.raises(UserInputError, match="sampling interval"):
        Monitor(backends=[Counting()], interval_s=interval)


def test_an_interval_below_a_backends_floor_is_refused() -> None:
    from lightspeed.monitor import HostBackend

    with pytest.raises(UserInputError, match="host backend samples at most every 50 ms"):
        Monitor(backends=[HostBackend()], interval_s=0.01)


def test_replay_through_the_sampler_reproduces_the_capture(make_capture, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    source = make_capture(
        tmp_path / "in.jsonl",
        [
            {"gpu0": {"power_w": 100.0 + i, "gpu_util_ratio": i / 10}, "host": {"cpu_util_ratio": 0.5}}
            for i in range(6)
        ],
    )
    out = tmp_path / "out.jsonl"
    monitor = Monitor(backends=[ReplayBackend(source)], interval_s=0.001, capture_path=out).start()
    monitor.wait_ready()
    monitor._thread.join(30)  # a replay stops by itself at its end
    monitor.stop()
    replayed = read_capture(out)
    assert replayed.values("gpu0", "power_w").tolist() == [100.0, 101.0, 102.0, 103.0, 104.0, 105.0]  # type: ignore[union-attr]
    assert replayed.devices[0].name == "NVIDIA H100 80GB HBM3"
    assert replayed.devices[0].backend == "replay:nvml"
