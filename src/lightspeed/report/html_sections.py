"""The sections of the HTML report, one builder per kind of result.

Each builder takes library records (never files) and returns a
:class:`~lightspeed.report.html.ReportSection` whose charts come from the
area's own chart function where the area has one. :func:`build_sections`
gathers the inputs (``--from`` sources, else the newest runs of the results
store) and calls the builders; a section whose data is missing says why.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from lightspeed.errors import UserInputError
from lightspeed.report.html import ReportSection, Table, chart_from_figure, skipped_section
from lightspeed.report.regression import history_figure
from lightspeed.store import MetricHistory, metric_history, open_store

HISTORY_TITLE = "History of a metric across runs"


@dataclass(frozen=True)
class ReportInputs:
    """What the report draws; ``None`` fields become sections that say what is missing."""

    history: MetricHistory | None = None
    history_reason: str = ""


def _format_value(value: float | None) -> str:
    return "-" if value is None else f"{value:.5g}"


def history_section(history: MetricHistory | None, reason: str = "") -> ReportSection:
    """A metric across the runs of the store, with the gate's verdict per run."""
    if history is None:
        return skipped_section("history", HISTORY_TITLE, reason or "the results store holds no run yet")
    rows = tuple(
        (
            point.run_id,
            time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(point.created_s)),
            _format_value(point.value),
            f"{_format_value(point.min_value)} .. {_format_value(point.max_value)}",
            str(point.num_samples),
            _format_value(point.sol),
            point.verdict,
        )
        for point in history.points
    )
    better = "lower" if history.lower_is_better else "higher"
    table = Table(
        headers=(
            "run",
            "time (UTC)",
            f"median ({history.unit})",
            "min .. max",
            "samples",
            "SOL",
            "vs previous run",
        ),
        rows=rows,
    )
    figure = history_figure(history)
    return ReportSection(
        key="history",
        title=HISTORY_TITLE,
        paragraphs=(
            f"{history.name} [{history.metric}] in {history.unit} over {len(history.points)} run(s) "
            f"({better} is better). Each run is compared with the one before by the regression gate "
            "(threshold 5%, Mann-Whitney U and bootstrap CI at alpha 0.05).",
        ),
        tables=(table,),
        charts=(
            chart_from_figure(figure, name="history", title=f"{history.name} [{history.metric}] per run"),
        ),
    )


def gather_inputs(
    *,
    sources: Sequence[str] = (),
    store_path: Path | None = None,
    history_name: str | None = None,
    history_metric: str | None = None,
) -> ReportInputs:
    """Load every input of the report from ``sources`` and the results store."""
    if sources:
        raise UserInputError(f"cannot read {sources[0]!r} yet")
    with open_store(store_path) as store:
        try:
            history = metric_history(store=store, name=history_name, metric=history_metric)
        except UserInputError as error:
            if history_name or history_metric:
                raise
            return ReportInputs(history=None, history_reason=str(error))
    return ReportInputs(history=history)


def build_sections(inputs: ReportInputs) -> list[ReportSection]:
    """Every section of the report, in reading order."""
    return [history_section(inputs.history, inputs.history_reason)]
