"""Servers' default caps on sequences in flight: vLLM's max_num_seqs, SGLang's max running
requests and trtllm-bench's max batch size, in the analytic estimate and in the simulator.

Expected values are the servers' own rules, worked by hand below (sources in
sol/data/stacks.toml): vLLM 1,024 on GPUs of at least 70 GiB that are not A100s, else 256;
SGLang min(max(kv_tokens / context_len * 512, 2048), 4096), at most half the KV tokens;
trtllm-bench at most 4,096.
"""

from __future__ import annotations

import dataclasses

import pytest

from lightspeed.catalog import Catalog
from lightspeed.sol import InferencePlan, ServingLoad, estimate_inference, load_serving_stack
from lightspeed.sol.core.serving_choice import serving_stack_for
from lightspeed.sol.core.serving_stacks import GpuDefault, SequenceCap, ServingStack
from lightspeed.sol.serve.deployment import simulated_deployment
from lightspeed.workload import ModelRegistry

SHORT = ServingLoad(input_tokens=128, output_tokens=128)
ONE_GPU = InferencePlan(
    tp=1, precision="fp8", kv_precision="fp8"
)  # the cache named: servers' defaults differ


def _batch(models: ModelRegistry, catalog: Catalog, system: str, serving: ServingStack, **plan: int) -> int:
    estimate = estimate_inference(
        model=models.get("llama-3-8b"),
        cluster=catalog.resolve_cluster(system, 1),
        plan=dataclasses.replace(ONE_GPU, **plan),
        load=SHORT,
        batching="continuous",
        serving=serving,
    )
    return estimate.max_batch


@pytest.mark.parametrize(
    ("system", "expected"),
    [("h100", 1024), ("h200", 1024), ("a100", 256), ("l40s", 256)],
)
def test_vllm_caps_sequences_by_gpu_memory_and_name(
    models: ModelRegistry, catalog: Catalog, system: str, expected: int
) -> None:
    # Llama 3 8B in FP8 holds thousands of 256-token requests on each of these GPUs (checked
    # without the cap), so the cap is what binds: 80 GB H100 and 141 GB H200 are over 70 GiB;
    # the A100 80 GB is too but is excluded by name; the 48 GB L40S is under.
    vllm = load_serving_stack("vllm-2025")
    uncapped = _batch(models, catalog, system, dataclasses.replace(vllm, sequence_cap=None))
    assert uncapped > 1024
    assert _batch(models, catalog, system, vllm) == expected


def test_a_users_max_batch_replaces_the_servers_default(models: ModelRegistry, catalog: Catalog) -> None:
    # --max-batch is the server's max_num_seqs: 2,000 on an H100 goes past vLLM's default 1,024,
    # and stays within the KV cache
    vllm = load_serving_stack("vllm-2025")
    assert _batch(models, catalog, "h100", vllm, max_batch=2000) == 2000
    assert _batch(models, catalog, "h100", vllm, max_batch=10**7) < 10**7


def test_trtllm_bench_caps_the_batch_at_4096(models: ModelRegistry, catalog: Catalog) -> None:
    trtllm = load_serving_stack("trtllm-2025")
    assert _batch(models, catalog, "h200", dataclasses.replace(trtllm, sequence_cap=None)) > 4096
    assert _batch(models, catalog, "h200", trtllm) == 4096


@pytest.mark.parametrize(
    ("kv_tokens", "expected"),
    [
        (1_000_000, 3906),  # 1e6 / 131072 * 512 = 3906.25
        (4_000_000, 4096),  # 15,625, clamped to 4,096
        (100_000, 2048),  # 390, raised to 2,048 (below half the KV tokens, 50,000)
        (3_000, 1500),  # 2,048 is more than half the KV tokens: 1,500
    ],
)
def test_sglang_derives_its_cap_from_the_kv_cache(kv_tokens: int, expected: int) -> None:
    cap = load_serving_stack("sglang-2025").sequence_cap
    assert cap is not None
    limit = cap.limit(kv_tokens=kv_tokens, context_tokens=131072, accelerator="H100 SXM", memory_bytes=80e9)
    assert int(limit) == expected


def test_stacks_without_a_default_cap_keep_the_kv_limit() -> None:
    assert load_serving_stack("trtllm-2023").sequence_cap is None
    assert load_serving_stack("deepseek-2025").sequence_cap is None
    fixed = SequenceCap(GpuDefault((), 4096))
    assert int(fixed.limit(kv_tokens=10, context_tokens=1, accelerator="x", memory_bytes=0.0)) == 4096


