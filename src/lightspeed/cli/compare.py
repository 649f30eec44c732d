"""``lightspeed compare``: the regression gate (``compare [runs] BASELINE CURRENT``, exit 1 on
regression) and the system comparison (``compare systems ...``, in ``cli/compare_systems.py``)."""

from __future__ import annotations

import importlib
import importlib.util

import click

from lightspeed.cli._common import DefaultGroup, emit, json_option
from lightspeed.cli.options import PROBABILITY_OPEN, THRESHOLD, WARMUP
from lightspeed.errors import UnsupportedError
from lightspeed.gate import compare_runs, load_metric_samples
from lightspeed.report import render_gate

_SYSTEMS_MODULE = "lightspeed.cli.compare_systems"


class _CompareGroup(DefaultGroup):
    """``compare runs`` (the default) and ``compare systems`` (loaded on first use)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), "systems"})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name == "systems":
            return _systems_command()
        return super().get_command(ctx, cmd_name)


def _systems_command() -> click.Command:
    if importlib.util.find_spec(_SYSTEMS_MODULE) is None:
        raise UnsupportedError(
            "'lightspeed compare systems' needs the inference engine, which this installation does not have; "
            "'lightspeed compare BASELINE CURRENT' is the regression gate"
        )
    command = importlib.import_module(_SYSTEMS_MODULE).command
    assert isinstance(command, click.Command), f"{_SYSTEMS_MODULE}.command is not a click command"
    return command


@click.group(
    "compare",
    cls=_CompareGroup,
    default_command="runs",
    epilog="Exit codes of the gate: 0 no regression, 1 regression, 2 bad input.",
)
def command() -> None:
    """Regression gate between results (default: 'compare BASELINE CURRENT'), or hardware systems.

    'lightspeed compare BASELINE CURRENT' is 'lightspeed compare runs BASELINE CURRENT';
    'lightspeed compare systems --help' compares hardware systems instead.
    """


@command.command("runs", epilog="Exit codes: 0 no regression, 1 regression, 2 bad input.")
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
    "threshold_fraction",
    type=THRESHOLD,
    default="5%",
    show_default=True,
    help="Smallest relative change of the median that counts (e.g. 5% or 0.05).",
)
@click.option(
    "--alpha",
    type=PROBABILITY_OPEN,
    default=0.05,
    show_default=True,
    help="Significance level of the Mann-Whitney U test and the bootstrap CI.",
)
@click.option(
    "--warmup",
    type=WARMUP,
    default=None,
    help="Leading samples of each series to drop as warm-up (default: each input's own 'warmup', else 0).",
)
@click.option(
    "--include-last-step",
    is_flag=True,
    help="Traces: keep the last ProfilerStep (left out by default, as HTA does: the profiler stops in it).",
)
@json_option
def runs(
    *,
    baseline: str,
    current: str,
    metrics: tuple[str, ...],
    threshold_fraction: float,
    alpha: float,
    warmup: int | None,
    include_last_step: bool,
    as_json: bool,
) -> int:
    """Regression gate: is CURRENT significantly worse than BASELINE?

    BASELINE and CURRENT are sample files ({"metric", "unit", "lower_is_better",
    "samples"}), results-store runs, goodput run folders or profiler traces.
    A change is a regression only when the median moved the bad way by more
    than --threshold AND the move is statistically significant.
    """
    result = compare_runs(
        baseline=load_metric_samples(baseline, include_last_step=include_last_step),
        current=load_metric_samples(current, include_last_step=include_last_step),
        metrics=metrics,
        threshold_fraction=threshold_fraction,
        alpha=alpha,
        num_warmup=warmup,
    )
    emit(result, as_json, render_gate)
    return 1 if result.num_regressions else 0
