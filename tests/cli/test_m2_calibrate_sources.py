"""``calibrate`` names the run that holds a refused point, not every run it read (expert check M2,
defect 4)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lightspeed.bench import BenchResult, make_result
from lightspeed.errors import UserInputError
from lightspeed.gate import benchmark_records
from lightspeed.sol import CalibrationInputs, GemmPoint, calibrate, default_efficiency
from lightspeed.store import open_store

SIZES = (128, 256, 512, 1024)


def _gemm(size: int, fraction_of_sol: float) -> BenchResult:
    peak = 1e11
    return make_result(
        suite="gemm", name=f"gemm {size}x{size}x{size}", dtype="fp32", flop_per_call=2 * size**3,
        samples=[fraction_of_sol * peak], unit="FLOP/s", best="median", sol=peak, sol_note="test peak",
        correct=True, device="cpu", sol_device="local cpu", details={"m": size, "n": size, "k": size},
    )  # fmt: skip


def _triad(fraction_of_sol: float) -> BenchResult:
    sol = 1e11
    return make_result(
        suite="membw", name="stream triad", dtype=None, size_bytes=3 * 2**26, samples=[fraction_of_sol * sol],
        unit="B/s",
        best="max", sol=sol, sol_note="test bandwidth", correct=True, device="cpu", sol_device="local cpu",
    )  # fmt: skip


def _launch() -> BenchResult:
    return make_result(
        suite="launch", name="dispatch", dtype=None, num_ops_per_sample=100, samples=[2e-6], unit="s",
        best="min", sol=None, sol_note="", correct=True, device="cpu", sol_device="local cpu",
    )  # fmt: skip


def _store(results: list[BenchResult], label: str) -> str:
    with open_store() as store:
        return store.add_records(kind="benchmark", records=benchmark_records(results), label=label)


def test_a_gemm_above_its_sol_names_the_gemm_run_only(run_cli) -> None:  # type: ignore[no-untyped-def]
    gemm_run = _store([_gemm(size, 1.25) for size in SIZES], "gemm")  # 125% of the SOL: refused
    membw_run = _store([_triad(0.8)], "membw")
    launch_run = _store([_launch()], "launch")
    refused = run_cli("calibrate", "--no-save")
    assert refused.code == 2
    assert "GEMM 128x128x128 (fp32) from " + gemm_run + " is 125% of its SOL" in refused.err
    assert membw_run not in refused.err
    assert launch_run not in refused.err


def test_a_stream_above_its_sol_names_the_membw_run_only(run_cli) -> None:  # type: ignore[no-untyped-def]
    gemm_run = _store([_gemm(size, 0.5) for size in SIZES], "gemm")
    membw_run = _store([_triad(1.2)], "membw")
    refused = run_cli("calibrate", "--no-save")
    assert refused.code == 2
    assert f"STREAM from {membw_run} is 120% of its SOL" in refused.err
    assert gemm_run not in refused.err


def test_result_files_are_named_the_same_way(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    gemm_file, membw_file = tmp_path / "gemm.json", tmp_path / "membw.json"
    gemm_file.write_text(json.dumps([_gemm(size, 1.25).to_dict() for size in SIZES]), encoding="utf-8")
    membw_file.write_text(json.dumps([_triad(0.8).to_dict()]), encoding="utf-8")
    refused = run_cli("calibrate", "--no-save", "--from", str(gemm_file), "--from", str(membw_file))
    assert refused.code == 2
    assert f"from {gemm_file} is 125%" in refused.err
    assert str(membw_file) not in refused.err


def test_the_library_names_the_suites_own_sources() -> None:
    points = tuple(GemmPoint(m=s, n=s, k=s, achieved_flop_per_s=1.3e11, peak_flop_per_s=1e11) for s in SIZES)
    inputs = CalibrationInputs(
        gemm=points, memory_fractions=(0.8,), sources=("run-g", "run-m"),
        suite_sources={"gemm": ("run-g",), "membw": ("run-m",)}, gemm_dtype="fp32",
    )  # fmt: skip
    with pytest.raises(UserInputError) as refused:
        calibrate(inputs=inputs, base=default_efficiency("cpu"), name="t")
    assert "GEMM 128x128x128 (fp32) from run-g is 130%" in str(refused.value)
    # inputs that do not say which source holds what blame them all, as before
    with pytest.raises(UserInputError, match="from run-g, run-m is 130%"):
        calibrate(inputs=CalibrationInputs(gemm=points, sources=("run-g", "run-m"), gemm_dtype="fp32"),
                  base=default_efficiency("cpu"), name="t")  # fmt: skip