def test_the_simulator_admits_the_same_cap(models: ModelRegistry, catalog: Catalog) -> None:
    model = models.get("llama-3-8b")
    cluster = catalog.resolve_cluster("h100", 1)
    vllm = load_serving_stack("vllm-2025")
    capped = simulated_deployment(model=model, cluster=cluster, plan=ONE_GPU, serving=vllm)
    assert capped.max_sequences_per_rank == 1024
    plain = simulated_deployment(
        model=model, cluster=cluster, plan=ONE_GPU, serving=dataclasses.replace(vllm, sequence_cap=None)
    )
    assert plain.max_sequences_per_rank > 1024


def test_the_plan_says_which_cap_applies(models: ModelRegistry, catalog: Catalog) -> None:
    estimate = estimate_inference(
        model=models.get("llama-3-8b"),
        cluster=catalog.resolve_cluster("h100", 1),
        plan=ONE_GPU,
        load=SHORT,
        batching="continuous",
        serving=load_serving_stack("vllm-2025"),
    )
    expected = "default cap on sequences per replica: 256 below 70 GiB, else 1,024 (a100: 256)"
    assert any(expected in line for line in estimate.assumptions)


@pytest.mark.parametrize(
    ("serving", "system", "expected"),
    [
        # SGLang: below 35 GiB 2,048, below 160 GiB 8,192, else 16,384 (the L4 holds 24 GB, the
        # H100 80 GB, the B200 180 GB)
        ("sglang-2025", "l4", 2048),
        ("sglang-2025", "h100", 8192),
        ("sglang-2025", "b200", 16384),
        # vLLM's server: 8,192 on 70 GiB or more unless an A100, else 2,048
        ("vllm-2025", "h100", 8192),
        ("vllm-2025", "a100", 2048),
        ("vllm-2025", "l40s", 2048),
        # TensorRT-LLM's LLM API: max_num_tokens 8,192 (the global default)
        ("trtllm-2025", "b200", 8192),
    ],
)
def test_each_server_chunks_prompts_by_its_own_default(
    models: ModelRegistry, catalog: Catalog, serving: str, system: str, expected: int
) -> None:
    deployment = simulated_deployment(
        model=models.get("llama-3.2-1b"),
        cluster=catalog.resolve_cluster(system, 1),
        plan=ONE_GPU,
        serving=load_serving_stack(serving),
    )
    assert deployment.max_batched_tokens_per_rank == expected
    assert deployment.hardware.parameters.prefill_chunk_tokens == expected


def test_vllms_v0_engine_caps_sequences_at_256_on_any_gpu(models: ModelRegistry, catalog: Catalog) -> None:
    # vLLM's V0 engine (0.4-0.7, the 2024 releases): EngineArgs.__post_init__ sets
    # 'max_num_seqs = 256 if not envs.VLLM_USE_V1 else 1024' (vllm/engine/arg_utils.py @001999d2),
    # with no per-GPU tiers; the V1 engine (0.8 on) gives an H100 1,024
    v0, v1 = load_serving_stack("vllm-2024"), load_serving_stack("vllm-2025")
    assert _batch(models, catalog, "h100", v0) == 256
    assert _batch(models, catalog, "h200", v0) == 256
    assert _batch(models, catalog, "h100", v1) == 1024


@pytest.mark.parametrize(
    ("text", "year", "version", "expected"),
    [
        ("vLLM benchmark_throughput.py", 2024, None, "vllm-2024"),  # a 2024 row: the V0 engine
        ("vLLM benchmark_throughput.py", 2025, None, "vllm-2025"),
        ("vLLM v0.6.3", 2024, (0, 6), "vllm-2024"),
        ("vLLM v0.10.2", 2024, (0, 10), "vllm-2025"),  # the release, not the year, decides
        ("vLLM v0.13.0", 2026, (0, 13), "vllm-2025"),
        # from 0.14 async scheduling is on by default (v0.14.0 release notes, pull request #27614)
        ("vllm bench serve, vLLM v0.23.0", 2025, (0, 23), "vllm-2026"),
        ("vLLM benchmark sweep", 2026, None, "vllm-2026"),
    ],
)
def test_a_vllm_row_picks_its_engine_by_release_else_year(
    text: str, year: int, version: tuple[int, int] | None, expected: str
) -> None:
    assert serving_stack_for(text, year, version)[0].name == expected
