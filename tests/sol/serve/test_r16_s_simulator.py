"""Round 16, helper S: the simulator's horizon before any measured arrival, the sequence caps, the
in-flight series, the served rate at a light load and the trace loaders' paths."""

from __future__ import annotations

import pytest

from lightspeed.catalog import Catalog
from lightspeed.errors import UserInputError
from lightspeed.sol.infer.plan import InferencePlan
from lightspeed.sol.serve import (
    ArrivalProcess,
    LengthDistribution,
    SchedulerConfig,
    ServingWorkload,
    load_lengths,
    load_request_trace,
    simulate,
    simulated_deployment,
)
from lightspeed.workload import ModelRegistry

FP8 = InferencePlan(tp=1, precision="fp8")


def _workload(arrivals: ArrivalProcess, requests: int, *, warmup: int = 0) -> ServingWorkload:
    return ServingWorkload(
        arrivals=arrivals,
        num_requests=requests,
        input_lengths=LengthDistribution.fixed(500),
        output_lengths=LengthDistribution.fixed(200),
        warmup_requests=warmup,
    )


def _simulate(catalog: Catalog, models: ModelRegistry, workload: ServingWorkload, **options: object):  # type: ignore[no-untyped-def]
    return simulate(
        model=models.get("llama-3-8b"),
        cluster=catalog.cluster("dgx-h100", num_accelerators=1),
        plan=options.pop("plan", FP8),  # type: ignore[arg-type]
        workload=workload,
        **options,  # type: ignore[arg-type]
    )


def test_a_horizon_before_the_first_measured_arrival_is_refused(
    catalog: Catalog, models: ModelRegistry
) -> None:
    """Poisson arrivals at 1 req/s: the 11th request (the first after 10 warm-up ones) arrives
    about 10 s in, far past a 1 ms horizon, so nothing measured arrived; the run used to report
    0 req/s "over 0.001 ns" (a duration of 1e-12 s) and 0% within the SLO."""
    workload = _workload(ArrivalProcess.poisson(1.0), 50, warmup=10)
    with pytest.raises(UserInputError, match="ends before any measured request arrives") as raised:
        _simulate(catalog, models, workload, horizon_s=1e-3)
    assert "lower --warmup" in str(raised.value)


def test_max_num_seqs_beside_a_different_max_batch_is_refused(
    catalog: Catalog, models: ModelRegistry
) -> None:
    """tp=1: one rank per replica, so --max-batch 16 caps the rank at 16 and --max-num-seqs 64
    contradicts it (it used to win silently, 64 running); the same cap twice is accepted."""
    model, cluster = models.get("llama-3-8b"), catalog.cluster("dgx-h100", num_accelerators=1)
    plan = InferencePlan(tp=1, precision="fp8", max_batch=16)
    with pytest.raises(UserInputError, match="--max-num-seqs 64 and --max-batch 16"):
        simulated_deployment(
            model=model, cluster=cluster, plan=plan, scheduler=SchedulerConfig(max_sequences_per_rank=64)
        )
    same = simulated_deployment(
        model=model, cluster=cluster, plan=plan, scheduler=SchedulerConfig(max_sequences_per_rank=16)
    )
    assert same.max_sequences_per_rank == 16


def test_the_in_flight_series_counts_the_measured_requests(catalog: Catalog, models: ModelRegistry) -> None:
    """100 requests all at time zero (offline), the first 10 warm-up: all 100 fit one batch of
    the H100's KV cache, so none completes before the first slice's middle and 100 - 10 = 90
    measured requests are in flight then (the warm-up ones used to be counted too: 100)."""
    result = _simulate(catalog, models, _workload(ArrivalProcess.offline(), 100, warmup=10))
    assert result.series.in_flight[0] == 90.0
    assert max(result.series.in_flight) == 90.0


def test_the_served_rate_is_never_below_the_completions(catalog: Catalog, models: ModelRegistry) -> None:
    """Three requests a mean 11.6 days apart (1e-6 req/s), each done in well under a second: the
    completions count 3 over the 2 gaps and the last latency, the offered rate 2 arrivals over
    the same 2 gaps, so 3 / (span + latency) > 2 / span and the served rate, capped at the offered
    one, read below the completions (1.924e-06 vs 2.886e-06). The run served what it completed."""
    result = _simulate(catalog, models, _workload(ArrivalProcess.poisson(1e-6), 3))
    span_s = result.duration_s
    assert result.requests_per_s == pytest.approx(3 / span_s)
    assert result.offered_requests_per_s < result.requests_per_s  # 2 over less than the span
    assert result.served_requests_per_s >= result.requests_per_s


@pytest.mark.parametrize("as_text", [True, False])
def test_the_trace_loaders_take_a_path_or_its_text(tmp_path, as_text: bool) -> None:  # type: ignore[no-untyped-def]
    trace = tmp_path / "t.csv"
    trace.write_text("arrival_s,input_tokens,output_tokens\n0,10,5\n2,20,7\n")
    lengths = tmp_path / "lengths.txt"
    lengths.write_text("100\n300\n")
    loaded = load_request_trace(str(trace) if as_text else trace)
    assert loaded.input_tokens == (10, 20)
    assert loaded.arrival_s == (0.0, 2.0)
    assert load_lengths(str(lengths) if as_text else lengths).mean_tokens == 200.0


def test_a_trace_path_of_another_kind_is_refused_in_one_line() -> None:
    with pytest.raises(UserInputError, match="path must be a path or its text"):
        load_request_trace(5)  # type: ignore[arg-type]
