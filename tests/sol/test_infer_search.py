"""Deployment search: feasibility under latency bounds, the Pareto frontier, unreachable bounds."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lightspeed.catalog import Catalog
from lightspeed.errors import InvalidPlanError
from lightspeed.sol import ServingLoad, search_inference
from lightspeed.sol.infer.search import pareto_front, replica_shapes
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
    shapes = replica_shapes(models.get("mixtral-8x7b"), 16, 8, split_pools=True)
    assert shapes
    for tp, dp, ep, pp, prefill, decode in shapes:
        assert tp <= 8
        assert 32 % tp == 0
        stage = tp * dp
        assert (stage * pp) * (prefill + decode if prefill else decode) == 16
        assert stage % ep == 0
        assert 8 % ep == 0
    assert any(prefill > 0 for *_, prefill, _ in shapes)
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
