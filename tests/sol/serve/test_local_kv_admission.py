"""KV admission of models with local attention layers (issue: helper C's report, defect 3).

A server that never evicts a running request (``reserve``) must keep, per layer, the most that
layer holds over the request's life: ``t`` tokens on a global layer, ``min(t, W)`` on a window,
``min(t, C)`` on a chunk (a Llama 4 chunked layer holds a whole chunk just before each boundary),
not what it holds at the final length. An on-demand server counts a decoding sequence from what
its admission counted (the prompt's) and grows it by what a token adds, so a sequence does not
jump to every token on every layer when its prompt completes.
"""

from __future__ import annotations

from lightspeed.catalog import Catalog
from lightspeed.sol.infer.plan import InferencePlan
from lightspeed.sol.serve import (
    ArrivalProcess,
    LengthDistribution,
    SchedulerConfig,
    ServingWorkload,
    simulate_deployment,
    simulated_deployment,
)
from lightspeed.workload import ModelRegistry


def _offline(isl: int, osl: int, count: int) -> ServingWorkload:
    return ServingWorkload(
        ArrivalProcess.offline(), LengthDistribution.fixed(isl), LengthDistribution.fixed(osl), count
    )


def test_reserve_keeps_a_whole_chunk_per_chunked_layer(catalog: Catalog, models: ModelRegistry) -> None:
    """Llama 4 Scout (12 global layers, 36 chunked at 8,192) at 8,192 + 1,024 tokens: each chunked
    layer holds all 8,192 tokens of chunk 0 before the 8,193rd token starts chunk 1, so a request
    reserves (12 x 9,216 + 36 x 8,192) / 48 = 8,448 tokens of every layer (the 405,504 token-layers,
    198 MiB per GPU at TP 8 in bf16, of plan infer's static model), not the (12 x 9,216 + 36 x 1,024)
    / 48 = 3,072 it holds at the end; the running batch is the cache over that (2.75x fewer)."""
    scout = models.get("llama-4-scout")
    deployment = simulated_deployment(
        model=scout,
        cluster=catalog.cluster("dgx-h100"),
        plan=InferencePlan(tp=8, precision="bf16", kv_precision="bf16", max_batch=2000),
        scheduler=SchedulerConfig(kv_policy="reserve"),
        serving="trtllm-2025",
        num_gpus=8,
    )
    per_request = 8448  # a whole number of 16-token blocks
    expected = deployment.kv_tokens_per_rank // per_request
    assert expected >= 100  # the cache, not the request count, bounds the batch
    result = simulate_deployment(deployment, _offline(8192, 1024, expected + 40))
    assert result.max_running == expected
    assert result.num_preemptions == 0
    assert deployment.kv_reserved_tokens(9216) == (12 * 9216 + 36 * 8192) / 48 == per_request
    assert deployment.kv_equivalent_tokens(9216) == (12 * 9216 + 36 * 1024) / 48


def test_on_demand_sliding_window_decodes_count_what_the_layers_hold(
    catalog: Catalog, models: ModelRegistry
) -> None:
    """Gemma 3 27B (10 global layers, 52 with a 1,024-token window) on one H100 under vLLM
    (on-demand blocks, 1% watermark): a 30,000-token prompt holds (10 x 30,000 + 52 x 1,024) / 62
    = 5,697.5 tokens of every layer and, 1,024 tokens later, (10 x 31,024 + 52 x 1,024) / 62 =
    5,862.7 (only the global layers grow). So as many run as the cache less the watermark admits
    by their prompts, and all of them finish without a preemption; counting every decoding token
    on every layer (30,000+ each) left room for one sequence at a time."""
    gemma = models.get("gemma-3-27b")
    deployment = simulated_deployment(
        model=gemma,
        cluster=catalog.cluster("dgx-h100", num_accelerators=1),
        plan=InferencePlan(tp=1, precision="bf16"),
        serving="vllm-2025",
        num_gpus=1,
    )
    assert deployment.kv_policy == "on-demand"
    watermark = deployment.hardware.serving.admission_watermark
    prompt = (10 * 30000 + 52 * 1024) / 62
    final = (10 * 31024 + 52 * 1024) / 62
    block = 16
    prompt_blocks = -(-prompt // block) * block
    capacity = deployment.kv_tokens_per_rank
    admitted = int(capacity * (1 - watermark) // prompt_blocks)
    assert admitted >= 3  # so the check below means something
    assert admitted * (final + block) <= capacity  # every admitted one can finish
    result = simulate_deployment(deployment, _offline(30000, 1024, 2 * admitted))
    assert result.max_running == admitted
    assert result.num_preemptions == 0


def test_a_long_request_fits_by_what_its_local_layers_hold(catalog: Catalog, models: ModelRegistry) -> None:
    """The issue's own case: Gemma 3 27B on one H100 at a 32K prompt, under vLLM (a 33,134-token
    cache). A 32,768 + 1,024-token request holds at most (10 x 33,792 + 52 x 1,024) / 62 = 6,309.2
    tokens of every layer; counting 33,792 tokens on every layer refused it ("does not fit")."""
    gemma = models.get("gemma-3-27b")
    deployment = simulated_deployment(
        model=gemma,
        cluster=catalog.cluster("dgx-h100", num_accelerators=1),
        plan=InferencePlan(tp=1, precision="bf16"),
        serving="vllm-2025",
        num_gpus=1,
    )
    assert deployment.kv_reserved_tokens(33792) == (10 * 33792 + 52 * 1024) / 62
    assert deployment.kv_reserved_tokens(33792) < deployment.kv_tokens_per_rank < 33792
    result = simulate_deployment(deployment, _offline(32768, 1024, 3))
    assert result.num_completed == 3


def test_vllm_v0_keeps_whole_prompt_steps_for_an_mla_model_whatever_its_context(
    catalog: Catalog, models: ModelRegistry
) -> None:
    """vLLM V0 turns chunked prefill on by default above a 32K context on NVIDIA GPUs, except for
    MLA models, where v0.7.1-v0.7.3 force it off ('MLA is enabled; forcing chunked prefill and
    prefix caching to be disabled'): DeepSeek-R1 (163,840 tokens) keeps separate whole-prompt
    steps, a dense model of 131,072 tokens (Llama 3.1 8B) mixes."""

    def separate(model: str, gpus: int) -> bool:
        return simulated_deployment(
            model=models.get(model),
            cluster=catalog.cluster("dgx-h200", num_accelerators=gpus),
            plan=InferencePlan(tp=gpus, precision="fp8"),
            serving="vllm-2024",
            num_gpus=gpus,
        ).separate_prefill

    assert models.get("deepseek-r1").max_seq_len == 163_840
    assert separate("deepseek-r1", 8)
    assert not separate("llama-3.1-8b", 1)
