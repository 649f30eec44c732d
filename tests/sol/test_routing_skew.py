"""The routing skew the inference engines assume under expert parallelism (sol/core/routing.py).

Golden values are TensorRT-LLM tech blog 4's Table 1 (DeepSeek-R1 on 32 GB200, EP 32, 8
experts per rank, a machine-translation dataset, per-layer per-iteration statistics averaged):
routed tokens by rank mean 1024, std 491.6, imbalance ratio (max - mean) / mean 1.564; by
expert mean 128, std 164.1, imbalance ratio 10.948; with EPLB 0.109 (9 slots, EP 32) and
0.115 (8 slots, EP 36). The model's one number is calibrated on the rank std alone; the other
statistics check it.
"""

from __future__ import annotations

import dataclasses
import itertools
from pathlib import Path

import numpy as np
import pytest

from lightspeed.catalog import load_catalog
from lightspeed.sol import InferencePlan, ServingLoad, estimate_inference
from lightspeed.sol.core.routing import (
    busiest_rank_factor,
    expert_shares,
    load_routing_skew,
    per_expert_cv,
    rank_loads,
)
from lightspeed.sol.core.serving_stacks import load_serving_stack
from lightspeed.sol.infer.iteration import IterationGrid, busiest_rank_imbalance
from lightspeed.workload import load_models

BLOG_RANK_STD_OVER_MEAN = 491.6 / 1024
BLOG_RANK_IMBALANCE_RATIO = 1.564
BLOG_EXPERT_IMBALANCE_RATIO = 10.948
BLOG_EXPERT_STD_OVER_MEAN = 164.1 / 128
BLOG_EPLB_RATIOS = (0.109, 0.115)


@pytest.fixture(scope="module")
def measured_setting() -> tuple[np.ndarray, np.ndarray]:
    """(expert shares, rank loads) of the model at the blog's setting: 256 experts, EP 32."""
    shares = expert_shares(256, load_routing_skew().per_expert_cv)
    return shares, rank_loads(shares, 32)


def test_the_data_file_holds_the_blogs_figures() -> None:
    skew = load_routing_skew()
    assert (skew.measured_ep, skew.measured_experts) == (32, 256)
    assert skew.measured_rank_std_over_mean == pytest.approx(BLOG_RANK_STD_OVER_MEAN, abs=5e-4)
    assert skew.measured_rank_imbalance_ratio == BLOG_RANK_IMBALANCE_RATIO
    assert skew.measured_expert_imbalance_ratio == BLOG_EXPERT_IMBALANCE_RATIO
    assert skew.measured_expert_std_over_mean == pytest.approx(BLOG_EXPERT_STD_OVER_MEAN, abs=5e-4)
    assert skew.balanced_imbalance_ratio == pytest.approx(sum(BLOG_EPLB_RATIOS) / 2, abs=5e-4)


def test_the_calibrated_spread_gives_the_measured_rank_std(measured_setting) -> None:
    _, ranks = measured_setting
    std_over_mean = float(np.mean(ranks.std(axis=1) / ranks.mean(axis=1)))
    assert std_over_mean == pytest.approx(BLOG_RANK_STD_OVER_MEAN, rel=0.02)


def test_the_busiest_rank_follows_the_measured_imbalance_ratio(measured_setting) -> None:
    _, ranks = measured_setting
    ratio = float(np.mean(ranks.max(axis=1) / ranks.mean(axis=1))) - 1.0
    assert ratio == pytest.approx(BLOG_RANK_IMBALANCE_RATIO, rel=0.05)
    assert busiest_rank_factor(256, 32, skew=load_routing_skew()) == pytest.approx(1.0 + ratio, rel=1e-9)


def test_the_hottest_expert_and_the_expert_spread_follow_the_measurement(measured_setting) -> None:
    shares, _ = measured_setting
    hottest = float(np.mean(shares.max(axis=1) / shares.mean(axis=1))) - 1.0
    spread = float(np.mean(shares.std(axis=1) / shares.mean(axis=1)))
    assert hottest == pytest.approx(BLOG_EXPERT_IMBALANCE_RATIO, rel=0.10)
    assert spread == pytest.approx(BLOG_EXPERT_STD_OVER_MEAN, rel=0.10)


