"""A pipeline round with fewer tokens than stages, SLO shares over every offered request, and a rate
sustained only where its run settled (defects of the serving simulator's expert check)."""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from lightspeed.catalog import Catalog
from lightspeed.sol.infer.inference_hardware import inference_hardware_for
from lightspeed.sol.infer.plan import InferencePlan
from lightspeed.sol.serve import capacity_at_slo
from lightspeed.sol.serve.capacity_at_slo import LoadPoint, max_rate_at_slo
from lightspeed.sol.serve.run_metrics import LatencyStats, ServiceLevel, slo_result
from lightspeed.sol.serve.timing import IterationTimer, stage_tokens
from lightspeed.sol.serve.workload import LengthDistribution, ServingWorkload
from lightspeed.workload import ModelRegistry


def test_a_stage_holds_at_least_one_token_where_the_round_has_any() -> None:
    # tokens / pp, but a micro-batch of half a token does not exist: 2 tokens over 4 stages run as
    # whole tokens through the stages one after another, a token per stage iteration
    assert stage_tokens(8.0, 4) == 2.0
    assert stage_tokens(2.0, 4) == 1.0
    assert stage_tokens(1.0, 2) == 1.0
    assert stage_tokens(0.0, 4) == 0.0


def _timer(catalog: Catalog, models: ModelRegistry, name: str, plan: InferencePlan) -> IterationTimer:
    hardware = inference_hardware_for(catalog.cluster("dgx-h100"), plan)
    return IterationTimer(model=models.get(name), hardware=hardware, plan=plan, max_sequences=256)


def test_one_token_on_two_stages_with_attention_dp_has_a_cost(
    catalog: Catalog, models: ModelRegistry
) -> None:
    """The step that crashed ``search infer --slo`` for PP > 1 with attention DP: one decoding
    sequence, one stage token over two stages (it was NaN: 0.5 token a stage fell to bucket 0)."""
    plan = InferencePlan(tp=1, pp=2, ep=4, dp_attention=4, precision="fp8")
    seconds = _timer(catalog, models, "mixtral-8x7b", plan).seconds(1, 4096.0, 0.0, 0.0, 1.0)
    assert math.isfinite(seconds)
    assert seconds > 0.0


def test_a_prompt_smaller_than_the_stages_costs_a_token_a_stage(
    catalog: Catalog, models: ModelRegistry
) -> None:
    """2 and 4 prompt tokens over 4 stages both put one token on each stage iteration, so the steps
    cost the same (2 tokens used to be NaN: 0.5 token a stage)."""
    timer = _timer(catalog, models, "llama-3-70b", InferencePlan(tp=1, pp=4, precision="fp8"))
    two = timer.seconds(1, 16430.0, 2.0, 16383.0, 0.0)
    four = timer.seconds(1, 16430.0, 4.0, 16383.0, 0.0)
    assert math.isfinite(two)
    assert two == four


