"""Deployment search: feasibility under latency bounds, the Pareto frontier, unreachable bounds."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lightspeed.catalog import Catalog
from lightspeed.errors import InvalidPlanError
from lightspeed.sol import InferencePlan, ServingLoad, search_inference
from lightspeed.sol.infer.inference_hardware import inference_hardware_for
from lightspeed.sol.infer.memory import memory_of
from lightspeed.sol.infer.search import pareto_front, prefill_front
from lightspeed.sol.infer.search_space import replica_shapes, replica_stages
from lightspeed.sol.infer.serving import Deployments, ServingContext, prefill_pool_arrays
from lightspeed.workload import ModelRegistry


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(0.0, 1e4), st.floats(0.1, 1e3)), min_size=1, max_size=40))
def test_pareto_front_keeps_exactly_the_undominated_points(points: list[tuple[float, float]]) -> None:
    per_gpu = np.asarray([p[0] for p in points])
    per_user = np.asarray([p[1] for p in points])
    front = set(pareto_front(per_gpu, per_user).tolist())

    def dominated(i: int) -> bool:
        return any(
            per_gpu[j] >= per_gpu[i]
            and per_user[j] >= per_user[i]
            and (per_gpu[j], per_user[j]) != (per_gpu[i], per_user[i])
            for j in range(len(points))
        )

    for index in range(len(points)):
        if index in front:
            assert not dominated(index)
        else:  # every point left out is beaten or tied by one kept
            assert any(per_gpu[j] >= per_gpu[index] and per_user[j] >= per_user[index] for j in front)


def test_shapes_tile_the_cluster(models: ModelRegistry) -> None:
    # a prefill pool of TP 1 with attention DP 2 and EP 2 beside decode replicas of any shape
    other = (1, 2, 2, 1)
    shapes = replica_shapes(models.get("mixtral-8x7b"), 16, 8, split_pools=True, prefill_stages=[other])
    assert shapes
    for tp, dp, ep, pp, prefill, decode, *prefill_stage in shapes:
        assert tp <= 8
        assert 32 % tp == 0
        stage = tp * dp
        prefill_tp, prefill_dp, _, prefill_pp = prefill_stage
        assert stage * pp * decode + prefill_tp * prefill_dp * prefill_pp * prefill == 16
        assert stage % ep == 0
        assert 8 % ep == 0
        if prefill == 0:  # aggregated: one shape
            assert tuple(prefill_stage) == (tp, dp, ep, pp)
        else:
            assert tuple(prefill_stage) in {(tp, dp, ep, pp), other}
    # TP 8 decode replicas (8 GPUs) beside 4 prefill replicas of 2 GPUs, and beside one of their own
    assert (8, 1, 8, 1, 4, 1, *other) in shapes
    assert (8, 1, 8, 1, 1, 1, 8, 1, 8, 1) in shapes
    dense = replica_shapes(models.get("llama-3-8b"), 8, 8, split_pools=False)
    assert all(dp == 1 and ep == 1 for _, dp, ep, *_ in dense)  # attention DP and EP are for MoE


def test_best_deployment_meets_the_bounds_and_tops_the_frontier(
    models: ModelRegistry, catalog: Catalog
) -> None:
    result = search_inference(
        model=models.get("llama-3-70b"),
        cluster=catalog.resolve_cluster("dgx-h100"),
        load=ServingLoad(2048, 512),
        precision="fp8",
        max_ttft_s=2.0,
        max_tpot_s=0.05,
    )
    best = result.best
    assert best.ttft_s <= 2.0
    assert best.tpot_s <= 0.05
    assert best.num_gpus == 8
    assert result.num_points_feasible <= result.num_points_evaluated
    users = [point.output_tokens_per_s_per_user for point in result.frontier]
    gpus = [point.output_tokens_per_s_per_gpu for point in result.frontier]
    assert users == sorted(users)
    assert gpus == sorted(gpus, reverse=True)  # trading per-user speed for throughput
    feasible = [p for p in result.frontier if p.tpot_s <= 0.05]
    assert max(p.output_tokens_per_s_per_gpu for p in feasible) == pytest.approx(
        best.output_tokens_per_s_per_gpu, rel=0.02
    )


def test_unreachable_bound_names_the_best_reachable(models: ModelRegistry, catalog: Catalog) -> None:
    with pytest.raises(InvalidPlanError, match=r"meets TPOT <= 1 ms: the lowest TTFT .* the lowest TPOT"):
        search_inference(
            model=models.get("llama-3-70b"),
            cluster=catalog.resolve_cluster("dgx-h100"),
            load=ServingLoad(1024, 256),
            precision="fp8",
            max_tpot_s=0.001,
        )


def test_a_model_too_big_for_the_cluster_is_refused(models: ModelRegistry, catalog: Catalog) -> None:
    with pytest.raises(InvalidPlanError, match="does not fit any split"):
        search_inference(
            model=models.get("llama-3-405b"),
            cluster=catalog.resolve_cluster("dgx-a100"),
            load=ServingLoad(1024, 256),
            precision="bf16",
        )


def test_a_split_search_gives_the_prefill_pool_a_shape_of_its_own(
    models: ModelRegistry, catalog: Catalog
) -> None:
    """DeepSeek-V3 on a GB200 NVL72 with 8K prompts: the best split runs its prompts on small
    replicas (most prompts per second per GPU) beside decode replicas with attention DP, the two
    pools tiling the 72 GPUs; its scalar estimate (pool_split) is the search's own point."""
    result = search_inference(
        model=models.get("deepseek-v3"),
        cluster=catalog.resolve_cluster("gb200-nvl72"),
        load=ServingLoad(8192, 1024),
        precision="fp8",
        max_ttft_s=2.0,
        max_tpot_s=0.05,
        disaggregated=True,
        frontier_points=100_000,  # the whole front
    )
    plan = result.best.plan
    assert plan.disaggregated is not None
    assert plan.prefill_shape is not None
    prefill, decode = plan.disaggregated
    decode_gpus = plan.tp * plan.dp_attention * plan.pp
    assert prefill * plan.prefill_shape.gpus + decode * decode_gpus == 72
    assert plan.prefill_shape.gpus < decode_gpus
    assert "prefill pool takes" in " ".join(result.constraints)
    feasible = [p for p in result.frontier if p.tpot_s <= 0.05 and p.ttft_s <= 2.0]
    assert max(p.output_tokens_per_s_per_gpu for p in feasible) == pytest.approx(
        result.best.output_tokens_per_s_per_gpu, rel=0.02
    )


