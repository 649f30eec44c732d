"""``lightspeed compare``: the regression gate (``compare [runs] BASELINE CURRENT``, exit 1 on
regression) and the system comparison (``compare systems ...``, in ``cli/compare_systems.py``)."""

from __future__ import annotations

import importlib
import importlib.util
import math
from typing import Any

import click

from lightspeed.cli._common import DefaultGroup, emit, json_option
from lightspeed.cli.options import PROBABILITY_OPEN, THRESHOLD, WARMUP, Percent
from lightspeed.errors import UnsupportedError
from lightspeed.gate import compare_runs, load_metric_samples
from lightspeed.report import render_gate

_SYSTEMS_MODULE = "lightspeed.cli.compare_systems"
_EXIT_CODES = (
    "Exit codes of the gate: 0 no regression, 1 regression (or a baseline metric missing from the current "
    "run), 2 bad input, 70 internal error (a bug in lightspeed)."
)


class _GateThreshold(Percent):
    """``--threshold``: ``5%`` or ``0.05``; a bare number of 1 or more is refused, as it is ambiguous
    (``5`` meant as 5% would be 500% and silently disable the gate)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and not value.strip().endswith("%"):
            try:
                bare = float(value)
            except ValueError:
                bare = None
            if bare is not None and math.isfinite(bare) and bare >= 1.0:
                self.fail(
                    f"{value.strip()!r} is ambiguous: a bare number is a fraction ({value.strip()} = "
                    f"{bare:.0%}); write {value.strip()}% or {bare / 100:g}",
                    param,
                    ctx,
                )
        return super().convert(value, param, ctx)


GATE_THRESHOLD = _GateThreshold(minimum=THRESHOLD.minimum, maximum=THRESHOLD.maximum)


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


@click.group("compare", cls=_CompareGroup, default_command="runs", epilog=_EXIT_CODES)
def command() -> None:
    """Regression gate between results (default: 'compare BASELINE CURRENT'), or hardware systems.

    'lightspeed compare BASELINE CURRENT' is 'lightspeed compare runs BASELINE CURRENT';
    'lightspeed compare systems --help' compares hardware systems instead.
    """


@command.command("runs", epilog=_EXIT_CODES)
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
    type=GATE_THRESHOLD,
    default="5%",
    show_default=True,
    help="Smallest relative change of the median that counts: 5% or 0.05 (a bare 5 is refused as ambiguous); "
    "below 100% when a metric is better higher (it can fall 100% at most).",
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
@click.option(
    "--allow-missing",
    is_flag=True,
    help="Pass although a metric of the baseline is missing from the current run (by default that fails: "
    "its benchmark crashed or gave no finite value).",
)
@click.option(
    "--allow-different-hardware",
    is_flag=True,
    help="Compare runs measured on another GPU or CPU model (refused by default: a device change is not a "
    "regression); the differences are still reported.",
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
    allow_missing: bool,
    allow_different_hardware: bool,
    as_json: bool,
) -> int:
    """Regression gate: is CURRENT significantly worse than BASELINE?

    BASELINE and CURRENT are sample files ({"metric", "unit", "lower_is_better",
    "samples"}), results-store runs, goodput run folders or profiler traces.
    A change is a regression only when the median moved the bad way by more
    than --threshold AND the move is statistically significant. Warnings (environments
    that differ, directions assumed, metrics missing) go to stderr.
    """
    result = compare_runs(
        baseline=load_metric_samples(baseline, include_last_step=include_last_step),
        current=load_metric_samples(current, include_last_step=include_last_step),
        metrics=metrics,
        threshold_fraction=threshold_fraction,
        alpha=alpha,
        num_warmup=warmup,
        allow_missing=allow_missing,
        allow_different_hardware=allow_different_hardware,
    )
    emit(result, as_json, render_gate)
    for note in result.notes:
        click.echo(f"lightspeed: warning: {' '.join(note.split())}", err=True)
    return 0 if result.passed else 1
