"""Each scheduler feature of the simulator does what it models (issue 27, point 1)."""

from __future__ import annotations

import numpy as np
import pytest

from lightspeed.catalog import Catalog
from lightspeed.errors import InvalidPlanError, UserInputError
from lightspeed.sol.infer.estimate import estimate_inference
from lightspeed.sol.infer.plan import InferencePlan, ServingLoad, SpeculativeDecoding
from lightspeed.sol.serve import (
    AcceptanceProcess,
    ArrivalProcess,
    LengthDistribution,
    SchedulerConfig,
    ServiceLevel,
    ServingWorkload,
    SimulationResult,
    generate_requests,
    simulate,
    simulate_deployment,
    simulated_deployment,
)
from lightspeed.sol.serve.engine import Engine
from lightspeed.sol.serve.workload import Requests
from lightspeed.workload import ModelRegistry

H100 = "dgx-h100"


def _workload(
    arrivals: ArrivalProcess, isl: int, osl: int, count: int, prefix_hit_rate: float = 0.0
) -> ServingWorkload:
    return ServingWorkload(
        arrivals=arrivals,
        input_lengths=LengthDistribution.fixed(isl),
        output_lengths=LengthDistribution.fixed(osl),
        num_requests=count,
        prefix_hit_rate=prefix_hit_rate,
    )


QUIET = ArrivalProcess.poisson(0.001)  # requests never overlap


def test_vllm_allocates_the_kv_cache_on_demand_and_tensorrt_llm_reserves_it(
    catalog: Catalog, models: ModelRegistry
) -> None:
    """vLLM (V0 block manager, V1 allocate_slots) takes blocks as sequences grow and preempts the
    last admitted when they run out; TensorRT-LLM's GUARANTEED_NO_EVICT holds each request's
    prompt and output from admission. The same load as the test below: under vllm-2025 it
    preempts, under trtllm-2025 it never does, and --kv-policy overrides the profile."""
    model, cluster = models.get("llama-3-70b"), catalog.cluster(H100)
    plan = InferencePlan(tp=2, precision="fp8")
    workload = _workload(ArrivalProcess.offline(), 2000, 2000, 300)

    def run(serving: str, scheduler: SchedulerConfig | None = None) -> SimulationResult:
        return simulate(
            model=model,
            cluster=cluster,
            plan=plan,
            workload=workload,
            serving=serving,
            scheduler=scheduler,
            num_gpus=2,
        )

    vllm, trtllm = run("vllm-2025"), run("trtllm-2025")
    assert vllm.num_preemptions > 0
    assert trtllm.num_preemptions == 0
    assert "on-demand allocation, preemption by recompute" in " ".join(vllm.assumptions)
    assert "reserve allocation" in " ".join(trtllm.assumptions)
    assert run("vllm-2025", SchedulerConfig(kv_policy="reserve")).num_preemptions == 0


def test_preemption_happens_only_when_the_kv_cache_runs_short(
    catalog: Catalog, models: ModelRegistry
) -> None:
    """Llama 3 70B on 2 H100s holds ~118 requests of 4,000 tokens. Allocating on demand admits
    more and must preempt as they grow; reserving the whole request up front never does."""
    model, cluster = models.get("llama-3-70b"), catalog.cluster(H100)
    plan = InferencePlan(tp=2, precision="fp8")
    workload = _workload(ArrivalProcess.offline(), 2000, 2000, 300)
    reserve = simulate(model=model, cluster=cluster, plan=plan, workload=workload, num_gpus=2)
    recompute = simulate(
        model=model,
        cluster=cluster,
        plan=plan,
        workload=workload,
        scheduler=SchedulerConfig(kv_policy="on-demand", preemption="recompute"),
        num_gpus=2,
    )
    swap = simulate(
        model=model,
        cluster=cluster,
        plan=plan,
        workload=workload,
        scheduler=SchedulerConfig(kv_policy="on-demand", preemption="swap"),
        num_gpus=2,
    )
    assert reserve.num_preemptions == 0
    assert recompute.num_preemptions > 0
    assert recompute.num_swaps == 0
    assert swap.num_preemptions > 0
    assert swap.num_swaps == swap.num_preemptions
    assert reserve.max_kv_use <= 1.0
    assert recompute.max_kv_use <= 1.0
    assert recompute.max_running > reserve.max_running
    for result in (reserve, recompute, swap):
        assert result.num_completed == 300


