"""ETTR model and checkpoint intervals against hand calculations."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lightspeed.errors import UserInputError
from lightspeed.goodput import estimate_failure_rate, expected_ettr, plan_checkpoints


def test_expected_ettr_by_hand() -> None:
    # 10 nodes x 0.01 failures per node-day = 0.1 failures/day = 0.1 / 86400 per second.
    # ETTR = (1 - 0.1/86400 * (600 + 3600/2)) / (1 + 60/3600) = 0.99722222 / 1.01666667
    value = expected_ettr(
        num_nodes=10, failures_per_node_day=0.01, checkpoint_write_s=60, restart_s=600, interval_s=3600
    )
    assert value == pytest.approx((1 - 0.1 / 86400 * 2400) / (1 + 60 / 3600))
    assert value == pytest.approx(0.980874, abs=1e-6)


def test_young_and_daly_by_hand() -> None:
    # One node failing once a day: MTTF = 86400 s; Young = sqrt(2 * 100 * 86400) = 4156.92 s.
    plan = plan_checkpoints(num_nodes=1, failures_per_node_day=1.0, checkpoint_write_s=100, restart_s=0)
    assert plan.job_mttf_s == pytest.approx(86400.0)
    assert plan.young_interval_s == pytest.approx(4156.92, abs=0.01)
    assert plan.daly_interval_s == pytest.approx(4056.92, abs=0.01)


def test_optimal_interval_is_the_maximum_of_the_ettr_curve() -> None:
    settings = {
        "num_nodes": 128,
        "failures_per_node_day": 0.0065,
        "checkpoint_write_s": 120.0,
        "restart_s": 900.0,
    }
    plan = plan_checkpoints(**settings)
    grid = np.linspace(60.0, 40_000.0, 200_000)
    values = [expected_ettr(interval_s=float(point), **settings) for point in grid]
    best = float(grid[int(np.argmax(values))])
    assert plan.optimal_interval_s == pytest.approx(best, rel=1e-3)
    assert plan.optimal_ettr == pytest.approx(max(values), rel=1e-9)
    # With a small restart overhead the exact optimum sits near Daly's first-order rule.
    assert plan.optimal_interval_s == pytest.approx(plan.daly_interval_s, rel=0.05)
    assert max(row.ettr for row in plan.rows) <= plan.optimal_ettr + 1e-12


def test_rows_split_losses() -> None:
    plan = plan_checkpoints(
        num_nodes=2, failures_per_node_day=0.5, checkpoint_write_s=30, restart_s=300, intervals_s=[600.0]
    )
    row = plan.rows[0]
    # shares of the wall time, by hand: failures cost r (u0 + dt/2) of it, 2 nodes x 0.5 per day:
    # 600 / 86400; of what is left, checkpoints take w / (dt + w) = 30 / 630; the rest is ETTR
    lost_to_failures = 1 / 86400 * (300 + 300)
    assert row.lost_to_failures == pytest.approx(lost_to_failures)
    assert row.lost_to_checkpoints == pytest.approx((1 - lost_to_failures) * 30 / 630)
    assert row.ettr == pytest.approx((1 - lost_to_failures) * 600 / 630)
    # the three columns split the wall time: they add to 100% (they added to 100.2% before)
    assert row.ettr + row.lost_to_failures + row.lost_to_checkpoints == pytest.approx(1.0, abs=1e-12)


def test_the_table_columns_add_up_and_say_how_they_are_rounded(capsys: pytest.CaptureFixture[str]) -> None:
    from lightspeed.report import render_checkpoint_plan

    # the README example: 128 nodes, 6.5 failures per 1,000 node-days, 60 s writes, 10 min restarts
    plan = plan_checkpoints(num_nodes=128, failures_per_node_day=0.0065, checkpoint_write_s=60, restart_s=600)
    for row in plan.rows:
        assert row.ettr + row.lost_to_failures + row.lost_to_checkpoints == pytest.approx(1.0, abs=1e-12)
    render_checkpoint_plan(plan)
    out = capsys.readouterr().out
    shown = [
        [float(cell.strip().rstrip("%")) for cell in line.split("│")[2:5]]
        for line in out.splitlines()
        if line.startswith("│") and "%" in line
    ]
    assert len(shown) == len(plan.rows)
    for cells in shown:  # each figure rounded on its own to 0.1%: a row adds to 100% within 0.15
        assert sum(cells) == pytest.approx(100.0, abs=0.15)
    assert "add to 100% of the wall time" in out


def test_no_failures_means_no_optimum_but_still_a_table() -> None:
    plan = plan_checkpoints(num_nodes=4, failures_per_node_day=0.0, checkpoint_write_s=10, restart_s=60)
    assert math.isinf(plan.job_mttf_s)
    assert len(plan.rows) > 3
    # the plan used to say "expected ETTR 0.0%" here while its rows said 99.9%
    assert math.isinf(plan.optimal_interval_s)
    assert plan.optimal_ettr == 1.0
    assert "no failures" in plan.statement
    # no failures: ETTR is the checkpoint share alone, 1 / (1 + w / dt), written out by hand
    for row in plan.rows:
        assert row.ettr == pytest.approx(1 / (1 + 10 / row.interval_s))


def test_failures_faster_than_restarts_are_stated_never_a_negative_interval() -> None:
    # 1e6 failures per node-day on 8 nodes: one every 86400 / 8e6 = 10.8 ms, a restart takes 60 s
    plan = plan_checkpoints(num_nodes=8, failures_per_node_day=1e6, checkpoint_write_s=60, restart_s=60)
    assert plan.job_mttf_s == pytest.approx(86400 / 8e6)
    assert plan.daly_interval_s is None  # sqrt(2 w M) - w would be -58.9 s
    assert plan.optimal_interval_s == 0.0
    assert plan.optimal_ettr == 0.0
    assert "sooner than it restarts" in plan.statement
    assert all(row.ettr == 0.0 for row in plan.rows)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(
    num_nodes=st.integers(min_value=1, max_value=10**7),
    rate=st.one_of(st.just(0.0), st.floats(min_value=1e-12, max_value=1e9)),
    write_s=st.floats(min_value=1e-3, max_value=1e7),
    restart_s=st.floats(min_value=0.0, max_value=1e7),
)
def test_plan_is_sane_for_any_inputs(num_nodes: int, rate: float, write_s: float, restart_s: float) -> None:
    plan = plan_checkpoints(
        num_nodes=num_nodes, failures_per_node_day=rate, checkpoint_write_s=write_s, restart_s=restart_s
    )
    assert plan.optimal_interval_s >= 0
    assert plan.daly_interval_s is None or plan.daly_interval_s >= 0
    assert plan.young_interval_s >= 0
    assert 0.0 <= plan.optimal_ettr <= 1.0
    for row in plan.rows:
        assert 0.0 <= row.ettr <= 1.0
        assert 0.0 <= row.lost_to_failures <= 1.0
        assert math.isfinite(row.interval_s)
    if 0 < plan.optimal_interval_s < math.inf:
        # the optimum is at least as good as every tabulated interval
        assert all(plan.optimal_ettr >= row.ettr - 1e-9 for row in plan.rows)
    if rate == 0:
        assert plan.optimal_ettr == 1.0


def test_bad_inputs() -> None:
    with pytest.raises(UserInputError, match="--nodes"):
        plan_checkpoints(num_nodes=0, failures_per_node_day=1, checkpoint_write_s=1, restart_s=1)
    with pytest.raises(UserInputError, match="checkpoint write time"):
        plan_checkpoints(num_nodes=1, failures_per_node_day=1, checkpoint_write_s=0, restart_s=1)


def test_failure_rate_from_observed_restarts(hand_log) -> None:  # type: ignore[no-untyped-def]
    log = hand_log().start(0.0, num_nodes=2).step(0, 0.0, 10.0)  # crashes at t = 10 s
    log.start(20.0, segment="s2").step(1, 20.0, 30.0).end(30.0)
    run_dir = log.write().parent
    estimate = estimate_failure_rate(runs=[run_dir], num_nodes=2)
    # One failure in 2 nodes x 20 s of segments = 40 node-seconds = 40/86400 node-days.
    assert estimate.num_failures == 1
    assert estimate.node_days == pytest.approx(40 / 86400)
    assert estimate.failures_per_node_day == pytest.approx(86400 / 40)
