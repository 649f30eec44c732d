"""Training a hybrid Mamba-Transformer (Nemotron 3) in the engine: its weights per GPU, the FLOPs
it executes and what tensor parallelism may split, against hand counts from config.json."""

from __future__ import annotations

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


def test_one_gpu_holds_every_parameter_once(models: ModelRegistry) -> None:
    # no parallelism: the average layers' shares of attention, Mamba and MoE blocks add up to the
    # model's blocks, so the GPU holds the parameter count (less the final norm's 2,688 weights)
    nano = models.get(NANO)
    grid = grid_from_plans([TrainingPlan(seq_len=SEQ, global_batch_size=1)])
    params = stage_params(grid, nano, layer_shapes(nano))
    held = float((params.dense + params.expert)[0])
    assert held == pytest.approx(parameter_counts(nano).total_params - nano.hidden_size, rel=1e-12)


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


def test_serving_a_hybrid_is_refused_with_the_reason(run_cli: Any) -> None:
    result = run_cli(
        "plan", "infer", "--model", NANO, "--system", "dgx-h100", "--isl", "1000", "--osl", "100"
    )
    assert result.code == 2
    assert "Mamba-2 blocks" in result.err
    assert len(result.err.strip().splitlines()) == 1
