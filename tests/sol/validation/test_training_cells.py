"""Training cells written as DeepSpeed, Megatron-LM, torchtitan, PyTorch Lightning and apex write
them are read as they mean, or the row is refused with the reason (a training-row probe): a ZeRO
stage in DeepSpeed's config keys was ZeRO-1, ``AC: none`` was full recomputation, ``SP off`` kept
sequence parallelism, ``TP4 PP16 CP2`` in one cell searched PP and CP, ``mbs 1 gbs 512`` was a batch
of 1, ``(8,8,2)`` was TP 882, ``16-mixed`` and apex's ``O2`` were bf16, and MXFP8 on an H100 ran at
FP8 speed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lightspeed.catalog import Catalog
from lightspeed.sol.validation.published import PublishedRow, RowError
from lightspeed.sol.validation.rows import TrainingRowSpec, read_training_row
from lightspeed.sol.validation.train_settings import zero_stage_of
from lightspeed.workload import ModelRegistry

# Megatron-Bridge's Llama 3.1 405B on 1,024 H100 (the dev table's T112), every degree in its cell
MEGATRON = {
    "id": "T1",
    "kind": "train",
    "source": "Megatron-Bridge performance summary, 25.11 NeMo Container",
    "model": "Llama 3.1 405B",
    "seq": "8192",
    "global_batch": "512",
    "micro_batch": "1",
    "TP": "8",
    "PP": "8",
    "VPP": "8",
    "CP": "2",
    "DP": "8",
    "EP": "-",
    "sharding": "distributed optimizer",
    "GPUs": "1024",
    "hardware": "DGX H100",
    "precision": "bf16",
    "recompute": "n/r",
    "metric": "TFLOP/s per GPU",
    "measured": "300",
}
# torchtitan's Llama 3.1 8B on 8 H100 with FSDP2
TORCHTITAN = {
    **MEGATRON,
    "source": "pytorch/torchtitan benchmarks (2024-12)",
    "model": "Llama 3.1 8B",
    "global_batch": "16",
    "micro_batch": "2",
    "TP": "1",
    "PP": "1",
    "VPP": "-",
    "CP": "1",
    "DP": "8",
    "sharding": "FSDP2 full shard over 8",
    "GPUs": "8",
    "hardware": "H100 SXM",
    "recompute": "selective",
    "metric": "tokens/s per GPU",
    "measured": "6000",
}
# MosaicML llm-foundry's MPT-7B benchmark on 8 GPUs (PyTorch FSDP: no ZeRO-1)
LLM_FOUNDRY = {
    **TORCHTITAN,
    "source": "mosaicml/llm-foundry scripts/train/benchmarking/README.md",
    "model": "MPT-7b",
    "seq": "2048",
    "global_batch": "48",
    "micro_batch": "6",
    "sharding": "FSDP FULL_SHARD",
    "recompute": "none",
    "metric": "tokens/s/GPU",
    "measured": "10643",
}


def _read(catalog: Catalog, models: ModelRegistry, base: dict[str, str], **cells: str) -> TrainingRowSpec:
    row = PublishedRow(row_id="T1", kind="train", line=2, cells={**base, **cells})
    return read_training_row(row, catalog, models)


def _validate(run_cli: Any, tmp_path: Path, base: dict[str, str], **cells: str) -> dict[str, Any]:
    merged = {**base, **cells}
    path = tmp_path / "rows.tsv"
    path.write_text("\t".join(merged) + "\n" + "\t".join(merged.values()) + "\n", encoding="utf-8")
    result = run_cli("validate", str(path), "--json")
    assert result.code == 0, result.err
    (row,) = json.loads(result.out)["rows"]
    return dict(row)


# --- sharding -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "cell",
    [
        "zero_optimization.stage=3",
        '"zero_optimization": {"stage": 3}',
        "zero_stage: 3",
        "zero_stage=3",
        "ZeRO-Infinity (stage 3, CPU offload)",
        "ZeRO++ (stage 3)",
        "stage-3 ZeRO",
        "DeepSpeed ZeRO stage-3",
        "DeepSpeed stage 3",
    ],
)
def test_a_zero_stage_written_as_deepspeed_writes_it_is_that_stage(cell: str) -> None:
    assert zero_stage_of(cell)[0] == 3


@pytest.mark.parametrize(
    ("cell", "stage"),
    [
        ("DDP (no ZeRO)", 0),  # plain DDP: every rank keeps everything
        ("without FSDP", 0),
        ("DDP + distributed optimizer", 1),  # Megatron's distributed optimizer shards optimizer state
        ("DDP with --use-distributed-optimizer", 1),
        ("data_parallel_shard_degree=64", 3),  # torchtitan's FSDP degree
        ("data_parallel_shard_degree=1", 0),  # torchtitan without FSDP: DDP
        ("zero_optimization.stage=2", 2),
    ],
)
def test_sharding_cells_read_as_the_framework_means(cell: str, stage: int) -> None:
    assert zero_stage_of(cell)[0] == stage


@pytest.mark.parametrize(
    ("cell", "stage"), [("DDP (no ZeRO)", 0), ("zero_stage: 3", 3), ("DeepSpeed stage 2", 2)]
)
def test_an_fsdp_stack_row_runs_the_sharding_its_cell_names(
    run_cli: Any, tmp_path: Path, cell: str, stage: int
) -> None:
    # read as ZeRO-1 these were refused: PyTorch FSDP has no optimizer-only sharding
    row = _validate(run_cli, tmp_path, LLM_FOUNDRY, sharding=cell)
    assert row["status"] == "ok", row["reason"]
    assert row["plan"]["zero_stage"] == stage


def test_hsdp_says_it_is_approximated_by_full_sharding(catalog: Catalog, models: ModelRegistry) -> None:
    for cell in ("HSDP (8x16)", "HSDP: dp_shard=8, dp_replicate=16", "HYBRID_SHARD (replicate across nodes)"):
        spec = _read(catalog, models, TORCHTITAN, sharding=cell, GPUs="128", DP="128", global_batch="256")
        assert spec.plan.zero_stage == 3
        assert any("HSDP approximated" in line for line in spec.assumptions), cell


def test_a_float8_all_gather_says_it_is_priced_in_16_bits(catalog: Catalog, models: ModelRegistry) -> None:
    spec = _read(catalog, models, TORCHTITAN, sharding="FSDP2 full shard over 8 (float8 all-gather)")
    assert any("float8 parameter all-gather" in line for line in spec.assumptions)
    plain = _read(catalog, models, TORCHTITAN)
    assert not any("all-gather" in line for line in plain.assumptions)


# --- recomputation --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cell", "policy"),
    [
        ("AC: none", "none"),
        ('activation_checkpoint.mode = "none"', "none"),  # torchtitan's config
        ("AC off", "none"),
        ("gradient_checkpointing=False", "none"),  # Hugging Face's flag
        ("activation checkpointing disabled", "none"),
        ("SAC", "selective"),  # torchtitan's selective activation checkpointing
        ("--recompute-activations", "selective"),  # Megatron-LM: recompute_granularity='selective'
        ("op-level SAC", "op"),
        ('selective_ac_option="op"', "op"),
        ("selective_ac_option=1", "full"),  # torchtitan's layer SAC of every block
        ("activation checkpointing", "full"),
    ],
)
def test_recompute_cells_name_their_policy(
    catalog: Catalog, models: ModelRegistry, cell: str, policy: str
) -> None:
    assert _read(catalog, models, MEGATRON, recompute=cell).plan.recomputes == (policy,)


@pytest.mark.parametrize(
    "cell",
    [
        "--recompute-granularity full --recompute-method block --recompute-num-layers 2",
        "selective_ac_option=2",
    ],
)
def test_a_fixed_count_of_recomputed_layers_is_partial_and_says_so(
    catalog: Catalog, models: ModelRegistry, cell: str
) -> None:
    # not every layer: the engine's partial policy recomputes whole layers, choosing how many itself
    spec = _read(catalog, models, MEGATRON, recompute=cell)
    assert spec.plan.recomputes == ("partial",)
    assert any("-> partial" in line and "fixed count" in line for line in spec.assumptions)


# --- sequence parallelism ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "cell", ["no sequence parallelism", "sequence_parallel=False", "SP off", "without SP"]
)
def test_sequence_parallelism_said_off_is_off(catalog: Catalog, models: ModelRegistry, cell: str) -> None:
    sharding = f"distributed optimizer; {cell}"
    assert _read(catalog, models, MEGATRON, sharding=sharding).plan.sequence_parallel is False


def test_sequence_parallelism_said_on_keeps_the_stack_default(
    catalog: Catalog, models: ModelRegistry
) -> None:
    spec = _read(catalog, models, MEGATRON, sharding="distributed optimizer; --sequence-parallel")
    assert spec.plan.sequence_parallel is None


# --- parallel degrees -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "cell", ["TP4 PP16 CP2", "tp4pp16cp2", "TP=4, PP=16, CP=2, DP=8", "TP4xPP16xCP2", "TP4-PP16-CP2"]
)
def test_a_whole_plan_in_the_tp_cell_is_read(catalog: Catalog, models: ModelRegistry, cell: str) -> None:
    spec = _read(catalog, models, MEGATRON, TP=cell, PP="", CP="", DP="", VPP="4")
    plan = spec.plan
    assert (plan.tp, plan.pp, plan.cp, plan.dp) == (4, 16, 2, 8)  # 1,024 GPUs / (4 x 16 x 2)
    assert not {"tp", "pp", "cp"} & set(plan.free_degrees)  # stated, so not searched


def test_megatron_flags_in_the_sharding_cell_are_read(catalog: Catalog, models: ModelRegistry) -> None:
    flags = (
        "DDP + distributed optimizer; --tensor-model-parallel-size 8 --pipeline-model-parallel-size 8 "
        "--context-parallel-size 2 --virtual-pipeline-model-parallel-size 4"
    )
    plan = _read(catalog, models, MEGATRON, TP="", PP="", CP="", DP="", VPP="", sharding=flags).plan
    assert (plan.tp, plan.pp, plan.cp, plan.dp, plan.vpps, plan.zero_stage) == (8, 8, 2, 8, (4,), 1)
    assert not {"tp", "pp", "cp"} & set(plan.free_degrees)


def test_degrees_listed_without_names_are_refused(catalog: Catalog, models: ModelRegistry) -> None:
    # never the thousands-separated number 882
    with pytest.raises(RowError, match="without their names"):
        _read(catalog, models, MEGATRON, TP="(8,8,2)", PP="", CP="", DP="")


@pytest.mark.parametrize(
    "cells",
    [{"PP": "PP8 VPP4"}, {"PP": "8 (interleaved, VPP 4)"}, {"sharding": "distributed optimizer; VPP=4"}],
)
def test_an_interleaving_depth_written_in_another_cell_is_read(
    catalog: Catalog, models: ModelRegistry, cells: dict[str, str]
) -> None:
    assert _read(catalog, models, MEGATRON, VPP="", **cells).plan.vpps == (4,)


def test_expert_degrees_written_as_flags_are_read(catalog: Catalog, models: ModelRegistry) -> None:
    base = {**MEGATRON, "model": "DeepSeek-V3", "TP": "2", "PP": "16", "VPP": "1", "CP": "1", "DP": "32"}
    spec = _read(catalog, models, base, sharding="distributed optimizer; --expert-model-parallel-size 64")
    assert spec.plan.ep == 64
    spec = _read(catalog, models, base, EP="32 (expert_tensor_parallel_size=2)")
    assert (spec.plan.ep, spec.plan.etp) == (32, 2)


# --- batches and GPUs -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "cells",
    [
        {"global_batch": "mbs 1 gbs 512", "micro_batch": ""},
        {"global_batch": "MBS 1, GBS 512", "micro_batch": "MBS 1, GBS 512"},
        {"global_batch": "512 (mbs 1)", "micro_batch": ""},
    ],
)
def test_labelled_batches_are_read_by_their_labels(
    catalog: Catalog, models: ModelRegistry, cells: dict[str, str]
) -> None:
    plan = _read(catalog, models, MEGATRON, **cells).plan
    assert (plan.global_batch_size, plan.micro_batch_sizes) == (512, (1,))


def test_sequences_times_their_length_is_the_sequence_count(catalog: Catalog, models: ModelRegistry) -> None:
    plan = _read(catalog, models, MEGATRON, global_batch="512 sequences x 8192 tokens").plan
    assert plan.global_batch_size == 512


def test_unreported_gpus_are_the_product_of_the_stated_degrees(
    catalog: Catalog, models: ModelRegistry
) -> None:
    spec = _read(catalog, models, MEGATRON, GPUs="")
    assert spec.num_gpus == 8 * 8 * 2 * 8
    assert any("GPUs not reported: TP x PP x CP x DP" in line for line in spec.assumptions)
    with pytest.raises(RowError, match="GPUs is not reported"):  # DP unstated: no product
        _read(catalog, models, MEGATRON, GPUs="", DP="")
    # a DGX H100 named without a count is one system only where the stated degrees fit in it
    assert _read(catalog, models, MEGATRON, GPUs="", TP="4", PP="2", VPP="", CP="1", DP="").num_gpus == 8


# --- precision --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cell", "precision"),
    [
        ("16-mixed", "fp16"),  # PyTorch Lightning: float16 autocast
        ("16-true", "fp16"),
        ("bf16-mixed", "bf16"),
        ("bf16-true", "bf16"),
        ("32-true", "fp32"),
        ("O1", "fp16"),  # apex AMP opt levels
        ("apex O2", "fp16"),
        ("amp", "fp16"),  # torch.autocast's default CUDA dtype
        ("AMP", "fp16"),
        ("AMP (bf16)", "bf16"),
    ],
)
def test_framework_precision_settings_are_their_formats(
    catalog: Catalog, models: ModelRegistry, cell: str, precision: str
) -> None:
    assert _read(catalog, models, TORCHTITAN, precision=cell).plan.precision == precision


@pytest.mark.parametrize("cell", ["MXFP8", "NVFP4"])
def test_a_block_scaled_format_on_hopper_is_refused(
    catalog: Catalog, models: ModelRegistry, cell: str
) -> None:
    with pytest.raises(RowError, match="no block-scaled tensor cores"):
        _read(catalog, models, TORCHTITAN, precision=cell)


def test_mxfp8_on_blackwell_is_read(catalog: Catalog, models: ModelRegistry) -> None:
    assert (
        _read(catalog, models, TORCHTITAN, precision="MXFP8", hardware="DGX B200").plan.precision == "mxfp8"
    )


@pytest.mark.parametrize("cell", ["", "mixed precision", "16-mixed", "O2", "amp"])
def test_a_v100_row_naming_no_bf16_runs_fp16(catalog: Catalog, models: ModelRegistry, cell: str) -> None:
    # V100 has no bf16: a cell naming no format takes its 16-bit format, fp16
    # (MPT-7B's 10,643 tokens/s per H100 would be 3.4x a V100's 125 TFLOP/s: refused as misread)
    spec = _read(catalog, models, LLM_FOUNDRY, precision=cell, hardware="V100-SXM2-32GB", measured="2000")
    assert spec.plan.precision == "fp16"


def test_fp32_says_it_is_predicted_at_the_tf32_rate(catalog: Catalog, models: ModelRegistry) -> None:
    spec = _read(catalog, models, TORCHTITAN, precision="fp32")
    assert spec.plan.precision == "fp32"
    assert any("fp32" in line and "TF32" in line for line in spec.assumptions)
    v100 = _read(catalog, models, LLM_FOUNDRY, precision="fp32", hardware="V100-SXM2-32GB", measured="500")
    assert not any("TF32" in line for line in v100.assumptions)  # V100 has no TF32 tensor cores


def test_an_interleaving_depth_without_pipeline_stages_is_priced_as_one(
    catalog: Catalog, models: ModelRegistry
) -> None:
    """dgxc-benchmarking's Llama 4 Maverick table writes VP 12 with PP 1 (probe-training-6 W111):
    one stage has nothing to interleave, so the row is priced with vpp=1 and says so."""
    spec = _read(catalog, models, TORCHTITAN, VPP="12", sharding="distributed optimizer")
    assert spec.plan.vpps == (1,)
    assert any("VPP 12 with PP 1" in line and "vpp=1" in line for line in spec.assumptions)
