"""Rows written the way a fifth set of sources writes them (the thirty-first session's probes:
torchtitan's async-TP table, MaxText's and JAX-Toolbox's tables, the PyTorch FSDP blog, vLLM's
FP8 KV-cache blog, TensorRT-LLM's min-latency blog, Megatron-Bridge's performance summary). Each
test is a rule the reader lacked: the row was refused, or read as something it does not say."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lightspeed.workload import ModelRegistry
from probes import cli_rows, infer_cli_rows

TRAIN_HEADER = (
    "id\tkind\tsource\tmodel\tseq\tglobal_batch\tmicro_batch\tTP\tPP\tVPP\tDP\tsharding\tGPUs\thardware"
    "\tprecision\tmetric\tmeasured"
)


def _train(
    run_cli: Any, tmp_path: Path, *cells: str, source: str = "torchtitan 2025"
) -> list[dict[str, Any]]:
    lines = [f"T{i}\ttrain\t{source}\t{row}" for i, row in enumerate(cells, 1)]
    return cli_rows(run_cli, tmp_path, TRAIN_HEADER, *lines)


# Llama 3.1 70B, 8K sequences, micro-batch 2 on 64 H100 with FSDP over all of them
_FSDP_RUN = "Llama 3.1 70B\t8192\t{gbs}\t2\t1\t{pp}\t\t{dp}\tFSDP=64\t64\tH100 SXM\tbf16\t{metric}\t{value}"


def test_a_rate_without_its_global_batch_takes_one_micro_batch_per_rank(run_cli: Any, tmp_path: Path) -> None:
    # per-GPU throughput without PP barely depends on the global batch: taken as micro-batch x DP
    (unstated, stated) = _train(
        run_cli,
        tmp_path,
        _FSDP_RUN.format(gbs="n/r", pp=1, dp="", metric="tokens/s/GPU", value=400),
        _FSDP_RUN.format(gbs=128, pp=1, dp="", metric="tokens/s/GPU", value=400),
    )
    assert unstated["status"] == "ok", unstated["reason"]
    assert any("global batch not reported: taken as 128" in line for line in unstated["assumptions"])
    assert unstated["predicted"] == pytest.approx(stated["predicted"], rel=1e-9)


def test_an_assumed_global_batch_keeps_an_unstated_pp_at_one(run_cli: Any, tmp_path: Path) -> None:
    # the assumption holds without pipeline parallelism only: a PP the row leaves empty is not
    # searched (a pipelined split's bubble would hang on the assumed batch); nor is the micro-batch
    # needed then: the largest searched sets the batch
    (row,) = _train(
        run_cli,
        tmp_path,
        _FSDP_RUN.format(gbs="n/r", pp="", dp="", metric="MFU", value="40%").replace(
            "\t2\t1\t\t", "\t\t1\t\t"
        ),
    )
    assert row["status"] == "ok", row["reason"]
    assert row["plan"]["pp"] == 1
    assert any("micro-batch not reported" in line for line in row["assumptions"])


def test_a_global_batch_the_figure_depends_on_is_still_asked_for(run_cli: Any, tmp_path: Path) -> None:
    step, piped, no_micro = _train(
        run_cli,
        tmp_path,
        # a step time scales with the batch
        _FSDP_RUN.format(gbs="n/r", pp=1, dp="", metric="step time (s)", value=10),
        # with PP the bubble depends on the number of micro-batches
        _FSDP_RUN.format(gbs="n/r", pp=4, dp="", metric="tokens/s/GPU", value=400).replace("FSDP=64", "DDP"),
        # no micro-batch either
        _FSDP_RUN.format(gbs="n/r", pp=1, dp="", metric="tokens/s/GPU", value=400).replace(
            "\t2\t1\t1\t", "\t\t1\t1\t"
        ),
    )
    assert "step_time_s scales with it" in step["reason"]
    assert "pipeline parallelism (PP 4)" in piped["reason"]
    assert no_micro["status"] == "ok", no_micro["reason"]  # the largest micro-batch searched sets it


def test_an_unlabelled_token_rate_too_low_for_the_job_is_one_gpus(run_cli: Any, tmp_path: Path) -> None:
    # torchtitan's async-TP table: 'Vanilla TP tokens/sec 597.3' on 256 H100 training Llama 3 70B;
    # over the job that is 0.1% of the GPUs' BF16 peak, on one GPU 26%
    row = "Llama 3 70B\t8192\t512\t16\t8\t1\t\t32\tFSDP=32\t256\tH100 SXM\tbf16\t{metric}\t597.3"
    bare, total = _train(
        run_cli, tmp_path, row.format(metric="Vanilla TP tokens/sec"), row.format(metric="total tokens/sec")
    )
    assert bare["reading"]["key"] == "tokens_per_s_per_gpu"
    assert any("read per GPU" in note for note in bare["reading"]["notes"])
    assert -0.6 < bare["rel_error"] < 1.0  # a job-level reading was off by about 300x
    # said to be the job's: 597.3 / 256 x 6 x 70.6e9 = 0.99 TFLOP/s a GPU, 0.05% of its peak, so the
    # "total" is refused as far too slow, naming what one GPU's figure would be
    assert total["status"] == "error"
    assert "(256x: 12.8% of peak)" in total["reason"]


def test_maxtexts_fsdp_axis_beside_its_dp_axis(run_cli: Any, tmp_path: Path) -> None:
    # JAX-Toolbox's MaxText table: DP 1 and FSDP 8 on 8 GPUs is data parallelism over all 8
    cells = "Llama 2 7B\t4096\t16\t2\t1\t\t\t1\tFSDP 8\t8\tH100 SXM\tBF16\tStep Time (s)\t0.721"
    (row,) = _train(run_cli, tmp_path, cells)
    assert row["status"] == "ok", row["reason"]
    assert row["plan"]["dp"] == 8
    assert row["plan"]["zero"] == 3


def _infer(run_cli: Any, tmp_path: Path, *cells: str) -> list[dict[str, Any]]:
    return infer_cli_rows(run_cli, tmp_path, "vLLM v0.19.1 blog 2026", *cells)


def test_approximate_lengths_are_read(run_cli: Any, tmp_path: Path) -> None:
    # vLLM's FP8 KV-cache blog: '150 requests, ~20k input tokens / ~2k output tokens'; the output
    # length had been missed and every request read as a 20k-token prompt ending at its first token
    approximate, exact = _infer(
        run_cli,
        tmp_path,
        "Llama-3.1-8B\t150 requests, ~20k input tokens / ~2k output tokens\tconcurrency 8\t1\t1\tH100\tBF16"
        "\tMedian TTFT (ms)\t763.6",
        "Llama-3.1-8B\t150 requests, input 20k tokens, output 2k tokens\tconcurrency 8\t1\t1\tH100\tBF16"
        "\tMedian TTFT (ms)\t763.6",
    )
    assert approximate["status"] == "ok", approximate["reason"]
    assert approximate["predicted"] == pytest.approx(exact["predicted"], rel=1e-9)
    assert approximate["plan"]["mean_running"] > 4  # eight users decoding, not prompts queued one by one


def test_a_first_token_latency_under_load_needs_the_output_length(run_cli: Any, tmp_path: Path) -> None:
    loaded, alone = _infer(
        run_cli,
        tmp_path,
        "Llama-3.1-8B\tinput 2048 tokens\tconcurrency 8\t1\t1\tH100\tBF16\tTTFT (ms)\t150",
        "Llama-3.1-8B\tinput 2048 tokens\tbatch 1\t1\t1\tH100\tBF16\tTTFT (ms)\t150",
    )
    assert loaded["status"] != "ok"
    assert "no output length" in loaded["reason"]
    assert alone["status"] == "ok", alone["reason"]  # alone, the first token is all it times


@pytest.mark.parametrize("load", ["min-latency, single concurrency", "single user", "concurrency of 1"])
def test_one_request_at_a_time_said_in_words(run_cli: Any, tmp_path: Path, load: str) -> None:
    said, numeric = _infer(
        run_cli,
        tmp_path,
        f"Llama-3.1-8B\tISL/OSL 1000/1000\t{load}\t1\t1\tH100\tFP8\ttokens/s/user\t150",
        "Llama-3.1-8B\tISL/OSL 1000/1000\tconcurrency 1\t1\t1\tH100\tFP8\ttokens/s/user\t150",
    )
    assert said["status"] == "ok", said["reason"]
    assert said["predicted"] == pytest.approx(numeric["predicted"], rel=1e-9)


def test_names_as_these_sources_write_them(models: ModelRegistry) -> None:
    assert models.matches("DeepSeek-R1-671B") == ["deepseek-v3"]
    # the hybrid Mamba-2 Nemotrons as Megatron-Bridge and NVIDIA's model ids write them
    written = {
        "Nemotron_3_Nano": "nemotron-3-nano-30b-a3b",
        "Nemotron-3-Super-120B-A12B-NVFP4": "nemotron-3-super-120b-a12b",
        "Nemotron_3_Super": "nemotron-3-super-120b-a12b",
        "Nemotron_3_5_Lightning": "nemotron-3.5-lightning-30b-a3b",
    }
    for name, model in written.items():
        assert models.matches(name) == [model], name
        assert models.unsupported_model(name) is None, name
    # Ultra's shapes are in no source lightspeed cites: refused, never matched to Super
    ultra = models.unsupported_model("Nemotron_3_Ultra")
    assert ultra is not None
    assert "no source lightspeed cites" in ultra.reason


def test_megatron_counts_the_embedding_and_the_loss_as_pipeline_chunks(run_cli: Any, tmp_path: Path) -> None:
    # Megatron-Bridge's Llama 3.1 405B on 256 GB200: PP 16 x VP 8 = 128 chunks for 126 layers
    # (--account-for-embedding-in-pipeline-split, --account-for-loss-in-pipeline-split)
    row = "LLAMA3.1_405B\t8192\t1536\t1\t4\t16\t{vpp}\t\tn/r\t256\tDGX-GB200\tFP8\tTokens / sec / GPU\t793"
    source = "NVIDIA-NeMo/Megatron-Bridge performance summary, 26.06 NeMo Container"
    fits, beyond = _train(run_cli, tmp_path, row.format(vpp=8), row.format(vpp=9), source=source)
    assert fits["status"] == "ok", fits["reason"]
    assert (fits["plan"]["pp"], fits["plan"]["vpp"]) == (16, 8)
    assert beyond["status"] != "ok"
    assert "144 pipeline chunks exceed" in beyond["reason"]


def test_plain_tp_on_a_page_about_async_tp(run_cli: Any, tmp_path: Path) -> None:
    # torchtitan's benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md compares the two: its
    # 'Vanilla TP tokens/sec' runs without the overlap its file name announces
    source = "pytorch/torchtitan benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md"
    row = "Llama 3 8B\t8192\t96\t12\t8\t\t\t\tFSDP=8\t64\tH100 SXM\tbf16\t{metric}\t4378"
    plain, overlapped = _train(
        run_cli,
        tmp_path,
        row.format(metric="Vanilla TP tokens/sec"),
        row.format(metric="Async TP tokens/sec"),
        source=source,
    )
    assert any("TP overlap False" in line for line in plain["assumptions"])
    assert any("TP overlap True" in line for line in overlapped["assumptions"])
    assert plain["predicted"] < overlapped["predicted"]


@pytest.mark.parametrize(
    ("cell", "policy"),
    [
        # MaxText's and JAX's remat policies: the ones that save the matmuls recompute the rest
        ("minimal_flash (Remat Policy); Scan Off; Attention Flash", "selective"),
        ("remat_policy save_dot_except_mlpwi", "selective"),
        ("remat_policy custom (decoder_layer_input, q/k/v proj offloaded to host)", "selective"),
        ("remat_policy: nothing_saveable", "full"),
        ("remat_policy=full", "full"),
        ("remat_policy=everything_saveable", "none"),
    ],
)
def test_jax_remat_policies(run_cli: Any, tmp_path: Path, cell: str, policy: str) -> None:
    # they had all read as full recomputation ('remat' alone is checkpointing without a policy)
    row = "Llama 2 7B\t4096\t16\t2\t1\t1\t\t8\tFSDP=8\t8\tH100 SXM\tbf16\tStep Time (s)\t0.721"
    path = tmp_path / "rows.tsv"
    path.write_text(f"{TRAIN_HEADER}\trecompute\nT1\ttrain\tMaxText 2024\t{row}\t{cell}\n", encoding="utf-8")
    result = run_cli("validate", str(path), "--json")
    assert result.code == 0, result.err
    (read,) = json.loads(result.out)["rows"]
    assert read["plan"]["recompute"] == policy


def test_a_model_named_by_its_framework_or_its_architecture(models: ModelRegistry) -> None:
    from lightspeed.sol.validation.row_model import architecture_named

    # dgxc-benchmarking's 'Maxtext Llama3 70b'; the PyTorch FSDP blog's 'LlamaT 7B (Llama 2 7B
    # architecture)'; a parenthesis that names a framework names no architecture
    assert architecture_named(models, "Maxtext Llama3 70b")[1] == models.entry("llama-3-70b")
    assert architecture_named(models, "LlamaT 7B (Llama 2 7B architecture)")[1] == models.entry("llama-2-7b")
    assert architecture_named(models, "Foo 7B (MaxText)")[1] is None


def test_a_model_built_from_its_dimensions_keeps_what_its_cells_say(run_cli: Any, tmp_path: Path) -> None:
    # NeMo's '64 (8 query groups)' is 8 KV heads; an FFN cell saying SwiGLU is a Llama-style block
    # even with as many KV heads as heads (Llama 2 7B); the 70B-shaped block takes 10 s a step (16 x
    # 4096 tokens x ~4.6e11 FLOP/token / 8 GPUs / 10 s = 377 TFLOP/s per GPU: a step of 1 s would be
    # above an H100's fastest peak and refused)
    header = f"{TRAIN_HEADER}\tlayers\thidden\theads(kv)\tffn\tvocab"
    rows = [
        "T1\ttrain\tNeMo 2024\tBlock A\t4096\t16\t2\t1\t1\t\t8\tFSDP=8\t8\tH100 SXM\tbf16\tStep Time (s)"
        "\t10.0\t80\t8192\t64 (8 query groups)\t28672\t128256",
        "T2\ttrain\tNeMo 2024\tBlock B\t4096\t16\t2\t1\t1\t\t8\tFSDP=8\t8\tH100 SXM\tbf16\tStep Time (s)\t1.0"
        "\t32\t4096\t32 (32 kv)\t11008 (SwiGLU)\t32000",
    ]
    path = tmp_path / "rows.tsv"
    path.write_text("\n".join((header, *rows)) + "\n", encoding="utf-8")
    result = run_cli("validate", str(path), "--json")
    assert result.code == 0, result.err
    grouped, swiglu = json.loads(result.out)["rows"]
    assert any("(swiglu, gqa)" in line for line in grouped["assumptions"])
    assert any("(swiglu, mha)" in line for line in swiglu["assumptions"])


def test_a_latency_written_as_a_token_rate_is_one_requests_speed() -> None:
    from lightspeed.sol.validation.readings import read_cell

    # an SGLang sweep on 8 B200: 'Latency tok/s (c=1); TPOT (c=1) (ms)' = '145; 6.70' (1000 / 6.70 is
    # 149 tokens/s): the first piece had read as a request latency of 145 s
    speed, tpot = read_cell("Latency tok/s (c=1); TPOT (c=1) (ms)", "145; 6.70", kind="infer")
    assert (speed.key, speed.value) == ("output_tokens_per_s_per_user", 145.0)
    assert (tpot.key, tpot.value) == ("tpot_s", pytest.approx(0.0067))
    (latency,) = read_cell("Mean latency (ms)", "2077.5", kind="infer")
    assert (latency.key, latency.value) == ("request_latency_s", pytest.approx(2.0775))


def test_a_second_round_of_cells(run_cli: Any, tmp_path: Path, models: ModelRegistry) -> None:
    from lightspeed.sol.validation.readings import read_cell

    # Fast-LLM counts its micro-batch in tokens ('8k tokens' of 4,096-token sequences is 2) and
    # scopes its rate by the part ('tokens/s/H100'); MaxText's FSDP axis of -1 takes every chip the
    # other axes leave ('DP 1 slice' with 'ici_fsdp_parallelism=-1' on 256 chips is DP 256)
    (per_part,) = read_cell("throughput (tokens/s/H100)", "10,350", kind="train")
    assert per_part.key == "tokens_per_s_per_gpu"
    (step,) = read_cell("Time per Global Step (s)", "21.773", kind="train")  # NeMo Automodel
    assert (step.key, step.value) == ("step_time_s", 21.773)
    assert models.matches("Qwen3 MoE 30B") == ["qwen3-30b-a3b"]
    rows = [
        "Mistral-7B\t4096\t256k tokens\t8k tokens\t1\t1\t\t32\tZeRO stage 2\t32\tH100 SXM\tbf16"
        "\tthroughput (tokens/s/H100)\t10350",
        "Llama 2 7B\t2048\t1024\t4 (per_device_batch_size)\t1\t1\t\t1 slice\tici_fsdp_parallelism=-1\t256"
        "\tTPU v5e\tbfloat16\tTFLOP/sec/chip\t132",
    ]
    fast_llm, maxtext = _train(run_cli, tmp_path, *rows, source="2024 benchmark")
    assert fast_llm["status"] == "ok", fast_llm["reason"]
    assert fast_llm["plan"]["micro_batch"] == 2
    assert maxtext["status"] == "ok", maxtext["reason"]
    assert maxtext["plan"]["dp"] == 256


@pytest.mark.parametrize(
    ("load", "read"),
    [
        ("1000 prompts, request rate inf", False),  # all at once: the longest replies end the run
        ("1000 prompts, concurrency 1000", False),  # every request in flight from the start
        ("1000 prompts, concurrency 16", True),  # a closed loop: the mean request sets the rate
    ],
)
def test_a_dataset_sent_at_once_needs_its_lengths(
    run_cli: Any, tmp_path: Path, load: str, read: bool
) -> None:
    # GPUStack's performance lab: ShareGPT, 1,000 prompts and no concurrency cap, whole-run output
    # tokens/s; its means (202 / 179 tokens) leave out the long replies that end such a run (the
    # fixed-length simulation was +62..+131%)
    (row,) = _infer(
        run_cli,
        tmp_path,
        f"Qwen3-8B\tShareGPT\t{load}\t1\t1\tH100\tBF16\tOutput token throughput (tok/s)\t900",
    )
    assert (row["status"] == "ok") is read, row["reason"]
    if not read:
        assert "longest replies" in row["reason"]


def test_a_third_round_of_cells(run_cli: Any, tmp_path: Path) -> None:
    from lightspeed.sol.validation.readings import read_cell

    # Megatron-LM 2019: 'sustained PetaFLOPs across the entire application', 'TeraFLOPs sustained'
    (peta,) = read_cell("sustained PetaFLOPs across the entire application (aggregate)", "15.1", kind="train")
    (tera,) = read_cell("TeraFLOPs sustained over the overall training process", "39", kind="train")
    assert (peta.key, tera.key) == ("pflop_per_s", "tflop_per_s_per_gpu")
    # BloombergGPT: '4 model copies' of a 'ZeRO stage 3 over 128 GPUs' shard group on 512 GPUs
    # (MiCS) is data parallelism over all 512
    row = (
        "GPT-3 175B\t2048\t2048\t1\t\t\t\t4 model copies\tZeRO stage 3 over 128 GPUs\t512\tA100 40GB\tbf16"
        "\tTFLOPs\t102"
    )
    (read,) = _train(run_cli, tmp_path, row, source="2023 paper")
    assert read["status"] == "ok", read["reason"]
    assert (read["plan"]["dp"], read["plan"]["zero"]) == (512, 3)


def test_shared_load_and_sharding_readers(run_cli: Any, tmp_path: Path) -> None:
    from lightspeed.sol.validation.train_settings import zero_stage_of

    # one concurrency reader for the load and the first-token guard: '1,000' users is a number
    (row,) = _infer(
        run_cli,
        tmp_path,
        "Llama-3.1-8B\tinput 2048 tokens\tconcurrency 1,000\t1\t1\tH100\tBF16\tTTFT (ms)\t150",
    )
    assert "no output length" in row["reason"]
    # one FSDP-degree reader: 'FSDP 0' is off like 'FSDP=0'; 'FSDP2' names FSDP's version, not 2
    assert zero_stage_of("FSDP 0")[0] == zero_stage_of("FSDP=0")[0] == 1
    assert zero_stage_of("FSDP2 full shard")[0] == 3
    cells = "Llama 2 7B\t4096\t16\t2\t1\t1\t\t4\tFSDP2 full shard\t8\tH100 SXM\tbf16\tStep Time (s)\t0.7"
    (fsdp2,) = _train(run_cli, tmp_path, cells)
    assert "not the 8 GPUs" in fsdp2["reason"]  # DP 4 on 8 GPUs: the version is no FSDP axis


@pytest.mark.parametrize("micro", ["0", "0 tokens", "99999999999999999999", "99999999999999999999 tokens"])
def test_a_micro_batch_out_of_range_is_refused(run_cli: Any, tmp_path: Path, micro: str) -> None:
    # with the global batch unreported the micro-batch sets it: 1e20 sequences had been predicted,
    # and 0 read as unreported
    row = _FSDP_RUN.format(gbs="n/r", pp=1, dp="", metric="tokens/s/GPU", value=400).replace(
        "\t2\t1\t1\t", f"\t{micro}\t1\t1\t"
    )
    (read,) = _train(run_cli, tmp_path, row)
    assert read["status"] != "ok"
    assert "write a whole number from 1 to 65,536" in read["reason"]
