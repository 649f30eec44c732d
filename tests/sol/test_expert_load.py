"""A measured expert load in the engines: stage factors by hand, layouts, redundant-expert memory,
the imbalance's cost, and the searches."""

from __future__ import annotations

import numpy as np
import pytest

from lightspeed.catalog import load_catalog
from lightspeed.errors import InvalidPlanError, UserInputError
from lightspeed.moe import (
    expert_load_balance,
    inference_load_effect,
    inference_plan_with_load,
    plan_with_load,
    synthetic_load,
    training_load_effect,
)
from lightspeed.moe.effect import training_layout
from lightspeed.sol import (
    InferencePlan,
    ServingLoad,
    TrainingPlan,
    compare_systems,
    estimate_inference,
    estimate_training,
    search_inference,
    search_training,
)
from lightspeed.sol.core.shapes import layer_shapes
from lightspeed.sol.infer.inference_hardware import inference_hardware_for
from lightspeed.sol.infer.memory import stage_weight_bytes
from lightspeed.sol.train.grid import grid_from_plans
from lightspeed.sol.train.memory import stage_params
from lightspeed.workload import load_models

MODELS = load_models()
CATALOG = load_catalog()
MIXTRAL = MODELS.get("mixtral-8x7b")  # 32 MoE layers, 8 experts, top-2, no groups
DEEPSEEK = MODELS.get("deepseek-v3")  # 61 layers, the first 3 dense, 256 experts in 8 groups


def _skewed(layers: int = 32, experts: int = 8, skew: float = 1.2) -> np.ndarray:
    return synthetic_load(
        num_layers=layers, num_experts=experts, skew=skew, num_tokens=50_000, top_k=2
    ).array()


def test_stage_factor_by_hand() -> None:
    balance = expert_load_balance(load=np.ones((32, 8)), model=MIXTRAL)
    per_layer = np.array([1.0] * 16 + [1.5] * 16)
    assert balance.stage_factor(per_layer, pp=1, vpp=1) == 1.25  # one stage runs all 32 layers
    assert balance.stage_factor(per_layer, pp=2, vpp=1) == 1.5  # stage 1 holds the slow half
    # 4 chunks of 8 layers, chunk c on stage c % 2: each stage gets one fast and one slow chunk
    assert balance.stage_factor(per_layer, pp=2, vpp=2) == 1.25


def test_dense_layers_are_not_moe_layers() -> None:
    balance = expert_load_balance(load=np.ones((58, 256)), model=DEEPSEEK)
    assert balance.moe_layer_index.tolist() == list(range(3, 61))
    # pp=2 splits 61 layers 31/30: stage 0 holds MoE layers 3..30 (28), stage 1 31..60 (30)
    per_layer = np.array([2.0] * 28 + [1.0] * 30)
    assert balance.stage_factor(per_layer, pp=2, vpp=1) == 2.0
    assert balance.num_groups == 8  # group-limited routing: hierarchical placement applies


def test_layouts_and_policies() -> None:
    load = _skewed(58, 256, 0.8)
    balance = expert_load_balance(load=load, model=DEEPSEEK, num_physical_experts=288)
    cluster = CATALOG.resolve_cluster("dgx-h100", num_accelerators=256)
    consecutive = training_layout(balance, TrainingPlan(tp=1, ep=32, dp=256, pp=1), cluster)
    assert (consecutive.ep, consecutive.num_nodes) == (32, 4)  # 32 ranks in a row: 4 nodes of 8
    strided = training_layout(balance, TrainingPlan(tp=8, ep=32, dp=32, pp=1), cluster)
    assert strided.num_nodes == 32  # tp=8 puts every EP rank on its own node
    assert balance.layers(32, 4)[2] == "hierarchical"
    assert balance.layers(32, 32)[2] == "global"  # 8 groups do not divide over 32 nodes
    assert float(balance.imbalance(ep=[1], num_nodes=[1], pp=[1], vpp=[1])[0]) == 1.0  # one GPU


@pytest.mark.parametrize(
    ("load", "replicas", "model", "message"),
    [
        (np.ones((32, 16)), None, MIXTRAL, "16 experts per layer, mixtral-8x7b routes to 8"),
        (np.ones((4, 8)), None, MIXTRAL, "4 layers, mixtral-8x7b has 32 MoE layers"),
        (np.ones((32, 8)), 6, MIXTRAL, "6 replicas cannot hold the 8 experts"),
        (np.ones((32, 8)), None, MODELS.get("llama-3-8b"), "is dense"),
    ],
)
def test_loads_that_do_not_fit_the_model(
    load: np.ndarray, replicas: int | None, model: object, message: str
) -> None:
    with pytest.raises(UserInputError, match=message):
        expert_load_balance(load=load, model=model, num_physical_experts=replicas)  # type: ignore[arg-type]


