"""``lightspeed kernels report`` on the real ncu CSV, its joins and its bad input; the HTML kernel
section from ``lightspeed report --from NCU.csv``."""

from __future__ import annotations

import html
import json
from pathlib import Path

import pytest

from expect import one_line_error
from lightspeed.tour.render import SAMPLE_NCU_CSV

NCU_CSV = SAMPLE_NCU_CSV  # real ncu output shipped with the tour (superbenchmark, MIT)


def test_json_shows_the_gemm_sol_bound_and_ranked_findings(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("kernels", "report", str(NCU_CSV), "--json")
    assert result.code == 0, result.err
    [kernel] = json.loads(result.out)["kernels"]
    assert (kernel["compute_throughput_pct"], kernel["memory_throughput_pct"]) == (23.59, 21.68)
    assert kernel["bound"] == "latency"
    first = kernel["findings"][0]
    assert (first["rule"], first["estimated_speedup_pct"], first["speedup_type"]) == (
        "LaunchConfiguration",
        50.0,
        "global",
    )
    assert "partial wave" in first["description"]
    occupancy = next(f for f in kernel["findings"] if f["rule"] == "TheoreticalOccupancy")
    assert (
        "limited by the number of required registers, and the required amount of shared memory"
        in (occupancy["description"])
    )
    assert kernel["occupancy_limiters"] == ["registers", "shared memory"]


def test_tables_with_device_and_gemm(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("kernels", "report", str(NCU_CSV), "--device", "b200", "--gemm", "2208x2048x5608")
    assert result.code == 0, result.err
    for text in ("Kernels against their speed of light (b200", "latency", "76.41%", "50.00% (global)"):
        assert text in result.out
    assert "124.8 TFLOP/s" in result.out  # 2 x 2208 x 2048 x 5608 FLOP / 406.24 us
    assert "4.5 PFLOP/s" in result.out


def test_a_trace_adds_the_levers(run_cli, shared: Path) -> None:  # type: ignore[no-untyped-def]
    trace = shared / "data" / "nsight" / "nsys" / "concurrent.s16.sqlite"
    result = run_cli("kernels", "report", str(NCU_CSV), "--trace", str(trace))
    assert result.code == 0, result.err
    assert "Biggest levers first" in result.out
    assert "not profiled by ncu: test2" in result.out  # the trace's kernels were not profiled by ncu


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--gemm", "22x33"], "is not MxNxK"),
        (["--device", "b2000"], "b2000"),
        (["--precision", "fp7"], "fp7"),
        (["--max-bytes", "2KiB"], "over the"),
        (["--max-bytes", "1kB"], "below the minimum"),
    ],
)
def test_bad_options_are_one_line(run_cli, args: list[str], message: str) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("kernels", "report", str(NCU_CSV), *args)
    assert result.code == 2
    assert message in result.err
    assert result.err.count("\n") == 1


