"""DeepSeek Sparse Attention (DeepSeek-V3.2, GLM-5): the lightning indexer's weights and cache, what
a sparse layer keeps and reads, and what the engines charge, against hand calculations from the
published configs (deepseek-ai/DeepSeek-V3.2-Exp config.json and inference/model.py; GLM-5's
config.json) and TensorRT-LLM's DeepSeek-V3.2 blog (the indexer whole on every TP rank, DSA in
MLA's MQA mode for prefill and decode)."""

from __future__ import annotations

import dataclasses

import pytest

from grids import iteration_grid
from lightspeed.catalog import Catalog
from lightspeed.errors import UserInputError
from lightspeed.sol import (
    InferencePlan,
    ServingLoad,
    default_efficiency,
    estimate_inference,
    load_serving_stack,
)
from lightspeed.sol.infer.inference_hardware import inference_hardware_for, load_inference_parameters
from lightspeed.sol.infer.iteration import iteration_cost
from lightspeed.workload import (
    AttentionSpec,
    ModelRegistry,
    TransformerSpec,
    attention_forward_flop,
    cached_tokens,
    kv_cache_bytes,
    kv_cache_reserved_bytes,
    layer_attention_kinds,
    parameter_counts,
)
from lightspeed.workload.attention import mean_cached_tokens, mean_read_tokens

H100_BANDWIDTH = 3.35e12  # B/s, H100 SXM datasheet
H100_BF16 = 989.5e12  # dense FLOP/s, H100 SXM datasheet
H100_FP8 = 1979e12
LAYERS = 61  # DeepSeek-V3.2
# the indexer's key cache per token per layer: 128 FP8 values and one FP32 scale per 128
INDEX_KEY_BYTES = 128 + 4
LATENT = 512 + 64  # MLA's cached latent and RoPE key


def test_the_indexer_weights_by_hand(models: ModelRegistry) -> None:
    # inference/model.py Indexer: wq_b (q_lora_rank 1536 -> 64 x 128), wk (7168 -> 128), k_norm
    # LayerNorm (scale and bias of 128), weights_proj (7168 -> 64 heads)
    per_layer = 1536 * 64 * 128 + 7168 * 128 + 2 * 128 + 7168 * 64
    assert per_layer == 13_959_424
    sparse, dense = (parameter_counts(models.get(name)) for name in ("deepseek-v3.2", "deepseek-v3"))
    assert sparse.total_params - dense.total_params == LAYERS * per_layer
    assert sparse.attention_params_per_layer - dense.attention_params_per_layer == per_layer
    assert sparse.active_params - dense.active_params == LAYERS * per_layer


def test_glm5_against_its_published_size(models: ModelRegistry) -> None:
    """744B total and 40B active (the vLLM GLM-5.2 post); GLM-5's indexer: 32 heads from a query
    latent of 2,048, keys of 128 from the hidden state of 6,144."""
    counts = parameter_counts(models.get("GLM-5.2-NVFP4"))
    assert counts.total_params == pytest.approx(744e9, rel=0.005)
    embedding_and_head = 2 * 154880 * 6144
    assert counts.active_params - embedding_and_head == pytest.approx(40e9, rel=0.01)
    indexer = 2048 * 32 * 128 + 6144 * 128 + 2 * 128 + 6144 * 32
    glm = models.get("glm-5")
    without = dataclasses.replace(
        glm,
        attention=dataclasses.replace(
            glm.attention, index_topk=None, index_n_heads=None, index_head_dim=None
        ),
    )
    assert counts.total_params - parameter_counts(without).total_params == 78 * indexer


