"""MLPerf LLM scenarios as data, and SLO capacity search."""

from __future__ import annotations

import numpy as np
import pytest

from lightspeed.catalog import Catalog
from lightspeed.errors import UnknownNameError, UserInputError
from lightspeed.sol.infer.plan import InferencePlan
from lightspeed.sol.serve import LengthDistribution, ServiceLevel, ServingWorkload, simulated_deployment
from lightspeed.sol.serve.capacity_at_slo import load_sweep, max_rate_at_slo
from lightspeed.sol.serve.mlperf_inference import (
    find_mlperf_workload,
    load_mlperf_workload,
    load_mlperf_workloads,
)
from lightspeed.sol.serve.run_metrics import LatencyStats, slo_result
from lightspeed.workload import ModelRegistry


def test_llama2_70b_limits_and_lengths_match_mlcommons() -> None:
    """loadgen/mlperf.conf: llama2-70b Server TTFT 2,000 ms and TPOT 200 ms, interactive 450 / 40 ms,
    24,576 samples; the reference README's 294.45 tokens per sample."""
    workload = load_mlperf_workload("llama2-70b")
    assert workload.num_samples == 24576
    assert (workload.server_slo.ttft_s, workload.server_slo.tpot_s) == (2.0, 0.2)
    assert workload.interactive_slo is not None
    assert (workload.interactive_slo.ttft_s, workload.interactive_slo.tpot_s) == (0.45, 0.04)
    assert workload.server_slo.attainment == 0.99  # target_latency_percentile = 99
    assert workload.server_slo.per_limit
    assert workload.interactive_slo.per_limit
    prompt, output = workload.lengths()
    assert output is not None
    assert output.mean_tokens == pytest.approx(294.45, abs=0.5)
    assert prompt is not None
    # the 24,576 samples' tok_input_length (openshift-psap's summary of the MLCommons pickle):
    # mean 222.33, sd 171.50, 48 to 1,021 tokens (processorca keeps prompts under 1,024)
    assert (prompt.kind, prompt.mean_tokens, prompt.std_tokens) == ("lognormal", 222.33, 171.50)
    assert (prompt.minimum_tokens, prompt.maximum_tokens) == (48, 1021)


def test_405b_lengths_match_the_readme_and_the_dataset() -> None:
    """language/llama3.1-405b README: 684.68 tokens per sample, which the dataset summary's
    output mean (684.7) matches; prompts average 9,428.6 tokens."""
    prompt, output = load_mlperf_workload("llama3.1-405b").lengths()
    assert prompt is not None
    assert output is not None
    assert output.mean_tokens == 684.68
    assert prompt.mean_tokens == 9428.6


def test_every_workload_cites_its_sources() -> None:
    for workload in load_mlperf_workloads().values():
        assert "loadgen-conf" in workload.sources
        if workload.output_mean_tokens is not None:
            assert len(workload.sources) >= 3


def test_workloads_are_found_by_name_and_in_text() -> None:
    assert load_mlperf_workload("Mixtral").name == "mixtral-8x7b"
    found = find_mlperf_workload("MLPerf Inference v4.1 Llama 2 70B Server")
    assert found is not None
    assert found.name == "llama2-70b"
    with pytest.raises(UnknownNameError):
        load_mlperf_workload("gpt-5")


def test_scenarios_need_what_they_need() -> None:
    workload = load_mlperf_workload("llama2-70b")
    assert workload.workload("offline").arrivals.kind == "offline"
    assert workload.workload("server", rate_per_s=3.0).arrivals.rate_per_s == 3.0
    with pytest.raises(UserInputError, match="arrival rate"):
        workload.workload("server")
    with pytest.raises(UserInputError, match="no output lengths"):
        load_mlperf_workload("llama3_1-8b").workload("offline")
    with pytest.raises(UserInputError, match="no Interactive"):
        load_mlperf_workload("mixtral").slo("interactive")


