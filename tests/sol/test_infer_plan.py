"""Inference plans: degrees, precisions, validity and the errors that say what would fit."""

from __future__ import annotations

import pytest

from lightspeed.catalog import Catalog
from lightspeed.errors import InvalidPlanError, PlanMismatchError
from lightspeed.sol import InferencePlan, ServingLoad, SpeculativeDecoding
from lightspeed.sol.infer.plan import resolve_precisions, validate_inference_plan
from lightspeed.workload import ModelRegistry


def test_speculative_tokens_per_iteration_follow_leviathan() -> None:
    # Leviathan et al. 2023, eq. 1: E[tokens] = (1 - a^(k+1)) / (1 - a); hand values below.
    assert SpeculativeDecoding(3, 0.8).tokens_per_iteration == pytest.approx((1 - 0.8**4) / 0.2)
    assert SpeculativeDecoding(3, 0.8).tokens_per_iteration == pytest.approx(2.952)
    assert SpeculativeDecoding(5, 0.0).tokens_per_iteration == 1.0  # every draft rejected: one token


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"num_draft_tokens": 0, "acceptance_rate": 0.5}, "draft token"),
        ({"num_draft_tokens": 2, "acceptance_rate": 1.0}, "acceptance rate"),
        ({"num_draft_tokens": 2, "acceptance_rate": 0.5, "draft_cost_fraction": 2.0}, "draft cost"),
    ],
)
def test_speculative_decoding_rejects_impossible_settings(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(InvalidPlanError, match=message):
        SpeculativeDecoding(**kwargs)  # type: ignore[arg-type]


def test_load_needs_one_of_concurrency_or_rate() -> None:
    assert ServingLoad(100, 100).offline
    assert not ServingLoad(100, 100, concurrency=4).offline
    with pytest.raises(InvalidPlanError, match="not both"):
        ServingLoad(100, 100, concurrency=4, arrival_rate_per_s=1.0)
    with pytest.raises(InvalidPlanError, match=">= 1"):
        ServingLoad(0, 100)


def test_plan_counts_gpus_of_replicas_and_pools() -> None:
    plan = InferencePlan(tp=4, pp=2, dp_attention=2, replicas=3)
    assert (plan.stage_gpus, plan.gpus_per_replica, plan.num_gpus) == (8, 16, 48)
    pooled = plan.with_changes(disaggregated=(1, 3))
    assert pooled.num_replicas == 4
    assert pooled.num_gpus == 64
    assert "1P:3D" in pooled.describe()
    with pytest.raises(InvalidPlanError, match="P:D"):
        InferencePlan(disaggregated=(0, 2))
    with pytest.raises(InvalidPlanError, match="precision"):
        InferencePlan(precision="fp3")


def test_tp_beyond_kv_heads_needs_replication(models: ModelRegistry) -> None:
    llama = models.get("llama-3-8b")  # 32 heads, 8 KV heads
    with pytest.raises(InvalidPlanError, match=r"exceeds the 8 KV heads.*--kv-replication"):
        validate_inference_plan(InferencePlan(tp=16), llama)
    validate_inference_plan(InferencePlan(tp=16, kv_replication=True), llama)
    with pytest.raises(InvalidPlanError, match="try tp=8"):
        validate_inference_plan(InferencePlan(tp=12, kv_replication=True), llama)


def test_invalid_degrees_name_a_valid_alternative(models: ModelRegistry) -> None:
    llama = models.get("llama-3-8b")
    with pytest.raises(InvalidPlanError, match=r"tp=3 does not divide the 32 attention heads.*try tp=2"):
        validate_inference_plan(InferencePlan(tp=3), llama)
    with pytest.raises(InvalidPlanError, match="dense"):
        validate_inference_plan(InferencePlan(ep=2), llama)
    mixtral = models.get("mixtral-8x7b")
    with pytest.raises(InvalidPlanError, match="exceeds the 8 routed experts"):
        validate_inference_plan(InferencePlan(tp=16, ep=16, kv_replication=True), mixtral)
    # EP need not divide the experts: 8 experts on 3 GPUs are 3 slots each, one holding a redundant copy
    validate_inference_plan(InferencePlan(tp=3, ep=3, kv_replication=True), models.get("gpt-moe-1.8t"))
    with pytest.raises(InvalidPlanError, match="must divide the 2 GPUs"):
        validate_inference_plan(InferencePlan(tp=2, ep=4), mixtral)
    with pytest.raises(PlanMismatchError, match="the plan that matches: replicas=4") as mismatch:
        validate_inference_plan(InferencePlan(tp=2), llama, num_gpus=8)
    assert mismatch.value.nearest_plan == {"replicas": 4}


def test_precisions_follow_the_gpu(catalog: Catalog) -> None:
    # B200 computes in FP4: NVFP4 weights (0.5 + 1/16 bytes with the E4M3 scale per 16 values), FP8 KV.
    blackwell = resolve_precisions(InferencePlan(precision="nvfp4"), catalog.accelerator("b200"))
    assert (blackwell.compute, blackwell.kv_cache) == ("fp4", "fp8")
    assert blackwell.weight_bytes_per_element == pytest.approx(0.5625)
    # H100 has no FP4 tensor cores: FP4 weights run as weight-only quantization on bf16 GEMMs.
    hopper = resolve_precisions(InferencePlan(precision="nvfp4"), catalog.accelerator("h100-sxm"))
    assert hopper.compute == "bf16"
    assert any("weight-only" in note for note in hopper.notes)
    # A100 at fp16: no FP8 anywhere, so the KV cache stays 16-bit.
    ampere = resolve_precisions(InferencePlan(precision="fp16"), catalog.accelerator("a100-sxm"))
    assert (ampere.compute, ampere.kv_cache, ampere.kv_bytes_per_element) == ("fp16", "fp16", 2.0)
    explicit = resolve_precisions(
        InferencePlan(precision="fp8", kv_precision="bf16"), catalog.accelerator("h100-sxm")
    )
    assert explicit.kv_cache == "bf16"


def test_weight_only_int8_prefills_at_the_16_bit_rate_and_decodes_at_one_byte(
    catalog: Catalog, models: ModelRegistry
) -> None:
    # A100: 312 TFLOP/s in BF16, 624 TOPS in INT8. Weight-only INT8 (W8A16) dequantizes its weights
    # into BF16 GEMMs: a 4,096-token prefill of Llama 3 8B (2 x 8e9 x 4096 = 66 TFLOP, compute-bound)
    # takes the BF16 time; W8A8 runs its GEMMs on the INT8 tensor cores at most 0.77 x 624 against
    # 0.87 x 312 (the efficiency ceilings), 1.77x faster, and its attention in BF16 like the others,
    # so the weight-only prefill is 1.4-1.8x the W8A8 one. A batch-1 decode step streams 1 byte per
    # weight, as W8A8 does, about half the BF16 step.
    from lightspeed.sol import estimate_inference

    def run(**plan: str) -> tuple[float, float]:
        estimate = estimate_inference(
            model=models.get("llama-3-8b"),
            cluster=catalog.resolve_cluster("a100-sxm4-80gb", 1),
            plan=InferencePlan(**plan),  # type: ignore[arg-type]
            load=ServingLoad(4096, 64, concurrency=1),
        )
        said = any("weight-only: the int8 weights dequantized" in note for note in estimate.assumptions)
        assert said == (plan.get("activation_precision") == "bf16"), estimate.assumptions
        return estimate.ttft_s, estimate.tpot_s

    weight_only = run(precision="int8", activation_precision="bf16")
    w8a8 = run(precision="int8")
    bf16 = run(precision="bf16")
    assert weight_only[0] == pytest.approx(bf16[0], rel=0.05)
    assert 1.4 < weight_only[0] / w8a8[0] < 1.8
    assert weight_only[1] == pytest.approx(w8a8[1], rel=0.05)
    assert 0.45 < weight_only[1] / bf16[1] < 0.75


def test_int8_experts_on_tensorrt_llm_run_weight_only(catalog: Catalog, models: ModelRegistry) -> None:
    # TensorRT-LLM's MoE plugin has no INT8-activation runner (mixtureOfExpertsPlugin.cpp: FP16/BF16
    # inputs with INT8 or INT4 weights), so INT8 Mixtral computes in BF16 there; vLLM's INT8 (W8A8)
    # MoE kernels and a dense model on TensorRT-LLM keep the INT8 tensor cores.
    from lightspeed.sol.infer.inference_hardware import inference_hardware_for

    cluster = catalog.resolve_cluster("a100-sxm4-80gb", 1)

    def formats(model: str, serving: str) -> tuple[str, tuple[str, ...]]:
        hardware = inference_hardware_for(
            cluster, InferencePlan(precision="int8"), serving=serving, model=models.get(model)
        )
        return hardware.precisions.compute, hardware.precisions.notes

    compute, notes = formats("mixtral-8x7b", "trtllm-2023")
    assert compute == "bf16"
    assert any("MoE plugin is weight-only" in note for note in notes)
    assert formats("mixtral-8x7b", "vllm-2024")[0] == "int8"
    assert formats("llama-3-8b", "trtllm-2023")[0] == "int8"
