"""Multi-rank accounting (global tokens, restarts, clock offsets, partial runs), input checks of the
reader and the tracker, and the step outlier floor. Expected values are worked out by hand."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from click.testing import CliRunner

from lightspeed.cli.main import cli
from lightspeed.errors import DataFileError, UserInputError
from lightspeed.goodput import Tracker, build_ledger, estimate_failure_rate, read_run
from lightspeed.goodput.step_times import robust_high, step_stats
from lightspeed.goodput.utilization import Utilization, _above_peak_left_out


def _lockstep(hand_log, ranks: int, steps: int, *, world_size: int | None = None, **kw):  # type: ignore[no-untyped-def]
    """Ranks stepping 1 s steps in lockstep from t=1; ``kw`` per rank: tokens, offset, step_s, scope."""
    run_dir = None
    for rank in ranks if isinstance(ranks, list) else range(ranks):
        offset = kw.get("offset", {}).get(rank, 0.0)
        step_s = kw.get("step_s", {}).get(rank, 1.0)
        tokens = kw.get("tokens", {}).get(rank, 100)
        log = hand_log(rank=rank, world_size=world_size or ranks).start(
            offset, tokens_scope=kw.get("scope", "rank"), host=f"h{rank}"
        )
        for index in range(steps):
            start = 1.0 + index * max(kw.get("step_s", {}).values() or [1.0]) + offset
            log.step(index, start, start + step_s, tokens=tokens)
        run_dir = log.end(1.0 + steps * max(kw.get("step_s", {}).values() or [1.0]) + offset).write().parent
    return run_dir


def test_global_tokens_come_from_the_rank_that_logs_them(hand_log) -> None:  # type: ignore[no-untyped-def]
    # 4 ranks, 5 steps; only rank 3 logs the job's 4000 tokens per step: 5 * 4000 = 20,000 tokens.
    run_dir = _lockstep(hand_log, 4, 5, scope="global", tokens={0: 0, 1: 0, 2: 0, 3: 4000})
    ledger = build_ledger(run=read_run(run_dir))
    assert ledger.tokens == pytest.approx(20_000)
    assert ledger.tokens_per_s == pytest.approx(20_000 / 6.0)  # span 0..6 s


def test_global_tokens_repeated_by_every_rank_count_once(hand_log) -> None:  # type: ignore[no-untyped-def]
    run_dir = _lockstep(hand_log, 3, 4, scope="global", tokens={0: 500, 1: 500, 2: 500})
    assert build_ledger(run=read_run(run_dir)).tokens == pytest.approx(4 * 500)


def test_global_scope_with_missing_ranks_is_partial(hand_log) -> None:  # type: ignore[no-untyped-def]
    run_dir = _lockstep(hand_log, [0, 1], 3, world_size=4, scope="global")
    run = read_run(run_dir)
    assert run.missing_ranks == (2, 3)
    assert run.partial


def test_restarts_counted_from_the_rank_that_restarted(hand_log) -> None:  # type: ignore[no-untyped-def]
    # Rank 0 runs one segment 0..10 s; rank 1 crashes after step 1 and restarts at 5 s from step 1.
    log0 = hand_log(rank=0, world_size=2).start(0.0)
    for index in range(8):
        log0.step(index, 1.0 + index, 2.0 + index, tokens=10)
    log0.end(10.0).write()
    log1 = hand_log(rank=1, world_size=2).start(0.0, segment="a")
    log1.step(0, 1.0, 2.0, tokens=10).step(1, 2.0, 3.0, tokens=10)
    log1.start(5.0, segment="b")
    for index in range(1, 5):
        log1.step(index, 6.0 + index - 1, 7.0 + index - 1, tokens=10)
    run_dir = log1.end(10.0).write().parent
    ledger = build_ledger(run=read_run(run_dir))
    assert (ledger.num_restarts, ledger.num_failures, ledger.num_segments) == (1, 1, 2)
    assert estimate_failure_rate(runs=[run_dir]).num_failures == 1


def test_constant_clock_offset_is_not_a_straggler(hand_log) -> None:  # type: ignore[no-untyped-def]
    # 4 hosts in lockstep; rank 2's clock reads 0.5 s ahead: all its stamps are 0.5 s later.
    run_dir = _lockstep(hand_log, 4, 8, offset={2: 0.5})
    ledger = build_ledger(run=read_run(run_dir))
    assert ledger.stragglers == ()
    assert any("clock offset" in note and "rank 2" in note for note in ledger.notes)
    assert ledger.total_s == pytest.approx(9.0)  # 0..9 s, not stretched to 9.5 s by the offset
    assert ledger.badput_s["other"] == pytest.approx(0.0)


def test_growing_lag_is_still_a_straggler(hand_log) -> None:  # type: ignore[no-untyped-def]
    run_dir = None
    for rank in range(4):
        log = hand_log(rank=rank, world_size=4).start(0.0)
        for index in range(8):
            late = 0.1 * index if rank == 1 else 0.0  # enters each step 0.1 s later than the last
            log.step(index, 1.0 + index + late, 2.0 + index, tokens=1)
        run_dir = log.end(9.0).write().parent
    assert build_ledger(run=read_run(run_dir)).stragglers == (1,)


def test_two_ranks_flag_the_clearly_slower_one(hand_log) -> None:  # type: ignore[no-untyped-def]
    run_dir = _lockstep(hand_log, 2, 6, step_s={0: 1.0, 1: 1.5})
    ledger = build_ledger(run=read_run(run_dir))
    assert ledger.stragglers == (1,)
    assert robust_high([1.0, 1.5]) == [False, True]
    assert robust_high([1.0, 1.04]) == [False, False]  # within 5%


def test_partial_run_divides_sol_by_the_logged_ranks(hand_log) -> None:  # type: ignore[no-untyped-def]
    # Ranks 0 and 2 of 4 log 100 tokens per 1 s step over a 0..6 s span: 1000 tokens / 6 s.
    run_dir = _lockstep(hand_log, [0, 2], 5, world_size=4)
    ledger = build_ledger(run=read_run(run_dir), sol_tokens_per_s_per_accelerator=1000)
    assert ledger.num_accelerators == 2
    assert ledger.sol_tokens_per_s == pytest.approx(2000)
    assert ledger.efficiency == pytest.approx((1000 / 6.0) / 2000)


def test_identical_steps_have_no_outliers() -> None:
    # MAD 0: a step 256 ns above 0.5 s is timer noise, under the 5% floor (0.525 s).
    durations = [0.5] * 99 + [0.5 + 256e-9]
    stats = step_stats(durations_s=durations, steps=list(range(100)))
    assert stats.num_outliers == 0
    assert step_stats(durations_s=[0.5] * 99 + [0.6], steps=list(range(100))).num_outliers == 1


def test_above_peak_reason_names_the_step_mfu_and_the_wall_time_mfu() -> None:
    high = Utilization(mfu=2.04, hfu=2.04, step_mfu=8.46, step_hfu=8.46)
    reason = _above_peak_left_out(high, "bf16").reason
    assert "step MFU (over productive step time) comes out at 846%" in reason
    assert "204% over the wall time" in reason


def _write(path: Path, lines: list[str]) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "rank-00000.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_job_end_before_the_last_event_names_the_line(hand_log) -> None:  # type: ignore[no-untyped-def]
    run_dir = hand_log().start(0.0).step(0, 1.0, 2.0).step(1, 2.0, 6.0).end(5.0).write().parent
    with pytest.raises(DataFileError, match=r"rank-00000\.jsonl:4: job_end is stamped 1\.000 s before"):
        read_run(run_dir)


@pytest.mark.parametrize(
    ("rank", "world_size", "message"),
    [(5, 1, "rank 5 is not in 0..world_size-1"), (0, 0, "world_size must be")],
)
def test_header_rank_and_world_size_checked(hand_log, rank: int, world_size: int, message: str) -> None:  # type: ignore[no-untyped-def]
    run_dir = hand_log(rank=rank, world_size=world_size).start(0.0).step(0, 1.0, 2.0).end(3.0).write().parent
    with pytest.raises(DataFileError, match=message):
        read_run(run_dir)


def test_a_step_index_twice_in_one_segment_is_refused(hand_log) -> None:  # type: ignore[no-untyped-def]
    run_dir = hand_log().start(0.0).step(0, 1.0, 2.0).step(0, 2.0, 3.0).end(4.0).write().parent
    with pytest.raises(
        DataFileError, match=r":3: step 0 is logged twice in one job segment \(first on line 2\)"
    ):
        read_run(run_dir)


def test_a_failed_step_may_be_run_again_under_its_index(hand_log) -> None:  # type: ignore[no-untyped-def]
    run_dir = hand_log().start(0.0).step(0, 1.0, 2.0, error=True).step(0, 2.0, 3.0).end(4.0).write().parent
    assert build_ledger(run=read_run(run_dir)).steps.count == 1


def test_nan_in_a_line_is_named_as_not_json(hand_log) -> None:  # type: ignore[no-untyped-def]
    log = hand_log().start(0.0)
    log.raw('{"v": 1, "seg": "s1", "type": "step", "step": 0, "start_ns": 1, "end_ns": 2, "tokens": NaN}')
    run_dir = log.step(1, 1.0, 2.0).end(3.0).write().parent
    with pytest.raises(DataFileError, match=r":2: NaN is not a JSON number; field 'tokens'"):
        read_run(run_dir)


@pytest.mark.parametrize(
    "bad",
    [
        lambda t: t.record_step(start_ns=t.now_ns(), end_ns=t.now_ns() - 10**9),
        lambda t: t.step(tokens=-5),
        lambda t: t.step(tokens=math.nan),
        lambda t: t.step(samples=math.inf),
        lambda t: t.step(step=-1),
        lambda t: t.record_step(start_ns=0, end_ns=1, step=-2),
    ],
)
def test_tracker_refuses_invalid_steps_at_the_call(tmp_path: Path, bad) -> None:  # type: ignore[no-untyped-def]
    with Tracker(tmp_path) as tracker:
        with pytest.raises(UserInputError):
            bad(tracker)
        with tracker.step(tokens=1):
            pass
    assert build_ledger(run=read_run(tmp_path)).steps.count == 1  # the log stays readable


@pytest.mark.parametrize("kwargs", [{"precision": "bf17"}, {"seq_len": -1}, {"seq_len": 0}])
def test_tracker_refuses_invalid_workload(tmp_path: Path, kwargs) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(UserInputError):
        Tracker(tmp_path, **kwargs)


def test_step_after_close_raises(tmp_path: Path) -> None:
    tracker = Tracker(tmp_path)
    tracker.close()
    with pytest.raises(UserInputError, match="after the tracker was closed"):
        tracker.step()
    with pytest.raises(UserInputError, match="after the tracker was closed"):
        tracker.record_step(start_ns=0, end_ns=1)


def test_system_json_on_a_tracker_run_gives_its_accelerator_and_count(hand_log, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    system = tmp_path / "SYSTEM.json"
    system.write_text(
        '{"accelerator_model_name": "NVIDIA H100-SXM5-80GB", '
        '"accelerators_per_node": "8", "number_of_nodes": "1"}',
        encoding="utf-8",
    )
    run_dir = hand_log().start(0.0).step(0, 1.0, 2.0, tokens=1000).end(3.0).write().parent
    result = CliRunner().invoke(cli, ["goodput", "report", str(run_dir), "--system", str(system), "--json"])
    assert result.exit_code == 0, result.output
    assert '"num_accelerators": 8' in result.output
    assert "device name is empty" not in result.output
