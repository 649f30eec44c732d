"""``lightspeed memory``: the training state of 8- and 4-bit runs follows the training engine's rule,
and "usable" is the memory the driver reports, the figure ``plan train`` and ``search`` use.

Hand figures: Llama 3 8B has 8,030,261,248 parameters and Llama 3 70B 70,553,706,496 (the catalog's
counts, checked against the published configs in tests/cli/test_memory.py). An H100 SXM's driver
reports 81,559 MiB = 85,520,809,984 bytes (79.65 GiB); its datasheet lists "80GB", read as 80e9 bytes.
"""

from __future__ import annotations

import json
import math

import pytest

from expect import one_line_error
from lightspeed.catalog import load_catalog
from lightspeed.errors import UserInputError
from lightspeed.sol import TrainingPlan, estimate_training, plan_memory
from lightspeed.workload import load_models

MODELS = load_models()
CATALOG = load_catalog()
LLAMA_8B_PARAMS = 8_030_261_248
LLAMA_70B_PARAMS = 70_553_706_496
H100_DRIVER_BYTES = 81_559 * 2**20  # nvidia-smi memory.total of an H100 SXM 80GB
H100_LISTED_BYTES = 80e9


@pytest.mark.parametrize(
    ("precision", "copy"),
    # the copy in the run's format, block scales included: MXFP8 1 + 1/32 (an 8-bit scale a 32-element
    # block), NVFP4 0.5 + 1/16 (an 8-bit scale a 16-element block), MXFP4 0.5 + 1/32
    [("fp8", 1.0), ("mxfp8", 1.0 + 1 / 32), ("nvfp4", 0.5 + 1 / 16), ("mxfp4", 0.5 + 1 / 32)],
)
def test_low_precision_training_keeps_16_bit_weights_and_fp32_gradients(precision: str, copy: float) -> None:
    """An FP8/FP4 recipe (Transformer Engine, Megatron-Core) computes in 8 or 4 bits but stores bf16
    weights (2 B) plus a low-precision copy in its format (FP8 1 B), fp32 main gradients (4 B), fp32
    Adam moments (8 B) and an fp32 master copy (4 B): 2 + 1 + 4 + 8 + 4 = 19 bytes a parameter with
    FP8, not 1 + 1 + 12 = 14."""
    plan = plan_memory(model=MODELS.get("llama-3-8b"), precision=precision, training=True)
    assert plan.bytes_per_param == 2 + copy + 4 + 8 + 4
    assert plan.components == {
        "weights": (2 + copy) * LLAMA_8B_PARAMS,
        "gradients": 4 * LLAMA_8B_PARAMS,
        "optimizer": 8 * LLAMA_8B_PARAMS,
        "master_weights": 4 * LLAMA_8B_PARAMS,
    }
    assert (plan.weight_precision, plan.gradient_precision) == ("bf16", "fp32")


def test_fp8_training_costs_one_byte_more_than_bf16() -> None:
    """bf16 mixed precision keeps fp32 main gradients too, as plan train counts them:
    2 + 4 + 8 + 4 = 18; fp8 adds only the 1-byte copy: 19, 1 more."""
    model = MODELS.get("llama-3-8b")
    bf16 = plan_memory(model=model, precision="bf16", training=True)
    fp8 = plan_memory(model=model, precision="fp8", training=True)
    assert bf16.bytes_per_param == 2 + 4 + 8 + 4
    assert fp8.bytes_per_param - bf16.bytes_per_param == 1


def test_stated_gradient_precision_is_kept_with_fp8_compute() -> None:
    """``--grad-precision bf16`` with fp8: 3 (bf16 + fp8 copy) + 2 + 12 = 17 bytes a parameter."""
    plan = plan_memory(
        model=MODELS.get("llama-3-8b"), precision="fp8", training=True, gradient_precision="bf16"
    )
    assert plan.bytes_per_param == 3 + 2 + 12
    assert plan.components["gradients"] == 2 * LLAMA_8B_PARAMS


def test_zero_1_shards_the_fp8_runs_optimizer_only() -> None:
    """ZeRO-1 over 8 ranks: 3 + 4 whole, 12 / 8 sharded = 8.5 bytes a parameter per GPU."""
    plan = plan_memory(model=MODELS.get("llama-3-8b"), precision="fp8", training=True, zero_stage=1, dp=8)
    assert plan.bytes_per_param == 3 + 4 + 12 / 8


