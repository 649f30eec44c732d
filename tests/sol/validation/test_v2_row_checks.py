"""The checks a user's rows get in ``lightspeed validate``, table (TSV) and structured (TOML) alike.

Hand figures used below (public sources):

* Llama 3 70B: 70.6e9 parameters (Meta's model card); Llama 3.1 70B the same.
* H100 SXM: fastest dense peak FP8 1,979 TFLOP/s, HBM3 3.35 TB/s (NVIDIA H100 datasheet).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lightspeed.catalog import Catalog
from lightspeed.errors import DataFileError
from lightspeed.sol.infer.plan import InferencePlan, ServingLoad
from lightspeed.sol.validation.hardware_text import HardwareTextError
from lightspeed.sol.validation.plausibility import check_serving_figure
from lightspeed.sol.validation.published import check_measured, read_table
from lightspeed.sol.validation.readings import Reading, RowError, read_cell
from lightspeed.sol.validation.rows import read_training_row, row_year, training_setup
from lightspeed.sol.validation.structured import load_published_runs
from lightspeed.sol.validation.train_degrees import stated_degrees
from lightspeed.workload import ModelRegistry

LLAMA_70B_PARAMS = 70.6e9
H100_FASTEST_PEAK = 1979e12  # FLOP/s, dense FP8
H100_HBM = 3.35e12  # bytes/s

HEADER = (
    "id\tkind\tsource\tmodel\tparams_B\tlayers\thidden\theads(kv)\tffn\tvocab\tseq\tglobal_batch\t"
    "micro_batch\tTP\tPP\tVPP\tCP\tDP\tEP\tsharding\tGPUs\thardware\tprecision\trecompute\tmetric\tmeasured"
)


def _train_row(
    tmp_path: Path,
    *,
    metric: str,
    measured: str,
    model: str = "Llama 3 70B",
    source: str = "my blog 2024",
    tp: str = "8",
    sharding: str = "",
    hardware: str = "H100 SXM",
):  # type: ignore[no-untyped-def]
    cells = [
        "T1", "train", source, model, "", "", "", "", "", "", "8192", "128", "", tp, "2", "", "", "",
        "", sharding, "64", hardware, "BF16", "", metric, measured,
    ]  # fmt: skip
    path = tmp_path / "rows.tsv"
    path.write_text(f"{HEADER}\n" + "\t".join(cells) + "\n", encoding="utf-8")
    return read_table(path)[0]


def _ratio(message: str) -> float:
    found = re.search(r"(?:is|implies) ([\d.,e+]+)x", message)
    assert found is not None, message
    return float(found.group(1).replace(",", ""))


# --- defect 2: a time no run reaches is refused as the rate it implies ---------------------------


def test_a_step_time_below_the_peak_is_refused_as_its_rate(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    # 128 x 8192 = 1,048,576 tokens in 0.001 s on 64 GPUs at 6 x 70.6e9 FLOPs each: ~3,500x the peak
    row = _train_row(tmp_path, metric="step time (s)", measured="0.001")
    with pytest.raises(RowError, match="fastest dense peak") as refused:
        read_training_row(row, catalog, models)
    expected = 1_048_576 / 0.001 / 64 * 6 * LLAMA_70B_PARAMS / H100_FASTEST_PEAK
    assert _ratio(str(refused.value)) == pytest.approx(expected, rel=0.01)
    # the same run's real step time (about 18 s at 40% MFU) is read
    read_training_row(_train_row(tmp_path, metric="step time (s)", measured="18"), catalog, models)


def _serving(tmp_path: Path, catalog: Catalog, models: ModelRegistry, key: str, value: float) -> None:
    reading = Reading(key, value, key, f"{value:g}", "s", "job", 1, 1)
    plan = InferencePlan(tp=4, precision="fp8")
    check_serving_figure(
        reading, models.get("llama-3.1-70b"), catalog.accelerator("h100-sxm"), plan, ServingLoad(1024, 1024)
    )


# FP8 weights streamed once per token over 4 GPUs' HBM: 70.6e9 / (4 x 3.35e12) = 5.27 ms; the prompt
# of 1,024 tokens at 2 FLOPs per parameter on 4 GPUs' peak: 2 x 70.6e9 x 1024 / (4 x 1979e12) = 18.3 ms
_STEP_S = LLAMA_70B_PARAMS / (4 * H100_HBM)
_PREFILL_S = 2 * LLAMA_70B_PARAMS * 1024 / (4 * H100_FASTEST_PEAK)


@pytest.mark.parametrize(
    "case",
    [
        ("tpot_s", 13e-6, _STEP_S / 13e-6),  # 13 us: ~405x under
        ("ttft_s", 0.35e-3, _PREFILL_S / 0.35e-3),  # 0.35 ms: ~52x under
        ("ttft_s", 1e-6, _PREFILL_S / 1e-6),
        ("output_tokens_per_s_per_user", 5000.0, 5000.0 * _STEP_S),  # ~190 tokens/s the most
    ],
)
def test_a_latency_far_below_its_floor_is_refused(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry, case: tuple[str, float, float]
) -> None:
    key, value, expected_ratio = case
    with pytest.raises(RowError, match="check the unit") as refused:
        _serving(tmp_path, catalog, models, key, value)
    assert _ratio(str(refused.value)) == pytest.approx(expected_ratio, rel=0.01)


@pytest.mark.parametrize(
    ("key", "value"),
    [("tpot_s", 0.020), ("ttft_s", 0.150), ("output_tokens_per_s_per_user", 60.0), ("tpot_s", _STEP_S / 5)],
)
def test_a_latency_a_run_reaches_is_read(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry, key: str, value: float
) -> None:
    # (a TPOT 5x under the weight floor is one speculative decoding can reach: within the tolerance)
    _serving(tmp_path, catalog, models, key, value)


# --- defect 3: a framework's YY.MM release dates the stack ---------------------------------------


@pytest.mark.parametrize(
    ("source", "year"),
    [("NeMo 25.04", 2025), ("NeMo 25.04 container", 2025), ("nemo:25.04", 2025), ("PyTorch 23.10", 2023)],
)
def test_a_framework_release_dates_the_row(tmp_path: Path, catalog: Catalog, source: str, year: int) -> None:
    row = _train_row(tmp_path, metric="TFLOP/s per GPU", measured="430", source=source)
    assert row_year(row, catalog.accelerator("h100-sxm"))[0] == year


def test_a_pytorch_version_is_no_container_release(tmp_path: Path, catalog: Catalog) -> None:
    row = _train_row(tmp_path, metric="TFLOP/s per GPU", measured="430", source="PyTorch 2.7 blog")
    assert row_year(row, catalog.accelerator("h100-sxm")) == (2025, "PyTorch 2.7")


# --- defect 4: a parallel degree of 0 is refused, never read as unstated --------------------------


def test_a_degree_of_zero_is_refused(tmp_path: Path) -> None:
    with pytest.raises(RowError, match=r"TP '0' is 0, and a run has at least 1"):
        check_measured(_train_row(tmp_path, metric="TFLOP/s per GPU", measured="430", tp="0"))
    labelled = _train_row(tmp_path, metric="TFLOP/s per GPU", measured="430", tp="", sharding="TP0 ZeRO-1")
    with pytest.raises(RowError, match="TP is 0: a parallel degree is at least 1"):
        stated_degrees(labelled)


# --- defect 5: a utilization near 100% ------------------------------------------------------------


@pytest.mark.parametrize(
    ("metric", "measured", "problem"),
    [
        ("MFU", "1.41", "is ambiguous: 1.41% of peak, or 1.41 as a fraction"),
        ("MFU", "1", "is 100% of peak: a utilization is at most 100%, and no run"),
        ("MFU", "1.0", "is 100% of peak"),
        ("MFU", "100%", "is 100% of peak"),
        ("HFU", "141%", "is 141% of peak"),
    ],
)
def test_a_utilization_of_100_percent_or_an_ambiguous_one_is_refused(
    metric: str, measured: str, problem: str
) -> None:
    (reading,) = read_cell(metric, measured)
    assert problem in reading.problem


def test_a_percent_in_the_metric_is_its_unit() -> None:
    # 'MFU (%)' over 45 is 45%; over 0.9 it is the fraction 0.9 (90%) written in a percent column,
    # said in a note: 0.9% of peak is below any published run
    assert read_cell("MFU (%)", "45")[0].value == pytest.approx(0.45)
    (reading,) = read_cell("MFU (%)", "0.9")
    assert reading.value == pytest.approx(0.9)
    assert reading.problem == ""
    assert any("fraction" in note for note in reading.notes)
    assert read_cell("MFU", "0.43")[0].value == pytest.approx(0.43)
    assert read_cell("MFU", "43")[0].value == pytest.approx(0.43)


# --- defect 6: an unknown model or part in a table gets the closest names ------------------------


def test_an_unknown_model_in_a_table_lists_the_closest(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    row = _train_row(tmp_path, metric="TFLOP/s per GPU", measured="430", model="Lama 3 70B")
    with pytest.raises(RowError, match=r"\(closest: llama-3-70b"):
        read_training_row(row, catalog, models)


def test_an_unknown_part_in_a_table_lists_the_closest(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    row = _train_row(tmp_path, metric="TFLOP/s per GPU", measured="430", hardware="H900 SXM")
    with pytest.raises(HardwareTextError, match=r"closest: .*h100-sxm"):
        read_training_row(row, catalog, models)


# --- defects 1 and 7: structured rows get the same checks, as row errors -------------------------

_TRAIN_TOML = """
[[row]]
id = "{id}"
kind = "train"
publisher = "Me"
source = "my blog 2024"
stack = "published-median"
metric = "{metric}"
unit = "{unit}"
value = {value}
[row.model]
name = "llama-3-70b"
[row.hardware]
system = "dgx-h100"
num_gpus = {gpus}
[row.plan]
tp = 8
pp = 2
{dp}global_batch_size = 128
seq_len = 8192
micro_batch_size = 1
recompute = "selective"
[row.flops]
convention = "6N+attention"
"""


def _toml_row(
    row_id: str,
    *,
    metric: str = "tflop_per_s_per_gpu",
    unit: str = "TFLOP/s",
    value: str = "430.0",
    dp: str = "dp = 4\n",
    gpus: int = 64,
) -> str:
    return _TRAIN_TOML.format(id=row_id, metric=metric, unit=unit, value=value, dp=dp, gpus=gpus)


def _load(tmp_path: Path, catalog: Catalog, models: ModelRegistry, *rows: str):  # type: ignore[no-untyped-def]
    path = tmp_path / "rows.toml"
    path.write_text("schema_version = 1\n" + "".join(rows), encoding="utf-8")
    return load_published_runs(catalog=catalog, models=models, path=path)


@pytest.mark.parametrize(
    "case",
    [
        # 4,300 TFLOP/s per GPU is 4300 / 1979 = 2.17x the fastest dense peak
        ("tflop_per_s_per_gpu", "TFLOP/s", "4300.0", "is 2.17x one h100-sxm's fastest dense peak"),
        ("mfu", "fraction", "43.0", "is 4300% of peak: a utilization is at most 100%"),
        ("tflop_per_s_per_gpu", "TFLOP/s", "nan", "value nan is not a number above 0"),
        ("tflop_per_s_per_gpu", "TFLOP/s", "-430.0", "value -430 is not a number above 0"),
    ],
)
def test_a_structured_row_no_run_reaches_is_refused_alone(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry, case: tuple[str, str, str, str]
) -> None:
    metric, unit, value, problem = case
    bad, good = _load(
        tmp_path, catalog, models, _toml_row("S1", metric=metric, unit=unit, value=value), _toml_row("S2")
    )
    assert bad.training is not None
    assert bad.training.reading is not None
    assert problem in bad.training.reading.problem
    with pytest.raises(RowError, match=re.escape(problem)):
        training_setup(bad.training, catalog)
    assert good.training is not None
    training_setup(good.training, catalog)  # the file's other rows are read and predicted


def test_a_structured_latency_below_its_floor_is_refused(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    row = """
[[row]]
id = "J1"
kind = "infer"
publisher = "Me"
source = "vendor blog vLLM 2024"
stack = "vllm-2024"
metric = "tpot_s"
unit = "s"
value = 0.000013
[row.model]
name = "llama-3.1-70b"
[row.hardware]
system = "dgx-h100"
num_gpus = 4
[row.deployment]
tp = 4
precision = "fp8"
[row.workload]
input_tokens = 1024
output_tokens = 1024
concurrency = 16
batching = "continuous"
"""
    (run,) = _load(tmp_path, catalog, models, row)
    assert run.inference is not None
    assert run.inference.reading is not None
    assert _ratio(run.inference.reading.problem) == pytest.approx(_STEP_S / 13e-6, rel=0.01)


def test_structured_errors_name_the_row_by_position_and_id(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    with pytest.raises(DataFileError, match=r"rows\.toml: row 'S2': .*field 'row\[1\]\.unit'"):
        _load(tmp_path, catalog, models, _toml_row("S1"), _toml_row("S2", unit="TFLOPS"))
    with pytest.raises(DataFileError, match=r"the same id as row\[0\]; field 'row\[1\]\.id'; value 'S1'"):
        _load(tmp_path, catalog, models, _toml_row("S1"), _toml_row("S1"))


def test_an_omitted_dp_is_the_gpus_over_the_other_degrees(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    (run,) = _load(tmp_path, catalog, models, _toml_row("S1", dp=""))
    assert run.training is not None
    assert run.training.plan.dp == 64 // (8 * 2)
    with pytest.raises(DataFileError, match=r"does not divide the row's 60 GPUs.*fix: make tp x pp x cp"):
        _load(tmp_path, catalog, models, _toml_row("S1", dp="", gpus=60))
    with pytest.raises(DataFileError, match=r"fix: write dp = 4"):
        _load(tmp_path, catalog, models, _toml_row("S1", dp="dp = 2\n"))
