"""The thirty-third session's probe tables (``tests/data/validation/probe-training-6.tsv``,
``probe-serving-10.tsv``), on the conventions of ``test_probe_files_6.py``: rows read by hand from
their cells, every refusal with its reason. No accuracy is asserted: these rows probe the reader,
they fit nothing (their errors are in ``docs/benchmarks.md``)."""

from __future__ import annotations

import pytest

from lightspeed.catalog import Catalog
from lightspeed.sol.validation.validate import ValidationRow
from lightspeed.workload import ModelRegistry
from probes import DATA, assert_refused_exactly, probe, validated_rows

_serving_rows, _read_serving = probe("probe-serving-10.tsv")


@pytest.fixture(scope="module")
def training(catalog: Catalog, models: ModelRegistry) -> dict[str, ValidationRow]:
    return validated_rows(DATA / "probe-training-6.tsv", catalog, models)


# id: (GPUs, (TP, PP, CP), ZeRO stage), read by hand
TRAINING_BY_HAND: dict[str, tuple[int, tuple[int, int, int], int]] = {
    # NeMo 25.02's DGX-B200 table: LLAMA3-70B TP 2, PP 4, CP 2 on 64 GPUs, 'n/r (no FSDP column in
    # the 25.02 table)' is unreported sharding (the distributed optimizer's ZeRO-1), not 'no FSDP'
    # (ZeRO-0, which had priced every rank's whole optimizer state: -12.7% where it is now +9%)
    "W101": (64, (2, 4, 2), 1),
    # 'Nemotron-340B' is Nemotron-4 340B (NeMo's tables' name): TP 8, PP 4 on 128 GPUs
    "W103": (128, (8, 4, 1), 1),
    "W104": (64, (1, 1, 1), 1),
    # torchtitan's 'DeepSeek V3 671B DistMoE' on 256 GB300: FSDP256 with
    # fsdp_reshard_after_forward="never" keeps parameters gathered (ZeRO-2); then PP 2 with FSDP128
    "W114": (256, (1, 1, 1), 2),
    "W115": (256, (1, 2, 1), 2),
    "W116": (256, (1, 2, 1), 2),
}
TRAINING_REFUSED = {
    "W119": "global_batch is not reported",  # PP 8 and no batch: the bubble depends on it
    "W120": "global_batch is not reported",
}


@pytest.mark.parametrize("row_id", sorted(TRAINING_BY_HAND))
def test_the_sixth_training_probe_is_read_as_written(training: dict[str, ValidationRow], row_id: str) -> None:
    gpus, degrees, stage = TRAINING_BY_HAND[row_id]
    row = training[row_id]
    assert row.status == "ok", row.reason
    assert row.plan is not None
    assert (row.plan["tp"], row.plan["pp"], row.plan["cp"]) == degrees
    assert row.plan["tp"] * row.plan["pp"] * row.plan["cp"] * row.plan["dp"] == gpus
    assert row.plan["zero_stage"] == stage
    assert row.metric == "tokens_per_s_per_gpu"


def test_nemotron_h_is_read_as_its_hybrid_blocks(training: dict[str, ValidationRow]) -> None:
    # Nemotron-H 56B (in the catalog since 6 Dec: 54 Mamba-2, 54 MLP and 10 attention blocks) on
    # 256 H100, dgxc-benchmarking's step time: TP 8, PP 1, CP 1, DP 32, the distributed optimizer
    row = training["W113"]
    assert row.status == "ok", row.reason
    assert row.plan is not None
    assert (row.plan["tp"], row.plan["pp"], row.plan["cp"], row.plan["dp"]) == (8, 1, 1, 32)
    assert row.plan["zero_stage"] == 1
    assert row.metric == "step_time_s"
    assert any("nemotron-h-56b" in line for line in row.assumptions)


def test_the_sixth_training_probe_refusals_say_why(training: dict[str, ValidationRow]) -> None:
    assert_refused_exactly(training, TRAINING_REFUSED)


# id: (GPUs, ISL, OSL, concurrency or None), read by hand
SERVING_BY_HAND: dict[str, tuple[int, int, int, int | None]] = {
    # TensorRT-LLM's ADP blog: 'Average input length: 803 tokens; Average output length: 3,653 tokens'
    "Y101": (8, 803, 3653, None),
    # llm-d's MI355X table: 'Decode-heavy (4k in × 4k out)', 'Concurrency 32'
    "Y109": (8, 4096, 4096, 32),
    "Y110": (8, 32768, 128, 4),
    "Y111": (8, 16384, 2048, 16),
    # vLLM's DeepSeek-V3.2 recipe on 8 H20: '--random-input 2048 --random-output 1024', rate 10
    "Y119": (8, 2048, 1024, None),
    # vLLM's GLM-5.2 prefill instance: '8K-token inputs (prefill)', 'TP1 DP4 EP' on 4 B300
    "Y117": (4, 8192, 1, None),
}
SERVING_REFUSED = {
    # (DeepSeek-V3.2's Y102, Y103, Y119 and GLM-5.2's rows were refused for DeepSeek Sparse Attention
    # until 6 Dec, when it was modelled)
    # Qwen3.5 (refused for its Gated DeltaNet layers until 6 Dec): 4 to 8 prefill endpoints and the
    # one decode endpoint, which configuration gave the peak not said
    "Y116": "disaggregated serving",
    "Y104": "no ISL/OSL",  # a context-only iteration's latency
    "Y112": "no ISL/OSL",  # a shared system prompt and a question: prefix caching
    "Y114": "no ISL/OSL",  # the post gives no lengths
    "Y105": "names no accelerator",  # LMDeploy's page names nodes, not their GPUs
    "Y106": "names no accelerator",
    "Y115": "names no accelerator",  # no node count, and the NICs counted in the hardware cell
}


@pytest.mark.parametrize("row_id", sorted(SERVING_BY_HAND))
def test_the_tenth_serving_probe_is_read_as_written(
    catalog: Catalog, models: ModelRegistry, row_id: str
) -> None:
    gpus, isl, osl, concurrency = SERVING_BY_HAND[row_id]
    spec = _read_serving(row_id, catalog, models)
    assert spec.num_gpus == gpus
    assert (spec.load.input_tokens, spec.load.output_tokens) == (isl, osl)
    assert spec.load.concurrency == concurrency


def test_the_tenth_serving_probe_refusals_say_why(catalog: Catalog, models: ModelRegistry) -> None:
    rows = validated_rows(DATA / "probe-serving-10.tsv", catalog, models)
    assert_refused_exactly(rows, SERVING_REFUSED)
