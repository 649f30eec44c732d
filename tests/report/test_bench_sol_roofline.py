"""The roofline draws one roof per precision measured, with readable ticks; the bench table marks
results above their SOL."""

from __future__ import annotations

import matplotlib.colors
import pytest

from lightspeed.bench import BenchResult, DeviceSol, make_result
from lightspeed.report import render_results
from lightspeed.report.bench import roofline_figure
from lightspeed.report.html_inputs import sol_from_results
from lightspeed.report.html_sections import BenchInputs, roofline_section
from lightspeed.report.plots import close_figure

# The CPU peaks of the expert check's 2-core Zen 4 VM (one socket, 2.6 GHz, AVX-512 double-pumped).
PEAKS = {"fp32": 166.2e9, "bf16": 332.3e9, "fp64": 83.1e9}


def _gemm(dtype: str, size: int, value: float, *, note: str = "") -> BenchResult:
    return make_result(
        suite="gemm",
        name=f"gemm {size}x{size}x{size}",
        dtype=dtype,
        flop_per_call=2 * size**3,
        samples=[value],
        unit="FLOP/s",
        best="median",
        sol=PEAKS[dtype],
        sol_note="CPU peak for 2 of 2 cores",
        correct=True,
        details={"m": size, "n": size, "k": size, "label": "square"},
        above_sol_note=note,
    )


def _three_precisions() -> list[BenchResult]:
    return [
        _gemm("fp32", 256, 178.3e9, note="the peak assumes the 2.6 GHz clock detected"),
        _gemm("fp32", 1024, 120e9),
        _gemm("bf16", 1024, 300e9),
        _gemm("fp64", 1024, 70e9),
    ]


def _roof_lines(figure: object) -> dict[str, object]:
    (axes,) = figure.axes  # type: ignore[attr-defined]
    return {line.get_label(): line for line in axes.get_lines() if "roof" in line.get_label()}


def test_one_roof_per_precision_at_the_tables_peak() -> None:
    results = _three_precisions()
    sol = sol_from_results(results, "test-cpu")  # the peaks the table compared each point with
    figure = roofline_figure(results, sol=sol, precision="fp32", title="gemm")
    roofs = _roof_lines(figure)
    assert sorted(roofs) == [
        "bf16 roof (332.3 GFLOP/s)",
        "fp32 roof (166.2 GFLOP/s)",
        "fp64 roof (83.1 GFLOP/s)",
    ]
    (axes,) = figure.axes
    points = {collection.get_label(): collection for collection in axes.collections}
    assert sorted(points) == ["bf16 GEMM", "fp32 GEMM", "fp64 GEMM"]
    for precision, peak in PEAKS.items():
        line = next(line for label, line in roofs.items() if label.startswith(precision))
        assert set(line.get_ydata()) == {peak}  # type: ignore[attr-defined]
        # the points of a precision share its roof's colour, and the roofs' colours differ
        point_color = matplotlib.colors.to_hex(points[f"{precision} GEMM"].get_facecolor()[0])
        assert point_color == matplotlib.colors.to_hex(line.get_color())  # type: ignore[attr-defined]
    assert len({matplotlib.colors.to_hex(line.get_color()) for line in roofs.values()}) == 3  # type: ignore[attr-defined]
    close_figure(figure)


def test_roofs_bend_at_their_own_ridge_with_a_memory_figure() -> None:
    results = _three_precisions()[1:]
    # 460.8 GB/s (12 channels of DDR5-4800): the fp32 ridge is at 166.2e9 / 460.8e9 = 0.3607 FLOP/B,
    # the bf16 ridge at 332.3e9 / 460.8e9 = 0.7211 FLOP/B.
    sol = DeviceSol(device_name="cpu", flop_per_s=PEAKS, memory_bandwidth_bytes_per_s=460.8e9)
    figure = roofline_figure(results, sol=sol, precision="fp32", title="gemm")
    roofs = _roof_lines(figure)
    fp32 = next(line for label, line in roofs.items() if label.startswith("fp32"))
    bf16 = next(line for label, line in roofs.items() if label.startswith("bf16"))
    assert fp32.get_xdata()[1] == pytest.approx(166.2e9 / 460.8e9)  # type: ignore[attr-defined]
    assert bf16.get_xdata()[1] == pytest.approx(332.3e9 / 460.8e9)  # type: ignore[attr-defined]
    assert max(bf16.get_ydata()) == pytest.approx(332.3e9)  # type: ignore[attr-defined]
    close_figure(figure)


