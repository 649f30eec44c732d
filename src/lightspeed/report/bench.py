"""Rendering of benchmark results: progress bars, tables and the roofline chart."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final

from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn

from lightspeed.bench import BenchResult, DeviceSol, best_per_dtype
from lightspeed.report.console import make_console, plain, render_table
from lightspeed.report.palette import category_color, series_color
from lightspeed.report.plots import (
    DEFAULT_PLOT_FORMATS,
    add_legend,
    check_plot_targets,
    new_figure,
    plain_text,
    plot_paths,
    save_figure,
)
from lightspeed.sol import CalibrationResult, EfficiencyModel
from lightspeed.units import (
    bytes_per_element,
    format_bytes,
    format_bytes_per_s,
    format_duration,
    format_flop_per_s,
    format_percent,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

ProgressCallback = Callable[[str, int, int], None]


@contextmanager
def progress_bar(*, enabled: bool, title: str) -> Iterator[ProgressCallback | None]:
    """A rich progress bar on stderr driven by the suites' ``progress`` callback.

    Yields ``None`` when disabled (``--json``) or when stderr is not a terminal
    (logs and pipes get no control codes); the bar starts at the first update,
    so an error raised before any work leaves stderr with its one line only.
    """
    console = make_console(stderr=True)
    if not enabled or not console.is_terminal:
        yield None
        return
    columns = (
        TextColumn("[bold]{task.fields[title]}"),
        BarColumn(),
        TaskProgressColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
    )
    progress = Progress(*columns, console=console, transient=True)
    task = progress.add_task("starting", total=None, title=title)

    def update(description: str, done: int, total: int) -> None:
        if not progress.live.is_started:
            progress.start()
        progress.update(task, description=description, completed=done, total=total)

    try:
        yield update
    finally:
        if progress.live.is_started:
            progress.stop()


def format_value(value: float | None, unit: str) -> str:
    """A value in its unit, readable (``1.23 TFLOP/s``, ``18.5 GB/s``, ``4.2 us``)."""
    if value is None:
        return "-"
    if unit == "FLOP/s":
        return format_flop_per_s(value)
    if unit == "B/s":
        return format_bytes_per_s(value)
    if unit == "s":
        return format_duration(value)
    return f"{value:.4g} {unit}"


def format_size(result: BenchResult) -> str:
    """The swept size as a reader expects it for the suite."""
    if result.suite == "gemm":
        details = result.details
        return f"{details.get('m')}x{details.get('n')}x{details.get('k')}"
    if result.num_ops_per_sample is not None:
        return f"{result.num_ops_per_sample} ops"
    if result.size_bytes is not None:
        return format_bytes(result.size_bytes, binary=True)
    return f"{result.swept_size:.3g} FLOP"


def _spread(result: BenchResult) -> str:
    """Min and max of the repetitions relative to the headline value (``-3% / +8%``)."""
    if result.value == 0:
        return "-"
    low = result.stats.min / result.value - 1.0
    high = result.stats.max / result.value - 1.0
    return f"{low:+.0%} / {high:+.0%}"


ABOVE_MARK = "*"  # beside a fraction of SOL above 100%; the table's caption says why


def fraction_text(result: BenchResult) -> str:
    """The fraction of SOL (``56.5%``), marked ``*`` when above it (``107.3% *``), ``-`` without a SOL."""
    if result.fraction_of_sol is None:
        return "-"
    text = format_percent(result.fraction_of_sol)
    return f"{text} {ABOVE_MARK}" if result.above_sol else text


def result_notes(results: Sequence[BenchResult]) -> list[str]:
    """The distinct notes of ``results``: SOL notes, then why marked results beat the SOL, then the load."""
    sol_notes = sorted({result.sol_note for result in results if result.sol_note})
    above = _detail_notes([result for result in results if result.above_sol], "above_sol_note")
    return [*sol_notes, *(f"{ABOVE_MARK} {note}" for note in above), *_detail_notes(results, "load_note")]


def _detail_notes(results: Sequence[BenchResult], key: str) -> list[str]:
    return sorted({str(result.details[key]) for result in results if result.details.get(key)})


def _row(result: BenchResult) -> list[str]:
    fraction = fraction_text(result)
    label = str(result.details.get("label") or "")
    name = label if result.suite == "gemm" and label not in ("", "square", "rectangular") else result.name
    if result.suite == "gemm" and name == result.name:
        name = "gemm"
    return [
        name,
        result.dtype or "-",
        format_size(result),
        format_value(result.value, result.unit),
        format_value(result.sol, result.unit),
        fraction,
        _spread(result),
        "yes" if result.correct else "WRONG",
    ]


def render_results(results: Sequence[BenchResult], *, title: str, device_name: str) -> None:
    """Print the results table, the best GEMM shape per dtype and the SOL notes.

    ``value`` is the headline (median; best of N for STREAM); ``min / max`` the
    spread of the repetitions around it (absolute figures are in ``--json``).
    """
    console = make_console()
    headers = ["name", "dtype", "size", "value", "SOL", "of SOL", "min / max", "correct"]
    notes = result_notes(results)
    caption = "\n".join(plain(note) for note in notes) if notes else None
    render_table(
        f"{title} on {device_name}",
        headers,
        [_row(result) for result in results],
        right_align_from=2,
        caption=caption,
        console=console,
    )
    for dtype, best in best_per_dtype(results).items():
        share = ""
        if best.fraction_of_sol is not None:
            above = f", above it {ABOVE_MARK}" if best.above_sol else ""
            share = f" ({format_percent(best.fraction_of_sol)} of SOL{above})"
        console.print(
            f"best {dtype} shape: {format_size(best)} at {format_value(best.value, best.unit)}{share}"
        )
    _render_ranks(results, console)
    wrong = [result for result in results if not result.correct]
    if wrong:
        console.print(f"[bold red]{len(wrong)} result(s) failed their correctness check[/]")


def _render_ranks(results: Sequence[BenchResult], console: Any) -> None:
    """Collectives: algbw and the per-rank time spread (stragglers show as max >> min)."""
    rows = []
    for result in results:
        if result.suite != "collectives":
            continue
        details = result.details
        ranks = details["rank_time_s"]
        rows.append(
            [
                str(details["collective"]),
                format_size(result),
                str(details["num_ranks"]),
                format_bytes_per_s(float(details["algbw_bytes_per_s"])),
                f"{float(details['busbw_factor']):.3g}",
                format_duration(float(details["time_s"])),
                " / ".join(format_duration(float(ranks[key])) for key in ("min", _middle(ranks), "max")),
            ]
        )
    if rows:
        headers = [
            "collective",
            "size",
            "ranks",
            "algbw",
            "busbw factor",
            "time",
            "rank time min / median / max",
        ]
        render_table("algbw and per-rank times", headers, rows, right_align_from=1, console=console)


def _middle(ranks: Mapping[str, Any]) -> str:
    """The middle rank figure: ``median`` (``avg`` in results stored before 0.2)."""
    return "median" if "median" in ranks else "avg"


def _intensity(result: BenchResult) -> tuple[float, float] | None:
    """(FLOP per byte moved, FLOP/s) of a result, when it computes anything."""
    if result.suite == "gemm" and result.dtype is not None:
        m, n, k = (float(result.details[key]) for key in ("m", "n", "k"))
        moved = (m * k + k * n + m * n) * bytes_per_element(result.dtype)
        return 2.0 * m * n * k / moved, result.value
    flop_per_element = {"stream scale": 1.0, "stream add": 1.0, "stream triad": 2.0}.get(result.name)
    if result.suite == "membw" and flop_per_element is not None:
        moved_per_element = float(result.details["bytes_moved"]) / float(result.details["num_elements"])
        intensity = flop_per_element / moved_per_element
        return intensity, result.value * intensity
    return None


# Colour index (report/palette.py's series colours) and marker of each GEMM precision on the
# roofline: precisions are series, not palette categories; the membw suite's green is skipped
# and the marker tells the precisions apart where colours come close.
PRECISION_STYLES: Final[Mapping[str, tuple[int, str]]] = MappingProxyType(
    {
        "fp64": (0, "o"),
        "fp32": (1, "s"),
        "tf32": (4, "^"),
        "bf16": (3, "D"),
        "fp16": (7, "v"),
        "fp8": (5, "P"),
    }
)


def precision_style(precision: str) -> tuple[str, str]:
    """(colour, marker) of a GEMM precision's roof and points."""
    index, marker = PRECISION_STYLES.get(precision, (8, "X"))
    return series_color(index), marker