def test_swap_is_costed_over_the_host_link(catalog: Catalog, models: ModelRegistry) -> None:
    """Llama 3 70B keeps 80 layers x 8 KV heads x 128 x 2 (K and V) fp8 values per token: 163,840
    bytes; on tp=2 each GPU holds half, and an H100 SXM reaches the host over PCIe 5 x16
    (64 GB/s each way)."""
    deployment = simulated_deployment(
        model=models.get("llama-3-70b"),
        cluster=catalog.cluster(H100),
        plan=InferencePlan(tp=2, precision="fp8"),
        scheduler=SchedulerConfig(kv_policy="on-demand", preemption="swap"),
    )
    assert deployment.kv_bytes_per_token_per_gpu == pytest.approx(80 * 8 * 128 * 2 / 2)
    assert deployment.swap_s(4000.0) == pytest.approx(4000 * 81920 / 64e9, rel=0.02)


def test_prefix_cache_hits_cut_the_prefill(catalog: Catalog, models: ModelRegistry) -> None:
    model, cluster = models.get("llama-3-8b"), catalog.cluster(H100)
    plan = InferencePlan(tp=1, precision="fp8")
    cold = simulate(model=model, cluster=cluster, plan=plan, workload=_workload(QUIET, 4000, 20, 10))
    warm = simulate(
        model=model, cluster=cluster, plan=plan, workload=_workload(QUIET, 4000, 20, 10, prefix_hit_rate=0.75)
    )
    # a quarter of the prompt runs, attending to the cached three quarters: well under half the time
    assert warm.ttft.p50_s < 0.5 * cold.ttft.p50_s
    assert warm.tpot.p50_s == pytest.approx(cold.tpot.p50_s, rel=0.01)  # decoding is unchanged


def test_disaggregation_adds_the_kv_transfer(catalog: Catalog, models: ModelRegistry) -> None:
    """One prefill and one decode replica of tp=4 on one DGX H100: each prompt's cache (163,840 bytes
    per token over 4 GPUs) crosses NVLink at the fabric's per-GPU bandwidth before the first token
    (Llama 3 70B has no local attention layers: every token of the prompt is held)."""
    model, cluster = models.get("llama-3-70b"), catalog.cluster(H100)
    colocated = simulate(
        model=model,
        cluster=cluster,
        plan=InferencePlan(tp=4, precision="fp8"),
        workload=_workload(QUIET, 8000, 20, 5),
        num_gpus=4,
    )
    deployment = simulated_deployment(
        model=model, cluster=cluster, plan=InferencePlan(tp=4, precision="fp8", disaggregated=(1, 1))
    )
    split = simulate(
        model=model,
        cluster=cluster,
        plan=InferencePlan(tp=4, precision="fp8", disaggregated=(1, 1)),
        workload=_workload(QUIET, 8000, 20, 5),
    )
    fabric = deployment.hardware.hardware.fabric
    up = fabric.scale_up
    # bytes over the link, the link's latency, and NCCL's base latency of one collective call
    transfer = (
        8000 * 163840 / 4 / (up.bandwidth_per_gpu_bytes_per_s * fabric.bandwidth_efficiency)
        + up.latency_s
        + fabric.base_latency_s
    )
    assert float(deployment.kv_transfer_s(8000)) == pytest.approx(transfer, rel=1e-6)
    # to a tenth of the transfer (about 1 ms of a 420 ms TTFT): it reaches the user before the first
    # token, and the decode steps after it are the colocated ones (the simulator once put it there)
    assert split.ttft.p50_s == pytest.approx(colocated.ttft.p50_s + transfer, abs=transfer / 10)
    assert split.tpot.p50_s == pytest.approx(colocated.tpot.p50_s, abs=transfer / 20 / 10)


