"""The latency-against-load figure rings the rates whose runs did not settle (a lower bound)."""

from __future__ import annotations

from lightspeed.report.serving import latency_load_figure
from lightspeed.sol.serve import LoadPoint


def _point(rate: float, ttft_p99_s: float, settled: bool | None) -> LoadPoint:
    return LoadPoint(
        rate_per_s=rate,
        ttft_p50_s=ttft_p99_s / 2,
        ttft_p99_s=ttft_p99_s,
        tpot_p50_s=0.01,
        tpot_p99_s=0.02,
        e2e_p50_s=1.0,
        output_tokens_per_s=100.0 * rate,
        requests_per_s=rate,
        attainment=None,
        meets=None,
        settled=settled,
    )


def _rings(points: list[LoadPoint]) -> list[tuple[float, float]]:
    figure = latency_load_figure(points)
    axes = figure.axes[0]  # TTFT's
    return [
        tuple(offset)  # type: ignore[misc]
        for collection in axes.collections
        if collection.get_label() == "not settled (lower bound)"
        for offset in collection.get_offsets().tolist()
    ]


def test_only_the_rate_that_fell_behind_is_ringed_at_its_p99_ttft() -> None:
    points = [_point(10.0, 0.05, True), _point(20.0, 0.08, True), _point(30.0, 0.4, False)]
    assert _rings(points) == [(30.0, 400.0)]  # the rate, its p99 TTFT in ms


def test_runs_that_settled_or_were_not_at_a_rate_are_not_ringed() -> None:
    assert _rings([_point(10.0, 0.05, True), _point(20.0, 0.08, None)]) == []
