"""The expert check of bench, calibrate and results (defects 1, 4, 6, 8 and 9) through the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lightspeed.bench import BenchResult, make_result
from lightspeed.cli import bench as cli_bench
from lightspeed.environment import environment_fingerprint
from lightspeed.gate import benchmark_records
from lightspeed.sol import list_calibrations
from lightspeed.store import open_store

SIZES = (128, 256, 512, 1024)


def _gemm(size: int, efficiency: float, *, sol: float | None = 1e11, sol_device: str | None = "local cpu",
          dtype: str = "fp32") -> BenchResult:  # fmt: skip
    peak = 1e11
    return make_result(
        suite="gemm", name=f"gemm {size}x{size}x{size}", dtype=dtype, flop_per_call=2 * size**3,
        samples=[efficiency * peak], unit="FLOP/s", best="median", sol=sol, sol_note="no CPU peak: test",
        correct=True, device="cpu", sol_device=sol_device, details={"m": size, "n": size, "k": size},
    )  # fmt: skip


def _curve(maximum: float) -> list[BenchResult]:
    """GEMMs on the engine's curve: eff = max x P / (P + 1e8) x s / (s + 2), P = 2 s^3 (s + 2) / s (the
    padded work of the CPU family's 16-wide tiles, as tests/cli/test_calibrate.py derives it)."""
    padded = {s: 2 * s**3 * (s + 2) / s for s in SIZES}
    return [_gemm(s, maximum * p / (p + 1e8) * s / (s + 2)) for s, p in padded.items()]


def _launch() -> BenchResult:
    return make_result(
        suite="launch", name="dispatch", dtype=None, num_ops_per_sample=100, samples=[2e-6], unit="s",
        best="min", sol=None, sol_note="", correct=True, device="cpu", sol_device="local cpu",
    )  # fmt: skip


def _store(results: list[BenchResult], label: str, fingerprint: dict[str, Any] | None = None) -> str:
    with open_store() as store:
        return store.add_records(
            kind="benchmark", records=benchmark_records(results), label=label, fingerprint=fingerprint
        )


def test_calibrate_takes_the_newest_run_of_each_suite_not_of_each_label(run_cli) -> None:  # type: ignore[no-untyped-def]
    _store(_curve(0.8), "gemm")
    _store([_launch()], "gemm")  # newer, labelled gemm: it used to hide the GEMM run
    made = run_cli("calibrate", "--no-save", "--json")
    assert made.code == 0, made.err
    fitted = json.loads(made.out)["calibration"]["fitted"]
    assert fitted["gemm_max_efficiency"] == pytest.approx(0.8, abs=1e-6)
    assert fitted["kernel_launch_s"] == pytest.approx(2e-6)


def test_cpu_results_against_a_gpu_record_are_refused(run_cli) -> None:  # type: ignore[no-untyped-def]
    # the expert's repro: 'bench gemm --sol-device h100' on a CPU, then calibrate: 3e-4 of the
    # H100's 67 TFLOP/s FP32 tensor figure was fitted and saved
    _store(_curve(0.8), "gemm")
    _store([_gemm(s, 3e-4, sol_device="h100-sxm") for s in SIZES], "h100sol")
    refused = run_cli("calibrate")
    assert refused.code == 2
    assert refused.err.count("\n") == 1
    assert "against the SOL of h100-sxm" in refused.err
    assert list_calibrations() == []  # nothing saved


def test_results_against_several_sol_records_are_refused(run_cli) -> None:  # type: ignore[no-untyped-def]
    detected = _store(_curve(0.8), "gemm")
    named = _store([_gemm(s, 0.4, sol_device="xeon-platinum-8480c") for s in SIZES], "named")
    refused = run_cli("calibrate", "--from", detected, "--from", named, "--no-save")
    assert refused.code == 2
    assert "several SOL records (local cpu: gemm; xeon-platinum-8480c: gemm)" in refused.err


def test_runs_from_different_hardware_are_refused(run_cli) -> None:  # type: ignore[no-untyped-def]
    # a shared store holds another machine's launch run beside this machine's GEMMs
    here = environment_fingerprint().to_dict()
    there = {**here, "host_name": "other-node", "cpu_model": "AMD EPYC 9654 96-Core Processor"}
    _store(_curve(0.8), "gemm", fingerprint=here)
    _store([_launch()], "launch", fingerprint=there)
    refused = run_cli("calibrate", "--no-save")
    assert refused.code == 2
    assert "different hardware" in refused.err
    assert "AMD EPYC 9654" in refused.err
    assert "--from" in refused.err


