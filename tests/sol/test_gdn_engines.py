"""A Gated DeltaNet hybrid (Qwen3-Next, Qwen3.5) in the engines: the weights a training GPU holds,
the FLOPs it executes, what tensor parallelism may split, and a served sequence's delta-rule state
(what a decode step moves, what a request reserves, what the simulator's cache holds), against
hand counts from config.json (the weights one GPU holds: tests/sol/test_hybrid_engines.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from lightspeed.catalog import Catalog
from lightspeed.errors import InvalidPlanError
from lightspeed.sol import estimate_training
from lightspeed.sol.core.hardware import hardware_for
from lightspeed.sol.core.shapes import layer_shapes
from lightspeed.sol.train.grid import grid_from_plans
from lightspeed.sol.train.layer_cost import FLASH_BACKWARD_FACTOR, layer_cost
from lightspeed.sol.train.plan import TrainingPlan
from lightspeed.workload import ModelRegistry

NEXT = "qwen3-next-80b-a3b"
SEQ = 4096
H = 2048
# one sequence's state in one Gated DeltaNet block: 32 value heads' 128 x 128 matrices and the
# convolution's last 3 inputs of its 2 x 16 x 128 + 32 x 128 channels, all in 16 bits
STATE_BYTES = (32 * 128 * 128 + 3 * 8192) * 2
KV_PER_TOKEN_FP8 = 12 * 2 * 2 * 256  # 12 attention blocks, K and V of 2 heads of 256, FP8


def test_the_layers_execute_their_blocks_flops(models: ModelRegistry, catalog: Catalog) -> None:
    model = models.get(NEXT)
    grid = grid_from_plans([TrainingPlan(seq_len=SEQ, global_batch_size=1)])
    hardware = hardware_for(catalog.resolve_cluster("h100-sxm"), "bf16")
    shapes = layer_shapes(model)

    def flop(moe: bool) -> float:
        cost = layer_cost(grid, model, shapes, hardware, seq_len=SEQ, moe=moe, recompute_fraction=0.0)
        return float(cost.hardware_flop[0])

    # Hand count per token, forward: linears 2 x weights a token meets; training runs them 3 times.
    attention_linears = H * (16 * 2 + 2 * 2) * 256 + 16 * 256 * H  # q and its gate, k, v; o
    gdn_linears = H * (2 * 16 * 128 + 2 * 32 * 128 + 2 * 32) + 32 * 128 * H
    experts = 10 * 3 * H * 512 + 3 * H * 512 + H * 512 + H  # top 10, the shared expert, router, gate
    core = 2 * (SEQ / 2) * 16 * 512 * (1 + FLASH_BACKWARD_FACTOR)  # causal: 2048 keys, 16 heads
    chunk, key = 64, 128
    scan = 32 * (10 * chunk * key + 2 * chunk**2 / 3 + 6 * key * key) * (1 + FLASH_BACKWARD_FACTOR)
    blocks = 12 * (6 * attention_linears + core) + 36 * (6 * gdn_linears + scan) + 48 * 6 * experts
    executed = 48 * flop(False) + 48 * flop(True)  # the engine's 48 mixer and 48 MoE layers
    assert executed == pytest.approx(SEQ * blocks, rel=1e-9)


def test_tensor_parallelism_splits_whole_query_key_heads(models: ModelRegistry, catalog: Catalog) -> None:
    # Qwen3.5-397B: 32 attention heads, 2 KV heads, but 16 Gated DeltaNet query/key heads
    plan = TrainingPlan(seq_len=SEQ, global_batch_size=32, tp=32)
    with pytest.raises(InvalidPlanError, match="does not divide the 16 Gated DeltaNet query/key heads"):
        estimate_training(
            model=models.get("qwen3.5-397b-a17b"), cluster=catalog.resolve_cluster("4xdgx-h100"), plan=plan
        )


def _stream_bytes_per_s() -> float:
    from lightspeed.sol.infer.inference_hardware import load_inference_parameters

    return 3.35e12 * load_inference_parameters().stream_memory_efficiency  # H100 SXM datasheet HBM


def test_a_decode_step_reads_and_writes_each_sequences_state(models: ModelRegistry, catalog: Catalog) -> None:
    from grids import iteration_grid
    from lightspeed.sol import InferencePlan
    from lightspeed.sol.infer.inference_hardware import inference_hardware_for
    from lightspeed.sol.infer.iteration import iteration_cost

    plan = InferencePlan(precision="fp8", kv_precision="fp8")
    hardware = inference_hardware_for(catalog.resolve_cluster("h100-sxm"), plan)
    sequences, context = 16.0, 2000.0
    grid = iteration_grid(ep=1.0, decode_sequences=sequences, decode_context=context)
    kv_cache = float(iteration_cost(grid, models.get(NEXT), hardware).parts["kv_cache"][0])
    attention = sequences * (context + 1) * KV_PER_TOKEN_FP8  # read, then the new token written
    state = 2 * sequences * 36 * STATE_BYTES  # 36 Gated DeltaNet blocks: read and written back
    assert kv_cache == pytest.approx((attention + state) / _stream_bytes_per_s(), rel=1e-6)


def test_plan_infer_reserves_the_state_per_request(run_cli: Any) -> None:
    result = run_cli(
        "plan", "infer", "--model", NEXT, "--system", "h100-sxm", "--isl", "900", "--osl", "100",
        "--precision", "fp8", "--kv-precision", "fp8", "--json",
    )  # fmt: skip
    assert result.code == 0, result.err
    memory = json.loads(result.out)["memory_bytes"]
    assert memory["kv_cache_per_request"] == pytest.approx(1000 * KV_PER_TOKEN_FP8 + 36 * STATE_BYTES)


def test_the_simulator_holds_each_sequences_state_in_its_cache(
    models: ModelRegistry, catalog: Catalog
) -> None:
    from lightspeed.sol import InferencePlan
    from lightspeed.sol.serve.deployment import simulated_deployment

    plan = InferencePlan(precision="fp8", kv_precision="fp8")
    deployment = simulated_deployment(
        model=models.get(NEXT), cluster=catalog.resolve_cluster("h100-sxm"), plan=plan
    )
    assert deployment.pool.state_tokens_per_sequence == pytest.approx(36 * STATE_BYTES / KV_PER_TOKEN_FP8)


def test_a_gdn_hybrid_takes_the_hybrid_band(models: ModelRegistry) -> None:
    from lightspeed.sol.core.uncertainty import model_interval

    band = model_interval("infer", models.get(NEXT), "Hopper")
    assert band.family.startswith("infer/hybrid") or band.family == "infer"
