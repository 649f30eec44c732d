"""Published serving rows written by others (``tests/data/validation/probe-serving.tsv``, issue
27/28): every row is read as its source wrote it, and the rows that cannot be predicted say why.

The expected plans, loads and metrics are read by hand from each row's cells (and its source,
named in ``tests/data/validation/README.md``); they are not the reader's output pasted back.
Nothing here checks a prediction's accuracy: these rows probe the reader, they fit nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lightspeed.catalog import Catalog
from lightspeed.errors import LightspeedError
from lightspeed.sol import inference_predictor, validate_published
from lightspeed.sol.core.uncertainty import interval_for
from lightspeed.sol.validation.infer_rows import read_inference_row
from lightspeed.sol.validation.published import read_table
from lightspeed.sol.validation.readings import read_cell
from lightspeed.workload import ModelRegistry
from probes import DATA, probe

PROBE = DATA / "probe-serving.tsv"
_rows, _read = probe(PROBE.name)


# id: (TP, replicas, ISL, OSL, requests in flight (None: as many as fit), batching, metric key,
# value in base units), each read by hand from the row's cells:
READ_BY_HAND = {
    # TRT-LLM H200 table: "Batch Size 1024", "TP 1", "Input Length 128, Output Length 128", out tok/s/GPU
    "P01": (1, 1, 128, 128, 1024, "static", "output_tokens_per_s_per_gpu", 11_819.0),
    "P02": (2, 1, 128, 2048, 512, "static", "output_tokens_per_s_per_gpu", 1_654.0),
    # Oracle: "input size 128 and an output size 128 tokens", "a single instance on all eight GPUs"
    # (one TP group of 8), "Batch Size 32"; the first metric is output tokens/s of the instance
    "P03": (8, 1, 128, 128, 32, "static", "output_tokens_per_s", 798.0),
    # "Input size in tokens 128, Output size in tokens 2048", vLLM's offline benchmark_throughput
    "P04": (8, 1, 128, 2048, None, "continuous", "output_tokens_per_s", 2_794.0),
    # AMD: TP 8, "Input 128, Output 2048", requests at an infinite rate: the server at its most load
    "P05": (8, 1, 128, 2048, None, "continuous", "output_tokens_per_s", 13_212.5),
    "P06": (8, 1, 128, 2048, 1, "static", "request_latency_s", 15.882),
    # Gaudi 2: "Batch Size 1,750", "# HPU 2", no TP cell: 70B in fp8 (~71 GB) fits one 96 GB Gaudi 2
    # but leaves ~9 GiB, 236 requests of 256 tokens at 40 MiB (160 KiB a token), not the 875 a replica
    # of TP 1 x 2 would hold (3.7x); TP 2 keeps 35 GB of weights and 20 MiB a request on each: one TP 2
    # instance holds the batch
    "P07": (2, 1, 128, 128, 1750, "static", "output_tokens_per_s", 2_844.0),
    # Gaudi: "Input Length 128, Output Length 2,048", "Batch Size 120" on one HPU
    "P08": (1, 1, 128, 2048, 120, "static", "output_tokens_per_s", 11_294.0),
    # 70B in fp8 is ~71 GB and a Gaudi 3 holds 128 GB: one per replica, the batch of 600 over all 8
    "P09": (1, 8, 2048, 2048, 600, "static", "output_tokens_per_s", 8_946.0),
    "P10": (1, 1, 128, 2048, 768, "static", "output_tokens_per_s", 18_830.0),
    # Baseten: "512-token input sequence, 128-token output sequence", "single concurrent request",
    # first metric "time to first token" <- "127ms"
    "P11": (1, 1, 512, 128, 1, "continuous", "ttft_s", 0.127),
    # MLPerf Offline on one MI300X (a 192 GB GPU holds 70B in bf16): TP 1, no replicas
    "P13": (1, 1, None, None, None, "continuous", "output_tokens_per_s", 3_062.72),
    # L4: "256-token input / 128-token output", "max-concurrency 8", first metric "req/s" <- 10.2
    "P18": (1, 1, 256, 128, 8, "continuous", "requests_per_s", 10.2),
    # "fixed 1024-token input and a fixed 128-token output", one request at a time, and the decode
    # speed that request sees ("about 75" tokens/s)
    "P19": (1, 1, 1024, 128, 1, "continuous", "output_tokens_per_s_per_user", 75.0),
    "P22": (8, 1, 128, 128, 1, "static", "request_latency_s", 3.530),
    # Database Mart on one A40 (the catalog's a40 since 4 Dec): "Input length: 100 tokens, Output
    # length: 600 tokens", "50 concurrent requests", output tokens/s
    "P20": (1, 1, 100, 600, 50, "continuous", "output_tokens_per_s", 1_016.60),
}


@pytest.mark.parametrize("row_id", sorted(READ_BY_HAND))
def test_every_probe_row_is_read_as_written(catalog: Catalog, models: ModelRegistry, row_id: str) -> None:
    tp, replicas, isl, osl, in_flight, batching, metric, value = READ_BY_HAND[row_id]
    spec = _read(row_id, catalog, models)
    assert (spec.plan.tp, spec.plan.replicas) == (tp, replicas)
    if isl is not None:  # an MLPerf row's lengths are its benchmark's, not the row's
        assert (spec.load.input_tokens, spec.load.output_tokens) == (isl, osl)
    assert spec.load.concurrency == in_flight
    assert spec.batching == batching
    assert spec.metric == metric
    assert spec.measured == pytest.approx(value)


def test_the_later_pieces_of_a_row_are_read_too(catalog: Catalog, models: ModelRegistry) -> None:
    # Baseten's second figure is a per-user speed ("perceived tokens per second" <- 81)
    p11 = _read("P11", catalog, models)
    assert p11.plan.precision == "int8"  # "int8 quantization (TensorRT-LLM)"
    assert [(r.key, r.value) for r in p11.readings][1] == ("output_tokens_per_s_per_user", 81.0)
    # the L4 row: "req/s; out tok/s; ITL p50 (ms)" <- "10.2; 1312; 5.5"
    p18 = _read("P18", catalog, models)
    keys = [(r.key, r.value) for r in p18.readings]
    assert keys[:2] == [("requests_per_s", 10.2), ("output_tokens_per_s", 1312.0)]
    assert keys[2][0] == "itl_s"  # the median gap between two streamed tokens
    assert keys[2][1] == pytest.approx(0.0055)


def test_spelled_out_formats_and_lengths_that_are_caps(catalog: Catalog, models: ModelRegistry) -> None:
    # JetStream: "bfloat16" is bf16 as stated (not 'not stated'); "max input length 1024, max output
    # length 1024" are read as the lengths, "batch size 128" as the batch
    spec = _read("P12", catalog, models)
    assert spec.plan.precision == "bf16"
    assert not any("precision not stated" in note for note in spec.assumptions)
    assert (spec.load.input_tokens, spec.load.output_tokens, spec.load.concurrency) == (1024, 1024, 128)


def test_a_latency_in_nanoseconds() -> None:
    # MLPerf's summaries give latencies in ns: 539,748,890 ns is 0.5397 s
    (reading,) = read_cell("99.00 percentile first token latency (ns)", "539748890", kind="infer")
    assert reading.key == "ttft_s"
    assert reading.value == pytest.approx(0.539748890)


def test_a_batch_with_thousands_separators(tmp_path: Path, catalog: Catalog, models: ModelRegistry) -> None:
    # Intel's tables write "Batch Size 1,750": a batch of 1750, not of 1
    path = tmp_path / "rows.tsv"
    header = "id\tkind\tsource\tmodel\tseq\tglobal_batch\tGPUs\thardware\tprecision\tmetric\tmeasured"
    cells = "LLaMA 2 70b\tInput Length 128, Output Length 128\tBatch Size 1,750\t8\tIntel Gaudi 3\tfp8"
    path.write_text(f"{header}\nR1\tinfer\tx\t{cells}\tThroughput (tokens/sec)\t2,844\n", encoding="utf-8")
    spec = read_inference_row(read_table(path)[0], catalog, models)
    assert (spec.load.concurrency, spec.batching) == (1750, "static")


# Rows that cannot be predicted, each for a reason the row or the catalog gives:
REFUSED = {
    "P21": "GPUs is not reported",  # SemiAnalysis gives no GPU count for the point
}


@pytest.mark.parametrize("row_id", sorted(REFUSED))
def test_the_refusals_say_why(catalog: Catalog, models: ModelRegistry, row_id: str) -> None:
    with pytest.raises(LightspeedError, match=REFUSED[row_id]):
        _read(row_id, catalog, models)


def test_an_mlperf_server_row_without_tp(catalog: Catalog, models: ModelRegistry) -> None:
    # "Completed tokens per second" <- 21028.23 on 8 MI300X; the TP is the simulated best split
    spec = _read("P14", catalog, models)
    assert (spec.metric, spec.measured) == ("output_tokens_per_s", 21028.23)
    assert spec.plan.tp * spec.plan.replicas == 8


@pytest.mark.parametrize(("row_id", "value"), [("P15", 59_022.3), ("P16", 57_177.2)])
def test_mlperf_mixtral_rows_on_eight_h200(
    catalog: Catalog, models: ModelRegistry, row_id: str, value: float
) -> None:
    # "Tokens per second" (Offline) and "Completed tokens per second" (Server) on H200-SXM-141GBx8:
    # the benchmark's own length statistics (sol/serve/data/mlperf.toml), TP the simulated best split
    spec = _read(row_id, catalog, models)
    assert (spec.metric, spec.measured) == ("output_tokens_per_s", value)
    assert spec.plan.tp * spec.plan.replicas == 8
    assert spec.simulation is not None
    assert spec.simulation.mlperf


def _probe_rows(tmp_path: Path, row_id: str, *edits: tuple[str, str], original: bool = True) -> Path:
    """A table of the probe row ``row_id`` as written (unless not ``original``), then once per
    ``(old, new)`` edit of its line (the edited copies get ids ``X1``, ``X2``...)."""
    lines = PROBE.read_text(encoding="utf-8").splitlines()
    (line,) = (line for line in lines if line.startswith(f"{row_id}\t"))
    copies = [f"X{i}" + line[len(row_id) :].replace(old, new) for i, (old, new) in enumerate(edits, 1)]
    path = tmp_path / f"{row_id}.tsv"
    path.write_text("\n".join([lines[0], *([line] if original else []), *copies]) + "\n", encoding="utf-8")
    return path


def test_an_mlperf_server_latency_is_predicted_at_the_rows_target_qps(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    # P17, MLPerf Mixtral Server's p99 first-token latency in ns at "target_qps 392": the run is
    # simulated with Poisson arrivals at that rate and the p99 TTFT read from it. A queue at a
    # lower rate waits less, and one past the deployment's capacity grows without bound.
    spec = _read("P17", catalog, models)
    assert (spec.metric, spec.measured) == ("ttft_s", pytest.approx(0.539748890))
    assert spec.simulation is not None
    assert spec.simulation.target_rate_per_s == 392.0
    path = _probe_rows(
        tmp_path, "P17", ("target_qps 392", "target_qps 10"), ("target_qps 392", "target 2000 QPS")
    )
    report = validate_published(path=path, catalog=catalog, models=models, infer=inference_predictor())
    rows = {row.id: row for row in report.rows}
    assert all(row.status == "ok" for row in rows.values())
    assert rows["P17"].plan["percentile"] == 99.0
    assert rows["X1"].predicted < rows["P17"].predicted < rows["X2"].predicted
    # 2000 req/s is past what eight H200 serve (P16's capacity is ~400 req/s): requests queue for
    # seconds, not the tens of milliseconds of a lightly loaded server
    assert rows["X2"].predicted > 1.0
    assert rows["X1"].predicted < 0.2
    # and the run at 2000 req/s says it fell behind (its requests in flight growing through the
    # measured window: a lower bound), the one at a fortieth of the capacity that it kept up
    assert (rows["X1"].plan["settled"], rows["X2"].plan["settled"]) == (True, False)
    assert any(line.startswith("not settled: requests in flight rose") for line in rows["X2"].assumptions)
    assert not any(line.startswith("not settled") for line in rows["X1"].assumptions)
    # The band under load (sol/serve/load_band.py): at 10 req/s, a fortieth of the capacity, the
    # latency moves little with the rate (the family's band, x2.5 for MoE serving on Hopper, takes
    # it to a sixteenth at most; a p99 first token still waits a little more for another's prefill)
    # and the band is the family's (the time band of the prediction) within 30%; at 392 req/s,
    # ~80% of the predicted capacity, the slow side is where a deployment the band allows to be
    # slower sits past its capacity: many times the family's.
    family = interval_for("infer", moe=True, architecture="Hopper")
    for row_id in ("X1", "P17"):
        assert rows[row_id].interval is not None
        assert any("band under this load" in line for line in rows[row_id].assumptions)
    low, high = rows["X1"].interval
    plain_low, plain_high = family.time(rows["X1"].predicted)
    assert (low, high) == (pytest.approx(plain_low, rel=0.3), pytest.approx(plain_high, rel=0.3))
    assert rows["P17"].interval[1] > 3.0 * family.time(rows["P17"].predicted)[1]


def test_an_mlperf_server_latency_without_a_target_says_why(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    path = _probe_rows(
        tmp_path, "P17", ("Server scenario, target_qps 392", "Server scenario"), original=False
    )
    report = validate_published(path=path, catalog=catalog, models=models, infer=inference_predictor())
    row = {row.id: row for row in report.rows}["X1"]
    assert row.status != "ok"
    assert "or the row must state the target QPS its latencies were measured at" in row.reason


def test_an_mlperf_row_without_a_precision_takes_the_submitters_convention(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    # The summaries leave the precision unstated ("n/r"). NVIDIA: "LLM submissions use FP8 or FP4
    # if the NVIDIA accelerator supports that feature" (inference_results_v4.1, closed/NVIDIA/
    # documentation/calibration.md); AMD's v4.1 MI300X code is test_VllmFp8. An A100 has neither
    # format, so it stays at bf16; a precision the row states is kept.
    path = _probe_rows(
        tmp_path,
        "P15",
        ("H200-SXM-141GBx8 (TRT)", "B200-SXM-180GBx8 (TRT)"),
        ("H200-SXM-141GBx8 (TRT)", "A100-SXM-80GBx8 (TRT)"),
        ("\tn/r\t", "\tBF16\t"),
    )
    specs = {row.row_id: read_inference_row(row, catalog, models) for row in read_table(path)}
    precisions = {row_id: spec.plan.precision for row_id, spec in specs.items()}
    assert precisions == {"P15": "fp8", "X1": "nvfp4", "X2": "bf16", "X3": "bf16"}
    # P15 (v4.1 Mixtral on H200) reads the all-FP8 checkpoint sol/serve/data/mlperf.toml cites for
    # that round; its B200 copy (no Blackwell entry for v4.1) the convention
    assert any("the checkpoint the MLPerf v4.1 code builds" in note for note in specs["P15"].assumptions)
    assert any("MLPerf closed LLM submissions" in note for note in specs["X1"].assumptions)
    assert _read("P13", catalog, models).plan.precision == "fp8"  # one MI300X, AMD's FP8 code
    # a row that does not name MLPerf keeps the bf16 default (P19: vLLM on an A100 states BF16;
    # without its cell it would read 'precision not stated: bf16')
    p19 = _probe_rows(tmp_path, "P19", ("\tBF16\t", "\t\t"))
    (_, copy) = read_table(p19)
    assert read_inference_row(copy, catalog, models).plan.precision == "bf16"


def test_every_probe_row_is_either_read_or_refused() -> None:
    assert set(_rows()) == set(READ_BY_HAND) | set(REFUSED) | {"P12", "P14", "P15", "P16", "P17"}


@pytest.mark.parametrize("target", ["nan", "inf", "0", "-1", "1e400", "x"])
def test_a_target_that_is_not_a_rate_is_refused_not_cut_to_its_digits(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry, target: str
) -> None:
    # 'target_qps 1e400' was read as 1 query per second (the digits before the 'e')
    path = _probe_rows(tmp_path, "P17", ("target_qps 392", f"target_qps {target}"), original=False)
    report = validate_published(path=path, catalog=catalog, models=models, infer=inference_predictor())
    row = {row.id: row for row in report.rows}["X1"]
    assert row.status != "ok"
    assert f"target_qps '{target}' is not a rate" in row.reason
