"""Round 12, FA2: ``memory --training`` counts what ``plan train`` counts, and a plan that names no
ZeRO stage takes its stack's own sharding.

Hand figures: Llama 3 70B has 70,553,706,496 parameters and Llama 3 8B 8,030,261,248 (the catalog's
counts, checked against the published configs in tests/cli/test_memory.py). An H100 SXM's driver
reports 81,559 MiB = 85,520,809,984 bytes. Megatron-Core (the default stack's memory rules) keeps
bf16 weights (2 B), an fp32 main-gradient buffer (4 B), Adam moments (8 B) and fp32 master
weights (4 B): 18 bytes a parameter without ZeRO (Megatron-Core developer guide, Distributed
Optimizer: "18 bytes per parameter without it").
"""

from __future__ import annotations

import json
import math

import pytest

from expect import one_line_error
from lightspeed.catalog import load_catalog
from lightspeed.sol import TrainingConfig, TrainingPlan, estimate_training, parse_plan_text, plan_memory
from lightspeed.sol.config import default_zero_stage
from lightspeed.sol.core.stacks import load_stack
from lightspeed.workload import load_models

MODELS = load_models()
CATALOG = load_catalog()
LLAMA_8B_PARAMS = 8_030_261_248
LLAMA_70B_PARAMS = 70_553_706_496
H100_DRIVER_BYTES = 81_559 * 2**20  # 85,520,809,984
FSDP_STACKS = (
    "torchtitan-2024",
    "torchtitan-2024-compile",
    "torchtitan-2026",
    "torchtitan-2026-compile",
    "llm-foundry-2023",
)


# --- defect 1: memory --training counts fp32 main gradients, as plan train does --------------------


def test_bf16_training_of_llama_3_70b_is_18_bytes_and_15_h100s() -> None:
    """18 x 70,553,706,496 = 1,269,966,716,928 bytes; / 85,520,809,984 = 14.85 -> 15 GPUs."""
    plan = plan_memory(
        model=MODELS.get("llama-3-70b"), training=True, accelerator=CATALOG.accelerator("h100-sxm")
    )
    assert plan.bytes_per_param == 2 + 4 + 8 + 4
    assert plan.components["gradients"] == 4 * LLAMA_70B_PARAMS
    assert plan.total_bytes == 1_269_966_716_928
    assert plan.gpus_needed == math.ceil(1_269_966_716_928 / H100_DRIVER_BYTES) == 15
    assert plan.gradient_precision == "fp32"


@pytest.mark.parametrize("precision", ["bf16", "fp16", "fp32"])
def test_gradients_are_what_the_training_engine_keeps(precision: str) -> None:
    """plan train with ZeRO-0 and no model parallelism: its gradients per parameter are the
    plan's fp32 main gradients (4 B) whatever the compute precision; memory --training agrees."""
    model = MODELS.get("llama-3-8b")
    engine = estimate_training(
        model=model,
        cluster=CATALOG.cluster("dgx-b200"),
        plan=TrainingPlan(dp=8, zero_stage=0, global_batch_size=64, precision=precision),
        check_fit=False,
    )
    memory = plan_memory(model=model, precision=precision, training=True)
    assert memory.components["gradients"] == 4 * LLAMA_8B_PARAMS
    assert engine.memory_bytes["gradients"] / LLAMA_8B_PARAMS == pytest.approx(4.0, rel=1e-5)


def test_fp8_is_one_byte_more_than_bf16_not_three() -> None:
    """fp8 keeps bf16 weights plus a 1-byte copy: 19 against bf16's 18."""
    model = MODELS.get("llama-3-8b")
    bf16 = plan_memory(model=model, precision="bf16", training=True)
    fp8 = plan_memory(model=model, precision="fp8", training=True)
    assert (bf16.bytes_per_param, fp8.bytes_per_param) == (18, 19)


def test_zero_stages_follow_the_megatron_rules() -> None:
    """Over 8 ranks: ZeRO-1 2 + 4 + 12/8 = 7.5, ZeRO-2 2 + 16/8 = 4, ZeRO-3 18/8 = 2.25 bytes."""
    model = MODELS.get("llama-3-8b")
    shares = [plan_memory(model=model, training=True, zero_stage=s, dp=8).bytes_per_param for s in (1, 2, 3)]
    assert shares == [7.5, 4.0, 2.25]


