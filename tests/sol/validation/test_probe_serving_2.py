"""The second probe of the free-text reader (Q01-Q15, issue 27/28), on the conventions of
``test_probe_serving.py``: each row read by hand; no accuracy is asserted."""

from __future__ import annotations

import pytest

from lightspeed.catalog import Catalog
from lightspeed.sol.validation.hardware_text import read_hardware
from lightspeed.sol.validation.readings import read_cell
from lightspeed.workload import ModelRegistry
from lightspeed.workload.names import reduce_name
from probes import DATA, assert_mlperf_read, probe

PROBE = DATA / "probe-serving-2.tsv"
_rows, _read = probe(PROBE.name)


# id: (model, TP, replicas, ISL, OSL, Poisson rate (None: none stated), metric key, value in base
# units), each read by hand from the row's cells:
READ_BY_HAND = {
    # TensorRT-LLM 0.17's throughput table: 'Runtime Input/Output Lengths' written '2048, 2048',
    # 'Tensor Model Parallel Size' 1, requests at an infinite rate (the server at its most load);
    # 'LLaMA v3.1 8B' is Llama 3.1 8B (llama-3.1-8b); tokens/s are output tokens
    "Q01": ("llama-3.1-8b", 1, 1, 2048, 2048, None, "output_tokens_per_s", 2225.27),
    "Q02": ("llama-3.1-70b", 4, 1, 500, 2000, None, "output_tokens_per_s", 2275.79),
    "Q03": ("mixtral-8x7b", 1, 1, 1000, 1000, None, "output_tokens_per_s", 8849.18),
    "Q04": ("llama-3.1-405b", 8, 1, 20000, 2000, None, "output_tokens_per_s", 535.31),
    "Q05": ("mixtral-8x22b", 8, 1, 128, 2048, None, "output_tokens_per_s", 25150.03),
    # the online table (TensorRT-LLM 0.14, 500 requests): 'QPS 8' is Poisson arrivals at 8 per
    # second; 'Mean TTFT(ms)' 92 is 0.092 s, 'Output Tput (tok/s)' output tokens/s, 'Mean ITL(ms)'
    # 10 the mean gap between two streamed tokens, 0.010 s
    "Q06": ("llama-3.1-70b", 4, 1, 467, 256, 8.0, "ttft_s", 0.092),
    "Q07": ("llama-3.1-8b", 1, 1, 202, 214, 16.0, "output_tokens_per_s", 2969.0),
    # 'QPS INF': the 500 requests all sent at once, no Poisson rate
    "Q08": ("llama-3.1-70b", 4, 1, 467, 256, None, "ttft_s", 9.222),
    "Q09": ("llama-3.1-8b", 1, 1, 467, 16, 32.0, "itl_s", 0.010),
    # SGLang's table of ShareGPT prompts at 'RPS 4': the lengths are the dataset's, which the row
    # does not give, so vLLM's sample means (202 in, 179 out; sol/serve/data/datasets.toml); its
    # 'Median TTFT' 53.94 has no unit, milliseconds as bench_serving prints it
    "Q15": ("llama-3.1-70b", 4, 1, 202, 179, 4.0, "ttft_s", 0.05394),
}


@pytest.mark.parametrize("row_id", sorted(READ_BY_HAND))
def test_every_probe_row_is_read_as_written(catalog: Catalog, models: ModelRegistry, row_id: str) -> None:
    model, tp, replicas, isl, osl, rate, metric, value = READ_BY_HAND[row_id]
    spec = _read(row_id, catalog, models)
    assert spec.model_name == model
    assert (spec.plan.tp, spec.plan.replicas) == (tp, replicas)
    assert (spec.load.input_tokens, spec.load.output_tokens) == (isl, osl)
    assert spec.load.concurrency is None  # no batch and no concurrency stated
    assert spec.load.arrival_rate_per_s == rate
    assert spec.batching == "continuous"
    assert (spec.metric, spec.measured) == (metric, pytest.approx(value))


def test_a_family_version_written_with_a_v() -> None:
    # TensorRT-LLM's tables write 'LLaMA v3.1 70B': the same model as 'Llama 3.1 70B'; a trailing
    # version tag stays a version (Mistral's v0.1), and DeepSeek-V3 keeps its V, glued or not
    assert reduce_name("LLaMA v3.1 70B").base == reduce_name("Llama-3.1-70B").base
    assert reduce_name("Mistral-7B-v0.1").versions == ("v0.1",)
    assert reduce_name("DeepSeek-V3").base.endswith("v3")
    assert reduce_name("DeepSeek-V3").base == reduce_name("DeepSeekV3").base


def test_a_length_pair_written_with_a_comma(catalog: Catalog, models: ModelRegistry) -> None:
    # 'Runtime Input/Output Lengths 2048, 2048': the pair after a label naming both lengths
    spec = _read("Q01", catalog, models)
    assert (spec.load.input_tokens, spec.load.output_tokens) == (2048, 2048)