def test_a_sparse_layer_keeps_every_token_and_reads_its_top_k(models: ModelRegistry) -> None:
    model = models.get("deepseek-v3.2")
    assert set(layer_attention_kinds(model)) == {"sparse"}
    assert float(cached_tokens("sparse", 2048, 65536)) == 65536
    assert float(mean_read_tokens("sparse", 2048, 65536, 65536)) == 2048
    assert float(mean_read_tokens("sparse", 2048, 1000, 1000)) == 1000  # below k: every token
    assert float(mean_cached_tokens("sparse", 2048, 0, 65536)) == 32768
    # fp8 KV: 576 latent bytes and the indexer's 132 per token per layer, every token kept
    assert float(kv_cache_bytes(model, "fp8", 32768)) == LAYERS * (LATENT + INDEX_KEY_BYTES) * 32768
    assert (
        float(kv_cache_reserved_bytes(model, "bf16", 4096)) == LAYERS * (2 * LATENT + INDEX_KEY_BYTES) * 4096
    )


def test_the_kv_limited_batch_counts_the_indexer_cache(models: ModelRegistry, catalog: Catalog) -> None:
    estimate = estimate_inference(
        model=models.get("deepseek-v3.2"),
        cluster=catalog.cluster("dgx-h200"),
        plan=InferencePlan(tp=8, precision="fp8"),
        load=ServingLoad(input_tokens=32768, output_tokens=1),
    )
    # MLA's latent and the indexer key are whole on every TP rank
    assert estimate.memory_bytes["kv_cache_per_request"] == LAYERS * (LATENT + INDEX_KEY_BYTES) * 32769


def test_forward_flops_stop_at_the_top_k_and_add_the_indexer(models: ModelRegistry) -> None:
    # full square at 8,192: the MLA attends 2,048 keys with 128 heads of 192 + 128; the indexer
    # scores all 8,192 with 64 heads of 128
    main = 2 * 2048 * 128 * (192 + 128)
    indexer = 2 * 8192 * 64 * 128
    flop = attention_forward_flop(models.get("deepseek-v3.2"), seq_len=8192, causal=False)
    assert flop == pytest.approx(LAYERS * (main + indexer), rel=1e-12)


def test_decode_reads_the_top_k_latents_and_every_indexer_key(
    models: ModelRegistry, catalog: Catalog
) -> None:
    """16 sequences at 65,536 tokens on a TP-8 H100 node, fp8 KV: each reads 2,048 latents of 576 B
    and all 65,536 indexer keys of 132 B, and writes then reads one FP32 score per key (8 B); the
    token each step adds is written (708 B a layer). Every one of these kernels is memory-bound."""
    plan = InferencePlan(tp=8, ep=8, precision="fp8")
    inference_hardware = inference_hardware_for(catalog.cluster("dgx-h100"), plan)
    grid = iteration_grid(8.0, decode_sequences=16.0, decode_context=65536.0)
    kv = float(iteration_cost(grid, models.get("deepseek-v3.2"), inference_hardware).parts["kv_cache"][0])
    read = 16 * (2048 * LATENT + 65536 * (INDEX_KEY_BYTES + 8))
    written = 16 * (LATENT + INDEX_KEY_BYTES)
    stream = H100_BANDWIDTH * load_inference_parameters().stream_memory_efficiency
    assert kv == pytest.approx(LAYERS * (read + written) / stream, rel=1e-6)
    # the dense model reads all 65,536 latents: 4.5x the sparse one's bytes at this context
    dense = iteration_cost(grid, models.get("deepseek-v3"), inference_hardware).parts["kv_cache"][0]
    assert float(dense) == pytest.approx(LAYERS * 16 * (65536 + 1) * LATENT / stream, rel=1e-6)


