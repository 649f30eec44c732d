"""Serving steady state: TTFT, TPOT, throughput, KV-limited batch, queues, speculation, pools."""

from __future__ import annotations

import dataclasses
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lightspeed.catalog import Catalog
from lightspeed.errors import InvalidPlanError
from lightspeed.sol import (
    InferenceEstimate,
    InferencePlan,
    ServingLoad,
    SpeculativeDecoding,
    default_efficiency,
    estimate_inference,
    load_serving_stack,
)
from lightspeed.sol.infer.inference_hardware import load_inference_parameters
from lightspeed.workload import ModelRegistry, kv_cache_bytes_per_token, parameter_counts

H100_USABLE = 81559 * 2**20  # bytes: nvidia-smi memory.total of an H100 SXM 80GB (81,559 MiB)
H100_BANDWIDTH = 3.35e12  # B/s
A100_FP16 = 312e12  # dense FLOP/s, A100 datasheet


def _estimate(
    models: ModelRegistry,
    catalog: Catalog,
    name: str,
    system: str,
    plan: InferencePlan,
    *,
    load: ServingLoad,
    **kw,
):  # type: ignore[no-untyped-def]
    return estimate_inference(
        model=models.get(name),
        cluster=catalog.resolve_cluster(system, plan.num_gpus),
        plan=plan,
        load=load,
        **kw,
    )


def _llama_3_8b_fp8_on_h100(models: ModelRegistry, catalog: Catalog, load: ServingLoad) -> InferenceEstimate:
    estimate: InferenceEstimate = _estimate(
        models, catalog, "llama-3-8b", "dgx-h100", InferencePlan(precision="fp8"), load=load
    )
    return estimate


def test_kv_limited_batch_matches_a_hand_count(models: ModelRegistry, catalog: Catalog) -> None:
    model = models.get("llama-3-8b")
    plan = InferencePlan(precision="fp8")
    estimate = _estimate(models, catalog, "llama-3-8b", "dgx-h100", plan, load=ServingLoad(1000, 1000))
    counts = parameter_counts(model)
    # Linears in FP8 (1 byte), embedding table and LM head in bf16 (2 bytes).
    tables = counts.embedding_params + counts.lm_head_params
    weights = (counts.total_params - tables) * 1.0 + tables * 2.0
    assert estimate.memory_bytes["weights"] == pytest.approx(weights, rel=0.002)
    free = H100_USABLE - weights - estimate.memory_bytes["workspace"] - estimate.memory_bytes["reserved"]
    per_request = 2000 * kv_cache_bytes_per_token(model, "fp8")
    fraction = load_inference_parameters().kv_cache_memory_fraction
    assert abs(estimate.max_batch - math.floor(free * fraction / per_request)) <= 1
    assert estimate.batch_per_replica == estimate.max_batch  # offline: the KV limit


def test_single_request_decode_reads_the_weights_per_token(models: ModelRegistry, catalog: Catalog) -> None:
    # One user, short prompt: TPOT is the time to stream the bf16 weights once (16.06 GB incl. embeddings
    # that decode never reads, so compare with the linears + LM head only: ~15.0 GB), plus the fixed
    # GPU time of the 32 x 14 kernels of the layers (2.5 us each, runtime.toml [launch]).
    estimate = _estimate(
        models, catalog, "llama-3-8b", "dgx-h100", InferencePlan(), load=ServingLoad(16, 128, concurrency=1)
    )
    stream = H100_BANDWIDTH * load_inference_parameters().stream_memory_efficiency
    per_layer = 4096 * 48 * 128 + 4096 * 4096 + 3 * 4096 * 14336
    linear_bytes = 2.0 * (32 * per_layer + 4096 * 128256)
    kernels_s = 32 * 14 * 2.5e-6
    assert estimate.tpot_s == pytest.approx(linear_bytes / stream + kernels_s, rel=0.03)
    assert estimate.output_tokens_per_s_per_user == pytest.approx(1 / estimate.tpot_s)


