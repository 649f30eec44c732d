"""Rows written the way a seventh set of sources writes them (the thirty-third session's probes).
Each test is a rule the reader lacked: the row was read as something its own cells do not say."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lightspeed.catalog import Catalog
from lightspeed.sol.core.serving_stacks import load_serving_stack
from lightspeed.sol.validation.infer_lengths import input_output, stated_concurrency
from lightspeed.sol.validation.infer_load import names_mlperf, row_requests
from lightspeed.sol.validation.infer_speculation import _names_speculation
from lightspeed.sol.validation.infer_stack import stated_overlap
from lightspeed.sol.validation.published import PublishedRow
from lightspeed.sol.validation.readings import read_cell
from lightspeed.sol.validation.train_degrees import written_micro_batch
from lightspeed.sol.validation.train_settings import zero_stage_of
from lightspeed.workload import ModelRegistry
from probes import INFER_HEADER, cli_rows, infer_cli_rows

# The LMSYS MTP post's small-scale case (lm-sys.github.io blog/2025-07-17-mtp.md, 'Case Study 1'):
# DeepSeek V3 decoding on two H200 nodes, its load and its figure both per rank.
_SOURCE = "lm-sys.github.io blog/2025-07-17-mtp.md 'Case Study 1: Small-Scale Deployment', SGLang 2025"
_CELLS = (
    "DeepSeek V3\tinput sequence length of 65,536 tokens and output sequence length of 4,096 tokens"
    "\t2 concurrent requests per rank\t\t16\t16 H200 GPUs (two decoding nodes)\tfp8"
    "\tThroughput (tokens/sec) Per Rank\t60.4"
)


@pytest.mark.parametrize(
    ("text", "gpus", "in_flight"),
    [
        # two on each rank of 16: 2 x 16 = 32 in flight (had been 2 for the whole deployment)
        ("2 concurrent requests per rank", 16, 32),
        ("concurrency 64 per gpu", 8, 512),
        ("concurrency 64/gpu", 8, 512),
        ("4 users per attention dp rank", 8, 32),
        # a concurrency of the whole deployment stays whole
        ("concurrency 64", 8, 64),
        ("64 concurrent requests, 8 per node", 8, 64),
    ],
)
def test_a_concurrency_per_rank_is_over_every_gpu(text: str, gpus: int, in_flight: int) -> None:
    assert stated_concurrency(text, gpus) == in_flight


@pytest.mark.parametrize(
    "metric", ["Throughput (tokens/sec) Per Rank", "output tok/s per rank", "tokens/s/rank"]
)
def test_a_token_rate_per_rank_is_per_gpu(metric: str) -> None:
    (reading,) = read_cell(metric, "60.4", kind="infer")
    assert reading.key == "output_tokens_per_s_per_gpu"
    assert reading.value == pytest.approx(60.4)


def test_the_per_rank_row_end_to_end(run_cli: Any, tmp_path: Path) -> None:
    (row,) = infer_cli_rows(run_cli, tmp_path, _SOURCE, _CELLS)
    assert row["status"] == "ok", row["reason"]
    assert row["metric"] == "output_tokens_per_s_per_gpu"
    assert any("32 in flight (2 per rank on each of 16 GPUs)" in line for line in row["assumptions"])
    # the 32 users' run, not the '2 requests' a note divides by
    assert any("closed loop of 32 users" in line for line in row["assumptions"]), row["assumptions"]


def _row(**cells: str) -> PublishedRow:
    return PublishedRow(row_id="R1", kind="infer", line=2, cells=cells)


def test_a_notes_request_count_is_not_the_runs() -> None:
    # the table writer's check '60.4 per rank / 2 requests' had been read as a run of 2 requests
    noted = _row(seq="ISL/OSL 1024/1024", derived_or_check="60.4 per rank / 2 requests = 30.2 tok/s per user")
    assert row_requests(noted) is None
    stated = _row(seq="ISL/OSL 1024/1024, 500 requests", derived_or_check="60.4 / 2 requests")
    assert row_requests(stated) == 500


def test_a_notes_guess_or_another_runs_setup_is_not_this_runs() -> None:
    serving = load_serving_stack("sglang-2025")
    # a note quoting the baseline run's flag: this run's overlap is the profile's (had been off)
    quoted = _row(source="SGLang", derived_or_check="baseline (--disable-overlap-schedule): 51.0")
    assert stated_overlap(quoted, serving) == (None, "")
    stated, _ = stated_overlap(_row(source="SGLang --disable-overlap-schedule"), serving)
    assert stated is False
    # 'MTP 3-token 81.5' in a note is the MTP run beside this one, not this one
    assert not _names_speculation(_row(source="SGLang, MTP off", derived_or_check="MTP 3-token: 81.5"))
    assert _names_speculation(_row(source="SGLang, MTP 3-token", derived_or_check="81.5"))


def test_a_notes_guess_of_attention_dp_is_not_read(run_cli: Any, tmp_path: Path) -> None:
    header = f"{INFER_HEADER}\tconfidence"
    guessed, said = cli_rows(
        run_cli,
        tmp_path,
        header,
        f"R1\tinfer\t{_SOURCE}\t{_CELLS}\trank presumably = GPU (DP attention)",
        f"R2\tinfer\t{_SOURCE}, DP attention\t{_CELLS}\tread",
    )
    assert guessed["status"] == said["status"] == "ok"
    assert not any("attention data parallelism" in line for line in guessed["assumptions"])
    assert any("attention data parallelism" in line for line in said["assumptions"])


_TRAIN_HEADER = (
    "id\tkind\tsource\tmodel\tseq\tglobal_batch\tmicro_batch\tTP\tGPUs\thardware\tprecision\tmetric\tmeasured"
)


def _train_row(row_id: str, batches: str, tp: str, metric: str, measured: str) -> str:
    # OLMo-core's README writes its throughput per device and no GPU count (allenai/OLMo-core)
    return (
        f"{row_id}\ttrain\tOLMo-core README 2024, HSDP\tLlama 3 8B\t4096\t{batches}\t{tp}\t\t"
        f"NVIDIA H100\tBF16\t{metric}\t{measured}"
    )


def test_a_per_gpu_figure_without_a_gpu_count_runs_on_the_gpus_its_batch_fills(
    run_cli: Any, tmp_path: Path
) -> None:
    per_gpu, with_tp, whole_job, accumulating, pipelined = cli_rows(
        run_cli,
        tmp_path,
        _TRAIN_HEADER,
        _train_row("R1", "1024 x 4096 tokens\t2", "", "Throughput (tokens per second per device)", "10,000"),
        _train_row("R2", "512\t1", "TP2", "TFLOP/s per GPU", "400"),
        # a step time or the job's rate hangs on the count: still refused
        _train_row("R3", "1024\t2", "", "step time (s)", "4.2"),
        _train_row("R4", "1000\t3", "", "TFLOP/s per GPU", "400"),
        # a pipeline's bubble hangs on the micro-batches each runs, which the count sets
        _train_row("R5", "512\t1", "TP2 PP4", "TFLOP/s per GPU", "400"),
    )
    assert per_gpu["status"] == "ok", per_gpu["reason"]
    # 1,024 sequences at 2 a GPU: 512 GPUs; at TP 2, 512 at 1 a replica is 1,024 GPUs
    assert any("predicted on the 512 GPUs" in line for line in per_gpu["assumptions"])
    assert with_tp["status"] == "ok", with_tp["reason"]
    assert any("predicted on the 1,024 GPUs" in line for line in with_tp["assumptions"])
    assert whole_job["status"] != "ok"
    assert "GPUs is not reported" in whole_job["reason"]
    # 1,000 does not split into micro-batches of 3
    assert accumulating["status"] != "ok"
    assert "GPUs is not reported" in accumulating["reason"]
    assert pipelined["status"] != "ok"
    assert "GPUs is not reported" in pipelined["reason"]


@pytest.mark.parametrize(
    ("text", "lengths"),
    [
        # TensorRT-LLM's ADP blog: means in prose, each with its own label
        ("average input length: 803 tokens; average output length: 3,653 tokens", (803, 3653)),
        # llm-d's MI355X table: a shape, 'in × out' (k = 1,024 as for every length)
        ("decode-heavy (4k in × 4k out)", (4096, 4096)),
        ("prefill-heavy (32k in x 128 out)", (32768, 128)),
        # trtllm-bench's own printout (Google's A3 Ultra recipe quotes it)
        ("average input length (tokens): 128.0000; average output length (tokens): 128.0000", (128, 128)),
    ],
)
def test_lengths_as_means_or_a_shape(text: str, lengths: tuple[int, int]) -> None:
    assert input_output(text) == lengths


def test_an_unreported_sharding_cell_with_a_note_is_unreported() -> None:
    # NeMo 25.02's table has no FSDP column; the writer says so in the cell: that is not 'no FSDP'
    # (ZeRO-0, every rank's whole optimizer state), it is the stack's unreported default
    assert zero_stage_of("n/r (no FSDP column in the 25.02 table)")[0] == 1
    assert zero_stage_of("DDP (no ZeRO)")[0] == 0


def test_nemos_name_for_nemotron_4_340b(models: ModelRegistry) -> None:
    assert models.get("Nemotron-340B").name == "nemotron-4-340b"


@pytest.mark.parametrize("name", ["Qwen3.5-397B-A17B-NVFP4", "Qwen3.5-397B-A17B-FP8"])
def test_the_rows_qwen35_checkpoints_are_the_hybrid(models: ModelRegistry, name: str) -> None:
    # (refused for its Gated DeltaNet layers until 6 Dec, as GLM-5.2 for its sparse attention)
    assert models.unsupported_model(name) is None
    model = models.get(name)
    assert model.name == "qwen3.5-397b-a17b"
    assert model.gated_delta_net is not None


@pytest.mark.parametrize(
    ("cells", "micro"),
    [
        # torchtitan's JobConfig: training.local_batch_size, each data-parallel rank's batch a step
        ({"micro_batch": "n/r (Local batch size: 10)"}, 10),
        ({"global_batch": "local_batch_size=8"}, 8),
        ({"micro_batch": "mbs 2"}, 2),
    ],
)
def test_torchtitans_local_batch_size_is_the_micro_batch(cells: dict[str, str], micro: int) -> None:
    row = PublishedRow(row_id="R1", kind="train", line=2, cells=cells)
    assert written_micro_batch(row, 8192) == micro


def test_a_note_comparing_with_mlperf_does_not_make_an_mlperf_row() -> None:
    noted = _row(
        source="vLLM 0.10 bench serve", derived_or_check="MLPerf Server's figure for this GPU: 2,600"
    )
    assert not names_mlperf(noted)
    assert names_mlperf(_row(source="MLPerf Inference v5.0 closed, llama2-70b-99 Server"))


@pytest.mark.parametrize(
    ("written", "system"), [("DGXH100", "dgx-h100"), ("DGXA100", "dgx-a100"), ("dgxb200", "dgx-b200")]
)
def test_a_dgx_written_without_its_space(catalog: Catalog, written: str, system: str) -> None:
    # NeMo-Megatron-Launcher's tables write the system 'DGXH100'
    assert catalog.system(written).name == system


_MLPERF_HEADER = "id\tkind\tsource\tmodel\tseq\tglobal_batch\tGPUs\thardware\tprecision\tmetric\tmeasured"


def test_an_mlperf_weight_type_with_a_quantization_is_the_type_quantized_from(
    run_cli: Any, tmp_path: Path
) -> None:
    # NVIDIA's MLPerf v4.1 measurements JSON: 'weight_data_types: fp16' beside 'weight_transformations:
    # quantization'; its documentation says LLM submissions run FP8 where the GPU has it (a fp16
    # reading had put the Server run far over what 8 H200 sustain: TTFT +2,999%)
    cell = (
        "fp16 (weight_data_types in measurements JSON; weight_transformations: quantization, affine fusion)"
    )
    quantized, plain = cli_rows(
        run_cli,
        tmp_path,
        _MLPERF_HEADER,
        f"R1\tinfer\tMLPerf Inference v4.1 closed, Lenovo\tLlama 2 70B\tMLPerf Inference v4.1 llama2-70b-99"
        f"\tScenario : Offline\t8\t8x H200-SXM-141GB\t{cell}\tTokens per second\t30000",
        "R2\tinfer\tMLPerf Inference v4.1 closed, Lenovo\tLlama 2 70B\tMLPerf Inference v4.1 llama2-70b-99"
        "\tScenario : Offline\t8\t8x H200-SXM-141GB\tfp16\tTokens per second\t30000",
    )
    assert quantized["status"] == plain["status"] == "ok"
    assert quantized["plan"]["precision"] == "fp8"
    assert plain["plan"]["precision"] == "fp16"


def test_vllms_serving_benchmark_sends_every_request_at_once_by_default(run_cli: Any, tmp_path: Path) -> None:
    # vllm bench serve's --request-rate defaults to inf: with no rate and no concurrency, the 200
    # requests start together (had been read as the server's steady state at its KV limit)
    default, capped = infer_cli_rows(
        run_cli,
        tmp_path,
        "vLLM 0.11 vllm bench serve 2025",
        "Llama 3.1 8B\tISL/OSL 1024/128\t--num-prompts 200\t1\t1\tH100 SXM\tbf16"
        "\tOutput token throughput (tok/s)\t9000",
        "Llama 3.1 8B\tISL/OSL 1024/128\t--num-prompts 200 --max-concurrency 16\t1\t1\tH100 SXM\tbf16"
        "\tOutput token throughput (tok/s)\t2000",
    )
    assert default["status"] == capped["status"] == "ok"
    assert any("default rate (inf): every request sent at once" in line for line in default["assumptions"])
    assert default["plan"]["simulated"] == "offline"
    assert any("16 in flight" in line for line in capped["assumptions"])


@pytest.mark.parametrize(
    "load",
    [
        "-1 concurrent requests per rank",
        "1e400 concurrent requests",
        "concurrency -1",
        "nan users",
        "Concurrent nan",
    ],
)
def test_a_concurrency_no_whole_number_reads_is_refused(run_cli: Any, tmp_path: Path, load: str) -> None:
    # had been dropped: '-1 concurrent' read as 1 per rank, 'concurrency -1' beside a throughput as
    # the server at its most load
    (row,) = infer_cli_rows(
        run_cli,
        tmp_path,
        "SGLang 2025",
        f"Llama 3.1 8B\tISL/OSL 1024/128\t{load}\t1\t16\tH100 SXM\tbf16"
        "\tOutput token throughput (tok/s)\t2000",
    )
    assert row["status"] != "ok"
    assert "is not a whole number of requests" in row["reason"]


def test_vllms_report_of_its_peak_concurrency_is_not_the_load() -> None:
    # vllm bench serve prints 'Peak concurrent requests: 984.00' after the run: an outcome
    assert stated_concurrency("--num-prompts 1000; peak concurrent requests: 984") is None
    assert stated_concurrency("concurrent requests: 64") == 64
