"""The ledger on hand-written logs: every expected number is worked out in the test."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lightspeed.goodput import (
    BUCKETS,
    PhaseEvent,
    RankLog,
    RunLog,
    Segment,
    StepEvent,
    Workload,
    build_ledger,
    read_run,
)


def test_seed_example_tokens_per_s_and_efficiency(hand_log) -> None:  # type: ignore[no-untyped-def]
    # SEED claim 6: 8 GPUs process 100,000 tokens in 10 s -> 10,000 tokens/s;
    # SOL 1,500 tokens/s per GPU -> 12,000 tokens/s; efficiency 10,000 / 12,000 = 0.833.
    log = hand_log(world_size=8).start(0.0, tokens_scope="global", sol_tokens_per_s_per_accelerator=1500.0)
    for index in range(10):
        log.step(index, float(index), float(index + 1), tokens=10_000)
    run_dir = log.end(10.0).write().parent
    ledger = build_ledger(run=read_run(run_dir), num_accelerators=8)
    assert ledger.total_s == pytest.approx(10.0)
    assert ledger.tokens == 100_000
    assert ledger.tokens_per_s == pytest.approx(10_000.0)
    assert ledger.sol_tokens_per_s == pytest.approx(12_000.0)
    assert ledger.efficiency == pytest.approx(10_000 / 12_000)
    assert round(ledger.efficiency, 3) == 0.833
    assert ledger.goodput_fraction == pytest.approx(1.0)


def _crash_and_restart_log(hand_log):  # type: ignore[no-untyped-def]
    log = hand_log().start(0.0, model_flop_per_token=600.0, peak_flop_per_s=100_000.0)
    log.phase("init", 0.0, 2.0)
    for index in range(5):  # steps 0..4, 1 s each, from t = 2 to 7
        log.step(index, 2.0 + index, 3.0 + index, tokens=100)
    log.phase("checkpoint_save", 7.0, 7.5)  # checkpoint after steps 0..4: resume at step 5
    log.step(5, 7.5, 8.5, tokens=100).step(6, 8.5, 9.5, tokens=100)  # then the process dies
    log.start(12.0, segment="s2", model_flop_per_token=600.0, peak_flop_per_s=100_000.0)
    log.phase("checkpoint_restore", 12.0, 13.0)
    log.step(5, 13.0, 15.0, tokens=100)  # first step after restart: 2 s (1 s of it is startup)
    for index in range(6, 10):
        log.step(index, 9.0 + index, 10.0 + index, tokens=100)  # 15-16 ... 18-19
    return log.end(19.5).write().parent


def test_crash_restart_buckets_by_hand(hand_log) -> None:  # type: ignore[no-untyped-def]
    ledger = build_ledger(run=read_run(_crash_and_restart_log(hand_log)))
    expected = {
        "init": 2.0,
        "startup": 1.0,  # step 5 of segment 2 took 2 s against an ideal of 1 s
        "data_stall": 0.0,
        "checkpoint_save": 0.5,
        "checkpoint_restore": 1.0,
        "eval": 0.0,
        "wasted_progress": 2.0,  # steps 5 and 6 of segment 1 were run again
        "recovery": 2.5,  # last event of segment 1 at 9.5, segment 2 starts at 12
        "custom": 0.0,
        "other": 0.5,  # 19 -> 19.5 before job end
    }
    for bucket, seconds in expected.items():
        assert ledger.badput_s[bucket] == pytest.approx(seconds, abs=1e-9), bucket
    assert ledger.total_s == pytest.approx(19.5)
    assert ledger.productive_s == pytest.approx(10.0)  # 5 s + (2 - 1) s + 4 s
    assert ledger.goodput_fraction == pytest.approx(10.0 / 19.5)
    assert ledger.ettr == pytest.approx(1 - (2 + 1 + 0.5 + 1 + 2 + 2.5) / 19.5)
    assert ledger.tokens == 1000  # ten useful steps of 100 tokens
    assert ledger.wasted_tokens == 200
    assert (ledger.num_segments, ledger.num_restarts, ledger.num_failures) == (2, 1, 1)
    assert [view.status for view in ledger.segments] == ["crashed", "ok"]
    assert ledger.segments[0].num_wasted_steps == 2
    # MFU: 1000 tokens x 600 FLOP over 19.5 s of a 100,000 FLOP/s device (0.31; 0.6 over the 10 s of steps).
    assert ledger.mfu == pytest.approx(1000 * 600 / (19.5 * 100_000))
    assert ledger.step_mfu == pytest.approx(1000 * 600 / (10.0 * 100_000))
    assert ledger.mfu == pytest.approx(ledger.step_mfu * ledger.goodput_fraction)


def test_phases_inside_a_step_are_badput_not_productive(hand_log) -> None:  # type: ignore[no-untyped-def]
    log = hand_log().start(0.0)
    log.step(0, 0.0, 4.0).phase("data_wait", 0.0, 1.0).phase("custom", 2.0, 2.5, name="gc")
    log.step(1, 4.0, 8.0).phase("eval", 8.0, 9.0)
    ledger = build_ledger(run=read_run(log.end(9.0).write().parent))
    assert ledger.badput_s["data_stall"] == pytest.approx(1.0)
    assert ledger.badput_s["custom"] == pytest.approx(0.5)
    assert ledger.custom_badput_s == {"gc": pytest.approx(0.5)}
    assert ledger.badput_s["eval"] == pytest.approx(1.0)
    assert ledger.productive_s == pytest.approx(8.0 - 1.5)
    assert "MFU unavailable" in ledger.utilization.reason


def test_failed_step_is_wasted(hand_log) -> None:  # type: ignore[no-untyped-def]
    log = hand_log().start(0.0).step(0, 0.0, 1.0, tokens=10).step(1, 1.0, 1.5, tokens=10, error=True)
    ledger = build_ledger(run=read_run(log.end(1.5, status="error").write().parent))
    assert ledger.badput_s["wasted_progress"] == pytest.approx(0.5)
    assert ledger.tokens == 10
    assert ledger.num_failures == 1


def test_straggler_and_partial_multi_rank(hand_log) -> None:  # type: ignore[no-untyped-def]
    # Ranks 0-3 of 5 step in lockstep (all end together); rank 2 arrives 0.3 s late each step.
    for rank in range(4):
        log = hand_log(rank=rank, world_size=5).start(0.0)
        for index in range(6):
            late = 0.3 if rank == 2 else 0.0
            log.step(index, index + late, index + 1.0, tokens=50)
        run_dir = log.end(6.0).write().parent
    run = read_run(run_dir)
    assert run.missing_ranks == (4,)
    ledger = build_ledger(run=run)
    assert ledger.partial
    assert any("rank(s) 4" in note for note in ledger.notes)
    assert ledger.stragglers == (2,)
    assert ledger.ranks[2].median_start_lag_s == pytest.approx(0.3)
    assert ledger.tokens == 4 * 6 * 50
    # Headline buckets are the mean over ranks. Rank 2 waits 0.3 s before each step: before
    # step 0 that is init (time before the first step), before steps 1-5 it is other.
    assert ledger.badput_s["init"] == pytest.approx(0.3 / 4)
    assert ledger.badput_s["other"] == pytest.approx(5 * 0.3 / 4)


def _segment(draw, start: float, index: int, first_step: int) -> tuple[Segment, float, int]:  # type: ignore[no-untyped-def]
    cursor = start
    steps, phases = [], []
    step = first_step
    for _ in range(draw(st.integers(0, 12))):
        kind = draw(
            st.sampled_from(["step", "step", "data_wait", "eval", "custom", "checkpoint_save", "gap"])
        )
        length = draw(st.floats(0.0, 3.0))
        if kind == "step":
            steps.append(
                StepEvent(
                    step=step, start_s=cursor, end_s=cursor + length, tokens=1, samples=1, error=False, line=0
                )
            )
            step += 1
            if draw(st.booleans()):  # a phase nested inside the step
                inner = draw(st.floats(0.0, 1.0)) * length
                phases.append(
                    PhaseEvent(phase="data_wait", name="", start_s=cursor, end_s=cursor + inner, line=0)
                )
        elif kind != "gap":
            name = draw(st.sampled_from(["gc", "profile"])) if kind == "custom" else ""
            phases.append(PhaseEvent(phase=kind, name=name, start_s=cursor, end_s=cursor + length, line=0))
        cursor += length
    end = cursor + draw(st.floats(0.0, 1.0))
    status = draw(st.sampled_from(["ok", "crashed", "error"]))
    segment = Segment(
        segment_id=f"s{index}",
        start_s=start,
        end_s=end,
        status=status,
        line=0,
        pid=1,
        host="h",
        steps=tuple(steps),
        phases=tuple(phases),
    )
    return segment, end, step


@st.composite
def runs(draw) -> RunLog:  # type: ignore[no-untyped-def]
    ranks = []
    for rank in range(draw(st.integers(1, 3))):
        segments = []
        cursor = draw(st.floats(0.0, 2.0))
        step = 0
        for index in range(draw(st.integers(1, 3))):
            segment, cursor, step = _segment(draw, cursor, index, step)
            segments.append(segment)
            step = draw(st.integers(0, step))  # a restart resumes at or before the last step
            cursor += draw(st.floats(0.0, 5.0))
        ranks.append(RankLog(rank=rank, path="p", segments=tuple(segments)))
    return RunLog(
        path="p",
        run_id="r",
        start_epoch_s=0.0,
        world_size=len(ranks),
        num_nodes=1,
        tokens_scope="rank",
        workload=Workload(),
        ranks=tuple(ranks),
    )


@settings(max_examples=150, deadline=None)
@given(runs())
def test_buckets_sum_to_wall_time_for_any_event_sequence(run: RunLog) -> None:
    ledger = build_ledger(run=run)
    parts = [ledger.productive_s, *ledger.badput_s.values()]
    assert math.isclose(sum(parts), ledger.total_s, rel_tol=1e-9, abs_tol=1e-9)
    assert all(part >= -1e-9 for part in parts)
    assert set(ledger.badput_s) == set(BUCKETS)
    assert math.isclose(sum(ledger.custom_badput_s.values()), ledger.badput_s["custom"], abs_tol=1e-9)
    for view in ledger.ranks:
        assert math.isclose(view.productive_s + sum(view.badput_s.values()), ledger.total_s, abs_tol=1e-9)
    assert 0.0 <= ledger.goodput_fraction <= 1.0 + 1e-12
    assert ledger.goodput_fraction <= ledger.ettr + 1e-12
