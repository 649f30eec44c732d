"""Every rule, driven by hand-made captures (exact windows and values) and by the same captures
played back through the replay backend and the sampler (the rule still fires on the replay).

Each scenario below is one capture whose numbers make one rule fire; the thresholds are the
defaults unless a test says otherwise, and every expected value is computed in the test.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from lightspeed.catalog import load_catalog
from lightspeed.goodput import Tracker, build_ledger, read_run
from lightspeed.monitor import (
    Monitor,
    ReplayBackend,
    Thresholds,
    analyze_run,
    diagnose,
    join_counters,
    monitor_folders_of,
    read_capture,
)

from .conftest import H100, HOST, NS, T0_NS  # type: ignore[import-not-found]

CATALOG = load_catalog()


def _gpu(index: int, name: str = "NVIDIA H100 80GB HBM3") -> dict[str, Any]:
    return {"device_id": f"gpu{index}", "kind": "gpu", "name": name, "backend": "nvml", "index": index}


def replay(capture_path: Path, out: Path, *, loop: bool = False) -> Any:
    """Play ``capture_path`` through ReplayBackend + Monitor (one recorded sample per 1 ms tick)."""
    monitor = Monitor(backends=[ReplayBackend(capture_path, loop=loop)], interval_s=0.001, capture_path=out)
    monitor.start().wait_ready()
    monitor._thread.join(60)
    monitor.stop()
    return read_capture(out)


def rules_of(diagnosis: Any) -> list[str]:
    return [finding.rule for finding in diagnosis.findings]


# -- idle GPU ---------------------------------------------------------------------------


def _idle_samples() -> list[dict[str, Any]]:
    # t = 1..5 busy 95%, t = 6..15 at 2% (10 samples: the stretch (5, 15] s), t = 16..20 busy
    return [
        {"gpu0": {"gpu_util_ratio": 0.02 if 6 <= t <= 15 else 0.95}, "host": {"cpu_util_ratio": 0.9}}
        for t in range(1, 21)
    ]


def test_idle_gpu_names_the_stretch_and_the_host(make_capture, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    capture = read_capture(make_capture(tmp_path / "c.jsonl", _idle_samples()))
    (finding,) = diagnose(captures=[capture]).findings
    assert finding.rule == "idle_gpu"
    evidence = finding.evidence[0]
    assert (evidence.counter, evidence.window_start_s, evidence.window_end_s) == ("gpu_util_ratio", 5.0, 15.0)
    assert evidence.observed == pytest.approx(0.02)
    assert evidence.threshold == 0.10
    assert finding.evidence[1].observed == pytest.approx(0.9)  # host CPU in that window
    assert "the host was busy then: suspect data loading" in finding.message


def _joined_idle(make_capture, hand_run, tmp_path: Path, idle: range):  # type: ignore[no-untyped-def]
    """A 20 s capture (samples t = 1..20, each the second before it) whose GPU is idle at the
    samples in ``idle``, beside a goodput run of 7 one-second steps that starts 13 s into the
    capture: the run's window is (13, 20] s."""
    run_dir = tmp_path / "run"
    log = hand_run(run_dir).start(0.0)
    for step in range(7):
        log.step(step, float(step), step + 1.0, tokens=10)
    log.end(7.0)
    samples = [{"gpu0": {"gpu_util_ratio": 0.0 if t in idle else 0.95}} for t in range(1, 21)]
    capture = read_capture(make_capture(tmp_path / "c.jsonl", samples, start_ns=T0_NS - 13 * NS))
    run = read_run(run_dir)
    joined = join_counters(run=run, ledger=build_ledger(run=run), captures=[capture])
    return {f.rule: f for f in diagnose(captures=[capture], joined=joined).findings}


