"""The third probe of the free-text reader (R01-R16, issue 27/28), on the conventions of
``test_probe_serving.py``: each row read by hand, the refused ones with their reason; no accuracy
is asserted."""

from __future__ import annotations

import pytest

from lightspeed.catalog import Catalog
from lightspeed.errors import LightspeedError
from lightspeed.sol.validation.readings import read_cell
from lightspeed.workload import ModelRegistry
from probes import DATA, assert_mlperf_read, probe

PROBE = DATA / "probe-serving-3.tsv"
_rows, _read = probe(PROBE.name)


# id: (model, system, GPUs, TP, replicas, precision, ISL, OSL, batching, concurrency, metric key,
# value in base units), each read by hand from the row's cells:
READ_BY_HAND = {
    # NIM's AIPerf tables: '2 x H100 80G' is two H100s, 'fp8 TP2' one TP-2 engine in FP8,
    # '5000 Input Tokens / 500 Output Tokens', 'Concurrency 25' a closed loop of 25 users;
    # 'TTFT (ms)' 688.69 is 0.68869 s; Llama 3.3 70B has Llama 3 70B's architecture
    "R01": ("llama-3.3-70b", "dgx-h100", 2, 2, 1, "fp8", 5000, 500, "continuous", 25, "ttft_s", 0.68869),
    # 'Throughput(Tokens/s)' is output tokens/s (51.67 at concurrency 1 is 1 / 18.58 ms ITL)
    "R02": (
        "llama-3.3-70b",
        "dgx-h100",
        2,
        2,
        1,
        "fp8",
        5000,
        500,
        "continuous",
        50,
        "output_tokens_per_s",
        814.37,
    ),
    "R03": ("llama-3.3-70b", "dgx-h100", 2, 2, 1, "fp8", 5000, 500, "continuous", 100, "ttft_s", 7.99625),
    # 'ITL (ms)' at 'Concurrency 1': one request at a time, the gap between its tokens
    "R04": ("llama-3.3-70b", "dgx-h100", 2, 2, 1, "fp8", 500, 2000, "continuous", 1, "itl_s", 0.01891),
    "R05": ("llama-3.3-70b", "dgx-h100", 2, 2, 1, "fp8", 500, 2000, "continuous", 5, "ttft_s", 0.12653),
    # vLLM's CI latency tests: 'Input length: 32 tokens. Output length: 128 tokens.' and 'Batch
    # size: fixed (8).' (benchmark_latency.py: one static batch of 8); 'Mean latency (ms)' is the
    # whole request, 2077.53 ms; no precision stated: bf16; tp4 from the test name, 4 GPUs
    "R06": ("llama-3-70b", "dgx-h200", 4, 4, 1, "bf16", 32, 128, "static", 8, "request_latency_s", 2.07753),
    "R07": ("llama-3.1-8b", "dgx-h200", 1, 1, 1, "bf16", 32, 128, "static", 8, "request_latency_s", 0.83353),
    "R08": ("mixtral-8x7b", "dgx-a100", 2, 2, 1, "bf16", 32, 128, "static", 8, "request_latency_s", 3.68016),
    # TensorRT-LLM 0.5's H100 row: 'Input Length 128, Output Length -' with a '1st Token Latency
    # (ms)' of 7.1 at 'Batch Size 1': a 128-token prompt's first token (OSL 1)
    "R13": ("gpt-j-6b", "dgx-h100", 1, 1, 1, "fp8", 128, 1, "static", 1, "ttft_s", 0.0071),
    # the A100 row: batch 64, 128/128, 'Throughput (out tok/s)' 3,679
    "R14": ("gpt-j-6b", "dgx-a100", 1, 1, 1, "fp16", 128, 128, "static", 64, "output_tokens_per_s", 3679.0),
}


@pytest.mark.parametrize("row_id", sorted(READ_BY_HAND))
def test_every_probe_row_is_read_as_written(catalog: Catalog, models: ModelRegistry, row_id: str) -> None:
    model, system, gpus, tp, replicas, precision, isl, osl, batching, users, metric, value = READ_BY_HAND[
        row_id
    ]
    spec = _read(row_id, catalog, models)
    assert spec.model_name == model
    assert (spec.hardware.system, spec.num_gpus) == (system, gpus)
    assert (spec.plan.tp, spec.plan.replicas, spec.plan.precision) == (tp, replicas, precision)
    assert (spec.load.input_tokens, spec.load.output_tokens) == (isl, osl)
    assert (spec.batching, spec.load.concurrency) == (batching, users)
    assert spec.load.arrival_rate_per_s is None
    assert (spec.metric, spec.measured) == (metric, pytest.approx(value))


def test_lengths_said_in_two_sentences(catalog: Catalog, models: ModelRegistry) -> None:
    # 'Input length: 32 tokens. Output length: 128 tokens.': a full stop between the halves (it was
    # refused, "gives no ISL/OSL"); a decimal point is still part of a number
    spec = _read("R06", catalog, models)
    assert (spec.load.input_tokens, spec.load.output_tokens) == (32, 128)