def test_speculation_with_no_acceptance_costs_more_than_none(catalog: Catalog, models: ModelRegistry) -> None:
    model, cluster = models.get("llama-3-70b"), catalog.cluster(H100)
    workload = _workload(ArrivalProcess.closed(8), 1000, 200, 64)

    def tpot(speculative: SpeculativeDecoding | None) -> float:
        plan = InferencePlan(tp=8, precision="fp8", speculative=speculative)
        return simulate(model=model, cluster=cluster, plan=plan, workload=workload).tpot.mean_s

    plain = tpot(None)
    assert tpot(SpeculativeDecoding(3, 0.0)) > plain  # verifies 4 tokens and drafts 3 to keep 1
    # ~2.95 tokens per pass, each pass verifying 4 tokens per sequence and drafting 3
    assert tpot(SpeculativeDecoding(3, 0.8)) < plain / 1.5


def test_a_draft_step_costs_its_fraction_of_a_whole_decode_step(
    catalog: Catalog, models: ModelRegistry
) -> None:
    """One request at a time, 5 drafts each as costly as a decode step (--draft-cost 1), acceptance
    0.5 per position: a pass yields E = (1 - 0.5^6) / (1 - 0.5) = 1.96875 tokens for a verify step
    (6 query tokens, weight-bound like a plain step D at batch 1) and 5 x D of drafting, so TPOT =
    6 D / E within the verify step's few extra tokens. The simulator priced a draft step without
    the kernels' fixed time (0.73 D: TPOT 9.77 ms where the analytic model, and this, say 12.6)."""
    model, cluster = models.get("llama-3-8b"), catalog.cluster(H100)
    workload = _workload(QUIET, 500, 200, 20)

    def tpot(speculative: SpeculativeDecoding | None) -> float:
        plan = InferencePlan(tp=1, precision="fp8", speculative=speculative)
        return simulate(model=model, cluster=cluster, plan=plan, workload=workload, num_gpus=1).tpot.mean_s

    step = tpot(None)
    expected_tokens = (1 - 0.5**6) / (1 - 0.5)
    assert tpot(SpeculativeDecoding(5, 0.5, draft_cost_fraction=1.0)) == pytest.approx(
        6 * step / expected_tokens, rel=0.03
    )


def test_acceptance_per_draft_position() -> None:
    """Position j is kept with acceptance[j] given the ones before it: a pass yields 1 + A tokens,
    P(A >= 1) = 0.8, P(A >= 2) = 0.8 x 0.5, P(A >= 3) = 0.8 x 0.5 x 0.25."""
    process = AcceptanceProcess(acceptance=(0.8, 0.5, 0.25))
    assert process.yield_probabilities.tolist() == pytest.approx([0.2, 0.4, 0.3, 0.1])
    assert process.expected_tokens_per_pass == pytest.approx(1 + 0.8 + 0.4 + 0.1)
    from lightspeed.sol.serve.speculation import verify_passes

    passes = verify_passes(process, np.full(4000, 2300), np.random.default_rng(1))
    assert passes.mean() == pytest.approx(2300 / 2.3, rel=0.01)
    assert passes.std() > 0  # each sequence draws its own


def test_router_policies(catalog: Catalog, models: ModelRegistry) -> None:
    model, cluster = models.get("llama-3-8b"), catalog.cluster(H100)
    requests = generate_requests(_workload(ArrivalProcess.poisson(50.0), 200, 50, 400), seed=2)

    def placement(router: str) -> list[int]:
        deployment = simulated_deployment(
            model=model,
            cluster=cluster,
            plan=InferencePlan(tp=1, replicas=4, precision="fp8"),
            scheduler=SchedulerConfig(router=router),
        )
        engine = Engine(deployment, requests, seed=0)
        engine.run()
        return engine.replica_of

    assert placement("round-robin") == [index % 4 for index in range(400)]
    least = placement("least-loaded")
    assert least != [index % 4 for index in range(400)]
    assert sorted(np.bincount(least).tolist())[0] > 60  # every replica gets a fair share


