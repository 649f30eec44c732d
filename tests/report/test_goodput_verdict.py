"""The one-line verdict under ``search infer --slo``: the finalist to deploy, with a caveat when
its run fell behind its arrivals (a lower bound on its latencies), or what to change."""

from __future__ import annotations

from dataclasses import replace

from lightspeed.report.serving import goodput_verdict
from lightspeed.sol.infer.plan import InferencePlan
from lightspeed.sol.serve import GoodputSearchResult, RankedDeployment, ServiceLevel

SLO = ServiceLevel(ttft_s=0.5, tpot_s=0.05)
MET = RankedDeployment(
    plan=InferencePlan(tp=8, precision="fp8"),
    analytic_output_tokens_per_s_per_gpu=400.0,
    rate_per_s=2.0,
    goodput_requests_per_s=1.9,
    goodput_requests_per_s_per_gpu=0.2375,
    attainment=0.95,
    ttft_p99_s=0.3,
    tpot_p99_s=0.03,
    meets=True,
    settled=True,
)


def _verdict(entry: RankedDeployment) -> str:
    # the verdict reads the ranking, the SLO and the rate; the analytic search is not looked at
    result = GoodputSearchResult(slo=SLO, rate_per_s=2.0, ranking=(entry,), analytic=None)  # type: ignore[arg-type]
    return " ".join(goodput_verdict(result).split())


def test_a_finalist_that_kept_up_is_recommended_plainly() -> None:
    verdict = _verdict(MET)
    assert verdict.startswith("best: tp=8")
    assert "0.2375 good req/s per GPU (95.0% within the SLO at 2 req/s)" in verdict
    assert "not settled" not in verdict


def test_a_finalist_whose_run_fell_behind_carries_the_caveat() -> None:
    verdict = _verdict(replace(MET, settled=False))
    assert verdict.startswith("best: tp=8")
    assert verdict.endswith(
        "its run fell behind the arrivals (not settled): "
        "simulate more requests (--requests) before trusting it"
    )


def test_no_finalist_meeting_the_slo_says_what_to_change() -> None:
    verdict = _verdict(replace(MET, meets=False, attainment=0.4, settled=False))
    assert verdict.startswith("no finalist meets TTFT <= 500 ms, TPOT <= 50 ms")
    assert "keeps 40.0% of requests within it" in verdict
