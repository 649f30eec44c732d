"""The self-contained HTML report: one file, no network, every string escaped.

A report is a list of :class:`ReportSection` (title, paragraphs, tables,
charts). Charts are matplotlib figures turned into SVG and embedded as
``data:`` URIs inside ``<img>`` elements, so that an SVG drawn from an
untrusted trace (kernel names become text in it) can never run script or
break the page. The page is a Jinja2 template (``templates/report.html.j2``) with
autoescaping on, so every string is escaped unless the template marks it safe
(only the stylesheet, which ships with lightspeed). A
Content-Security-Policy allows nothing but the page's own stylesheet (by hash)
and ``data:`` images: viewing the report makes no request at all.

Example:
    >>> from lightspeed.report.html import ReportSection, render_html
    >>> page = render_html(title="demo", sections=[ReportSection(key="a", title="<b>A</b>")])
    >>> "&lt;b&gt;A&lt;/b&gt;" in page and "<b>A</b>" not in page
    True
"""

from __future__ import annotations

import base64
import functools
import hashlib
import io
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import jinja2
from rich.markup import escape

from lightspeed import __version__
from lightspeed.errors import UserInputError
from lightspeed.files import check_output, write_failed
from lightspeed.records import Record
from lightspeed.report.console import make_console
from lightspeed.report.plots import check_plot_targets, figure_svg

if TYPE_CHECKING:
    from matplotlib.figure import Figure

_CSS_PATH = Path(__file__).with_name("html_style.css")
_KEY_PATTERN = re.compile(r"[^a-z0-9-]+")


@dataclass(frozen=True)
class Chart:
    """One plot, rendered once: SVG text for the page, PNG bytes for ``--plots``.

    ``name`` is the file stem under ``--plots DIR`` (``roofline``); ``title``
    the caption shown under it (plain text, escaped when written).
    """

    name: str
    title: str
    svg: str
    png: bytes


@dataclass(frozen=True)
class Table(Record):
    """A table of already formatted cells (plain text, escaped when written)."""

    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    caption: str = ""


@dataclass(frozen=True)
class ReportSection:
    """One section of the report.

    ``skipped_reason`` set means the section has no data in this report; the
    page shows the reason (e.g. which command produces the data) instead.
    """

    key: str
    title: str
    paragraphs: tuple[str, ...] = ()
    tables: tuple[Table, ...] = ()
    charts: tuple[Chart, ...] = ()
    skipped_reason: str | None = None


@dataclass(frozen=True)
class SectionSummary(Record):
    """What one written section holds (the ``--json`` view of the report)."""

    key: str
    title: str
    chart_names: tuple[str, ...]
    num_tables: int
    skipped_reason: str | None


@dataclass(frozen=True)
class WrittenReport(Record):
    """Where the report went, its size, and the plot files of ``--plots``."""

    path: Path
    num_bytes: int
    sections: tuple[SectionSummary, ...]
    plot_paths: tuple[Path, ...] = field(default_factory=tuple)


def chart_from_figure(figure: Figure, *, name: str, title: str) -> Chart:
    """Render a matplotlib figure to SVG and PNG once, then close it."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", bbox_inches="tight", dpi=120)
    return Chart(name=_section_key(name), title=title, svg=figure_svg(figure), png=buffer.getvalue())


def skipped_section(key: str, title: str, reason: str) -> ReportSection:
    """A section without data; the page says why and how to get it."""
    return ReportSection(key=key, title=title, skipped_reason=reason)


def _section_key(text: str) -> str:
    key = _KEY_PATTERN.sub("-", text.lower()).strip("-")
    return key or "section"


def _css() -> str:
    return _CSS_PATH.read_text(encoding="utf-8")


def _csp(css: str) -> str:
    digest = base64.b64encode(hashlib.sha256(css.encode("utf-8")).digest()).decode("ascii")
    return (
        f"default-src 'none'; img-src data:; style-src 'sha256-{digest}'; base-uri 'none'; form-action 'none'"
    )


@functools.cache
def _environment() -> jinja2.Environment:
    """Templates of this package, every value escaped, an undefined name an error (not blank)."""
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(Path(__file__).with_name("templates")),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )


def _chart_view(chart: Chart) -> dict[str, str]:
    return {
        "name": chart.name,
        "title": chart.title,
        "data": base64.b64encode(chart.svg.encode("utf-8")).decode("ascii"),
    }


def _section_view(section: ReportSection) -> dict[str, object]:
    return {
        "key": _section_key(section.key),
        "title": section.title,
        "skipped_reason": section.skipped_reason,
        "paragraphs": section.paragraphs,
        "charts": [_chart_view(chart) for chart in section.charts],
        "tables": section.tables,
    }


def _chart_id(section: ReportSection, chart: Chart) -> str:
    """``<section>-<chart>``: the chart's HTML id (after ``chart-``) and its ``--plots`` file stem."""
    return f"{_section_key(section.key)}-{chart.name}"


