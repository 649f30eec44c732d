"""The thirty-fourth session's probe table (``tests/data/validation/probe-serving-12.tsv``: eleven
DeepSeek Sparse Attention rows and nine other 2025-26 rows), on the conventions of
``test_probe_files_6.py``: rows read by hand from their cells, every refusal with its reason. No
accuracy is asserted: these rows probe the reader, they fit nothing (their errors are in
``docs/benchmarks.md``)."""

from __future__ import annotations

import pytest

from lightspeed.catalog import Catalog
from lightspeed.sol.validation.validate import ValidationRow
from lightspeed.workload import ModelRegistry
from probes import DATA, assert_refused_exactly, assert_serving_read, probe, validated_rows

_serving_rows, _read_serving = probe("probe-serving-12.tsv")


@pytest.fixture(scope="module")
def serving(catalog: Catalog, models: ModelRegistry) -> dict[str, ValidationRow]:
    return validated_rows(DATA / "probe-serving-12.tsv", catalog, models)


# id: (model, GPUs, ISL, OSL, concurrency or None), read by hand
SERVING_BY_HAND: dict[str, tuple[str, int, int, int, int | None]] = {
    # GPUStack's GLM-5.2 page: 'Total input tokens: 3201200; Total generated tokens: 10000' of
    # 'total_requests: 100' sent at 1 req/s
    "Z301": ("glm-5", 8, 32012, 100, None),
    # SGLang's cookbook: '--random-input-len 1024 --random-output-len 1024' but the run's report
    # says 1,972 input and 2,784 generated tokens over '--num-prompts 10': 197 / 278 each
    "Z305": ("deepseek-v3.2", 8, 197, 278, 1),
    # the same cookbook's DeepSeek-R1: SGLang's random dataset drew each length up to 8,000 / 1,000
    "Z312": ("deepseek-v3", 8, 3981, 530, 64),
    # 'ShareGPT_Vicuna_unfiltered' (the file's Hugging Face dataset), '--num-prompt 1000'
    "Z316": ("gpt-oss-120b", 8, 297, 192, 100),
    # GPUStack's GLM-4.6 page: 3,200,000 input and 9,406 generated tokens over 100 requests
    "Z318": ("glm-4.6", 8, 32000, 94, None),
    # 'zai-org/GLM-5-FP8', vLLM's recipe: '--random-input-len 8000 --random-output-len 1024'
    "Z309": ("glm-5", 8, 8000, 1024, None),
}
SERVING_REFUSED = {
    # Lambda's GLM-5 page: one HGX B200 (8 GPUs), the served precision not in the part read: GLM-5's
    # 744B in BF16 (1.49 TB) is more than 8 B200 hold (8 x 179 GiB = 1.54 TB less the runtime's share)
    "Z311": "no split of the row's 8 GPUs holds glm-5 in bf16",
}


@pytest.mark.parametrize("row_id", sorted(SERVING_BY_HAND))
def test_the_twelfth_serving_probe_is_read_as_written(
    catalog: Catalog, models: ModelRegistry, row_id: str
) -> None:
    model, gpus, isl, osl, concurrency = SERVING_BY_HAND[row_id]
    assert_serving_read(_read_serving(row_id, catalog, models), model, gpus, (isl, osl), concurrency)


def test_the_twelfth_serving_probe_metrics(serving: dict[str, ValidationRow]) -> None:
    # guidellm-based output: 'Total Token throughput (tok/s)' counts prompt and generated tokens
    assert (serving["Z301"].metric, serving["Z301"].measured) == ("total_tokens_per_s", 10513.68)
    # a decode-step figure, not the page's 'Mean TPOT' (mean latency / output tokens)
    assert (serving["Z303"].metric, serving["Z303"].measured) == ("itl_s", pytest.approx(0.04201))
    # 'n/r (... the page uses zai-org/GLM-4.6-FP8 for its FP8 runs)': GLM-4.6's own BF16
    assert any(line.startswith("precision not stated: bf16") for line in serving["Z318"].assumptions)


def test_the_twelfth_serving_probe_refusals_say_why(serving: dict[str, ValidationRow]) -> None:
    assert_refused_exactly(serving, SERVING_REFUSED)
