"""Per-layer mixed checkpoints (issue 27, serving; issue 28, engine physics): NVIDIA's MLPerf
Mixtral 8x7B submissions on B200 run a ModelOpt AutoQuantize checkpoint of 7.25 effective bits
(closed/NVIDIA/configs/B200-SXM-180GBx8/{Offline,Server}/mixtral-8x7b.py, v5.1; the same in
v5.0), not an all-NVFP4 one. Golden values: Mixtral's published shapes and ModelOpt's width
convention (NVFP4 4 bits, FP8 8, unquantized 16; algorithms.py), computed by hand below."""

from __future__ import annotations

import csv
from importlib import resources
from pathlib import Path

import pytest

from lightspeed.catalog import Catalog
from lightspeed.errors import DataFileError, InvalidPlanError
from lightspeed.sol import (
    InferenceEstimate,
    InferencePlan,
    ServingLoad,
    estimate_inference,
    search_inference,
)
from lightspeed.sol.infer.inference_hardware import inference_hardware_for
from lightspeed.sol.infer.iteration import gemm_time_s
from lightspeed.sol.infer.plan import resolve_precisions
from lightspeed.sol.serve.mlperf_inference import load_mlperf_workload, load_mlperf_workloads
from lightspeed.sol.validation.infer_rows import read_inference_row
from lightspeed.sol.validation.published import read_table
from lightspeed.workload import ModelRegistry

# Mixtral 8x7B (config.json: hidden 4096, 32 layers, 32 query and 8 KV heads of 128, 8 experts
# of 14336): per layer q 4096 x 4096 + k, v 4096 x 1024 + o 4096 x 4096 = 41,943,040 and experts
# 8 x 3 x 4096 x 14336 = 1,409,286,144, so 32 x 1,451,229,184 = 46,439,333,888 linear weights
# (the router's 32 x 4096 x 8 = 1,048,576 ride along in the same format).
MIXTRAL_LINEAR_WEIGHTS = 46_439_333_888 + 1_048_576
# 7.25 effective bits between NVFP4 (4) and FP8 (8): (7.25 - 4) / (8 - 4) = 0.8125 of the
# weights in FP8 (1 B), 0.1875 in NVFP4 (0.5625 B with its FP8 scale per 16 values)
FP8_SHARE = 0.8125
MIXED_BYTES_PER_WEIGHT = 0.1875 * 0.5625 + 0.8125 * 1.0


def _estimate(
    models: ModelRegistry, catalog: Catalog, load: ServingLoad, **plan: object
) -> InferenceEstimate:
    return estimate_inference(
        model=models.get("mixtral-8x7b"),
        cluster=catalog.resolve_cluster("dgx-b200", 1),
        plan=InferencePlan(**plan),  # type: ignore[arg-type]
        load=load,
    )


def test_the_share_follows_from_the_effective_bits() -> None:
    assert InferencePlan(precision="nvfp4", effective_bits=7.25).wider_share == pytest.approx(FP8_SHARE)
    # Hopper's 8.75 bits: FP8 beside 16-bit layers, (8.75 - 8) / (16 - 8) = 9.375% kept 16-bit
    assert InferencePlan(precision="fp8", effective_bits=8.75).wider_share == pytest.approx(0.09375)
    assert InferencePlan(precision="nvfp4", effective_bits=4.0).wider_share == 0.0
    assert InferencePlan(precision="nvfp4").wider_share == 0.0


def test_the_wider_format_is_resolved_on_the_gpu(catalog: Catalog) -> None:
    b200, v100 = catalog.accelerator("b200"), catalog.accelerator("v100-sxm2")
    blackwell = resolve_precisions(InferencePlan(precision="nvfp4", effective_bits=6.0), b200)
    assert (blackwell.wider, blackwell.wider_compute, blackwell.wider_weight_bytes_per_element) == (
        "fp8",
        "fp8",
        1.0,
    )
    assert blackwell.stored_bytes_per_element() == pytest.approx(0.5 * 0.5625 + 0.5 * 1.0)
    hopper = resolve_precisions(
        InferencePlan(precision="fp8", effective_bits=8.75), catalog.accelerator("h200")
    )
    assert (hopper.wider, hopper.wider_compute) == ("bf16", "bf16")
    volta = resolve_precisions(InferencePlan(precision="fp8", effective_bits=12.0), v100)
    assert volta.wider == "fp16"  # no bf16 on V100: the 16-bit layers are fp16