def test_fp8_state_agrees_with_the_training_engine() -> None:
    """The training engine, one GPU's state with no sharding (ZeRO-0, TP 1, PP 1), holds the same
    bytes a parameter as ``memory --training`` for the same fp8 run (the engine's count leaves out
    the 4,096 final-norm parameters, hence the tolerance)."""
    model = MODELS.get("llama-3-8b")
    engine = estimate_training(
        model=model,
        cluster=CATALOG.cluster("dgx-b200"),
        plan=TrainingPlan(dp=8, zero_stage=0, global_batch_size=64, precision="fp8"),
    )
    memory = plan_memory(model=model, precision="fp8", training=True)
    per_param = {name: value / LLAMA_8B_PARAMS for name, value in memory.components.items()}
    assert engine.memory_bytes["weights"] / LLAMA_8B_PARAMS == pytest.approx(per_param["weights"], rel=1e-5)
    assert engine.memory_bytes["gradients"] / LLAMA_8B_PARAMS == pytest.approx(
        per_param["gradients"], rel=1e-5
    )
    optimizer = per_param["optimizer"] + per_param["master_weights"]
    assert engine.memory_bytes["optimizer"] / LLAMA_8B_PARAMS == pytest.approx(optimizer, rel=1e-5)


def test_cli_fp8_training_breakdown_names_what_is_stored(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("memory", "--model", "llama-3-8b", "--training", "--precision", "fp8")
    assert result.code == 0
    text = " ".join(result.out.split())  # the table wraps long lines
    assert "3 (weights: 2 bf16 + 1 fp8 copy)" in text
    assert "4 (gradients, fp32)" in text
    assert "= 19 bytes/parameter" in text
    assert f"{19 * LLAMA_8B_PARAMS:,}" in text
    payload = json.loads(
        run_cli("memory", "--model", "llama-3-8b", "--training", "--precision", "nvfp4", "--json").out
    )
    assert payload["bytes_per_param"] == 2 + 0.5625 + 4 + 8 + 4  # an NVFP4 copy: 0.5 + 1/16 B
    assert payload["weight_precision"] == "bf16"
    assert payload["gradient_precision"] == "fp32"


def test_usable_is_what_the_driver_reports() -> None:
    """Llama 3 70B, bf16 Adam with fp32 main gradients: 18 x 70,553,706,496 = 1,269,966,716,928
    bytes. At the driver's 85,520,809,984 bytes a GPU: 14.85 -> 15 GPUs, 2 nodes; at the listed
    80e9: 15.9 -> 16 GPUs."""
    h100 = CATALOG.accelerator("h100-sxm")
    plan = plan_memory(model=MODELS.get("llama-3-70b"), training=True, accelerator=h100)
    total = 18 * LLAMA_70B_PARAMS
    assert plan.total_bytes == total == 1_269_966_716_928
    assert plan.memory_usable_bytes == H100_DRIVER_BYTES
    assert plan.gpus_needed == math.ceil(total / H100_DRIVER_BYTES) == 15
    assert plan.nodes_needed == 2
    assert plan.memory_listed_bytes == H100_LISTED_BYTES
    assert plan.gpus_needed_at_listed == math.ceil(total / H100_LISTED_BYTES) == 16
    assert plan.nodes_needed_at_listed == 2
    # the pre-existing driver fields keep their meaning (now equal to the headline)
    assert (plan.memory_device_bytes, plan.gpus_needed_at_device) == (H100_DRIVER_BYTES, 15)
    assert plan.bytes_per_gpu == pytest.approx(total / 15)


def test_cli_headline_counts_at_usable_and_labels_the_datasheet_figure_listed(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("memory", "--model", "llama-3-70b", "--training", "--gpu", "h100-sxm")
    assert result.code == 0
    text = " ".join(result.out.split())
    assert "15 x h100-sxm at 85.52 GB usable = 2 nodes of 8" in text
    assert "16 at the 80 GB listed = 2 nodes" in text
    assert "80 GB usable" not in text
    payload = json.loads(
        run_cli("memory", "--model", "llama-3-70b", "--training", "--gpu", "h100-sxm", "--json").out
    )
    assert payload["gpus_needed"] == payload["gpus_needed_at_device"] == 15
    assert payload["memory_usable_bytes"] == payload["memory_device_bytes"] == H100_DRIVER_BYTES
    assert payload["gpus_needed_at_listed"] == 16
    assert payload["memory_listed_bytes"] == H100_LISTED_BYTES


@pytest.mark.parametrize("precision", ["int8", "int4", "fp6"])
def test_training_in_a_format_no_recipe_trains_in_is_refused(precision: str) -> None:
    """``plan train`` trains in fp32, tf32, bf16, fp16 and the fp8/fp4 formats only; an int8 run
    would otherwise get 1 + 1 + 12 = 14 bytes a parameter of weights and gradients no one stores."""
    with pytest.raises(UserInputError, match=f"no training recipe computes in {precision}"):
        plan_memory(model=MODELS.get("llama-3-8b"), precision=precision, training=True)
    assert plan_memory(model=MODELS.get("llama-3-8b"), precision=precision).total_bytes > 0  # serving


def test_cli_refuses_int8_training_in_one_line(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("memory", "--model", "llama-3-8b", "--training", "--precision", "int8")
    one_line_error(result)
    assert "training precisions" in result.err
