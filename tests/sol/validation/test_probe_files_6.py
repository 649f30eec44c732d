"""The thirty-second session's probe tables (``tests/data/validation/probe-training-4.tsv``,
``probe-serving-8.tsv``), on the conventions of ``test_probe_files_5.py``: rows read by hand from
their cells, every refusal with its reason. No accuracy is asserted: these rows probe the reader,
they fit nothing (their errors are in ``docs/benchmarks.md``)."""

from __future__ import annotations

import pytest

from lightspeed.catalog import Catalog
from lightspeed.sol.validation.validate import ValidationRow
from lightspeed.workload import ModelRegistry
from probes import DATA, assert_refused_exactly, probe, validated_rows

_serving_rows, _read_serving = probe("probe-serving-8.tsv")


@pytest.fixture(scope="module")
def training(catalog: Catalog, models: ModelRegistry) -> dict[str, ValidationRow]:
    return validated_rows(DATA / "probe-training-4.tsv", catalog, models)


# id: (GPUs, (TP, PP) or None where the row leaves them to the search, metric key, recompute or
# None where the search chooses), read by hand
TRAINING_BY_HAND: dict[str, tuple[int, tuple[int, int] | None, str, str | None]] = {
    # Megatron-LM's DeepSeek-V3 guide on 256 GB200: TP 1, PP 8, '--recompute-modules mlp up_proj'
    # (selective, not full)
    "W02": (256, (1, 8), "tflop_per_s_per_gpu", "selective"),
    # torchao's table: 'Median tokens/second' of Llama 3 8B on 8 H100 is torchtitan's per-device tps
    "W11": (8, (1, 1), "tokens_per_s_per_gpu", None),
    # the PyTorch float8 blog: '70B (Meta Llama3 architecture)' is Llama 3 70B, on 512 H100 with
    # FSDP2 and no TP stated
    "W15": (512, None, "tokens_per_s_per_gpu", None),
    # TinyLlama: built from its cells, the vocabulary its tokenizer's ('n/r (Llama 2 tokenizer)')
    "W08": (16, None, "tokens_per_s_per_gpu", None),
    # ms-swift: Qwen2.5-14B with TP 4 on one node of eight A800s
    "W19": (8, (4, 1), "step_time_s", "selective"),
}
TRAINING_REFUSED = {
    "W03": "global_batch is not reported",  # PP 8 and no batch: the bubble depends on it
    "W04": "global_batch is not reported",  # PP 4 on four MI355X nodes and no batch
    "W05": "not in the catalog",  # '7B (Llama-like models)': no architecture
    "W06": "not in the catalog",
    "W07": "not in the catalog",
}


@pytest.mark.parametrize("row_id", sorted(TRAINING_BY_HAND))
def test_the_fourth_training_probe_is_read_as_written(
    training: dict[str, ValidationRow], row_id: str
) -> None:
    gpus, degrees, metric, recompute = TRAINING_BY_HAND[row_id]
    row = training[row_id]
    assert row.status == "ok", row.reason
    assert row.plan is not None
    if degrees is not None:
        assert (row.plan["tp"], row.plan["pp"]) == degrees
    assert row.plan["tp"] * row.plan["pp"] * row.plan["cp"] * row.plan["dp"] == gpus
    assert row.metric == metric
    if recompute is not None:
        assert row.plan["recompute"] == recompute


def test_the_fourth_training_probe_refusals_say_why(training: dict[str, ValidationRow]) -> None:
    assert_refused_exactly(training, TRAINING_REFUSED)


# id: (model, GPUs, ISL, OSL, requests simulated or None, metric key), read by hand
SERVING_BY_HAND: dict[str, tuple[str, int, int, int, int | None, str]] = {
    # SGLang's H200 table: '--request-rate 16 --num-prompts 200' is a run of those 200 requests
    "U03": ("deepseek-v3", 8, 1024, 1024, 200, "output_tokens_per_s"),
    # vLLM's Kimi-K2 recipe: '--num-prompts 16 --request-rate 10000 (all 16 at once)'
    "U08": ("kimi-k2", 16, 8000, 1000, 16, "output_tokens_per_s"),
    # vLLM's offline benchmark: tokens_per_second (= total_num_tokens / elapsed_time) counts both
    "U11": ("llama-3.1-405b", 8, 128, 2048, None, "total_tokens_per_s"),
}
SERVING_REFUSED: dict[str, str] = {
    # Lambda's vLLM 0.5.4 table: benchmark_serving.py with --num-prompts 320 and no rate is every
    # request at once (its default --request-rate inf), and ShareGPT alone gives no tail lengths
    "U01": "every request is sent at once",
    "U02": "every request is sent at once",
}