@pytest.mark.parametrize(
    ("precision", "bits", "words"),
    [
        ("nvfp4", 8.5, "between 4 and 8"),
        ("nvfp4", 3.0, "between 4 and 8"),
        ("fp8", 7.0, "between 8 and 16"),
        ("bf16", 12.0, "neither"),
        ("int4", 6.0, "neither"),
    ],
)
def test_impossible_effective_bits_are_refused(precision: str, bits: float, words: str) -> None:
    with pytest.raises(InvalidPlanError, match=words):
        InferencePlan(precision=precision, effective_bits=bits)


def test_mixed_weights_take_their_share_of_memory(models: ModelRegistry, catalog: Catalog) -> None:
    load = ServingLoad(1024, 16, concurrency=1)
    nvfp4 = _estimate(models, catalog, load, precision="nvfp4")
    mixed = _estimate(models, catalog, load, precision="nvfp4", effective_bits=7.25)
    fp8 = _estimate(models, catalog, load, precision="fp8")
    extra = mixed.memory_bytes["weights"] - nvfp4.memory_bytes["weights"]
    assert extra == pytest.approx(MIXTRAL_LINEAR_WEIGHTS * (MIXED_BYTES_PER_WEIGHT - 0.5625), rel=0.002)
    short = fp8.memory_bytes["weights"] - mixed.memory_bytes["weights"]
    assert short == pytest.approx(MIXTRAL_LINEAR_WEIGHTS * 0.1875 * (1.0 - 0.5625), rel=0.002)


def test_mixed_gemms_take_their_share_of_time(catalog: Catalog) -> None:
    """A long prompt's GEMM is compute-bound in every format: the mixed checkpoint's is the two
    formats' times weighted by their shares (each layer runs in its own format), beside one
    kernel's fixed GPU time. Within 0.01%: the mixed GEMM's math and traffic are combined near the
    ridge as one kernel's (``EfficiencyModel.kernel_s``), and at 8,192 rows the traffic is under a
    tenth of the math, so the combination adds under (1/10)^3 / 3 of it."""
    cluster = catalog.resolve_cluster("dgx-b200", 1)
    times = {}
    for name, plan in {
        "nvfp4": InferencePlan(precision="nvfp4"),
        "fp8": InferencePlan(precision="fp8"),
        "mixed": InferencePlan(precision="nvfp4", effective_bits=7.25),
    }.items():
        hardware = inference_hardware_for(cluster, plan)
        times[name] = float(gemm_time_s(hardware, 8192.0, 14336, 4096)) - hardware.floors.gpu_kernel_s
    assert times["nvfp4"] < times["mixed"] < times["fp8"]
    expected = (1.0 - FP8_SHARE) * times["nvfp4"] + FP8_SHARE * times["fp8"]
    assert times["mixed"] == pytest.approx(expected, rel=1e-4)


def test_the_plan_and_its_assumptions_say_the_mix(models: ModelRegistry, catalog: Catalog) -> None:
    estimate = _estimate(
        models, catalog, ServingLoad(512, 128, concurrency=8), precision="nvfp4", effective_bits=7.25
    )
    assert "(7.25 effective bits)" in InferencePlan(precision="nvfp4", effective_bits=7.25).describe()
    text = " ".join(estimate.assumptions)
    assert "7.25 effective bits: 81% of those layers (by parameters) kept in fp8" in text


