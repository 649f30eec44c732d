"""Counters joined to a goodput run, against a hand calculation.

The run (seconds after its job start): init 0-2, then four rounds of a 1 s data wait and
a 1 s step: wait 2-3, step 3-4, wait 4-5, step 5-6, wait 6-7, step 7-8, wait 8-9, step 9-10;
1000 tokens per step. The capture samples every second at t = 0 ... 10 (sample t describes
(t-1, t]): the GPU draws 200 W throughout (energy counter 1000 J + 200 J/s), is 90% busy over
the steps, 5% over the waits, idle over init. By hand:

- productive = 4 x 1 s = 4 s, energy 200 W x 4 s = 800 J, 200 J per step,
  800 J / 4000 tokens = 0.2 J per token; all in 200 W x 10 s = 2000 J, 0.5 J per token;
- data stall = 4 s, 800 J, GPU 5% busy; init = 2 s, 400 J, 0% busy;
- step 2 (7-8 s) sees 50 GiB in use at t=8, the other samples 40 GiB.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lightspeed.goodput import build_ledger, read_run
from lightspeed.monitor import join_counters, read_capture

from .conftest import NS, T0_NS  # type: ignore[import-not-found]

GIB = 2.0**30


def _gpu(t: int, device: str = "gpu0", watts: float = 200.0) -> dict[str, float]:
    busy = 0.0 if t <= 2 else (0.05 if t % 2 == 1 else 0.9)
    return {
        "power_w": watts,
        "energy_j": 1000.0 + watts * t,
        "gpu_util_ratio": busy,
        "memory_used_bytes": 50 * GIB if t == 8 else 40 * GIB,
    }


def _run(hand_run, run_dir: Path, rank: int = 0, world_size: int = 1) -> Path:  # type: ignore[no-untyped-def]
    log = hand_run(run_dir, rank=rank, world_size=world_size).start(0.0).phase("init", 0.0, 2.0)
    for index, wait in enumerate((2.0, 4.0, 6.0, 8.0)):
        log.phase("data_wait", wait, wait + 1.0)
        log.step(index, wait + 1.0, wait + 2.0, tokens=1000)
    return log.end(10.0)


def test_buckets_steps_and_energy_match_the_hand_calculation(make_capture, hand_run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    run_dir = _run(hand_run, tmp_path / "run")
    samples = [{"gpu0": _gpu(t), "host": {"cpu_util_ratio": 0.5}} for t in range(11)]
    capture = read_capture(make_capture(tmp_path / "c.jsonl", samples, start_ns=T0_NS - NS))
    run = read_run(run_dir)
    joined = join_counters(run=run, ledger=build_ledger(run=run), captures=[capture])
    productive = joined.bucket("productive")
    assert productive is not None
    assert productive.seconds == pytest.approx(4.0)
    assert productive.counters.energy_j == pytest.approx(800.0)
    assert productive.counters.gpu_busy_ratio == pytest.approx(0.9)
    assert productive.counters.power_w == pytest.approx(200.0)
    assert productive.counters.memory_peak_bytes == 50 * GIB
    assert productive.counters.cpu_util_ratio == pytest.approx(0.5)
    stall = joined.bucket("data_stall")
    assert stall is not None
    assert (stall.seconds, stall.counters.energy_j, stall.counters.gpu_busy_ratio) == pytest.approx(
        (4.0, 800.0, 0.05)
    )
    init = joined.bucket("init")
    assert init is not None
    assert (init.counters.energy_j, init.counters.gpu_busy_ratio) == pytest.approx((400.0, 0.0))
    assert joined.energy_j == pytest.approx(2000.0)
    assert joined.energy_per_step_j == pytest.approx(200.0)
    assert joined.energy_per_token_j == pytest.approx(0.2)
    assert joined.energy_per_token_all_in_j == pytest.approx(0.5)
    assert joined.productive_busy_ratio == pytest.approx(0.9)
    assert joined.busy_counter == "gpu_util_ratio"
    assert joined.coverage_ratio == pytest.approx(1.0)
    assert joined.num_gpus == 1
    steps = {row.step: row for row in joined.steps}
    assert steps[0].counters.energy_j == pytest.approx(200.0)
    assert steps[2].counters.memory_peak_bytes == 50 * GIB
    assert steps[1].counters.memory_peak_bytes == 40 * GIB
    assert not any(row.wasted for row in joined.steps)


def test_each_rank_reads_its_own_gpu_and_energy_adds_up(make_capture, hand_run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    run_dir = tmp_path / "run"
    for rank in (0, 1):
        _run(hand_run, run_dir, rank=rank, world_size=2)
    gpu1 = {
        "device_id": "gpu1",
        "kind": "gpu",
        "name": "NVIDIA H100 80GB HBM3",
        "backend": "nvml",
        "index": 1,
    }
    h100 = {
        "device_id": "gpu0",
        "kind": "gpu",
        "name": "NVIDIA H100 80GB HBM3",
        "backend": "nvml",
        "index": 0,
    }
    samples = [{"gpu0": _gpu(t), "gpu1": _gpu(t, watts=100.0)} for t in range(11)]
    capture = read_capture(
        make_capture(tmp_path / "c.jsonl", samples, devices=[h100, gpu1], start_ns=T0_NS - NS)
    )
    run = read_run(run_dir)
    joined = join_counters(run=run, ledger=build_ledger(run=run), captures=[capture])
    # rank 0 on gpu0 (200 W), rank 1 on gpu1 (100 W): 4 s productive each -> 800 J + 400 J
    assert joined.productive_energy_j == pytest.approx(1200.0)
    assert joined.energy_per_step_j == pytest.approx(300.0)  # 4 optimizer steps, both GPUs' energy
    assert joined.num_gpus == 2
    by_rank = {(row.rank, row.step): row.counters.power_w for row in joined.steps}
    assert by_rank[(0, 0)] == pytest.approx(200.0)
    assert by_rank[(1, 0)] == pytest.approx(100.0)
    productive = joined.bucket("productive")
    assert productive is not None
    assert productive.counters.power_w == pytest.approx(150.0)  # time-weighted over both ranks


def test_a_capture_that_misses_part_of_the_run_says_so(make_capture, hand_run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    run_dir = _run(hand_run, tmp_path / "run")
    samples = [{"gpu0": _gpu(t)} for t in range(4)]  # t = 0 ... 3 only
    capture = read_capture(make_capture(tmp_path / "c.jsonl", samples, start_ns=T0_NS - NS))
    run = read_run(run_dir)
    joined = join_counters(run=run, ledger=build_ledger(run=run), captures=[capture])
    assert joined.coverage_ratio == pytest.approx(0.3)
    assert any("samples describe 3.0 s of the run's 10.0 s" in note for note in joined.notes)


def test_a_host_without_capture_is_named(make_capture, hand_run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    run_dir = _run(hand_run, tmp_path / "run")
    first = read_capture(make_capture(tmp_path / "a.jsonl", [{"gpu0": _gpu(1)}], host="other-a"))
    second = read_capture(make_capture(tmp_path / "b.jsonl", [{"gpu0": _gpu(1)}], host="other-b"))
    run = read_run(run_dir)
    joined = join_counters(run=run, ledger=build_ledger(run=run), captures=[first, second])
    assert joined.bucket("productive").counters.energy_j is None  # type: ignore[union-attr]
    assert any("rank(s) [0] ran on a host without a capture" in note for note in joined.notes)
