"""How an inference row's cells give its deployment: the parallel degrees wherever the row writes
them, copies of the model, GPUs the degrees multiply to, expert and attention data parallelism as
the servers' flags and recipes write them, prefill/decode pools, speculative decoding and caps on
sequences (a probe of the reader found each of these read as another plan without a word, or
refused for a reason that was not the row's).

Every expected value is what the cell means to the tool that wrote it (vLLM's, SGLang's and
TensorRT-LLM's flags), never a number copied from lightspeed's output."""

from __future__ import annotations

from pathlib import Path

import pytest

from lightspeed.catalog import Catalog
from lightspeed.sol import inference_predictor, validate_published
from lightspeed.sol.validation.validate import ValidationRow
from lightspeed.workload import ModelRegistry

COLUMNS = (
    "id",
    "kind",
    "source",
    "model",
    "seq",
    "global_batch",
    "micro_batch",
    "TP",
    "PP",
    "DP",
    "EP",
    "sharding",
    "GPUs",
    "hardware",
    "precision",
    "metric",
    "measured",
)
# A dense model one H100 holds, one request at a time (the analytic steady state: no simulation)
DENSE = {
    "kind": "infer",
    "source": "a serving benchmark",
    "model": "Llama 3.1 8B",
    "seq": "ISL/OSL 1024/128",
    "global_batch": "batch 1",
    "GPUs": "8",
    "hardware": "H100 SXM",
    "precision": "FP8",
    "metric": "output tokens/s/user",
    "measured": "100",
}
# DeepSeek-R1 on a node of H200 (I103 in published-dev-2025.tsv), batch 1
MOE = {
    **DENSE,
    "source": "a serving benchmark",
    "model": "DeepSeek-R1",
    "hardware": "H200 (HGX, 8 GPUs)",
    "precision": "FP8",
}


def _validate(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry, **rows: dict[str, str]
) -> dict[str, ValidationRow]:
    """The validated rows of a table of ``rows`` (id -> cells), by id."""
    lines = ["\t".join(COLUMNS)]
    lines.extend(
        "\t".join(cells.get(column, row_id if column == "id" else "") for column in COLUMNS)
        for row_id, cells in rows.items()
    )
    path = tmp_path / "rows.tsv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    report = validate_published(path=path, catalog=catalog, models=models, infer=inference_predictor())
    return {row.id: row for row in report.rows}


def _one(tmp_path: Path, catalog: Catalog, models: ModelRegistry, cells: dict[str, str]) -> ValidationRow:
    """The validated row of a one-row table of ``cells``."""
    (row,) = _validate(tmp_path, catalog, models, R1=cells).values()
    return row


def _layout(row: ValidationRow) -> tuple[object, ...]:
    assert row.plan is not None, row.reason
    return tuple(row.plan[key] for key in ("tp", "pp", "ep", "dp_attention", "replicas"))


def _said(row: ValidationRow, words: str) -> bool:
    return any(words in note for note in row.assumptions)


