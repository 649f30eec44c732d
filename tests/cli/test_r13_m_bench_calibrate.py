"""Round 13 fix M: ``calibrate`` carries the results' own warnings (a busy machine, a --quick STREAM
run the caches may hold) onto the parameters they fit (defect 5), and ``bench`` refuses a
``--dtype`` or ``--collective`` that names nothing (defect 6)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from expect import one_line_error
from lightspeed.bench import BenchResult, make_result
from lightspeed.sol import CalibrationInputs, GemmPoint, calibrate, default_efficiency
from lightspeed.store import open_store

BUSY = (
    "the machine was busy: 1-minute load average 9.68 at the start and 9.87 at the end, about 9.7 "
    "CPU(s) of other work beside 2 benchmark thread(s) on 2 CPU(s); the figures may be low"
)
QUICK = (
    "--quick: arrays of 256 MiB, under 4 x the 480 MiB of last-level cache: the caches may hold part "
    "of them and raise the figures; run without --quick for STREAM's rule"
)
SIZES = (128, 256, 512, 1024)


# --- defect 5, the library: each fitted parameter carries its suite's caveats ------------------


def test_calibrate_carries_a_suites_caveats_onto_the_parameters_it_fits() -> None:
    points = tuple(GemmPoint(m=s, n=s, k=s, achieved_flop_per_s=0.5e11, peak_flop_per_s=1e11) for s in SIZES)
    inputs = CalibrationInputs(
        gemm=points,
        memory_fractions=(0.6,),
        launch_s=(2e-6,),
        gemm_dtype="fp32",
        caveats={"membw": (BUSY, QUICK), "launch": (BUSY,)},
    )
    result = calibrate(inputs=inputs, base=default_efficiency("cpu"), name="t")
    assert result.warnings == {"memory_efficiency": (BUSY, QUICK), "kernel_launch_s": (BUSY,)}
    lines = [note for note in result.notes if "results that warn" in note]
    assert lines == [
        f"memory_efficiency is fitted from membw results that warn: {BUSY} | {QUICK}",
        f"kernel_launch_s is fitted from launch results that warn: {BUSY}",
    ]
    assert "warnings" in result.to_dict()


def test_results_without_caveats_warn_of_nothing() -> None:
    inputs = CalibrationInputs(memory_fractions=(0.6,), gemm_dtype="fp32")
    result = calibrate(inputs=inputs, base=default_efficiency("cpu"), name="t")
    assert result.warnings == {}
    assert not [note for note in result.notes if "results that warn" in note]


# --- defect 5, the command: the notes bench wrote are read back from its JSON --------------------


def _triad(details: dict[str, object], sol_note: str = "memory SOL: test") -> BenchResult:
    return make_result(
        suite="membw", name="stream triad", dtype="fp64", size_bytes=2**28, samples=[0.6e11], unit="B/s",
        best="max", sol=1e11, sol_note=sol_note, correct=True, device="cpu", sol_device="local cpu",
        details=details,
    )  # fmt: skip


def _launch(details: dict[str, object]) -> BenchResult:
    return make_result(
        suite="launch", name="dispatch", dtype=None, num_ops_per_sample=100, samples=[2e-6], unit="s",
        best="min", sol=None, sol_note="", correct=True, device="cpu", sol_device="local cpu",
        details=details,
    )  # fmt: skip


def _gemm(size: int, details: dict[str, object]) -> BenchResult:
    return make_result(
        suite="gemm", name=f"gemm {size}x{size}x{size}", dtype="fp32", flop_per_call=2 * size**3,
        samples=[0.5e11], unit="FLOP/s", best="median", sol=1e11, sol_note="test peak", correct=True,
        device="cpu", sol_device="local cpu", details={"m": size, "n": size, "k": size, **details},
    )  # fmt: skip


def _file(tmp_path: Path, name: str, results: list[BenchResult]) -> str:
    path = tmp_path / name
    path.write_text(json.dumps([result.to_dict() for result in results]))
    return str(path)


def test_calibrate_json_and_text_carry_the_busy_and_quick_notes(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    membw = _file(tmp_path, "m.json", [_triad({"load_note": BUSY, "cache_note": QUICK})])
    gemm = _file(tmp_path, "g.json", [_gemm(size, {"load_note": BUSY}) for size in SIZES])
    launch = _file(tmp_path, "l.json", [_launch({})])  # a quiet launch run: nothing to carry
    sources = ("--from", membw, "--from", gemm, "--from", launch)
    result = run_cli("calibrate", *sources, "--no-save", "--json")
    assert result.code == 0, result.err
    warnings = json.loads(result.out)["calibration"]["warnings"]
    assert warnings == {
        "gemm_max_efficiency": [BUSY],
        "gemm_half_saturation_flop": [BUSY],
        "memory_efficiency": [BUSY, QUICK],
    }
    text = run_cli("calibrate", *sources, "--no-save")
    assert text.code == 0, text.err
    flat = " ".join(text.out.split())
    assert "memory_efficiency is fitted from membw results that warn: the machine was busy" in flat
    assert "kernel_launch_s is fitted" not in flat


def test_a_stored_quick_run_without_the_cache_note_key_still_warns(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # results written before membw kept the note in details: it is the tail of sol_note
    membw = _file(tmp_path, "m.json", [_triad({}, sol_note=f"memory SOL: test; {QUICK}")])
    result = run_cli("calibrate", "--from", membw, "--no-save", "--json")
    assert result.code == 0, result.err
    assert json.loads(result.out)["calibration"]["warnings"] == {"memory_efficiency": [QUICK]}


# --- defect 6: an option value that names nothing --------------------------------------------


@pytest.mark.parametrize(
    ("suite", "option", "value"),
    [
        ("gemm", "--dtype", ""),
        ("gemm", "--dtype", "   "),
        ("gemm", "--dtype", ",,"),
        ("collectives", "--collective", ""),
        ("collectives", "--collective", " , "),
    ],
)
def test_an_empty_list_option_is_refused_not_read_as_the_default(  # type: ignore[no-untyped-def]
    run_cli, suite: str, option: str, value: str
) -> None:
    pytest.importorskip("torch")
    result = run_cli("bench", suite, "--quick", "--no-save", option, value)
    one_line_error(result, f"{option} '", "names nothing", f"or leave {option} out")
    with open_store() as store:
        assert store.runs(include_incomplete=True) == []
