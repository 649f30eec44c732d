"""Plan search: vectorized results agree with single-plan estimates; contract and speed bookkeeping."""

from __future__ import annotations

import pytest

from lightspeed.catalog import Catalog
from lightspeed.errors import InvalidPlanError
from lightspeed.sol import SearchSpace, estimate_training, search_training
from lightspeed.workload import ModelRegistry


def test_search_ranks_fitting_plans_and_matches_single_estimates(
    catalog: Catalog, models: ModelRegistry
) -> None:
    model = models.get("llama-3-70b")
    cluster = catalog.cluster("dgx-h100", num_nodes=8)
    result = search_training(model=model, cluster=cluster, global_batch_size=256, seq_len=4096, top=5)
    assert result.num_plans_evaluated > 1000
    assert 0 < result.num_plans_fitting <= result.num_plans_evaluated
    steps = [plan.step_time_s for plan in result.plans]
    assert steps == sorted(steps)
    assert all(plan.fits for plan in result.plans)
    best = result.plans[0]
    again = estimate_training(model=model, cluster=cluster, plan=best.plan)
    assert again.step_time_s == pytest.approx(best.step_time_s, rel=1e-12)
    assert again.memory_per_gpu_bytes == pytest.approx(best.memory_per_gpu_bytes, rel=1e-12)
    assert len(result.why_best) == 2
    assert result.why_best[0].startswith("beats #2 (")


def test_an_uneven_best_plan_says_so_and_is_the_one_plan_train_prices_with_uneven_stages(
    catalog: Catalog, models: ModelRegistry
) -> None:
    """Llama 3 70B on 64 H100, batch 512 of 8,192 tokens: the best plan runs pp=4 x vpp=3 = 12
    chunks over 80 layers (80 / 12 is no whole number: the last stage takes fewer). The search
    marks it uneven (plan summary, note), and that plan with uneven stages is what a single
    estimate prices identically, while the same degrees with even stages are refused."""
    model = models.get("llama-3-70b")
    cluster = catalog.cluster("dgx-h100", num_nodes=8)
    result = search_training(model=model, cluster=cluster, global_batch_size=512, seq_len=8192, top=5)
    uneven = [
        estimate for estimate in result.plans if model.num_layers % (estimate.plan.pp * estimate.plan.vpp)
    ]
    assert uneven
    for estimate in uneven:
        assert estimate.plan.uneven_pipeline
        assert estimate.plan_summary()["uneven_pipeline"] is True
    assert any(
        note.startswith("* uneven stages: pp x vpp does not divide the 80 layers") for note in result.notes
    )
    plan = uneven[0].plan
    again = estimate_training(model=model, cluster=cluster, plan=plan)
    assert again.step_time_s == pytest.approx(uneven[0].step_time_s, rel=1e-12)
    with pytest.raises(InvalidPlanError, match="does not divide the 80 layers"):
        estimate_training(model=model, cluster=cluster, plan=plan.with_changes(uneven_pipeline=False))


def test_search_keeps_tensor_parallel_inside_the_domain_when_asked(
    catalog: Catalog, models: ModelRegistry
) -> None:
    result = search_training(
        model=models.get("llama-3-70b"),
        cluster=catalog.cluster("dgx-h100", num_nodes=4),
        global_batch_size=128,
        seq_len=4096,
        top=20,
        max_tp=8,
    )
    assert max(plan.plan.tp for plan in result.plans) <= 8


def test_every_plan_in_a_small_space_is_evaluated(catalog: Catalog, models: ModelRegistry) -> None:
    space = SearchSpace(
        tp=(1, 2, 4, 8),
        cp=(1,),
        pp=(1, 2),
        ep=(1,),
        vpp=(1,),
        micro_batch=(1, 2),
        recompute=("none", "full"),
        zero_stage=(1,),
        schedules=("1f1b",),
    )
    result = search_training(
        model=models.get("llama-3-8b"),
        cluster=catalog.cluster("dgx-h100", num_nodes=1),
        global_batch_size=16,
        seq_len=4096,
        space=space,
        top=64,
    )
    # dp = 8 / (tp x pp) must divide the batch of 16: (tp, pp) pairs with tp*pp <= 8 -> 7 of 8
    assert result.num_plans_evaluated == 7 * 2 * 2
    assert len(result.plans) == 28


def test_an_impossible_batch_is_a_clear_error(catalog: Catalog, models: ModelRegistry) -> None:
    with pytest.raises(InvalidPlanError, match="no valid plan"):
        search_training(
            model=models.get("llama-3-8b"),
            cluster=catalog.cluster("dgx-h100", num_nodes=1),
            global_batch_size=3,
            seq_len=4096,
            space=SearchSpace(
                tp=(8,),
                cp=(1,),
                pp=(1,),
                ep=(1,),
                vpp=(1,),
                micro_batch=(2,),
                recompute=("none",),
                zero_stage=(1,),
                schedules=("1f1b",),
            ),
        )