@pytest.mark.parametrize("row_id", sorted(SERVING_BY_HAND))
def test_the_eighth_serving_probe_is_read_as_written(
    catalog: Catalog, models: ModelRegistry, row_id: str
) -> None:
    model, gpus, isl, osl, requests, metric = SERVING_BY_HAND[row_id]
    spec = _read_serving(row_id, catalog, models)
    assert (spec.model_name, spec.num_gpus) == (model, gpus)
    assert (spec.load.input_tokens, spec.load.output_tokens) == (isl, osl)
    assert spec.metric == metric
    if requests is not None:
        assert spec.simulation is not None
        assert spec.simulation.workload.num_requests == requests


def test_a_model_no_node_holds_runs_its_servers_multi_node_layout(
    catalog: Catalog, models: ModelRegistry
) -> None:
    # DeepSeek-R1-0528 on 16 H100 under SGLang, no TP stated: one TP group over both nodes
    spec = _read_serving("U10", catalog, models)
    assert (spec.plan.tp, spec.plan.pp, spec.plan.replicas) == (16, 1, 1)


def test_an_mlperf_benchmark_without_published_output_lengths_takes_the_runs_own(
    catalog: Catalog, models: ModelRegistry
) -> None:
    # MLPerf v5.1's Llama 3.1 8B: MLCommons publishes no output lengths (the rows had been refused);
    # Dell's summary gives 143,904 tokens/s and 1,115.68 samples/s: 129 tokens a sample
    spec = _read_serving("U19", catalog, models)
    assert spec.simulation is not None
    assert spec.simulation.workload.output_lengths.mean_tokens == pytest.approx(129.0)
    assert any("the run's own tokens per sample" in line for line in spec.assumptions)


def test_the_eighth_serving_probe_refusals_say_why(catalog: Catalog, models: ModelRegistry) -> None:
    # U17 and U18 (MLPerf v5.1 DeepSeek-R1: tens of thousands of simulated requests per layout)
    # are left out: test_mlperf_layout.py reads U17's layout, docs/benchmarks.md has their errors
    rows = validated_rows(DATA / "probe-serving-8.tsv", catalog, models, without=frozenset({"U17", "U18"}))
    assert_refused_exactly(rows, SERVING_REFUSED)


def test_the_fifth_training_probe(catalog: Catalog, models: ModelRegistry) -> None:
    rows = validated_rows(DATA / "probe-training-5.tsv", catalog, models)
    # gpu-recipes' A3 Ultra Llama 3 70B: NeMo's 'activations_checkpoint_granularity: null' is no
    # recomputation, and its '24.07-based image' dates the run (2024), not the repository's commit
    assert rows["V109"].status == "ok", rows["V109"].reason
    assert rows["V109"].plan is not None
    assert rows["V109"].plan["recompute"] == "none"
    assert rows["V109"].stack == "megatron-core-2024"
    # MaxText's 'DeepSeek3-671B' is DeepSeek-V3 (it had been built from the cells as a dense model)
    assert any("catalog model deepseek-v3" in line for line in rows["V106"].assumptions)
    # two v6e-256 slices over the data-center network, eight MI355X nodes over Pollara 400 NICs
    assert all(row.status == "ok" for row in rows.values()), {r.id: r.reason for r in rows.values()}


def test_the_ninth_serving_probe(catalog: Catalog, models: ModelRegistry) -> None:
    # Z108 (MLPerf v5.1 DeepSeek-R1 on 72 GB200) is left out as U17 and U18 are above
    rows = validated_rows(DATA / "probe-serving-9.tsv", catalog, models, without=frozenset({"Z108"}))
    refused = {row_id: row.reason for row_id, row in rows.items() if row.status != "ok"}
    # LMSYS's GB300 post gives a rate per GPU and never the GPUs it ran on
    assert set(refused) == {"Z120", "Z121"}
    assert all("GPUs is not reported" in reason for reason in refused.values())
    # NVIDIA's table: 'Input | Output Sequence Lengths 2,048 | 128'
    spec = probe("probe-serving-9.tsv")[1]("Z117", catalog, models)
    assert (spec.load.input_tokens, spec.load.output_tokens) == (2048, 128)
