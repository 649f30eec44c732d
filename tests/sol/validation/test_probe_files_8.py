"""The thirty-third session's second pair of probe tables (``tests/data/validation/
probe-training-7.tsv``, ``probe-serving-11.tsv``), on the conventions of ``test_probe_files_6.py``:
rows read by hand from their cells, every refusal with its reason. No accuracy is asserted: these
rows probe the reader, they fit nothing (their errors are in ``docs/benchmarks.md``)."""

from __future__ import annotations

import pytest

from lightspeed.catalog import Catalog
from lightspeed.sol.validation.validate import ValidationRow
from lightspeed.workload import ModelRegistry
from probes import DATA, assert_refused_exactly, probe, validated_rows

_serving_rows, _read_serving = probe("probe-serving-11.tsv")


@pytest.fixture(scope="module")
def serving(catalog: Catalog, models: ModelRegistry) -> dict[str, ValidationRow]:
    return validated_rows(DATA / "probe-serving-11.tsv", catalog, models)


@pytest.fixture(scope="module")
def training(catalog: Catalog, models: ModelRegistry) -> dict[str, ValidationRow]:
    return validated_rows(DATA / "probe-training-7.tsv", catalog, models)


# id: (GPUs, system the hardware cell names), read by hand
TRAINING_BY_HAND: dict[str, tuple[int, str]] = {
    # NeMo-Megatron-Launcher's 24.05 table writes the system 'DGXH100' (no space): 64 of its GPUs
    "R215": (64, "dgx-h100"),
    # tpu-recipes' Ironwood table: '256 (Number of chips)' of TPU7x ('tpu7x-4x8x8' is 4 x 8 x 8)
    "R208": (256, "tpu7x-pod"),
    # Paxml's GPT 5B gives no heads: 24 layers of 4,096 with MHA make 5.26B, the row's 5B
    "R205": (64, "dgx-h100"),
    # the same 24.05 table's Nemotron-22B (NVIDIA's 2023 Nemotron-3 22B, catalog nemotron-3-22b)
    "R216": (64, "dgx-h100"),
}
TRAINING_REFUSED = {
    "R209": "not a whole number",  # MaxText's per_device_batch_size=0.125 (a fraction of a sequence)
    # MT-NLG as llm-analysis quotes it: ZeRO-3 with 35 pipeline stages, which DeepSpeed refuses
    "R218": "pipeline engine",
    "R219": "pipeline engine",
}


@pytest.mark.parametrize("row_id", sorted(TRAINING_BY_HAND))
def test_the_seventh_training_probe_is_read_as_written(
    training: dict[str, ValidationRow], row_id: str
) -> None:
    gpus, system = TRAINING_BY_HAND[row_id]
    row = training[row_id]
    assert row.status == "ok", row.reason
    assert row.plan is not None
    assert row.plan["tp"] * row.plan["pp"] * row.plan["cp"] * row.plan["dp"] == gpus
    assert any(f"x {system} " in line for line in row.assumptions), row.assumptions


def test_the_seventh_training_probe_refusals_say_why(training: dict[str, ValidationRow]) -> None:
    assert_refused_exactly(training, TRAINING_REFUSED)


# id: (GPUs, precision, ISL, OSL), read by hand
SERVING_BY_HAND: dict[str, tuple[int, str, int | None, int | None]] = {
    # Lenovo's MLPerf v4.1 H200 Server summary: 'fp16 (...; weight_transformations: quantization)'
    # is the type quantized from; NVIDIA's submissions run FP8 on Hopper
    "Q207": (8, "fp8", None, None),
    # Juniper's two DGX H100 nodes: 'number_of_nodes 2 x accelerators_per_node 8'
    "Q201": (16, "fp8", None, None),
    # Google's A3 Ultra recipe quotes trtllm-bench: 'Average Input Length (tokens): 128.0000'
    "Q213": (8, "fp8", 128, 128),
}
SERVING_REFUSED = {
    # GPUStack's vllm bench serve runs: no rate (its default, inf) and ShareGPT alone
    "Q214": "every request is sent at once",
    "Q215": "every request is sent at once",
    "Q216": "every request is sent at once",
    "Q217": "every request is sent at once",
    # DeepSeek-V3.2 (refused for its sparse attention until 6 Dec): ShareGPT sent at once too
    "Q218": "every request is sent at once",
    "Q219": "every request is sent at once",
    "Q220": "no ISL/OSL",  # llm-d's shared-prefix workload: a system prompt and questions
}


@pytest.mark.parametrize("row_id", sorted(SERVING_BY_HAND))
def test_the_eleventh_serving_probe_is_read_as_written(
    catalog: Catalog, models: ModelRegistry, row_id: str
) -> None:
    gpus, precision, isl, osl = SERVING_BY_HAND[row_id]
    spec = _read_serving(row_id, catalog, models)
    assert spec.num_gpus == gpus
    assert spec.plan.precision == precision
    if isl is not None:
        assert (spec.load.input_tokens, spec.load.output_tokens) == (isl, osl)


def test_the_eleventh_serving_probe_refusals_say_why(serving: dict[str, ValidationRow]) -> None:
    assert_refused_exactly(serving, SERVING_REFUSED)


def test_an_mlperf_l40s_row_that_had_thrashed_is_predicted(serving: dict[str, ValidationRow]) -> None:
    # Red Hat's 4 L40S Server run: the vllm-2024 engine had looped preempting and readmitting
    # (24 GB of memory, no end); vLLM V0's admission watermark lets it finish
    assert serving["Q205"].status == "ok", serving["Q205"].reason