def test_caps_bound_the_batch(catalog: Catalog, models: ModelRegistry) -> None:
    result = simulate(
        model=models.get("llama-3-8b"),
        cluster=catalog.cluster(H100),
        plan=InferencePlan(tp=1, precision="fp8"),
        workload=_workload(ArrivalProcess.offline(), 300, 100, 100),
        scheduler=SchedulerConfig(max_sequences_per_rank=12, max_batched_tokens_per_rank=512),
    )
    assert result.max_running == 12
    prompt = result.outcome.iteration_prefill_tokens
    assert prompt.max() <= 512


def test_chunked_prefill_spreads_a_long_prompt(catalog: Catalog, models: ModelRegistry) -> None:
    """A 20,000-token prompt with a 4,096-token budget runs in 5 iterations (4 x 4,096 + 3,616)."""
    result = simulate(
        model=models.get("llama-3-8b"),
        cluster=catalog.cluster(H100),
        plan=InferencePlan(tp=1, precision="fp8"),
        workload=_workload(QUIET, 20000, 2, 1),
        scheduler=SchedulerConfig(max_batched_tokens_per_rank=4096),
    )
    chunks = result.outcome.iteration_prefill_tokens
    assert chunks[:5].tolist() == [4096, 4096, 4096, 4096, 3616]
    assert result.ttft.p50_s == pytest.approx(result.outcome.iteration_s[:5].sum())


def test_attention_ranks_run_at_the_busiest_ranks_pace(catalog: Catalog, models: ModelRegistry) -> None:
    """With 8 attention ranks, a prompt on one rank slows the whole iteration (Poisson arrivals:
    prompts land one at a time); the router spreads requests so every rank holds its share."""
    result = simulate(
        model=models.get("deepseek-v3"),
        cluster=catalog.cluster("dgx-h200"),
        plan=InferencePlan(tp=1, dp_attention=8, ep=8, precision="fp8"),
        workload=_workload(ArrivalProcess.poisson(5.0), 1000, 100, 256),
    )
    outcome = result.outcome
    prompt = outcome.iteration_prefill_tokens
    one_prompt = outcome.iteration_s[(prompt > 0) & (prompt <= 1000)]  # one rank prefills, 7 decode
    per_step = (outcome.iteration_s / outcome.iteration_steps)[prompt == 0]
    assert one_prompt.size > 20
    assert np.median(one_prompt) > 1.3 * np.median(per_step)
    assert result.attention_dp_balance < 1.0


def test_attention_dp_balance_is_the_ranks_mean_tokens_over_the_busiest(
    catalog: Catalog, models: ModelRegistry
) -> None:
    """TensorRT-LLM's balance ratio by hand: eight one-token requests sent at the same instant,
    routed one per rank, meet in one iteration: a 1,000-token prompt on rank 0 and seven 10-token
    prompts elsewhere hold 133.75 tokens per rank on average against the busiest's 1,000
    (0.13375), and perfect balance would make that iteration faster, by less than 1 / 0.13375 =
    7.48x (priced by the iteration cost since round 15; the exact ratio is pinned in
    test_r15_h_simulator.py). Eight
    equal prompts are balanced, and a run without attention DP is by definition."""
    deployment = simulated_deployment(
        model=models.get("deepseek-v3"),
        cluster=catalog.cluster("dgx-h200"),
        plan=InferencePlan(tp=1, dp_attention=8, ep=8, precision="fp8"),
        scheduler=SchedulerConfig(router="round-robin"),
    )

    def run(inputs: list[int]) -> SimulationResult:
        requests = Requests(
            arrival_s=np.zeros(8),
            input_tokens=np.asarray(inputs),
            output_tokens=np.ones(8, dtype=np.int64),
            cached_tokens=np.zeros(8),
            concurrency=None,
        )
        workload = _workload(ArrivalProcess.offline(), 1000, 1, 8)
        return simulate_deployment(deployment, workload, requests=requests)

    uneven = run([1000] + [10] * 7)
    assert list(uneven.outcome.iteration_prefill_tokens) == [1070.0]
    assert uneven.attention_dp_balance == pytest.approx(133.75 / 1000)
    assert 1.0 < uneven.attention_dp_balanced_speedup < 1000 / 133.75
    even = run([1000] * 8)
    assert (even.num_iterations, even.attention_dp_balance, even.attention_dp_balanced_speedup) == (
        1,
        1.0,
        1.0,
    )
    one_rank = simulate_deployment(
        simulated_deployment(
            model=models.get("llama-3-8b"), cluster=catalog.cluster(H100), plan=InferencePlan(tp=1)
        ),
        _workload(ArrivalProcess.closed(4), 200, 20, 16),
    )
    assert (one_rank.attention_dp_balance, one_rank.attention_dp_balanced_speedup) == (1.0, 1.0)


