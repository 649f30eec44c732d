"""A hybrid Mamba-Transformer (Nemotron 3) in the engines: the weights a training GPU holds, the
FLOPs it executes, what tensor parallelism may split, and a served sequence's Mamba-2 state (what a
decode step moves, what a request reserves), against hand counts from config.json."""

from __future__ import annotations

import dataclasses
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
from lightspeed.sol.train.memory import stage_params
from lightspeed.sol.train.plan import TrainingPlan
from lightspeed.workload import ModelRegistry, parameter_counts

NANO = "nemotron-3-nano-30b-a3b"
SEQ = 8192


@pytest.mark.parametrize("name", [NANO, "qwen3-next-80b-a3b"])
def test_one_gpu_holds_every_parameter_once(models: ModelRegistry, name: str) -> None:
    # no parallelism (and no MTP layer): the average layers' shares of attention, recurrent-mixer
    # (Mamba-2, Gated DeltaNet) and MoE blocks add up to the model's blocks, so the GPU holds the
    # parameter count less the final norm's weights (2,688 for Nano, 2,048 for Qwen3-Next)
    model = dataclasses.replace(models.get(name), num_mtp_modules=0)
    grid = grid_from_plans([TrainingPlan(seq_len=SEQ, global_batch_size=1)])
    params = stage_params(grid, model, layer_shapes(model))
    held = float((params.dense + params.expert)[0])
    assert held == pytest.approx(parameter_counts(model).total_params - model.hidden_size, rel=1e-12)


def test_the_layers_execute_their_blocks_flops(models: ModelRegistry, catalog: Catalog) -> None:
    nano = models.get(NANO)
    grid = grid_from_plans([TrainingPlan(seq_len=SEQ, global_batch_size=1)])
    hardware = hardware_for(catalog.resolve_cluster("h100-sxm"), "bf16")
    shapes = layer_shapes(nano)

    def flop(moe: bool) -> float:
        cost = layer_cost(grid, nano, shapes, hardware, seq_len=SEQ, moe=moe, recompute_fraction=0.0)
        return float(cost.hardware_flop[0])

    # Hand count per token, forward: linears 2 x weights a token meets; training runs them 3 times.
    h, attention_linears = 2688, 2688 * (32 + 2 * 2) * 128 + 32 * 128 * 2688
    mamba_linears = 2688 * (2 * 4096 + 2 * 8 * 128 + 64) + 4096 * 2688
    experts = 6 * 2 * h * 1856 + 2 * h * 3712 + h * 128  # top 6, one shared expert, the router
    # attention scores and values: 2 x 4096 attended (causal) x 32 heads x (128 + 128); x 3.5 trained
    core = 2 * (SEQ / 2) * 32 * 256 * (1 + FLASH_BACKWARD_FACTOR)
    scan = (2 * 8 * 128 * 128 + 2 * 64 * 128 * 64 + 4 * 64 * 128 * 64) * (1 + FLASH_BACKWARD_FACTOR)
    blocks = 6 * (6 * attention_linears + core) + 23 * (6 * mamba_linears + scan) + 23 * 6 * experts
    executed = 29 * flop(False) + 23 * flop(True)  # the engine's 29 non-MoE and 23 MoE layers
    assert executed == pytest.approx(SEQ * blocks, rel=1e-9)


def test_tensor_parallelism_splits_whole_mamba_groups(models: ModelRegistry, catalog: Catalog) -> None:
    plan = TrainingPlan(seq_len=SEQ, global_batch_size=16, tp=16)
    with pytest.raises(InvalidPlanError, match="does not divide the 8 Mamba groups"):
        estimate_training(
            model=models.get("nemotron-3-super-120b-a12b"),
            cluster=catalog.resolve_cluster("2xdgx-h100"),
            plan=plan,
        )


def test_plan_infer_serves_a_hybrid(run_cli: Any) -> None:
    result = run_cli(
        "plan",
        "infer",
        "--model",
        NANO,
        "--system",
        "h100-sxm",
        "--isl",
        "900",
        "--osl",
        "100",
        "--precision",
        "fp8",
        "--kv-precision",
        "fp8",
        "--json",
    )
    assert result.code == 0, result.err
    memory = json.loads(result.out)["memory_bytes"]
    assert memory["kv_cache_per_request"] == pytest.approx(1000 * 6 * 2 * 2 * 128 + 23 * NANO_STATE_BYTES)


def _stream_bytes_per_s() -> float:
    from lightspeed.sol.infer.inference_hardware import load_inference_parameters

    return 3.35e12 * load_inference_parameters().stream_memory_efficiency  # H100 SXM datasheet HBM


# Nano's Mamba-2 state per sequence per block: the FP32 SSM state of 64 heads x 64 x 128 and the
# convolution's last 3 inputs of its 4,096 + 2 x 8 x 128 channels in 16 bits
NANO_STATE_BYTES = 64 * 64 * 128 * 4 + 3 * (4096 + 2 * 8 * 128) * 2