def _check_folder(path: Path, what: str) -> None:
    """The nearest existing folder of ``path`` (a file to write) must be a folder, not a file."""
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise UserInputError(
            f"cannot write {what} {path}: {folder} is a file, not a folder; choose another path"
        )


def render_html(*, title: str, sections: Sequence[ReportSection], subtitle: str = "") -> str:
    """The whole page as one string (UTF-8, self-contained, no script)."""
    keys = [_section_key(section.key) for section in sections]
    if len(set(keys)) != len(keys):
        raise UserInputError(f"report sections need distinct keys, got {keys}")
    chart_ids = [_chart_id(section, chart) for section in sections for chart in section.charts]
    if len(set(chart_ids)) != len(chart_ids):  # an HTML id and a --plots file name each
        raise UserInputError(f"report charts need distinct names within a section, got {chart_ids}")
    css = _css()
    return (
        _environment()
        .get_template("report.html.j2")
        .render(
            title=title,
            subtitle=subtitle,
            csp=_csp(css),
            css=css,
            version=__version__,
            sections=[_section_view(section) for section in sections],
        )
    )


def write_report(
    *,
    path: Path,
    title: str,
    sections: Sequence[ReportSection],
    subtitle: str = "",
    plots_dir: Path | None = None,
) -> WrittenReport:
    """Write the report to ``path`` and, with ``plots_dir``, every chart as PNG and SVG.

    Plot files are named ``<section>-<chart>.png`` / ``.svg``. Every target is checked before
    anything is written: a bad ``path`` or ``plots_dir`` leaves no half-written output.
    """
    page = render_html(title=title, sections=sections, subtitle=subtitle)
    check_output(path, what="report", example="report.html")  # a FIFO would block the write forever
    _check_folder(path, "the report to")
    stems = [] if plots_dir is None else [plots_dir / _chart_id(s, c) for s in sections for c in s.charts]
    if plots_dir is not None and plots_dir.exists() and not plots_dir.is_dir():
        raise UserInputError(f"cannot write the plots into {plots_dir}: it is a file; name a folder")
    for stem in stems:
        for target in check_plot_targets(stem, ("png", "svg")):
            check_output(target, what="plot")
    plot_paths: list[Path] = []
    target = path  # the file being written: a full disk's error names none (error.filename is None)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(page, encoding="utf-8")
        if plots_dir is not None:
            plots_dir.mkdir(parents=True, exist_ok=True)
            for section in sections:
                for chart in section.charts:
                    stem = plots_dir / _chart_id(section, chart)
                    target = stem.with_suffix(".svg")
                    target.write_text(chart.svg, encoding="utf-8")
                    target = stem.with_suffix(".png")
                    target.write_bytes(chart.png)
                    plot_paths.extend((stem.with_suffix(".png"), stem.with_suffix(".svg")))
    except OSError as error:
        failed = Path(error.filename) if error.filename else target
        raise write_failed(failed, "report" if failed == path else "plot", error) from None
    summaries = tuple(
        SectionSummary(
            key=_section_key(section.key),
            title=section.title,
            chart_names=tuple(chart.name for chart in section.charts),
            num_tables=len(section.tables),
            skipped_reason=section.skipped_reason,
        )
        for section in sections
    )
    return WrittenReport(
        path=path, num_bytes=len(page.encode("utf-8")), sections=summaries, plot_paths=tuple(plot_paths)
    )


def render_written_report(written: WrittenReport) -> None:
    """Where the report went and which sections hold data (terminal)."""
    console = make_console()
    size_kib = written.num_bytes / 1024.0
    console.print(f"wrote {escape(str(written.path))} ({size_kib:.0f} KiB, self-contained)")
    for section in written.sections:
        if section.skipped_reason is None:
            charts = f", {len(section.chart_names)} chart(s)" if section.chart_names else ""
            console.print(f"  [green]✓[/] {escape(section.title)}{charts}")
        else:
            console.print(f"  [yellow]-[/] {escape(section.title)}: {escape(section.skipped_reason)}")
    if written.plot_paths:
        console.print(
            f"plots: {len(written.plot_paths)} file(s) in {escape(str(written.plot_paths[0].parent))}"
        )
