"""Round 15 fix F, bench: a STREAM run whose arrays are under STREAM's rule says so however their
size was chosen, and ``calibrate`` refuses to fit memory from it (defect 1); ``--plot FILE.png``
writes that file only (defect 6); ``--label`` is one short line (defect 8)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from expect import one_line_error
from lightspeed.bench import BenchDevice, BenchResult, DeviceSol, make_result
from lightspeed.bench import membw as bench_membw
from lightspeed.cli.bench import MAX_LABEL_CHARS, RunLabel
from lightspeed.report import check_roofline_plot, save_roofline
from lightspeed.store import open_store

MIB = 2**20
CPU = BenchDevice(kind="cpu", index=0, name="a CPU", num_threads=1)
SOL = DeviceSol(device_name="test-cpu", memory_bandwidth_bytes_per_s=1e11, memory_note="memory SOL: test")


# --- defect 1: the note, whatever chose the size --------------------------------------------------


def test_an_explicit_array_size_under_the_rule_is_noted_with_the_size_to_use() -> None:
    # two Xeon 8480+ sockets: 2 x 105 MiB of L3; STREAM wants each array >= 4 x 210 = 840 MiB
    note = bench_membw.cache_note(array_bytes=1 * MIB, cache_bytes=210 * MIB, quick=False)
    assert note.startswith("--array-size: arrays of 1 MiB, under 4 x the 210 MiB of last-level cache")
    assert "use --array-size 840MiB or more" in note
    assert bench_membw.cache_note(array_bytes=840 * MIB, cache_bytes=210 * MIB, quick=False) == ""
    assert bench_membw.cache_note(array_bytes=1 * MIB, cache_bytes=None, quick=False) == ""  # unknown


def test_a_membw_run_with_small_given_arrays_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("torch")
    monkeypatch.setattr(bench_membw, "last_level_cache_bytes", lambda torch, device: 64 * MIB)
    [triad] = bench_membw.run_membw(device=CPU, sol=SOL, kernels=["triad"], array_bytes=MIB)
    assert "--array-size: arrays of 1 MiB, under 4 x the 64 MiB" in triad.sol_note
    assert triad.details["meets_stream_rule"] is False
    assert triad.details["cache_note"] in triad.sol_note
    monkeypatch.setattr(bench_membw, "last_level_cache_bytes", lambda torch, device: 64 * 1024)
    [kept] = bench_membw.run_membw(device=CPU, sol=SOL, kernels=["triad"], array_bytes=MIB)  # 16 x 64 KiB
    assert kept.details["meets_stream_rule"] is True
    assert "cache_note" not in kept.details


# --- defect 1: calibrate refuses the point ------------------------------------------------------


SMALL = (
    "--array-size: arrays of 1 MiB, under 4 x the 210 MiB of last-level cache: the caches may hold "
    "part of them and raise the figures; use --array-size 840MiB or more (or leave it out) for "
    "STREAM's rule"
)


def _triad_file(tmp_path: Path, *, meets: bool) -> str:
    details: dict[str, object] = {"last_level_cache_bytes": 210 * MIB, "meets_stream_rule": meets}
    if not meets:
        details["cache_note"] = SMALL
    result: BenchResult = make_result(
        suite="membw", name="stream triad", dtype="fp64", size_bytes=MIB, samples=[0.553e11], unit="B/s",
        best="max", sol=1e11, sol_note="memory SOL: test", correct=True, device="cpu",
        sol_device="local cpu", details=details,
    )  # fmt: skip
    path = tmp_path / ("small.json" if not meets else "stream.json")
    path.write_text(json.dumps([result.to_dict()]))
    return str(path)


def test_calibrate_refuses_stream_results_the_caches_held(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    small = _triad_file(tmp_path, meets=False)
    one_line_error(
        run_cli("calibrate", "--from", small, "--no-save"),
        small,
        "break STREAM's array rule",
        "arrays of 1 MiB, under 4 x the 210 MiB",
        "--force",
    )


def test_calibrate_force_fits_them_with_the_note_carried(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(
        "calibrate", "--from", _triad_file(tmp_path, meets=False), "--no-save", "--force", "--json"
    )
    assert result.code == 0, result.err
    calibration = json.loads(result.out)["calibration"]
    assert calibration["fitted"]["memory_efficiency"] == pytest.approx(0.553)
    assert calibration["warnings"] == {"memory_efficiency": [SMALL]}


def test_calibrate_fits_stream_results_that_meet_the_rule(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("calibrate", "--from", _triad_file(tmp_path, meets=True), "--no-save", "--json")
    assert result.code == 0, result.err
    calibration = json.loads(result.out)["calibration"]
    assert calibration["fitted"]["memory_efficiency"] == pytest.approx(0.553)
    assert calibration["warnings"] == {}


# --- defect 6: a plot suffix writes that format only ----------------------------------------------


def test_a_plot_suffix_writes_that_file_only_and_no_suffix_both(tmp_path: Path) -> None:
    assert check_roofline_plot(tmp_path / "k.png") == [tmp_path / "k.png"]
    assert check_roofline_plot(tmp_path / "k.svg") == [tmp_path / "k.svg"]
    assert check_roofline_plot(tmp_path / "k") == [tmp_path / "k.png", tmp_path / "k.svg"]
    assert check_roofline_plot(tmp_path) == [tmp_path / "roofline.png", tmp_path / "roofline.svg"]
    assert list(tmp_path.iterdir()) == []


def test_a_png_roofline_leaves_an_svg_of_the_same_name_alone(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    (tmp_path / "k.svg").write_text("x")
    result = make_result(
        suite="membw", name="stream triad", dtype="fp64", size_bytes=MIB, samples=[5e10], unit="B/s",
        best="max", sol=1e11, sol_note="", correct=True, device="cpu", sol_device="test-cpu",
        details={"bytes_moved": 3 * MIB, "num_elements": MIB // 8},
    )  # fmt: skip
    written = save_roofline([result], sol=SOL, precision="fp32", title="t", path=tmp_path / "k.png")
    assert written == [tmp_path / "k.png"]
    assert (tmp_path / "k.svg").read_text() == "x"
    assert (tmp_path / "k.png").read_bytes().startswith(b"\x89PNG")


# --- defect 8: --label ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("label", "said"),
    [
        ("   ", "names nothing"),
        ("a\nb", "control character '\\n'"),
        ("tab\there", "control character '\\t'"),
        ("x" * 5000, "a label of 5,000 characters is too long; use at most 200"),
    ],
)
def test_a_blank_multiline_or_huge_label_is_refused(run_cli, label: str, said: str) -> None:  # type: ignore[no-untyped-def]
    one_line_error(run_cli("bench", "launch", "--quick", "--label", label), "--label", said)
    with open_store() as store:
        assert store.runs(include_incomplete=True) == []


def test_a_label_of_one_line_up_to_the_limit_is_kept() -> None:
    assert MAX_LABEL_CHARS == 200
    assert RunLabel().convert("x" * 200, None, None) == "x" * 200
    assert RunLabel().convert("nightly gemm, H100 é", None, None) == "nightly gemm, H100 é"