def test_mlperf_mixtral_checkpoints_are_cited_data() -> None:
    mixtral = load_mlperf_workload("mixtral-8x7b")
    blackwell = mixtral.checkpoint("Blackwell", "b200", "5.1")
    assert blackwell is not None
    assert (blackwell.precision, blackwell.effective_bits) == ("nvfp4", 7.25)
    hopper = mixtral.checkpoint("Hopper", "h200-sxm", "5.0")
    assert hopper is not None
    assert (hopper.precision, hopper.effective_bits) == ("fp8", 8.75)
    v41 = mixtral.checkpoint("Hopper", "h200-sxm", "4.1")  # v4.1's harness shipped all-FP8
    assert v41 is not None
    assert (v41.precision, v41.effective_bits) == ("fp8", None)
    assert mixtral.checkpoint("Hopper", "h200-sxm", "4.0") is None  # that round's code is not cited
    assert mixtral.checkpoint("Blackwell", "gb200", "5.1") is None  # only the B200 config is
    assert load_mlperf_workload("llama2-70b").checkpoints == ()


def test_a_checkpoint_that_no_plan_can_run_is_refused(tmp_path: Path) -> None:
    shipped = resources.files("lightspeed.sol.serve") / "data" / "mlperf.toml"
    broken = shipped.read_text().replace("effective_bits = 7.25", "effective_bits = 9.5", 1)
    path = tmp_path / "mlperf.toml"
    path.write_text(broken)
    with pytest.raises(DataFileError, match=r"between 4 and 8.*checkpoints\[0\]"):
        load_mlperf_workloads(path)


def _mlperf_rows(path: Path) -> Path:
    """MLPerf Mixtral Offline rows (TP stated, so no split is simulated): v5.0 on B200 and H200
    (in the data file), v4.1 on H200 (all-FP8 that round), and v5.0 on B200 with the precision stated."""
    columns = [
        "id",
        "kind",
        "source",
        "hardware",
        "precision",
        "model",
        "seq",
        "TP",
        "GPUs",
        "metric",
        "measured",
    ]
    common = ["Mixtral 8x7B", "MLPerf mixtral-8x7b Offline", "1", "8", "Tokens per second", "1000"]
    v50, b200, h200 = (
        "MLPerf Inference v5.0 closed, TensorRT-LLM",
        "B200-SXM-180GBx8_TRT",
        "H200-SXM-141GBx8_TRT",
    )
    rows = [
        ["X1", "infer", v50, b200, ""],
        ["X2", "infer", v50, h200, ""],
        ["X3", "infer", "MLPerf Inference v4.1 closed", h200, ""],
        ["X4", "infer", v50, b200, "FP8"],
    ]
    file = path / "mlperf-mixtral.tsv"
    with file.open("w", newline="") as handle:
        writer = csv.writer(handle, delimiter="\t")
        writer.writerow(columns)
        writer.writerows(row + common for row in rows)
    return file


def test_mlperf_rows_read_the_submitted_checkpoint(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    specs = {
        row.row_id: read_inference_row(row, catalog, models) for row in read_table(_mlperf_rows(tmp_path))
    }
    plans = {key: (spec.plan.precision, spec.plan.effective_bits) for key, spec in specs.items()}
    assert plans == {
        "X1": ("nvfp4", 7.25),  # the B200 config's 7.25 bits
        "X2": ("fp8", 8.75),  # the Hopper config's 8.75 bits
        "X3": ("fp8", None),  # v4.1: the all-FP8 checkpoint that round's code ships
        "X4": ("fp8", None),  # the row's own cell wins
    }
    assert any("7.25 effective bits (per-layer mixed)" in note for note in specs["X1"].assumptions)
    assert any("the checkpoint the MLPerf v4.1 code builds" in note for note in specs["X3"].assumptions)


def test_a_search_keeps_the_mix_in_every_frontier_plan(models: ModelRegistry, catalog: Catalog) -> None:
    """The frontier's plans (which the goodput search simulates) are mixed as the search was asked."""
    model, cluster = models.get("llama-2-70b"), catalog.resolve_cluster("dgx-b200")
    mixed = search_inference(
        model=model, cluster=cluster, load=ServingLoad(1024, 128), precision="nvfp4", effective_bits=7.25
    )
    assert {point.deployment.effective_bits for point in mixed.frontier} == {7.25}
    assert all(point.plan == point.deployment.describe() for point in mixed.frontier)
    assert all("(7.25 effective bits)" in point.plan for point in mixed.frontier)
