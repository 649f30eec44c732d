"""How ``lightspeed validate --explain ID`` shows one row: what was read from its cells, the plan
it was predicted with, and every assumption the readers made (the table shows only the verdict)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final

from lightspeed.errors import UserInputError
from lightspeed.report.console import make_console, plain
from lightspeed.units import format_duration, format_memory

if TYPE_CHECKING:
    from rich.console import Console

    from lightspeed.sol import ValidationReport, ValidationRow
    from lightspeed.sol.validation.validate import OtherFigure

# ``--explain all``: every row of the table
EXPLAIN_ALL: Final = "all"
# ids named in an error about an unknown id
_IDS_NAMED: Final = 12
# how a rate's metric name ends (``tokens_per_s``); a name ending ``_s`` otherwise is a time
_PER_SECOND: Final = "_per_s"


def read_as_text(row: ValidationRow) -> str:
    """Which metric piece and value a row was read from, e.g. ``'tokens/s/GPU' <- '14,451' (1 of 2)``."""
    reading = row.reading
    if reading is None:
        return ""
    where = f" ({reading['position']} of {reading['num_pieces']})" if reading["num_pieces"] > 1 else ""
    notes = "".join(f"; {note}" for note in reading["notes"])
    return f"'{reading['metric_text']}' <- '{reading['value_text']}'{where}{notes}"


def explained_rows(report: ValidationReport, row_ids: Sequence[str]) -> list[ValidationRow]:
    """The rows ``row_ids`` name, in the order named (``all``: every row, in table order); an id
    the table does not have is refused, naming the ids it has."""
    if EXPLAIN_ALL in row_ids:
        return list(report.rows)
    by_id = {row.id: row for row in report.rows}
    unknown = [row_id for row_id in row_ids if row_id not in by_id]
    if unknown:
        known = ", ".join(list(by_id)[:_IDS_NAMED]) + (", ..." if len(by_id) > _IDS_NAMED else "")
        raise UserInputError(
            f"--explain {unknown[0]}: no row with that id in {report.path} (its ids: {known}); "
            f"fix: give an id of the table's first column, or '{EXPLAIN_ALL}'"
        )
    return [by_id[row_id] for row_id in dict.fromkeys(row_ids)]


def render_validation_explained(
    report: ValidationReport, row_ids: Sequence[str], *, before: Callable[[], None] | None = None
) -> None:
    """Print, for each row ``row_ids`` names, its verdict, source, reading, plan and assumptions;
    ``before`` (the table) is called once the ids are known to name rows of ``report``."""
    rows = explained_rows(report, row_ids)
    if before is not None:
        before()
    console = make_console()
    for row in rows:
        _explain(console, row)


def _explain(console: Console, row: ValidationRow) -> None:
    console.print()
    console.print(f"[bold]{plain(row.id)}[/bold] ({row.kind}, {plain(row.metric)}): {plain(_verdict(row))}")
    lines = [
        ("source", row.source),
        ("publisher", row.publisher),
        ("stack", row.stack),
        ("read as", read_as_text(row)),
        *_plan_lines(row.plan),
        *(("also", _other_figure_text(figure)) for figure in row.also),
    ]
    for label, text in lines:
        if text:
            console.print(f"  {label}: {plain(text)}")
    if row.assumptions:
        console.print("  assumptions:")
        for assumption in row.assumptions:
            console.print(f"    - {plain(assumption)}")


def _other_figure_text(figure: OtherFigure) -> str:
    """``memory_per_gpu_bytes 82.4 GiB, predicted 73.18 GiB (-11.2%), from 'peak memory GiB' <- '82.4'``."""
    return (
        f"{figure.metric} {figure_text(figure.metric, figure.measured)}, predicted "
        f"{figure_text(figure.metric, figure.predicted)} ({error_text(figure.rel_error)}), "
        f"from {figure.read_as}"
    )


def _verdict(row: ValidationRow) -> str:
    """``measured 2,664,000, predicted 2,502,738 (-6.1%), interval 1,234,030-5,075,807`` or why not."""
    if row.status != "ok" or row.predicted is None or row.measured is None:
        return f"not predicted: {row.reason}"
    interval = f", interval {interval_text(row)}" if row.interval is not None else ""
    counted = f" (FLOPs as {row.flop_convention})" if row.flop_convention else ""
    return (
        f"measured {cell_text(row.metric, row.measured)}, "
        f"predicted {cell_text(row.metric, row.predicted)}{counted} "
        f"({error_text(row.rel_error)}){interval}"
    )


def error_text(value: float | None) -> str:
    """A signed relative error, ``+5.2%``; ``-`` where there is none."""
    return "-" if value is None else f"{value:+.1%}"


def number_text(value: float) -> str:
    """Thousands grouped from 1,000 up (``2,502,738``), four significant figures below (``0.08292``)."""
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"


def figure_text(metric: str, value: float) -> str:
    """A figure in its metric's most readable unit: bytes in GiB, seconds in the unit that suits
    them, fractions and rates (``*_per_s``, ``*_per_s_per_gpu``) as :func:`number_text` writes them.

    >>> figure_text("memory_per_gpu_bytes", 88476326297.6), figure_text("time_to_train_s", 7257600.0)
    ('82.4 GiB', '84 d')
    >>> figure_text("tokens_per_s", 2288843.0)
    '2,288,843'
    """
    if metric.endswith("_bytes"):
        return format_memory(value)
    if _is_duration(metric):
        return format_duration(value)
    return number_text(value)


def _is_duration(metric: str) -> bool:
    """A time in seconds (``step_time_s``, ``ttft_s``), not a rate per second (``tokens_per_s``)."""
    return metric.endswith("_s") and not metric.endswith(_PER_SECOND)


def cell_text(metric: str, value: float) -> str:
    """A row's figure in the main validation table: a time to train in days (``84 d``, as the
    table of other figures writes it) and bytes in GiB; every other metric in its own unit as
    :func:`number_text` writes it (a step time of ``1.42`` s stays ``1.42``).

    >>> cell_text("time_to_train_s", 7257600.0), cell_text("step_time_s", 1.42)
    ('84 d', '1.42')
    """
    if metric.endswith("_bytes") or metric == "time_to_train_s":
        return figure_text(metric, value)
    return number_text(value)


def interval_text(row: ValidationRow) -> str:
    """``low-high`` of the prediction's error bars, marked when the measured value is outside."""
    if row.interval is None:
        return ""
    low, high = row.interval
    outside = "" if row.covered else " (outside)"
    return f"{cell_text(row.metric, low)}-{cell_text(row.metric, high)}{outside}"