def test_idle_before_the_goodput_run_is_start_up_not_a_stall(make_capture, hand_run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # idle at t = 1..12: the stretch (0, 12] s ends before the run starts at 13 s (as an H200 run
    # building a 1B model on the CPU showed: 20 s idle before the tracker, then busy steps)
    findings = _joined_idle(make_capture, hand_run, tmp_path, range(1, 13))
    assert set(findings) == {"idle_outside_run"}
    finding = findings["idle_outside_run"]
    assert "for 12 s before the goodput run began" in finding.message
    assert (finding.evidence[0].window_start_s, finding.evidence[0].window_end_s) == (0.0, 12.0)
    assert (finding.evidence[1].window_start_s, finding.evidence[1].window_end_s) == pytest.approx(
        (13.0, 20.0)
    )
    assert "create the Tracker first" in finding.fix


def test_an_idle_stretch_across_the_runs_start_is_cut_there(make_capture, hand_run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # idle at t = 8..18: the stretch (7, 18] s; 6 s of it before the run (7-13), 5 s inside (13-18)
    findings = _joined_idle(make_capture, hand_run, tmp_path, range(8, 19))
    assert {"idle_gpu", "idle_outside_run"} <= set(findings)
    inside = findings["idle_gpu"].evidence[0]
    assert (inside.window_start_s, inside.window_end_s) == pytest.approx((13.0, 18.0))
    outside = findings["idle_outside_run"].evidence[0]
    assert (outside.window_start_s, outside.window_end_s) == pytest.approx((7.0, 13.0))
    assert "for 6 s before the goodput run began" in findings["idle_outside_run"].message


def test_idle_gpu_fires_on_the_replay(make_capture, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    replayed = replay(make_capture(tmp_path / "c.jsonl", _idle_samples()), tmp_path / "r.jsonl")
    (finding,) = diagnose(captures=[replayed], thresholds=Thresholds(idle_min_s=0.005)).findings
    assert finding.rule == "idle_gpu"
    assert finding.evidence[0].observed == pytest.approx(0.02)


def test_short_or_shallow_dips_are_not_idle(make_capture, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    dips = [{"gpu0": {"gpu_util_ratio": 0.02 if t in (4, 5, 6) else 0.95}} for t in range(1, 21)]  # 3 s < 5 s
    assert diagnose(captures=[read_capture(make_capture(tmp_path / "a.jsonl", dips))]).findings == ()
    shallow = [{"gpu0": {"gpu_util_ratio": 0.4}} for _ in range(20)]  # busy 40%: not below 10%
    assert diagnose(captures=[read_capture(make_capture(tmp_path / "b.jsonl", shallow))]).findings == ()


# -- throttling -------------------------------------------------------------------------


def _throttle_samples() -> list[dict[str, Any]]:
    # 20 busy samples; 6 of them (30%) with HW thermal slowdown (0x40) and the SM clock at 1200 MHz
    return [
        {
            "gpu0": {
                "gpu_util_ratio": 0.9,
                "clock_event_reasons": 0x40 if 10 <= t < 16 else 0x0,
                "sm_clock_hz": 1.2e9 if 10 <= t < 16 else 1.98e9,
                "max_sm_clock_hz": 1.98e9,
            }
        }
        for t in range(20)
    ]


@pytest.mark.parametrize("replayed", [False, True])
def test_throttling_names_the_reasons_and_the_clock(make_capture, tmp_path: Path, replayed: bool) -> None:  # type: ignore[no-untyped-def]
    path = make_capture(tmp_path / "c.jsonl", _throttle_samples())
    capture = replay(path, tmp_path / "r.jsonl") if replayed else read_capture(path)
    (finding,) = diagnose(captures=[capture]).findings
    assert finding.rule == "throttling"
    assert "HW thermal slowdown" in finding.title
    assert finding.evidence[0].observed == pytest.approx(6 / 20)
    assert finding.evidence[1].observed == pytest.approx(1.2e9)  # the clock while throttled
    assert "1200 MHz of 1980 MHz" in finding.message


def test_idle_and_sync_boost_reasons_are_not_throttling(make_capture, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    samples = [{"gpu0": {"gpu_util_ratio": 0.9, "clock_event_reasons": 0x1 | 0x10}} for _ in range(20)]
    assert diagnose(captures=[read_capture(make_capture(tmp_path / "c.jsonl", samples))]).findings == ()


# -- communication-bound ------------------------------------------------------------------


def _link_samples() -> list[dict[str, Any]]:
    # H100 SXM: 18 NVLink 4 links, 450 GB/s per direction (catalog). Half the samples send 400 GB/s.
    return [
        {"gpu0": {"gpu_util_ratio": 0.6, "nvlink_tx_bytes_per_s": 4.0e11 if t % 2 else 1.0e10}}
        for t in range(20)
    ]


@pytest.mark.parametrize("replayed", [False, True])
def test_nvlink_near_its_catalog_sol_is_communication_bound(
    make_capture, tmp_path: Path, replayed: bool
) -> None:  # type: ignore[no-untyped-def]
    path = make_capture(tmp_path / "c.jsonl", _link_samples())
    capture = replay(path, tmp_path / "r.jsonl") if replayed else read_capture(path)
    (finding,) = diagnose(captures=[capture], catalog=CATALOG).findings
    assert finding.rule == "communication_bound"
    sol = CATALOG.accelerator("h100-sxm").scale_up.per_direction_bytes_per_s  # type: ignore[union-attr]
    assert sol == 450e9
    assert finding.evidence[0].observed == pytest.approx(4.0e11 / sol)
    assert "NVLink" in finding.title


def test_a_device_the_catalog_lacks_gets_a_note_not_a_guess(make_capture, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = make_capture(tmp_path / "c.jsonl", _link_samples(), devices=[_gpu(0, "Mystery GPU 9000")])
    diagnosis = diagnose(captures=[read_capture(path)], catalog=CATALOG)
    assert diagnosis.findings == ()
    assert any("no catalog SOL for 'Mystery GPU 9000'" in note for note in diagnosis.notes)


# -- stragglers ----------------------------------------------------------------------------


def _four_gpus(slow_hz: float) -> list[dict[str, Any]]:
    return [
        {f"gpu{i}": {"gpu_util_ratio": 0.9, "sm_clock_hz": slow_hz if i == 3 else 1.98e9} for i in range(4)}
        for _ in range(10)
    ]


@pytest.mark.parametrize("replayed", [False, True])
def test_a_gpu_with_a_lower_clock_straggles(make_capture, tmp_path: Path, replayed: bool) -> None:  # type: ignore[no-untyped-def]
    path = make_capture(tmp_path / "c.jsonl", _four_gpus(1.5e9), devices=[_gpu(i) for i in range(4)])
    capture = replay(path, tmp_path / "r.jsonl") if replayed else read_capture(path)
    (finding,) = diagnose(captures=[capture]).findings
    assert finding.rule == "straggler"
    assert finding.device.endswith(":gpu3")  # the replay's host is this machine
    assert finding.evidence[0].observed == 1.5e9
    assert finding.evidence[0].threshold == pytest.approx(0.9 * 1.98e9)


def test_clocks_within_ten_percent_do_not_straggle(make_capture, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = make_capture(tmp_path / "c.jsonl", _four_gpus(1.9e9), devices=[_gpu(i) for i in range(4)])
    assert diagnose(captures=[read_capture(path)]).findings == ()


def test_a_slow_rank_straggles_with_its_gpus_clock(make_capture, hand_run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    run_dir = tmp_path / "run"
    for rank in range(4):
        log = hand_run(run_dir, rank=rank, world_size=4).start(0.0)
        duration = 2.0 if rank == 3 else 1.0  # rank 3's steps take twice as long
        for step in range(4):
            log.step(step, 1.0 + 2.0 * step, 1.0 + 2.0 * step + duration, tokens=10)
        log.end(10.0)
    samples = [
        {f"gpu{i}": {"gpu_util_ratio": 0.9, "sm_clock_hz": 1.4e9 if i == 3 else 1.98e9} for i in range(4)}
        for _ in range(11)
    ]
    capture = read_capture(
        make_capture(tmp_path / "c.jsonl", samples, devices=[_gpu(i) for i in range(4)], start_ns=T0_NS - NS)
    )
    run = read_run(run_dir)
    ledger = build_ledger(run=run)
    assert ledger.stragglers == (3,)
    joined = join_counters(run=run, ledger=ledger, captures=[capture])
    found = {(f.rule, f.rank, f.device) for f in diagnose(captures=[capture], joined=joined).findings}
    assert ("straggler", 3, "") in found  # the rank, from the ledger
    assert ("straggler", None, "node1:gpu3") in found  # its GPU, from the clocks
    rank_finding = next(f for f in diagnose(captures=[capture], joined=joined).findings if f.rank == 3)
    assert "1400 MHz vs 1980 MHz" in rank_finding.message


# -- loader starvation ------------------------------------------------------------------------


def test_loader_starvation_from_the_joined_ledger(make_capture, hand_run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    run_dir = tmp_path / "run"
    log = hand_run(run_dir).start(0.0)
    for step, wait in enumerate(
        (0.0, 2.0, 4.0, 6.0, 8.0)
    ):  # 1 s waits, 1 s steps: 50% of the wall time waits
        log.phase("data_wait", wait, wait + 1.0).step(step, wait + 1.0, wait + 2.0, tokens=10)
    log.end(10.0)
    # sample t covers (t-1, t]: waits are the odd t (GPU 3% busy, job CPU 1.0 core), steps the even t
    samples = [
        {
            "gpu0": {"gpu_util_ratio": 0.03 if t % 2 else 0.95},
            "host": {"cpu_util_ratio": 0.5, "process_cpu_cores": 1.0 if t % 2 else 0.2},
        }
        for t in range(11)
    ]
    capture = read_capture(make_capture(tmp_path / "c.jsonl", samples, start_ns=T0_NS - NS))
    run = read_run(run_dir)
    joined = join_counters(run=run, ledger=build_ledger(run=run), captures=[capture])
    (finding,) = diagnose(captures=[capture], joined=joined).findings
    assert finding.rule == "loader_starvation"
    assert finding.evidence[0].observed == pytest.approx(0.5)  # data_stall share of the wall time
    assert finding.evidence[1].observed == pytest.approx(0.03)  # GPU busy during the waits
    assert "the loader is CPU-bound" in finding.message  # the job kept 1.0 core busy while waiting


def test_loader_starvation_beside_a_live_tracker_on_a_replayed_gpu(make_capture, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A Monitor replaying an idle GPU runs in the same process as a real Tracker (its capture in the
    run's monitor/ folder, where 'goodput report' finds it); the job waits for data half the time."""
    source = make_capture(
        tmp_path / "gpu.jsonl", [{"gpu0": {"gpu_util_ratio": 0.05}} for _ in range(5)], devices=[H100]
    )
    run_dir = tmp_path / "run"
    monitor = Monitor(
        backends=[ReplayBackend(source, loop=True)],
        interval_s=0.005,
        capture_path=run_dir / "monitor" / "capture-test-1.jsonl",
    ).start()
    monitor.wait_ready()
    with Tracker(run_dir, flush_interval_s=0.05) as tracker:
        for _ in range(5):
            with tracker.data_wait():
                time.sleep(0.03)
            with tracker.step(tokens=10):
                time.sleep(0.03)
    monitor.stop()
    assert monitor_folders_of(run_dir) == (run_dir / "monitor",)
    report = analyze_run(path=run_dir / "monitor", goodput_run=run_dir)
    assert "loader_starvation" in rules_of(report.diagnosis)
    stall = report.joined.bucket("data_stall")  # type: ignore[union-attr]
    assert stall is not None
    assert stall.counters.gpu_busy_ratio == pytest.approx(0.05)


# -- host rules (no GPU) ------------------------------------------------------------------------


def _host_run(hand_run, run_dir: Path) -> Path:  # type: ignore[no-untyped-def]
    log = hand_run(run_dir).start(0.0)
    for step in range(8):
        log.step(step, 1.0 + step, 2.0 + step, tokens=100)
    return log.end(10.0)


def test_cpu_bound_steps_and_contention_from_host_counters(make_capture, hand_run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    run_dir = _host_run(hand_run, tmp_path / "run")
    # 2 CPUs fully busy; the job uses 1.0 core of them -> others use 2 x 1.0 - 1.0 = 1.0 core
    samples = [{"host": {"cpu_util_ratio": 1.0, "process_cpu_cores": 1.0}} for _ in range(11)]
    capture = read_capture(make_capture(tmp_path / "c.jsonl", samples, devices=[HOST], start_ns=T0_NS - NS))
    run = read_run(run_dir)
    joined = join_counters(run=run, ledger=build_ledger(run=run), captures=[capture])
    findings = {finding.rule: finding for finding in diagnose(captures=[capture], joined=joined).findings}
    assert set(findings) == {"cpu_bound_steps", "host_contention"}
    assert findings["cpu_bound_steps"].evidence[0].observed == pytest.approx(1.0)
    assert "torch.set_num_threads(2)" in findings["cpu_bound_steps"].fix
    assert findings["host_contention"].evidence[1].observed == pytest.approx(1.0)


def test_a_quiet_host_waiting_on_io_fires_no_host_rule(make_capture, hand_run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    run_dir = _host_run(hand_run, tmp_path / "run")
    samples = [{"host": {"cpu_util_ratio": 0.2, "process_cpu_cores": 0.3}} for _ in range(11)]
    capture = read_capture(make_capture(tmp_path / "c.jsonl", samples, devices=[HOST], start_ns=T0_NS - NS))
    run = read_run(run_dir)
    joined = join_counters(run=run, ledger=build_ledger(run=run), captures=[capture])
    assert diagnose(captures=[capture], joined=joined).findings == ()


def test_host_rules_on_a_replayed_host_beside_a_live_tracker(make_capture, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    source = make_capture(
        tmp_path / "host.jsonl", [{"host": {"cpu_util_ratio": 1.0, "process_cpu_cores": 1.0}}], devices=[HOST]
    )
    run_dir = tmp_path / "run"
    monitor = Monitor(
        backends=[ReplayBackend(source, loop=True)],
        interval_s=0.005,
        capture_path=run_dir / "monitor" / "capture-h-1.jsonl",
    ).start()
    monitor.wait_ready()
    with Tracker(run_dir, flush_interval_s=0.05) as tracker:
        for _ in range(5):
            with tracker.step(tokens=10):
                time.sleep(0.02)
    monitor.stop()
    report = analyze_run(path=run_dir / "monitor", goodput_run=run_dir)
    assert {"cpu_bound_steps", "host_contention"} <= set(rules_of(report.diagnosis))


def test_bad_thresholds_are_refused() -> None:
    from lightspeed.errors import UserInputError

    with pytest.raises(UserInputError, match="is a ratio"):
        Thresholds(idle_busy_ratio=1.5)
    with pytest.raises(UserInputError, match="finite number > 0"):
        Thresholds(idle_min_s=float("nan"))


def test_a_large_badput_bucket_is_named_with_what_the_machine_did(
    make_capture, hand_run, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    run_dir = tmp_path / "run"
    log = hand_run(run_dir).start(0.0).phase("checkpoint_save", 6.0, 10.0)  # 4 s of 10: 40% >= 20%
    for step in range(5):
        log.step(step, 1.0 + step, 2.0 + step, tokens=10)
    log.end(10.0)
    # the GPU is 2% busy while the checkpoint is written (t = 7..10 cover 6-10 s), the job uses 0.1 core
    samples = [
        {
            "gpu0": {"gpu_util_ratio": 0.02 if t > 6 else 0.9},
            "host": {"process_cpu_cores": 0.1 if t > 6 else 1.0},
        }
        for t in range(11)
    ]
    capture = read_capture(make_capture(tmp_path / "c.jsonl", samples, start_ns=T0_NS - NS))
    run = read_run(run_dir)
    joined = join_counters(run=run, ledger=build_ledger(run=run), captures=[capture])
    hotspots = [f for f in diagnose(captures=[capture], joined=joined).findings if f.rule == "badput_hotspot"]
    (finding,) = hotspots
    assert finding.title == "checkpoint_save takes 40.0% of the wall time"
    assert finding.evidence[0].observed == pytest.approx(0.4)
    assert finding.evidence[1].observed == pytest.approx(0.02)  # GPU busy during the save
    assert "it mostly waits then" in finding.message
    assert "async_save" in finding.fix
