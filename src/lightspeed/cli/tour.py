"""``lightspeed tour``: the whole loop on this machine in one to two minutes on 2 cores, no GPU needed."""

from __future__ import annotations

import click

from lightspeed.cli._common import get_context, json_option, print_json
from lightspeed.report import make_console
from lightspeed.tour import render_tour_step, render_tour_summary, run_tour


@click.command("tour")
@click.option(
    "--quick",
    is_flag=True,
    help="The shortest tour (CI): a shorter run of a smaller tiny GPT, its step time stored apart "
    "(tiny-gpt-quick).",
)
@click.option(
    "--out",
    "out_dir",
    # text, not a Path (an empty --out must not become "."), checked by the tour's check_out_dir
    # before anything runs: a file there is said in the tour's one line, not click's
    metavar="DIRECTORY",
    default="lightspeed-tour",
    show_default=True,
    help="Folder for the report, plots, the tiny GPT's run and trace.",
)
@click.option(
    "--sol-device",
    default=None,
    metavar="NAME",
    help="Catalog CPU record to measure the benchmarks against instead of the detected CPU's peak "
    "(a CPU the catalog derives none for, as in a VM; see 'lightspeed hw list').",
)
@json_option
def command(*, quick: bool, out_dir: str, sol_device: str | None, as_json: bool) -> int:
    """Show the whole loop on this machine: SOL, measure, train with goodput, trace, predict, report.

    One to two minutes on a 2-core machine without a GPU (about one with --quick): the tiny GPT's
    training takes most of it. Exit code 0 when every step ran or was skipped for a stated reason,
    1 when one failed, 2 (before any step) for an --out, a --sol-device or a results store
    ($LIGHTSPEED_HOME) the tour cannot use.
    """
    context = get_context()
    console = make_console()
    result = run_tour(
        out_dir=out_dir,
        catalog=context.catalog(),
        models=context.models(),
        quick=quick,
        sol_device=sol_device,
        on_step=None if as_json else lambda step: render_tour_step(step, console),
    )
    if as_json:
        print_json(result)
    else:
        render_tour_summary(result, console)
    return 1 if result.num_failed else 0