def test_a_fixed_batch_in_parentheses(catalog: Catalog, models: ModelRegistry) -> None:
    # 'Batch size: fixed (8).' is a static batch of 8, not one request at a time
    spec = _read("R07", catalog, models)
    assert (spec.batching, spec.load.concurrency) == ("static", 8)


def test_first_token_written_1st() -> None:
    # '1st Token Latency (ms)' is the TTFT, not a whole request's latency
    (reading,) = read_cell("1st Token Latency (ms)", "7.1", kind="infer")
    assert (reading.key, reading.value) == ("ttft_s", pytest.approx(0.0071))
    (whole,) = read_cell("Mean latency (ms)", "2077.53", kind="infer")
    assert whole.key == "request_latency_s"


def test_a_first_token_latency_needs_only_the_prompt(catalog: Catalog, models: ModelRegistry) -> None:
    # 'Input Length 128, Output Length -' with a TTFT: a 128-token prompt and its first token; a
    # request count ('Num prompts 1200', the second probe's Q15) is not a prompt length
    spec = _read("R13", catalog, models)
    assert (spec.load.input_tokens, spec.load.output_tokens) == (128, 1)


def test_a_scope_written_beside_the_number(catalog: Catalog, models: ModelRegistry) -> None:
    # LMSYS's '24k / node': per node of 8 GPUs, 3,000 tokens/s per GPU of a decode pool
    (reading,) = read_cell("Decode Throughput (tokens/sec)", "24k / node", kind="infer")
    assert (reading.scope, reading.per_gpu(8).value) == ("node", pytest.approx(3000.0))
    # a value with no scope beside it keeps the metric's
    (plain,) = read_cell("output tokens/s", "14,451", kind="infer")
    assert (plain.key, plain.scope, plain.value) == ("output_tokens_per_s", "job", 14451.0)


# MLPerf v5.0 summaries (Google's B200 and H200 submissions): id -> (catalog system, GPUs, metric
# key, value in base units)
MLPERF = {
    # '50.00 percentile first token latency (ns)' 203,422,767 ns: the median TTFT at target_qps 840
    "R10": ("dgx-b200", 8, "ttft_s", 0.203422767),
    "R11": ("dgx-b200", 8, "output_tokens_per_s", 122411.02),
    "R12": ("dgx-h200", 8, "output_tokens_per_s", 552.592),
    # the same submissions' other Mixtral summaries (added 4 Dec to test the cited checkpoints)
    "R17": ("dgx-b200", 8, "output_tokens_per_s", 121489.0),
    "R18": ("dgx-h200", 8, "output_tokens_per_s", 61614.5),
    "R19": ("dgx-h200", 8, "output_tokens_per_s", 59100.08),
    "R20": ("dgx-h200", 8, "ttft_s", 0.277217486),
}


@pytest.mark.parametrize("row_id", sorted(MLPERF))
def test_mlperf_v5_google_summaries(catalog: Catalog, models: ModelRegistry, row_id: str) -> None:
    assert_mlperf_read(_read(row_id, catalog, models), *MLPERF[row_id])


@pytest.mark.parametrize(("row_id", "precision", "bits"), [("R17", "nvfp4", 7.25), ("R18", "fp8", 8.75)])
def test_mlperf_mixtral_runs_the_submitted_checkpoint(
    catalog: Catalog, models: ModelRegistry, row_id: str, precision: str, bits: float
) -> None:
    # no precision in the summaries: the v5.0 harness config (closed/Google/configs/mixtral-8x7b)
    # builds 7.25 effective bits on Blackwell, 8.75 on Hopper
    plan = _read(row_id, catalog, models).plan
    assert (plan.precision, plan.effective_bits) == (precision, bits)


def test_mlperf_server_latency_at_its_target(catalog: Catalog, models: ModelRegistry) -> None:
    spec = _read("R10", catalog, models)
    assert spec.simulation is not None
    assert spec.simulation.target_rate_per_s == 840.0


# Rows that cannot be predicted, each for a reason the row gives:
REFUSED = {
    # LMSYS's Kimi K2 row names 'Large-Scale Expert Parallelism' and pools of 4 and 12 nodes but no
    # EP degree: any EP the reader picked would predict another deployment (read as TP 8 x 16
    # replicas in the released FP8 it was predicted at -84%)
    "R09": "names expert parallelism .* but no EP degree",
    # vLLM's wide-EP post: no GPU count, no lengths
    "R15": "GPUs is not reported",
    # Vultr's Nemotron Super 49B: a Llama-Nemotron NAS model the registry names and refuses (its
    # blocks differ; Llama 3.3 70B's shapes would overstate it)
    "R16": "per-block NAS architecture",
}


@pytest.mark.parametrize("row_id", sorted(REFUSED))
def test_the_refusals_say_why(catalog: Catalog, models: ModelRegistry, row_id: str) -> None:
    with pytest.raises(LightspeedError, match=REFUSED[row_id]):
        _read(row_id, catalog, models)


def test_every_probe_row_is_either_read_or_refused() -> None:
    assert set(_rows()) == set(READ_BY_HAND) | set(MLPERF) | set(REFUSED)