def test_a_ceiling_far_below_any_gemm_library_is_refused_unless_forced(run_cli) -> None:  # type: ignore[no-untyped-def]
    _store(_curve(3e-4), "gemm")  # a SOL 3,000 times too high
    refused = run_cli("calibrate", "--no-save")
    assert refused.code == 2
    assert "below the 1%" in refused.err
    assert "--force" in refused.err
    forced = run_cli("calibrate", "--no-save", "--force", "--json")
    assert forced.code == 0, forced.err
    assert json.loads(forced.out)["calibration"]["fitted"]["gemm_max_efficiency"] == pytest.approx(3e-4)


def test_a_half_saturation_at_the_edge_of_the_grid_is_noted(run_cli) -> None:  # type: ignore[no-untyped-def]
    # every shape at 50%: the flattest curve fits best, and the grid's flattest is its lowest half (1e3)
    _store([_gemm(s, 0.5) for s in SIZES], "gemm")
    made = run_cli("calibrate", "--no-save", "--json")
    assert made.code == 0, made.err
    notes = " ".join(json.loads(made.out)["calibration"]["notes"])
    assert "at the edge of the fit grid" in notes


def test_results_without_a_sol_are_named_as_such(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _store([_gemm(s, 0.5, sol=None) for s in SIZES], "gemm")
    _store([_launch()], "launch")
    table = run_cli("calibrate", "--no-save")
    assert table.code == 0, table.err
    flat = " ".join(table.out.split())
    assert "4 fp32 GEMM results, no SOL for them" in flat
    assert "no fp32 GEMM results" not in flat
    assert "no CPU peak: test" in flat  # why they have none
    stream = make_result(
        suite="membw", name="stream triad", dtype="fp64", size_bytes=2**27, samples=[1e10], unit="B/s",
        best="max", sol=None, sol_note="memory SOL: unknown", correct=True, device="cpu",
        details={"bytes_moved": 3 * 2**27, "num_elements": 2**24},
    )  # fmt: skip
    path = tmp_path / "membw.json"
    path.write_text(json.dumps([stream.to_dict()]))
    nothing = run_cli("calibrate", "--from", str(path), "--no-save")
    assert nothing.code == 2
    assert "1 STREAM results but none has a SOL" in nothing.err
    assert "'lightspeed bench membw --sol-device RECORD'" in nothing.err


def test_results_show_keeps_correctness_the_above_mark_and_the_notes(run_cli) -> None:  # type: ignore[no-untyped-def]
    above = make_result(
        suite="gemm", name="gemm 256x256x256", dtype="fp32", flop_per_call=2 * 256**3, samples=[124.7e9],
        unit="FLOP/s", best="median", sol=100e9, sol_note="CPU peak for 1 of 2 cores (1 thread): test",
        correct=True, device="cpu", above_sol_note="turbo can exceed it",
        details={"m": 256, "n": 256, "k": 256, "load_note": "the machine was busy"},
    )  # fmt: skip
    wrong = make_result(
        suite="gemm", name="gemm 512x512x512", dtype="fp32", flop_per_call=2 * 512**3, samples=[50e9],
        unit="FLOP/s", best="median", sol=100e9, sol_note="CPU peak for 1 of 2 cores (1 thread): test",
        correct=False, device="cpu", details={"m": 512, "n": 512, "k": 512},
    )  # fmt: skip
    _store([above, wrong], "gemm")
    shown = run_cli("results", "show", "latest")
    assert shown.code == 0, shown.err
    flat = " ".join(shown.out.split())
    assert "124.7% *" in flat  # 124.7 / 100 GFLOP/s
    assert "WRONG" in flat
    assert "1 result(s) failed their correctness check" in flat
    assert "CPU peak for 1 of 2 cores (1 thread): test" in flat
    assert "* above the SOL: turbo can exceed it" in flat
    assert "the machine was busy" in flat


def test_plot_is_refused_for_a_suite_without_a_roofline(run_cli, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("torch")
    monkeypatch.setattr(cli_bench, "run_launch", lambda **_: [])  # never timed: refused first
    refused = run_cli("bench", "launch", "--quick", "--no-save", "--plot", "x.png")
    assert refused.code == 2
    assert refused.err.count("\n") == 1
    assert "--plot" in refused.err
    assert "gemm and membw" in refused.err


def test_a_repeated_dtype_is_refused_before_any_run(run_cli, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("torch")
    asked: list[list[str]] = []

    def fake_gemm(**kwargs: Any) -> list[BenchResult]:
        asked.append(list(kwargs["dtypes"]))
        return []

    monkeypatch.setattr(cli_bench, "run_gemm", fake_gemm)
    result = run_cli("bench", "gemm", "--quick", "--no-save", "--dtype", "fp32,bf16", "--dtype", "FP32")
    assert result.code == 2
    assert "FP32 is given twice; name each once" in result.err
    assert asked == []