def _plan_lines(plan: dict[str, Any] | None) -> list[tuple[str, str]]:
    """(label, text) of the plan's settings (whole numbers, names, flags), its predicted figures
    (the other numbers) and its bound, each as ``key=value`` pairs with the unset ones left out."""
    if not plan:
        return []
    convention = str(plan.get(_MFU_CONVENTION) or "")
    shown = {key: value for key, value in plan.items() if key not in _NOT_SHOWN and _shown(value)}
    settings = {key: value for key, value in shown.items() if not isinstance(value, (float, list, tuple))}
    figures = {key: value for key, value in shown.items() if key not in settings and key != "bound"}
    bound = str(shown.get("bound", ""))
    if convention:  # the engine's MFU beside a row's figure counted in another convention
        figures = {
            (f"{key} ({convention})" if key == "mfu" else key): value for key, value in figures.items()
        }
        bound = bound.replace("(MFU ", f"(MFU as {convention}: ")
    lines = [
        ("plan", ", ".join(f"{key}={_value(value)}" for key, value in settings.items() if key != "bound")),
        ("predicted", ", ".join(f"{key}={_value(value)}" for key, value in figures.items())),
        ("bound", bound),
    ]
    return [(label, text) for label, text in lines if text]


# the 0.1 names a training plan's JSON keeps beside zero_stage and micro_batch_size (CHANGELOG.md)
_PLAN_ALIASES: Final = frozenset({"zero", "micro_batch"})
# how the plan's own ``mfu`` counts FLOPs (the engine's convention), shown beside that figure
_MFU_CONVENTION: Final = "mfu_convention"
_NOT_SHOWN: Final = _PLAN_ALIASES | {_MFU_CONVENTION}


def _shown(value: Any) -> bool:
    if isinstance(value, (list, tuple)):
        return bool(value)
    return value is not None and not isinstance(value, dict)


def _value(value: Any) -> str:
    if isinstance(value, float):
        return number_text(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value(item) for item in value) + "]"
    return str(value)


__all__ = [
    "EXPLAIN_ALL",
    "cell_text",
    "error_text",
    "explained_rows",
    "figure_text",
    "interval_text",
    "number_text",
    "read_as_text",
    "render_validation_explained",
]
