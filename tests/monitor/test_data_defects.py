"""Monitor figures against hand calculations: counter resets, GPUs shared by ranks, window peaks,
evidence windows, the watched tree's CPU and memory, the first sample, and impossible captures.

The goodput run (seconds after its job start) is the one of ``test_join``: init 0-2, then four
rounds of a 1 s data wait and a 1 s step (wait 2-3, step 3-4, ..., wait 8-9, step 9-10), 1000
tokens per step. Captures sample every second at run time t = 0 ... 10 (they start 1 s before
the run), and sample t describes (t-1, t].
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from lightspeed.errors import DataFileError
from lightspeed.goodput import build_ledger, read_run
from lightspeed.monitor import (
    Backend,
    DeviceInfo,
    HostBackend,
    Monitor,
    Series,
    diagnose,
    join_counters,
    read_capture,
)
from lightspeed.monitor import host as host_module
from lightspeed.monitor.backend import Reading

from .conftest import H100, NS, T0_NS  # type: ignore[import-not-found]

GIB = 2.0**30
GPU1 = {**H100, "device_id": "gpu1", "index": 1}


def _run(hand_run, run_dir: Path, rank: int = 0, world_size: int = 1) -> Path:  # type: ignore[no-untyped-def]
    log = hand_run(run_dir, rank=rank, world_size=world_size).start(0.0).phase("init", 0.0, 2.0)
    for index, wait in enumerate((2.0, 4.0, 6.0, 8.0)):
        log.phase("data_wait", wait, wait + 1.0)
        log.step(index, wait + 1.0, wait + 2.0, tokens=1000)
    return Path(log.end(10.0))


def _joined(run_dir: Path, capture_path: Path) -> Any:
    capture = read_capture(capture_path)
    run = read_run(run_dir)
    return join_counters(run=run, ledger=build_ledger(run=run), captures=[capture])


# -- 3: a cumulative counter that restarts ----------------------------------------------


def test_a_counter_reset_counts_the_new_value_as_prometheus_increase_does() -> None:
    # 200 W throughout. Read 1200, 1400, 1600 J at t = 1, 2, 3; the GPU resets at 3.5 s and the
    # counter restarts from 0, so it reads 100 J at 4 (0.5 s x 200 W), then 300, 500 J.
    # Increase over [1, 6]: 400 J before the reset + 100 J (the new value) + 400 J after = 900 J
    # (the 100 J gained between the reading at 3 s and the reset are lost, as in Prometheus).
    energy = Series(
        times_s=np.arange(1.0, 7.0),
        values=np.array([1200.0, 1400.0, 1600.0, 100.0, 300.0, 500.0]),
        interval_s=1.0,
    )
    np.testing.assert_allclose(energy.increase(np.array([1.0, 3.0]), np.array([6.0, 4.0])), [900.0, 100.0])
    assert energy.reset_times().tolist() == [4.0]


def test_energy_through_a_counter_reset_is_never_negative(make_capture, hand_run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # 200 W; the counter reads 1000 + 200 t up to t = 5, restarts from 0 at t = 5.5, then reads
    # 100 + 200 (t - 6). By hand: steps (3,4], (7,8], (9,10] 200 J each; step (5,6] only the
    # 100 J after the reset: productive 700 J (175 J per step, 0.175 J per token); all in
    # 200 W x 10 s = 2000 J less the 100 J lost = 1900 J.
    def energy(t: int) -> float:
        return 1000.0 + 200.0 * t if t <= 5 else 100.0 + 200.0 * (t - 6)

    samples = [{"gpu0": {"power_w": 200.0, "energy_j": energy(t)}} for t in range(11)]
    path = make_capture(tmp_path / "c.jsonl", samples, devices=[H100], start_ns=T0_NS - NS)
    joined = _joined(_run(hand_run, tmp_path / "run"), path)
    assert joined.productive_energy_j == pytest.approx(700.0)
    assert joined.energy_per_step_j == pytest.approx(175.0)
    assert joined.energy_per_token_j == pytest.approx(0.175)
    assert joined.energy_j == pytest.approx(1900.0)
    assert {row.step: row.counters.energy_j for row in joined.steps} == pytest.approx(
        {0: 200.0, 1: 100.0, 2: 200.0, 3: 200.0}
    )
    (note,) = read_capture(path).notes
    assert (note.device, note.metric, note.t_s) == ("gpu0", "energy_j", 7.0)  # run t = 6
    assert "restarted from 0" in note.text


# -- 4: ranks that share a GPU -------------------------------------------------------------


def test_two_ranks_on_one_gpu_count_its_energy_once(make_capture, hand_run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # One GPU at 200 W for 10 s: 2000 J, not 4000. Productive: both ranks step at the same times,
    # 4 s: 800 J, 200 J per optimizer step, 800 J / 8000 rank tokens = 0.1 J per token;
    # data stall 4 s = 800 J; init 2 s = 400 J.
    run_dir = tmp_path / "run"
    for rank in (0, 1):
        _run(hand_run, run_dir, rank=rank, world_size=2)
    samples = [{"gpu0": {"power_w": 200.0, "energy_j": 1000.0 + 200.0 * t}} for t in range(11)]
    joined = _joined(
        run_dir, make_capture(tmp_path / "c.jsonl", samples, devices=[H100], start_ns=T0_NS - NS)
    )
    assert joined.num_gpus == 1
    assert joined.energy_j == pytest.approx(2000.0)
    assert joined.productive_energy_j == pytest.approx(800.0)
    assert joined.energy_per_step_j == pytest.approx(200.0)
    assert joined.energy_per_token_j == pytest.approx(0.1)
    assert joined.bucket("data_stall").counters.energy_j == pytest.approx(800.0)
    assert joined.bucket("init").counters.energy_j == pytest.approx(400.0)
    assert any("share node1:gpu0" in note for note in joined.notes)


def test_more_ranks_than_gpus_count_each_gpu_once(make_capture, hand_run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # Three ranks, two GPUs (ranks 0 and 2 on gpu0 at 100 W, rank 1 on gpu1 at 300 W), no energy
    # counter: the power integral. All in: (100 + 300) W x 10 s = 4000 J; productive 4 s: 1600 J.
    run_dir = tmp_path / "run"
    for rank in (0, 1, 2):
        _run(hand_run, run_dir, rank=rank, world_size=3)
    samples = [{"gpu0": {"power_w": 100.0}, "gpu1": {"power_w": 300.0}} for _ in range(11)]
    path = make_capture(tmp_path / "c.jsonl", samples, devices=[H100, GPU1], start_ns=T0_NS - NS)
    joined = _joined(run_dir, path)
    assert joined.num_gpus == 2
    assert joined.energy_j == pytest.approx(4000.0)
    assert joined.productive_energy_j == pytest.approx(1600.0)


# -- 5: a window's peak ----------------------------------------------------------------------


def test_a_peak_leaves_out_the_sample_that_only_touches_the_windows_start() -> None:
    # 50 at t = 2 describes (1, 2]; 40 at t = 3 describes (2, 3]: the window (2, 3] peaks at 40.
    memory = Series(times_s=np.array([1.0, 2.0, 3.0]), values=np.array([40.0, 50.0, 40.0]), interval_s=1.0)
    np.testing.assert_allclose(memory.peak(np.array([2.0, 1.5]), np.array([3.0, 2.5])), [40.0, 50.0])


def test_the_data_waits_peak_is_the_memory_of_the_waits(make_capture, hand_run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # 50 GiB only at t = 8, which describes (7, 8], the step 7-8. The waits (2,3], (4,5], (6,7],
    # (8,9] are samples t = 3, 5, 7, 9: 40 GiB. The step 9-10 is sample 10: 40 GiB.
    samples = [{"gpu0": {"memory_used_bytes": 50 * GIB if t == 8 else 40 * GIB}} for t in range(11)]
    path = make_capture(tmp_path / "c.jsonl", samples, devices=[H100], start_ns=T0_NS - NS)
    joined = _joined(_run(hand_run, tmp_path / "run"), path)
    assert joined.bucket("data_stall").counters.memory_peak_bytes == 40 * GIB
    assert joined.bucket("productive").counters.memory_peak_bytes == 50 * GIB
    assert {row.step: row.counters.memory_peak_bytes for row in joined.steps} == {
        0: 40 * GIB,
        1: 40 * GIB,
        2: 50 * GIB,
        3: 40 * GIB,
    }


# -- 6: evidence names the window it was measured over ------------------------------------------


def test_evidence_names_the_buckets_own_window(make_capture, hand_run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # The capture starts 1 s before the run, so run time t is capture time t + 1. The data waits
    # (run 2-3, 4-5, 6-7, 8-9) lie within capture 3..10 s, 4 stretches of 4 s; the GPU is 5% busy
    # over them (over the whole run, 1..11 s, it would be (0 x 2 + 0.05 x 4 + 0.9 x 4) / 10 = 38%).
    # Init is run 0-2: capture 1..3 s, one stretch.
    def busy(t: int) -> float:
        return 0.0 if t <= 2 else (0.05 if t % 2 == 1 else 0.9)

    samples = [{"gpu0": {"gpu_util_ratio": busy(t)}, "host": {"cpu_util_ratio": 0.5}} for t in range(11)]
    path = make_capture(tmp_path / "c.jsonl", samples, start_ns=T0_NS - NS)
    capture = read_capture(path)
    run = read_run(_run(hand_run, tmp_path / "run"))
    joined = join_counters(run=run, ledger=build_ledger(run=run), captures=[capture])
    findings = diagnose(captures=[capture], joined=joined).findings
    starvation = next(f for f in findings if f.rule == "loader_starvation")
    share, gpus, cpu = starvation.evidence
    assert (share.window_start_s, share.window_end_s) == pytest.approx((1.0, 11.0))  # a share of the run
    assert gpus.observed == pytest.approx(0.05)
    assert (gpus.window_start_s, gpus.window_end_s) == pytest.approx((3.0, 10.0))
    assert gpus.scope == "data_stall time only: 4 stretches, 4 s"
    assert (cpu.window_start_s, cpu.window_end_s, cpu.scope) == (
        gpus.window_start_s,
        gpus.window_end_s,
        gpus.scope,
    )
    init = next(f for f in findings if f.rule == "badput_hotspot" and "init" in f.title)
    assert (init.evidence[1].window_start_s, init.evidence[1].window_end_s) == pytest.approx((1.0, 3.0))
    assert init.evidence[1].scope == ""  # one stretch: the window is exactly it
    # the report's line says the value covers the bucket's stretches, not the whole window
    from lightspeed.report.monitor import evidence_text

    assert "t=3.0..10.0 s (data_stall time only: 4 stretches, 4 s): 5.0%" in evidence_text(gpus)
    assert "(" not in evidence_text(init.evidence[1]).split(":")[0]


# -- 7, 8, 9: the host backend on a fake psutil and clock ------------------------------------------


class _Error(Exception):
    pass


class _NoSuchProcessError(_Error):
    pass


class _Process:
    def __init__(self, pid: int, created_epoch_s: float, cpu_s: float = 0.0, rss_bytes: float = 50e6) -> None:
        self.pid = pid
        self.created_epoch_s = created_epoch_s
        self.cpu_s = cpu_s
        self.rss_bytes = rss_bytes
        self.kids: list[_Process] = []

    def cpu_times(self) -> Any:
        return SimpleNamespace(user=self.cpu_s, system=0.0)

    def memory_info(self) -> Any:
        return SimpleNamespace(rss=self.rss_bytes)  # a zombie (ended, not reaped) reads 0

    def create_time(self) -> float:
        return self.created_epoch_s

    def children(self, recursive: bool = False) -> list[_Process]:
        return list(self.kids)


class _Machine:
    """psutil and the clock of a 2-core machine: perf_counter 100 s is epoch 1000 s."""

    Error = _Error
    NoSuchProcess = _NoSuchProcessError

    def __init__(self) -> None:
        self.now = 100.0
        self.busy_s = 660.0  # since boot: the host was 66% busy on average
        self.idle_s = 340.0
        self.processes: dict[int, _Process] = {}

    # the clock (``time`` in the host module)
    def perf_counter(self) -> float:
        return self.now

    def time(self) -> float:
        return self.now + 900.0

    CLOCK_BOOTTIME = 7  # the machine booted at epoch 0: seconds since boot are epoch seconds

    def clock_gettime(self, clock: int) -> float:
        assert clock == self.CLOCK_BOOTTIME
        return self.time()

    def boot_time(self) -> float:
        return 0.0

    # psutil
    def Process(self, pid: int) -> _Process:  # psutil's name
        if pid not in self.processes:
            raise _NoSuchProcessError(pid)
        return self.processes[pid]

    def pid_exists(self, pid: int) -> bool:
        return pid in self.processes

    def cpu_times(self) -> Any:
        return SimpleNamespace(user=self.busy_s, nice=0.0, system=0.0, idle=self.idle_s)

    def virtual_memory(self) -> Any:
        return SimpleNamespace(total=8e9, available=6e9)

    def net_io_counters(self, pernic: bool, nowrap: bool) -> dict[str, Any]:
        return {}

    def disk_io_counters(self, nowrap: bool) -> None:
        return None

    def cpu_count(self, logical: bool = True) -> int:
        return 2


@pytest.fixture
def machine(monkeypatch: pytest.MonkeyPatch) -> _Machine:
    fake = _Machine()
    monkeypatch.setattr(host_module, "import_psutil", lambda: fake)
    monkeypatch.setattr(host_module, "time", fake)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    return fake


def _read_at(machine: _Machine, backend: HostBackend, now: float) -> dict[str, float | None]:
    machine.now = now
    machine.busy_s += 0.1
    machine.idle_s += 0.1
    return dict(backend.read()["host"])


def test_a_child_found_late_is_not_charged_its_whole_past_in_one_tick(machine: _Machine) -> None:
    # The watched process (pid 10) idles. Its child (pid 11) starts at perf 100.2 and keeps one
    # core busy; the tree is re-listed once a second, so the child is found at perf 101.0 with
    # 0.8 CPU seconds. Sampled every 0.1 s, that tick (100.9, 101.0] saw one core busy: 1.0 cores
    # (0.8 CPU s over 0.8 s of life, 0.1 s of it in the tick), not 0.8 / 0.1 = 8 cores.
    root = machine.processes[10] = _Process(10, created_epoch_s=990.0)
    backend = HostBackend(pid=10)
    backend.open()
    child = _Process(11, created_epoch_s=1000.2)
    root.kids.append(child)
    machine.processes[11] = child
    cores = []
    for tick in range(1, 11):
        now = 100.0 + tick / 10
        child.cpu_s = max(0.0, now - 100.2)
        cores.append(_read_at(machine, backend, now)["process_cpu_cores"])
    assert cores[:-1] == pytest.approx([0.0] * 9)  # not found yet: the listing is once a second
    assert cores[-1] == pytest.approx(1.0)
    child.cpu_s += 0.1
    assert _read_at(machine, backend, 101.1)["process_cpu_cores"] == pytest.approx(1.0)


def test_the_watched_trees_cores_never_exceed_the_machines(machine: _Machine) -> None:
    # A reading of 1 CPU second in a 0.1 s tick (10 cores) on a 2-core machine is at most 2 cores.
    root = machine.processes[10] = _Process(10, created_epoch_s=990.0)
    backend = HostBackend(pid=10)
    backend.open()
    root.cpu_s = 1.0
    assert _read_at(machine, backend, 100.1)["process_cpu_cores"] == 2.0


def test_an_ended_but_unreaped_command_has_no_memory_value(machine: _Machine) -> None:
    # 50 MB while it runs; once it has ended (a zombie before the reaping) it reads 0 bytes: that is
    # no value, with the note, while its last 0.05 CPU s in the 0.1 s tick still count (0.5 cores).
    root = machine.processes[10] = _Process(10, created_epoch_s=990.0)
    backend = HostBackend(pid=10)
    backend.open()
    assert _read_at(machine, backend, 100.1)["process_rss_bytes"] == 50e6
    root.rss_bytes = 0.0
    root.cpu_s = 0.05
    last = _read_at(machine, backend, 100.2)
    assert last["process_rss_bytes"] is None
    assert last["process_cpu_cores"] == pytest.approx(0.5)
    assert "the watched command had ended" in (backend.why_missing("host", "process_rss_bytes") or "")


def test_the_first_cpu_share_is_measured_not_the_average_since_boot(machine: _Machine) -> None:
    # Since boot the host was 66% busy. Read again before the kernel counted a tick: no share
    # (not 66%); then 0.05 busy of 0.2 CPU seconds: 25%.
    backend = HostBackend()
    backend.open()
    assert backend.read()["host"]["cpu_util_ratio"] is None
    assert "tick" in (backend.why_missing("host", "cpu_util_ratio") or "")
    machine.busy_s += 0.05
    machine.idle_s += 0.15
    assert backend.read()["host"]["cpu_util_ratio"] == pytest.approx(0.25)


class _Stamped(Backend):
    """Records when it opened and when it was read (perf_counter seconds)."""

    name = "stamped"
    min_interval_s = 0.0

    def __init__(self) -> None:
        self.opened_s = 0.0
        self.read_s: list[float] = []
        self.read_once = threading.Event()

    def open(self) -> tuple[DeviceInfo, ...]:
        self.opened_s = time.perf_counter()
        return (DeviceInfo(device_id="host", kind="host", name="n", backend=self.name),)

    def read(self) -> Reading:
        self.read_s.append(time.perf_counter())
        self.read_once.set()
        return {"host": {"cpu_util_ratio": 0.5}}


def test_the_first_sample_comes_one_interval_after_the_backends_open() -> None:
    # Rates are measured from open() to the first reading: that is one interval (0.2 s), not at once.
    backend = _Stamped()
    with Monitor(backends=[backend], interval_s=0.2) as monitor:
        monitor.wait_ready()
        assert backend.read_once.wait(10)
    assert backend.read_s[0] - backend.opened_s >= 0.2 - 1e-3


# -- 14, 15: impossible captures are refused with one line -------------------------------------------

HEADER = (
    '{"v": 1, "type": "capture_start", "t_ns": 1700000000000000000, "host": "n", "pid": 7, '
    '"interval_s": 1.0, "backends": ["nvml"], "meta": {}, "devices": [{"device_id": "gpu0", "kind": "gpu", '
    '"name": "NVIDIA H100 80GB HBM3", "backend": "nvml", "index": 0}]}\n'
)


def _sample(values: str, t_ns: int = 1_700_000_001_000_000_000) -> str:
    return f'{{"type": "sample", "t_ns": {t_ns}, "d": {{"gpu0": {{{values}}}}}}}\n'


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e400"])
@pytest.mark.parametrize("last", [True, False])
def test_a_number_json_does_not_allow_names_the_field(tmp_path: Path, literal: str, last: bool) -> None:
    lines = [HEADER, _sample(f'"power_w": {literal}')]
    if not last:
        lines.append(_sample('"power_w": 300.0', t_ns=1_700_000_002_000_000_000))
    path = tmp_path / "c.jsonl"
    path.write_text("".join(lines), encoding="utf-8")
    expected = rf"c.jsonl:2: {literal} is not a finite number; field 'd.gpu0.power_w'"
    with pytest.raises(DataFileError, match=expected.replace("+", r"\+")):
        read_capture(path)


def test_a_whole_bad_last_line_is_an_error_not_a_crash(tmp_path: Path) -> None:
    # a line a crash cut short has no newline; one that ends in a newline was written whole
    path = tmp_path / "c.jsonl"
    path.write_text(HEADER + _sample('"power_w": 300.0') + "[1, 2]\n", encoding="utf-8")
    with pytest.raises(DataFileError, match=r"c.jsonl:3: not a JSON object"):
        read_capture(path)


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ([HEADER], r"c.jsonl: the capture holds no sample"),
        (
            [HEADER, _sample('"power_w": 300.0', t_ns=1_699_999_999_000_000_000)],
            r"c.jsonl:2: sample timed before the capture started",
        ),
        (
            [HEADER, _sample('"clock_event_reasons": 0.5')],
            r"c.jsonl:2: clock_event_reasons = 0.5 is not a whole number from 0 to 2\^64 - 1",
        ),
        ([HEADER, _sample('"xid_last": 1e300')], r"c.jsonl:2: xid_last = 1e\+300 is not a whole number"),
        (
            [HEADER.replace('"interval_s": 1.0', '"interval_s": 1e-300'), _sample('"power_w": 300.0')],
            r"c.jsonl:1: expected seconds from 1e-06 to 86400; field 'interval_s'",
        ),
    ],
)
def test_impossible_captures_are_refused(tmp_path: Path, lines: list[str], message: str) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text("".join(lines), encoding="utf-8")
    with pytest.raises(DataFileError, match=message):
        read_capture(path)


def test_monitor_report_on_a_header_only_capture_is_one_line(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "c.jsonl"
    path.write_text(HEADER, encoding="utf-8")
    result = run_cli("monitor", "report", str(path))
    assert result.code == 2
    assert result.err.strip().count("\n") == 0
    assert "holds no sample" in result.err
    nan = tmp_path / "nan.jsonl"
    nan.write_text(HEADER + _sample('"power_w": NaN'), encoding="utf-8")
    result = run_cli("monitor", "report", str(nan))
    assert result.code == 2
    assert "nan.jsonl:2: NaN is not a finite number; field 'd.gpu0.power_w'" in result.err
    assert "Traceback" not in result.err
