"""One serving iteration on the roofline, checked against hand calculations from the model's dimensions."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lightspeed.catalog import Catalog
from lightspeed.errors import UnsupportedError
from lightspeed.sol import InferencePlan, default_efficiency, load_serving_stack
from lightspeed.sol.infer.inference_hardware import inference_hardware_for, load_inference_parameters
from lightspeed.sol.infer.iteration import IterationGrid, gemm_time_s, iteration_cost, moe_layer_parts
from lightspeed.workload import ModelRegistry, TransformerSpec, kv_cache_bytes_per_token

H100_BANDWIDTH = 3.35e12  # B/s, H100 SXM datasheet


def _grid(plan: InferencePlan, **work: float) -> IterationGrid:
    values = {
        "decode_sequences": 1.0,
        "query_tokens": 1.0,
        "decode_context": 0.0,
        "prefill_tokens": 0.0,
        "prefill_context": 0.0,
        "prefill_requests": 0.0,
    }
    values.update(work)
    values.setdefault("group_prefill_tokens", values["prefill_tokens"] / plan.dp_attention)
    return IterationGrid(
        tp=np.asarray([float(plan.tp)]),
        pp=np.asarray([float(plan.pp)]),
        ep=np.asarray([float(plan.ep)]),
        dp_attention=np.asarray([float(plan.dp_attention)]),
        **{key: np.asarray([value]) for key, value in values.items()},
    )


def _parts(model: TransformerSpec, catalog: Catalog, plan: InferencePlan, **work: float) -> dict[str, float]:
    inference_hardware = inference_hardware_for(catalog.cluster("dgx-h100"), plan)
    cost = iteration_cost(_grid(plan, **work), model, inference_hardware)
    return {name: float(value[0]) for name, value in cost.parts.items()}


def _stream_bytes_per_s() -> float:
    return H100_BANDWIDTH * load_inference_parameters().stream_memory_efficiency


def test_one_token_decode_reads_every_weight_once(models: ModelRegistry, catalog: Catalog) -> None:
    # Llama 3 8B by hand: per layer QKV 4096 x (32 + 2 x 8) x 128, out 4096 x 4096,
    # SwiGLU up 4096 x 2 x 14336 and down 14336 x 4096; 32 layers; LM head 4096 x 128256; bf16.
    per_layer = 4096 * 48 * 128 + 4096 * 4096 + 4096 * 2 * 14336 + 14336 * 4096
    weight_bytes = 2.0 * (32 * per_layer + 4096 * 128256)
    parts = _parts(models.get("llama-3-8b"), catalog, InferencePlan(precision="bf16"))
    assert parts["weight_reads"] == pytest.approx(weight_bytes / _stream_bytes_per_s(), rel=0.005)
    assert parts["gemm_compute"] == 0.0  # one token: every GEMM is bound by its weights


def test_decode_reads_the_kv_cache_of_every_sequence(models: ModelRegistry, catalog: Catalog) -> None:
    model = models.get("llama-3-8b")
    # 64 sequences of 4,000 cached tokens, FP8 cache: 32 layers x 2 x 8 heads x 128 x 1 byte per token.
    cached = 64 * 4000 * kv_cache_bytes_per_token(model, "fp8")
    assert kv_cache_bytes_per_token(model, "fp8") == 32 * 2 * 8 * 128
    parts = _parts(
        model, catalog, InferencePlan(precision="fp8"), decode_sequences=64.0, decode_context=4000.0
    )
    assert parts["kv_cache"] == pytest.approx(cached / _stream_bytes_per_s(), rel=0.01)


def test_moe_reads_only_the_experts_the_tokens_reach(models: ModelRegistry, catalog: Catalog) -> None:
    mixtral = models.get("mixtral-8x7b")  # 8 experts, top-2, expert MLP 4096 -> 2 x 14336 -> 4096, 32 layers
    expert_bytes = 2.0 * 3 * 4096 * 14336 * 32  # one expert in every layer, bf16
    plan = InferencePlan(tp=2, precision="bf16")
    one = _parts(mixtral, catalog, plan, decode_sequences=1.0)["weight_reads"]
    two = _parts(mixtral, catalog, plan, decode_sequences=2.0)["weight_reads"]
    # One token touches top-k = 2 experts; two tokens touch E(1 - (1 - k/E)^2) = 8 x (1 - 0.75^2) = 3.5.
    extra_experts = 3.5 - 2.0
    assert (two - one) * _stream_bytes_per_s() == pytest.approx(extra_experts * expert_bytes / 2, rel=0.01)


def test_tp_all_reduce_of_a_decode_batch_runs_nccls_ll_protocol(
    models: ModelRegistry, catalog: Catalog
) -> None:
    model = models.get("llama-3-8b")
    single = _parts(model, catalog, InferencePlan(tp=1), decode_sequences=64.0)
    assert single["tp_comm"] == 0.0
    paired = _parts(model, catalog, InferencePlan(tp=2), decode_sequences=64.0)
    # A 2-GPU ring all-reduce of 64 tokens x 4096 x 2 bytes (512 KiB) on NCCL's LL protocol: its
    # 6.6 us base latency (tuning.cc) and 2 latency steps of 1 us (tree over 2 ranks), the bytes
    # (2 x 1/2 of them each way) at half of the ring's 450 GB/s x 0.8 (LL sends a flag with every
    # word): 11.5 us, under LL128's 17.8 us + and Simple's 15.2 us + of latency alone; twice per
    # layer, 32 layers.
    size = 64 * 4096 * 2
    expected = 2 * 32 * (size / (450e9 * 0.8) / 0.5 + 6.6e-6 + 2 * 1e-6)
    assert paired["tp_comm"] == pytest.approx(expected, rel=0.01)
    assert _parts(model, catalog, InferencePlan(pp=2), decode_sequences=64.0)["pp_comm"] > 0.0


def test_prefill_is_compute_bound(models: ModelRegistry, catalog: Catalog) -> None:
    parts = _parts(
        models.get("llama-3-70b"),
        catalog,
        InferencePlan(tp=8, precision="fp8"),
        decode_sequences=0.0,
        prefill_tokens=8192.0,
        prefill_context=4096.0,
        prefill_requests=1.0,
    )
    assert parts["gemm_compute"] > 10 * parts["weight_reads"]
    assert parts["attention_compute"] > parts["kv_cache"]


@settings(max_examples=40, deadline=None)
@given(
    sequences=st.floats(1.0, 512.0),
    extra=st.floats(0.0, 512.0),
    context=st.floats(0.0, 32768.0),
    more_context=st.floats(0.0, 32768.0),
)
def test_iteration_time_grows_with_batch_and_context(
    models: ModelRegistry,
    catalog: Catalog,
    *,
    sequences: float,
    extra: float,
    context: float,
    more_context: float,
) -> None:
    model = models.get("llama-3-8b")
    plan = InferencePlan(tp=2, precision="fp8")
    inference_hardware = inference_hardware_for(catalog.cluster("dgx-h100"), plan)

    def time(batch: float, cached: float) -> float:
        grid = _grid(plan, decode_sequences=batch, decode_context=cached)
        return float(iteration_cost(grid, model, inference_hardware).time_s[0])

    base = time(sequences, context)
    assert time(sequences + extra, context) >= base * (1 - 1e-12)
    assert time(sequences, context + more_context) >= base * (1 - 1e-12)


def test_mla_latent_cache_is_read_whole_by_every_tp_rank(models: ModelRegistry, catalog: Catalog) -> None:
    deepseek = models.get("deepseek-v3")  # 61 layers, latent 512 + RoPE key 64 per token and layer
    assert kv_cache_bytes_per_token(deepseek, "fp8") == 61 * (512 + 64)
    work = {"decode_sequences": 32.0, "decode_context": 8000.0}
    tp1 = _parts(deepseek, catalog, InferencePlan(tp=1, ep=1, precision="fp8"), **work)
    tp8 = _parts(deepseek, catalog, InferencePlan(tp=8, ep=8, precision="fp8"), **work)
    cached = 32 * 8000 * 61 * 576
    # Every TP rank holds and reads the whole latent: at TP 8 (16 heads per GPU) decode streams it.
    assert tp8["kv_cache"] == pytest.approx(cached / _stream_bytes_per_s(), rel=0.02)
    # All 128 heads on one GPU share each latent read: the absorbed decode turns compute-bound, as
    # FlashMLA's decode kernel does at large batch (REFERENCE.md section 8: 660 TFLOPS on H800).
    assert tp1["attention_compute"] > cached / _stream_bytes_per_s()
    hopper = default_efficiency("nvidia-hopper")
    flop = 61 * 2 * 32 * 8000 * 128 * (2 * 512 + 64)  # QK over latent + RoPE key, AV over the latent
    # FP8 attention at the fused kernel's forward efficiency, sustained at the serving stack's share
    rate = 1979e12 * hopper.attention_flash_forward_efficiency * load_serving_stack().kernel_efficiency
    assert tp1["attention_compute"] == pytest.approx(flop / rate, rel=0.01)


def test_blackwell_fp4_gemm_ceiling_follows_the_cited_measurement() -> None:
    """The NVFP4 ceiling is vLLM #20646's FP4/BF16 ratio on one SM100 GPU times the BF16 MAMF.

    Hand calculation from the cited table (M=16384, N=6144, K=4096): NVFP4 without the separate
    activation quantization 3,904 TFLOP/s of a 9,000 dense peak, torch BF16 1,360 of 2,250.
    """
    blackwell = default_efficiency("nvidia-blackwell")
    ratio = (3904 / 9000) / (1360 / 2250)  # 0.718: FP4's share of peak over BF16's
    assert blackwell.gemm_ceiling("bf16") == pytest.approx(1745 / 2250, abs=0.001)  # B200 MAMF
    assert blackwell.gemm_ceiling("fp4") == pytest.approx(ratio * 1745 / 2250, abs=0.001)
    # below the FP8 ceiling, as a younger block-scaled kernel's should be
    assert blackwell.gemm_ceiling("fp4") < blackwell.gemm_ceiling("fp8")


def test_cdna3_fp8_gemm_ceiling_follows_amds_own_max_achievable_flops() -> None:
    """MI300X FP8 keeps AMD's measured FP8/BF16 share of peak, applied to the BF16 MAMF ceiling.

    Hand calculation from AMD's table (ROCm blog "Measuring Max-Achievable FLOPs - Part 2", Table
    1, hipBLASLt-bench): MI300X BF16 708 TFLOP/s of a 1,307.4 dense peak, FP8 1,273 of 2,614.9;
    the BF16 MAMF (Bekman's survey) is 668.4 of 1,300.
    """
    cdna3 = default_efficiency("amd-cdna3")
    ratio = (1273 / 2614.9) / (708 / 1307.4)  # 0.899
    assert cdna3.gemm_ceiling("bf16") == pytest.approx(668.4 / 1300, abs=0.001)
    assert cdna3.gemm_ceiling("fp8") == pytest.approx(ratio * 668.4 / 1300, abs=0.001)
    # not Hopper's ratio (0.883), which the family borrowed before
    assert cdna3.gemm_ceiling("fp8") != pytest.approx(0.514 * 0.709 / 0.803, abs=0.001)


def _layer_parts(
    catalog: Catalog, model: TransformerSpec, plan: InferencePlan, stack: str
) -> dict[str, float]:
    hardware = inference_hardware_for(catalog.cluster("dgx-h100"), plan, None, load_serving_stack(stack))
    grid = _grid(plan, decode_sequences=64.0 * plan.dp_attention, decode_context=2000.0)
    return {name: float(value[0]) for name, value in moe_layer_parts(grid, model, hardware).items()}


def test_the_fitted_attention_dp_slowdown_is_its_own_part(models: ModelRegistry, catalog: Catalog) -> None:
    # The stack's fitted pace e stretches the layer's kernel time K (GEMMs, weight and KV reads,
    # attention, elementwise) to K / e; the stretch K (1 / e - 1) is reported on its own, so the
    # kernel parts keep what the hardware prices. trtllm-2025 has no two-batch overlap.
    model = models.get("deepseek-v3")
    efficiency = load_serving_stack("trtllm-2025").attention_dp_efficiency
    parts = _layer_parts(catalog, model, InferencePlan(ep=8, dp_attention=8, precision="fp8"), "trtllm-2025")
    kernels = sum(
        parts[name]
        for name in ("gemm_compute", "weight_reads", "attention_compute", "kv_cache", "elementwise")
    )
    assert kernels > 0.0
    assert parts["attention_dp_pace"] == pytest.approx(kernels * (1.0 / efficiency - 1.0), rel=1e-9)
    # the same layer without attention DP (TP 8) carries none
    tensor_parallel = _layer_parts(catalog, model, InferencePlan(tp=8, ep=8, precision="fp8"), "trtllm-2025")
    assert tensor_parallel["attention_dp_pace"] == 0.0


def test_a_dense_model_has_no_moe_layer_to_price(models: ModelRegistry, catalog: Catalog) -> None:
    with pytest.raises(UnsupportedError, match="no MoE layers"):
        _layer_parts(catalog, models.get("llama-3-8b"), InferencePlan(), "trtllm-2025")


def test_an_fp4_gemm_of_few_tiles_streams_its_weights_on_the_sms_it_fills(catalog: Catalog) -> None:
    # NVFP4 on B200 (148 SMs, efficiency.toml's 128 x 128 output tile, no split-K): one token
    # through an 8,192 x 8,192 weight is 1 x 64 tiles, so 64 of the 148 SMs stream the weights:
    # 8192 x 8192 x 0.5625 B (FP4 and its block scales) at 64/148 of the streaming bandwidth.
    b200 = catalog.resolve_cluster("dgx-b200", 8)
    hardware = inference_hardware_for(b200, InferencePlan(precision="nvfp4"))
    stream = 8e12 * load_inference_parameters().stream_memory_efficiency
    weights = 8192 * 8192 * 0.5625 + 8192 * 0.5625 + 8192 * 2  # weights, the token in, the output
    expected = weights / (stream * 64 / 148)
    busy = float(np.ravel(gemm_time_s(hardware, 1.0, 8192, 8192))[0]) - hardware.floors.gpu_kernel_s
    assert busy == pytest.approx(expected, rel=0.01)
    # at 2,048 tokens its 16 x 64 = 1,024 tiles fill 7 waves of 148 SMs: 98.8% of them busy
    occupancy = hardware.gemm_model.fp4_tile_occupancy(2048, 8192, 1, 148)
    assert float(occupancy) == pytest.approx(1024 / (7 * 148))
    fp8 = inference_hardware_for(b200, InferencePlan(precision="fp8"))
    one_fp8 = float(np.ravel(gemm_time_s(fp8, 1.0, 8192, 8192))[0]) - fp8.floors.gpu_kernel_s
    # FP8 keeps the whole GPU streaming (no tile model for it): 8192 x 8192 x 1 B at full bandwidth
    assert one_fp8 == pytest.approx((8192 * 8192 + 8192 + 8192 * 2) / stream, rel=0.01)


def test_a_moe_layer_moves_each_routed_copy_of_a_token_twice(models: ModelRegistry, catalog: Catalog) -> None:
    """Expanding the tokens to the experts' order writes each routed copy once in the GEMM input
    format, and combining reads each expert's output row back in 16 bits. Hand calculation: an
    8,192-token prompt through one Qwen3-30B-A3B MoE layer (hidden 2,048, 8 of 128 experts) in FP8
    on one H200 routes 65,536 copies: 65,536 x 2,048 x (1 + 2) B = 402.7 MB at 80% of 4.8 TB/s,
    0.105 ms, beside the norms' and the SwiGLU's streaming (10 x hidden + 3 x 8 x 768 values of 2 B
    a token)."""
    model = models.get("qwen3-30b-a3b")
    plan = InferencePlan(precision="fp8")
    hardware = inference_hardware_for(catalog.cluster("dgx-h200"), plan, model=model)
    grid = _grid(
        plan, decode_sequences=0.0, prefill_tokens=8192.0, prefill_context=4096.0, prefill_requests=1.0
    )
    parts = {name: float(value[0]) for name, value in moe_layer_parts(grid, model, hardware).items()}
    stream = 4.8e12 * 0.80
    streaming = 8192 * (10 * 2048 + 3 * 8 * 768) * 2 / stream
    permutation = 8192 * 8 * 2048 * (1 + 2) / stream
    assert permutation == pytest.approx(0.105e-3, rel=0.01)
    assert parts["elementwise"] == pytest.approx(streaming + permutation, rel=0.01)
    # Mixtral's two of eight wide experts: the copies are under 1% of its GEMMs
    mixtral = models.get("mixtral-8x7b")
    wide = inference_hardware_for(catalog.cluster("dgx-h200"), plan, model=mixtral)
    mixtral_parts = moe_layer_parts(grid, mixtral, wide)
    copies = 8192 * 2 * 4096 * 3 / stream
    assert copies < 0.01 * float(mixtral_parts["gemm_compute"][0])