def test_a_run_without_gemm_keeps_the_named_precisions_roof() -> None:
    triad = make_result(
        suite="membw",
        name="stream triad",
        dtype="fp64",
        size_bytes=2**27,
        samples=[20e9],
        unit="B/s",
        best="max",
        sol=460.8e9,
        sol_note="",
        correct=True,
        details={"bytes_moved": 3 * 2**27, "num_elements": 2**24},
    )
    sol = DeviceSol(device_name="cpu", flop_per_s=PEAKS, memory_bandwidth_bytes_per_s=460.8e9)
    figure = roofline_figure([triad], sol=sol, precision="fp32", title="membw")
    assert list(_roof_lines(figure)) == ["fp32 roof (166.2 GFLOP/s)"]
    close_figure(figure)


def _shown_x_labels(axes: object) -> list[str]:
    """The x tick labels inside the axis range (matplotlib also places ticks just outside it)."""
    low, high = axes.get_xlim()  # type: ignore[attr-defined]
    ticks = zip(axes.get_xticklabels(), axes.get_xticks(), strict=True)  # type: ignore[attr-defined]
    return [label.get_text() for label, at in ticks if low <= at <= high]


def test_tick_labels_are_plain_and_minor_ticks_unlabelled() -> None:
    # intensities of 256^3 to 2048^3 fp32 GEMMs: 2 n^3 / (3 n^2 x 4 B) = n / 6 = 42.7 ... 341 FLOP/B,
    # the axis from a quarter of the lowest to four times the highest (10.7 ... 1365: 2.1 decades)
    results = [_gemm("fp32", size, 100e9) for size in (256, 512, 1024, 2048)]
    figure = roofline_figure(results, sol=sol_from_results(results, "cpu"), precision="fp32", title="g")
    figure.canvas.draw()
    (axes,) = figure.axes
    for axis in (axes.xaxis, axes.yaxis):
        assert all(label.get_text() == "" for label in axis.get_minorticklabels())
    shown = _shown_x_labels(axes)
    assert shown == ["100", "1000"]  # 10^n only over more than two decades, no "x10^" forms
    close_figure(figure)


def test_a_short_axis_gets_one_two_five_labels() -> None:
    # one size: intensity 1024 / 6 = 170.7 FLOP/B, axis 42.7 ... 682.7 (1.2 decades)
    results = [_gemm("fp32", 1024, 100e9)]
    figure = roofline_figure(results, sol=sol_from_results(results, "cpu"), precision="fp32", title="g")
    figure.canvas.draw()
    (axes,) = figure.axes
    shown = _shown_x_labels(axes)
    assert shown == ["50", "100", "200", "500"]
    close_figure(figure)


def test_report_section_names_every_roof_and_marks_points_above_the_sol() -> None:
    results = _three_precisions()
    section = roofline_section(
        BenchInputs(results=tuple(results), sol=sol_from_results(results, "cpu"), label="g")
    )
    assert "(fp32, bf16, fp64)" in section.paragraphs[0]
    assert any(paragraph.startswith("* above the SOL: the peak assumes") for paragraph in section.paragraphs)
    # 178.3 / 166.2 = 107.3%, marked
    assert section.tables[0].rows[0][5] == "107.3% *"
    assert section.tables[0].rows[1][5] == "72.2%"  # 120 / 166.2


def test_table_marks_a_result_above_the_sol(capsys: pytest.CaptureFixture[str]) -> None:
    render_results(_three_precisions(), title="bench gemm", device_name="cpu")
    out = capsys.readouterr().out
    assert "107.3% *" in out
    assert "* above the SOL: the peak assumes the 2.6 GHz clock detected" in out
    assert "best fp32 shape: 256x256x256 at 178.3 GFLOP/s (107.3% of SOL, above it *)" in out