def test_a_load_balancer_leaves_the_measured_residual_at_any_ep_size() -> None:
    skew = load_routing_skew()
    residual = 1.0 + sum(BLOG_EPLB_RATIOS) / 2
    for ep in (8, 32, 72):
        assert busiest_rank_factor(256, ep, skew=skew, balanced=True) == pytest.approx(residual, abs=0.001)


def test_the_skew_grows_with_the_ep_size_and_vanishes_without_it() -> None:
    skew = load_routing_skew()
    factors = [busiest_rank_factor(256, ep, skew=skew) for ep in (1, 2, 4, 8, 16, 32, 64)]
    assert factors[0] == 1.0
    assert all(later > earlier for earlier, later in itertools.pairwise(factors))
    # one expert per rank: the busiest rank is the hottest expert
    hottest = busiest_rank_factor(256, 256, skew=skew)
    assert hottest == pytest.approx(1.0 + BLOG_EXPERT_IMBALANCE_RATIO, rel=0.10)


def _grid(**changes: object) -> IterationGrid:
    base = {
        "tp": np.array([1.0]),
        "pp": np.array([1.0]),
        "ep": np.array([8.0]),
        "dp_attention": np.array([8.0]),
        "decode_sequences": np.array([1024.0]),
        "query_tokens": np.array([1.0]),
        "decode_context": np.array([2048.0]),
        "prefill_tokens": np.array([0.0]),
        "prefill_context": np.array([0.0]),
        "prefill_requests": np.array([0.0]),
        "group_prefill_tokens": np.array([0.0]),
    }
    base.update(changes)
    return IterationGrid(**base)  # type: ignore[arg-type]


def test_the_engine_takes_a_given_factor_else_the_skew_else_the_balancers_residual() -> None:
    model = load_models().get("deepseek-v3")
    trtllm, sglang = load_serving_stack("trtllm-2025"), load_serving_stack("sglang-2025")
    skew = load_routing_skew()
    unbalanced = busiest_rank_factor(256, 8, skew=skew)
    assert busiest_rank_imbalance(_grid(), model, trtllm)[0] == pytest.approx(unbalanced)
    assert busiest_rank_imbalance(_grid(expert_imbalance=np.array([1.25])), model, trtllm)[0] == 1.25
    residual = 1.0 + skew.balanced_imbalance_ratio
    with_replicas = _grid(physical_experts=np.array([288.0]))
    assert busiest_rank_imbalance(with_replicas, model, trtllm)[0] == pytest.approx(residual)
    assert sglang.expert_load_balancer
    assert not trtllm.expert_load_balancer
    assert busiest_rank_imbalance(_grid(), model, sglang)[0] == pytest.approx(residual)
    assert busiest_rank_imbalance(_grid(ep=np.array([1.0])), model, trtllm)[0] == 1.0


def _estimate(plan: InferencePlan):  # type: ignore[no-untyped-def]
    catalog, models = load_catalog(), load_models()
    return estimate_inference(
        model=models.get("deepseek-v3"),
        cluster=catalog.resolve_cluster("dgx-h200"),
        plan=plan,
        load=ServingLoad(input_tokens=1024, output_tokens=1024, concurrency=1024),
        num_gpus=8,
    )


def test_an_expert_parallel_plan_runs_at_the_skewed_pace_unless_told_otherwise() -> None:
    plan = InferencePlan(ep=8, dp_attention=8, precision="fp8")
    factor = busiest_rank_factor(256, 8, skew=load_routing_skew())
    default = _estimate(plan)
    given = _estimate(dataclasses.replace(plan, expert_imbalance=factor))
    assert default.tpot_s == pytest.approx(given.tpot_s)
    balanced = _estimate(dataclasses.replace(plan, expert_imbalance=1.0))
    assert default.tpot_s > balanced.tpot_s * 1.01  # the busiest rank's experts and dispatch cost more
    assert any(f"busiest of 8 EP ranks gets {factor:.2f}x" in line for line in default.assumptions)


