"""Calibration: the fits recover known parameters; profiles save, load and fail clearly."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lightspeed.errors import DataFileError, UnknownNameError, UserInputError
from lightspeed.gate import calibration_inputs
from lightspeed.paths import lightspeed_home
from lightspeed.sol import (
    CalibrationInputs,
    CollectivePoint,
    GemmPoint,
    calibrate,
    calibration_path,
    default_efficiency,
    list_calibrations,
    load_calibration,
    save_calibration,
)
from lightspeed.sol.core.calibration import fit_collectives, fit_gemm

SIZES = (64, 128, 256, 512, 1024, 2048, 4096)


def _gemm_points(maximum: float, half: float, tile: int = 16, peak: float = 1e12) -> list[GemmPoint]:
    # Hand-written curve (not the engine's code): eff = max * P / (P + half) * m / (m + tile / 8),
    # P = F * (m + tile / 8) / m the padded work beside which the fixed cost is paid once
    # (docs/sol.md: the token dimension is smooth), square sizes on whole tiles.
    points = []
    for size in SIZES:
        padded = 2.0 * size**3 * (size + tile / 8) / size
        efficiency = maximum * padded / (padded + half) * size / (size + tile / 8)
        points.append(
            GemmPoint(m=size, n=size, k=size, achieved_flop_per_s=efficiency * peak, peak_flop_per_s=peak)
        )
    return points


def test_gemm_fit_recovers_known_parameters() -> None:
    maximum, half, error = fit_gemm(_gemm_points(0.85, 1e8), tile=16)
    assert maximum == pytest.approx(0.85, rel=1e-6)
    assert half == pytest.approx(1e8, rel=1e-6)  # 1e8 lies on the 20-per-decade grid
    assert error < 1e-9


@settings(max_examples=30, deadline=None)
@given(maximum=st.floats(0.1, 1.0), log_half=st.floats(5.0, 12.0))
def test_gemm_fit_reproduces_any_curve_closely(maximum: float, log_half: float) -> None:
    points = _gemm_points(maximum, 10.0**log_half)
    fitted_max, fitted_half, error = fit_gemm(points, tile=16)
    assert error < 0.03  # the grid is 20 points a decade
    for point in points:
        padded = 2.0 * point.m**3 * (point.m + 2.0) / point.m
        fitted = fitted_max * padded / (padded + fitted_half) * point.m / (point.m + 2.0)
        assert fitted == pytest.approx(point.achieved_flop_per_s / point.peak_flop_per_s, rel=0.05)


def test_collective_fit_recovers_alpha_and_efficiency() -> None:
    link, efficiency, alpha = 50e9, 0.6, 20e-6
    points = [
        CollectivePoint(bus_bytes=size, time_s=alpha + size / (link * efficiency), link_bytes_per_s=link)
        for size in (2.0**p for p in range(10, 30, 2))
    ]
    fitted_efficiency, fitted_alpha = fit_collectives(points)
    assert fitted_efficiency == pytest.approx(0.6, rel=1e-6)
    assert fitted_alpha == pytest.approx(20e-6, rel=1e-4)


def test_calibrate_fits_what_it_can_and_keeps_the_rest() -> None:
    base = default_efficiency("cpu")
    inputs = CalibrationInputs(
        gemm=tuple(_gemm_points(0.7, 1e7)), memory_fractions=(0.3, 0.45, 0.4), launch_s=(3e-6, 1e-6, 2e-6)
    )
    result = calibrate(inputs=inputs, base=base, name="test")
    model = result.model
    assert model.gemm_max_efficiency == pytest.approx(0.7, rel=1e-6)
    assert model.memory_efficiency == 0.45  # best of the STREAM runs, as STREAM reports
    assert model.kernel_launch_s == 2e-6  # median
    assert model.collective_bandwidth_efficiency == base.collective_bandwidth_efficiency
    assert set(result.kept) == {"collective_bandwidth_efficiency"}
    assert model.gemm_tile == base.gemm_tile
    assert model.name == "test"


def test_efficiency_above_one_is_refused_unless_forced() -> None:
    # 1.2 of the SOL is beyond the 1.05 a measurement may exceed it by: refused; forced, flagged
    inputs = CalibrationInputs(memory_fractions=(1.2,))
    with pytest.raises(UserInputError, match="above the 105%"):
        calibrate(inputs=inputs, base=default_efficiency("cpu"), name="x")
    result = calibrate(inputs=inputs, base=default_efficiency("cpu"), name="x", force=True)
    assert any("above 1" in note for note in result.notes)


def test_profile_round_trip(tmp_path: Path) -> None:
    result = calibrate(
        inputs=CalibrationInputs(gemm=tuple(_gemm_points(0.9, 1e9)), launch_s=(5e-6,)),
        base=default_efficiency("cpu"),
        name="laptop",
    )
    path = save_calibration(result)
    assert path == lightspeed_home() / "calibrations" / "laptop.toml"
    assert list_calibrations() == ["laptop"]
    loaded = load_calibration("laptop")
    assert loaded.gemm_max_efficiency == pytest.approx(0.9, rel=1e-9)
    assert loaded.gemm_half_saturation_flop == pytest.approx(1e9, rel=1e-9)
    assert loaded.kernel_launch_s == pytest.approx(5e-6)
    assert loaded.memory_efficiency == default_efficiency("cpu").memory_efficiency
    assert load_calibration(str(path)).name == "laptop"  # a file path works too
    assert not math.isnan(float(loaded.gemm_efficiency(1024, 1024, 1024)))


def test_bad_names_and_files() -> None:
    with pytest.raises(UserInputError, match="not allowed"):
        calibration_path("../etc/passwd")
    with pytest.raises(UnknownNameError, match="lightspeed calibrate"):
        load_calibration("never-saved")
    folder = lightspeed_home() / "calibrations"
    folder.mkdir(parents=True)
    (folder / "broken.toml").write_text('schema_version = 1\nname = "broken"\nbase = "cpu"\n[efficiency]\n')
    with pytest.raises(DataFileError, match="gemm_max_efficiency"):
        load_calibration("broken")
    (folder / "future.toml").write_text("schema_version = 7\n")
    with pytest.raises(DataFileError, match="schema_version"):
        load_calibration("future")


def test_points_from_benchmark_results() -> None:
    def gemm(size: int, correct: bool = True) -> dict[str, object]:
        return {"suite": "gemm", "dtype": "fp32", "value": 5e10, "sol": 1e11, "correct": correct,
                "details": {"m": size, "n": size, "k": size}}  # fmt: skip

    payloads = [
        gemm(256),
        gemm(512),
        gemm(1024, correct=False),  # a wrong result never calibrates anything
        {"suite": "gemm", "dtype": "bf16", "value": 1.0, "sol": 2.0, "correct": True, "details": {}},
        {"suite": "membw", "name": "stream copy", "value": 30.0, "sol": 100.0, "correct": True},
        {"suite": "membw", "name": "stream triad", "value": 25.0, "sol": 100.0, "correct": True},
        {"suite": "launch", "name": "dispatch", "value": 2e-6, "sol": None, "correct": True},
        {
            "suite": "collectives",
            "size": 1000,
            "value": 1.0,
            "sol": 10.0,
            "correct": True,
            "details": {"busbw_factor": 1.5, "time_s": 3e-3},
        },
    ]
    inputs = calibration_inputs(payloads, dtype="fp32")
    assert [point.m for point in inputs.gemm] == [256, 512]
    assert inputs.memory_fractions == (0.25,)  # the triad, not the copy
    assert inputs.launch_s == (2e-6,)
    assert inputs.collectives == (CollectivePoint(bus_bytes=1500.0, time_s=3e-3, link_bytes_per_s=10.0),)
    with pytest.raises(UserInputError, match="lacks a field"):
        calibration_inputs(
            [{"suite": "gemm", "dtype": "fp32", "value": 1.0, "sol": 2.0, "correct": True}], dtype="fp32"
        )