def test_a_count_of_copies_is_replicas_not_tp(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    # "2 replicas of TP4" was TP 2 x 4 replicas, "8 x TP1 instances" TP 8
    rows = _validate(
        tmp_path,
        catalog,
        models,
        R1={**DENSE, "TP": "2 replicas of TP4"},
        R2={**DENSE, "TP": "8 x TP1 instances"},
    )
    assert _layout(rows["R1"]) == (4, 1, 1, 1, 2)
    assert _layout(rows["R2"]) == (1, 1, 1, 1, 8)


@pytest.mark.parametrize(
    ("cells", "where"),
    [
        ({"sharding": "vllm serve --tensor-parallel-size 4"}, ""),
        ({"source": "vLLM docs; vllm serve meta-llama/Llama-3.1-8B -tp 4"}, "source"),
        ({"source": "a table, Tensor Model Parallel Size 4"}, "source"),
        ({"hardware": "H100 SXM, TP4"}, "hardware"),
        ({"precision": "fp8 TP4"}, "precision"),
    ],
)
def test_a_tp_written_outside_its_cell(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry, cells: dict[str, str], where: str
) -> None:
    # each was read as TP 1 x 8 replicas without a word
    row = _one(tmp_path, catalog, models, {**DENSE, **cells})
    assert _layout(row) == (4, 1, 1, 1, 2)
    assert not where or _said(row, f"TP 4 from the {where} cell")


def test_a_row_stating_no_tp_says_which_it_took(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    row = _one(tmp_path, catalog, models, DENSE)
    assert _layout(row) == (1, 1, 1, 1, 8)
    assert _said(row, "tp=1")


@pytest.mark.parametrize(
    "cells",
    [
        {"TP": "TP4 x DP2"},
        {"TP": "2 replicas of TP4"},
        {"TP": "TP4", "DP": "2"},
        {"TP": "4", "DP": "2 replicas"},
    ],
)
def test_gpus_are_tp_times_pp_times_replicas_when_no_cell_counts_them(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry, cells: dict[str, str]
) -> None:
    # these were refused "GPUs is not reported"
    row = _one(tmp_path, catalog, models, {**DENSE, "GPUs": "", **cells})
    assert _layout(row) == (4, 1, 1, 1, 2)
    assert _said(row, "GPUs not reported: TP x PP x replicas = 4 x 1 x 2 = 8")


def test_replicas_that_do_not_fill_the_gpus_are_refused(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    row = _one(tmp_path, catalog, models, {**DENSE, "TP": "TP4", "DP": "4"})
    assert row.predicted is None
    assert "4 replicas" in row.reason


def test_pipeline_degrees_written_beside_tp(tmp_path: Path, catalog: Catalog, models: ModelRegistry) -> None:
    # each was read as PP 1 x 2 replicas
    rows = _validate(
        tmp_path,
        catalog,
        models,
        R1={**DENSE, "TP": "--tensor-parallel-size 4 --pipeline-parallel-size 2"},
        R2={**DENSE, "TP": "4", "sharding": "--pipeline-parallel-size 2"},
        R3={**DENSE, "TP": "TP4PP2"},
        R4={**DENSE, "TP": "4x2 (TPxPP)"},
    )
    for row in rows.values():
        assert _layout(row) == (4, 2, 1, 1, 1), row.id


def test_expert_parallel_degrees_as_servers_write_them(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    # each was read as EP 1 (E14 refused); vLLM's --enable-expert-parallel is EP = TP x DP (8 x 1)
    rows = _validate(
        tmp_path,
        catalog,
        models,
        R1={**MOE, "TP": "TP8EP8"},
        R2={**MOE, "TP": "tp8_ep8"},
        R3={**MOE, "TP": "8", "sharding": "--ep-size 8"},
        R4={**MOE, "TP": "tensor_parallel_size=8, moe_expert_parallel_size=8"},
        R5={**MOE, "TP": "--tp_size 8 --ep_size 8"},
        R6={**MOE, "TP": "8", "EP": "--enable-expert-parallel"},
        R7={**MOE, "TP": "TP8 (--enable-expert-parallel)"},
        R8={**MOE, "TP": "TEP8"},
    )
    for row in rows.values():
        assert _layout(row) == (8, 1, 8, 1, 1), row.id


def test_attention_data_parallel_recipes(tmp_path: Path, catalog: Catalog, models: ModelRegistry) -> None:
    # DEP8: attention DP over 8 one-GPU groups with EP 8 (was TP 8, EP 1); SGLang's --tp 8 --dp 8
    # counts all the groups' GPUs (was refused "replicas must be >= 1"); vLLM's DP 8 with EP 8 over
    # TP 1 is attention DP (was refused "ep=8 must divide 1 GPUs")
    rows = _validate(
        tmp_path,
        catalog,
        models,
        R1={**MOE, "TP": "DEP8"},
        R2={**MOE, "DP": "DEP8"},
        R3={**MOE, "TP": "8", "DP": "attention DP 8", "EP": "8"},
        R4={**MOE, "TP": "--tp 8", "DP": "--enable-dp-attention --dp 8", "EP": "--ep 8"},
        R5={**MOE, "TP": "1", "DP": "8", "EP": "8"},
    )
    for row in rows.values():
        assert _layout(row) == (1, 1, 8, 8, 1), row.id
    assert _said(rows["R5"], "attention is data parallel")


def test_expert_parallel_that_contradicts_the_row_is_refused(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    # vLLM's --data-parallel-size 8 --enable-expert-parallel over TP 8 is EP 64, not the EP 8 stated
    cells = {
        "TP": "8",
        "DP": "8",
        "EP": "8",
        "sharding": "vllm --data-parallel-size 8 --enable-expert-parallel",
    }
    row = _one(tmp_path, catalog, models, {**MOE, **cells})
    assert row.predicted is None
    assert "EP 8" in row.reason


def test_prefill_and_decode_pools(tmp_path: Path, catalog: Catalog, models: ModelRegistry) -> None:
    # each was read as co-located replicas; xPyD without numbers is refused
    rows = _validate(
        tmp_path,
        catalog,
        models,
        R1={**DENSE, "TP": "4", "sharding": "disaggregated 1P1D"},
        R2={**DENSE, "TP": "1", "GPUs": "5", "sharding": "2P3D (PD disaggregation)"},
        R3={**DENSE, "TP": "4", "sharding": "1 prefill + 1 decode instance (Dynamo)"},
        R4={**DENSE, "TP": "4", "sharding": "xPyD disaggregated serving"},
        R5={**DENSE, "TP": "4", "GPUs": "16", "sharding": "1P1D"},
    )
    for row_id, pools in (("R1", [1, 1]), ("R2", [2, 3]), ("R3", [1, 1])):
        plan = rows[row_id].plan
        assert plan is not None, rows[row_id].reason
        assert list(plan["disaggregated"]) == pools, row_id
    # no counts; and one prefill plus one decode replica of TP 4 is 8 GPUs, not 16
    for row_id, said in (("R4", "xPyD"), ("R5", "1P1D is 2 replicas")):
        assert rows[row_id].predicted is None
        assert said in rows[row_id].reason


@pytest.mark.parametrize(
    "sharding",
    [
        # SGLang at top-k 1: num_draft_tokens = num_steps + 1, so 3 drafts (was read as 4)
        "--speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4, AL 2.5",
        "--speculative-num-steps 3, acceptance length 2.5",
        "num_nextn_predict_layers=3, acceptance length 2.5",  # TensorRT-LLM's MTP modules
        'speculative_config={"method": "eagle3", "num_speculative_tokens": 3}, acceptance length 2.5',
        "Eagle3 draft 3, acceptance length 2.5",
        "3-token MTP, acceptance 2.5",
    ],
)
def test_speculative_draft_tokens_as_servers_write_them(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry, sharding: str
) -> None:
    (row,) = _validate(
        tmp_path, catalog, models, R1={**MOE, "TP": "8", "EP": "4", "sharding": sharding}
    ).values()
    assert row.plan is not None, row.reason
    speculative = row.plan["speculative"]
    assert isinstance(speculative, dict)
    assert speculative["num_draft_tokens"] == 3
    # 2.5 tokens a verify pass with 3 drafts: (1 - a^4) / (1 - a) = 2.5
    rate = speculative["acceptance_rate"]
    assert isinstance(rate, float)
    assert (1 - rate**4) / (1 - rate) == pytest.approx(2.5, rel=1e-6)


def test_a_tree_of_drafts_is_refused(tmp_path: Path, catalog: Catalog, models: ModelRegistry) -> None:
    sharding = "--speculative-num-steps 3 --speculative-eagle-topk 4 --speculative-num-draft-tokens 8, AL 2.5"
    (row,) = _validate(
        tmp_path, catalog, models, R1={**MOE, "TP": "8", "EP": "4", "sharding": sharding}
    ).values()
    assert row.predicted is None
    assert "tree" in row.reason


@pytest.mark.parametrize(
    "cells",
    [
        {"global_batch": "maximum batch size 64"},  # was a static batch of 64
        {"global_batch": "offline; maximum batch size 64"},  # was dropped
        {"global_batch": "offline", "micro_batch": "max_batch_size=64"},
        {"global_batch": "offline", "sharding": "--max-num-seqs 64"},
        {"global_batch": "offline", "source": "trtllm-bench throughput --max-batch-size 64"},
    ],
)
def test_a_cap_on_sequences_wherever_the_row_writes_it(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry, cells: dict[str, str]
) -> None:
    row_cells = {**DENSE, "TP": "1", "metric": "output tokens/s", "measured": "10,000", **cells}
    row = _one(tmp_path, catalog, models, row_cells)
    assert row.plan is not None, row.reason
    assert _said(row, "server cap of 64 sequences")
    assert not _said(row, "static batch")
    assert row.plan["max_batch"] == 64


def test_page_ranges_and_sweeps_in_prose_are_no_degrees(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    # a citation's pages and a sweep's list name no degree of this row
    source = "Proceedings of MLSys, pp 12-25; swept TP 1/2/4/8"
    row = _one(tmp_path, catalog, models, {**DENSE, "TP": "4", "source": source})
    assert _layout(row) == (4, 1, 1, 1, 2)


@pytest.mark.parametrize(
    ("cells", "reason"),
    [
        # a degree of 0 divided by zero (DEP0) or was taken for a layout; 1e400 was read as 1
        ({"TP": "2 replicas of TP0"}, "TP 0 runs on no GPUs"),
        ({"TP": "DEP0"}, "DEP 0 runs on no GPUs"),
        ({"TP": "TP1e400"}, "too large to be a number"),
        # a cap no whole number reads was dropped without a word, a cap of 0 ignored
        ({"micro_batch": "maximum batch size 1e400"}, "is not a whole number of sequences"),
        ({"sharding": "--max-num-seqs 0"}, "allows no sequence"),
    ],
)
def test_degrees_and_caps_no_gpu_runs_are_refused(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry, cells: dict[str, str], reason: str
) -> None:
    row = _one(tmp_path, catalog, models, {**DENSE, **cells})
    assert row.predicted is None
    assert reason in row.reason


def test_experts_wider_than_a_replica_say_what_the_row_lacks(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    # the engine's own refusal said "try ep=1", which is no deployment the row describes
    row = _one(tmp_path, catalog, models, {**MOE, "TP": "1", "EP": "EP8"})
    assert row.predicted is None
    assert "the row states no attention DP; write DP 8 (attention DP), TP 8, or DEP8/TEP8" in row.reason


@pytest.mark.parametrize("cell", ["MTP disabled", "speculative: off", "no MTP"])
def test_speculation_said_to_be_off_is_no_speculation(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry, cell: str
) -> None:
    # "MTP disabled" was read as speculation named but not modelled
    row = _one(tmp_path, catalog, models, {**MOE, "TP": "8", "sharding": cell})
    assert row.plan is not None
    assert row.plan["speculative"] is None
    assert not _said(row, "speculative decoding named")
