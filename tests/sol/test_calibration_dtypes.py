"""Calibration by format: FP8 (FP4) GEMMs fit their own ceiling, a measured HBM efficiency reaches
inference, and impossible measurements are refused (review defects 1, 2, 8)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from lightspeed.bench import BenchResult, make_result
from lightspeed.errors import UserInputError
from lightspeed.gate import calibration_inputs
from lightspeed.sol import (
    CalibrationInputs,
    GemmPoint,
    calibrate,
    default_efficiency,
    load_calibration,
    save_calibration,
)

SIZES = (256, 512, 1024, 2048, 4096, 8192)
# Family ceilings from sol/data/efficiency.toml (MAMF): Hopper BF16 794.5 / 989 = 0.803, FP8
# 1402.6 / 1979 = 0.709; Blackwell BF16 0.776, FP8 0.685, FP4 0.557; Hopper's FP8/BF16 ratio
# 0.709 / 0.803 = 0.883 derives a ceiling a family does not state.
HOPPER_BF16, HOPPER_FP8 = 0.803, 0.709
BLACKWELL_BF16, BLACKWELL_FP8 = 0.776, 0.685
FP8_OVER_BF16 = 0.709 / 0.803


def _points(maximum: float, half: float, *, tile: int = 128, peak: float = 1979e12) -> tuple[GemmPoint, ...]:
    # Hand-written curve (not the engine's code): eff = max x P / (P + half) x m / (m + tile / 8),
    # P = F (m + tile / 8) / m the padded work; square sizes on whole tiles.
    points = []
    for size in SIZES:
        padded = 2.0 * size**3 * (size + tile / 8) / size
        efficiency = maximum * padded / (padded + half) * size / (size + tile / 8)
        points.append(
            GemmPoint(m=size, n=size, k=size, achieved_flop_per_s=efficiency * peak, peak_flop_per_s=peak)
        )
    return tuple(points)


def test_fp8_gemms_fit_the_fp8_ceiling_and_leave_bf16_alone() -> None:
    # An H100 whose FP8 GEMMs reach 40% at best (half-saturation 1e10 FLOP, on the fit's grid).
    base = default_efficiency("nvidia-hopper")
    inputs = CalibrationInputs(gemm=_points(0.40, 1e10), gemm_dtype="fp8")
    result = calibrate(inputs=inputs, base=base, name="h100fp8", device="h100-sxm")
    model = result.model
    assert model.gemm_ceiling("fp8") == pytest.approx(0.40, rel=1e-6)
    assert model.gemm_ceiling("int8") == pytest.approx(0.40, rel=1e-6)  # INT8 runs on the FP8 ceiling
    assert model.gemm_ceiling("bf16") == HOPPER_BF16  # not measured: the family's
    # one half-saturation serves every format and describes BF16: FP8 shapes do not move it
    assert model.gemm_half_saturation_flop == base.gemm_half_saturation_flop
    assert set(result.fitted) == {"gemm_max_efficiency_fp8"}
    assert result.gemm_ceilings["gemm_max_efficiency"].startswith("kept")
    assert "1e+10" in result.kept["gemm_half_saturation_flop"]  # what the FP8 shapes alone fit
    # FP4 on Hopper has no figure of its own: derived from the (now measured) FP8 ceiling
    assert result.gemm_ceilings["gemm_max_efficiency_fp4"].startswith("derived")
    assert model.gemm_ceiling("fp4") == pytest.approx(0.40 * FP8_OVER_BF16, rel=1e-6)


def test_bf16_gemms_keep_a_stated_fp8_ceiling_and_move_a_derived_one() -> None:
    hopper = calibrate(
        inputs=CalibrationInputs(gemm=_points(0.60, 1e10, peak=989e12), gemm_dtype="bf16"),
        base=default_efficiency("nvidia-hopper"),
        name="h100bf16",
    )
    assert hopper.model.gemm_ceiling("bf16") == pytest.approx(0.60, rel=1e-6)
    assert hopper.model.gemm_ceiling("fp8") == HOPPER_FP8  # Hopper states its FP8 ceiling: kept
    assert hopper.gemm_ceilings["gemm_max_efficiency_fp8"].startswith("kept")
    # Ada states no FP8 ceiling: the model derives it from BF16 (x 0.883), so it follows the fit
    ada = calibrate(
        inputs=CalibrationInputs(gemm=_points(0.60, 1e10, peak=362e12), gemm_dtype="bf16"),
        base=default_efficiency("nvidia-ada"),
        name="l40s",
    )
    assert ada.model.gemm_ceiling("fp8") == pytest.approx(0.60 * FP8_OVER_BF16, rel=1e-6)
    assert ada.gemm_ceilings["gemm_max_efficiency_fp8"].startswith("derived")


def test_fp4_gemms_fit_the_fp4_ceiling() -> None:
    base = default_efficiency("nvidia-blackwell")
    inputs = CalibrationInputs(gemm=_points(0.45, 1e10, tile=base.gemm_tile, peak=9e15), gemm_dtype="fp4")
    model = calibrate(inputs=inputs, base=base, name="b200fp4").model
    assert model.gemm_ceiling("fp4") == pytest.approx(0.45, rel=1e-6)
    assert (model.gemm_ceiling("bf16"), model.gemm_ceiling("fp8")) == (BLACKWELL_BF16, BLACKWELL_FP8)


def test_an_fp8_profile_saves_and_loads_its_ceiling() -> None:
    result = calibrate(
        inputs=CalibrationInputs(gemm=_points(0.40, 1e10), gemm_dtype="fp8"),
        base=default_efficiency("nvidia-hopper"),
        name="h100fp8",
        device="h100-sxm",
    )
    loaded = load_calibration(str(save_calibration(result)))
    assert loaded.gemm_max_efficiency_fp8 == pytest.approx(0.40, rel=1e-6)
    assert loaded.gemm_max_efficiency == HOPPER_BF16


def test_benchmark_results_carry_the_format_they_fit() -> None:
    def gemm(size: int, dtype: str) -> dict[str, object]:
        return {"suite": "gemm", "dtype": dtype, "value": 4e14, "sol": 1979e12, "correct": True,
                "details": {"m": size, "n": size, "k": size}}  # fmt: skip

    payloads = [gemm(1024, "fp8"), gemm(2048, "fp8"), gemm(1024, "bf16")]
    inputs = calibration_inputs(payloads, dtype="fp8")
    assert (inputs.gemm_dtype, len(inputs.gemm)) == ("fp8", 2)
    assert inputs.gemm_dtypes_measured == ("bf16", "fp8")
    fitted = calibrate(inputs=inputs, base=default_efficiency("nvidia-hopper"), name="x").fitted
    assert set(fitted) == {"gemm_max_efficiency_fp8"}


def test_no_results_of_the_format_asked_for_say_what_was_measured() -> None:
    result = calibrate(
        inputs=CalibrationInputs(gemm_dtype="fp8", gemm_dtypes_measured=("bf16",), memory_fractions=(0.7,)),
        base=default_efficiency("nvidia-hopper"),
        name="x",
    )
    assert result.kept["gemm_max_efficiency_fp8"].startswith("no fp8 GEMM results; measured: bf16")


def test_a_measured_hbm_efficiency_scales_weight_streaming() -> None:
    # STREAM at 0.50 where Hopper expects 0.85: decode kernels stream at 0.80 x 0.50 / 0.85.
    hopper = default_efficiency("nvidia-hopper")
    result = calibrate(inputs=CalibrationInputs(memory_fractions=(0.50,)), base=hopper, name="m")
    assert result.model.streaming_efficiency(0.80) == pytest.approx(0.80 * 0.50 / 0.85, rel=1e-12)
    assert load_calibration(str(save_calibration(result))).streaming_efficiency(0.80) == pytest.approx(
        0.80 * 0.50 / 0.85, rel=1e-12
    )
    assert hopper.streaming_efficiency(0.80) == 0.80  # family defaults: untouched


def _triad(fraction: float) -> BenchResult:
    bandwidth = 3.35e12  # H100 SXM HBM3, the catalog's figure
    return make_result(
        suite="membw", name="stream triad", dtype="fp32", size_bytes=2**30, samples=[fraction * bandwidth],
        unit="B/s", best="max", sol=bandwidth, sol_note="", correct=True, device="cuda:0",
        sol_device="h100-sxm", details={"bytes_moved": 3 * 2**30, "num_elements": 2**28},
    )  # fmt: skip


def test_plan_infer_decodes_at_the_calibrated_hbm_efficiency(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "membw.json"
    path.write_text(json.dumps([_triad(0.50).to_dict()]))
    assert run_cli("calibrate", "--from", str(path), "--name", "hbm50").code == 0
    infer = ("plan", "infer", "--model", "llama-3-8b", "--system", "dgx-h100", "--gpus", "1",
             "--precision", "bf16", "--max-batch", "1", "--isl", "128", "--osl", "128", "--json")  # fmt: skip
    default = json.loads(run_cli(*infer).out)
    calibrated_run = run_cli(*infer, "--calibration", "hbm50")
    assert calibrated_run.code == 0, calibrated_run.err
    calibrated = json.loads(calibrated_run.out)
    # One decode step of one sequence streams the weights (and a few KV tokens) from HBM at
    # 3.35 TB/s x 0.80 by default, x 0.80 x 0.50 / 0.85 calibrated: each byte costs
    # (0.85 / 0.50 - 1) / (3.35e12 x 0.80) = 2.612e-13 s more. Streamed: at least the weights
    # without the embedding table, (8,030,261,248 - 128,256 x 4,096) x 2 B = 15.010e9 B; at most
    # all weights, 16.061e9 B, plus the KV cache of 256 tokens x 131,072 B = 0.034e9 B.
    extra_per_byte = (0.85 / 0.50 - 1.0) / (3.35e12 * 0.80)
    slower = calibrated["tpot_s"] - default["tpot_s"]
    assert 15.010e9 * extra_per_byte * 0.999 <= slower <= 16.095e9 * extra_per_byte
    assumptions = " ".join(calibrated["assumptions"])
    assert "weight/KV streaming at 47% of 3.35 TB/s" in assumptions  # 0.80 x 0.50 / 0.85


def test_impossible_measurements_are_refused_unless_forced() -> None:
    base = default_efficiency("nvidia-hopper")
    over = CalibrationInputs(memory_fractions=(1.2,))  # STREAM at 120% of the HBM peak
    with pytest.raises(UserInputError, match=r"STREAM .* 120% of its SOL, above the 105%.*--force"):
        calibrate(inputs=over, base=base, name="x")
    forced = calibrate(inputs=over, base=base, name="x", force=True)
    assert forced.model.memory_efficiency == 1.2
    assert any("above 1" in note for note in forced.notes)
    # 1e300 FLOP/s against a 1979 TFLOP/s peak: refused without a numpy warning (pytest turns
    # warnings into errors); forced, the fit overflows and is refused as not finite
    huge = CalibrationInputs(
        gemm=tuple(
            GemmPoint(m=s, n=s, k=s, achieved_flop_per_s=1e300, peak_flop_per_s=1979e12) for s in SIZES
        ),
        gemm_dtype="fp8",
    )
    with pytest.raises(UserInputError, match=r"GEMM 256x256x256 \(fp8\) .* of its SOL"):
        calibrate(inputs=huge, base=base, name="x")
    with pytest.raises(UserInputError, match="not a positive finite number"):
        calibrate(inputs=huge, base=base, name="x", force=True)
    with pytest.raises(UserInputError, match="dispatch seconds is inf, not a finite number"):
        calibrate(inputs=CalibrationInputs(launch_s=(math.inf,)), base=base, name="x", force=True)
