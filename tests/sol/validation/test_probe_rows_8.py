"""Rows written the way an eighth set of sources writes them (the thirty-fourth session's probe,
``probe-serving-12.tsv``, and the DeepSeek-V3.2 and GLM-5 rows earlier probes held). Each test is a
rule the reader lacked: the row was read as something its own cells do not say."""

from __future__ import annotations

import pytest

from lightspeed.catalog import Catalog
from lightspeed.sol.core.stacks import load_stack
from lightspeed.sol.infer.plan import PoolShape
from lightspeed.sol.validation.infer_layout import stated_layout
from lightspeed.sol.validation.infer_load import row_requests
from lightspeed.sol.validation.infer_precision import precision
from lightspeed.sol.validation.infer_rows import _load
from lightspeed.sol.validation.metric_keys import infer_key
from lightspeed.sol.validation.published import PublishedRow, RowError, degree_cell
from lightspeed.sol.validation.rows import read_plan
from lightspeed.workload import ModelRegistry
from probes import probe

_rows_10, _read_serving_10 = probe("probe-serving-10.tsv")


def _row(**cells: str) -> PublishedRow:
    return PublishedRow(row_id="Z1", kind="infer", line=2, cells=cells)


@pytest.mark.parametrize(
    ("metric", "key"),
    [
        # AMD's GLM-5.2 on MI355X writes 'total tok/s per GPU' for prompt and generated tokens
        # together (had been read as generated tokens alone: -91%)
        ("total tok/s per gpu", "total_tokens_per_s"),
        ("total tok/s", "total_tokens_per_s"),
        ("total token throughput (tok/s)", "total_tokens_per_s"),
        ("total output tok/s", "output_tokens_per_s"),
        ("output tok/s", "output_tokens_per_s"),
    ],
)
def test_total_tok_per_second_counts_both_sides(metric: str, key: str) -> None:
    assert infer_key(metric) == key


def test_the_runs_token_totals_over_its_requests_are_the_lengths() -> None:
    """SGLang's cookbook: '--random-input-len 8000 --random-output-len 1000' drew each length up to
    the one commanded (its random dataset's default range); the report's totals over the 320
    prompts give the lengths that ran: 1,273,893 / 320 = 3,981 and 169,680 / 320 = 530."""
    row = _row(
        seq="--dataset-name random --random-input-len 8000 --random-output-len 1000 "
        "(Total input tokens: 1273893; Total generated tokens: 169680)",
        global_batch="--num-prompts 320 --max-concurrency 64 --request-rate inf",
        metric="Output token throughput (tok/s)",
    )
    loaded = _load(row)
    assert (loaded.load.input_tokens, loaded.load.output_tokens) == (3981, 530)
    assert loaded.load.concurrency == 64
    assert "1,273,893 input and 169,680 generated tokens over 320 requests" in loaded.lengths_note


def test_totals_without_a_request_count_leave_the_commanded_lengths() -> None:
    row = _row(
        seq="ISL/OSL 8000/1000 (Total input tokens: 1273893; Total generated tokens: 169680)",
        global_batch="concurrency 64",
        metric="Output token throughput (tok/s)",
    )
    loaded = _load(row)
    assert (loaded.load.input_tokens, loaded.load.output_tokens) == (8000, 1000)
    assert loaded.lengths_note == ""


def test_totals_that_leave_a_request_no_token_or_too_many_are_refused() -> None:
    row = _row(
        seq="random (Total input tokens: 50; Total generated tokens: 10)",
        global_batch="--num-prompts 320, concurrency 8",
        metric="Output token throughput (tok/s)",
    )
    with pytest.raises(RowError, match="outside 1 to 134,217,728"):
        _load(row)
    huge = _row(
        seq="random (Total input tokens: 99999999999999999999999; Total generated tokens: 10)",
        global_batch="--num-prompts 320, concurrency 8",
        metric="Output token throughput (tok/s)",
    )
    with pytest.raises(RowError, match="check the totals"):
        _load(huge)


@pytest.mark.parametrize(
    ("cell", "count"),
    [
        ("request_rate: 1, total_requests: 100", 100),  # guidellm's profile
        ("Successful requests: 1000", 1000),  # the serving benchmarks' report
        ("--num-prompts 320", 320),
    ],
)
def test_request_counts_as_benchmark_reports_write_them(cell: str, count: int) -> None:
    assert row_requests(_row(global_batch=cell)) == count