def test_a_decode_step_reads_and_writes_each_sequences_state(models: ModelRegistry, catalog: Catalog) -> None:
    from grids import iteration_grid
    from lightspeed.sol import InferencePlan
    from lightspeed.sol.infer.inference_hardware import inference_hardware_for
    from lightspeed.sol.infer.iteration import iteration_cost

    nano = models.get(NANO)
    plan = InferencePlan(precision="fp8", kv_precision="fp8")
    hardware = inference_hardware_for(catalog.resolve_cluster("h100-sxm"), plan)
    sequences, context = 32.0, 3000.0
    grid = iteration_grid(ep=1.0, decode_sequences=sequences, decode_context=context)
    kv_cache = float(iteration_cost(grid, nano, hardware).parts["kv_cache"][0])
    per_token_per_layer = 2 * 2 * 128 * 1  # K and V of 2 KV heads of 128, FP8
    attention = sequences * 6 * (context + 1) * per_token_per_layer  # 6 attention blocks read, then write
    state = 2 * sequences * 23 * NANO_STATE_BYTES  # 23 Mamba blocks: read and written back
    assert kv_cache == pytest.approx((attention + state) / _stream_bytes_per_s(), rel=1e-6)


def test_a_request_reserves_its_state_whatever_its_length(models: ModelRegistry, catalog: Catalog) -> None:
    from lightspeed.sol import InferencePlan, ServingLoad, estimate_inference

    nano = models.get(NANO)
    plan = InferencePlan(precision="fp8", kv_precision="fp8")
    cluster = catalog.resolve_cluster("h100-sxm")
    per_token = 6 * 2 * 2 * 128  # 6 attention blocks, FP8 K and V
    for tokens in (1000, 4000):
        load = ServingLoad(input_tokens=tokens - 100, output_tokens=100)
        estimate = estimate_inference(model=nano, cluster=cluster, plan=plan, load=load)
        request = estimate.memory_bytes["kv_cache_per_request"]
        assert request == pytest.approx(tokens * per_token + 23 * NANO_STATE_BYTES, rel=1e-9)


def test_the_simulator_holds_each_sequences_state_in_its_cache(
    models: ModelRegistry, catalog: Catalog
) -> None:
    from lightspeed.sol import InferencePlan
    from lightspeed.sol.serve.deployment import simulated_deployment

    plan = InferencePlan(precision="fp8", kv_precision="fp8")
    deployment = simulated_deployment(
        model=models.get(NANO), cluster=catalog.resolve_cluster("h100-sxm"), plan=plan
    )
    # a rank's cache counts tokens of the 6 attention blocks; a sequence's state takes as many bytes
    assert deployment.pool.state_tokens_per_sequence == pytest.approx(
        23 * NANO_STATE_BYTES / (6 * 2 * 2 * 128)
    )


def test_a_hybrid_takes_no_transformer_familys_band() -> None:
    from lightspeed.sol.core.uncertainty import family_name, interval_for

    # its residuals are apart from the MoE transformers' (two sources so far: too few for a band of
    # its own, so the kind's whole band)
    assert family_name("train", moe=True, architecture="Hopper", hybrid=True) == "train/hybrid/hopper"
    for kind in ("train", "infer"):
        band = interval_for(kind, moe=True, architecture="Hopper", hybrid=True)
        assert band.family in (f"{kind}/hybrid/hopper", f"{kind}/hybrid", kind)
        assert band.family != interval_for(kind, moe=True, architecture="Hopper").family


def _pure_mamba() -> Any:
    from lightspeed.workload import AttentionSpec, MambaSpec, TransformerSpec

    return TransformerSpec(
        name="pure-mamba",
        display_name="pure Mamba-2",
        num_layers=4,
        block_pattern="MMMM",
        hidden_size=256,
        ffn_hidden_size=1,
        vocab_size=1000,
        attention=AttentionSpec("mha", 1, 1, 64),
        mamba=MambaSpec(num_heads=8, head_dim=64, state_size=16, num_groups=1),
        position_embedding="none",
    )


def test_a_model_without_attention_blocks_counts_its_scan_alone() -> None:
    from lightspeed.workload import flops_per_token
    from lightspeed.workload.flops import recurrent_scan_forward_flop

    model = _pure_mamba()
    figures = flops_per_token(model, seq_len=4096, convention="6N+causal-attention")  # had divided by 0
    assert figures.attention_training_flop == pytest.approx(3 * recurrent_scan_forward_flop(model))
    scan = recurrent_scan_forward_flop(model)
    assert figures.training_flop == pytest.approx(6 * figures.num_params + 3 * scan)


def test_the_simulator_says_why_it_cannot_hold_a_model_without_attention(catalog: Catalog) -> None:
    from lightspeed.sol import InferencePlan
    from lightspeed.sol.serve.deployment import simulated_deployment

    with pytest.raises(InvalidPlanError, match="no attention blocks"):
        simulated_deployment(
            model=_pure_mamba(), cluster=catalog.resolve_cluster("h100-sxm"), plan=InferencePlan()
        )