def test_the_fitted_attention_dp_pace_is_named_only_where_the_plan_pays_it() -> None:
    pace = load_serving_stack("trtllm-2025").attention_dp_efficiency
    assert pace < 1.0
    wide = _estimate(InferencePlan(ep=8, dp_attention=8, precision="fp8"))
    narrow = _estimate(InferencePlan(tp=8, precision="fp8"))
    assert any(f"at {round(100 * pace)}% of that pace (a fitted factor" in line for line in wide.assumptions)
    assert not any("attention data parallelism" in line for line in narrow.assumptions)


def test_without_expert_parallelism_nothing_changes() -> None:
    plan = InferencePlan(tp=8, precision="fp8")
    assert _estimate(plan).tpot_s == _estimate(dataclasses.replace(plan, expert_imbalance=1.0)).tpot_s
    assert not any("EP ranks" in line for line in _estimate(plan).assumptions)


def test_the_cli_takes_a_factor_or_a_load_not_both(run_cli, tmp_path) -> None:  # type: ignore[no-untyped-def]
    base = ("plan", "infer", "--model", "deepseek-v3", "--system", "dgx-h200")
    base += ("--ep", "8", "--dp-attention", "8")
    shown = run_cli(*base, "--precision", "fp8")
    factor = busiest_rank_factor(256, 8, skew=load_routing_skew())
    assert shown.code == 0
    assert f"busiest of 8 EP ranks gets {factor:.2f}x the mean routed tokens" in " ".join(shown.out.split())
    even = run_cli(*base, "--precision", "fp8", "--expert-imbalance", "1", "--json")
    assert even.code == 0
    assert '"expert_imbalance": 1.0' in even.out
    load = tmp_path / "load.csv"
    load.write_text("layer,expert,count\n0,0,10\n")
    both = run_cli(*base, "--precision", "fp8", "--expert-imbalance", "1.2", "--expert-load", str(load))
    assert both.code == 2
    assert "give --expert-load or --expert-imbalance, not both" in both.err
    assert run_cli(*base, "--expert-imbalance", "0.5").code == 2


def test_a_coarser_router_is_the_measured_one_with_its_experts_merged() -> None:
    skew = load_routing_skew()
    # 8 experts, each the sum of 32 of the measured router's: the spread shrinks by sqrt(32)
    assert per_expert_cv(8, skew) == pytest.approx(skew.per_expert_cv / 32**0.5)
    # so a rank of one coarse expert and a rank of 32 fine ones see about the same skew
    coarse, fine = busiest_rank_factor(8, 8, skew=skew), busiest_rank_factor(256, 8, skew=skew)
    assert coarse == pytest.approx(fine, rel=0.03)


def test_the_moe_guide_quotes_the_factors_the_engine_uses() -> None:
    guide = (Path(__file__).resolve().parents[2] / "docs" / "moe.md").read_text(encoding="utf-8")
    header = next(line for line in guide.splitlines() if line.startswith("| EP ranks |"))
    contiguous = next(line for line in guide.splitlines() if line.startswith("| busiest rank over the mean"))
    balanced = next(line for line in guide.splitlines() if line.startswith("| with redundant experts"))
    sizes = [int(cell) for cell in header.strip("|").split("|")[1:]]
    skew = load_routing_skew()
    for ep, cell in zip(sizes, contiguous.strip("|").split("|")[1:], strict=True):
        assert float(cell) == round(busiest_rank_factor(256, ep, skew=skew), 2), ep
    for ep, cell in zip(sizes, balanced.strip("|").split("|")[1:], strict=True):
        assert float(cell) == round(busiest_rank_factor(256, ep, skew=skew, balanced=True), 2), ep