def test_one_layer_applies_to_all() -> None:
    balance = expert_load_balance(load=[[4, 1, 1, 1, 1, 1, 1, 2]], model=MIXTRAL)
    # 8 experts on 8 GPUs, no replicas: the busiest GPU holds the 4 of a mean 1.5
    assert float(balance.imbalance(ep=[8], num_nodes=[1], pp=[4], vpp=[1])[0]) == pytest.approx(4 / 1.5)


def test_training_memory_counts_the_replicas() -> None:
    plan = TrainingPlan(tp=2, pp=4, dp=8, ep=8, global_batch_size=256)
    replicated = plan.with_changes(num_physical_experts=16)
    shapes = layer_shapes(MIXTRAL)
    plain = stage_params(grid_from_plans([plan]), MIXTRAL, shapes)
    more = stage_params(grid_from_plans([replicated]), MIXTRAL, shapes)
    assert float(more.expert[0]) == pytest.approx(2.0 * float(plain.expert[0]))  # 16 / 8 experts
    assert float(more.dense[0]) == float(plain.dense[0])
    with pytest.raises(InvalidPlanError, match="12 physical experts do not split over ep=8"):
        estimate_training(
            model=MIXTRAL, cluster=CATALOG.resolve_cluster("dgx-h100", num_accelerators=64),
            plan=plan.with_changes(num_physical_experts=12),
        )  # fmt: skip


def test_inference_weights_count_the_replicas() -> None:
    """Mixtral on 8 GPUs, tp=8 ep=8: each GPU holds whole experts; 8 extra replicas add one
    expert per GPU per layer: 3 x 4096 x 14336 parameters x 32 layers x 1 byte (fp8)."""
    cluster = CATALOG.cluster("dgx-h100")
    plan = InferencePlan(tp=8, ep=8, precision="fp8")
    inference_hardware = inference_hardware_for(cluster, plan, None)
    shapes = layer_shapes(MIXTRAL)
    degrees = {"tp": 8.0, "pp": 1.0, "ep": 8.0, "dp_attention": 1.0}
    plain = stage_weight_bytes(MIXTRAL, shapes, inference_hardware, **degrees)
    more = stage_weight_bytes(MIXTRAL, shapes, inference_hardware, **degrees, physical_experts=16.0)
    assert float(more - plain) == pytest.approx(3 * 4096 * 14336 * 32 * 1.0)


def test_imbalance_slows_the_expert_gemms_of_inference() -> None:
    cluster = CATALOG.cluster("dgx-h100")
    load = ServingLoad(4096, 256, concurrency=256)  # prefill-heavy: the expert GEMMs are compute-bound
    plan = InferencePlan(tp=8, ep=8, precision="fp8")
    even = estimate_inference(
        model=MIXTRAL, cluster=cluster, plan=plan.with_changes(expert_imbalance=1.0), load=load
    )
    skewed = estimate_inference(
        model=MIXTRAL, cluster=cluster, plan=plan.with_changes(expert_imbalance=1.5), load=load
    )
    assert skewed.iteration_breakdown_s["gemm_compute"] > even.iteration_breakdown_s["gemm_compute"]
    assert (
        skewed.iteration_breakdown_s["attention_compute"] == even.iteration_breakdown_s["attention_compute"]
    )
    with pytest.raises(InvalidPlanError, match="slowdown factor"):
        InferencePlan(expert_imbalance=0.5)