def roof_precisions(results: Sequence[BenchResult]) -> list[str]:
    """The GEMM precisions among ``results``, in order of first appearance."""
    found = [result.dtype for result in results if result.suite == "gemm" and result.dtype is not None]
    return list(dict.fromkeys(found))


def roofline_figure(
    results: Sequence[BenchResult], *, sol: DeviceSol, precision: str = "fp32", title: str
) -> Figure:
    """Measured points under one roof per GEMM precision among ``results``.

    Each precision's roof is its peak from ``sol`` (the figure the bench table compares that
    precision with), capped by the memory bandwidth where ``sol`` has one, drawn in the
    precision's colour; its points share the colour and marker. STREAM points take the membw
    colour. ``precision`` is the roof drawn when no GEMM result names one (a membw run).
    """
    figure, axes = new_figure()
    points = [(result, point) for result in results if (point := _intensity(result)) is not None]
    intensities = [point[0] for _, point in points] or [0.1, 100.0]
    low, high = min(intensities) / 4.0, max(intensities) * 4.0
    for name in roof_precisions(results) or [precision]:
        low, high = _draw_roof(axes, name, sol=sol, low=low, high=high)
    for name in roof_precisions(results):
        chosen = [point for result, point in points if result.suite == "gemm" and result.dtype == name]
        color, marker = precision_style(name)
        axes.scatter(
            [x for x, _ in chosen], [y for _, y in chosen], color=color, marker=marker, label=f"{name} GEMM"
        )
    for suite in sorted({result.suite for result, _ in points} - {"gemm"}):
        chosen = [point for result, point in points if result.suite == suite]
        axes.scatter([x for x, _ in chosen], [y for _, y in chosen], color=category_color(suite), label=suite)
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlim(low, high)
    _log_ticks(axes.xaxis, low=low, high=high, formatter=_plain_number_formatter())
    _log_ticks(axes.yaxis, low=axes.get_ylim()[0], high=axes.get_ylim()[1], formatter=_si_formatter())
    axes.set_xlabel("arithmetic intensity (FLOP per byte)")
    axes.set_ylabel("FLOP/s")
    axes.set_title(plain_text(title, 90))
    add_legend(axes, loc="lower right")
    return figure