def test_first_token_of_one_prompt_is_its_prefill(models: ModelRegistry, catalog: Catalog) -> None:
    # LLaMA 7B fp16 on one A100, 2,048-token prompt: 2 x 6.74e9 params x 2048 tokens plus causal
    # attention 2 x 2 x 32 layers x 2048^2 / 2 x 4096, at the Ampere GEMM ceiling (MAMF: 0.869 of
    # 312 TF) sustained at the serving stack's share of it.
    flop = 2 * 6.74e9 * 2048 + 2 * 2 * 32 * 2048**2 / 2 * 4096
    sustained = (
        default_efficiency("nvidia-ampere").gemm_max_efficiency * load_serving_stack().kernel_efficiency
    )
    estimate = _estimate(
        models,
        catalog,
        "llama-7b",
        "dgx-a100",
        InferencePlan(precision="fp16"),
        load=ServingLoad(2048, 1, concurrency=1),
    )
    assert estimate.ttft_s == pytest.approx(flop / (A100_FP16 * sustained), rel=0.15)


def test_more_users_raise_throughput_and_per_token_latency(models: ModelRegistry, catalog: Catalog) -> None:
    plan = InferencePlan(tp=2, precision="fp8")
    low, high = (
        _estimate(
            models, catalog, "llama-3-70b", "dgx-h100", plan, load=ServingLoad(1000, 1000, concurrency=c)
        )
        for c in (4, 64)
    )
    assert high.output_tokens_per_s > 5 * low.output_tokens_per_s
    assert high.tpot_s > low.tpot_s
    assert high.requests_per_s * 1000 == pytest.approx(high.output_tokens_per_s)


def test_requests_beyond_the_kv_limit_wait_for_a_slot(models: ModelRegistry, catalog: Catalog) -> None:
    plan = InferencePlan(precision="fp8")
    at_limit = _estimate(models, catalog, "llama-3-8b", "dgx-h100", plan, load=ServingLoad(1000, 1000))
    crowded = _estimate(
        models,
        catalog,
        "llama-3-8b",
        "dgx-h100",
        plan,
        load=ServingLoad(1000, 1000, concurrency=2 * at_limit.max_batch),
    )
    assert crowded.output_tokens_per_s == pytest.approx(at_limit.output_tokens_per_s, rel=1e-6)
    # Little's law: max_batch extra requests wait while slots free up at the request rate.
    assert crowded.ttft_s - at_limit.ttft_s == pytest.approx(
        at_limit.max_batch / at_limit.requests_per_s, rel=0.01
    )


def test_an_arrival_rate_is_served_or_refused(models: ModelRegistry, catalog: Catalog) -> None:
    plan = InferencePlan(precision="fp8")
    served = _estimate(
        models, catalog, "llama-3-8b", "dgx-h100", plan, load=ServingLoad(1000, 1000, arrival_rate_per_s=3.0)
    )
    assert served.requests_per_s == pytest.approx(3.0, rel=0.02)
    with pytest.raises(InvalidPlanError, match="exceed"):
        _estimate(
            models,
            catalog,
            "llama-3-8b",
            "dgx-h100",
            plan,
            load=ServingLoad(1000, 1000, arrival_rate_per_s=1e4),
        )


def test_speculation_divides_the_per_token_time_by_accepted_tokens(
    models: ModelRegistry, catalog: Catalog
) -> None:
    load = ServingLoad(64, 256, concurrency=1)
    plain = _estimate(
        models, catalog, "llama-3-70b", "dgx-h100", InferencePlan(tp=8, precision="fp8"), load=load
    )
    spec = SpeculativeDecoding(num_draft_tokens=3, acceptance_rate=0.8, draft_cost_fraction=0.05)
    fast = _estimate(
        models,
        catalog,
        "llama-3-70b",
        "dgx-h100",
        InferencePlan(tp=8, precision="fp8", speculative=spec),
        load=load,
    )
    # Weight-bound at one user: verifying 4 tokens costs one decode step; drafting adds 3 x 5%.
    expected = plain.tpot_s * (1 + 3 * 0.05) / spec.tokens_per_iteration
    assert fast.tpot_s == pytest.approx(expected, rel=0.05)
    useless = SpeculativeDecoding(num_draft_tokens=3, acceptance_rate=0.0, draft_cost_fraction=0.05)
    slow = _estimate(
        models,
        catalog,
        "llama-3-70b",
        "dgx-h100",
        InferencePlan(tp=8, precision="fp8", speculative=useless),
        load=load,
    )
    assert slow.tpot_s > plain.tpot_s