def test_a_version_said_in_words_dates_the_server(catalog: Catalog, models: ModelRegistry) -> None:
    # 'generated using version 0.17' in a TensorRT-LLM source is TensorRT-LLM 0.17, the profile of
    # the releases before 1.0 (TensorRT engines under the C++ executor), not the A100's year's
    assert _read("Q02", catalog, models).serving == "trtllm-2024"


def test_an_infinite_rate_sends_every_request_at_once(catalog: Catalog, models: ModelRegistry) -> None:
    # 'QPS INF, 500 requests' with a TTFT: the 500 requests issued together (mostly queueing), not
    # one request at a time
    spec = _read("Q08", catalog, models)
    assert spec.simulation is not None
    assert (spec.simulation.mode, spec.simulation.workload.num_requests) == ("offline", 500)


def test_a_memory_size_the_catalog_names_the_part_with(catalog: Catalog, models: ModelRegistry) -> None:
    # 'GH200 480GB' is the catalog's own alias of the GH200 (the superchip's memory with Grace's),
    # not a GH200 with 480 GB of HBM
    hardware, _ = read_hardware(catalog, "GH200 480GB")
    assert (hardware.system, hardware.memory_gib) == ("gh200", None)
    assert _read("Q03", catalog, models).hardware == hardware
    # a size the catalog does not name the part with still makes a variant
    assert read_hardware(catalog, "H100 SXM 64GB")[0].memory_gib == 64.0


# MLPerf v5.0 summaries: id -> (catalog system, GPUs, metric key, value in base units)
MLPERF = {
    # '8xMI325X_2xEPYC_9575F': the results directory's system id, parts glued with '_'
    "Q10": ("mi325x-platform", 8, "output_tokens_per_s", 33928.1),
    # 'Mean Time to Output Token (ns)' is the mean TPOT: 159,983,981 ns
    "Q11": ("mi325x-platform", 8, "tpot_s", 0.159983981),
    "Q12": ("dgx-b200", 8, "output_tokens_per_s", 1526.29),
    "Q13": ("dgx-b200", 8, "output_tokens_per_s", 59409.25),
    # 'GH200-GraceHopper-Superchip_GH200-144GB_aarch64x1_TRT': the 144 GB GH200, one of it
    "Q14": ("gh200-nvl32", 1, "output_tokens_per_s", 4686.14),
}


@pytest.mark.parametrize("row_id", sorted(MLPERF))
def test_mlperf_v5_summaries(catalog: Catalog, models: ModelRegistry, row_id: str) -> None:
    assert_mlperf_read(_read(row_id, catalog, models), *MLPERF[row_id])


def test_mlperf_system_ids_glued_with_underscores(catalog: Catalog, models: ModelRegistry) -> None:
    # the GH200 of the GH200-144GB id, not the 96 GB GH200 with 144 GB pasted on
    spec = _read("Q14", catalog, models)
    cluster_accelerator = catalog.system(spec.hardware.system).accelerator.name
    assert (cluster_accelerator, spec.hardware.memory_gib) == ("gh200-144gb", None)


def test_mlperf_time_to_output_token() -> None:
    (reading,) = read_cell("Mean Time to Output Token (ns)", "159983981", kind="infer")
    assert (reading.key, reading.value) == ("tpot_s", pytest.approx(0.159983981))
    (p99,) = read_cell("99.00 percentile time to output token (ns)", "199404544", kind="infer")
    assert p99.key == "tpot_s"


def test_an_mlperf_interactive_benchmark_run_as_server(catalog: Catalog, models: ModelRegistry) -> None:
    # 'llama2-70b-interactive-99' with 'Scenario : Server': MLPerf v5.0's Interactive setting, its
    # limits 450 ms TTFT and 40 ms TPOT (the summary's ttft_latency and tpot_latency), at
    # 'target_qps : 220'; the same benchmark's Server row (Q11) keeps 2 s and 200 ms
    spec = _read("Q13", catalog, models)
    assert spec.simulation is not None
    assert spec.simulation.slo is not None
    assert (spec.simulation.slo.ttft_s, spec.simulation.slo.tpot_s) == (0.45, 0.04)
    assert spec.simulation.target_rate_per_s == 220.0
    server = _read("Q11", catalog, models).simulation
    assert server is not None
    assert server.slo is not None
    assert (server.slo.ttft_s, server.slo.tpot_s, server.target_rate_per_s) == (2.0, 0.2, 104.2)


def test_every_probe_row_is_read() -> None:
    # Q15, the one row this probe refused (ShareGPT prompts, no lengths), reads the dataset's means
    assert set(_rows()) == set(READ_BY_HAND) | set(MLPERF)