def test_the_prefill_front_keeps_exactly_the_shapes_no_other_beats(
    models: ModelRegistry, catalog: Catalog
) -> None:
    """Every replica shape that holds Llama 3 70B and one 8K prompt is on the front or beaten on
    both prompts per second per GPU and prompt time by one on it; TP 1 on one H100 cannot hold it."""
    model = models.get("llama-3-70b")
    cluster = catalog.resolve_cluster("dgx-h100")
    load = ServingLoad(8192, 512)
    hardware = inference_hardware_for(cluster, InferencePlan(precision="bf16"), model=model)
    ctx = ServingContext(model, hardware, load)
    stages = replica_stages(model, 8, 8)
    front = prefill_front(ctx, stages)
    assert front
    assert (1, 1, 1, 1) not in front  # 141 GB of bf16 weights in 80 GB
    tp, dp, ep, pp = (np.asarray(column, dtype=np.float64) for column in zip(*stages, strict=True))
    pools = Deployments(tp=tp, pp=pp, ep=ep, dp_attention=dp, batch=np.ones_like(tp))
    arrays = prefill_pool_arrays(pools, ctx)
    per_gpu = np.asarray(arrays.requests_per_s) / (tp * dp * pp)
    ttft = np.asarray(arrays.ttft_s)
    fits = memory_of(model, hardware, pools, ServingLoad(8192, 1)).fits
    kept = [stages.index(stage) for stage in front]
    for index, stage in enumerate(stages):
        if not fits[index] or stage in front:
            continue
        assert any(per_gpu[k] >= per_gpu[index] and ttft[k] <= ttft[index] for k in kept), stage
    assert [per_gpu[k] for k in kept] == sorted((per_gpu[k] for k in kept), reverse=True)
    # a TTFT bound keeps only the shapes whose prompt time meets it
    bound = float(np.median(ttft[fits]))
    bounded = prefill_front(ctx, stages, max_ttft_s=bound)
    assert bounded
    assert all(ttft[stages.index(stage)] <= bound for stage in bounded)
    # each decode pool takes its own shape and at most one front shape: the space at most doubles
    same = replica_shapes(model, 8, 8, split_pools=True)
    paired = replica_shapes(model, 8, 8, split_pools=True, prefill_stages=front)
    assert len(same) < len(paired) <= 2 * len(same)
