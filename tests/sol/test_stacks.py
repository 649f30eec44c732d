"""Software-stack profiles, plan ranking and the search's margins (issue 13, points 2 and 4)."""

from __future__ import annotations

import dataclasses

import pytest

from lightspeed.catalog import Catalog
from lightspeed.errors import InvalidPlanError
from lightspeed.sol import TrainingPlan, estimate_training, load_stack, load_stacks, search_training
from lightspeed.sol.core.stacks import FP8_CAST_BYTES, kernel_efficiency_cap, stack_for
from lightspeed.workload import ModelRegistry


@pytest.mark.parametrize(
    ("text", "year", "name"),
    [
        ("NVIDIA/Megatron-LM README (Narayanan et al. SC21)", 2021, "megatron-2021"),
        ("Korthikanti et al. 2022 (values in calculon)", 2022, "megatron-2022"),
        ("NVIDIA/Megatron-LM README (Megatron-Core, H100)", 2024, "megatron-core-2024"),
        ("NVIDIA-NeMo/Megatron-Bridge performance summary", 2025, "megatron-core-2025"),
        ("NVIDIA/dgxc-benchmarking v25.04", 2025, "megatron-core-2025"),
        ("pytorch/torchtitan benchmarks (no compile)", 2024, "torchtitan-2024"),
        ("pytorch/torchtitan benchmarks, FP8 linears, torch.compile", 2024, "torchtitan-2024-compile"),
        ("pytorch/torchtitan benchmarks (no compile)", 2025, "torchtitan-2024"),
        # PyTorch 2.10-2.11's SDPA prefers cuDNN attention on Hopper and Blackwell
        ("pytorch/torchtitan benchmarks (no compile)", 2026, "torchtitan-2026"),
        ("pytorch/torchtitan, torch.compile", 2026, "torchtitan-2026-compile"),
        ("mosaicml/llm-foundry benchmarking README", 2023, "llm-foundry-2023"),
        # DeepSeek's runs by its authorship or by the title of its own report
        ("DeepSeek-AI 2024, Table 1", 2024, "deepseek-2024"),
        ("DeepSeek-V3 Technical Report, Table 1", 2024, "deepseek-2024"),
        ("Megatron-Core's DeepSeek-V3 recipe", 2025, "megatron-core-2025"),
        # no framework named: the default profile (the median of published runs) from 2023 on,
        # the Megatron profile of its year before
        ("Llama Team 2024 (paper text)", 2024, "published-median"),
        ("Brown et al. 2020 (paper text)", 2020, "megatron-2021"),
    ],
)
def test_a_row_picks_the_profile_of_the_framework_it_names(text: str, year: int, name: str) -> None:
    assert stack_for(text, year)[0].name == name


def test_every_profile_is_sourced_and_physical() -> None:
    for stack in load_stacks().values():
        assert stack.source, stack.name
        assert 0.2 <= stack.kernel_efficiency <= 1.0, stack.name  # never above the cited ceilings
        assert 0.0 < stack.moe_efficiency <= 1.0, stack.name
        assert stack.elementwise_traffic_factor >= 1.0, stack.name
    # An FP8 cast reads 2 bytes and writes the row- and column-wise copies (1 + 1); current
    # scaling reads the tensor once more for its amax.
    assert FP8_CAST_BYTES == {"delayed": 4.0, "current": 6.0, "block": 4.0 + 2.0 / 32.0}


def test_a_plan_takes_its_stacks_defaults_unless_it_says_otherwise() -> None:
    titan, megatron = load_stack("torchtitan-2024"), load_stack("megatron-2021")
    plan = TrainingPlan(tp=2, recompute="selective")
    assert plan.resolved(titan).recompute == "op"  # torchtitan's "selective" is its per-op policy
    assert plan.resolved(titan).attention_impl == "flash2"  # PyTorch SDPA's flash backend
    assert plan.resolved(load_stack("torchtitan-2026")).attention_impl == "flash"  # cuDNN's
    assert plan.resolved(megatron).attention_impl == "unfused"
    assert plan.resolved(megatron).sequence_parallel is False  # 2021: before sequence parallelism
    assert plan.resolved(load_stack()).sequence_parallel is True  # stated, never null
    assert plan.with_changes(tp_overlap=False).resolved(load_stack()).tp_overlap is False


def test_zero3_with_pipeline_parallelism_is_refused(catalog: Catalog, models: ModelRegistry) -> None:
    plan = TrainingPlan(pp=2, dp=4, zero_stage=3, global_batch_size=8, seq_len=4096)
    with pytest.raises(InvalidPlanError, match=r"zero_stage 3 with pp=2 under stack published-median"):
        estimate_training(model=models.get("llama-3-8b"), cluster=catalog.cluster("dgx-h100"), plan=plan)


