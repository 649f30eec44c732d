"""``lightspeed compare BASELINE CURRENT``: the regression gate (exit 1 on regression).

``lightspeed compare systems ...`` is a different command (the inference
engine's system comparison); it is dispatched to ``lightspeed.cli.compare_systems``.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

import click

from lightspeed.cli._common import emit, json_option
from lightspeed.errors import UnsupportedError
from lightspeed.gate import compare_runs, load_metric_samples
from lightspeed.report import render_gate
from lightspeed.units import parse_percent

_SYSTEMS_MODULE = "lightspeed.cli.compare_systems"
_SYSTEMS_ARGS = "lightspeed.compare.systems_args"


class _CompareCommand(click.Command):
    """The gate, except that ``compare systems ...`` goes to the system comparison."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] == "systems":
            ctx.meta[_SYSTEMS_ARGS] = args[1:]
            return []
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        systems_args = ctx.meta.pop(_SYSTEMS_ARGS, None)
        if systems_args is None:
            return super().invoke(ctx)
        systems = _systems_command()
        with systems.make_context("systems", list(systems_args), parent=ctx) as sub_ctx:
            return systems.invoke(sub_ctx)


def _systems_command() -> click.Command:
    if importlib.util.find_spec(_SYSTEMS_MODULE) is None:
        raise UnsupportedError(
            "'lightspeed compare systems' needs the inference engine, which this installation does not have; "
            "'lightspeed compare BASELINE CURRENT' is the regression gate"
        )
    command = importlib.import_module(_SYSTEMS_MODULE).command
    assert isinstance(command, click.Command), f"{_SYSTEMS_MODULE}.command is not a click command"
    return command


@click.command(
    "compare",
    cls=_CompareCommand,
    epilog="Exit codes: 0 no regression, 1 regression, 2 bad input. "
    "'lightspeed compare systems --help' compares hardware systems instead.",
)
@click.argument("baseline")
@click.argument("current")
@click.option(
    "--metric",
    "metrics",
    multiple=True,
    help="Metric to compare (repeatable); default: every metric both inputs have.",
)
@click.option(
    "--threshold",
    default="5%",
    show_default=True,
    help="Smallest relative change of the median that counts (e.g. 5% or 0.05).",
)
@click.option(
    "--alpha",
    type=float,
    default=0.05,
    show_default=True,
    help="Significance level of the Mann-Whitney U test and the bootstrap CI.",
)
@click.option(
    "--warmup",
    type=click.IntRange(min=0),
    default=None,
    help="Leading samples of each series to drop as warm-up (default: each input's own 'warmup', else 0).",
)
@json_option
def command(
    *,
    baseline: str,
    current: str,
    metrics: tuple[str, ...],
    threshold: str,
    alpha: float,
    warmup: int | None,
    as_json: bool,
) -> int:
    """Regression gate: is CURRENT significantly worse than BASELINE?

    BASELINE and CURRENT are sample files ({"metric", "unit", "lower_is_better",
    "samples"}), results-store runs, goodput run folders or profiler traces.
    A change is a regression only when the median moved the bad way by more
    than --threshold AND the move is statistically significant.
    """
    result = compare_runs(
        baseline=load_metric_samples(baseline),
        current=load_metric_samples(current),
        metrics=metrics,
        threshold_fraction=parse_percent(threshold),
        alpha=alpha,
        num_warmup=warmup,
    )
    emit(result, as_json, render_gate)
    return 1 if result.num_regressions else 0