def test_slo_goodput_counts_requests_within_both_limits(catalog: Catalog, models: ModelRegistry) -> None:
    model, cluster = models.get("llama-3-8b"), catalog.cluster(H100)
    plan = InferencePlan(tp=1, precision="fp8")
    workload = _workload(ArrivalProcess.poisson(30.0), 1000, 100, 600)
    loose = simulate(
        model=model, cluster=cluster, plan=plan, workload=workload, slo=ServiceLevel(ttft_s=10.0, tpot_s=1.0)
    )
    assert loose.slo is not None
    assert loose.slo.attainment == 1.0
    assert loose.slo.meets
    tight_ttft = loose.ttft.p50_s  # half the requests miss it
    tight = simulate(
        model=model, cluster=cluster, plan=plan, workload=workload, slo=ServiceLevel(ttft_s=tight_ttft)
    )
    assert tight.slo is not None
    assert tight.slo.attainment == pytest.approx(0.5, abs=0.01)
    assert not tight.slo.meets
    # DistServe goodput: the good share of the rate the requests arrived at (the deployment keeps up)
    arrival = generate_requests(workload, seed=0).arrival_s
    rate = (arrival.size - 1) / (arrival[-1] - arrival[0])
    assert tight.slo.goodput_requests_per_s == pytest.approx(rate * tight.slo.attainment, rel=1e-9)


def test_a_request_that_can_never_fit_is_refused(catalog: Catalog, models: ModelRegistry) -> None:
    with pytest.raises(InvalidPlanError, match="does not fit the KV cache of one rank"):
        simulate(
            model=models.get("llama-3-70b"),
            cluster=catalog.cluster(H100),
            plan=InferencePlan(tp=2, precision="fp8"),
            workload=_workload(QUIET, 500_000, 10, 1),
            num_gpus=2,
        )


def test_bad_scheduler_settings_are_refused() -> None:
    with pytest.raises(UserInputError, match="router"):
        SchedulerConfig(router="random")
    with pytest.raises(UserInputError, match="max sequences"):
        SchedulerConfig(max_sequences_per_rank=0)
    with pytest.raises(UserInputError, match="SLO needs"):
        ServiceLevel()


def test_local_attention_layers_admit_as_many_long_prompts_as_the_analytic_model(
    catalog: Catalog, models: ModelRegistry
) -> None:
    """Gemma 3 27B keeps 1,024 tokens on 52 of its 62 layers: a 32,768-token prompt holds far
    less than 32,768 tokens of every layer, and one H100 runs as many of them at once as the
    analytic engine's KV-cache-limited batch (not the one a full-attention count would fit)."""
    model, cluster = models.get("gemma-3-27b"), catalog.cluster(H100, num_accelerators=1)
    plan = InferencePlan(tp=1, precision="bf16")
    analytic = estimate_inference(
        model=model, cluster=cluster, plan=plan, load=ServingLoad(32768, 64), batching="continuous"
    )
    result = simulate(
        model=model,
        cluster=cluster,
        plan=plan,
        workload=ServingWorkload(
            ArrivalProcess.offline(), LengthDistribution.fixed(32768), LengthDistribution.fixed(64), 40
        ),
    )
    assert analytic.max_batch >= 4  # so the check below means something
    assert result.max_running == analytic.max_batch
