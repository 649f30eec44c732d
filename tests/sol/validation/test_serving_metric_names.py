"""Serving metrics named the way benchmark tools print them (issue 27 and 28: a row whose metric
is read as another quantity is predicted against the wrong figure without a word).

The names are the labels of vLLM's and SGLang's ``bench_serving``, NVIDIA's genai-perf and
trtllm-bench, Ray's LLMPerf (snake case with the unit as a suffix) and vLLM's engine log; what
each one counts is the tool's definition, written beside it."""

from __future__ import annotations

from pathlib import Path

import pytest

from lightspeed.catalog import Catalog
from lightspeed.sol import inference_predictor, validate_published
from lightspeed.sol.validation.infer_load import latency_percentile
from lightspeed.sol.validation.readings import read_cell
from lightspeed.workload import ModelRegistry


@pytest.mark.parametrize(
    ("metric", "measured", "key", "value"),
    [
        # genai-perf: the gap between two streamed tokens is the "Inter Token Latency" (it was read as
        # a request's whole latency, 425x off); its throughputs say "(per sec)" (refused)
        ("Inter Token Latency (ms) avg", "18", "itl_s", 0.018),
        ("Output Token Throughput (per sec)", "3500", "output_tokens_per_s", 3500.0),
        ("Request Throughput (per sec)", "3.5", "requests_per_s", 3.5),
        # vLLM bench_serving: E2EL is the end-to-end latency (refused); ITL percentiles are ITL's
        ("Mean E2EL (ms)", "19000", "request_latency_s", 19.0),
        ("P99 ITL (ms)", "40", "itl_s", 0.040),
        ("Total Token throughput (tok/s)", "7,000", "total_tokens_per_s", 7000.0),
        # SGLang bench_serving: the input side of the token rate (it was read as input + output)
        ("Input token throughput (tok/s)", "20000", "input_tokens_per_s", 20000.0),
        # prompt tokens per second, however named (these were read as output tokens/s)
        ("prefill throughput (tok/s)", "20000", "input_tokens_per_s", 20000.0),
        ("prompt throughput (tokens/s)", "20000", "input_tokens_per_s", 20000.0),
        # ... but an input length beside an output rate is no input rate (nor was it the total)
        ("tokens/s at 1000 input tokens", "3500", "output_tokens_per_s", 3500.0),
        ("tok/s, 1k input tokens", "3500", "output_tokens_per_s", 3500.0),
        # both sides written out are the total (they were read as output tokens/s)
        ("input+output tokens/s", "23500", "total_tokens_per_s", 23500.0),
        ("(input + output) tok/s", "23500", "total_tokens_per_s", 23500.0),
        # vLLM's engine log puts the unit beside the number ("Avg generation throughput: ...")
        ("generation throughput", "3,500 tokens/s", "output_tokens_per_s", 3500.0),
        ("Avg prompt throughput", "20,000 tokens/s", "input_tokens_per_s", 20000.0),
        # LLMPerf: snake case, the unit a suffix (_s is seconds: these were read in ms, and ITL as E2E)
        ("inter_token_latency_s", "0.018", "itl_s", 0.018),
        ("end_to_end_latency_s", "19", "request_latency_s", 19.0),
        ("request_output_throughput_token_per_s", "55", "output_tokens_per_s_per_user", 55.0),
        ("mean_output_throughput_token_per_s", "3500", "output_tokens_per_s", 3500.0),
        # papers: time between tokens (Sarathi-Serve's TBT), per-token latency (a request's TPOT)
        ("TBT (ms)", "18", "itl_s", 0.018),
        ("time between tokens (ms)", "18", "itl_s", 0.018),
        ("token-to-token latency (ms)", "18", "itl_s", 0.018),
        ("per-token latency (ms)", "18", "tpot_s", 0.018),
        ("latency per token (ms)", "18", "tpot_s", 0.018),
        # trtllm-bench
        ("Average time-per-output-token [TPOT] (ms)", "18", "tpot_s", 0.018),
        ("Per User Output Speed (tps/user)", "55", "output_tokens_per_s_per_user", 55.0),
        # k6: a request's duration is its latency (a benchmark's duration is refused, below)
        ("http_req_duration avg (ms)", "19000", "request_latency_s", 19.0),
    ],
)
def test_metric_names_of_serving_benchmarks(metric: str, measured: str, key: str, value: float) -> None:
    reading = read_cell(metric, measured, kind="infer")[0]
    assert (reading.key, reading.value) == (key, pytest.approx(value))