def test_an_unreported_precision_cell_with_a_note_states_no_format(
    catalog: Catalog, models: ModelRegistry
) -> None:
    """GPUStack's GLM-4.6 page: the run's precision is not given; the writer's note says FP8
    checkpoints served other runs of the page. That is not this run's format (it had been read as
    FP8): the model's release format, BF16, is."""
    row = _row(
        model="GLM-4.6 (zai-org/GLM-4.6)",
        precision="n/r (zai-org/GLM-4.6 checkpoint; the page uses zai-org/GLM-4.6-FP8 for its FP8 runs)",
    )
    h200 = catalog.accelerator("h200")
    read = precision(row, h200, models.get("glm-4.6"))
    assert read.format == "bf16"
    assert read.note.startswith("precision not stated")
    stated = _row(model="GLM-4.6", precision="FP8 (zai-org/GLM-4.6-FP8)")
    assert precision(stated, h200, models.get("glm-4.6")).format == "fp8"


def test_vllms_short_expert_parallel_flag_and_a_yes_that_holds_other_degrees() -> None:
    """vLLM's GLM-5.2 post: 'yes (-ep, TP1 DP4 EP)' in the EP cell. '-ep' is vLLM's short
    --enable-expert-parallel (EP = TP x DP), and the cell's '1' is TP1's, not an EP of 1 (it had
    been read as EP 1, and the row refused)."""
    row = _row(
        TP="1",
        EP="yes (-ep, TP1 DP4 EP)",
        sharding="TP1 DP4 EP prefill instance (4 GPUs each per deployment table)",
        DP="4",
    )
    layout = stated_layout(row)
    assert layout.vllm_expert_parallel
    assert (layout.tp, layout.ep, layout.dp) == (1, None, 4)
    assert degree_cell(row, "EP") is None
    # SGLang's '--ep 8' takes a value: a degree, not vLLM's switch
    assert not stated_layout(_row(sharding="--tp 8 --ep 8")).vllm_expert_parallel


def test_a_prefill_pools_inputs_in_the_plural() -> None:
    """'8K-token inputs (prefill)' with a prefill-throughput metric: a prefill pool's 8,192-token
    prompts (had been refused: no lengths)."""
    row = _row(
        seq="8K-token inputs (prefill)",
        global_batch="n/r",
        metric="prefill throughput (tok/s) of one instance",
    )
    loaded = _load(row)
    assert (loaded.load.input_tokens, loaded.load.output_tokens) == (8192, 1)


@pytest.mark.parametrize(("accelerator", "micro"), [("tpu7x", 4), ("h100-sxm", 2)])
def test_maxtexts_per_device_batch_counts_devices(
    catalog: Catalog, models: ModelRegistry, accelerator: str, micro: int
) -> None:
    """tpu-recipes' Ironwood table: 'per_device_batch_size=2' with a global batch of 1,024 on 256
    chips, 4 sequences a chip: TPU7x shows two JAX devices a chip (two TensorCores, no megacore),
    so a chip runs 2 x 2 (it had been read as 2, two micro-batches a step); a GPU is one device."""
    row = PublishedRow(
        row_id="R1",
        kind="train",
        line=2,
        cells={"seq": "8192", "global_batch": "1024 (GBS)", "micro_batch": "2 (per_device_batch_size=2)"},
    )
    plan, notes = read_plan(
        row, models.get("llama-3-70b"), 256, load_stack("published-median"), catalog.accelerator(accelerator)
    )
    assert plan.micro_batch_sizes == (micro,)
    assert any("per_device_batch_size counts devices" in note for note in notes) == (micro == 4)


# id: (pools P:D, decode (TP, attention groups, EP), the prefill pool's shape), read by hand
POOLS_BY_HAND: dict[str, tuple[tuple[int, int], tuple[int, int, int], PoolShape]] = {
    # vLLM's GLM-5.2 post: '4 Prefill (TP1 DP4 EP, 4 GPUs each = 16) + 1 Decode (TP1 DP8 EP = 8)'
    "Y118": ((4, 1), (1, 8, 8), PoolShape(tp=1, ep=4, dp_attention=4)),
    # llm-d's gpt-oss report: '8 TP=1 prefills on one 8x H200 node + 2 TP=4 decoders on a second'
    "Y113": ((8, 2), (4, 1, 1), PoolShape(tp=1)),
}


@pytest.mark.parametrize("row_id", sorted(POOLS_BY_HAND))
def test_pools_written_each_with_its_own_degrees(
    catalog: Catalog, models: ModelRegistry, row_id: str
) -> None:
    """Both had been refused ('pools of one replica shape'; 'without its pools')."""
    pools, decode, prefill = POOLS_BY_HAND[row_id]
    spec = _read_serving_10(row_id, catalog, models)
    plan = spec.plan
    assert plan.disaggregated == pools
    assert (plan.tp, plan.dp_attention, plan.ep) == decode
    assert plan.prefill_shape == prefill
    assert plan.num_gpus == spec.num_gpus
