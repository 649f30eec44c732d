"""The thirty-first session's probe tables (``tests/data/validation/probe-training.tsv``,
``probe-serving-5.tsv``) and Megatron-Bridge's published summary
(``benchmarks/data/megatron-bridge-perf-summary.tsv``), on the conventions of
``test_probe_serving.py``: rows read by hand from their cells, every refusal with its reason. No
accuracy is asserted: these rows probe the reader, they fit nothing (their errors are in
``docs/benchmarks.md``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lightspeed.catalog import Catalog
from lightspeed.sol import inference_predictor, validate_published
from lightspeed.sol.validation.validate import ValidationReport, ValidationRow
from lightspeed.workload import ModelRegistry
from probes import DATA, assert_refused_exactly, probe

BENCHMARK_DATA = Path(__file__).resolve().parents[3] / "benchmarks" / "data"
_serving_rows, _read_serving = probe("probe-serving-5.tsv")


def _report(path: Path, catalog: Catalog, models: ModelRegistry) -> ValidationReport:
    return validate_published(path=path, catalog=catalog, models=models, infer=inference_predictor())


@pytest.fixture(scope="module")
def training_probe(catalog: Catalog, models: ModelRegistry) -> dict[str, ValidationRow]:
    return {row.id: row for row in _report(DATA / "probe-training.tsv", catalog, models).rows}


# id: (GPUs, (TP, PP, CP) or None where the row leaves them to the search, metric key), read by
# hand from the row's cells
TRAINING_BY_HAND: dict[str, tuple[int, tuple[int, int, int] | None, str]] = {
    # NeMo 24.07: LLAMA3-70B on 64 H100, TP 4 PP 4 CP 2 (DP 2), 'Tokens / sec / GPU' first
    "U06": (64, (4, 4, 2), "tokens_per_s_per_gpu"),
    # torchtitan's async-TP table: 256 H100, TP 8 with FSDP over 32; 'Vanilla TP tokens/sec' is a
    # per-GPU rate (over the job it would be 0.1% of the GPUs' peak)
    "U14": (256, (8, 1, 1), "tokens_per_s_per_gpu"),
    # the PyTorch FSDP blog: Llama 2 70B on 128 A100, no TP/PP and no global batch given, a
    # micro-batch of 2: the split is searched, the batch one micro-batch per DP rank
    "U17": (128, None, "tokens_per_s_per_gpu"),
    # JAX-Toolbox's MaxText table: TP 1, DP 1 x FSDP 8 on 8 H100 is data parallelism over all 8
    "U22": (8, (1, 1, 1), "step_time_s"),
    # FlagPerf: Llama 2 70B on 32 H800, TP 4 PP 8 DP 1; 'token/p/s' (per processor) comes first
    "U23": (32, (4, 8, 1), "tokens_per_s_per_gpu"),
    # NeMo's long-sequence table: Llama 2 7B at 128K on 128 H100, TP 4 CP 4, no batch of any kind:
    # its TFLOPS/GPU without pipeline parallelism
    "U08": (128, (4, 1, 4), "tflop_per_s_per_gpu"),
    # 'Paxml GPT175B' gives no heads: 96 layers of 12,288 with MHA make 175.2B, the row's 175B
    "U13": (128, None, "step_time_s"),
}
TRAINING_REFUSED: dict[str, str] = {}


@pytest.mark.parametrize("row_id", sorted(TRAINING_BY_HAND))
def test_the_training_probe_is_read_as_written(training_probe: dict[str, ValidationRow], row_id: str) -> None:
    gpus, degrees, metric = TRAINING_BY_HAND[row_id]
    row = training_probe[row_id]
    assert row.status == "ok", row.reason
    assert row.plan is not None
    plan = row.plan
    assert plan["tp"] * plan["pp"] * plan["cp"] * plan["dp"] == gpus
    if degrees is not None:
        assert (plan["tp"], plan["pp"], plan["cp"]) == degrees
    assert row.metric == metric


def test_the_training_probe_refusals_say_why(training_probe: dict[str, ValidationRow]) -> None:
    assert_refused_exactly(training_probe, TRAINING_REFUSED)


# id: (model, GPUs, ISL, OSL, users in flight, metric key), read by hand from the row's cells
SERVING_BY_HAND = {
    # vLLM's FP8 KV-cache blog: '~20k input tokens / ~2k output tokens', 'concurrency 8' on one H100
    "V06": ("llama-3.1-8b", 1, 20480, 2048, 8, "ttft_s"),
    "V07": ("gpt-oss-20b", 1, 20480, 2048, 8, "ttft_s"),
    # Vultr's cookbook: Nemotron 3 Nano (a hybrid, served since 6 Dec) on 2 B200, 'input=2048,
    # output=512 tokens', 'Concurrent 8 (400 prompts)' and 'Concurrent 64'
    "V20": ("nemotron-3-nano-30b-a3b", 2, 2048, 512, 8, "output_tokens_per_s"),
    "V21": ("nemotron-3-nano-30b-a3b", 2, 2048, 512, 64, "output_tokens_per_s"),
}
SERVING_REFUSED = {
    "V09": "no ISL/OSL",  # Nemotron 3 Super NVFP4 (in the catalog since 6 Dec): no lengths given
    "V10": "no ISL/OSL",  # DeepSeek-V3.2 (refused for its sparse attention until 6 Dec)
    "V12": "names no accelerator",  # a CPU-only run on Xeon 6980P
    "V17": "no ISL/OSL",  # DGX Spark's GB10 (in the catalog since 6 Dec): the row gives no lengths
    "V08": "both a decode pool and a prefill pool",
    "V22": "no ISL/OSL",
}


@pytest.mark.parametrize("row_id", sorted(SERVING_BY_HAND))
def test_the_serving_probe_is_read_as_written(catalog: Catalog, models: ModelRegistry, row_id: str) -> None:
    model, gpus, isl, osl, users, metric = SERVING_BY_HAND[row_id]
    spec = _read_serving(row_id, catalog, models)
    assert (spec.model_name, spec.num_gpus) == (model, gpus)
    assert (spec.load.input_tokens, spec.load.output_tokens, spec.load.concurrency) == (isl, osl, users)
    assert spec.metric == metric


def test_the_serving_probe_refusals_say_why(catalog: Catalog, models: ModelRegistry) -> None:
    report = _report(DATA / "probe-serving-5.tsv", catalog, models)
    reasons = {row.id: row.reason for row in report.rows}
    for row_id, words in SERVING_REFUSED.items():
        assert words in reasons[row_id], (row_id, reasons[row_id])
    assert set(reasons) == set(_serving_rows())


def test_megatron_bridges_summary_is_read_but_for_models_lightspeed_lacks(
    catalog: Catalog, models: ModelRegistry
) -> None:
    report = _report(BENCHMARK_DATA / "megatron-bridge-perf-summary.tsv", catalog, models)
    refused = [row for row in report.rows if row.status != "ok"]
    # the refusals are Nemotron 3 Ultra and DeepSeek V4, whose shapes no cited source gives, and the
    # two GPT-OSS 120B rows of the 26.06.01 container, whose footnote calls them a known regression;
    # the hybrid Mamba-2 Nemotron 3 Nano, Lightning and Super, DeepSeekV3, LLAMA3.1_405B on PP 16 x
    # VP 8 and the rest are predicted
    regressions = {row.id for row in refused if "known regression" in row.reason}
    assert regressions == {"MB021", "MB022"}
    others = {row.id: row.reason for row in refused if row.id not in regressions}
    assert all("Nemotron_3_Ultra" in reason or "DeepSeekV4" in reason for reason in others.values()), others
    assert len(report.rows) == 245
    assert len(report.rows) - len(refused) == 239


@pytest.fixture(scope="module")
def second_training_probe(catalog: Catalog, models: ModelRegistry) -> dict[str, ValidationRow]:
    return {row.id: row for row in _report(DATA / "probe-training-2.tsv", catalog, models).rows}


# id: (GPUs, (TP, PP, DP), micro-batch, metric key), read by hand from the row's cells
SECOND_TRAINING_BY_HAND = {
    # Fast-LLM: Llama 3.1 8B on 32 H100, DP 32; '8192 tokens' per micro-batch of 4,096-token
    # sequences ('micro-batch size 2' in its footnote)
    "W04": (32, (1, 1, 32), 2, "tokens_per_s_per_gpu"),
    # Fast-LLM's Mistral-7B: '8k tokens' per micro-batch, 'tokens/s/H100' a per-GPU rate
    "W05": (32, (1, 1, 32), 2, "tokens_per_s_per_gpu"),
    # MaxText on one v5e-256: 'DP 1 slice' and 'ici_fsdp_parallelism=-1' shard the batch over all 256
    "W07": (256, (1, 1, 256), 4, "tflop_per_s_per_gpu"),
    # NeMo Automodel: 'Qwen3 MoE 30B' on 8 H100 with EP 8, 'Time per Global Step (s)' first
    "W17": (8, (1, 1, 8), 4, "step_time_s"),
    # Fast-LLM's SmolLM2-135M (the catalog's record): 8 A100 in data parallelism, micro-batch 60
    "W06": (8, (1, 1, 8), 60, "tokens_per_s_per_gpu"),
}
SECOND_TRAINING_REFUSED = {
    "W13": "names no accelerator",  # Ascend Atlas 800T A2
    "W14": "names no accelerator",
}


@pytest.mark.parametrize("row_id", sorted(SECOND_TRAINING_BY_HAND))
def test_the_second_training_probe_is_read_as_written(
    second_training_probe: dict[str, ValidationRow], row_id: str
) -> None:
    gpus, (tp, pp, dp), micro, metric = SECOND_TRAINING_BY_HAND[row_id]
    row = second_training_probe[row_id]
    assert row.status == "ok", row.reason
    assert row.plan is not None
    assert (row.plan["tp"], row.plan["pp"], row.plan["dp"], row.plan["micro_batch"]) == (tp, pp, dp, micro)
    assert row.plan["tp"] * row.plan["pp"] * row.plan["dp"] * row.plan["cp"] == gpus
    assert row.metric == metric


def test_the_second_training_probe_refusals_say_why(second_training_probe: dict[str, ValidationRow]) -> None:
    assert_refused_exactly(second_training_probe, SECOND_TRAINING_REFUSED)


def test_the_sixth_serving_probe(catalog: Catalog, models: ModelRegistry) -> None:
    rows = {row.id: row for row in _report(DATA / "probe-serving-6.tsv", catalog, models).rows}
    # an SGLang sweep on 8 B200: 'Latency tok/s (c=1)' 145 is one request's speed
    assert (rows["X18"].metric, rows["X18"].measured) == ("output_tokens_per_s_per_user", 145.0)
    # GPUStack: Qwen3-8B on one H100, ShareGPT at 'max concurrency 4', output tokens/s first
    assert (rows["X12"].metric, rows["X12"].measured) == ("output_tokens_per_s", pytest.approx(496.88))
    # vLLM's GB300 post: DeepSeek-V3.2 prefill-only, 'prefill throughput TGS (tokens / GPU / second)'
    assert (rows["X04"].metric, rows["X04"].measured) == ("input_tokens_per_s_per_gpu", 7360.0)
    # AMD's GLM-5.2 on MI355X: 'total tok/s per GPU' counts prompt and generated tokens
    assert (rows["X10"].metric, rows["X10"].measured) == ("total_tokens_per_s_per_gpu", 2386.0)
    refusals = {
        "X16": "longest replies",  # ShareGPT, 1,000 prompts with no concurrency cap
        "X17": "longest replies",
        "X01": "names no accelerator",  # Intel Arc Pro B60
        "X06": "no ISL/OSL",
    }
    for row_id, words in refusals.items():
        assert words in rows[row_id].reason, (row_id, rows[row_id].reason)
    # SGLang's Nemotron 3 Nano (a hybrid, served since 6 Dec) at concurrency 1: 'Latency tok/s (c=1)'
    assert rows["X19"].status == "ok", rows["X19"].reason
    assert (rows["X19"].metric, rows["X19"].measured) == ("output_tokens_per_s_per_user", 223.0)


def test_the_third_round_of_probes(catalog: Catalog, models: ModelRegistry) -> None:
    training = {row.id: row for row in _report(DATA / "probe-training-3.tsv", catalog, models).rows}
    # Megatron-LM 2019: 'sustained PetaFLOPs across the entire application' on 512 V100 with TP 8
    assert training["Y14"].metric == "tflop_per_s_per_gpu"  # aggregate PF/s made per GPU
    assert training["Y14"].plan is not None
    assert training["Y14"].plan["tp"] == 8
    # BloombergGPT: 4 copies of a ZeRO-3 group over 128 GPUs is DP 512
    assert training["Y13"].plan is not None
    assert training["Y13"].plan["dp"] == 512
    for row_id, words in {
        "Y08": "GPUs is not reported",  # the Llama 2 model card's GPU hours name no cluster
        "Y10": "names no accelerator",  # MegaScale says only 'NVIDIA Ampere GPUs'
    }.items():
        assert words in training[row_id].reason, (row_id, training[row_id].reason)
    # GLM-130B (the catalog's record): TP 4 x PP 8 on 768 A100, 'yes (re-materialization)' is full
    # recomputation, so its HFU counts the recompute pass (the paper's 43.3% HFU against 32.5% MFU)
    glm = training["Y17"]
    assert glm.status == "ok", glm.reason
    assert glm.plan is not None
    assert (glm.plan["tp"], glm.plan["pp"], glm.plan["dp"], glm.plan["recompute"]) == (4, 8, 24, "full")
    assert glm.metric == "hfu"
    serving = {row.id: row for row in _report(DATA / "probe-serving-7.tsv", catalog, models).rows}
    # LMDeploy 0.1 (2023) names no server lightspeed knows: 2023's TensorRT-LLM profile, not 2025's
    assert serving["Z04"].stack == "trtllm-2023"
    # a community benchmark on one RTX 4090 (the catalog's GeForce record): Yi-6B's TPOT at 4 users
    assert serving["Z17"].status == "ok", serving["Z17"].reason
    assert "names no accelerator" in serving["Z12"].reason  # AWS Inferentia2
