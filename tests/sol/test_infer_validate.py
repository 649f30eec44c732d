"""Published inference rows: every row read by the documented rules, predicted, and the error target met."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lightspeed.catalog import Catalog
from lightspeed.sol import inference_predictor, validate_published
from lightspeed.sol.validation.infer_predict import InferenceRowSetup, inference_row_setup
from lightspeed.sol.validation.infer_rows import _load, _metric
from lightspeed.sol.validation.published import PublishedRow, RowError, read_table
from lightspeed.workload import ModelRegistry

HEADER = "id\tkind\tsource\tmodel\tseq\tglobal_batch\tTP\tPP\tGPUs\thardware\tprecision\tmetric\tmeasured"


def _table(tmp_path: Path, *rows: str) -> Path:
    path = tmp_path / "rows.tsv"
    path.write_text("\n".join([HEADER, *rows]) + "\n", encoding="utf-8")
    return path


SetupsOf = Callable[..., dict[str, InferenceRowSetup]]


@pytest.fixture
def setups_of(tmp_path: Path, catalog: Catalog, models: ModelRegistry) -> SetupsOf:
    """Reads rows (under ``header``, default :data:`HEADER`) into their inference setups, by id."""

    def read(*rows: str, header: str = HEADER) -> dict[str, InferenceRowSetup]:
        path = tmp_path / "setups.tsv"
        path.write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
        return {row.row_id: inference_row_setup(row, catalog, models)[0] for row in read_table(path)}

    return read


def test_published_inference_rows_meet_the_target(
    shared: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    report = validate_published(
        path=shared / "validation" / "published-dev.tsv",
        catalog=catalog,
        models=models,
        infer=inference_predictor(),
    )
    rows = {row.id: row for row in report.rows if row.kind == "infer"}
    assert len(rows) == 7
    assert all(row.status == "ok" for row in rows.values()), [row.reason for row in rows.values()]
    summary = report.summary["infer"]
    assert summary.n == 7
    assert summary.num_not_predicted == 0
    assert summary.median_abs_error is not None
    assert summary.median_abs_error <= 0.15
    # I14 is a latency in seconds (120.5 ms), I13 a per-GPU rate; the others are totals.
    assert rows["I14"].metric == "ttft_s"
    assert rows["I14"].measured == pytest.approx(0.1205)
    assert rows["I13"].metric == "output_tokens_per_s_per_gpu"
    assert rows["I4"].plan is not None
    assert rows["I4"].plan["tp"] == 2


def test_rows_are_read_by_the_documented_rules(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    path = _table(
        tmp_path,
        "R1\tinfer\tx 2025\tLLaMA 70B\tISL/OSL 128/128\tbatch 64\t4\t1\t4\tH100\tFP8\toutput tokens/s\t3,000",
        "R2\tinfer\tx\tLlama 3.3 70B\tISL/OSL 1000/1000\toffline, max concurrency (n/r)\t1\t1\t1\tB200\tFP4"
        "\ttotal output tokens/s\t7,000",
        "R3\tinfer\tx\tLlama 3.1 8B\tISL/OSL 2,000/500\tconcurrency 32\t1\t1\t8\tH100\tFP8\ttok/s/GPU\t1,000",
        "R4\tinfer\tx\tLlama 3.1 8B\t4096-token prefill\tn/r\t1\t1\t1\tMI300X\tFP4\tTTFT\t80 ms",
    )
    rows = {row.row_id: row for row in read_table(path)}
    r1, _ = inference_row_setup(rows["R1"], catalog, models)
    assert (
        r1.model.name == "llama-2-70b"
    )  # not in the registry by that name: earliest generation holding its words
    assert (r1.batching, r1.load.concurrency, r1.plan.tp, r1.plan.replicas) == ("static", 64, 4, 1)
    r2, _ = inference_row_setup(rows["R2"], catalog, models)
    assert r2.plan.precision == "nvfp4"
    assert r2.load.offline
    assert r2.batching == "continuous"
    r3, _ = inference_row_setup(rows["R3"], catalog, models)
    assert (r3.load.input_tokens, r3.load.output_tokens, r3.load.concurrency) == (2000, 500, 32)
    assert r3.plan.replicas == 8
    assert r3.metric == "output_tokens_per_s_per_gpu"
    r4, _ = inference_row_setup(rows["R4"], catalog, models)
    assert (r4.load.input_tokens, r4.load.output_tokens) == (4096, 1)
    assert r4.plan.precision == "mxfp4"
    assert r4.metric == "ttft_s"
    assert r4.measured == pytest.approx(0.08)


def test_checkpoint_words_do_not_hide_the_architecture(setups_of: SetupsOf) -> None:
    # Sources name checkpoints ("... FP8", "... Instruct"); the words that name a format or a tuning
    # are not part of the architecture's name.
    setups = setups_of(
        "M1\tinfer\tx\tLlama 4 Maverick FP8\tISL/OSL 1024/1024\tconcurrency 64\t8\t1\t8\tB200\tFP8"
        "\ttotal output tokens/s\t10,000",
        "M2\tinfer\tx\tQwen3 Coder 480B Instruct\tISL/OSL 1024/1024\tconcurrency 64\t8\t1\t8\tB200\tFP8"
        "\ttotal output tokens/s\t10,000",
    )
    assert (setups["M1"].model.name, setups["M2"].model.name) == ("llama-4-maverick", "qwen3-coder-480b-a35b")


@pytest.mark.parametrize(
    ("lengths", "expected"),
    [
        ("ISL 128 OSL 2048", (128, 2048)),
        ("ISL=1,024, OSL=512", (1024, 512)),
        ("input 1024 output 512", (1024, 512)),
        ("input length 8192 / output length 1024", (8192, 1024)),
        ("input sequence length 3200, output sequence length 800", (3200, 800)),
        ("1024 input / 512 output tokens", (1024, 512)),
        ("128 input tokens and 2048 output tokens", (128, 2048)),
        ("1k in, 2k out", (1024, 2048)),
        ("2000-token prompts, 200 output tokens", (2000, 200)),
        ("128/2048 (ISL/OSL)", (128, 2048)),
        ("(ISL/OSL) 1k/1k", (1024, 1024)),
        # a sequence cell holding only a pair is ISL/OSL, as every serving benchmark orders them
        ("1k/1k", (1024, 1024)),
        ("8192 / 1024 tokens", (8192, 1024)),
        ("prompt 512 tokens, 256 generated", (512, 256)),
        ("input 128, max_new_tokens 64", (128, 64)),
    ],
)
def test_lengths_said_one_at_a_time(setups_of: SetupsOf, lengths: str, expected: tuple[int, int]) -> None:
    # Sources write the two lengths separately, label before or after the number.
    setup = setups_of(
        f"L1\tinfer\tx\tLlama 3.1 8B\t{lengths}\tconcurrency 16\t1\t1\t1\tH100\tFP8\toutput tokens/s\t5,000"
    )["L1"]
    assert (setup.load.input_tokens, setup.load.output_tokens, setup.load.concurrency) == (*expected, 16)


def test_lengths_in_different_cells_are_not_paired(setups_of: SetupsOf) -> None:
    # "input 2000 tokens" in one cell and "output tokens/s" in the metric are a decode pool's
    # context and its metric, not an ISL/OSL pair.
    setup = setups_of(
        "L2\tinfer\tsglang blog\tDeepSeek-R1\tinput 2000 tokens\tsaturated decode\t1 (DP attention)\t1"
        "\t16\tH200\tFP8\toutput tokens/s per GPU\t1,000"
    )["L2"]
    assert (setup.batching, setup.load.input_tokens, setup.load.output_tokens) == ("decode", 2000, 1)


@pytest.mark.parametrize(
    ("load", "metric", "expected"),
    [
        ("max concurrency 256", "Output Throughput (tok/s)", (256, "output_tokens_per_s")),
        ("conc=64", "TPS/GPU", (64, "output_tokens_per_s_per_gpu")),
        ("64 users", "Interactivity (tok/s/user)", (64, "output_tokens_per_s_per_user")),
        ("c=32", "E2E latency (s)", (32, "request_latency_s")),
        ("concurrency: 128", "TTFT P99 (ms)", (128, "ttft_s")),
        ("16 concurrent clients", "TPS per user", (16, "output_tokens_per_s_per_user")),
        ("Concurrent 8 (400 prompts)", "Output tok/s", (8, "output_tokens_per_s")),  # Vultr's cookbook
    ],
)
def test_loads_and_metrics_as_serving_tables_write_them(
    setups_of: SetupsOf, load: str, metric: str, expected: tuple[int, str]
) -> None:
    # vLLM's --max-concurrency N is N in flight (a bare "max concurrency" is the most load);
    # "TPS" is tokens per second; "N users" are closed-loop users.
    setup = setups_of(
        f"C1\tinfer\tvllm\tLlama 3.1 70B\tISL/OSL 1024/1024\t{load}\t4\t1\t4\tH100\tFP8\t{metric}\t100"
    )["C1"]
    assert (setup.load.concurrency, setup.metric) == expected
    assert setup.batching == "continuous"


@pytest.mark.parametrize(
    ("hardware", "gpus"), [("4x H100 SXM", 4), ("8×H100", 8), ("8xH100 80GB", 8), ("2x DGX H100", 16)]
)
def test_a_missing_gpu_count_is_read_from_the_hardware_cell(
    setups_of: SetupsOf, hardware: str, gpus: int
) -> None:
    # Sources write the count before the part and leave no GPUs column; a count of systems
    # counts their GPUs.
    setup = setups_of(
        f"G1\tinfer\tx\tLlama 3.1 70B\tISL/OSL 1024/1024\tconcurrency 8\t4\t1\t\t{hardware}\tFP8"
        "\toutput tokens/s\t3,000"
    )["G1"]
    assert setup.plan.num_gpus == gpus
    assert any("GPUs from the hardware cell" in note for note in setup.assumptions)


def test_a_row_with_no_gpu_count_anywhere_says_where_to_give_it(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    path = _table(
        tmp_path,
        "G2\tinfer\tx\tLlama 3.1 70B\tISL/OSL 1024/1024\tconcurrency 8\t4\t1\t\tH100 SXM\tFP8"
        "\toutput tokens/s\t3,000",
    )
    (row,) = read_table(path)
    with pytest.raises(RowError, match=r"GPUs column.*hardware cell"):
        inference_row_setup(row, catalog, models)


def test_a_throughput_without_a_stated_load_is_the_servers_most_load(setups_of: SetupsOf) -> None:
    # Throughput tables (trtllm-bench, vLLM's throughput benchmark) publish the server at load; a
    # per-user speed or a latency with no load stated is one request at a time; a stated request
    # rate stays an open loop.
    setups = setups_of(
        "T1\tinfer\tx\tLlama 3.3 70B\tISL 128 OSL 2048\t\t2\t1\t2\tH200\tFP8\tThroughput (tokens/sec/GPU)"
        "\t3,900",
        "T2\tinfer\tx\tLlama 3.3 70B\tISL 128 OSL 2048\t\t2\t1\t2\tH200\tFP8\toutput tokens/s/user\t40",
        "T3\tinfer\tx\tLlama 3.3 70B\tISL 128 OSL 2048\t\t2\t1\t2\tH200\tFP8\tTTFT (ms)\t60",
        "T4\tinfer\tx\tLlama 3.3 70B\tISL 128 OSL 2048\trequest rate 4\t2\t1\t2\tH200\tFP8"
        "\toutput tokens/s\t1,000",
    )
    assert (setups["T1"].batching, setups["T1"].load.concurrency) == ("continuous", None)
    assert setups["T1"].simulation is None
    assert setups["T2"].load.concurrency == 1
    assert setups["T3"].load.concurrency == 1
    assert setups["T4"].load.arrival_rate_per_s == pytest.approx(4.0)


def test_decode_pools_max_throughput_and_attention_dp_over_the_ep_group(setups_of: SetupsOf) -> None:
    # "saturated decode" in the batch cell is a decode pool even when the metric does not say so;
    # "max throughput" is the offline maximum load; SGLang's --dp-size = --ep-size with a TP cell
    # of 1 and no DP cell is one attention group per GPU of the EP group.
    setups = setups_of(
        "D1\tinfer\tsglang blog\tDeepSeek-R1\tinput 4096 tokens\tsaturated decode\t1 (DP attention)\t1"
        "\t16\tH200\tFP8\toutput tokens/s per GPU\t1,000",
        "D2\tinfer\tx\tLlama 3.1 8B\tISL/OSL 1024/2048\tmax throughput (n/r)\t1\t1\t1\tH100\tFP8"
        "\toutput tokens/s\t10,000",
    )
    ep_setup = setups_of(
        "D3\tinfer\tsglang blog\tDeepSeek-R1\tinput 4096 tokens\tsaturated decode"
        "\t1 (DP attention)\t1\t16\t16\tH200\tFP8\toutput tokens/s per GPU\t1,000",
        header=HEADER.replace("\tGPUs", "\tEP\tGPUs"),
    )["D3"]
    assert setups["D1"].batching == "decode"
    assert (setups["D1"].load.input_tokens, setups["D1"].load.output_tokens) == (4096, 1)
    assert (setups["D2"].batching, setups["D2"].load.concurrency) == ("continuous", None)
    assert (ep_setup.plan.tp, ep_setup.plan.ep, ep_setup.plan.dp_attention) == (1, 16, 16)


def test_prefill_pools_are_read_as_prompts_ending_at_their_first_token(setups_of: SetupsOf) -> None:
    # SGLang's large-EP posts give the prefill side as input tokens/s per node for 2,000-token
    # prompts: a prompt-only load, measured per GPU after the per-node conversion.
    setups = setups_of(
        "P1\tinfer\tsglang blog\tDeepSeek-V3\tinput 2000 tokens (prefill phase)\tsaturated prefill"
        "\t1 (DP attention)\t1\t32\tH100\tFP8\tinput tokens/s per node (8 GPUs), prefill\t52,300",
    )
    prefill = setups["P1"]
    assert (prefill.load.input_tokens, prefill.load.output_tokens, prefill.batching) == (
        2000,
        1,
        "continuous",
    )
    assert prefill.metric == "input_tokens_per_s_per_gpu"  # the prompts' side of the token rate
    assert prefill.measured == pytest.approx(52300 / 8)


def test_unreadable_rows_are_reported_with_a_reason(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    path = _table(
        tmp_path,
        "E1\tinfer\tx\tLlama 3.1 8B\tshort prompts\tn/r\t1\t1\t1\tH100\tFP8\toutput tokens/s\t100",
        "E2\tinfer\tx\tLlama 3.1 8B\tISL/OSL 10/10\tn/r\t1\t1\t1\tH100\tFP8\tjoules per token\t1",
        "E3\tinfer\tx\tLlama 3 405B\tISL/OSL 1000/1000\tn/r\t1\t1\t1\tA100\tbf16\toutput tokens/s\t100",
    )
    report = validate_published(path=path, catalog=catalog, models=models, infer=inference_predictor())
    reasons = {row.id: row.reason for row in report.rows}
    assert all(row.status == "error" for row in report.rows)
    assert "ISL/OSL" in reasons["E1"]
    assert "metric" in reasons["E2"]
    assert "does not fit" in reasons["E3"]


@settings(max_examples=50, deadline=None)
@given(isl=st.integers(1, 10**6), osl=st.integers(1, 10**5), batch=st.integers(1, 4096))
def test_load_cells_round_trip(isl: int, osl: int, batch: int) -> None:
    cells = {"seq": f"ISL/OSL {isl:,}/{osl}", "global_batch": f"bs{batch}", "metric": "output tok/s"}
    load, batching, *_ = _load(PublishedRow(row_id="P", kind="infer", line=2, cells=cells))
    assert (load.input_tokens, load.output_tokens, load.concurrency, batching) == (isl, osl, batch, "static")


@pytest.mark.parametrize(
    ("metric", "measured", "key", "value"),
    [
        ("Per User Output Throughput (tokens/sec/user)", "21.5", "output_tokens_per_s_per_user", 21.5),
        ("Total Token Throughput (tokens/sec)", "94,022", "total_tokens_per_s", 94022.0),
        ("Request Throughput (req/sec)", "43.2", "requests_per_s", 43.2),
        ("Average request latency", "75,903 ms", "request_latency_s", 75.903),
        ("ITL", "850 us", "itl_s", 850e-6),
        ("Output tokens/s per GPU", "1,200", "output_tokens_per_s_per_gpu", 1200.0),
    ],
)
def test_metrics_are_read_with_their_units(metric: str, measured: str, key: str, value: float) -> None:
    row = PublishedRow(row_id="M", kind="infer", line=2, cells={"metric": metric, "measured": measured})
    reading = _metric(row)
    assert (reading.key, reading.value) == (key, pytest.approx(value))


@pytest.mark.parametrize(
    ("seq", "batch", "expected"),
    [
        ("input/output 32k/1k", "n/r", (32768, 1024, 1, "continuous")),
        ("ISL/OSL 2048/128", "batch size 32", (2048, 128, 32, "static")),
        ("ISL/OSL 2048/128", "64 concurrent users", (2048, 128, 64, "continuous")),
        ("ISL/OSL 2048/128", "max load", (2048, 128, None, "continuous")),
    ],
)
def test_load_cells_in_their_other_spellings(seq: str, batch: str, expected: tuple[object, ...]) -> None:
    row = PublishedRow(row_id="L", kind="infer", line=2, cells={"seq": seq, "global_batch": batch})
    load, batching, *_ = _load(row)
    assert (load.input_tokens, load.output_tokens, load.concurrency, batching) == expected


def test_attention_data_parallel_rows_split_attention_over_the_tp_ranks(setups_of: SetupsOf) -> None:
    setup = setups_of(
        "A1\tinfer\tx (enable_attention_dp)\tMixtral 8x7B\tISL/OSL 1000/1000\toffline\t8\t1\t8\tH100\tFP8"
        "\toutput tokens/s\t10,000",
    )["A1"]
    assert (setup.plan.tp, setup.plan.dp_attention, setup.plan.replicas) == (1, 8, 1)


@pytest.mark.parametrize(
    ("precision", "kv"),
    [
        ("FP8 weights, bf16/FP16 KV cache", "bf16"),
        ("FP8 weights, FP8 KV", "fp8"),
        ("FP8, fp8 kvcache", "fp8"),
        ("FP8 GEMMs (Blackwell DeepGEMM), bf16 attention (inferred)", "bf16"),
        ("FP8 block (DeepSeek native) GEMMs, bf16 MLA", "bf16"),
        ("FP8 GEMMs with attention in fp8", "fp8"),
        ("FP8", None),
    ],
)
def test_the_attention_format_a_precision_cell_names_is_the_kv_cache_format(
    setups_of: SetupsOf, precision: str, kv: str | None
) -> None:
    # Attention kernels read the cache in the format they compute in: "bf16 attention" or "bf16
    # MLA" beside FP8 GEMMs is a bf16 cache and bf16 attention math, not FP8 throughout.
    setup = setups_of(
        f"K1\tinfer\tx\tDeepSeek-R1\tISL/OSL 1024/1024\tconcurrency 64\t8\t1\t8\tH200\t{precision}"
        "\ttotal output tokens/s\t10,000",
    )["K1"]
    assert (setup.plan.precision, setup.plan.kv_precision) == ("fp8", kv)


def test_a_row_naming_both_pools_is_refused_with_a_reason(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    path = _table(
        tmp_path,
        "B1\tinfer\tx\tDeepSeek-V3\tinput 2000 tokens (prefill)\tsaturated decode\t1\t1\t16\tH100\tFP8"
        "\toutput tokens/s per GPU\t1,000",
    )
    report = validate_published(path=path, catalog=catalog, models=models, infer=inference_predictor())
    (row,) = report.rows
    assert row.status == "error"
    assert "both a decode pool and a prefill pool" in row.reason


def test_speculative_decoding_a_row_names_is_said_to_be_left_out(setups_of: SetupsOf) -> None:
    # No acceptance rate in the row: predicted without speculation, and the notes say so.
    setups = setups_of(
        "S1\tinfer\tx\tDeepSeek-R1\tISL/OSL 1K/2K\tbatch 1\t8\t1\t8\tH200\tFP8 checkpoint; MTP 3 layers"
        "\toutput tokens/s/user\t158.1",
        "S2\tinfer\tx, no MTP\tDeepSeek-R1\tISL/OSL 1K/2K\tbatch 1\t8\t1\t8\tH200\tFP8"
        "\toutput tokens/s/user\t100",
    )
    assert setups["S1"].plan.speculative is None
    assert any("speculative decoding named but not modelled" in note for note in setups["S1"].assumptions)
    assert not any("speculative" in note for note in setups["S2"].assumptions)
