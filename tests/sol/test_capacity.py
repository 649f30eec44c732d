"""Capacity planning: the seed's 100T example, ZeRO formulas of REFERENCE.md, bad input."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lightspeed.catalog import load_catalog
from lightspeed.errors import UserInputError
from lightspeed.sol import plan_memory
from lightspeed.sol.core.hardware import hardware_for
from lightspeed.workload import load_models, parameter_counts

MODELS = load_models()
CATALOG = load_catalog()
DENSE_100T = MODELS.get("dense-100t")


def test_seed_100t_weights_at_16_bits_are_200_tb() -> None:
    plan = plan_memory(model=DENSE_100T, precision="bf16")
    # Seed claim 4: "182 TB" is really 200 TB = 181.9 TiB.
    assert plan.total_bytes == pytest.approx(200e12, rel=0.001)
    assert plan.total_bytes / 2**40 == pytest.approx(181.9, abs=0.05)
    assert plan.components == {
        "weights": plan.total_bytes,
        "gradients": 0,
        "optimizer": 0,
        "master_weights": 0,
    }
    assert plan.gpus_needed is None
    assert any(
        "weights only: activations, optimizer state and inputs come on top" in a for a in plan.assumptions
    )


def test_seed_100t_on_b200_at_the_memory_its_driver_reports() -> None:
    b200 = CATALOG.accelerator("b200")
    assert b200.memory_usable_bytes == 180e9  # the datasheet's listing (the seed's "180 GB usable")
    plan = plan_memory(model=DENSE_100T, precision="bf16", accelerator=b200)
    # Usable is what the driver reports, 183,359 MiB = 192,265,846,784 bytes:
    # 200,041,174,925,312 / 192,265,846,784 = 1,040.4 -> 1,041 GPUs -> 131 nodes of 8
    # (the seed: ~1,000 GPUs, ~125 nodes).
    assert plan.memory_usable_bytes == 183_359 * 2**20
    assert plan.gpus_needed == math.ceil(200_041_174_925_312 / (183_359 * 2**20)) == 1041
    assert plan.nodes_needed == 131
    # At the listed 180 GB: 200.04 TB / 180 GB = 1,111.3 -> 1,112 GPUs -> 139 nodes.
    assert plan.memory_listed_bytes == 180e9
    assert plan.gpus_needed_at_listed == math.ceil(200_041_174_925_312 / 180e9) == 1112
    assert plan.nodes_needed_at_listed == 139
    # At the nominal 192 GB of HBM, read as 192 GiB: 200,041,174,925,312 / (192 x 2^30) = 970.3
    # -> 971 GPUs; 971 / 8 = 121.4 -> 122 nodes.
    assert plan.memory_nominal_bytes == 192 * 2**30
    assert plan.gpus_needed_at_nominal == math.ceil(200_041_174_925_312 / (192 * 2**30)) == 971
    assert plan.nodes_needed_at_nominal == 122
    assert any("180 GB (167.6 GiB) listed on the datasheet" in line for line in plan.assumptions)


def test_the_count_at_what_the_driver_reports_is_the_one_plan_sizes_with() -> None:
    """A B200's driver reports 183,359 MiB (nvidia-smi memory.total), above the listed 180 GB:
    200,041,174,925,312 bytes / (183,359 x 2^20) = 1,040.4 -> 1,041 GPUs, 131 nodes of 8. It is
    the usable memory, the one the plan commands size deployments with, so the headline count
    and the older ``*_at_device`` fields agree."""
    b200 = CATALOG.accelerator("b200")
    plan = plan_memory(model=DENSE_100T, precision="bf16", accelerator=b200)
    assert plan.memory_device_bytes == plan.memory_usable_bytes == 183_359 * 2**20
    assert plan.gpus_needed_at_device == math.ceil(200_041_174_925_312 / (183_359 * 2**20)) == 1041
    assert plan.nodes_needed_at_device == 131
    assert plan.gpus_needed == 1041
    assert (
        b200.memory_device_bytes
        == hardware_for(CATALOG.resolve_cluster("dgx-b200"), "bf16").usable_memory_bytes
    )
    assert any(
        "192.3 GB (179.1 GiB) usable per GPU, what the driver reports" in line for line in plan.assumptions
    )


def test_seed_100t_on_b300_at_288_gb() -> None:
    plan = plan_memory(model=DENSE_100T, precision="bf16", accelerator=CATALOG.accelerator("b300"))
    # The seed's B300 figure uses 288 GB (nominal), read as 288 GiB:
    # 200,041,174,925,312 / (288 x 2^30) = 646.9 -> 647 GPUs; 647 / 8 = 80.9 -> 81 nodes.
    assert plan.memory_nominal_bytes == 288 * 2**30
    assert plan.gpus_needed_at_nominal == math.ceil(200_041_174_925_312 / (288 * 2**30)) == 647
    assert plan.nodes_needed_at_nominal == 81
    # The catalog's listed usable memory is lower, so the usable count is higher.
    assert plan.memory_usable_bytes is not None
    assert plan.memory_usable_bytes < 288e9
    assert plan.gpus_needed == math.ceil(plan.total_bytes / plan.memory_usable_bytes)


def test_system_brings_its_gpu_and_node_size() -> None:
    system = CATALOG.system("dgx-b200")
    plan = plan_memory(model=DENSE_100T, precision="bf16", system=system)
    assert plan.device == "dgx-b200"
    assert plan.accelerator == "b200"
    assert plan.gpus_per_node == system.num_accelerators == 8
    assert plan.gpus_needed == 1041  # 200.04 TB / 192.27 GB (the driver's 183,359 MiB) = 1,040.4


def test_mixed_precision_adam_is_18_bytes_per_parameter() -> None:
    # Megatron-Core (plan train's default stack): bf16 weights 2 + fp32 main gradients 4 + Adam 12
    spec = MODELS.get("llama-3-70b")
    num_params = parameter_counts(spec).total_params
    plan = plan_memory(model=spec, precision="bf16", training=True, optimizer="adam")
    assert plan.bytes_per_param == 18
    assert plan.components == {
        "weights": 2 * num_params,
        "gradients": 4 * num_params,
        "optimizer": 8 * num_params,
        "master_weights": 4 * num_params,
    }
    assert plan.total_bytes == 18 * num_params


def test_bf16_gradients_asked_for_give_the_zero_papers_16_bytes() -> None:
    plan = plan_memory(model=MODELS.get("llama-3-8b"), training=True, gradient_precision="bf16")
    assert plan.bytes_per_param == 16  # ZeRO paper: 2 + 2 + 12


@pytest.mark.parametrize(
    ("stage", "formula"),
    [
        # Megatron-Core's rules with fp32 main gradients (sol/data/stacks.toml): 18, 6 + 12/d, ...
        (0, lambda n: 18.0),
        (1, lambda n: 6 + 12 / n),
        (2, lambda n: 2 + 16 / n),
        (3, lambda n: 18 / n),
    ],
)
@pytest.mark.parametrize("dp", [1, 8, 64])
def test_zero_bytes_per_parameter_per_gpu(stage: int, formula, dp: int) -> None:  # type: ignore[no-untyped-def]
    plan = plan_memory(
        model=MODELS.get("llama-3-8b"), precision="bf16", training=True, zero_stage=stage, dp=dp
    )
    assert plan.bytes_per_param == pytest.approx(formula(dp))
    # Over the whole job, the per-GPU share times the GPUs of all replicas.
    assert plan.total_bytes == pytest.approx(plan.bytes_per_param * plan.num_params * dp)


def test_megatron_fp32_gradients_are_18_bytes_per_parameter() -> None:
    # REFERENCE.md: Megatron BF16 with fp32 grads is 18 B/param.
    plan = plan_memory(model=MODELS.get("llama-3-8b"), training=True, gradient_precision="fp32")
    assert plan.bytes_per_param == 18


def test_fp32_training_has_no_separate_master_copy() -> None:
    plan = plan_memory(model=MODELS.get("llama-3-8b"), precision="fp32", training=True)
    assert plan.components["master_weights"] == 0
    assert plan.bytes_per_param == 4 + 4 + 8


def test_gpus_needed_by_hand_for_zero_1() -> None:
    spec = MODELS.get("llama-3-70b")
    num_params = parameter_counts(spec).total_params
    plan = plan_memory(
        model=spec, training=True, zero_stage=1, dp=64, accelerator=CATALOG.accelerator("h100-sxm")
    )
    per_replica = math.ceil((6 + 12 / 64) * num_params / (81_559 * 2**20))  # the driver's 81,559 MiB
    assert plan.model_parallel_gpus == per_replica
    assert plan.gpus_needed == per_replica * 64
    assert plan.nodes_needed == math.ceil(per_replica * 64 / 8)


def test_exact_fit_does_not_round_up() -> None:
    # 40 GB of weights on 80 GB GPUs is 1 GPU even when float division is not exact.
    plan = plan_memory(
        model=MODELS.get("llama-3-8b"), precision="fp32", accelerator=CATALOG.accelerator("h100")
    )
    assert plan.gpus_needed == 1


def test_bad_plans_are_user_errors() -> None:
    spec = MODELS.get("llama-3-8b")
    with pytest.raises(UserInputError, match="ZeRO stage"):
        plan_memory(model=spec, training=True, zero_stage=4)
    with pytest.raises(UserInputError, match="training"):
        plan_memory(model=spec, zero_stage=1)
    with pytest.raises(UserInputError, match="dp"):
        plan_memory(model=spec, dp=0)
    with pytest.raises(UserInputError, match="not both"):
        plan_memory(model=spec, accelerator=CATALOG.accelerator("b200"), system=CATALOG.system("dgx-b200"))
    with pytest.raises(UserInputError, match="unknown precision"):
        plan_memory(model=spec, precision="fp5")


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 3), st.integers(1, 512), st.sampled_from(["b200", "h100-sxm", "mi300x"]))
def test_property_gpus_hold_the_state_and_one_fewer_would_not(stage: int, dp: int, gpu: str) -> None:
    accelerator = CATALOG.accelerator(gpu)
    plan = plan_memory(
        model=MODELS.get("llama-3-405b"), training=True, zero_stage=stage, dp=dp, accelerator=accelerator
    )
    assert plan.model_parallel_gpus is not None
    assert plan.bytes_per_gpu is not None
    assert plan.bytes_per_gpu <= accelerator.memory_device_bytes
    replica = plan.bytes_per_param * plan.num_params
    assert replica / (plan.model_parallel_gpus - 1 or 1) > accelerator.memory_device_bytes or (
        plan.model_parallel_gpus == 1
    )
    # more memory a GPU never needs more GPUs: usable (the driver's), listed and nominal
    counts = [
        (plan.memory_usable_bytes, plan.gpus_needed),
        (plan.memory_listed_bytes, plan.gpus_needed_at_listed),
        (plan.memory_nominal_bytes, plan.gpus_needed_at_nominal),
    ]
    known = [(memory, count) for memory, count in counts if memory is not None and count is not None]
    assert len(known) == 3
    for memory, count in known:
        assert all(count >= other for other_memory, other in known if memory <= other_memory)


def test_quantized_serving_weights_keep_the_tables_and_norms_in_16_bits() -> None:
    """`memory` sizes weights as `plan infer` holds them: Llama 3 8B in NVFP4 keeps its
    128,256 x 4,096 embedding and LM head and its 65 x 4,096 norm weights in 16 bits (the hand
    count), the layers' matrices at 0.5625 bytes (4 bits and a 1-byte scale per 16)."""
    model = load_models().get("llama-3-8b")
    tables = 2 * 128_256 * 4_096
    norms = (2 * 32 + 1) * 4_096
    layers = 8_030_261_248 - tables - norms
    expected = layers * 0.5625 + (tables + norms) * 2
    assert plan_memory(model=model, precision="nvfp4").total_bytes == pytest.approx(expected, rel=1e-12)
    # 16 bits and wider: every parameter at the format's bytes, as before
    assert plan_memory(model=model, precision="bf16").total_bytes == 8_030_261_248 * 2