def test_cli_names_the_stack_whose_rule_it_follows(run_cli) -> None:  # type: ignore[no-untyped-def]
    stack = load_stack().name
    result = run_cli("memory", "--model", "llama-3-70b", "--training", "--gpu", "h100-sxm")
    assert result.code == 0
    text = " ".join(result.out.split())
    assert "2 (weights, bf16) + 4 (gradients, fp32)" in text
    assert "= 18 bytes/parameter" in text
    assert "15 x h100-sxm at 85.52 GB usable" in text
    assert f"default stack, {stack}" in text
    payload = json.loads(
        run_cli("memory", "--model", "llama-3-70b", "--training", "--gpu", "h100-sxm", "--json").out
    )
    assert payload["stack"] == stack
    assert payload["gpus_needed"] == 15
    serving = json.loads(run_cli("memory", "--model", "llama-3-8b", "--json").out)
    assert serving["stack"] is None


def test_cli_grad_precision_bf16_says_it_was_asked(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("memory", "--model", "llama-3-8b", "--training", "--grad-precision", "bf16")
    assert result.code == 0
    text = " ".join(result.out.split())
    assert "= 16 bytes/parameter" in text
    assert "as --grad-precision asks" in text


# --- defect 2: the ZeRO stage left unset is the stack's own --------------------------------------


@pytest.mark.parametrize("stack", FSDP_STACKS)
def test_fsdp_stacks_default_to_full_sharding(stack: str, run_cli) -> None:  # type: ignore[no-untyped-def]
    """FSDP has no ZeRO-1; its default sharding is full sharding (fully_shard / FULL_SHARD)."""
    result = run_cli(
        "plan", "train", "--model", "llama-3-8b", "--system", "dgx-h100", "--global-batch", "16",
        "--stack", stack, "--json",
    )  # fmt: skip
    assert result.code == 0, result.err
    payload = json.loads(result.out)
    assert payload["plan"]["zero_stage"] == 3


def test_fsdp_under_a_pipeline_defaults_to_zero_2() -> None:
    """torchtitan keeps FSDP2 parameters gathered under a pipeline (its stack refuses ZeRO-3 with
    PP): the default is ZeRO-2 there."""
    config = TrainingConfig(
        model="llama-3-8b", system="dgx-h100", pp=2, global_batch_size=16, stack="torchtitan-2024"
    )
    assert config.training_plan(num_gpus=8).zero_stage == 2


@pytest.mark.parametrize(
    ("stack", "pp", "stage"),
    [
        (None, 1, 1),  # the default stack (Megatron-Core rules): the distributed optimizer
        ("megatron-core-2025", 2, 1),
        ("megatron-deepspeed-2022", 2, 1),  # DeepSpeed ZeRO-1 under its pipeline engine
        ("llm-foundry-2023", 1, 3),
    ],
)
def test_default_stage_per_stack(stack: str | None, pp: int, stage: int) -> None:
    config = TrainingConfig(model="llama-3-8b", system="dgx-h100", pp=pp, global_batch_size=16, stack=stack)
    assert config.zero_stage is None
    assert config.training_plan(num_gpus=8).zero_stage == stage
    assert default_zero_stage(load_stack(stack), pipeline=pp > 1) == stage


def test_a_zero_stage_given_is_kept() -> None:
    config = TrainingConfig(
        model="llama-3-8b", system="dgx-h100", global_batch_size=16, stack="torchtitan-2024", zero_stage=2
    )
    assert config.training_plan(num_gpus=8).zero_stage == 2


def test_zero_1_named_under_fsdp_is_still_refused_in_one_line(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(
        "plan", "train", "--model", "llama-3-8b", "--system", "dgx-h100", "--global-batch", "16",
        "--stack", "torchtitan-2024", "--zero", "1",
    )  # fmt: skip
    one_line_error(result, "no optimizer-only sharding")


def test_help_names_the_stacks_default_not_1(run_cli) -> None:  # type: ignore[no-untyped-def]
    text = " ".join(run_cli("plan", "train", "--help").out.split())
    start = text.index("--zero-stage")
    zero_help = text[start : start + 400]
    assert "default: the stack's own sharding" in zero_help
    assert "[default: 1]" not in zero_help


def test_compare_plan_text_takes_the_stacks_stage() -> None:
    assert parse_plan_text("tp=2", 8, stack="torchtitan-2024")["zero_stage"] == 3
    assert parse_plan_text("tp=2,pp=2", 8, stack="torchtitan-2024")["zero_stage"] == 2
    assert parse_plan_text("tp=2,zero=0", 8, stack="torchtitan-2024")["zero_stage"] == 0
    assert "zero_stage" not in parse_plan_text("tp=2", 8)  # TrainingPlan's 1, the default stack's
