"""The kernel SOL chart uses the roofline's colours (compute, memory) and draws every unit of every kernel."""

from __future__ import annotations

from matplotlib.colors import to_hex

from lightspeed.report import kernel_section, kernel_sol_figure
from lightspeed.report.palette import CATEGORY_COLORS
from lightspeed.report.plots import close_figure
from lightspeed.tour.render import SAMPLE_NCU_CSV
from lightspeed.trace import kernel_report, read_ncu

NCU_CSV = SAMPLE_NCU_CSV  # real ncu output shipped with the tour (superbenchmark, MIT)


def test_bars_have_the_palette_colors_and_the_csv_values() -> None:
    figure = kernel_sol_figure(kernel_report(read_ncu(NCU_CSV)))
    axes = figure.axes[0]
    labels = [container.get_label() for container in axes.containers]
    assert labels == ["Compute (SM)", "Memory", "DRAM", "L1/TEX", "L2"]
    widths = [container.patches[0].get_width() for container in axes.containers]
    assert widths == [23.59, 21.68, 0.74, 23.23, 15.12]
    colors = [to_hex(container.patches[0].get_facecolor(), keep_alpha=False) for container in axes.containers]
    assert colors[0] == CATEGORY_COLORS["gemm"].lower()  # the roofline's compute-bound suite
    assert colors[1] == CATEGORY_COLORS["membw"].lower()  # the roofline's memory-bound suite
    assert len(set(colors)) == 5
    close_figure(figure)


def test_section_has_chart_and_tables() -> None:
    section = kernel_section(kernel_report(read_ncu(NCU_CSV)))
    assert [chart.name for chart in section.charts] == ["kernel-sol"]
    sol, findings = section.tables
    assert sol.rows[0][2:4] == ("23.59%", "21.68%")
    assert findings.rows[0][1:3] == ("LaunchConfiguration", "50.00% (global)")
