"""Rows written the way a sixth set of sources writes them (the thirty-second session's probes).
Each test is a rule the reader lacked: the row was refused, or read as something it does not say."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lightspeed.catalog import Catalog
from lightspeed.sol.core.stacks import stack_for
from lightspeed.sol.validation.hardware_text import cluster_of, gpu_count, read_hardware, row_gpus
from lightspeed.sol.validation.infer_lengths import INPUT_ONLY, input_output
from lightspeed.sol.validation.infer_precision import kv_precision
from lightspeed.sol.validation.published import PublishedRow, format_keys, is_missing
from lightspeed.sol.validation.readings import read_cell
from lightspeed.sol.validation.rows import row_year
from lightspeed.sol.validation.train_degrees import global_batch_of, interleaving_of
from lightspeed.sol.validation.train_settings import recompute_of
from lightspeed.workload import ModelRegistry, load_models
from probes import cli_rows, infer_cli_rows

LLAMA_70B = load_models().get("llama-3-70b")


@pytest.mark.parametrize(
    ("source", "year"),
    [
        # a patch release of a container (Megatron-Bridge's archive: '26.02.01 NeMo Container')
        ("Megatron-Bridge performance-summary-archive.md '26.02.01 NeMo Container' Pre-Training", 2026),
        ("'25.11 NeMo Container'", 2025),
        # MLPerf rounds by their version: v4.1 ran in August 2024, v5.0 in April 2025
        ("MLPerf Inference v5.0, closed division", 2025),
        ("mlcommons/inference_results_v4.1 closed/NVIDIA/results/...", 2024),
        ("ntuhpc/mlperf_inference_results_v5.0 (a copy of mlcommons/inference_results_v5.0)", 2025),
        ("MLPerf Training v4.0 results", 2024),
    ],
)
def test_the_year_of_a_release_or_an_mlperf_round(catalog: Catalog, source: str, year: int) -> None:
    row = PublishedRow(row_id="R1", kind="infer", line=2, cells={"source": source})
    found, note = row_year(row, catalog.accelerators["h100-sxm"])
    assert found == year, note
    assert "no year" not in note


def test_an_mlperf_round_picks_the_servers_release_of_its_year(run_cli: Any, tmp_path: Path) -> None:
    # AMD's MLPerf Inference v5.0 Llama 2 70B Offline row on MI325X ran vLLM of 2025: it had been
    # read as a 2024 row for want of a calendar year in its source (vLLM's 2024 profile: -31%)
    header = "id\tkind\tsource\tmodel\tseq\tglobal_batch\tGPUs\thardware\tprecision\tmetric\tmeasured"
    (row,) = cli_rows(
        run_cli,
        tmp_path,
        header,
        "Q1\tinfer\tmlcommons/inference_results_v5.0 closed/AMD/results/8xMI325X_2xEPYC-9575F/llama2-70b-99/"
        "Offline\tLlama 2 70B\tMLPerf Inference v5.0 llama2-70b-99\tScenario : Offline\t8"
        "\t8xMI325X_2xEPYC_9575F\tFP8\tTokens per second\t33928",
    )
    assert row["status"] == "ok", row["reason"]
    assert row["stack"] == "vllm-2025"
    assert any("MLPerf round" in line for line in row["assumptions"])


def _infer(run_cli: Any, tmp_path: Path, *cells: str) -> list[dict[str, Any]]:
    return infer_cli_rows(run_cli, tmp_path, "vLLM 0.10 bench serve 2025", *cells)


def test_a_benchmarks_request_count_written_as_its_flag(run_cli: Any, tmp_path: Path) -> None:
    # vLLM's and SGLang's benchmark flag, label first: the run is those 16 requests (had been
    # 1,000 at 10,000 req/s, 45 times the tokens the row's run generated)
    flagged, words = _infer(
        run_cli,
        tmp_path,
        "Llama 3.1 8B\tISL/OSL 1024/128\t--num-prompts 16 --request-rate 10000\t1\t1\tH100 SXM\tbf16"
        "\tOutput token throughput (tok/s)\t2000",
        "Llama 3.1 8B\tISL/OSL 1024/128\tNum Prompts 300, RPS 4\t1\t1\tH100 SXM\tbf16"
        "\tOutput token throughput (tok/s)\t500",
    )
    assert flagged["status"] == "ok", flagged["reason"]
    assert any("16 requests" in line for line in flagged["assumptions"]), flagged["assumptions"]
    assert any("300 requests" in line for line in words["assumptions"]), words["assumptions"]


def test_a_rate_defined_by_a_formula_over_every_token(run_cli: Any, tmp_path: Path) -> None:
    # vLLM's offline benchmark prints tokens_per_second = total_num_tokens / elapsed_time: prompt
    # and generated tokens together (it had been read as output tokens: dstack's 405B rows at
    # 2048/2048 tokens came out +43% where the rate they report is +187% off)
    total, output = _infer(
        run_cli,
        tmp_path,
        "Llama 3.1 8B\tinput_len 1024 / output_len 1024\tbatch_size 64 (offline)\t1\t1\tH100 SXM\tbf16"
        "\ttokens_per_second (= total_num_tokens / elapsed_time)\t8000",
        "Llama 3.1 8B\tinput_len 1024 / output_len 1024\tbatch_size 64 (offline)\t1\t1\tH100 SXM\tbf16"
        "\toutput tokens_per_second (= num_generated_tokens / elapsed_time)\t4000",
    )
    assert total["reading"]["key"] == "total_tokens_per_s"
    assert output["reading"]["key"] == "output_tokens_per_s"
    # the same run: prompt and output counted together is twice the output alone at 1024/1024
    assert total["predicted"] == pytest.approx(2.0 * output["predicted"], rel=1e-6)


# --- a rephrasing probe of the 2025 dev rows and a fourth training probe: cells as sources write them


@pytest.mark.parametrize(
    ("metric", "key", "scope", "gpus"),
    [
        ("ms/token", "tpot_s", "job", None),  # a per-token latency in its unit alone
        ("output tokens/s per tray (4 GPUs)", "output_tokens_per_s", "node", 4),
        ("output tokens/s per GB200 tray", "output_tokens_per_s", "node", 4),  # NVL72: 4 GPUs a tray
        ("tokens/s per server (8 GPUs)", "output_tokens_per_s", "node", 8),
    ],
)
def test_serving_metric_cells(metric: str, key: str, scope: str, gpus: int | None) -> None:
    (reading,) = read_cell(metric, "30,332", kind="infer")
    assert (reading.key, reading.scope, reading.gpus_per_scope) == (key, scope, gpus)


def test_a_per_token_latency_in_its_unit_alone_is_converted() -> None:
    (reading,) = read_cell("ms/token", "6.325", kind="infer")
    assert reading.value == pytest.approx(6.325e-3)


@pytest.mark.parametrize(("metric", "key"), [("samp/s", "samples_per_s"), ("seq/s", "samples_per_s")])
def test_training_sample_rates_abbreviated(metric: str, key: str) -> None:
    (reading,) = read_cell(metric, "17.13", kind="train")
    assert reading.key == key


@pytest.mark.parametrize(
    ("cell", "gpus"),
    [
        ("12 trays x 4 GPUs", 48),  # GB200 NVL72 compute trays
        ("12 compute trays (4 GPUs each)", 48),
        ("single GPU", 1),
        ("one GPU", 1),
        ("a single H100", 1),
        ("one node", None),  # a node is not one GPU
    ],
)
def test_gpu_counts_in_words(cell: str, gpus: int | None) -> None:
    assert gpu_count(cell)[0] == gpus


@pytest.mark.parametrize("cell", ["FP8-MX", "MX-FP8", "MX FP8", "FP8 (MX block scaling)", "fp8 mx"])
def test_mx_formats_as_megatron_bridge_writes_them(cell: str) -> None:
    # Megatron-Bridge's tables write MXFP8 as 'FP8-MX': it had been read as per-tensor FP8
    assert "mxfp8" in format_keys(cell)


@pytest.mark.parametrize("cell", ["NVFP4 MoE, 16-bit KV cache", "NVFP4, KV cache in 16 bits (bf16)"])
def test_a_sixteen_bit_kv_cache_in_words(cell: str) -> None:
    row = PublishedRow(row_id="I1", kind="infer", line=2, cells={"precision": cell})
    assert kv_precision(row) == "bf16"


@pytest.mark.parametrize(
    "text",
    ["torchtitan bf16, torch.compile off", "torchtitan compile = false", "torchtitan bf16 (compile: off)"],
)
def test_compile_said_to_be_off(text: str) -> None:
    assert stack_for(text, 2025)[0].name == stack_for("torchtitan bf16, no compile", 2025)[0].name
    assert "compile" not in stack_for(text, 2025)[0].name


def test_megatrons_recompute_modules_are_selective(run_cli: Any, tmp_path: Path) -> None:
    header = (
        "id\tkind\tsource\tmodel\tseq\tglobal_batch\tmicro_batch\tTP\tPP\tGPUs\thardware\tprecision"
        "\trecompute\tmetric\tmeasured"
    )
    (row,) = cli_rows(
        run_cli,
        tmp_path,
        header,
        "T1\ttrain\tMegatron-LM 2025\tLlama 3.1 8B\t8192\t128\t1\t1\t1\t8\tH100 SXM\tbf16"
        "\tMLP and MLA up projection (--recompute-modules mlp up_proj)\tTFLOP/s/GPU\t400",
    )
    assert row["status"] == "ok", row["reason"]
    assert row["plan"]["recompute"] == "selective"  # had been full: the word 'recompute' alone


@pytest.mark.parametrize(
    ("source", "year"), [("torchao e2e benchmarks @abc (2026-08), pytorch 2.7.0a0", 2025)]
)
def test_a_pytorch_release_dates_the_run(catalog: Catalog, source: str, year: int) -> None:
    # the page's date (2026) is not the software's: PyTorch 2.7 was released in April 2025
    row = PublishedRow(row_id="T1", kind="train", line=2, cells={"source": source})
    assert row_year(row, catalog.accelerators["h100-sxm"]) == (year, "PyTorch 2.7")


@pytest.mark.parametrize(
    ("seq", "canonical"),
    [
        ("ISL:OSL 1024:2048", "ISL/OSL 1024/2048"),
        ("ISL 2000 (decode)", "input 2000 tokens (decode)"),
        ("input length 2,000 (decode)", "input 2000 tokens (decode)"),
        ("2000-token input (decode)", "input 2000 tokens (decode)"),
        ("input_len=2000 (decode)", "input 2000 tokens (decode)"),
    ],
)
def test_lengths_as_sources_write_them(run_cli: Any, tmp_path: Path, seq: str, canonical: str) -> None:
    # each had been refused: "the row gives no ISL/OSL or prompt length"
    metric = "output tokens/s, decode pool" if "decode" in seq else "output tokens/s"
    row, reference = _infer(
        run_cli,
        tmp_path,
        *(
            f"Llama 3.1 8B\t{cell}\tmax load\t1\t1\tH100 SXM\tfp8\t{metric}\t5000"
            for cell in (seq, canonical)
        ),
    )
    assert row["status"] == reference["status"] == "ok", row["reason"]
    assert row["predicted"] == pytest.approx(reference["predicted"], rel=1e-9)


def test_trtllm_max_batch_size_is_per_attention_rank(run_cli: Any, tmp_path: Path) -> None:
    # trtllm-bench's --max_batch_size caps each attention-DP rank's batch: 128 x 8 ranks (it had
    # been 128 for the whole replica: DeepSeek-R1 on 8 H200 read 81% slow)
    header = (
        "id\tkind\tsource\tmodel\tseq\tglobal_batch\tTP\tDP\tEP\tGPUs\thardware\tprecision\tmetric\tmeasured"
    )
    flag, words = cli_rows(
        run_cli,
        tmp_path,
        header,
        *(
            f"I{i}\tinfer\tTensorRT-LLM DeepSeek-R1 blog (trtllm-bench)\tDeepSeek-R1\tISL/OSL 1024/2048"
            f"\t{load}\t1\t8 (attention DP)\t8\t8\tH200 (HGX, 8 GPUs)\tFP8\ttotal output tokens/s\t11489"
            for i, load in enumerate(
                ("--concurrency 1024 --max_batch_size 128", "concurrency 1024; max_batch 128 per rank"), 1
            )
        ),
    )
    assert flag["status"] == words["status"] == "ok", (flag["reason"], words["reason"])
    assert any("at most 1024 per replica" in line for line in flag["assumptions"]), flag["assumptions"]
    assert flag["predicted"] == pytest.approx(words["predicted"], rel=1e-9)


@pytest.mark.parametrize(
    ("server", "tp", "pp"),
    [("vLLM 0.10 (2025)", 8, 2), ("SGLang 0.4.9 (2025)", 16, 1)],
)
def test_a_model_no_node_holds_spans_nodes_as_its_server_does(
    run_cli: Any, tmp_path: Path, server: str, tp: int, pp: int
) -> None:
    # DeepSeek-R1 in FP8 (671 GB) outgrows one 8 x 80 GB H100 node: a row naming no TP had been
    # refused (tp=1 x16 replicas did not fit). vLLM's distributed-serving guide pipelines across
    # nodes (TP = a node's GPUs, PP = nodes); SGLang's DeepSeek guide runs --tp 16 --nnodes 2.
    header = "id\tkind\tsource\tmodel\tseq\tglobal_batch\tGPUs\thardware\tprecision\tmetric\tmeasured"
    (row,) = cli_rows(
        run_cli,
        tmp_path,
        header,
        f"U1\tinfer\t{server}\tDeepSeek-R1\tISL 128 / OSL 1024\tconcurrency 1\t16\t16 H100 (2 nodes)\tFP8"
        "\tMedian TPOT (ms)\t23.2",
    )
    assert row["status"] == "ok", row["reason"]
    assert (row["plan"]["tp"], row["plan"]["pp"], row["plan"]["replicas"]) == (tp, pp, 1)


def test_a_bare_size_and_its_architecture(run_cli: Any, tmp_path: Path) -> None:
    # Colossal-AI's table names the model by its size and, in a parenthesis, its architecture: had
    # been refused ("not in the catalog and the row lacks layers ...")
    header = "id\tkind\tsource\tmodel\tseq\tglobal_batch\tGPUs\thardware\tprecision\tmetric\tmeasured"
    (row,) = cli_rows(
        run_cli,
        tmp_path,
        header,
        "T1\ttrain\tColossal-AI 2024\t70B (Meta Llama3 architecture)\t8192\t256\t64\tH100 SXM\tbf16"
        "\tTFLOP/s/GPU\t400",
    )
    assert row["status"] == "ok", row["reason"]
    assert "model '70B (Meta Llama3 architecture)' -> catalog model llama-3-70b" in row["assumptions"]


@pytest.mark.parametrize(
    "ep_cell", ["8 (expert TP 4)", "expert parallel 8 (expert tensor parallel 4)", "EP 8, expert TP 4"]
)
def test_the_experts_own_tp_in_words(run_cli: Any, tmp_path: Path, ep_cell: str) -> None:
    # Megatron's expert tensor parallelism said without its flag: it had been ETP 1 (and 'expert TP
    # 4' must not be read as the TP)
    header = (
        "id\tkind\tsource\tmodel\tseq\tglobal_batch\tmicro_batch\tTP\tPP\tEP\tGPUs\thardware\tprecision"
        "\tmetric\tmeasured"
    )
    written, reference = cli_rows(
        run_cli,
        tmp_path,
        header,
        *(
            f"T{i}\ttrain\tMegatron-Bridge 2025\tMixtral 8x7B\t4096\t256\t1\t2\t1\t{cell}\t64\tH100 SXM\tbf16"
            "\tTFLOP/s/GPU\t400"
            for i, cell in enumerate((ep_cell, "8 (ETP 4)"), 1)
        ),
    )
    assert written["status"] == reference["status"] == "ok", written["reason"]
    assert (written["plan"]["etp"], written["plan"]["tp"]) == (4, 2)
    assert written["predicted"] == pytest.approx(reference["predicted"], rel=1e-9)


def test_gpus_counted_before_the_part_with_its_system_in_a_parenthesis(catalog: Catalog) -> None:
    # '48x GB200 (NVL72)': 48 GPUs of an NVL72 rack, not 48 racks (had been 3,456 GPUs)
    row = PublishedRow(row_id="I1", kind="infer", line=2, cells={"hardware": "48x GB200 (NVL72)"})
    assert row_gpus(catalog, row)[0] == 48
    rack = PublishedRow(row_id="I2", kind="infer", line=2, cells={"hardware": "2x GB200 NVL72"})
    assert row_gpus(catalog, rack)[0] == 144


# --- a rephrasing probe of the first dev file and a fifth training probe


@pytest.mark.parametrize(
    ("gpus", "hardware", "expected"),
    [
        ("4 DGX A100 nodes", "A100", 32),  # had been 4 GPUs
        ("64 x DGX A100", "A100 80GB", 512),
        ("64 nodes", "A100", 512),  # the hardware cell's node
        ("1 DGX A100 (8 GPUs)", "A100", 8),  # the GPUs it names outright
        ("64 nodes (512 GPUs)", "A100", 512),  # had been 64 x 512
        ("64x DGX A100 (8 GPUs each)", "A100", 512),
        ("8 (source: '1 node, PP8')", "MI300", 8),  # a node in a note is not the count's
    ],
)
def test_a_gpus_cell_counting_nodes(catalog: Catalog, gpus: str, hardware: str, expected: int) -> None:
    row = PublishedRow(row_id="T1", kind="train", line=2, cells={"GPUs": gpus, "hardware": hardware})
    assert row_gpus(catalog, row)[0] == expected


@pytest.mark.parametrize(
    ("cell", "sequences"),
    [
        ("512 (1M tokens)", 512),  # had been refused: 1M tokens read as the batch
        ("1536 sequences (3.1M tokens)", 1536),
        ("2048 (4,194,304 tokens)", 2048),
        ("32 per DP; 16M tokens", 2048),
        ("3072 -> 15360 (ramp)", 15360),  # the batch the run reached, not its first
        ("ramped from 3072 to 15360", 15360),
        ("2 million tokens", 256),
        ("262,144 tokens (32 GPUs x 8,192)", 32),
    ],
)
def test_global_batches_as_papers_write_them(cell: str, sequences: int) -> None:
    assert global_batch_of(cell, 64, 8192) == sequences


@pytest.mark.parametrize(
    ("seq", "load"),
    [
        ("ISL, OSL: 128, 128", "batch 64"),  # TensorRT-LLM's table columns
        ("128, 128", "batch 64"),
        ("ISL/OSL 128/128", "64"),  # a load cell holding the batch alone
        ("ISL/OSL 128/128", "B=64"),
        ("ISL/OSL 128/128", "64 (static batch)"),
        ("ISL/OSL 128/128", "static batching, 64"),
    ],
)
def test_inference_cells_as_tables_write_them(run_cli: Any, tmp_path: Path, seq: str, load: str) -> None:
    row, reference = _infer(
        run_cli,
        tmp_path,
        *(
            f"Llama 2 70B\t{cells[0]}\t{cells[1]}\t4\t4\tH100 SXM\tfp8\toutput tokens/s\t3317"
            for cells in ((seq, load), ("ISL/OSL 128/128", "batch 64"))
        ),
    )
    assert row["status"] == "ok", row["reason"]
    assert "static batch of 64" in row["assumptions"]
    assert row["predicted"] == pytest.approx(reference["predicted"], rel=1e-9)


@pytest.mark.parametrize(
    ("cell", "policy"),
    [
        ("yes", "full"),  # had been none
        ("enabled", "full"),
        ("norm, act", "selective"),  # Megatron-Core's recompute modules, listed
        ("activations_checkpoint_granularity: null", "none"),  # NeMo's null: none (had been full)
        ("activation checkpointing", "full"),
    ],
)
def test_recompute_cells(cell: str, policy: str) -> None:
    assert recompute_of(cell)[0] == policy


@pytest.mark.parametrize("cell", ["not reported", "unknown (recalled full)", "unspecified", "—", "n.r."])
def test_a_cell_saying_the_source_gives_nothing_is_missing(cell: str) -> None:
    # a recompute cell 'not reported' had been read as no recomputation: the search never ran
    assert is_missing(cell)


def test_checkpointing_in_words_counts_the_recompute_pass_as_full_does(run_cli: Any, tmp_path: Path) -> None:
    header = (
        "id\tkind\tsource\tmodel\tseq\tglobal_batch\tmicro_batch\tTP\tPP\tGPUs\thardware\tprecision"
        "\trecompute\tmetric\tmeasured"
    )
    words, full = cli_rows(
        run_cli,
        tmp_path,
        header,
        *(
            f"T{i}\ttrain\tNarayanan et al. 2021 Megatron-LM\tGPT-3 175B\t2048\t1536\t1\t8\t8\t1024"
            f"\tA100 SXM 80GB\tfp16\t{cell}\tTFLOP/s per GPU\t140"
            for i, cell in enumerate(("activation checkpointing", "full"), 1)
        ),
    )
    assert words["status"] == full["status"] == "ok", words["reason"]
    assert words["predicted"] == pytest.approx(full["predicted"], rel=1e-9)


@pytest.mark.parametrize(
    ("metric", "measured", "key", "value"),
    [
        ("Step time (sec); Per GPU TF", "10.1; 245", "tflop_per_s_per_gpu", 245.0),  # 'TF' alone
        ("GPU-hours for 14.8 trillion tokens", "2.664 million", "gpu_hours", 2.664e6),  # spelled out
    ],
)
def test_training_metric_cells(metric: str, measured: str, key: str, value: float) -> None:
    reading = next(reading for reading in read_cell(metric, measured, kind="train") if reading.key == key)
    assert reading.value == pytest.approx(value)


def test_model_flops_utilization_spelled_out_is_mfu() -> None:
    # it had taken the 'model TFLOP/s' basis (6N + causal attention) that "MFU" does not
    (spelled,) = read_cell("Model FLOPs Utilization (%)", "43", kind="train")
    (short,) = read_cell("MFU (%)", "43", kind="train")
    assert (spelled.key, spelled.flop_basis) == (short.key, short.flop_basis) == ("mfu", "")


def test_the_token_budget_spelled_out() -> None:
    (reading,) = read_cell("GPU-hours for 14.8 trillion tokens", "2.664M", kind="train")
    assert reading.num_tokens == pytest.approx(14.8e12)


@pytest.mark.parametrize(
    "cell",
    [
        "non-interleaved",
        "none (non-interleaved)",
        "no interleaving",
        # the column does not apply (Megatron-Bridge's tables write n/a where VP is off)
        "n/a",
        "-",
        # a schedule that does not interleave, named beside 'not reported'
        "n/r (PipeDream-Flush)",
    ],
)
def test_a_pipeline_said_not_to_interleave(cell: str) -> None:
    row = PublishedRow(row_id="T1", kind="train", line=2, cells={"VPP": cell, "PP": "8"})
    assert interleaving_of(row, LLAMA_70B, 8)[0] == (1,)


@pytest.mark.parametrize("cell", ["n/r", "", "not reported", "unknown"])
def test_an_unreported_interleaving_depth_is_searched_with_none(cell: str) -> None:
    # docs/sol.md: an unreported interleaving depth is searched like an unreported micro-batch
    # (it was priced as no interleaving: Llama 3 405B at TP8 PP16 read -32% against Meta's figure)
    row = PublishedRow(row_id="T1", kind="train", line=2, cells={"VPP": cell, "PP": "16"})
    assert interleaving_of(row, LLAMA_70B, 16)[0] == (1, 2, 3, 4, 6, 8)
    # without pipeline stages there is nothing to interleave
    assert interleaving_of(row, LLAMA_70B, 1)[0] == (1,)


@pytest.mark.parametrize(
    ("source", "year"),
    [
        ("NeMo 24.07-based image (gpu-recipes, 2026)", 2024),
        ("nvcr.io/nvidia/nemo:24.07, committed 2026", 2024),
    ],
)
def test_a_container_image_dates_the_run(catalog: Catalog, source: str, year: int) -> None:
    row = PublishedRow(row_id="T1", kind="train", line=2, cells={"source": source})
    assert row_year(row, catalog.accelerators["h100-sxm"])[0] == year


def test_a_vocabulary_named_by_its_tokenizer_and_query_groups_with_a_colon(
    run_cli: Any, tmp_path: Path
) -> None:
    # TinyLlama's README: every dimension but the vocabulary, 'Llama 2 tokenizer' (32,000)
    header = (
        "id\tkind\tsource\tmodel\tlayers\thidden\theads(kv)\tffn\tvocab\tseq\tglobal_batch\tGPUs\thardware"
        "\tprecision\tmetric\tmeasured"
    )
    (row,) = cli_rows(
        run_cli,
        tmp_path,
        header,
        "T1\ttrain\tTinyLlama 2023\tTinyLlama-1.1B\t22\t2048\t32 (Query Groups: 4)\t5632 (Swiglu)"
        "\tn/r (Llama 2 tokenizer)\t2048\t2 million tokens\t16\tA100-40G\tbf16\ttokens/s/GPU\t24000",
    )
    assert row["status"] == "ok", row["reason"]
    note = next(line for line in row["assumptions"] if line.startswith("model "))
    assert "gqa" in note
    assert "(32,000)" in note


def test_deepseek3_is_maxtexts_name_for_deepseek_v3(models: ModelRegistry) -> None:
    assert models.matches("DeepSeek3-671B (model_type deepseek3-671b)") == ["deepseek-v3"]


@pytest.mark.parametrize(
    ("seq", "lengths"),
    [
        ("Input | Output Sequence Lengths 2,048 | 128", (2048, 128)),  # NVIDIA's table header
        ("Input | Output Sequence Lengths 120,000 | 2,048", (120000, 2048)),
        ("input sequence length of 65,536 tokens and output sequence length of 4,096 tokens", (65536, 4096)),
    ],
)
def test_lengths_in_table_headers_and_prose(seq: str, lengths: tuple[int, int]) -> None:
    # each had been refused: "the row gives no ISL/OSL or prompt length"
    assert input_output(seq.lower(), seq) == lengths


def test_an_mlperf_scenario_quoted_in_a_note_is_not_thecli_rows(run_cli: Any, tmp_path: Path) -> None:
    # Red Hat's Offline summary, its note quoting the Server figure of the same blog: the row had
    # been refused for naming two scenarios
    header = "id\tkind\tsource\tmodel\tseq\tglobal_batch\tGPUs\thardware\tmetric\tmeasured\tderived_or_check"
    (row,) = cli_rows(
        run_cli,
        tmp_path,
        header,
        "Z1\tinfer\tmlcommons inference_results_v5.1 closed/RedHat\tLlama 3.1 8B"
        "\tMLPerf Inference v5.1 llama3.1-8b\tScenario : Offline\t1\tH100 SXM\tTokens per second\t5777"
        "\tSamples per second: 44.9; blog: 5103 tokens/sec (Server)",
    )
    assert row["status"] == "ok", row["reason"]
    assert any("offline" in line for line in row["assumptions"])


@pytest.mark.parametrize(
    ("load", "words"),
    [
        ("--num-prompts 1e400 --request-rate 4", "not a whole number of requests"),  # had been 1 request
        ("--num-prompts 0 --request-rate 4", "sends none"),  # had been simulated anyway
        ("0 requests, request rate 4", "sends none"),
        ("batch 1e400", "not a whole number of sequences"),  # had been dropped: the KV-limited maximum
        ("batch 99999999999999", "<= 1,073,741,824"),  # had been clamped without a word
        ("99999999999999", "<= 1,073,741,824"),
    ],
)
def test_a_load_no_run_had_is_refused(run_cli: Any, tmp_path: Path, load: str, words: str) -> None:
    (row,) = _infer(
        run_cli,
        tmp_path,
        f"Llama 3.1 8B\tISL/OSL 1024/128\t{load}\t1\t1\tH100 SXM\tbf16\toutput tokens/s\t1000",
    )
    assert row["status"] != "ok"
    assert words in row["reason"]


def test_a_node_count_or_a_token_budget_no_number_reads_is_refused(run_cli: Any, tmp_path: Path) -> None:
    header = "id\tkind\tsource\tmodel\tseq\tglobal_batch\tGPUs\thardware\tprecision\tmetric\tmeasured"
    nodes, budget = cli_rows(
        run_cli,
        tmp_path,
        header,
        # '1e400 nodes' had been 1 node (8 GPUs); '1e400 trillion tokens' had been 400T tokens
        "T1\ttrain\tMegatron 2025\tLlama 3.1 8B\t8192\t2048\t1e400 nodes\tH100 SXM\tbf16\tTFLOP/s/GPU\t400",
        "T2\ttrain\tMegatron 2025\tLlama 3.1 8B\t8192\t2048\t64\tH100 SXM\tbf16"
        "\tGPU-hours for 1e400 trillion tokens\t2.664 million",
    )
    # refused, naming the column and the cell (the words changed when unreadable counts got one message)
    assert nodes["status"] != "ok"
    assert "GPUs '1e400 nodes'" in nodes["reason"]
    assert "too large to be a number" in nodes["reason"]
    assert "token budget" in budget["reason"]


# --- a third rephrasing probe (the inference rows no earlier probe rewrote) and the Grand Teton case


@pytest.mark.parametrize(
    "name",
    [
        "Llama 3.3 (70B)",
        "DeepSeek-V3 671B MoE (37B active)",
        "DeepSeek-V3 and R1 (671B MoE)",
        "DeepSeek-V3 / R1",
    ],
)
def test_model_names_as_serving_posts_write_them(models: ModelRegistry, name: str) -> None:
    # each had been refused: "neither in the registry nor described by the row"
    assert models.matches(name) in (["llama-3-70b"], ["llama-3.3-70b"], ["deepseek-v3"])


@pytest.mark.parametrize(
    "cell",
    [
        "bf16 attn + fp8 moe",
        "attention: BF16; MoE: FP8",
        "FP8 (GEMM, dispatch) / BF16 (MLA, combine)",
        "matrix multiplications and dispatch in FP8; MLA and combine in BF16",
        "FP8 for matmuls and dispatch, BF16 for core MLA and combine",
    ],
)
def test_a_bf16_attention_said_as_deepseeks_posts_say_it(cell: str) -> None:
    # the KV cache had fallen back to FP8 with FP8 weights: +29% to +72%
    row = PublishedRow(row_id="I1", kind="infer", line=2, cells={"precision": cell})
    assert kv_precision(row) == "bf16"


@pytest.mark.parametrize(
    ("metric", "key", "gpus"),
    [
        ("Total Output Throughput", "output_tokens_per_s", None),  # trtllm-bench's label, no unit
        ("decode throughput per GPU", "output_tokens_per_s_per_gpu", 1),
        ("tokens/s per 8-GPU H800 node (output, decode, 24 h avg)", "output_tokens_per_s", 8),
    ],
)
def test_serving_metrics_without_their_unit_or_with_a_node_described(
    metric: str, key: str, gpus: int | None
) -> None:
    (reading,) = read_cell(metric, "14,800", kind="infer")
    assert (reading.key, reading.gpus_per_scope) == (key, gpus)


@pytest.mark.parametrize("measured", ["2 909", "2\u202f909", "2\u00a0909"])
def test_thousands_grouped_by_a_space(measured: str) -> None:
    # had been read as 2
    (reading,) = read_cell("output tokens/s", measured, kind="infer")
    assert reading.value == pytest.approx(2909.0)


def test_lengths_with_a_unit_in_the_label_and_a_kv_cache_length() -> None:
    assert input_output("isl/osl (tokens) 1000/1000") == (1000, 1000)
    context = INPUT_ONLY.search("each output token has a kv cache length of 4,989 tokens on average")
    assert context is not None
    assert context.group("isl_a") == "4,989"


def test_a_number_glued_to_a_name_is_no_memory_size(catalog: Catalog) -> None:
    # 'NVL72 GB200' had made a 72 GB variant of the GB200
    hardware, _ = read_hardware(catalog, "NVL72 GB200")
    assert hardware.memory_gib is None


def test_a_part_named_beside_its_server_is_that_part(catalog: Catalog) -> None:
    # the Llama 3 paper's 'H100 80GB HBM3 700W' in Meta's Grand Teton: the 80 GB HBM3 part in that
    # server, not its 96 GB HBM2e 500 W record cut to 80 GB (2.4 TB/s)
    hardware, _ = read_hardware(catalog, "H100 80GB HBM3 700W (Meta Grand Teton)")
    cluster, _ = cluster_of(catalog, hardware, 16)
    assert cluster.system.name.startswith("grand-teton-h100")
    assert cluster.system.accelerator.name == "h100-sxm"
    # the server's own part, named as its record names it, stays the record's
    own, _ = read_hardware(catalog, "H100 SXM 96GB HBM2e @500W (Meta Grand Teton)")
    assert own.accelerator is None


@pytest.mark.parametrize("metric", ["tokens/s per 0-GPU H800 node", "tokens/s per 99999999999-GPU H800 node"])
def test_a_node_of_no_gpus_or_of_billions_is_refused(run_cli: Any, tmp_path: Path, metric: str) -> None:
    # they had been the system's node (0) and a per-GPU rate of 1e-8 tokens/s, predicted without a word
    (row,) = _infer(
        run_cli,
        tmp_path,
        f"Llama 3.1 8B\tISL/OSL 1024/128\tconcurrency 8\t1\t1\tH100 SXM\tbf16\t{metric}\t1000",
    )
    assert row["status"] != "ok"
    assert "GPUs a node" in row["reason"]