def test_static_batch_throughput_is_batch_tokens_over_total_time(
    models: ModelRegistry, catalog: Catalog
) -> None:
    estimate = _estimate(
        models,
        catalog,
        "llama-7b",
        "dgx-a100",
        InferencePlan(precision="fp16"),
        load=ServingLoad(128, 128, concurrency=64),
        batching="static",
    )
    total = estimate.ttft_s + 127 * estimate.tpot_s
    assert estimate.output_tokens_per_s == pytest.approx(64 * 128 / total)


def test_disaggregated_pools_send_the_kv_cache_over_the_link_between_them(
    models: ModelRegistry, catalog: Catalog
) -> None:
    model = models.get("llama-3-70b")
    load = ServingLoad(8192, 256, concurrency=64)
    plan = InferencePlan(tp=8, precision="fp8", disaggregated=(1, 1))
    across = estimate_inference(
        model=model, cluster=catalog.resolve_cluster("2xdgx-h100"), plan=plan, load=load
    )
    # 8,192 prompt tokens x 160 KiB (fp8) leave the 8 GPUs of the prefill replica over 50 GB/s NDR
    # NICs at 80% link efficiency, plus one 5 us hop.
    kv_bytes = 8192 * kv_cache_bytes_per_token(model, "fp8")
    assert across.kv_transfer_s == pytest.approx(kv_bytes / 8 / (50e9 * 0.8) + 5e-6, rel=0.01)
    inside = estimate_inference(
        model=model,
        cluster=catalog.resolve_cluster("gb200-nvl72"),
        plan=plan.with_changes(precision="nvfp4"),
        load=load,
    )
    assert inside.kv_transfer_s is not None
    assert inside.kv_transfer_s < across.kv_transfer_s / 10
    assert across.batching == "disaggregated"


def test_a_disaggregated_closed_loop_keeps_littles_law_over_both_pools(
    models: ModelRegistry, catalog: Catalog
) -> None:
    """64 users of Llama 3 70B (FP8, 8,000-token prompts, 500 output tokens) on one TP4 prefill
    and one TP4 decode replica: the prefill replica bounds the rate, so the users that the decode
    replica does not hold wait for a prefill, and their TTFT carries that wait."""
    model = models.get("llama-3-70b")
    cluster = catalog.resolve_cluster("dgx-h100")
    plan = InferencePlan(tp=4, precision="fp8", disaggregated=(1, 1))
    crowded = estimate_inference(
        model=model, cluster=cluster, plan=plan, load=ServingLoad(8000, 500, concurrency=64)
    )
    # one prefill of 8,000 tokens (a whole iteration: the chunk budget packs no second prompt)
    alone = estimate_inference(
        model=model,
        cluster=cluster,
        plan=InferencePlan(tp=4, precision="fp8"),
        load=ServingLoad(8000, 1, concurrency=1),
    )
    prefill_s = alone.ttft_s
    # the prefill replica runs one prompt after another: at most 1 / prefill_s requests per second
    assert crowded.requests_per_s == pytest.approx(1.0 / prefill_s, rel=0.03)
    # Little's law: users = rate x (TTFT + 499 decode steps)
    cycle_s = crowded.ttft_s + 499 * crowded.tpot_s
    assert crowded.requests_per_s * cycle_s == pytest.approx(64.0, rel=1e-6)
    # the decode replica holds what the rate keeps decoding (Little's law on it alone), not all 64
    assert crowded.batch_per_replica == pytest.approx(crowded.requests_per_s * 499 * crowded.tpot_s, rel=0.01)
    assert crowded.batch_per_replica < 32
    assert crowded.ttft_s > 10.0  # most of the 64 wait in the prefill queue
    assert crowded.concurrency == 64


