"""The tour's stored step time: one set of steps, one median. The stored value, the gate on the
stored run (run:ID) and the gate on the run folder all use the steps the ledger counted (one per
step number, a step redone after a restart once) with the folder's warm-up (the first step)."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

from lightspeed.gate import load_metric_samples
from lightspeed.goodput import build_ledger, read_run
from lightspeed.store import NewRecord, open_store
from lightspeed.tour.steps import _ledger_records


def _restarted_run(hand_log) -> Path:  # type: ignore[no-untyped-def]
    """Segment 1: warm-up step 0 of 5 s, steps 1-4 of 1.0, 1.1, 1.2, 1.3 s, then steps 5 and 6 of
    0.1 s each before a crash; segment 2 resumes at step 5 (2.0 s), then 6 (1.4 s) and 7 (1.5 s)."""
    log = hand_log().start(0.0)
    t = 0.0
    for step, duration in enumerate([5.0, 1.0, 1.1, 1.2, 1.3, 0.1, 0.1]):
        log.step(step, t, t + duration, tokens=10)
        t += duration
    log.start(20.0, segment="s2")
    t = 21.0
    for step, duration in ((5, 2.0), (6, 1.4), (7, 1.5)):
        log.step(step, t, t + duration, tokens=10)
        t += duration
    return log.end(t + 0.5).write().parent  # type: ignore[no-any-return]


# By hand: the counted steps are 0..7 = 5.0, 1.0, 1.1, 1.2, 1.3, 2.0, 1.4, 1.5 (the first
# attempts of 5 and 6 were redone); without the warm-up step 0 the seven sorted are
# 1.0 1.1 1.2 1.3 1.4 1.5 2.0, median 1.3 s. (All ten attempts would give 1.25 s; the eight
# counted steps with the warm-up 1.35 s: the three medians the old records gave.)
EXPECTED_MEDIAN_S = 1.3


def test_stored_value_run_and_folder_give_one_median(hand_log) -> None:  # type: ignore[no-untyped-def]
    run_dir = _restarted_run(hand_log)
    ledger = build_ledger(run=read_run(run_dir))
    assert ledger.steps.count == 8  # the ledger counts each step number once
    records = _ledger_records(ledger, run_dir, "tiny-gpt")
    step_record = next(record for record in records if record.metric == "step_time_s")
    assert step_record.value == pytest.approx(EXPECTED_MEDIAN_S)
    with open_store() as store:
        run_id = store.add_records(kind="goodput", records=records, label="tour tiny-gpt")
    stored = next(s for s in load_metric_samples(f"run:{run_id}") if s.metric.endswith("[step_time_s]"))
    folder = load_metric_samples(run_dir)[0]
    for series in (stored, folder):
        assert len(series.measured()) == 7
        assert statistics.median(series.measured()) == pytest.approx(EXPECTED_MEDIAN_S)
    assert stored.measured() == pytest.approx(folder.measured())


def test_an_older_record_of_every_attempt_is_still_read(hand_log) -> None:  # type: ignore[no-untyped-def]
    """Runs stored before (every attempt, no warmup key) stay readable: ten samples, none warm-up."""
    samples = [5.0, 1.0, 1.1, 1.2, 1.3, 0.1, 0.1, 2.0, 1.4, 1.5]
    with open_store() as store:
        run_id = store.add_records(
            kind="goodput",
            records=[NewRecord(name="tiny-gpt", metric="step_time_s", value=1.35, unit="s",
                               payload={"samples": samples, "lower_is_better": True})],
        )  # fmt: skip
    series = load_metric_samples(f"run:{run_id}")[0]
    assert series.num_warmup == 0
    assert statistics.median(series.measured()) == pytest.approx(1.25)
