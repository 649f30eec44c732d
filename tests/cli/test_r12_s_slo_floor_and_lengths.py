"""simulate's option checks (round 12, S).

1. ``simulate --slo ttft=1ns,tpot=50ms --max-rate-at-slo`` ran its whole search (a saturation run
   and twelve probes) to report a rate of 0, where no rate can meet a limit under the latency of one
   request alone on an idle deployment: it is refused first, in one line naming that floor.
2. ``--isl-dist uniform:0-100`` (a bound of 0 tokens), ``lognormal:0`` / ``lognormal:-1`` (a spread
   of none or below none) and ``file:`` (no path) got the generic "write fixed, uniform:MIN-MAX ..."
   line; each now says what is wrong and what to write.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from expect import one_line_error
from lightspeed.catalog import load_catalog
from lightspeed.errors import UserInputError
from lightspeed.sol.infer.plan import InferencePlan, SpeculativeDecoding
from lightspeed.sol.serve import LengthDistribution, ServiceLevel, ServingWorkload
from lightspeed.sol.serve.capacity_at_slo import check_slo_reachable, max_rate_at_slo
from lightspeed.sol.serve.deployment import simulated_deployment
from lightspeed.workload import load_models

ONE_H100_FP8 = ["--model", "llama-3-8b", "--system", "dgx-h100", "--gpus", "1", "--precision", "fp8"]
SIMULATE = ["simulate", *ONE_H100_FP8, "--isl", "500", "--osl", "200"]
# Llama 3 8B without its embeddings: 32 layers x (q,o 4096x4096 + k,v 4096x1024 + 3 MLP 4096x14336)
# = 32 x 218.1M = 6.98e9 parameters. On one H100 (dense FP8 1,979 TFLOP/s, HBM 3.35 TB/s), by hand:
# a 500-token prefill is at least 2 x 6.98e9 x 500 / 1.979e15 s = 3.53 ms, and a batch-1 decode step
# reads at least the 6.98e9 FP8 weight bytes: 6.98e9 / 3.35e12 s = 2.08 ms. The limits below (1 ns,
# 1 ms) are under both, so no rate can meet them.
PREFILL_FLOOR_MS = 2 * 6.98e9 * 500 / 1.979e15 * 1e3
DECODE_FLOOR_MS = 6.98e9 / 3.35e12 * 1e3


def _floor_ms(line: str, name: str) -> float:
    """The unloaded TTFT or TPOT a refusal names, in ms."""
    match = re.search(rf"{name} of ([0-9.]+) (ms|us|s)\b", line)
    assert match is not None, line
    scale = {"ms": 1.0, "us": 1e-3, "s": 1e3}[match.group(2)]
    return float(match.group(1)) * scale


def _one_request_alone(run_cli: Any) -> dict[str, Any]:
    """``simulate --requests 1 --json`` of the same deployment and lengths (offline: the request alone)."""
    result = run_cli(*SIMULATE, "--requests", "1", "--json")
    assert result.code == 0, result.err
    payload: dict[str, Any] = json.loads(result.out)
    return payload


def test_a_ttft_limit_under_one_request_alone_is_refused_before_the_search(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(*SIMULATE, "--slo", "ttft=1ns,tpot=50ms", "--max-rate-at-slo")
    line = one_line_error(
        result,
        "--slo ttft=1ns is under this deployment's unloaded TTFT of",
        "(one request of 500 prompt and 200 output tokens alone)",
        "no arrival rate meets it",
        "raise ttft above",
    )
    assert "tpot" not in line.split("(")[0]  # 50 ms is above the decode floor: not named
    floor = _floor_ms(line, "TTFT")
    assert floor > PREFILL_FLOOR_MS
    # the same request simulated alone through the command (3 significant digits, as shown)
    alone_ms = _one_request_alone(run_cli)["ttft"]["p50_s"] * 1e3
    assert floor == pytest.approx(alone_ms, rel=5e-3)


def test_a_tpot_limit_under_a_batch_of_one_is_refused_and_both_are_named(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(*SIMULATE, "--slo", "ttft=1ns,tpot=1ms", "--max-rate-at-slo")
    line = one_line_error(
        result, "--slo ttft=1ns,tpot=1ms are under", "TTFT of", "and TPOT of", "meets them", "tpot above"
    )
    floor = _floor_ms(line, "TPOT")
    assert floor > DECODE_FLOOR_MS
    alone_ms = _one_request_alone(run_cli)["tpot"]["p50_s"] * 1e3
    assert floor == pytest.approx(alone_ms, rel=5e-3)


# --- the library check ------------------------------------------------------------------------


def _deployment(plan: InferencePlan) -> Any:
    return simulated_deployment(
        model=load_models().get("llama-3-8b"), cluster=load_catalog().cluster("dgx-h100"), plan=plan
    )


def _workload(prompt: LengthDistribution) -> ServingWorkload:
    return ServingWorkload(
        input_lengths=prompt, output_lengths=LengthDistribution.fixed(200), num_requests=20
    )


def test_the_floor_is_the_shortest_requests_and_a_limit_above_it_passes() -> None:
    deployment = _deployment(InferencePlan(tp=1, precision="fp8"))
    spread = _workload(LengthDistribution.uniform(100, 900))
    with pytest.raises(UserInputError, match="one request of 100 prompt and 200 output tokens alone"):
        check_slo_reachable(deployment, spread, ServiceLevel(ttft_s=1e-9), source="--slo")
    fixed = check_slo_reachable(
        deployment, _workload(LengthDistribution.fixed(500)), ServiceLevel(ttft_s=10.0)
    )
    shortest = check_slo_reachable(deployment, spread, ServiceLevel(ttft_s=10.0))
    assert (shortest.input_tokens, fixed.input_tokens) == (100, 500)
    assert shortest.ttft_s < fixed.ttft_s  # a shorter prompt prefills sooner


def test_under_speculation_only_the_ttft_limit_is_checked() -> None:
    # a request's TPOT under speculation depends on its drafts' acceptance draws: one request alone
    # is not a floor for every request, so a TPOT limit is left to the search
    plan = InferencePlan(tp=1, precision="fp8", speculative=SpeculativeDecoding(3, 0.8))
    deployment = _deployment(plan)
    workload = _workload(LengthDistribution.fixed(500))
    floor = check_slo_reachable(deployment, workload, ServiceLevel(tpot_s=1e-6))
    assert floor.tpot_s > 1e-6
    with pytest.raises(UserInputError, match="unloaded TTFT of"):
        check_slo_reachable(deployment, workload, ServiceLevel(ttft_s=1e-9, tpot_s=1e-6))


def test_a_rate_search_checks_the_floor_only_when_asked() -> None:
    # search infer ranks finalists with max_rate_at_slo: one that misses the SLO ranks at 0 and the
    # ranking goes on; simulate asks for the refusal (check_floor=True)
    deployment = _deployment(InferencePlan(tp=1, precision="fp8"))
    workload = _workload(LengthDistribution.fixed(100))
    slo = ServiceLevel(ttft_s=1e-9)
    with pytest.raises(UserInputError, match="the SLO ttft=1ns is under"):
        max_rate_at_slo(deployment, workload=workload, slo=slo, steady=False, check_floor=True)
    searched = max_rate_at_slo(deployment, workload=workload, slo=slo, steady=False)
    assert searched.max_rate_per_s == 0.0
    assert searched.probes  # it searched


# --- 2. lengths of no tokens ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flag", "spec", "fragments"),
    [
        (
            "--isl-dist",
            "uniform:0-100",
            ("a length of 0 tokens", "at least 1 input token", "write uniform:1-100"),
        ),
        (
            "--osl-dist",
            "uniform:0-100",
            ("a length of 0 tokens", "at least 1 output token", "write uniform:1-100"),
        ),
        (
            "--isl-dist",
            "uniform:0-0",
            ("a length of 0 tokens", "at least 1 input token", "write uniform:1-1"),
        ),
        ("--isl-dist", "uniform:1-0", ("a length of 0 tokens", "write uniform:1-1")),
        ("--osl-dist", "uniform:-5-10", ("a length of -5 tokens", "at least 1 output token", "uniform:1-10")),
        ("--isl-dist", "lognormal:20:0-900", ("a length of 0 tokens", "write lognormal:20:1-900")),
        (
            "--isl-dist",
            "lognormal:0",
            ("a spread (STD) of 0 tokens is no spread", "write fixed", "at --isl,"),
        ),
        ("--osl-dist", "lognormal:0:1-9", ("a spread (STD) of 0 tokens", "at --osl,")),
        ("--isl-dist", "lognormal:-1", ("a spread (STD) of -1 tokens", "above 0 tokens", "lognormal:1")),
        ("--isl-dist", "file:", ("'file:' names no file", "file:PATH", "--isl-dist file:lengths.txt")),
        ("--osl-dist", "file::output", ("names no file", "--osl-dist file:lengths.txt")),
    ],
)
def test_a_length_of_no_tokens_says_what_is_wrong(
    run_cli, flag: str, spec: str, fragments: tuple[str, ...]
) -> None:  # type: ignore[no-untyped-def]
    line = one_line_error(run_cli(*SIMULATE[:-4], flag, spec, "--requests", "5"), flag, *fragments)
    assert "write fixed, uniform:MIN-MAX" not in line  # not the generic line


def test_equal_uniform_bounds_run_as_that_one_length(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(*SIMULATE[:-4], "--isl-dist", "uniform:5-5", "--osl", "3", "--requests", "5", "--json")
    assert result.code == 0, result.err
    prompts = json.loads(result.out)["workload"]["input_lengths"]
    assert (prompts["kind"], prompts["minimum_tokens"], prompts["maximum_tokens"]) == ("uniform", 5, 5)
    assert prompts["mean_tokens"] == 5.0