@pytest.mark.parametrize(
    ("metric", "reason"),
    [
        # each was read as a request rate, a token rate or a request latency before
        ("Goodput (req/s)", "SLO"),
        ("Peak output token throughput (tok/s)", "peak over a short window"),
        ("Total Latency (ms)", "whole benchmark"),  # trtllm-bench: the run's duration
        ("Benchmark duration (s)", "whole benchmark"),
        ("Time To Second Token (ms)", "second token"),
    ],
)
def test_figures_no_steady_state_predicts_are_refused_with_the_reason(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry, metric: str, reason: str
) -> None:
    path = _table(tmp_path, _row("N1", metric, "3.2"))
    (row,) = validate_published(path=path, catalog=catalog, models=models, infer=inference_predictor()).rows
    assert row.predicted is None
    assert reason in row.reason


@pytest.mark.parametrize(
    ("metric", "percentile"),
    [("P99 ITL (ms)", 99.0), ("Max ITL (ms)", 100.0), ("ITL max", 100.0), ("Median E2EL", 50.0)],
)
def test_latency_percentiles_as_tools_name_them(metric: str, percentile: float) -> None:
    assert latency_percentile(metric) == percentile
    assert latency_percentile("Mean ITL (ms)") is None
    assert latency_percentile("max throughput, mean TTFT (ms)") is None


def test_inter_token_percentiles_are_over_gaps_not_requests(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    # vLLM V0 runs each prompt in a step of its own that pauses every stream: at 8 users the
    # longest gap between two tokens is at least one such step, far above the mean gap, while a
    # request's TPOT spreads its pauses over all its tokens. With one output length for every
    # request, the mean gap and the mean TPOT are the same number (each request has as many gaps).
    lines = [
        _row("G1", "Mean ITL (ms)", "20"),
        _row("G2", "Mean TPOT (ms)", "20"),
        _row("G3", "Max ITL (ms)", "20"),
        _row("G4", "P99 TPOT (ms)", "20"),
    ]
    rows = {
        row.id: row
        for row in validate_published(
            path=_table(tmp_path, *lines), catalog=catalog, models=models, infer=inference_predictor()
        ).rows
    }
    predicted = [rows[name].predicted for name in ("G1", "G2", "G3", "G4")]
    assert None not in predicted
    mean_itl, mean_tpot, max_itl, p99_tpot = (float(value or 0.0) for value in predicted)
    assert mean_itl == pytest.approx(mean_tpot, rel=1e-9)
    assert max_itl > 2.0 * mean_itl
    assert max_itl > p99_tpot


HEADER = (
    "id\tkind\tsource\tmodel\tGPUs\thardware\tprecision\tTP\tPP\tseq\tglobal_batch\tmicro_batch"
    "\tsharding\trecompute\tmetric\tmeasured"
)


def _row(row_id: str, metric: str, measured: str) -> str:
    return (
        f"{row_id}\tinfer\tvLLM 0.5 benchmark_serving\tLlama 3 8B\t1\tH100\tBF16\t1\t1"
        f"\tISL/OSL 2000/100\tconcurrency 8\t\t\t\t{metric}\t{measured}"
    )


def _table(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "rows.tsv"
    path.write_text("\n".join((HEADER, *lines)) + "\n")
    return path
