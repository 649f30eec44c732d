"""Clock offsets are per host: ranks of one host share a clock and are never shifted against each
other. Expected spans are worked out by hand from the hand-written logs."""

from __future__ import annotations

from pathlib import Path

import pytest

from lightspeed.goodput import build_ledger, read_run


def _rank(hand_log, rank: int, world_size: int, host: str, *, first_step_s: float, job_start_s: float = 0.0):  # type: ignore[no-untyped-def]
    """One rank on ``host``: a job from ``job_start_s``, 6 steps of 1 s back to back from ``first_step_s``,
    the job's end 1 s after the last step. Returns the run folder."""
    log = hand_log(rank=rank, world_size=world_size).start(job_start_s, host=host)
    for index in range(6):
        log.step(index, first_step_s + index, first_step_s + index + 1.0, tokens=100)
    return log.end(first_step_s + 7.0).write().parent


def _clock_notes(run_dir: Path) -> list[str]:
    return [note for note in build_ledger(run=read_run(run_dir)).notes if "clock" in note]


def test_same_host_ranks_at_a_constant_lag_are_not_shifted(hand_log) -> None:  # type: ignore[no-untyped-def]
    # Both ranks on host vm, jobs start at 0; rank 0 steps from 1 s, rank 1 from 1.2 s (0.2 s behind at
    # every step, above the floor of 5% of 1 s). One clock: nothing is shifted; rank 1's job ends at
    # 1.2 + 7 = 8.2 s, so the span is 0 .. 8.2 s.
    _rank(hand_log, 0, 2, "vm", first_step_s=1.0)
    run_dir = _rank(hand_log, 1, 2, "vm", first_step_s=1.2)
    ledger = build_ledger(run=read_run(run_dir))
    assert [note for note in ledger.notes if "clock" in note] == []
    assert ledger.total_s == pytest.approx(8.2)


def test_same_host_rank_running_after_the_other_keeps_its_span(hand_log) -> None:  # type: ignore[no-untyped-def]
    # Rank 0's job runs 0..8 s, rank 1's (same host) 8..16 s: the run spans 16 s; 6 productive seconds
    # per rank over 16 s, goodput 6 / 16 = 3/8 (laid over each other: 8 s and 6/8).
    _rank(hand_log, 0, 2, "vm", first_step_s=1.0)
    run_dir = _rank(hand_log, 1, 2, "vm", first_step_s=9.0, job_start_s=8.0)
    ledger = build_ledger(run=read_run(run_dir))
    assert ledger.total_s == pytest.approx(16.0)
    assert ledger.goodput_fraction == pytest.approx(3 / 8)


def test_an_offset_host_is_shifted_as_one_with_one_note(hand_log) -> None:  # type: ignore[no-untyped-def]
    # Host a holds ranks 0-2 on the reference clock; host b holds ranks 3 and 4, whose clock reads 0.5 s
    # ahead. The median of 5 ranks is host a's clock: host b's jobs (0.5..8.5 s) are shifted by -0.5 s
    # onto host a's 0..8 s; span 8 s.
    for rank in range(3):
        _rank(hand_log, rank, 5, "a", first_step_s=1.0)
    for rank in (3, 4):
        run_dir = _rank(hand_log, rank, 5, "b", first_step_s=1.5, job_start_s=0.5)
    notes = _clock_notes(run_dir)
    assert len(notes) == 1
    assert "ranks 3, 4 (host b)" in notes[0]
    assert "0.5 s ahead of" in notes[0]
    assert build_ledger(run=read_run(run_dir)).total_s == pytest.approx(8.0)


def test_a_host_with_an_on_time_rank_is_not_shifted(hand_log) -> None:  # type: ignore[no-untyped-def]
    # Host b's rank 3 runs on time, so host b's clock is right: rank 4's 0.5 s lag is not a clock offset.
    for rank in range(3):
        _rank(hand_log, rank, 5, "a", first_step_s=1.0)
    _rank(hand_log, 3, 5, "b", first_step_s=1.0)
    run_dir = _rank(hand_log, 4, 5, "b", first_step_s=1.5, job_start_s=0.5)
    assert _clock_notes(run_dir) == []


def test_a_clock_behind_says_its_steps_end_earlier(hand_log) -> None:  # type: ignore[no-untyped-def]
    # 4 hosts; rank 2's clock reads 0.5 s behind: it enters and ends every step 0.5 s early.
    for rank in range(4):
        offset_s = -0.5 if rank == 2 else 0.0
        run_dir = _rank(hand_log, rank, 4, f"h{rank}", first_step_s=1.0 + offset_s, job_start_s=offset_s)
    (note,) = _clock_notes(run_dir)
    assert "rank 2's clock (host h2) reads 0.5 s behind" in note
    assert "end that much earlier" in note
    assert "later" not in note
