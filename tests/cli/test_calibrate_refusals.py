"""``lightspeed calibrate`` by format and against impossible input: an FP8 profile moves FP8 plans
only, a missing format or a non-benchmark run is named, an efficiency above the SOL is refused
unless forced (review defects 1, 8 and 15)."""

from __future__ import annotations

import json
from pathlib import Path

from lightspeed.bench import BenchResult, make_result
from lightspeed.gate import benchmark_records
from lightspeed.store import NewRecord, open_store

PEAKS = {"bf16": 989e12, "fp8": 1979e12}  # H100 SXM dense peaks
TRAIN = ("plan", "train", "--model", "llama-3-8b", "--system", "dgx-h100", "--tp", "2",
         "--global-batch", "64", "--seq", "4096", "--json")  # fmt: skip


def _gemm(size: int, efficiency: float, dtype: str) -> BenchResult:
    peak = PEAKS[dtype]
    return make_result(
        suite="gemm", name=f"gemm {size}x{size}x{size}", dtype=dtype, flop_per_call=2 * size**3,
        samples=[efficiency * peak], unit="FLOP/s", best="median", sol=peak, sol_note="", correct=True,
        device="cuda:0", sol_device="h100-sxm", details={"m": size, "n": size, "k": size},
    )  # fmt: skip


def _write(path: Path, results: list[BenchResult]) -> str:
    path.write_text(json.dumps([result.to_dict() for result in results]))
    return str(path)


def _tokens_per_s(run_cli, *args: str) -> float:  # type: ignore[no-untyped-def]
    result = run_cli(*TRAIN, *args)
    assert result.code == 0, result.err
    return float(json.loads(result.out)["tokens_per_s"])


def test_an_fp8_profile_moves_fp8_plans_and_not_bf16_ones(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # FP8 GEMMs at 40% of the FP8 peak where Hopper's FP8 ceiling is 70.9% (MAMF)
    fp8 = _write(
        tmp_path / "fp8.json", [_gemm(s, 0.40 * s / (s + 16), "fp8") for s in (1024, 2048, 4096, 8192)]
    )
    made = run_cli("calibrate", "--from", fp8, "--name", "h100fp8", "--json")
    assert made.code == 0, made.err
    calibration = json.loads(made.out)["calibration"]
    assert set(calibration["fitted"]) == {"gemm_max_efficiency_fp8"}
    assert calibration["model"]["gemm_max_efficiency"] == 0.803  # Hopper's BF16 MAMF, kept
    bf16 = ("--precision", "bf16")
    assert _tokens_per_s(run_cli, *bf16, "--calibration", "h100fp8") == _tokens_per_s(run_cli, *bf16)
    fp8_plan = ("--precision", "fp8")
    assert _tokens_per_s(run_cli, *fp8_plan, "--calibration", "h100fp8") < _tokens_per_s(run_cli, *fp8_plan)


def test_a_format_not_measured_is_named(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    bf16 = _write(tmp_path / "bf16.json", [_gemm(s, 0.6, "bf16") for s in (1024, 2048, 4096)])
    refused = run_cli("calibrate", "--from", bf16, "--dtype", "fp8", "--no-save")
    assert refused.code == 2
    assert refused.err.count("\n") == 1
    assert "no fp8 GEMM results (measured: bf16)" in refused.err
    assert "--dtype bf16" in refused.err


def test_latest_must_be_a_benchmark_run(run_cli) -> None:  # type: ignore[no-untyped-def]
    with open_store() as store:
        store.add_records(
            kind="benchmark", records=benchmark_records([_gemm(1024, 0.6, "bf16")]), label="gemm"
        )
        store.add_records(
            kind="prediction",
            records=[NewRecord(name="tour", metric="step_time_s", value=1.0, unit="s", payload={})],
            label="tour predictions",
        )
    refused = run_cli("calibrate", "--from", "latest", "--no-save")
    assert refused.code == 2
    assert refused.err.count("\n") == 1
    assert "the newest stored run" in refused.err
    assert "is a prediction run, not a benchmark run" in refused.err


def test_above_the_sol_is_refused_unless_forced(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # 130% of the BF16 peak: no kernel outruns its SOL; the peak or the timer is wrong
    over = _write(tmp_path / "over.json", [_gemm(s, 1.30, "bf16") for s in (1024, 2048, 4096)])
    refused = run_cli("calibrate", "--from", over, "--name", "over")
    assert refused.code == 2
    assert refused.err.count("\n") == 1
    assert "GEMM 1024x1024x1024 (bf16)" in refused.err
    assert "130% of its SOL" in refused.err
    assert "--force" in refused.err
    forced = run_cli("calibrate", "--from", over, "--name", "over", "--force", "--no-save")
    assert forced.code == 0, forced.err
    assert "above 1" in forced.out
