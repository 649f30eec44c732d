"""The HTML report framework: self-contained, escaped, every plot rendered in Chromium."""

from __future__ import annotations

import base64
import html
import re
from pathlib import Path

import pytest

from lightspeed.errors import UserInputError
from lightspeed.report.html import (
    ReportSection,
    Table,
    chart_from_figure,
    render_html,
    skipped_section,
    write_report,
)
from lightspeed.report.plots import new_figure

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)> --> "quoted" & $\\alpha$'


def _bar_chart(name: str, labels: list[str]) -> object:
    figure, axes = new_figure(6, 3)
    axes.barh(range(len(labels)), [3, 2, 1][: len(labels)])
    axes.set_yticks(range(len(labels)), [label.replace("$", r"\$") for label in labels])
    return chart_from_figure(figure, name=name, title=f"chart {name}")


def _sections() -> list[ReportSection]:
    return [
        ReportSection(
            key="kernels",
            title="Kernels <top>",
            paragraphs=(f"kernel from a trace: {HOSTILE}",),
            tables=(Table(headers=("kernel", "time"), rows=((HOSTILE, "1 ms"), ("ampere_sgemm", "2 ms"))),),
            charts=(_bar_chart("kernels", [HOSTILE, "ampere_sgemm"]),),  # type: ignore[arg-type]
        ),
        ReportSection(key="second", title="Second", charts=(_bar_chart("other", ["a", "b", "c"]),)),  # type: ignore[arg-type]
        skipped_section("goodput", "Goodput", "no goodput run in the store; run 'lightspeed tour'"),
    ]


def test_every_untrusted_string_is_escaped() -> None:
    page = render_html(title=f"report {HOSTILE}", sections=_sections())
    assert "<script" not in page
    assert "onerror=" not in page.replace("onerror=alert(1)&gt;", "")  # only inside escaped text
    # escaped, whichever entity the escaper writes for the quote (&quot; or &#34;), and read back intact
    assert re.search(r"&lt;script&gt;alert\((&quot;|&#34;)x(&quot;|&#34;)\)&lt;/script&gt;", page)
    assert '<script>alert("x")</script>' in html.unescape(page)
    # The SVG carries the kernel name but is base64 inside an <img>: never parsed as page markup.
    assert page.count("<img ") == 2


def test_page_is_self_contained() -> None:
    page = render_html(title="t", sections=_sections())
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", page)
    assert "@import" not in page
    assert "url(" not in page
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page)
    assert csp is not None
    assert "default-src 'none'" in html.unescape(csp.group(1))
    images = re.findall(r'src="data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)"', page)
    assert len(images) == 2
    assert base64.b64decode(images[0]).decode().startswith("<svg")


def test_section_keys_must_be_distinct() -> None:
    with pytest.raises(UserInputError, match="distinct"):
        render_html(
            title="t", sections=[ReportSection(key="a", title="A"), ReportSection(key="A", title="B")]
        )


def test_write_report_and_plots(tmp_path: Path) -> None:
    written = write_report(
        path=tmp_path / "out" / "report.html", title="t", sections=_sections(), plots_dir=tmp_path / "plots"
    )
    assert written.path.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert written.num_bytes == written.path.stat().st_size
    names = sorted(p.name for p in written.plot_paths)
    assert names == ["kernels-kernels.png", "kernels-kernels.svg", "second-other.png", "second-other.svg"]
    assert (tmp_path / "plots" / "kernels-kernels.png").read_bytes().startswith(b"\x89PNG")
    assert [s.skipped_reason is not None for s in written.sections] == [False, False, True]
    assert written.to_dict()["sections"][0]["chart_names"] == ["kernels"]


def test_unwritable_report_path_is_a_user_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(UserInputError, match="cannot write"):
        write_report(path=blocker / "report.html", title="t", sections=_sections())


@pytest.mark.slow
def test_report_renders_in_headless_chromium(tmp_path: Path, chromium_page) -> None:  # type: ignore[no-untyped-def]
    written = write_report(path=tmp_path / "report.html", title=f"lightspeed {HOSTILE}", sections=_sections())
    page = chromium_page(written.path)
    assert page.console_errors == []
    assert page.title.startswith("lightspeed <script>")  # shown as text, not run
    assert len(page.images) == 2
    for image in page.images:
        assert image["complete"], image
        assert image["width"] > 100, image
        assert image["height"] > 50, image
        assert image["shown_width"] > 100, image
    assert all(url.startswith(("file:", "data:")) for url in page.requests), page.requests
    screenshot = tmp_path / "report.png"
    screenshot.write_bytes(page.screenshot_png)
    assert page.screenshot_png.startswith(b"\x89PNG")
    assert len(page.screenshot_png) > 10_000