def test_a_step_time_that_is_not_a_number_is_an_internal_error(
    catalog: Catalog, models: ModelRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    timer = _timer(catalog, models, "llama-3-8b", InferencePlan(tp=1, precision="fp8"))
    monkeypatch.setattr(timer, "replica_s", lambda *args: math.nan)
    with pytest.raises(FloatingPointError, match="internal error"):
        timer.seconds(4, 1000.0, 0.0, 0.0)


def test_a_long_prompt_on_four_stages_completes_every_request(run_cli: Any) -> None:
    """The shape of ``simulate --model llama-3-70b --tp 1 --pp 4 --isl 16384 --osl 1024
    --arrival-rate 0.5``: it stopped at its first step (NaN) and called 0 of 2,000 requests
    complete an SLO met with a TPOT share of 100000%."""
    import json

    result = run_cli(
        "simulate",
        "--model",
        "llama-3-70b",
        "--system",
        "dgx-h100",
        "--precision",
        "fp8",
        "--isl",
        "16384",
        "--osl",
        "1024",
        "--tp",
        "1",
        "--pp",
        "4",
        "--arrival-rate",
        "0.5",
        "--requests",
        "40",
        "--slo",
        "ttft=3s,tpot=20ms",
        "--json",
    )
    assert result.code == 0, result.err
    payload = json.loads(result.out)
    assert payload["num_completed"] == 40
    slo = payload["slo"]
    for share in ("ttft_attainment", "tpot_attainment", "attainment"):
        assert 0.0 <= slo[share] <= 1.0


def _stats(values: np.ndarray) -> LatencyStats:
    return LatencyStats.of(values)


def test_every_share_is_over_every_offered_request() -> None:
    """Four requests at TTFT <= 0.5 s, TPOT <= 20 ms: A finished in both limits; B finished with one
    token (no TPOT to miss); C has its first token at 0.2 s but did not finish; D has no first token.
    By hand: TTFT 3/4 (A, B, C), TPOT 2/4 (A, B), both 2/4; the old rule counted only the three
    with a first token and passed the unfinished C and D on TPOT (4/3 = 133%)."""
    ttft = np.array([0.1, 0.1, 0.2, math.nan])
    tpot = np.array([0.01, math.nan, math.nan, math.nan])
    finished = np.array([True, True, False, False])
    scored = slo_result(
        ServiceLevel(ttft_s=0.5, tpot_s=0.02),
        ttft_s=ttft,
        tpot_s=tpot,
        finished=finished,
        ttft=_stats(ttft),
        tpot=_stats(tpot),
        requests_per_s=2.0,
        num_gpus=1,
    )
    assert (scored.ttft_attainment, scored.tpot_attainment, scored.attainment) == (0.75, 0.5, 0.5)
    assert scored.goodput_requests_per_s == 1.0  # 2 req/s x 1/2
    assert not scored.meets
    assert not scored.p99_meets  # a TPOT percentile of the finished only, two requests unfinished


def test_no_request_completed_is_no_slo_met() -> None:
    ttft = np.array([math.nan, math.nan])
    scored = slo_result(
        ServiceLevel(ttft_s=3.0, tpot_s=0.02),
        ttft_s=ttft,
        tpot_s=np.array([math.nan, math.nan]),
        finished=np.array([False, False]),
        ttft=_stats(ttft),
        tpot=_stats(ttft),
        requests_per_s=0.0,
        num_gpus=8,
    )
    assert (scored.ttft_attainment, scored.tpot_attainment, scored.attainment) == (0.0, 0.0, 0.0)
    assert not scored.meets
    assert not scored.p99_meets


def test_a_run_stopped_at_a_horizon_keeps_its_shares_within_100_percent(run_cli: Any) -> None:
    """``simulate ... --arrival-rate 30 --horizon 60s`` on one TP8 replica of Llama 3 70B (it falls
    behind): the requests still queued or decoding at 60 s count, and no share passes 100%."""
    import json

    result = run_cli(
        "simulate",
        "--model",
        "llama-3-70b",
        "--system",
        "dgx-h100",
        "--tp",
        "8",
        "--precision",
        "fp8",
        "--isl",
        "2000",
        "--osl",
        "200",
        "--arrival-rate",
        "30",
        "--slo",
        "ttft=500ms,tpot=30ms",
        "--horizon",
        "60s",
        "--json",
    )
    assert result.code == 0, result.err
    payload = json.loads(result.out)
    slo = payload["slo"]
    for share in ("ttft_attainment", "tpot_attainment", "attainment"):
        assert 0.0 <= slo[share] <= 1.0
    assert payload["num_completed"] < payload["num_arrived"]  # the run fell behind
    assert not slo["meets"]


def test_an_unsettled_probe_is_not_a_rate_sustained(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every probe meets the SLO, but runs above 50 req/s do not settle: the highest rate
    sustained is below 50 (bisection from a 100 req/s ceiling), not the ceiling's 98."""

    def probe(deployment: Any, workload: Any, rate: float, slo: Any, seed: int) -> Any:
        latency = LatencyStats(0.1, 0.1, 0.1, 0.1, 0.1)
        return SimpleNamespace(
            slo=SimpleNamespace(
                meets=True, attainment=1.0, goodput_requests_per_s=rate, offered_requests_per_s=rate
            ),
            ttft=latency,
            tpot=latency,
            e2e=latency,
            output_tokens_per_s=rate,
            served_output_tokens_per_s=rate,
            requests_per_s=rate,
            settled=rate <= 50.0,
        )

    monkeypatch.setattr(capacity_at_slo, "_at_rate", probe)
    monkeypatch.setattr(capacity_at_slo, "saturation_rate", lambda *args: 100.0)
    deployment: Any = SimpleNamespace(plan=SimpleNamespace(num_gpus=1))
    workload = ServingWorkload(
        input_lengths=LengthDistribution.fixed(100), output_lengths=LengthDistribution.fixed(10)
    )
    capacity = max_rate_at_slo(deployment, workload=workload, slo=ServiceLevel(ttft_s=1.0), steady=False)
    assert 45.0 < capacity.max_rate_per_s <= 50.0
    # every probe met the SLO and those above 50 req/s did not settle: settling bounds the rate
    assert capacity.limited_by == "settling"
    assert not LoadPoint.of(60.0, probe(None, None, 60.0, None, 0)).sustained
