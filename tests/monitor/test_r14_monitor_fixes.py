"""Round 14 monitor fixes, against hand calculations: a bucket's power is its energy over its time,
the throttle share leaves out the GPU idle bit, a capture whose time goes backwards says how to fix it."""

from __future__ import annotations

from pathlib import Path

import pytest

from lightspeed.errors import DataFileError
from lightspeed.goodput import build_ledger, read_run
from lightspeed.monitor import join_counters, read_capture, summarize_capture

from .conftest import NS, T0_NS  # type: ignore[import-not-found]


def _run(hand_run, run_dir: Path) -> Path:  # type: ignore[no-untyped-def]
    """init 0-2 s, then four rounds of a 1 s data wait and a 1 s step (as test_join's run)."""
    log = hand_run(run_dir).start(0.0).phase("init", 0.0, 2.0)
    for index, wait in enumerate((2.0, 4.0, 6.0, 8.0)):
        log.phase("data_wait", wait, wait + 1.0)
        log.step(index, wait + 1.0, wait + 2.0, tokens=1000)
    return log.end(10.0)


def test_bucket_and_step_power_is_energy_over_time(make_capture, hand_run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # The energy counter rises 200 J per second (200 W drawn), but NVML's lagging power reading
    # says 100 W throughout. By hand: productive = 4 x 1 s, energy 4 x 200 J = 800 J, so the
    # bucket's power is 800 J / 4 s = 200 W (the readings' mean, 100 W, would give 100 W x 4 s =
    # 400 J, not the 800 J in the same row); init = 2 s, 400 J, 200 W; step 0 (3-4 s): 200 J, 200 W.
    samples = [{"gpu0": {"power_w": 100.0, "energy_j": 1000.0 + 200.0 * t}} for t in range(11)]
    capture = read_capture(make_capture(tmp_path / "c.jsonl", samples, start_ns=T0_NS - NS))
    run = read_run(_run(hand_run, tmp_path / "run"))
    joined = join_counters(run=run, ledger=build_ledger(run=run), captures=[capture])
    for bucket, seconds, joules in (("productive", 4.0, 800.0), ("init", 2.0, 400.0)):
        counters = joined.bucket(bucket)
        assert counters is not None
        assert counters.counters.energy_j == pytest.approx(joules)
        assert counters.counters.power_w == pytest.approx(200.0)
        assert counters.counters.power_w * seconds == pytest.approx(counters.counters.energy_j)
    step = next(row for row in joined.steps if row.step == 0)
    assert (step.counters.energy_j, step.counters.power_w) == pytest.approx((200.0, 200.0))
    assert any("power x time = energy" in note for note in joined.notes)


def test_without_an_energy_counter_power_is_the_mean_of_the_readings(  # type: ignore[no-untyped-def]
    make_capture, hand_run, tmp_path: Path
) -> None:
    samples = [{"gpu0": {"power_w": 100.0 + 10.0 * t}} for t in range(11)]
    capture = read_capture(make_capture(tmp_path / "c.jsonl", samples, start_ns=T0_NS - NS))
    run = read_run(_run(hand_run, tmp_path / "run"))
    joined = join_counters(run=run, ledger=build_ledger(run=run), captures=[capture])
    init = joined.bucket("init")
    assert init is not None
    # init 0-2 s is held by the samples at t = 1 (110 W) and t = 2 (120 W): mean 115 W, 230 J
    assert (init.counters.power_w, init.counters.energy_j) == pytest.approx((115.0, 230.0))
    assert not any("power x time = energy" in note for note in joined.notes)


def test_throttle_share_leaves_out_the_gpu_idle_bit(make_capture, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # Ten samples one second apart, each held over the second before it (10 s in all):
    # 0x1 (GPU idle) x4, 0x5 (idle + SW power cap) x2, 0x4 x1, 0x0 x3.
    # Slowing (SW power cap) in 3 of 10 s = 0.3; GPU idle in 6 of 10 s = 0.6; any bit 7 of 10 s.
    masks = [1, 1, 1, 1, 5, 5, 4, 0, 0, 0]
    samples = [{"gpu0": {"clock_event_reasons": float(mask)}} for mask in masks]
    capture = read_capture(make_capture(tmp_path / "c.jsonl", samples))
    [summary] = [s for s in summarize_capture(capture) if s.metric == "clock_event_reasons"]
    assert summary.bits_set == 0x5
    assert summary.set_ratio == pytest.approx(0.3)
    assert summary.bit_ratios == pytest.approx({"GPU idle": 0.6, "SW power cap": 0.3})


def test_time_going_backwards_says_how_to_fix_it(make_capture, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = make_capture(tmp_path / "c.jsonl", [{"gpu0": {"power_w": 100.0}}] * 3)
    lines = path.read_text().splitlines()
    lines[2], lines[3] = lines[3], lines[2]  # the first two samples swapped
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataFileError, match="goes backwards") as caught:
        read_capture(path)
    assert "; fix: " in str(caught.value)
    assert "one capture per file" in str(caught.value)
