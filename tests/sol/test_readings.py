"""Reading published metric and measured cells the way sources write them (issue 13, point 1)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lightspeed.catalog import Catalog
from lightspeed.sol import inference_predictor, validate_published
from lightspeed.sol.validation.readings import impossible_value, parse_value, read_cell
from lightspeed.workload import ModelRegistry

HEADER = (
    "id\tkind\tsource\tmodel\tGPUs\thardware\tprecision\tTP\tPP\tseq\tglobal_batch\tmicro_batch"
    "\tsharding\trecompute\tmetric\tmeasured"
)


def test_several_metrics_pair_by_position() -> None:
    # Megatron-Bridge writes two metrics in one cell: the first number is tokens/s, the second TFLOP/s.
    first, second = read_cell("tokens/s/GPU; model TFLOP/s/GPU", "14,451; 744")
    assert (first.key, first.value, first.position, first.num_pieces) == (
        "tokens_per_s_per_gpu",
        14451.0,
        1,
        2,
    )
    assert (second.key, second.value, second.flop_basis) == ("tflop_per_s_per_gpu", 744.0, "model")


@pytest.mark.parametrize(
    ("metric", "measured", "key", "value"),
    [
        ("iteration time (ms)", "450", "step_time_s", 0.45),
        ("step time (s); aggregate tokens/s; MFU", "14.66; 2,288,843; 54.32%", "step_time_s", 14.66),
        ("days for 300B tokens", "84 d", "time_to_train_s", 84 * 86400.0),
        ("first-token latency", "120.5 ms", "ttft_s", 0.1205),
        ("ITL", "850 us", "itl_s", 850e-6),
        ("peak memory GiB", "82.4", "memory_per_gpu_bytes", 82.4 * 2**30),
        ("aggregate PFLOP/s", "4.4", "pflop_per_s", 4400.0),
        # step times as training logs write them
        ("sec/it", "9.2", "step_time_s", 9.2),
        ("s/iter", "9.2", "step_time_s", 9.2),
        ("ms/step", "9,200", "step_time_s", 9.2),
        ("seconds per iteration", "9.2", "step_time_s", 9.2),
        ("wall-clock per step", "9.2 s", "step_time_s", 9.2),
        ("samples/sec", "220", "samples_per_s", 220.0),
        ("sequences per second", "220", "samples_per_s", 220.0),
        ("TPS per GPU", "5,762", "tokens_per_s_per_gpu", 5762.0),
        # as training logs name them (each was refused): TGS is tokens per GPU per second; NeMo's
        # train_step_timing, snake case, tqdm's it/s and Hugging Face's steps per second (the
        # step time is the inverse: 1 / 0.352 = 2.8409 s)
        ("TGS", "5,762", "tokens_per_s_per_gpu", 5762.0),
        ("train_step_timing in s", "2.843", "step_time_s", 2.843),
        ("time/step (s)", "2.843", "step_time_s", 2.843),
        ("step_time", "2.843", "step_time_s", 2.843),
        ("iter time", "2.843 s", "step_time_s", 2.843),
        ("train_samples_per_second", "5.63", "samples_per_s", 5.63),
        ("train_steps_per_second", "0.352", "step_time_s", 1 / 0.352),
        ("it/s", "0.352", "step_time_s", 1 / 0.352),
        # a utilization spelled out, as a percentage or as a fraction (0.43 is 43%, not 0.43%)
        ("Model FLOPs Utilization", "43%", "mfu", 0.43),
        ("MFU", "43", "mfu", 0.43),
        ("MFU", "0.43", "mfu", 0.43),
        ("hardware FLOPs utilisation (%)", "52", "hfu", 0.52),
        # a serving latency with no unit is in milliseconds, as bench_serving prints it
        ("Median TTFT", "53.94", "ttft_s", 0.05394),
        ("mean TPOT", "12", "tpot_s", 0.012),
        ("TTFT (s)", "1.2", "ttft_s", 1.2),
    ],
)
def test_units_in_the_metric_text_or_beside_the_number(
    metric: str, measured: str, key: str, value: float
) -> None:
    kind = "infer" if key in ("ttft_s", "tpot_s", "itl_s") else "train"
    reading = read_cell(metric, measured, kind=kind)[0]
    assert (reading.key, reading.value) == (key, pytest.approx(value))


def test_a_latency_read_in_milliseconds_by_default_says_so() -> None:
    (reading,) = read_cell("Median TTFT", "53.94", kind="infer")
    assert "no time unit: milliseconds, as serving benchmarks print latencies" in reading.notes
    (stated,) = read_cell("Median TTFT (ms)", "53.94", kind="infer")
    assert not any("no time unit" in note for note in stated.notes)
    (step,) = read_cell("step time", "9.2", kind="train")  # a training step stays in seconds
    assert step.value == pytest.approx(9.2)


def test_per_node_values_become_per_gpu() -> None:
    (named,) = read_cell("output tokens/s per node (8 GPUs), decode", "22,300", kind="infer")
    assert (named.scope, named.gpus_per_scope) == ("node", 8)
    per_gpu = named.per_gpu(node_gpus=4)  # the text's "(8 GPUs)" wins over the system's node size
    assert (per_gpu.key, per_gpu.value) == ("output_tokens_per_s_per_gpu", pytest.approx(2787.5))
    (unsized,) = read_cell("output tokens/s per H800 node", "~14,800", kind="infer")
    assert unsized.per_gpu(node_gpus=8).value == pytest.approx(1850.0)
    assert "approximate value" in unsized.notes


@pytest.mark.parametrize(
    ("metric", "kind", "key"),
    [
        # TPU and Gaudi sources count per chip or card; a rate per accelerator is per GPU
        ("tokens/sec/chip", "train", "tokens_per_s_per_gpu"),
        ("Throughput (tokens/s per chip)", "train", "tokens_per_s_per_gpu"),
        ("output tokens/s per card", "infer", "output_tokens_per_s_per_gpu"),
        ("tok/s/HPU", "infer", "output_tokens_per_s_per_gpu"),  # as tok/s/GPU reads
        ("output tokens/s per device", "infer", "output_tokens_per_s_per_gpu"),
        # and a rate of the whole job stays one
        ("tokens/sec", "train", "tokens_per_s"),
    ],
)
def test_rates_per_chip_or_card_are_per_gpu(metric: str, kind: str, key: str) -> None:
    (reading,) = read_cell(metric, "3,500", kind=kind)
    assert reading.key == key


@pytest.mark.parametrize(
    ("metric", "seconds", "tokens"),
    [
        ("train time to 1.3B tokens (min)", 20 * 60.0, 1.3e9),
        ("time-to-train (min)", 20 * 60.0, None),
        ("wall-clock to 2T tokens (days)", 20 * 86400.0, 2e12),
        ("training time (hours)", 20 * 3600.0, None),
    ],
)
def test_times_to_train_as_sources_word_them(metric: str, seconds: float, tokens: float | None) -> None:
    (reading,) = read_cell(metric, "20", kind="train")
    assert (reading.key, reading.value, reading.num_tokens) == ("time_to_train_s", seconds, tokens)


def test_ranges_take_the_midpoint_and_say_so() -> None:
    value, _unit, notes = parse_value("20-22 tokens/s")
    assert value == 21.0
    assert notes == ("range 20-22: midpoint",)
    assert parse_value("1,234.5")[0] == 1234.5
    assert parse_value("2.664M (180K per 1T tokens)")[0] == pytest.approx(2.664e6)


def test_mfu_divides_by_the_peak_the_row_names() -> None:
    reading = read_cell("step time (s); aggregate tokens/s; MFU vs 2.45 PF", "7.325; 286,300.61; 47.59%")[2]
    assert (reading.key, reading.value, reading.peak_flop_per_s) == ("mfu", pytest.approx(0.4759), 2.45e15)


@pytest.mark.parametrize(
    ("metric", "peak"),
    [
        ("MFU (of 1,979 TFLOPS)", 1.979e15),  # an FP8 run's MFU against the FP8 peak
        ("MFU @ 989 TFLOP/s", 0.989e15),
        ("MFU (989 TFLOPS peak)", 0.989e15),
        ("MFU, 989 TFLOP/s dense BF16 peak", 0.989e15),
        ("BF16 MFU", None),  # no figure: the accelerator's own peak
    ],
)
def test_the_peak_a_utilization_is_taken_against(metric: str, peak: float | None) -> None:
    (reading,) = read_cell(metric, "43%")
    assert reading.key == "mfu"
    assert reading.peak_flop_per_s == (pytest.approx(peak) if peak else None)


@settings(max_examples=50, deadline=None)
@given(values=st.lists(st.integers(1, 10**9), min_size=1, max_size=4))
def test_thousands_separators_round_trip(values: list[int]) -> None:
    metric = "; ".join("tokens/s per GPU" for _ in values)
    measured = "; ".join(f"{value:,}" for value in values)
    assert [reading.value for reading in read_cell(metric, measured)] == [float(v) for v in values]


def _table(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "rows.tsv"
    path.write_text("\n".join((HEADER, *lines)) + "\n")
    return path


def test_each_row_shows_how_it_was_read(tmp_path: Path, catalog: Catalog, models: ModelRegistry) -> None:
    path = _table(
        tmp_path,
        "X1\ttrain\tNVIDIA-NeMo/Megatron-Bridge 25.11 NeMo Container\tLlama 3 8B\t8\tDGX H100\tFP8-CS\t1\t1"
        "\t8192\t128\t1\tMegatron-FSDP (FSDP=8)\tn/r\ttokens/s/GPU; model TFLOP/s/GPU\t14,451; 744",
        "X2\ttrain\tnone\tLlama 3 8B\t8\tDGX H100\tbf16\t1\t1\t8192\t128\t1\tnone\tnone\tsparkle rate\t1.0",
    )
    report = validate_published(path=path, catalog=catalog, models=models)
    read, unread = report.rows
    assert read.reading is not None
    assert (read.reading["metric_text"], read.reading["value_text"]) == ("tokens/s/GPU", "14,451")
    assert read.measured == 14451.0
    assert [piece["key"] for piece in read.readings] == ["tokens_per_s_per_gpu", "tflop_per_s_per_gpu"]
    assert read.interval is not None
    assert read.interval[0] < read.predicted < read.interval[1]
    assert "sparkle rate" in unread.reason
    assert "names no quantity and unit lightspeed reads" in unread.reason
    assert json.loads(json.dumps(read.to_dict()))["reading"]["position"] == 1


@pytest.mark.parametrize(
    ("metric", "key"),
    [
        # Issue 28: this text was read as a request latency (-98.8%): the formula explains the
        # number, its "latency" names a divisor, not the metric.
        ("output tokens/s/GPU (offline, out_tps=OSL*BS/latency/TP)", "output_tokens_per_s_per_gpu"),
        ("output tokens/s/GPU, out_tps = OSL*BS/latency/TP", "output_tokens_per_s_per_gpu"),
        ("TTFT (ms; ttft=first token time - arrival)", "ttft_s"),
    ],
)
def test_a_formula_in_the_metric_text_does_not_name_the_metric(metric: str, key: str) -> None:
    (reading,) = read_cell(metric, "2,941", kind="infer")
    assert reading.key == key
    assert reading.value == pytest.approx(2.941 if key == "ttft_s" else 2941.0)
    if key != "ttft_s":
        assert (reading.scope, reading.unit) == ("gpu", "tokens/s")


def test_a_formula_row_is_predicted_as_a_throughput(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    header = "id\tkind\tsource\tmodel\tseq\tglobal_batch\tTP\tPP\tGPUs\thardware\tprecision\tmetric\tmeasured"
    row = (
        "F1\tinfer\tTensorRT-LLM blog 2024\tLlama 2 70B\tISL/OSL 128/2048\tbatch 192\t1\t1\t1\tH200 141GB"
        "\tFP8"
        "\toutput tokens/s/GPU (offline, out_tps=OSL*BS/latency/TP)\t2,941"
    )
    table = tmp_path / "formula.tsv"
    table.write_text(f"{header}\n{row}\n", encoding="utf-8")
    report = validate_published(path=table, catalog=catalog, models=models, infer=inference_predictor())
    (result,) = report.rows
    assert result.metric == "output_tokens_per_s_per_gpu"
    assert result.rel_error is not None
    assert abs(result.rel_error) < 0.9  # was -98.8%, read as a latency


def test_a_measured_value_in_exponent_notation_is_read_whole() -> None:
    # "1.2e4" is 12,000 (it was read as 1.2), and "1e400" overflows: refused, not read as 1.
    assert parse_value("1.2e4 tokens/s")[0] == 12_000.0
    assert impossible_value("1e400") == "not a finite number"