def _draw_roof(axes: Axes, precision: str, *, sol: DeviceSol, low: float, high: float) -> tuple[float, float]:
    """Draw ``precision``'s roof (a line at its peak, sloped by memory bandwidth where known).

    Returns the x range widened to show the ridge point (peak / bandwidth) with room on each side.
    """
    peak, _ = sol.compute(precision)
    if peak is None:
        return low, high
    color, _ = precision_style(precision)
    label = f"{precision} roof ({format_flop_per_s(peak)})"
    bandwidth = sol.memory_bandwidth_bytes_per_s
    if bandwidth is None:
        axes.axhline(peak, color=color, linestyle="--", label=label)
        return low, high
    ridge = peak / bandwidth
    low, high = min(low, ridge / 4.0), max(high, ridge * 4.0)
    xs = [low, ridge, high]
    axes.plot(xs, [min(peak, bandwidth * x) for x in xs], color=color, label=label)
    return low, high


def _log_ticks(axis: Any, *, low: float, high: float, formatter: Any) -> None:
    """Labels at 1, 2 and 5 x 10^n (at 10^n only over more than two decades); minor ticks unlabelled.

    matplotlib's default labels minor ticks on short log axes (``3x10^1 4x10^1 ...``), and they overlap.
    """
    from matplotlib.ticker import LogLocator, NullFormatter

    decades = math.log10(high / low) if 0 < low < high else 1.0
    subs = (1.0,) if decades > 2.0 else (1.0, 2.0, 5.0)
    axis.set_major_locator(LogLocator(base=10.0, subs=subs))
    axis.set_major_formatter(formatter)
    axis.set_minor_formatter(NullFormatter())


