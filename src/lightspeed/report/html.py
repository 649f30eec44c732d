"""The self-contained HTML report: one file, no network, every string escaped.

A report is a list of :class:`ReportSection` (title, paragraphs, tables,
charts). Charts are matplotlib figures turned into SVG and embedded as
``data:`` URIs inside ``<img>`` elements, so that an SVG drawn from an
untrusted trace (kernel names become text in it) can never run script or
break the page. Every other string goes through :func:`html.escape`. A
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
import hashlib
import html
import io
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from rich.markup import escape

from lightspeed import __version__
from lightspeed.errors import UserInputError
from lightspeed.records import Record
from lightspeed.report.console import make_console
from lightspeed.report.plots import figure_svg

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


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _table_html(table: Table) -> str:
    head = "".join(f"<th>{_e(cell)}</th>" for cell in table.headers)
    body = "".join("<tr>" + "".join(f"<td>{_e(cell)}</td>" for cell in row) + "</tr>" for row in table.rows)
    caption = f"<caption>{_e(table.caption)}</caption>" if table.caption else ""
    table_html = f"<table>{caption}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    return f'<div class="table-wrap">{table_html}</div>'


def _chart_html(chart: Chart) -> str:
    data = base64.b64encode(chart.svg.encode("utf-8")).decode("ascii")
    return (
        f'<figure class="chart" id="chart-{_e(chart.name)}">'
        f'<img alt="{_e(chart.title)}" src="data:image/svg+xml;base64,{data}">'
        f"<figcaption>{_e(chart.title)}</figcaption></figure>"
    )


def _section_html(section: ReportSection) -> str:
    parts = [f'<section id="{_e(_section_key(section.key))}"><h2>{_e(section.title)}</h2>']
    if section.skipped_reason is not None:
        parts.append(f'<p class="skipped">Not in this report: {_e(section.skipped_reason)}</p>')
    parts.extend(f"<p>{_e(paragraph)}</p>" for paragraph in section.paragraphs)
    parts.extend(_chart_html(chart) for chart in section.charts)
    parts.extend(_table_html(table) for table in section.tables)
    parts.append("</section>")
    return "\n".join(parts)


def render_html(*, title: str, sections: Sequence[ReportSection], subtitle: str = "") -> str:
    """The whole page as one string (UTF-8, self-contained, no script)."""
    keys = [_section_key(section.key) for section in sections]
    if len(set(keys)) != len(keys):
        raise UserInputError(f"report sections need distinct keys, got {keys}")
    css = _css()
    nav = "".join(
        f'<li><a href="#{_e(key)}">{_e(section.title)}</a>'
        + (' <span class="muted">(no data)</span>' if section.skipped_reason is not None else "")
        + "</li>"
        for key, section in zip(keys, sections, strict=True)
    )
    body = "\n".join(_section_html(section) for section in sections)
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{_e(_csp(css))}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{_e(title)}</title>\n<style>{css}</style></head>\n"
        f"<body><header><h1>{_e(title)}</h1>"
        + (f'<p class="muted">{_e(subtitle)}</p>' if subtitle else "")
        + f"</header>\n<nav><ol>{nav}</ol></nav>\n<main>\n{body}\n</main>\n"
        f'<footer class="muted">Written by lightspeed {_e(__version__)}. Self-contained: '
        "no network is needed to view this file.</footer>\n</body></html>\n"
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

    Plot files are named ``<section>-<chart>.png`` / ``.svg``.
    """
    page = render_html(title=title, sections=sections, subtitle=subtitle)
    plot_paths: list[Path] = []
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(page, encoding="utf-8")
        if plots_dir is not None:
            plots_dir.mkdir(parents=True, exist_ok=True)
            for section in sections:
                for chart in section.charts:
                    stem = plots_dir / f"{_section_key(section.key)}-{chart.name}"
                    stem.with_suffix(".svg").write_text(chart.svg, encoding="utf-8")
                    stem.with_suffix(".png").write_bytes(chart.png)
                    plot_paths.extend((stem.with_suffix(".png"), stem.with_suffix(".svg")))
    except OSError as error:
        raise UserInputError(f"cannot write the report to {error.filename}: {error.strerror}") from None
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