def test_prefill_runs_the_top_k_in_mqa_form_and_the_indexer_in_fp8(
    models: ModelRegistry, catalog: Catalog
) -> None:
    """A 32,768-token prompt on one H100, bf16 KV: a causal query attends 2,048 - 2,048²/65,536 =
    1,984 latents with 128 heads of 512 + 64 (scores) + 512 (values) at the bf16 peak, and the
    indexer scores 16,384 keys on average with 64 heads of 128 at the FP8 peak."""
    plan = InferencePlan(precision="bf16")
    inference_hardware = inference_hardware_for(catalog.resolve_cluster("h100-sxm"), plan)
    grid = iteration_grid(1.0, prefill_tokens=32768.0, prefill_context=16384.0, prefill_requests=1.0)
    parts = iteration_cost(grid, models.get("deepseek-v3.2"), inference_hardware).parts
    attended = 2048 - 2048**2 / (2 * 32768)
    main = LAYERS * 2 * 32768 * attended * 128 * (512 + 64 + 512)
    indexer = LAYERS * 2 * 32768 * 16384 * 64 * 128
    hopper = default_efficiency("nvidia-hopper")
    kernels = load_serving_stack().kernel_efficiency
    main_rate = (
        H100_BF16 * kernels * hopper.attention_efficiency("flash", backward=False, seq_len=2 * attended)
    )
    indexer_rate = H100_FP8 * kernels * hopper.attention_efficiency("flash", backward=False, seq_len=32768)
    expected = main / main_rate + indexer / indexer_rate
    assert float(parts["attention_compute"][0]) == pytest.approx(expected, rel=0.002)


@pytest.mark.parametrize(("serving", "computed_heads"), [("vllm-2026", 64), ("trtllm-2025", 16)])
def test_vllms_sparse_kernels_pad_a_tensor_parallel_ranks_heads_to_64(
    models: ModelRegistry, catalog: Catalog, serving: str, computed_heads: int
) -> None:
    """At TP 8 a rank holds 16 of DeepSeek-V3.2's 128 heads; vLLM's FlashMLA sparse kernels compute
    64 (flashmla_sparse.py: 'FP8 decode kernel only supports h_q = 64 or 128, so we need to pad';
    the BF16 prefill kernel pads too), TensorRT-LLM's own kernel the 16 (its SwapsMmaAb). The
    indexer, whole on every rank, is the same on both."""
    plan = InferencePlan(tp=8, ep=8, precision="bf16")
    inference_hardware = inference_hardware_for(catalog.cluster("dgx-h100"), plan, serving=serving)
    grid = iteration_grid(8.0, prefill_tokens=32768.0, prefill_context=16384.0, prefill_requests=1.0)
    parts = iteration_cost(grid, models.get("deepseek-v3.2"), inference_hardware).parts
    attended = 2048 - 2048**2 / (2 * 32768)
    main = LAYERS * 2 * 32768 * attended * computed_heads * (512 + 64 + 512)
    indexer = LAYERS * 2 * 32768 * 16384 * 64 * 128
    hopper = default_efficiency("nvidia-hopper")
    kernels = inference_hardware.serving.kernel_efficiency
    main_rate = (
        H100_BF16 * kernels * hopper.attention_efficiency("flash", backward=False, seq_len=2 * attended)
    )
    indexer_rate = H100_FP8 * kernels * hopper.attention_efficiency("flash", backward=False, seq_len=32768)
    expected = main / main_rate + indexer / indexer_rate
    assert float(parts["attention_compute"][0]) == pytest.approx(expected, rel=0.002)


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"index_n_heads": None}, "index_n_heads missing"),
        ({"kind": "gqa", "num_kv_heads": 8, "kv_lora_rank": None}, "MLA's query latent"),
        ({"q_lora_rank": None}, "MLA's query latent"),
        ({"sliding_window": 4096}, "on every layer"),
        ({"index_topk": 0}, "index_topk must be"),
    ],
)
def test_a_malformed_indexer_is_refused_in_one_line(
    models: ModelRegistry, change: dict[str, object], words: str
) -> None:
    attention = models.get("deepseek-v3.2").attention
    fields = {**dataclasses.asdict(attention), **change}
    with pytest.raises(UserInputError, match=words) as raised:
        AttentionSpec(**fields)  # type: ignore[arg-type]
    assert "\n" not in str(raised.value)


def test_sparse_layers_cannot_be_listed_without_an_indexer() -> None:
    with pytest.raises(UserInputError, match="no index_topk"):
        TransformerSpec(
            name="t",
            display_name="t",
            num_layers=2,
            hidden_size=64,
            ffn_hidden_size=256,
            vocab_size=100,
            attention=AttentionSpec("mha", 4, 4, 16, layer_types=("sparse", "full")),
        )
