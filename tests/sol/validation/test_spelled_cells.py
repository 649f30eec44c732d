"""Cells written the way frameworks and papers write them are read as they mean (issue 28,
reading and coverage): ``torchao Float8`` is FP8 (it was read as no format, so BF16, and
predicted 24% slow), ``TPS per GPU`` is a token rate (it was refused), ``8K`` tokens of
context are 8,192 (they were 8,000), ``1024 nodes x 8`` is 8,192 GPUs (it was 1,024, and the
row refused)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lightspeed.catalog import Catalog, load_catalog
from lightspeed.cli.options import DRAFT_TOKENS
from lightspeed.errors import LightspeedError
from lightspeed.sol.infer.plan import MAX_DRAFT_TOKENS
from lightspeed.sol.validation.hardware_text import gpu_count, read_hardware, row_gpus
from lightspeed.sol.validation.infer_predict import InferenceRowSetup, inference_row_setup
from lightspeed.sol.validation.published import (
    PublishedRow,
    RowError,
    degree_cell,
    format_keys,
    read_table,
    size_cell,
)
from lightspeed.sol.validation.rows import read_training_row
from lightspeed.sol.validation.train_settings import zero_stage_of
from lightspeed.workload import ModelRegistry

TRAIN_HEADER = (
    "id\tkind\tsource\tmodel\tsharding\tseq\tglobal_batch\tTP\tPP\tDP\tGPUs\thardware\tprecision"
    "\tmetric\tmeasured"
)
INFER_HEADER = "id\tkind\tsource\tmodel\tseq\tglobal_batch\tTP\tGPUs\thardware\tprecision\tmetric\tmeasured"


@pytest.mark.parametrize(
    ("text", "expected"),
    [("8K", 8192), ("128k context", 131072), ("1.5k", 1536), ("2M", 2**21), ("1,000", 1000), ("4096", 4096)],
)
def test_a_size_takes_k_as_1024(text: str, expected: int) -> None:
    assert size_cell(text) == expected


def test_a_missing_size_is_the_default() -> None:
    assert size_cell("n/r", 4096) == 4096


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1024 nodes x 8", 8192),
        ("2 nodes (8 GPUs each)", 16),
        ("128 hosts, 8 GPUs", 1024),
        ("64x8", 512),
        ("16K H100s", 16384),  # Llama 3's "16K H100 GPUs" are 16,384
        ("8,192", 8192),
        ("16 (2 nodes)", 16),
    ],
)
def test_a_gpus_cell_counts_nodes_times_gpus(text: str, expected: int) -> None:
    assert gpu_count(text)[0] == expected


@pytest.mark.parametrize(
    ("cell", "key"),
    [
        ("torch.float8_e4m3fn", "fp8"),
        ("Float8 (torchao, rowwise)", "fp8"),
        ("E4M3", "fp8"),
        ("torch.bfloat16", "bf16"),
        ("half", "fp16"),
        ("half precision", "fp16"),
        ("float32", "fp32"),
    ],
)
def test_spelled_formats_become_keys(cell: str, key: str) -> None:
    assert key in format_keys(cell)


def test_a_word_that_only_contains_half_names_no_format() -> None:
    assert "fp16" not in format_keys("FP8 for half the layers, BF16 for the rest").replace("fp8", "")


@pytest.mark.parametrize(
    ("precision", "expected"),
    [
        ("torch.float8_e4m3fn", "fp8"),
        ("Float8", "fp8"),
        ("E4M3", "fp8"),
        ("bfloat16", "bf16"),
        ("half", "fp16"),
    ],
)
def test_an_inference_row_reads_spelled_precisions(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry, precision: str, expected: str
) -> None:
    path = tmp_path / "rows.tsv"
    row = (
        f"R1\tinfer\tTensorRT-LLM 2025\tLlama 3.1 8B\tISL/OSL 1000/1000\tconcurrency 64\t1\t1\tH100 SXM\t"
        f"{precision}\toutput tokens/s\t5,000"
    )
    path.write_text(f"{INFER_HEADER}\n{row}\n", encoding="utf-8")
    setup = inference_row_setup(read_table(path)[0], catalog, models)[0]
    assert setup.plan.precision == expected


def _train(
    run_cli: Any,
    tmp_path: Path,
    *rows: str,
    lead: str = "torchtitan 2024\tLlama 3.1 8B\tFSDP2 full shard",
    columns: tuple[str, ...] = (),
) -> list[dict[str, Any]]:
    """Validate training rows (by default Llama 3.1 8B under torchtitan's FSDP2; ``lead``: the
    source, model and sharding cells; ``columns``: more header cells the rows end with): the JSON
    rows, each asserted predicted."""
    path = tmp_path / "rows.tsv"
    lines = [f"T{index}\ttrain\t{lead}\t{cells}" for index, cells in enumerate(rows)]
    path.write_text("\n".join(("\t".join((TRAIN_HEADER, *columns)), *lines)) + "\n", encoding="utf-8")
    result = run_cli("validate", str(path), "--json")
    assert result.code == 0, result.err
    out: list[dict[str, Any]] = json.loads(result.out)["rows"]
    return out


def _tokens_per_step(row: dict[str, Any]) -> float:
    plan = row["plan"]
    return float(plan["tokens_per_s"] * plan["step_time_s"])


def test_torchao_float8_trains_in_fp8(run_cli: Any, tmp_path: Path) -> None:
    common = "8192\t16\t1\t1\t8\t8\tH100 SXM"
    fp8, bf16 = _train(
        run_cli,
        tmp_path,
        f"{common}\ttorchao Float8 (tensorwise)\tTPS per GPU\t7,000",
        f"{common}\tbfloat16\tTPS per GPU\t6,000",
    )
    assert fp8["status"] == bf16["status"] == "ok"
    assert "precision 'torchao Float8 (tensorwise)' -> fp8" in fp8["assumptions"]
    assert "precision 'bfloat16' -> bf16" in bf16["assumptions"]
    # FP8 GEMMs run at twice the BF16 peak: the same plan steps faster
    assert fp8["plan"]["step_time_s"] < bf16["plan"]["step_time_s"]


def test_tps_per_gpu_is_a_token_rate(run_cli: Any, tmp_path: Path) -> None:
    (row,) = _train(run_cli, tmp_path, "8192\t16\t1\t1\t8\t8\tH100 SXM\tbf16\tTPS per GPU\t6,000")
    assert row["status"] == "ok", row["reason"]
    assert row["metric"] == "tokens_per_s_per_gpu"


def test_torchtitans_logged_tps_is_per_device(run_cli: Any, tmp_path: Path) -> None:
    # torchtitan's metric log: tps = tokens / (time x the non-data-parallel size), per device; a
    # bare 'tps' from a source that names no such log stays the job's rate where that rate is
    # plausible for the job (40,000 tokens/s of an 8B model on 8 H100: 6 x 8e9 x 40,000 / (8 x
    # 989e12) = 24% of their peak; 6,000 would be 3.6%, and is read per GPU: 29%)
    cells = "8192\t16\t1\t1\t8\t8\tH100 SXM\tbf16\ttps\t{tps}"
    (torchtitan,) = _train(run_cli, tmp_path, cells.format(tps="6,000"))
    assert torchtitan["metric"] == "tokens_per_s_per_gpu"
    megatron_lead = "Megatron-LM 2024\tLlama 3.1 8B\tZeRO-1"
    (megatron,) = _train(run_cli, tmp_path, cells.format(tps="40,000"), lead=megatron_lead)
    assert megatron["metric"] == "tokens_per_s"
    (implausible,) = _train(run_cli, tmp_path, cells.format(tps="6,000"), lead=megatron_lead)
    assert implausible["metric"] == "tokens_per_s_per_gpu"


def test_8k_of_context_and_a_2k_batch_are_powers_of_two(run_cli: Any, tmp_path: Path) -> None:
    (row,) = _train(run_cli, tmp_path, "8K\t2K\t1\t1\t\t2048\tH100 SXM\tbf16\tTFLOP/s per GPU\t400")
    assert row["status"] == "ok", row["reason"]
    # one step is the global batch of sequences: 2,048 x 8,192 tokens
    assert _tokens_per_step(row) == pytest.approx(2048 * 8192, rel=1e-9)


def test_nodes_times_gpus_count_every_gpu(run_cli: Any, tmp_path: Path) -> None:
    cells = "8192\t1024\t1\t1\t128\t16 nodes x 8\tH100 SXM\tbf16\tTFLOP/s per GPU\t400"
    (row,) = _train(run_cli, tmp_path, cells)
    assert row["status"] == "ok", row["reason"]
    plan = row["plan"]
    assert plan["tp"] * plan["pp"] * plan["cp"] * plan["dp"] == 128
    assert "GPUs: '16 nodes x 8' read as 16 x 8" in row["assumptions"]


@pytest.mark.parametrize(
    ("load", "expected"),
    [
        ("64 in flight", 64),
        ("64 requests in-flight", 64),
        ("64 parallel requests", 64),
        ("conc. 64", 64),
        ("concurrency=64", 64),
        # load testers and harnesses (Locust and k6 virtual users, lm-eval's num_concurrent); each
        # was read as one request at a time
        ("64 virtual users", 64),
        ("users=64", 64),
        ("num_concurrent=64", 64),
        ("concurrent_requests=64", 64),
    ],
)
def test_a_concurrency_is_read_however_it_is_worded(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry, load: str, expected: int
) -> None:
    setup = _infer_setup(tmp_path, catalog, models, load)
    assert setup.load.concurrency == expected
    assert setup.load.arrival_rate_per_s is None


@pytest.mark.parametrize(
    "load",
    [
        "4 req/s (Poisson)",
        "4 requests per second",
        "request rate 4",
        # each of these was read as one request at a time
        "request_rate=4",
        "4 QPS",
        "rate: 4 RPS",
    ],
)
def test_a_request_rate_in_the_load_cell_is_an_open_loop(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry, load: str
) -> None:
    setup = _infer_setup(tmp_path, catalog, models, load)
    assert setup.load.arrival_rate_per_s == 4.0
    assert setup.load.concurrency is None


@pytest.mark.parametrize("load", ["request_rate=inf", "--request_rate -1.0 (gptManagerBenchmark: no delay)"])
def test_an_infinite_rate_sends_every_request_at_once(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry, load: str
) -> None:
    setup = _infer_setup(tmp_path, catalog, models, load)
    assert (setup.load.concurrency, setup.load.arrival_rate_per_s) == (None, None)  # the KV limit
    assert any("infinite request rate" in note for note in setup.assumptions)


@pytest.mark.parametrize(
    "load",
    [
        "Num Prompts 1500, Max Num Seqs 1500 (offline, infinite rate)",  # AMD's MI300X tables
        "num_requests 256, offline (vLLM benchmarks/benchmark_throughput.py)",  # LLM.generate at once
        "offline, requests fed at an infinite request rate, 800 requests",
    ],
)
def test_an_offline_run_of_stated_requests_sent_at_once_is_simulated_whole(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry, load: str
) -> None:
    """An offline run that sends a stated number of requests at once (in words, or vLLM's offline
    benchmark, which hands every prompt to the engine together) is that run, ramp-up and drain
    included, not the steady state at the KV limit."""
    setup = _infer_setup(tmp_path, catalog, models, load, metric="Throughput (tokens/s)", measured="5000")
    assert setup.simulation is not None
    assert setup.simulation.mode == "offline"
    assert setup.simulation.finite
    assert setup.simulation.workload.num_requests in {1500, 256, 800}
    assert "requests sent at once" in setup.simulation.note


def test_a_load_no_rule_reads_is_refused_not_taken_for_one_request(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    with pytest.raises(RowError, match="is not one lightspeed reads"):
        _infer_setup(tmp_path, catalog, models, "swarm of users")
    # a count is read whole: 1e400 users is no 1 user
    with pytest.raises(RowError, match="is not one lightspeed reads"):
        _infer_setup(tmp_path, catalog, models, "num_concurrent=1e400")
    # a load the row states as one request is one request, and says so
    single = _infer_setup(tmp_path, catalog, models, "single concurrent request")
    assert single.load.concurrency == 1
    assert any("as the row says" in note for note in single.assumptions)


def test_a_measured_request_rate_is_not_the_load(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    # the figure '12 req/s' is what the run reached, not the rate it was sent at
    setup = _infer_setup(
        tmp_path, catalog, models, "concurrency 64", metric="request throughput (req/s)", measured="12 req/s"
    )
    assert setup.load.concurrency == 64
    assert setup.load.arrival_rate_per_s is None


def _infer_setup(
    tmp_path: Path,
    catalog: Catalog,
    models: ModelRegistry,
    load: str,
    *,
    metric: str = "mean TTFT (ms)",
    measured: str = "250",
) -> InferenceRowSetup:
    path = tmp_path / "rows.tsv"
    cells = f"ISL/OSL 1000/1000\t{load}\t1\t1\tH100 SXM\tbf16\t{metric}\t{measured}"
    row = f"R1\tinfer\tvLLM 2025\tLlama 3.1 8B\t{cells}"
    path.write_text(f"{INFER_HEADER}\n{row}\n", encoding="utf-8")
    return inference_row_setup(read_table(path)[0], catalog, models)[0]


@pytest.mark.parametrize(
    "seq",
    [
        "--input-len 1024 --output-len 128",  # vLLM's benchmark flags
        "random_input_len=1024, random_output_len=128",
        "input_len=1024, output_len=128",
        "prompt 1024, max_tokens 128",  # the OpenAI API's cap on the output
        "context 1024, generate 128",
        "random 1024/128",  # the dataset's name, then the pair
        "1024:128",
    ],
)
def test_lengths_are_read_as_benchmarks_write_them(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry, seq: str
) -> None:
    path = tmp_path / "rows.tsv"
    cells = f"{seq}\tconcurrency 8\t1\t1\tH100 SXM\tbf16\toutput tokens/s\t1,000"
    path.write_text(f"{INFER_HEADER}\nR1\tinfer\tvLLM 2025\tLlama 3.1 8B\t{cells}\n", encoding="utf-8")
    setup = inference_row_setup(read_table(path)[0], catalog, models)[0]
    assert (setup.load.input_tokens, setup.load.output_tokens) == (1024, 128)


@pytest.mark.parametrize(
    ("sharding", "stage"),
    [
        ("ZeRO stage 3", 3),
        ("DeepSpeed ZeRO (stage 2)", 2),
        ("fully_shard", 3),  # FSDP2's API
        ("HSDP", 3),  # full sharding within each replica group
        ("FSDP (SHARD_GRAD_OP)", 2),  # parameters stay gathered: ZeRO-2, not 3
        ("FSDP2 (reshard_after_forward=False)", 2),
        ("DDP", 0),
        ("no sharding", 0),
        ("FSDP (NO_SHARD)", 0),  # FSDP's strategy that shards nothing (it was read as unreported: 1)
    ],
)
def test_sharding_cells_as_frameworks_name_them(sharding: str, stage: int) -> None:
    assert zero_stage_of(sharding)[0] == stage


@pytest.mark.parametrize(
    ("recompute", "policy"),
    [
        ("activation checkpointing", "full"),  # checkpointing said with no policy: whole blocks
        ("gradient checkpointing", "full"),  # Hugging Face's name for it
        ("AC: full", "full"),
        ("recompute all layers", "full"),
        ("no AC", "none"),
        ("selective AC", "selective"),
        ("yes (re-materialization)", "full"),  # GLM-130B's paper: on, no policy named
    ],
)
def test_recompute_cells_as_frameworks_name_them(
    run_cli: Any, tmp_path: Path, recompute: str, policy: str
) -> None:
    cells = f"8192\t16\t1\t1\t8\t8\tH100 SXM\tbf16\tTPS per GPU\t6,000\t{recompute}"
    (row,) = _train(run_cli, tmp_path, cells, columns=("recompute",))
    assert row["status"] == "ok", row["reason"]
    expected = "op" if policy == "selective" else policy  # torchtitan's selective AC is per-op
    assert row["plan"]["recompute"] == expected


@pytest.mark.parametrize(
    ("load", "expected"),
    [
        # a rate: the chance each draft token is kept
        ("concurrency 1; speculative decoding, 4 draft tokens, acceptance rate 0.7", (4, 0.7)),
        ("concurrency 1; EAGLE-3, num_draft_tokens 3, acceptance 80%", (3, 0.8)),
        # a length: 1 + a + a^2 + a^3 tokens a pass with 3 drafts; 2.952 is a = 0.8 (hand sum)
        ("concurrency 1; MTP 3, acceptance length 2.952", (3, 0.8)),
    ],
)
def test_stated_speculation_is_modelled(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry, load: str, expected: tuple[int, float]
) -> None:
    drafts, rate = expected
    setup = _infer_setup(tmp_path, catalog, models, load, metric="output tokens/s/user", measured="150")
    assert setup.plan.speculative is not None
    assert setup.plan.speculative.num_draft_tokens == drafts
    assert setup.plan.speculative.acceptance_rate == pytest.approx(rate, abs=1e-6)
    assert any(line.startswith("speculative decoding as the row states it") for line in setup.assumptions)


def test_speculation_without_an_acceptance_is_not_guessed(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    # 'MTP 3' alone: how many drafts are kept depends on the data, which the row does not give
    setup = _infer_setup(tmp_path, catalog, models, "concurrency 1; MTP 3", metric="output tokens/s/user")
    assert setup.plan.speculative is None
    assert any("speculative decoding named but not modelled" in line for line in setup.assumptions)


def _noted_setup(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry, load: str, check: str
) -> InferenceRowSetup:
    path = tmp_path / "rows.tsv"
    cells = f"ISL/OSL 1000/1000\t{load}\t1\t1\tH100 SXM\tbf16\toutput tokens/s/user\t150\t{check}"
    path.write_text(
        f"{INFER_HEADER}\tderived_or_check\nR1\tinfer\tSGLang 2025\tLlama 3.1 8B\t{cells}\n", encoding="utf-8"
    )
    return inference_row_setup(read_table(path)[0], catalog, models)[0]


def test_an_acceptance_printed_in_the_same_output_is_read(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    # SGLang's bench_serving prints "Accept length" beside the throughput; the table writer copies
    # that output into the check column. 3 steps verified as 4 tokens are 3 drafts; 2.952 tokens a
    # pass is a = 0.8 (1 + 0.8 + 0.64 + 0.512, by hand).
    load = "concurrency 1; EAGLE MTP (3 steps, 4 draft tokens)"
    setup = _noted_setup(
        tmp_path, catalog, models, load, "same output: Mean TTFT 161.68 ms; Accept length 2.952"
    )
    assert setup.plan.speculative is not None
    assert setup.plan.speculative.num_draft_tokens == 3
    assert setup.plan.speculative.acceptance_rate == pytest.approx(0.8, abs=1e-6)
    assert any("from the run's own output" in line for line in setup.assumptions)


def test_a_note_that_is_not_the_runs_output_gives_no_acceptance(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    # a note quoting another run (or guessing) is not this run's acceptance
    load = "concurrency 1; EAGLE MTP (3 steps, 4 draft tokens)"
    setup = _noted_setup(tmp_path, catalog, models, load, "the blog's other run: accept length 2.952")
    assert setup.plan.speculative is None
    assert any("speculative decoding named but not modelled" in line for line in setup.assumptions)


def test_an_impossible_acceptance_in_a_note_is_said_not_used(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    # 2 drafts yield at most 3 tokens a pass: the note's 3.26 does not fit the row's drafts
    load = "concurrency 1; EAGLE MTP (2 steps, 3 draft tokens)"
    setup = _noted_setup(tmp_path, catalog, models, load, "same record: Accept length 3.26")
    assert setup.plan.speculative is None
    assert any("3.26 tokens a verify pass is not possible with 2" in line for line in setup.assumptions)


def test_an_impossible_acceptance_length_is_refused(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    # 3 drafts yield at most 4 tokens a pass
    with pytest.raises(RowError, match="not possible with 3 draft tokens"):
        _infer_setup(tmp_path, catalog, models, "concurrency 1; MTP 3, acceptance length 4.5")


@pytest.mark.parametrize(
    ("hardware", "system"),
    [
        ("64 H100s", "dgx-h100"),
        ("H100s (Eos)", "dgx-h100"),
        ("B200s", "dgx-b200"),
        ("MI300Xs", "mi300x-platform"),
    ],
)
def test_a_part_in_the_plural_is_the_part(catalog: Catalog, hardware: str, system: str) -> None:
    assert read_hardware(catalog, hardware)[0].system == system


@pytest.mark.parametrize("load", ["request rate 1e400", "QPS 0", "-2 req/s"])
def test_a_rate_that_is_no_rate_is_refused(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry, load: str
) -> None:
    # the number is read whole: '1e400' is not a rate of 1 request/s
    with pytest.raises(RowError, match="is not a finite rate above 0 requests/s"):
        _infer_setup(tmp_path, catalog, models, load)


def test_draft_tokens_alone_name_speculation(tmp_path: Path, catalog: Catalog, models: ModelRegistry) -> None:
    # no method named, but draft tokens are speculative decoding: an impossible rate is refused
    with pytest.raises(RowError, match=r"acceptance rate 1\.0 must be in"):
        _infer_setup(tmp_path, catalog, models, "concurrency 1; 3 draft tokens, acceptance rate 1.0")


def test_a_size_too_large_for_a_float_is_refused() -> None:
    with pytest.raises(RowError, match="too large to be a number"):
        size_cell("1e400k")


def test_the_engine_and_the_cli_bound_draft_tokens_alike(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    assert DRAFT_TOKENS.maximum == MAX_DRAFT_TOKENS
    # a row's 'MTP 99999999999' is refused, not predicted at a draft tree no method builds
    with pytest.raises(RowError, match="needs 1 to 1,024 draft tokens"):
        _infer_setup(tmp_path, catalog, models, "concurrency 1; MTP 99999999999, acceptance 0.5")


@pytest.mark.parametrize(
    "batch",
    [
        "16M tokens",  # 16 x 2^20 tokens: 2,048 sequences of 8,192
        "16.8M tokens",  # the same batch rounded to three digits in decimal millions
        "16,777,216 tokens",  # the exact count, divided as it is (was taken as 2^20-based: 2,147)
        "2048 x 8192 tokens",  # sequences times their length (was refused)
        "2K",
    ],
)
def test_a_global_batch_in_tokens_or_sequences(run_cli: Any, tmp_path: Path, batch: str) -> None:
    # 8 H100 nodes, TP 8, DP 8: 2,048 sequences of 8,192 tokens a step
    (row,) = _train(run_cli, tmp_path, f"8192\t{batch}\t8\t1\t8\t64\tH100 SXM\tbf16\tTFLOP/s per GPU\t400")
    assert row["status"] == "ok", row["reason"]
    assert _tokens_per_step(row) == pytest.approx(2048 * 8192, rel=1e-9)


def test_the_schedules_name_is_not_its_depth(run_cli: Any, tmp_path: Path) -> None:
    cells = "8192\t256\t1\t4\t2\t8\tH100 SXM\tbf16\tTFLOP/s per GPU\t400\tinterleaved 1F1B (v=4)"
    lead = "Megatron-LM 2024\tLlama 3.1 8B\tZeRO-1"
    (row,) = _train(run_cli, tmp_path, cells, lead=lead, columns=("VPP",))
    assert row["status"] == "ok", row["reason"]
    assert row["plan"]["vpp"] == 4  # not the 1 of '1F1B'


def test_megatrons_layers_per_virtual_stage_is_not_the_depth(run_cli: Any, tmp_path: Path) -> None:
    # Llama 3.1 8B's 32 layers over PP 4: 8 a stage; --num-layers-per-virtual-pipeline-stage 2
    # makes 8 / 2 = 4 chunks a stage (it was read as a depth of 2)
    flag = "--num-layers-per-virtual-pipeline-stage 2"
    cells = f"8192\t256\t1\t4\t2\t8\tH100 SXM\tbf16\tTFLOP/s per GPU\t400\t{flag}"
    lead = "Megatron-LM 2024\tLlama 3.1 8B\tZeRO-1"
    (row,) = _train(run_cli, tmp_path, cells, lead=lead, columns=("VPP",))
    assert row["status"] == "ok", row["reason"]
    assert row["plan"]["vpp"] == 4


@pytest.mark.parametrize("gpus", ["99999999999", "99999999999 nodes x 8"])
def test_more_gpus_than_lightspeed_models_are_refused(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry, gpus: str
) -> None:
    # an odd count no 8-GPU node divides used to search ~1e11 domain counts before refusing
    path = tmp_path / "rows.tsv"
    cells = f"ISL/OSL 1000/1000\tconcurrency 1\t1\t{gpus}\tH100 SXM\tbf16\toutput tokens/s\t100"
    path.write_text(f"{INFER_HEADER}\nR1\tinfer\tvLLM 2025\tLlama 3.1 8B\t{cells}\n", encoding="utf-8")
    with pytest.raises(LightspeedError, match="above the 10,000,000 lightspeed models"):
        inference_row_setup(read_table(path)[0], catalog, models)


def test_an_mfu_against_a_named_peak_is_predicted_against_it(run_cli: Any, tmp_path: Path) -> None:
    common = "8192\t16\t1\t1\t8\t8\tH100 SXM\tbf16"
    own, named = _train(run_cli, tmp_path, f"{common}\tMFU\t40%", f"{common}\tMFU (of 1,979 TFLOPS)\t20%")
    assert own["status"] == named["status"] == "ok"
    # the same run over the named 1,979 TFLOP/s instead of the H100's dense BF16 peak (989.4)
    dense = load_catalog().accelerator("h100-sxm").dense_flop_per_s("bf16")
    assert named["predicted"] == pytest.approx(own["predicted"] * dense / 1.979e15, rel=1e-6)


@pytest.mark.parametrize(
    ("hardware", "gpus"),
    [
        ("2 nodes of 8 H100", 16),  # was refused
        ("4 nodes x 8 H100", 32),  # was 8
        ("2 x 8 H100", 16),  # was 8
        ("1024 H100s", 1024),  # was refused
        ("16 H100 GPUs (2 nodes)", 16),  # was refused
        ("8x A100 (DGX A100)", 8),  # 8 GPUs in one DGX, not 8 DGX (was 64)
        ("2x DGX H100", 16),  # a count before a system counts systems
        ("8xH100", 8),
        # MLPerf's system names glue the count after the memory size (each was refused)
        ("H200-SXM-141GBx8_TRT", 8),
        ("DGX-H100_H100-SXM-80GBx1_TRT", 1),
        # a count in words (were refused); one system is its GPUs
        ("single H100", 1),
        ("a single DGX H100", 8),
        ("one p5.48xlarge", 8),
    ],
)
def test_a_hardware_cell_counts_its_gpus(catalog: Catalog, hardware: str, gpus: int) -> None:
    row = PublishedRow("R1", "infer", 2, {"hardware": hardware})
    assert row_gpus(catalog, row)[0] == gpus


@pytest.mark.parametrize(
    ("hardware", "gpus"),
    [
        # a system named without a count is one of it (each was refused: "GPUs is not reported")
        ("DGX B200", 8),
        ("p5.48xlarge", 8),
        # a rack is often used in part (LMSYS's GB300 posts run decode on up to 32 of 72 GPUs)
        ("GB200 NVL72", None),
        # a GPU first says where the GPUs sit, not how many; clusters and nodes count nothing
        ("H100 (DGX H100)", None),
        ("DGX H100 cluster", None),
        ("DGX H100 SuperPOD", None),
        ("H100 SXM", None),
    ],
)
def test_a_system_named_without_a_count_is_one_system(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry, hardware: str, gpus: int | None
) -> None:
    path = tmp_path / "rows.tsv"
    cells = f"ISL/OSL 1000/1000\tconcurrency 64\t\t\t{hardware}\tbf16\toutput tokens/s\t5,000"
    path.write_text(f"{INFER_HEADER}\nR1\tinfer\tvLLM 2025\tLlama 3.1 8B\t{cells}\n", encoding="utf-8")
    if gpus is None:
        with pytest.raises(RowError, match="GPUs is not reported"):
            inference_row_setup(read_table(path)[0], catalog, models)
        return
    setup = inference_row_setup(read_table(path)[0], catalog, models)[0]
    counted = [note for note in setup.assumptions if note.startswith("GPUs from the hardware cell")]
    assert counted == [f"GPUs from the hardware cell: '{hardware}' with no count is one system, {gpus} GPUs"]
    # a training row that states no degree reads it the same way
    train = tmp_path / "train.tsv"
    cells = f"torchtitan 2024\tLlama 3.1 8B\tFSDP2\t8192\t16\t\t\t\t\t{hardware}\tbf16\tTPS per GPU\t9,000"
    train.write_text(f"{TRAIN_HEADER}\nT1\ttrain\t{cells}\n", encoding="utf-8")
    spec = read_training_row(read_table(train)[0], catalog, models)
    assert spec.num_gpus == gpus
    assert counted[0] in spec.assumptions


@pytest.mark.parametrize(
    ("cells", "expected"),
    [
        ({"TP": "TP8 EP8"}, (8, 1, 8)),  # EP written in the TP cell (was EP 1)
        ({"TP": "TP=4, PP=2, EP=8"}, (4, 2, 8)),
        ({"TP": "8", "EP": "8"}, (8, 1, 8)),
        # a leading number is the cell's degree; a flag in its note is not (I101: '--tp 8')
        ({"TP": "1 for attention (trtllm --tp 8 --ep 8)", "EP": "8"}, (1, 1, 8)),
        ({"TP": "", "DP": "dp=2 tp=4"}, (4, 1, 1)),
    ],
)
def test_parallel_degrees_written_in_one_cell(cells: dict[str, str], expected: tuple[int, int, int]) -> None:
    row = PublishedRow("R1", "infer", 2, cells)
    assert (degree_cell(row, "TP", 1), degree_cell(row, "PP", 1), degree_cell(row, "EP", 1)) == expected


@pytest.mark.parametrize(
    ("note", "refused"),
    [
        # Megatron-Bridge's footnote on its GPT-OSS 120B rows of the 26.06.01 container
        (
            "the page's footnote: 'Performance regression in GPT-OSS 120B pre-training is a known issue "
            "(NVIDIA/cudnn-frontend issue 256). It will be resolved with the next container release.'",
            True,
        ),
        ("a known regression of this release", True),
        ("no regression against 25.11; step time 4.1 s", False),  # a regression test passed
        ("(derived) 8192 x 16 / 4.1 s", False),
    ],
)
def test_a_figure_its_source_calls_a_known_regression_is_not_compared(
    run_cli: Any, tmp_path: Path, note: str, refused: bool
) -> None:
    # the engine predicts the stack working; a figure its own publisher says is broken would count
    # a bug it was told about as the engine's error
    cells = f"8192\t16\t1\t1\t8\t8\tH100 SXM\tbf16\tTPS per GPU\t6,000\t{note}"
    path = tmp_path / "rows.tsv"
    header = "\t".join((TRAIN_HEADER, "derived_or_check"))
    path.write_text(f"{header}\nT1\ttrain\ttorchtitan 2024\tLlama 3.1 8B\tFSDP2\t{cells}\n", encoding="utf-8")
    result = run_cli("validate", str(path), "--json")
    assert result.code == 0, result.err
    (row,) = json.loads(result.out)["rows"]
    assert (row["status"] != "ok") == refused, row["reason"]
    if refused:
        assert "the source calls this figure a known regression" in row["reason"]
        assert "in derived_or_check" in row["reason"]


@pytest.mark.parametrize(
    ("cell", "gpus"),
    [
        # a part's digits are its name, never a count: 'H100 x 8' had been read as 100 GPUs,
        # 'MI300X x8' as 300, 'RTX 4090' as 4,090
        ("H100 x 8", 8),
        ("MI300X x8", 8),
        ("B200x8", 8),
        ("8x MI300X", 8),
        ("4x RTX 4090", 4),
        ("16K H100s", 16384),  # ML papers' K
        ("512 H100 GPUs", 512),
        ("RTX 4090", None),  # no count beside the part: the hardware cell is read for one
        ("AMD Radeon RX 7900 XTX", None),
        ("GB200 NVL72", None),
        ("A100 80GB x 4", 4),  # the part's memory between it and its count
    ],
)
def test_a_part_named_in_the_gpus_cell_is_not_its_count(cell: str, gpus: int | None) -> None:
    assert gpu_count(cell)[0] == gpus


@pytest.mark.parametrize(
    "case",
    [
        # Llama 3.1 8B (8.03B parameters) on H100 SXM, whose fastest dense peak is FP8's 1,979
        # TFLOP/s: 1.66M tokens/s per GPU x 6 x 8.03e9 = 80.0 PFLOP/s, 40x it (a job's rate, or M
        # for k); 16,600 tokens/s per GPU is 0.40x and reads
        ("tokens/s per GPU", "1,660,000", 6 * 8.03e9 * 1.66e6 / 1979e12),
        ("TFLOP/s per GPU", "2,500", 2500 / 1979),
    ],
)
def test_a_rate_above_every_peak_of_the_gpu_is_refused(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry, case: tuple[str, str, float]
) -> None:
    metric, measured, ratio = case
    path = tmp_path / "rows.tsv"
    cells = f"FSDP2\t8192\t16\t1\t1\t8\t8\tH100 SXM\tbf16\t{metric}\t{measured}"
    path.write_text(f"{TRAIN_HEADER}\nT1\ttrain\ttorchtitan 2024\tLlama 3.1 8B\t{cells}\n", encoding="utf-8")
    with pytest.raises(RowError, match=r"fastest dense peak \(1,979 TFLOP/s\)") as refused:
        read_training_row(read_table(path)[0], catalog, models)
    assert f"is {ratio:.3g}x one h100-sxm's" in str(refused.value)


def test_an_output_rate_above_every_peak_is_refused(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    # 2 x 8.03e9 FLOPs per output token: 200,000 tokens/s per GPU is 3.21 PFLOP/s, 1.62x the FP8 peak
    with pytest.raises(RowError, match="2 FLOPs per active parameter per output token") as refused:
        _infer_setup(
            tmp_path, catalog, models, "concurrency 64", metric="output tokens/s per GPU", measured="200,000"
        )
    assert f"is {2 * 8.03e9 * 2e5 / 1979e12:.3g}x" in str(refused.value)
    # 20,000 tokens/s per GPU (0.16x) is a rate the engine predicts
    _infer_setup(
        tmp_path, catalog, models, "concurrency 64", metric="output tokens/s per GPU", measured="20,000"
    )