def test_a_generation_is_never_credited_beyond_its_best_measured_stack(catalog: Catalog) -> None:
    from lightspeed.sol.core import hardware_for

    cap = kernel_efficiency_cap("Ampere")
    assert cap is not None
    hardware = hardware_for(catalog.cluster("dgx-a100"), "bf16", stack=load_stack("megatron-core-2025"))
    assert hardware.stack.kernel_efficiency == min(cap, load_stack("megatron-core-2025").kernel_efficiency)


def test_the_search_reports_margin_ties_and_a_named_plan(catalog: Catalog, models: ModelRegistry) -> None:
    meta = TrainingPlan(tp=8, pp=16, vpp=4, recompute="selective", uneven_pipeline=True)
    result = search_training(
        model=models.get("llama-3-405b"),
        cluster=catalog.cluster("dgx-h100", num_accelerators=2048),
        global_batch_size=256,
        seq_len=8192,
        max_tp=8,
        compare_plan=meta.with_changes(dp=16),
        stack="megatron-core-2024",
    )
    best = result.plans[0]
    assert result.margin_over_runner_up is not None
    assert result.margin_over_runner_up == pytest.approx(result.plans[1].step_time_s / best.step_time_s - 1)
    assert 0.0 < result.tolerance < 0.5
    # Ties are within the tolerance of the best, simplest (fewest techniques) first.
    assert result.ties
    assert all(
        tie.step_time_s <= best.step_time_s * (1 + result.tolerance) * (1 + 1e-9) for tie in result.ties
    )
    compared = result.compared
    assert compared is not None
    assert compared.estimate.plan.tp == 8
    assert compared.margin == pytest.approx(compared.estimate.step_time_s / best.step_time_s - 1)
    assert compared.rank is None or compared.rank >= 1
    assert compared.within_uncertainty == (abs(compared.margin) <= result.tolerance)


def test_a_named_plan_gets_uneven_stages_like_the_search(catalog: Catalog, models: ModelRegistry) -> None:
    # Meta's 405B plan: 126 layers over PP16 x VPP6 (the search takes ceil(L / (pp x vpp)) per chunk).
    result = search_training(
        model=models.get("llama-3-405b"),
        cluster=catalog.cluster("dgx-h100", num_accelerators=2048),
        global_batch_size=256,
        seq_len=8192,
        max_tp=8,
        compare_plan=TrainingPlan(tp=8, pp=16, vpp=6, dp=16, recompute="selective"),
        stack="megatron-core-2024",
    )
    assert result.compared is not None
    assert result.compared.estimate.plan.uneven_pipeline
    assert result.compared.estimate.plan.vpp == 6


def test_context_parallelism_costs_what_its_attention_cannot_hide(
    catalog: Catalog, models: ModelRegistry
) -> None:
    model = models.get("llama-3-8b")
    cluster = catalog.cluster("dgx-h100", num_accelerators=16)

    def cp_comm(seq_len: int) -> float:
        plan = TrainingPlan(tp=2, cp=8, dp=1, global_batch_size=1, seq_len=seq_len)
        return estimate_training(model=model, cluster=cluster, plan=plan).breakdown_s["cp_comm"]

    # The ring crosses InfiniBand (CP8 x TP2 spans two nodes): at 8K tokens each step's 512-token
    # attention is too short to hide a chunk's transfer; at 128K the attention covers it.
    short, long = cp_comm(8192), cp_comm(131072)
    assert short > 0.0
    assert long / 16 < short  # per token, long sequences hide the ring far better


def test_only_deepeps_dispatch_sends_a_token_once_per_node(catalog: Catalog, models: ModelRegistry) -> None:
    """DeepSeek-V3 routes a token's 8 experts to at most 4 nodes; DeepEP sends it once per node
    (half the cross-node bytes), Megatron-Core's alltoall dispatcher once per expert. On 8 nodes of
    8 H100, 7/8 of each all-to-all crosses InfiniBand (50 GB/s against NVLink's 450), so the
    exposed EP time halves, less the latency terms."""
    assert load_stack("deepseek-2024").ep_node_dedupe
    assert not load_stack("megatron-core-2025").ep_node_dedupe
    assert not load_stack("published-median").ep_node_dedupe
    model = models.get("deepseek-v3")
    cluster = catalog.cluster("dgx-h100", num_accelerators=64)
    plan = TrainingPlan(ep=64, dp=64, global_batch_size=64, seq_len=4096, ep_overlap=False, recompute="full")
    megatron = load_stack("megatron-core-2025")
    deepep = dataclasses.replace(megatron, ep_node_dedupe=True)

    def ep_comm(stack: object) -> float:
        return estimate_training(model=model, cluster=cluster, plan=plan, stack=stack).breakdown_s["ep_comm"]  # type: ignore[arg-type]

    assert 0.5 <= ep_comm(deepep) / ep_comm(megatron) <= 0.55
