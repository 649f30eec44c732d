"""Training estimates: invariants (property tests) and hand-checked quantities."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lightspeed.catalog import Catalog, Cluster, LinkAttachment
from lightspeed.sol import TrainingPlan, estimate_training
from lightspeed.sol.train.step import BREAKDOWN_PARTS
from lightspeed.workload import ModelRegistry

PLANS = st.fixed_dictionaries(
    {
        "tp": st.sampled_from([1, 2, 4, 8]),
        "pp": st.sampled_from([1, 2, 4]),
        "vpp": st.sampled_from([1, 2]),
        "micro_batch_size": st.sampled_from([1, 2]),
        "zero_stage": st.sampled_from([0, 1, 2, 3]),
        "recompute": st.sampled_from(["none", "selective", "full"]),
        "dp_overlap": st.booleans(),
        "tp_overlap": st.booleans(),
    }
)


def _plan(choice: dict[str, object], dp: int) -> TrainingPlan:
    tp, pp = int(choice["tp"]), int(choice["pp"])  # type: ignore[call-overload]
    vpp = int(choice["vpp"]) if pp > 1 else 1  # type: ignore[call-overload]
    zero = int(choice["zero_stage"])  # type: ignore[call-overload]
    zero = 2 if zero == 3 and pp > 1 else zero  # ZeRO-3 with PP is refused (test_plan.py)
    return TrainingPlan(
        tp=tp,
        pp=pp,
        dp=dp,
        vpp=vpp,
        micro_batch_size=int(choice["micro_batch_size"]),  # type: ignore[call-overload]
        global_batch_size=64 * dp,
        seq_len=4096,
        zero_stage=zero,
        recompute=str(choice["recompute"]),
        dp_overlap=bool(choice["dp_overlap"]),
        tp_overlap=bool(choice["tp_overlap"]),
    )


@settings(max_examples=40, deadline=None)
@given(choice=PLANS)
def test_breakdown_parts_sum_to_the_step(
    choice: dict[str, object], catalog: Catalog, models: ModelRegistry
) -> None:
    plan = _plan(choice, dp=2)
    cluster = catalog.cluster("dgx-h100", num_accelerators=plan.num_gpus)
    estimate = estimate_training(model=models.get("llama-3-8b"), cluster=cluster, plan=plan)
    assert set(estimate.breakdown_s) == set(BREAKDOWN_PARTS)
    assert all(value >= 0 for value in estimate.breakdown_s.values())
    assert sum(estimate.breakdown_s.values()) == pytest.approx(estimate.step_time_s, rel=1e-12)


@settings(max_examples=30, deadline=None)
@given(choice=PLANS)
def test_more_gpus_never_grow_per_gpu_memory(
    choice: dict[str, object], catalog: Catalog, models: ModelRegistry
) -> None:
    model = models.get("llama-3-70b")
    small = _plan(choice, dp=2)
    large = small.with_changes(dp=8, global_batch_size=small.global_batch_size)
    memory = []
    for plan in (small, large):
        cluster = catalog.cluster("dgx-h100", num_accelerators=plan.num_gpus)
        memory.append(estimate_training(model=model, cluster=cluster, plan=plan).memory_per_gpu_bytes)
    assert memory[1] <= memory[0] * (1 + 1e-12)


def _faster_links(cluster: Cluster, factor: float) -> Cluster:
    accelerator = cluster.system.accelerator
    scale_up = accelerator.scale_up
    assert scale_up is not None
    link = replace(scale_up.link, per_direction_bytes_per_s=scale_up.link.per_direction_bytes_per_s * factor)
    system = replace(cluster.system, accelerator=replace(accelerator, scale_up=replace(scale_up, link=link)))
    fabric = cluster.fabric
    if fabric is not None:
        out = replace(fabric.link, per_direction_bytes_per_s=fabric.link.per_direction_bytes_per_s * factor)
        fabric = LinkAttachment(link=out, num_links=fabric.num_links, source=fabric.source)
    return Cluster(system=system, num_nodes=cluster.num_nodes, fabric=fabric)


@settings(max_examples=30, deadline=None)
@given(choice=PLANS, factor=st.floats(min_value=1.0, max_value=8.0))
def test_faster_links_never_slow_a_step(
    choice: dict[str, object], factor: float, catalog: Catalog, models: ModelRegistry
) -> None:
    model = models.get("llama-3-70b")
    plan = _plan(choice, dp=4)
    cluster = catalog.cluster("dgx-h100", num_accelerators=plan.num_gpus)
    base = estimate_training(model=model, cluster=cluster, plan=plan).step_time_s
    faster = estimate_training(model=model, cluster=_faster_links(cluster, factor), plan=plan).step_time_s
    assert faster <= base * (1 + 1e-12)


def test_mfu_is_model_flops_over_time_and_peak(catalog: Catalog, models: ModelRegistry) -> None:
    model = models.get("llama-3-8b")
    plan = TrainingPlan(tp=1, dp=8, micro_batch_size=1, global_batch_size=64, seq_len=8192)
    estimate = estimate_training(model=model, cluster=catalog.cluster("dgx-h100", num_nodes=1), plan=plan)
    # 6N + 6·L·s·H·d (causal) per token, N = 8.03e9 less the 128256 x 4096 embedding lookup
    # (Megatron-Core counts the layers and the LM head, the parameters that multiply)
    per_token = 6 * (8.030261248e9 - 128256 * 4096) + 6 * 32 * 8192 * 32 * 128
    expected = per_token * 64 * 8192 / estimate.step_time_s / (8 * 989.5e12)
    assert estimate.model_flop_per_token == pytest.approx(per_token, rel=1e-6)
    assert estimate.mfu == pytest.approx(expected, rel=1e-6)
    assert estimate.tokens_per_s == pytest.approx(64 * 8192 / estimate.step_time_s)


def test_time_to_train_and_gpu_hours(catalog: Catalog, models: ModelRegistry) -> None:
    plan = TrainingPlan(tp=8, dp=2, micro_batch_size=1, global_batch_size=32, seq_len=4096)
    estimate = estimate_training(
        model=models.get("llama-3-70b"),
        cluster=catalog.cluster("dgx-h100", num_nodes=2),
        plan=plan,
        num_tokens=1e12,
    )
    steps = 1e12 / (32 * 4096)
    assert estimate.time_to_train_s == pytest.approx(steps * estimate.step_time_s)
    assert estimate.gpu_hours == pytest.approx(steps * estimate.step_time_s * 16 / 3600)


def test_bound_names_the_slow_fabric_for_cross_node_expert_parallelism(
    catalog: Catalog, models: ModelRegistry
) -> None:
    # DeepSeek-V3 with EP64 spread over 8 nodes and no DualPipe overlap: the all-to-all
    # crosses InfiniBand, and the sentence must say so (issue 3's example wording).
    plan = TrainingPlan(
        ep=64, dp=128, micro_batch_size=1, global_batch_size=128, seq_len=4096, precision="fp8"
    )
    cluster = catalog.cluster("hgx-h800", num_nodes=16)
    estimate = estimate_training(model=models.get("deepseek-v3"), cluster=cluster, plan=plan)
    assert estimate.bound_part == "ep_comm"
    assert estimate.bound.startswith("exposed EP all-to-all over InfiniBand")
    assert estimate.bound.endswith("of the step")
    inside = estimate_training(
        model=models.get("deepseek-v3"), cluster=cluster, plan=plan.with_changes(ep=8)
    )  # EP8 stays inside the NVLink node: far less exposed all-to-all
    assert inside.breakdown_s["ep_comm"] < 0.5 * estimate.breakdown_s["ep_comm"]