def test_one_disaggregated_user_never_waits_for_another_prompt(
    models: ModelRegistry, catalog: Catalog
) -> None:
    """One user's prompt finds both pools idle: TTFT is its own prefill and the KV cache's
    crossing, as on one replica doing both plus the transfer, and its requests follow each
    other (Little's law with one user in flight)."""
    model = models.get("llama-3-70b")
    cluster = catalog.resolve_cluster("dgx-h100")
    load = ServingLoad(8000, 500, concurrency=1)
    split = estimate_inference(
        model=model,
        cluster=cluster,
        plan=InferencePlan(tp=4, precision="fp8", disaggregated=(1, 1)),
        load=load,
    )
    together = estimate_inference(
        model=model, cluster=cluster, plan=InferencePlan(tp=4, precision="fp8"), load=load
    )
    assert split.kv_transfer_s is not None
    assert split.ttft_s == pytest.approx(together.ttft_s + split.kv_transfer_s, rel=1e-3)
    assert split.tpot_s == pytest.approx(together.tpot_s, rel=1e-6)
    assert split.requests_per_s * (split.ttft_s + 499 * split.tpot_s) == pytest.approx(1.0, rel=1e-6)


def test_fp4_tile_occupancy_is_said_where_it_applies_and_where_it_cannot(
    models: ModelRegistry, catalog: Catalog
) -> None:
    """Llama 3 8B in NVFP4 at batch 1: on a GPU whose SM count the catalog lacks (a GB200 record
    without its 152), the weight reads are the stream of its bytes at 80% of 8 TB/s (4.5 bits a
    weight and the 16-bit LM head: 6.98e9 x 0.5625 + 1.05e9 bytes); on a B200 (148 SMs) and the
    GB200 itself a batch of one row fills few of the SMs' tiles and reads slower. Each estimate
    says which it assumed."""
    load = ServingLoad(1000, 1000, concurrency=1)
    plan = InferencePlan(precision="nvfp4")
    cluster = catalog.resolve_cluster("gb200-nvl72", 1)
    assert cluster.system.accelerator.num_compute_units == 152  # XLA's device dump of a GB200
    accelerator = dataclasses.replace(cluster.system.accelerator, num_compute_units=None)
    unknown = dataclasses.replace(
        cluster, system=dataclasses.replace(cluster.system, accelerator=accelerator)
    )
    model = models.get("llama-3-8b")
    no_count = estimate_inference(model=model, cluster=unknown, plan=plan, load=load, num_gpus=1)
    gb200 = _estimate(models, catalog, "llama-3-8b", "gb200-nvl72", plan, load=load, num_gpus=1)
    b200 = _estimate(models, catalog, "llama-3-8b", "dgx-b200", plan, load=load, num_gpus=1)
    counts = parameter_counts(model)
    # 6.98e9 layer weights at 4.5 bits (NVFP4: 16 values share an 8-bit scale), the LM head in 16 bits
    weight_bytes = counts.non_embedding_params * 0.5625 + counts.lm_head_params * 2
    streamed = no_count.iteration_breakdown_s["weight_reads"]
    assert streamed == pytest.approx(weight_bytes / (0.8 * 8e12), rel=0.02)
    assert b200.iteration_breakdown_s["weight_reads"] > 1.3 * streamed
    assert gb200.iteration_breakdown_s["weight_reads"] > 1.3 * streamed
    assert "no SM count for gb200" in " ".join(no_count.assumptions)
    assert "on the 148 SMs" in " ".join(b200.assumptions)
    assert "on the 152 SMs" in " ".join(gb200.assumptions)


def test_fp32_says_it_runs_on_the_tf32_tensor_cores(models: ModelRegistry, catalog: Catalog) -> None:
    """An FP32 plan on an H100 is priced at the TF32 row (494.5 dense TFLOP/s, not FP32's 67):
    its assumptions say so rather than calling that rate fp32's."""
    load = ServingLoad(100, 100, concurrency=1)
    fp32 = _estimate(models, catalog, "llama-3-8b", "dgx-h100", InferencePlan(precision="fp32"), load=load)
    bf16 = _estimate(models, catalog, "llama-3-8b", "dgx-h100", InferencePlan(precision="bf16"), load=load)
    assert "GEMMs on dense fp32 on the TF32 tensor cores" in fp32.assumptions[0]
    assert "494 TFLOP/s" in fp32.assumptions[0]
    assert "TF32" not in bf16.assumptions[0]