@pytest.mark.parametrize("cut", ["half", "garbage"])
def test_bad_files_are_one_line(run_cli, tmp_path: Path, cut: str) -> None:  # type: ignore[no-untyped-def]
    text = NCU_CSV.read_text()
    path = tmp_path / "bad.csv"
    path.write_text(text[: len(text) // 2] if cut == "half" else '"ID","Process ID"\n"1","2","3\n')
    result = run_cli("kernels", "report", str(path))
    assert result.code == 2
    assert result.err.startswith("lightspeed: error: ")
    assert ("truncated" if cut == "half" else "malformed CSV") in result.err
    assert result.err.count("\n") == 1


def test_ncu_csv_given_to_trace_commands_says_what_to_run(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("trace", "summary", str(NCU_CSV))
    assert result.code == 2
    assert "lightspeed kernels report" in result.err


def test_html_report_has_the_kernel_section(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    hostile = tmp_path / "hostile.csv"
    # kernel names reach the page: angle brackets read as templates and are cut from the short name,
    # what is left (& and quotes here) must arrive escaped
    hostile.write_text(
        NCU_CSV.read_text().replace("cutlass3x_sm100", "<script>alert(1)</script>x&y'cutlass3x")
    )
    out = tmp_path / "report.html"
    result = run_cli("report", "--from", str(hostile), "-o", str(out), "--json")
    assert result.code == 0, result.err
    sections = {s["key"]: s for s in json.loads(result.out)["sections"]}
    assert sections["kernels-1"]["chart_names"] == ["kernel-sol"]
    page = out.read_text()
    assert "<script>" not in page
    assert "x&amp;y&#39;cutlass3x" in page  # escaped (& and the quote) as the template writes them
    assert "x&y'cutlass3x" in html.unescape(page)
    assert "x&y'" not in page
    assert "23.59%" in page
    assert "latency" in page


def test_html_report_reads_nsys_exports(run_cli, tmp_path: Path, shared: Path) -> None:  # type: ignore[no-untyped-def]
    trace = shared / "data" / "nsight" / "nsys" / "ex-gpu.s10.sqlite"
    out = tmp_path / "report.html"
    result = run_cli("report", "--from", str(trace), "-o", str(out), "--json")
    assert result.code == 0, result.err
    keys = [s["key"] for s in json.loads(result.out)["sections"]]
    assert "trace-1" in keys
    assert "A100-PCIE-40GB" in out.read_text()


def test_far_above_the_sol_from_given_options_is_refused(run_cli) -> None:  # type: ignore[no-untyped-def]
    # 2 x 2208 x 2048 x 5608 FLOP / 406.24 us = 124.85 TFLOP/s; the FP64 peak at ncu's clock,
    # 37 TFLOP/s x 1.2395 / 1.965 GHz = 23.34 TFLOP/s: 535 %, above 105 % -> the inputs are wrong
    args = ("--device", "b200", "--precision", "fp64", "--gemm", "2208x2048x5608", "--json")
    result = run_cli("kernels", "report", str(NCU_CSV), *args)
    one_line_error(
        result,
        "535% of the fp64 peak of b200",
        "its name says fp8: pass --precision fp8",
        "check --gemm 2208x2048x5608, --precision fp64, --device b200",
    )


def test_just_above_the_sol_is_flagged_not_refused(run_cli) -> None:  # type: ignore[no-untyped-def]
    # 2 x 1024 x 1024 x 4612 = 9,672,065,024 FLOP / 406.24 us = 23.809 TFLOP/s; of the FP64 peak at
    # ncu's clock (23.339 TFLOP/s, above) 102.0 %: flagged, within ncu's clock and SKU tolerance (105 %)
    args = ("--device", "b200", "--precision", "fp64", "--gemm", "1024x1024x4612")
    result = run_cli("kernels", "report", str(NCU_CSV), *args, "--json")
    assert result.code == 0, result.err
    payload = json.loads(result.out)
    [kernel] = payload["kernels"]
    assert kernel["above_sol"] is True
    at_clock_flop_per_s = 37e12 * 1239496049.13 / 1.965e9  # 23.339 TFLOP/s
    expected_pct = 100 * 9_672_065_024 / 406.24e-6 / at_clock_flop_per_s  # 102.01 %
    assert kernel["sol_at_profiled_clock_pct"] == pytest.approx(expected_pct)
    assert any("--precision fp8" in note for note in payload["notes"])
    table = run_cli("kernels", "report", str(NCU_CSV), *args)
    assert table.code == 0, table.err
    assert "102.01% (!)" in table.out
    assert "above 100% of the peak" in table.out


def test_a_trace_given_to_kernels_report_says_what_it_is(run_cli, shared: Path) -> None:  # type: ignore[no-untyped-def]
    trace = shared / "data" / "traces" / "distributed_info_unavailable" / "distributed_info_not_found.json.gz"
    one_line_error(
        run_cli("kernels", "report", str(trace)),
        "this is a PyTorch profiler (Kineto) trace, not Nsight Compute CSV output",
        f"'lightspeed trace summary {trace}'",
        f"--trace {trace}",
    )


def test_an_mlperf_log_given_to_kernels_report_names_goodput(run_cli, shared: Path) -> None:  # type: ignore[no-untyped-def]
    log = shared / "data" / "mlperf" / "training_v4.0" / "NVIDIA" / "results" / "h200_ngc24.04_nemo"
    log = log / "llama2_70b_lora" / "result_0.txt"
    one_line_error(
        run_cli("kernels", "report", str(log)),
        "this is an MLPerf Training result log",
        f"'lightspeed goodput report {log}'",
    )
