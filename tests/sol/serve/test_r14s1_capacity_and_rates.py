"""Round 14, group S1: what bounds a highest rate at an SLO (settling, not throughput), the settling
threshold under bursty arrivals, output tokens/s at the rate served, an SLO's attainment as given,
one-limit SLO wording, the in-flight line and a pluralised token budget."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import pytest

from lightspeed.catalog import Catalog
from lightspeed.report.inference import tpot_text
from lightspeed.report.serving import _throughput_rows, capacity_lines, slo_text
from lightspeed.sol.infer.plan import InferencePlan
from lightspeed.sol.serve import capacity_at_slo
from lightspeed.sol.serve.capacity_at_slo import LoadPoint, max_rate_at_slo
from lightspeed.sol.serve.deployment import SchedulerConfig, simulated_deployment
from lightspeed.sol.serve.run_metrics import LatencyStats, ServiceLevel, Settling, slo_result
from lightspeed.sol.serve.simulator import simulate_deployment
from lightspeed.sol.serve.workload import ArrivalProcess, LengthDistribution, ServingWorkload
from lightspeed.workload import ModelRegistry


def _probe_at(settled_up_to: float, meets_up_to: float = float("inf")) -> Any:
    """A stand-in for one probe's run: every rate up to ``meets_up_to`` meets the SLO, every rate up
    to ``settled_up_to`` settles."""

    def probe(deployment: Any, workload: Any, rate: float, slo: Any, seed: int) -> Any:
        latency = LatencyStats(0.1, 0.1, 0.1, 0.1, 0.1)
        meets = rate <= meets_up_to
        return SimpleNamespace(
            slo=SimpleNamespace(
                meets=meets,
                attainment=1.0 if meets else 0.5,
                goodput_requests_per_s=rate,
                offered_requests_per_s=rate,
            ),
            ttft=latency,
            tpot=latency,
            e2e=latency,
            output_tokens_per_s=rate,
            requests_per_s=rate,
            served_output_tokens_per_s=rate,
            settled=rate <= settled_up_to,
        )

    return probe


def _search(monkeypatch: pytest.MonkeyPatch, probe: Any) -> Any:
    monkeypatch.setattr(capacity_at_slo, "_at_rate", probe)
    monkeypatch.setattr(capacity_at_slo, "saturation_rate", lambda *args: 100.0)
    deployment: Any = SimpleNamespace(plan=SimpleNamespace(num_gpus=1))
    workload = ServingWorkload(
        input_lengths=LengthDistribution.fixed(100), output_lengths=LengthDistribution.fixed(10)
    )
    return max_rate_at_slo(deployment, workload=workload, slo=ServiceLevel(ttft_s=1.0), steady=False)


def test_probes_rejected_only_as_unsettled_bound_the_rate_by_settling(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # every probe meets the SLO; above 50 req/s (half the 100 req/s saturation) runs do not settle.
    # Bisection: 50 (settled, met) -> 75 (not settled) -> 62.5 -> 56.25 -> 53.125 -> 51.5625 -> 50.78
    # -> 50.39 (each above 50 rejected): the rate found is 50, half the saturation, not "the
    # search's tolerance below it"
    capacity = _search(monkeypatch, _probe_at(settled_up_to=50.0))
    assert capacity.max_rate_per_s == pytest.approx(50.0)
    assert capacity.limited_by == "settling"
    text = " ".join(capacity_lines(capacity))
    assert "limited by settling" in text
    assert "did not settle within the run" in text
    assert "a longer --requests" in text
    assert "50.0% of saturation" in text  # 50 / 100
    assert "the search's tolerance" not in text


def test_no_probe_rejected_is_limited_by_throughput(monkeypatch: pytest.MonkeyPatch) -> None:
    # every probe meets and settles: the bisection climbs to within 2% of the 100 req/s ceiling
    # (50, 75, 87.5, 93.75, 96.875, 98.4375: 100 - 98.4375 = 1.5625 <= 2% of 98.4375)
    capacity = _search(monkeypatch, _probe_at(settled_up_to=1e9))
    assert capacity.max_rate_per_s == pytest.approx(98.4375)
    assert capacity.limited_by == "throughput"
    assert "within the search's tolerance" in " ".join(capacity_lines(capacity))


def test_the_lowest_rejected_probe_missing_the_slo_is_limited_by_slo(monkeypatch: pytest.MonkeyPatch) -> None:
    # probes above 60 miss the SLO, and every probe settles: the bound is the SLO
    capacity = _search(monkeypatch, _probe_at(settled_up_to=1e9, meets_up_to=60.0))
    assert 58.0 < capacity.max_rate_per_s <= 60.0
    assert capacity.limited_by == "slo"


def test_the_settling_threshold_widens_with_the_arrivals_squared_cv() -> None:
    # 200 measured arrivals: 100 a half; in flight 10 then 20 is a backlog share of 10 / 100 = 10%
    poisson = Settling(first_half_in_flight=10.0, second_half_in_flight=20.0, measured_arrivals=200)
    bursty = replace(poisson, arrival_cv=2.0)
    assert poisson.backlog_share == pytest.approx(0.1)
    assert not poisson.settled  # 10% > 5%
    assert bursty.backlog_threshold == pytest.approx(0.2)  # 5% x 2^2, at the 20% most
    assert bursty.settled
    # 1.5^2 x 5% = 11.25%; CV 3 would be 45%, held at 20%; smoother than Poisson keeps 5%
    assert replace(poisson, arrival_cv=1.5).backlog_threshold == pytest.approx(0.1125)
    assert replace(poisson, arrival_cv=3.0).backlog_threshold == pytest.approx(0.2)
    assert replace(poisson, arrival_cv=0.5).backlog_threshold == pytest.approx(0.05)
    # a backlog of 25% is past even CV 2's threshold
    assert not replace(bursty, second_half_in_flight=35.0).settled


@pytest.fixture
def small_deployment(catalog: Catalog, models: ModelRegistry) -> Any:
    return simulated_deployment(
        model=models.get("llama-3-8b"),
        cluster=catalog.cluster("dgx-h100"),
        plan=InferencePlan(tp=1, precision="fp8"),
    )


def _workload(arrivals: ArrivalProcess, *, requests: int = 300, warmup: int = 0) -> ServingWorkload:
    return ServingWorkload(
        arrivals=arrivals,
        input_lengths=LengthDistribution.fixed(500),
        output_lengths=LengthDistribution.fixed(100),
        num_requests=requests,
        warmup_requests=warmup,
    )


def test_a_gamma_run_is_judged_with_its_cv(small_deployment: Any) -> None:
    result = simulate_deployment(small_deployment, _workload(ArrivalProcess.gamma(10.0, 2.0)))
    assert result.settling is not None
    assert result.settling.arrival_cv == 2.0
    assert result.settling.backlog_threshold == pytest.approx(0.2)
    poisson = simulate_deployment(small_deployment, _workload(ArrivalProcess.poisson(10.0)))
    assert poisson.settling is not None
    assert poisson.settling.backlog_threshold == pytest.approx(0.05)


def test_output_tokens_per_s_served_is_the_served_rate_times_the_output_length(small_deployment: Any) -> None:
    # every request outputs exactly 100 tokens, so at the rate served the output is 100 x that rate;
    # the run's own rate counts its drain (the last answers after the last arrival) and is lower
    result = simulate_deployment(
        small_deployment, _workload(ArrivalProcess.poisson(10.0)), slo=ServiceLevel(ttft_s=1.0)
    )
    assert result.served_output_tokens_per_s == pytest.approx(100.0 * result.served_requests_per_s)
    assert result.output_tokens_per_s < result.served_output_tokens_per_s
    assert result.summary()["served_output_tokens_per_s"] == result.served_output_tokens_per_s
    point = LoadPoint.of(10.0, result)
    assert point.served_output_tokens_per_s == result.served_output_tokens_per_s
    row = dict(_throughput_rows(result))["output tokens/s"]
    assert "tok/s served" in row
    assert "to the last completion" in row


def test_the_in_flight_line_says_what_each_figure_counts(small_deployment: Any) -> None:
    result = simulate_deployment(small_deployment, _workload(ArrivalProcess.poisson(10.0), warmup=100))
    row = dict(_throughput_rows(result))["in flight"]
    assert "in flight counts the measured requests only" in row
    assert "running and queue count warm-up requests too" in row


def test_an_slo_attainment_reads_back_as_given() -> None:
    assert ServiceLevel(ttft_s=0.3, attainment=0.995).describe() == "TTFT <= 300 ms for 99.5% of requests"
    assert ServiceLevel(tpot_s=0.02, attainment=0.9555).describe() == "TPOT <= 20 ms for 95.55% of requests"
    assert (
        ServiceLevel(ttft_s=2.0, tpot_s=0.05).describe() == "TTFT <= 2 s, TPOT <= 50 ms for 90% of requests"
    )


def _scored(slo: ServiceLevel) -> str:
    latency = LatencyStats(0.1, 0.1, 0.1, 0.1, 0.1)
    result = slo_result(
        slo,
        ttft_s=[0.1, 0.2],
        tpot_s=[0.01, 0.01],
        ttft=latency,
        tpot=latency,
        requests_per_s=1.0,
        num_gpus=1,
    )
    return slo_text(result)


def test_an_slo_of_one_limit_names_that_limit() -> None:
    ttft_only = _scored(ServiceLevel(ttft_s=0.3))
    assert "100.0% of requests within the TTFT limit;" in ttft_only
    assert "within both" not in ttft_only
    assert "within the TPOT limit;" in _scored(ServiceLevel(tpot_s=0.02))
    assert "within both (TTFT 100.0%, TPOT 100.0%)" in _scored(ServiceLevel(ttft_s=0.3, tpot_s=0.02))


def test_the_tpot_row_points_at_the_simulated_p50() -> None:
    text = tpot_text(0.0363, 27.5, output_tokens=200, simulated_tpot_p50_s=0.124)
    assert text == "36.3 ms (analytic, 27.5 tok/s per user; simulated under this load, below: p50 124 ms)"
    assert tpot_text(0.0363, 27.5, output_tokens=200) == "36.3 ms (27.5 tok/s per user)"


def test_a_budget_of_one_token_is_singular(catalog: Catalog, models: ModelRegistry) -> None:
    one = simulated_deployment(
        model=models.get("llama-3-8b"),
        cluster=catalog.cluster("dgx-h100"),
        plan=InferencePlan(tp=1, precision="fp8"),
        scheduler=SchedulerConfig(max_batched_tokens_per_rank=1),
    )
    result = simulate_deployment(one, _workload(ArrivalProcess.poisson(1.0), requests=2))
    assert "and 1 token per iteration per rank" in result.assumptions[0]