def test_what_does_not_fit_says_what_would(models: ModelRegistry, catalog: Catalog) -> None:
    with pytest.raises(InvalidPlanError, match=r"does not fit.*a plan that fits: tp=2"):
        _estimate(models, catalog, "llama-3-70b", "dgx-h100", InferencePlan(), load=ServingLoad(1000, 1000))


def test_tpot_of_one_request_is_a_decode_only_step(models: ModelRegistry, catalog: Catalog) -> None:
    # Issue 13: a request's decode steps carry the other requests' prefill, never its own. With one
    # request in flight TPOT is one decode step at its context, whatever the prompt length.
    plan = InferencePlan(tp=2, precision="fp8")
    for isl in (128, 32768):
        one = _estimate(
            models, catalog, "llama-3-70b", "dgx-h100", plan, load=ServingLoad(isl, 1024, concurrency=1)
        )
        decode = _estimate(
            models, catalog, "llama-3-70b", "dgx-h100", plan, load=ServingLoad(isl, 1024, concurrency=1),
            batching="decode",
        )  # fmt: skip
        assert one.tpot_s == pytest.approx(decode.tpot_s, rel=1e-12)
        assert one.iteration_breakdown_s["attention_compute"] >= 0.0


@settings(max_examples=25, deadline=None)
@given(low=st.integers(1, 200), step=st.integers(1, 40))
def test_throughput_never_falls_as_concurrency_rises_below_the_kv_limit(
    low: int, step: int, models: ModelRegistry, catalog: Catalog
) -> None:
    plan = InferencePlan(tp=2, precision="fp8")
    rates = [
        _estimate(
            models, catalog, "llama-3-70b", "dgx-h100", plan, load=ServingLoad(1000, 1000, concurrency=c)
        ).output_tokens_per_s
        for c in (low, min(low + step, 237))  # 237: the KV-cache limit of this deployment
    ]
    assert rates[1] >= rates[0] * (1 - 1e-9)


def test_gemm_efficiency_is_smooth_in_the_number_of_rows(models: ModelRegistry, catalog: Catalog) -> None:
    # Issue 13 measured 4,811 / 3,856 / 4,489 / 4,062 tokens/s at 128 / 136 / 170 / 194 requests:
    # 128-row tile padding. Throughput must now rise with concurrency, by less than the batch does.
    plan = InferencePlan(tp=2, precision="fp8")
    rates = [
        _estimate(
            models, catalog, "llama-3-70b", "dgx-h100", plan, load=ServingLoad(1000, 1000, concurrency=c)
        ).output_tokens_per_s
        for c in (128, 136, 170, 194)
    ]
    assert rates == sorted(rates)
    assert rates[-1] / rates[0] < 194 / 128


def test_weight_only_quantization_is_memory_bound_at_batch_one(
    models: ModelRegistry, catalog: Catalog
) -> None:
    # INT4 weights on an H100 (no INT4 tensor cores) run bf16 GEMMs: at one token the weights' bytes
    # bound the step, not the (tiny) FLOPs.
    estimate = _estimate(
        models, catalog, "llama-3-8b", "dgx-h100", InferencePlan(precision="int4"),
        load=ServingLoad(128, 128, concurrency=1),
    )  # fmt: skip
    assert estimate.precisions.compute == "bf16"
    assert estimate.bound.startswith("memory-bound")
    assert estimate.iteration_breakdown_s["gemm_compute"] == 0.0


def test_every_estimate_carries_error_bars(models: ModelRegistry, catalog: Catalog) -> None:
    estimate = _llama_3_8b_fp8_on_h100(models, catalog, ServingLoad(1000, 1000))
    bars = estimate.intervals
    assert bars["level"] == 0.8
    low, high = bars["output_tokens_per_s"]
    assert low < estimate.output_tokens_per_s < high
    low, high = bars["tpot_s"]
    assert low < estimate.tpot_s < high