def test_capacity_is_the_highest_rate_that_meets_the_slo(catalog: Catalog, models: ModelRegistry) -> None:
    deployment = simulated_deployment(
        model=models.get("llama-3-8b"),
        cluster=catalog.cluster("dgx-h100"),
        plan=InferencePlan(tp=1, precision="fp8"),
    )
    workload = ServingWorkload(
        input_lengths=LengthDistribution.fixed(1000),
        output_lengths=LengthDistribution.fixed(100),
        num_requests=400,
    )
    loose = max_rate_at_slo(deployment, workload=workload, slo=ServiceLevel(ttft_s=1.0, tpot_s=0.03))
    tight = max_rate_at_slo(deployment, workload=workload, slo=ServiceLevel(ttft_s=0.2, tpot_s=0.012))
    assert 0.0 < tight.max_rate_per_s < loose.max_rate_per_s < loose.saturation_rate_per_s
    # a rate sustained meets the SLO and settled (a probe that met it while falling behind is not)
    meeting = [probe.rate_per_s for probe in loose.probes if probe.sustained]
    missing = [probe.rate_per_s for probe in loose.probes if not probe.sustained]
    assert max(meeting) == loose.max_rate_per_s
    assert not missing or min(missing) > loose.max_rate_per_s
    assert loose.goodput_requests_per_s_per_gpu == pytest.approx(loose.goodput_requests_per_s)  # one GPU
    # DistServe's goodput: the highest rate times the share within the SLO there (not the probe's
    # completions per second, which the run's final drain lowers)
    best = next(probe for probe in loose.probes if probe.rate_per_s == loose.max_rate_per_s)
    # the found run's own goodput: its share of the rate its arrivals came at (it settled: served = offered)
    assert loose.goodput_requests_per_s == pytest.approx(loose.offered_requests_per_s * best.attainment)
    assert loose.goodput_requests_per_s > 0.9 * loose.max_rate_per_s  # the SLO's 90% is met there
    assert tight.limited_by == "slo"  # a probe missed it: a latency limit binds
    # limits no run misses: every probe meets them up to the saturation rate, and what bounds the
    # rate is settling (the capacity says so rather than naming the SLO): the highest probe whose
    # run settled, below the saturation rate (the probes above it met the limits while their queue
    # still grew, which is not a rate sustained)
    none = max_rate_at_slo(deployment, workload=workload, slo=ServiceLevel(ttft_s=100.0, tpot_s=10.0))
    assert none.limited_by == "settling"
    assert all(probe.meets for probe in none.probes)
    assert none.max_rate_per_s == max(probe.rate_per_s for probe in none.probes if probe.sustained)
    assert none.max_rate_per_s < none.saturation_rate_per_s


def test_load_sweep_latency_grows_with_load(catalog: Catalog, models: ModelRegistry) -> None:
    deployment = simulated_deployment(
        model=models.get("llama-3-8b"),
        cluster=catalog.cluster("dgx-h100"),
        plan=InferencePlan(tp=1, precision="fp8"),
    )
    workload = ServingWorkload(
        input_lengths=LengthDistribution.fixed(1000),
        output_lengths=LengthDistribution.fixed(100),
        num_requests=300,
    )
    points = load_sweep(deployment, workload=workload, rates=(2.0, 20.0, 60.0))
    assert [point.rate_per_s for point in points] == [2.0, 20.0, 60.0]
    assert points[0].ttft_p99_s < points[-1].ttft_p99_s
    assert points[0].tpot_p50_s < points[-1].tpot_p50_s


def test_mixtral_draws_the_datasets_own_lengths() -> None:
    # openshift-psap's summary of MLCommons' 15,000 Mixtral samples (tok_input_len, tok_ref_output_len):
    # prompts mean 427.39 (sd 328.62, 35 to 1,948), outputs mean 144.84 (sd 112.71, 2 to 1,024); the
    # outputs' mean is the README's accuracy target, tokens_per_sample 144.84
    workload = load_mlperf_workload("mixtral")
    assert workload.input_mean_tokens == pytest.approx(427.39)
    assert workload.output_mean_tokens == pytest.approx(144.84)
    offline = workload.workload("offline")
    assert offline.num_requests == 15000
    assert offline.input_lengths.maximum_tokens == 1948
    assert offline.output_lengths.maximum_tokens == 1024


def test_loadgen_checks_each_percentile_on_its_own() -> None:
    """LoadGen's rule (mlperf.conf's target_latency_percentile: the TTFT and the TPOT 99th
    percentiles each within its limit), not DistServe's share of requests within both: 1,000
    requests of which 10 miss the TTFT limit and 8 others the TPOT limit meet each limit at 99.0%
    and 99.2% but both at 98.2%."""
    ttft = np.full(1000, 0.1)
    tpot = np.full(1000, 0.01)
    ttft[:10] = 3.0  # over 2 s
    tpot[10:18] = 0.3  # over 200 ms, other requests
    scored = {
        per_limit: slo_result(
            ServiceLevel(ttft_s=2.0, tpot_s=0.2, attainment=0.99, per_limit=per_limit),
            ttft_s=ttft,
            tpot_s=tpot,
            ttft=LatencyStats.of(ttft),
            tpot=LatencyStats.of(tpot),
            requests_per_s=10.0,
            num_gpus=8,
        )
        for per_limit in (False, True)
    }
    assert scored[True].attainment == scored[False].attainment == pytest.approx(0.982)
    assert (scored[True].ttft_attainment, scored[True].tpot_attainment) == (0.99, 0.992)
    assert scored[True].meets
    assert not scored[False].meets
    assert scored[True].p99_meets  # the 99th percentiles: 0.1 s and 0.01 s
