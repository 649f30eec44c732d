"""``lightspeed report``: write the self-contained HTML report."""

from __future__ import annotations

from pathlib import Path
from typing import Final

import click

from lightspeed.cli._common import emit, get_context, json_option, with_warnings
from lightspeed.cli.text_options import OutputPath
from lightspeed.cost import load_prices
from lightspeed.errors import UserInputError
from lightspeed.files import check_output
from lightspeed.report import build_sections, cost_section, gather_inputs, render_written_report, write_report
from lightspeed.trace import MLPERF_LOG, NCU_REP, detect_format, wrong_format


@click.command("report")
@click.option(
    "--from",
    "sources",
    multiple=True,
    metavar="RUN:ID|RUN_DIR|TRACE|NCU.csv|JSON",
    help="Input to draw (repeatable): a results-store run (run:ID), a goodput run folder, a monitor "
    "run folder, a profiler trace (Kineto, Nsight Systems), Nsight Compute CSV output, or JSON written "
    "by 'lightspeed bench --json', 'plan train --json', 'plan infer --json' or 'simulate --json' (with "
    "--sweep too). "
    "Default: the newest runs of the results store.",
)
@click.option(
    "-o",
    "--output",
    type=OutputPath(dir_okay=False, example="report.html", what="report"),
    default=Path("lightspeed-report.html"),
    show_default=True,
    help="Where to write the HTML file (.html or .htm; its folder must exist).",
)
@click.option(
    "--plots",
    "plots_dir",
    type=OutputPath(file_okay=False, example="plots/"),
    default=None,
    help="Also write every chart as PNG and SVG into this folder.",
)
@click.option(
    "--history",
    "history_name",
    default=None,
    help="Stored record name whose history to plot (beside --from inputs, drawn only when named).",
)
@click.option(
    "--history-metric", default=None, help="Stored metric whose history to plot (e.g. step_time_s)."
)
@click.option(
    "--skip-bad-events",
    is_flag=True,
    help="Leave impossible trace events out (default: stop on the first); the count is shown.",
)
@click.option(
    "--include-last-step",
    is_flag=True,
    help="Count a trace's last ProfilerStep (HTA leaves it out), as 'trace summary --include-last-step'.",
)
@click.option(
    "--device",
    default=None,
    metavar="NAME",
    help="Catalog device Nsight Compute kernels ran on, e.g. h100 (ncu's details page names none), for "
    "their FLOP/s against its peak, as 'kernels report --device'.",
)
@click.option("--title", default="lightspeed report", show_default=True, help="Title of the page.")
@click.option(
    "--prices",
    "prices_path",
    type=click.Path(path_type=Path),
    help="Prices file (see examples/prices.toml): add a cost and energy section pricing each predicted "
    "training step and serving plan (with none, the section says there is nothing to price).",
)
@json_option
def command(
    *,
    sources: tuple[str, ...],
    output: Path,
    plots_dir: Path | None,
    history_name: str | None,
    history_metric: str | None,
    title: str,
    skip_bad_events: bool,
    include_last_step: bool,
    device: str | None,
    prices_path: Path | None,
    as_json: bool,
) -> None:
    """Write one self-contained HTML file (no network needed to view it) with the roofline of
    measured points, a plan's step-time breakdown, a serving plan's iteration breakdown (plan infer),
    the goodput waterfall, the trace's per-rank breakdown, kernels against their SOL (Nsight
    Compute), simulated serving runs, monitor runs, the cost of each plan (--prices) and a metric's
    history across runs."""
    _check_output(output)
    _refuse_unreadable(sources)
    # the catalog only where something is read against it: the store's own runs need none, and a
    # reading command creates no cache beside the store (tests/store/test_open_not_create.py)
    catalog = get_context().catalog() if sources or device or prices_path is not None else None
    # a bad prices file is refused before anything is read
    prices = None if prices_path is None or catalog is None else load_prices(prices_path, catalog=catalog)
    inputs = with_warnings(
        lambda: gather_inputs(
            sources=sources,
            history_name=history_name,
            history_metric=history_metric,
            skip_bad_events=skip_bad_events,
            include_last_step=include_last_step,
            device=device,
            catalog=catalog,
        )
    )
    sections = build_sections(inputs)
    if prices is not None and catalog is not None:
        power = get_context().power()
        sections.insert(
            2,
            cost_section(inputs.estimates, served=inputs.served, catalog=catalog, power=power, prices=prices),
        )
    written = write_report(path=output, title=title, sections=sections, plots_dir=plots_dir)
    emit(written, as_json, render_written_report)


REPORT_SUFFIXES: Final = (".html", ".htm")


def _check_output(output: Path) -> None:
    """Before anything is read: the report is one HTML file (there is no PDF or other export, so
    another suffix would hold HTML under a misleading name), in a folder that exists (none is made,
    as no other output path makes one). A file in the way of the folder is the writer's to name."""
    if output.suffix.lower() not in REPORT_SUFFIXES:
        named = f"{output.suffix!r} is not" if output.suffix else "a name without a suffix is not"
        raise UserInputError(
            f"cannot write the report to {output}: {named} an HTML file name (the report is one "
            "self-contained HTML page; there is no PDF export); end the name in .html or .htm, e.g. "
            "-o report.html"
        )
    if not any(folder.exists() and not folder.is_dir() for folder in output.parents):
        check_output(output, what="report", example="report.html", new_folder_ok=False)


def _refuse_unreadable(sources: tuple[str, ...]) -> None:
    """A file the report cannot draw but another command reads: say what it is and which command."""
    for source in sources:
        path = Path(source)
        found = detect_format(path) if path.is_file() else None
        if found in (MLPERF_LOG, NCU_REP):
            stem = path.name.split(".")[0] or path.stem
            also = f"or pass {stem}.csv with --from" if found == NCU_REP else ""
            raise wrong_format(path, found, "a file 'lightspeed report' draws", also=also)