def test_few_output_tokens_are_bound_by_the_prompts_compute(models: ModelRegistry, catalog: Catalog) -> None:
    # With 1-8 output tokens per 2,000-token prompt, a saturated server is limited by prefill:
    # the prompts' FLOPs per second (2 x params per token, attention left out) cannot exceed
    # the H100's dense FP8 peak (1,979 TFLOP/s, datasheet), and more output tokens per request
    # can only lower the request rate. (One output token used to give 7,404 requests/s here.)
    params = parameter_counts(models.get("llama-3-8b")).total_params
    rates = []
    for osl in (1, 2, 8):
        estimate = _llama_3_8b_fp8_on_h100(models, catalog, ServingLoad(2000, osl))
        assert estimate.requests_per_s * 2000 * 2 * params < 1979e12
        rates.append(estimate.requests_per_s)
    assert rates[0] >= rates[1] >= rates[2]
    assert rates[0] == pytest.approx(rates[1], rel=0.05)  # both prefill-bound


def test_the_bound_names_the_kernels_and_says_the_fitted_attention_dp_slowdown_apart(
    models: ModelRegistry, catalog: Catalog
) -> None:
    # DeepSeek-V3 with attention DP 8: the bound's two named parts are priced ones, and the
    # fitted slowdown is said after them with its share of the iteration.
    estimate = _estimate(
        models, catalog, "deepseek-v3", "dgx-h200", InferencePlan(ep=8, dp_attention=8, precision="fp8"),
        load=ServingLoad(1024, 1024, concurrency=512),
    )  # fmt: skip
    parts = estimate.iteration_breakdown_s
    share = parts["attention_dp_pace"] / sum(parts.values())
    assert 0.0 < share < 1.0
    head, tail = estimate.bound.split("; ")
    assert "slowdown" not in head
    assert (
        tail == f"a fitted attention-DP slowdown adds {share:.0%} that no kernel, link or host time explains"
    )


@pytest.mark.parametrize("rate_per_s", [0.37, 15.0])
def test_an_arrival_rate_is_served_at_that_rate(
    models: ModelRegistry, catalog: Catalog, rate_per_s: float
) -> None:
    """The batch that serves a rate is inverted from a concave rate curve; a chord between two
    points of a coarse grid under-reads it, so the deployment served more than asked (15.02 of
    15 requests/s). The steady state must serve the rate asked."""
    served = _estimate(
        models,
        catalog,
        "llama-3-8b",
        "dgx-h100",
        InferencePlan(precision="fp8"),
        load=ServingLoad(2048, 256, arrival_rate_per_s=rate_per_s),
    )
    assert served.requests_per_s == pytest.approx(rate_per_s, rel=1e-4)


def test_the_limit_that_sets_the_most_sequences_is_named(models: ModelRegistry, catalog: Catalog) -> None:
    """A replica's most sequences is the KV cache's, the server's default cap or --max-batch,
    whichever is least; the estimate says which one binds."""
    # Llama 3.2 1B in fp8 keeps 16 layers x 2 x 8 KV heads x 64 x 1 B = 16 KiB a token: 256-token
    # requests take 4 MiB, so an H200's ~120 GiB of KV room holds ~30,000, far past the
    # server's default cap of 4,096 sequences (trtllm-bench's heuristic, sol/data/stacks.toml)
    small = _estimate(
        models,
        catalog,
        "llama-3.2-1b",
        "dgx-h200",
        InferencePlan(precision="fp8"),
        load=ServingLoad(128, 128),
    )
    assert (small.max_batch, small.max_batch_limit) == (4096, "server cap")
    # Llama 3 70B at TP 8 in fp8 with 8K-token requests: 80 x 2 x 1 x 128 x 1 B = 20 KiB a token
    # per GPU, 160 MiB a request; ~70 GiB of KV room per GPU holds some 450, under the cap
    large = _estimate(
        models,
        catalog,
        "llama-3-70b",
        "dgx-h100",
        InferencePlan(tp=8, precision="fp8"),
        load=ServingLoad(4096, 4096),
    )
    assert large.max_batch_limit == "kv cache"
    assert 300 < large.max_batch < 600
    capped = _estimate(
        models,
        catalog,
        "llama-3-70b",
        "dgx-h100",
        InferencePlan(tp=8, precision="fp8", max_batch=64),
        load=ServingLoad(4096, 4096),
    )
    assert (capped.max_batch, capped.max_batch_limit) == (64, "max batch")