def test_training_effect_is_the_difference_to_balanced_experts() -> None:
    cluster = CATALOG.resolve_cluster("dgx-h100", num_accelerators=64)
    balance = expert_load_balance(load=_skewed(), model=MIXTRAL, num_physical_experts=16, source="test")
    plan = plan_with_load(
        TrainingPlan(tp=2, pp=4, dp=8, ep=8, global_batch_size=256), balance=balance, cluster=cluster
    )
    assert plan.num_physical_experts == 16
    assert plan.expert_imbalance > 1.0
    estimate = estimate_training(model=MIXTRAL, cluster=cluster, plan=plan)
    effect = training_load_effect(estimate=estimate, balance=balance, model=MIXTRAL, cluster=cluster)
    ideal = estimate_training(model=MIXTRAL, cluster=cluster, plan=plan.with_changes(expert_imbalance=1.0))
    assert effect.balanced_step_s == ideal.step_time_s
    assert effect.imbalance_cost_s == pytest.approx(estimate.step_time_s - ideal.step_time_s)
    assert 0 < effect.imbalance_share < 1
    assert effect.unbalanced_step_s is not None
    assert effect.unbalanced_step_s > effect.step_s  # experts in order, no replicas: slower
    assert effect.unbalanced_expert_imbalance is not None
    assert effect.unbalanced_expert_imbalance > effect.expert_imbalance
    assert effect.num_redundant_experts == 8
    assert effect.redundant_expert_bytes > 0
    assert effect.expert_imbalance == plan.expert_imbalance
    assert len(effect.layer_imbalance) == 32


def test_search_gives_every_plan_its_layouts_imbalance() -> None:
    cluster = CATALOG.resolve_cluster("dgx-h100", num_accelerators=64)
    balance = expert_load_balance(load=_skewed(), model=MIXTRAL, num_physical_experts=16)
    result = search_training(
        model=MIXTRAL,
        cluster=cluster,
        global_batch_size=256,
        seq_len=4096,
        top=5,
        expert_balance=balance,
        max_tp=8,
    )
    for estimate in result.plans:
        plan = estimate.plan
        assert plan.num_physical_experts == (16 if plan.ep > 1 else None)
        assert 16 % plan.ep == 0
        assert (
            plan.expert_imbalance == plan_with_load(plan, balance=balance, cluster=cluster).expert_imbalance
        )


def test_inference_plan_search_and_comparison() -> None:
    cluster = CATALOG.cluster("dgx-h100")
    balance = expert_load_balance(load=_skewed(), model=MIXTRAL, num_physical_experts=16)
    plan = inference_plan_with_load(
        InferencePlan(tp=8, ep=8, precision="fp8"), balance=balance, cluster=cluster
    )
    load = ServingLoad(1024, 256)
    estimate = estimate_inference(model=MIXTRAL, cluster=cluster, plan=plan, load=load)
    effect = inference_load_effect(estimate=estimate, balance=balance, model=MIXTRAL, cluster=cluster)
    assert effect.workload == "infer"
    assert effect.step_s == estimate.iteration_s
    assert effect.balanced_step_s <= effect.step_s
    assert effect.redundant_expert_bytes == pytest.approx(3 * 4096 * 14336 * 32 * 1.0)
    # The effect is costed under the estimate's own serving profile: with every expert equally
    # loaded the balanced step is the deployment's step exactly, on any profile (the 2023
    # TensorRT-LLM one adds host time per iteration that the default does not).
    even = expert_load_balance(load=np.full((32, 8), 1000.0), model=MIXTRAL)
    even_plan = inference_plan_with_load(
        InferencePlan(tp=8, ep=8, precision="fp8"), balance=even, cluster=cluster
    )
    for serving in ("trtllm-2023", "trtllm-2025"):
        run = estimate_inference(model=MIXTRAL, cluster=cluster, plan=even_plan, load=load, serving=serving)
        even_effect = inference_load_effect(estimate=run, balance=even, model=MIXTRAL, cluster=cluster)
        assert even_effect.balanced_step_s == pytest.approx(run.iteration_s, rel=1e-12), serving
    best = search_inference(
        model=MIXTRAL, cluster=cluster, load=load, precision="fp8", expert_balance=balance
    ).best
    # replicas live in an EP group; without expert parallelism one GPU holds every expert once
    assert best.plan.num_physical_experts == (16 if best.plan.ep > 1 else None)
    assert 16 % best.plan.ep == 0
    comparison = compare_systems(
        model=MIXTRAL, clusters=[cluster], workload="infer", precisions=["fp8"],
        options={"load": load, "expert_balance": balance},
    )  # fmt: skip
    effect = comparison.results[0].expert_load
    assert effect is not None
    assert effect.num_physical_experts == (16 if effect.ep > 1 else 8)
    unreplicated = plan_with_load(TrainingPlan(tp=8, dp=8, ep=1), balance=balance, cluster=cluster)
    assert unreplicated.num_physical_experts is None
    assert unreplicated.expert_imbalance == 1.0
