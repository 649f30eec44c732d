"""``lightspeed calibrate``: from the store or a JSON file to a saved profile; bad input exits 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.conftest import FIXTURES

from lightspeed.bench import BenchResult, make_result
from lightspeed.gate import benchmark_records
from lightspeed.sol import load_calibration
from lightspeed.store import open_store


def _gemm(size: int, efficiency: float, *, device: str = "cpu", sol_device: str | None = None) -> BenchResult:
    peak = 1e11
    return make_result(
        suite="gemm", name=f"gemm {size}x{size}x{size}", dtype="fp32", flop_per_call=2 * size**3,
        samples=[efficiency * peak], unit="FLOP/s", best="median", sol=peak, sol_note="",
        correct=True, device=device, sol_device=sol_device, details={"m": size, "n": size, "k": size},
    )  # fmt: skip


def _triad(fraction: float) -> BenchResult:
    return make_result(
        suite="membw", name="stream triad", dtype="fp64", size_bytes=2**27, samples=[fraction * 4e10],
        unit="B/s", best="max", sol=4e10, sol_note="", correct=True, device="cpu",
        details={"bytes_moved": 3 * 2**27, "num_elements": 2**24},
    )  # fmt: skip


def _store(results: list[BenchResult], label: str) -> str:
    with open_store() as store:
        return store.add_records(kind="benchmark", records=benchmark_records(results), label=label)


def test_calibrate_from_store_saves_a_loadable_profile(run_cli) -> None:  # type: ignore[no-untyped-def]
    # eff = 0.8 P / (P + 1e8) x s / (s + 16 / 8), P = F (s + 2) / s the padded work: the curve the
    # fit must find again (the CPU family's 16-wide tiles; docs/sol.md: the token dimension is
    # smooth, m / (m + tile / 8), and the fixed cost is paid once beside the padded work)
    curve = {s: 2 * s**3 * (s + 2) / s for s in (128, 256, 512, 1024)}
    _store([_gemm(s, 0.8 * p / (p + 1e8) * s / (s + 2)) for s, p in curve.items()], "gemm")
    _store([_triad(0.6)], "membw")
    result = run_cli("calibrate", "--name", "box", "--json")
    assert result.code == 0, result.err
    data = json.loads(result.out)
    fitted = data["calibration"]["fitted"]
    assert abs(fitted["gemm_max_efficiency"] - 0.8) < 1e-6
    assert abs(fitted["memory_efficiency"] - 0.6) < 1e-12
    assert data["dtype"] == "fp32"
    assert Path(data["path"]).is_file()
    assert load_calibration("box").gemm_max_efficiency == fitted["gemm_max_efficiency"]
    assert run_cli("calibrate", "--list").out.split() == ["box"]
    table = run_cli("calibrate", "--name", "box2", "--no-save")
    assert "fitted" in table.out
    assert "kept" in table.out  # no launch or collective results: kept from the cpu family
    assert run_cli("calibrate", "--list", "--json").out.count("box2") == 0


def test_calibrate_from_bench_json_file(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    results = [_gemm(s, 0.5, device="cuda:0", sol_device="h100-sxm") for s in (1024, 2048, 4096)]
    path = tmp_path / "bench.json"
    path.write_text(json.dumps([result.to_dict() for result in results]))
    result = run_cli("calibrate", "--from", str(path), "--name", "gpu", "--json")
    assert result.code == 0, result.err
    data = json.loads(result.out)
    assert data["calibration"]["base"] == "nvidia-hopper"  # family of the SOL's catalog record
    assert data["calibration"]["model"]["gemm_tile"] == 128


def test_bad_inputs_exit_2(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    missing = run_cli("calibrate")  # no store: named, and not created
    assert missing.code == 2
    assert "does not exist" in missing.err
    open_store(create=True).close()
    empty = run_cli("calibrate")
    assert empty.code == 2
    assert "no benchmark results" in empty.err
    no_sol = make_result(
        suite="gemm", name="g", dtype="fp32", flop_per_call=1, samples=[1.0], unit="FLOP/s", best="median",
        sol=None, sol_note="", correct=True, device="cpu", details={"m": 1, "n": 1, "k": 1},
    )  # fmt: skip
    _store([no_sol], "gemm")
    nothing = run_cli("calibrate")
    assert nothing.code == 2
    assert "nothing to fit" in nothing.err
    bad_name = run_cli("calibrate", "--name", "../escape")
    assert bad_name.code == 2
    assert "not allowed" in bad_name.err
    garbage = tmp_path / "garbage.json"
    garbage.write_text("{not json")
    parsed = run_cli("calibrate", "--from", str(garbage))
    assert parsed.code == 2
    assert "not valid JSON" in parsed.err
    assert parsed.err.count("\n") == 1


TRAIN = ("plan", "train", "--model", "llama-3-8b", "--system", "dgx-h100", "--tp", "2", "--global-batch", "8")


def test_a_calibration_from_another_device_is_refused_unless_forced(run_cli) -> None:  # type: ignore[no-untyped-def]
    # Issue 28: a CPU calibration was applied to an H100 plan without a word.
    _store([_gemm(s, 0.5) for s in (128, 256, 512)], "gemm")
    assert run_cli("calibrate", "--name", "laptop").code == 0
    assert load_calibration("laptop").measured_on == "cpu"
    refused = run_cli(*TRAIN, "--calibration", "laptop")
    assert refused.code == 2
    assert refused.err.count("\n") == 1
    assert "calibration 'laptop' was measured on cpu, not on h100-sxm" in refused.err
    assert "--force" in refused.err
    forced = run_cli(*TRAIN, "--calibration", "laptop", "--force", "--json")
    assert forced.code == 0, forced.err
    assumptions = " ".join(json.loads(forced.out)["assumptions"])
    assert "measured on cpu, not on h100-sxm (applied anyway: --force)" in assumptions
    assert "--force applies it to other devices too" in forced.err
    search = run_cli(
        "search", "train", "--model", "llama-3-8b", "--system", "dgx-h100", "--global-batch", "8",
        "--calibration", "laptop", "--force",
    )  # fmt: skip
    assert search.code == 0, search.err
    assert "note: calibration 'laptop' was measured on cpu" in search.out


def test_a_gpu_calibration_applies_to_its_own_device_only(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    results = [_gemm(s, 0.5, device="cuda:0", sol_device="h100-sxm") for s in (1024, 2048, 4096)]
    path = tmp_path / "bench.json"
    path.write_text(json.dumps([result.to_dict() for result in results]))
    assert run_cli("calibrate", "--from", str(path), "--name", "h100").code == 0
    assert run_cli(*TRAIN, "--calibration", "h100").code == 0
    on_a100 = run_cli(*(("dgx-a100" if arg == "dgx-h100" else arg) for arg in TRAIN), "--calibration", "h100")
    assert on_a100.code == 2
    assert "measured on h100-sxm, not on a100-sxm" in on_a100.err


def test_results_from_two_devices_make_no_profile(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    results = [_gemm(1024, 0.5, device="cuda:0", sol_device="h100-sxm"), _gemm(2048, 0.5)]
    path = tmp_path / "bench.json"
    path.write_text(json.dumps([result.to_dict() for result in results]))
    mixed = run_cli("calibrate", "--from", str(path), "--name", "mixed")
    assert mixed.code == 2
    assert "several devices (cpu, h100-sxm)" in mixed.err


def test_a_calibration_from_a_real_h200s_bench_results(run_cli) -> None:  # type: ignore[no-untyped-def]
    """The suites' JSON as an H200 wrote it (tests/fixtures/h200-bench): the profile takes the
    measured STREAM triad over the datasheet's 4.8 TB/s, the measured dispatch time, and a GEMM
    ceiling between the sustained large shapes (0.69-0.73 of the 989.5 TFLOP/s dense peak) and the
    best one (0.788); it applies to H200 plans and is refused on an H100."""
    folder = FIXTURES / "h200-bench"
    membw = json.loads((folder / "membw.json").read_text())
    triad = next(r for r in membw if r["name"] == "stream triad")["value"]
    dispatch = next(r for r in json.loads((folder / "launch.json").read_text()) if r["name"] == "dispatch")
    paths = [str(folder / f"{suite}.json") for suite in ("gemm_bf16", "membw", "launch")]
    made = run_cli(
        "calibrate", *(arg for path in paths for arg in ("--from", path)), "--name", "h200", "--json"
    )
    assert made.code == 0, made.err
    calibration = json.loads(made.out)["calibration"]
    assert calibration["device"] == "h200-sxm"
    model = calibration["model"]
    assert model["memory_efficiency"] == pytest.approx(triad / 4.8e12)  # 4.26 / 4.8 = 0.887
    assert model["kernel_launch_s"] == pytest.approx(dispatch["value"])  # 6.7 us
    assert 0.69 <= model["gemm_max_efficiency"] <= 0.79
    h200 = [("dgx-h200" if arg == "dgx-h100" else arg) for arg in TRAIN]
    planned = run_cli(*h200, "--calibration", "h200")
    assert planned.code == 0, planned.err
    assert "efficiency model 'h200'" in planned.out
    on_h100 = run_cli(*TRAIN, "--calibration", "h200")
    assert on_h100.code == 2
    assert "measured on h200-sxm, not on h100-sxm" in on_h100.err
