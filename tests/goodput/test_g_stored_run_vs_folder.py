"""A stored goodput run and its own run folder compare on their common metric (docs/tour.md:
"the stored value, `lightspeed compare run:ID` and `lightspeed compare RUN_DIR` give one median").

The store keys a series by record name and metric (``tiny-gpt [step_time_s]``), a run folder by
the metric alone (``step_time_s``): the gate pairs them when each side holds one series of it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from expect import one_line_error
from lightspeed.errors import UserInputError
from lightspeed.gate import MetricSamples, compare_runs, load_metric_samples
from lightspeed.goodput import build_ledger, read_run
from lightspeed.store import open_store
from lightspeed.tour.steps import _ledger_records

# Steps 0..4 of 5.0, 1.0, 1.2, 1.1, 1.3 s; step 0 is warm-up, so by hand the measured steps sorted
# are 1.0 1.1 1.2 1.3 and their median is (1.1 + 1.2) / 2 = 1.15 s on both sides.
STEPS_S = (5.0, 1.0, 1.2, 1.1, 1.3)
EXPECTED_MEDIAN_S = 1.15


def _stored_run(hand_log) -> tuple[str, Path]:  # type: ignore[no-untyped-def]
    log = hand_log().start(0.0)
    t = 0.0
    for step, duration in enumerate(STEPS_S):
        log.step(step, t, t + duration, tokens=10)
        t += duration
    run_dir = log.end(t + 0.5).write().parent
    ledger = build_ledger(run=read_run(run_dir))
    with open_store() as store:
        run_id = store.add_records(
            kind="goodput", records=_ledger_records(ledger, run_dir, "tiny-gpt"), label="tour tiny-gpt"
        )
    return run_id, run_dir


def test_compare_stored_run_with_its_run_folder(hand_log, run_cli) -> None:  # type: ignore[no-untyped-def]
    run_id, run_dir = _stored_run(hand_log)
    for baseline, current in ((f"run:{run_id}", str(run_dir)), (str(run_dir), f"run:{run_id}")):
        result = run_cli("compare", baseline, current, "--json")
        assert result.code == 0, result.err
        gate = json.loads(result.out)
        assert [item["metric"] for item in gate["comparisons"]] == ["tiny-gpt [step_time_s]"]
        comparison = gate["comparisons"][0]
        assert comparison["baseline_median"] == pytest.approx(EXPECTED_MEDIAN_S)
        assert comparison["current_median"] == pytest.approx(EXPECTED_MEDIAN_S)
        assert comparison["verdict"] == "unchanged"
        assert gate["passed"] is True
        assert gate["num_missing"] == 0  # a run folder holds no goodput fraction: not a crash
        assert any("compared with" in note and "step_time_s" in note for note in gate["notes"])


def test_the_metric_can_be_named_by_either_label(hand_log) -> None:  # type: ignore[no-untyped-def]
    run_id, run_dir = _stored_run(hand_log)
    for name in ("step_time_s", "tiny-gpt [step_time_s]"):
        result = compare_runs(
            baseline=load_metric_samples(f"run:{run_id}"),
            current=load_metric_samples(run_dir),
            metrics=[name],
        )
        assert [item.metric for item in result.comparisons] == ["tiny-gpt [step_time_s]"]


def _series(metric: str) -> MetricSamples:
    return MetricSamples(metric=metric, unit="s", lower_is_better=True, samples=(1.0, 1.1, 1.2))


def test_two_jobs_or_an_ambiguous_pair_are_not_matched() -> None:
    """Two named jobs are different metrics (a --quick tour's step time is not the full one's), and
    a bare series facing two named series of its metric has no one partner."""
    with pytest.raises(UserInputError, match="share no metric"):
        compare_runs(
            baseline=[_series("tiny-gpt [step_time_s]")], current=[_series("tiny-gpt-quick [step_time_s]")]
        )
    with pytest.raises(UserInputError, match="share no metric"):
        compare_runs(
            baseline=[_series("a [step_time_s]"), _series("b [step_time_s]")],
            current=[_series("step_time_s")],
        )


def test_a_stored_run_and_another_metric_still_share_nothing(hand_log, run_cli) -> None:  # type: ignore[no-untyped-def]
    run_id, _ = _stored_run(hand_log)
    other = Path(hand_log().path.parent.parent / "tps.json")
    other.write_text(json.dumps({"metric": "tokens_per_s", "unit": "tokens/s", "lower_is_better": False,
                                 "samples": [5.0, 6.0]}))  # fmt: skip
    one_line_error(run_cli("compare", f"run:{run_id}", str(other)), "share no metric")