def _plain_number_formatter() -> Any:
    """Tick labels as plain numbers (``0.5``, ``20``, ``1000``)."""
    from matplotlib.ticker import FuncFormatter

    return FuncFormatter(lambda value, _: f"{value:g}")


def _si_formatter() -> Any:
    """Tick labels with SI prefixes (``200G``, ``1T``)."""
    from matplotlib.ticker import EngFormatter

    return EngFormatter(sep="")


def save_roofline(
    results: Sequence[BenchResult], *, sol: DeviceSol, precision: str, title: str, path: Path
) -> list[Path]:
    """Draw :func:`roofline_figure` (one roof per GEMM precision; ``precision`` when none) and
    write it to ``path`` as :func:`~lightspeed.report.plots.plot_paths` says: a ``.png``, ``.svg`` or
    ``.pdf`` name that file only, a name without suffix PNG and SVG, a folder ``roofline.png`` and
    ``roofline.svg`` in it."""
    stem, formats = _roofline_targets(path)  # a bad path refused before the figure is drawn
    figure = roofline_figure(results, sol=sol, precision=precision, title=title)
    return save_figure(figure, stem, formats)


def check_roofline_plot(path: Path) -> list[Path]:
    """The files :func:`save_roofline` would write for ``path``, checked as every ``--plot`` is
    (:func:`~lightspeed.report.plots.check_plot_targets`: a plot suffix, a folder that exists and
    takes a new file, no target a folder or read-only), so that ``bench`` refuses a bad path
    before it measures. Nothing is written."""
    return check_plot_targets(*_roofline_targets(path))


def _roofline_targets(path: Path) -> tuple[Path, tuple[str, ...]]:
    return plot_paths(path, name="roofline", default_formats=DEFAULT_PLOT_FORMATS)


def _parameter_text(name: str, value: float) -> str:
    if name == "kernel_launch_s":
        return format_duration(value)
    if name == "gemm_half_saturation_flop":
        return f"{value:.3g} FLOP"
    return format_percent(value)


def render_calibration(result: CalibrationResult, *, base: EfficiencyModel, path: Path | None) -> None:
    """The fitted parameters beside the base family's, with point counts and what was kept."""
    console = make_console()
    rows = []
    for name, count in result.num_points.items():
        before = float(getattr(base, name))
        after = float(getattr(result.model, name))
        status = "fitted" if name in result.fitted else f"kept: {result.kept.get(name, '')}"
        rows.append([name, _parameter_text(name, before), _parameter_text(name, after), str(count), status])
    headers = ["parameter", f"base ({result.base})", f"calibrated ({result.name})", "points", "status"]
    render_table(f"calibration {result.name}", headers, rows, right_align_from=1, console=console)
    if result.gemm_rms_relative_error is not None:
        console.print(
            f"GEMM curve fits the measured shapes within {format_percent(result.gemm_rms_relative_error)} RMS"
        )
    for note in result.notes:
        console.print(f"[yellow]note:[/] {plain(note)}")
    if path is not None:
        console.print(f"saved to {path}; use it with 'lightspeed plan train ... --calibration {result.name}'")
