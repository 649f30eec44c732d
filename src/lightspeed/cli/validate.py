"""``lightspeed validate [FILE]``: predict published runs, report the error.

With no file (or ``--builtin``), the structured published rows shipped with
lightspeed (``sol/validation/data/published-runs.toml``); a ``.toml`` file in
that format, or a tab-separated table in the format of ``published-dev.tsv``
(free text read by the documented rules, docs/sol.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from lightspeed.cli._common import get_context, json_option, print_json
from lightspeed.cli._sol_options import calibration_option, resolve_efficiency
from lightspeed.errors import UserInputError
from lightspeed.report import delayed_progress, render_validation, render_validation_explained
from lightspeed.sol import inference_predictor, validate_published
from lightspeed.sol.validation import validate_builtin


@click.command()
@click.argument("table", type=click.Path(path_type=Path), required=False)
@click.option(
    "--builtin",
    is_flag=True,
    help="Predict the structured published rows shipped with lightspeed (the default without FILE).",
)
@calibration_option
@click.option(
    "--explain",
    "explain_ids",
    multiple=True,
    metavar="ID",
    help="After the table, how row ID was read and predicted: its reading, plan and every "
    "assumption (repeatable; 'all' for every row).",
)
@json_option
def command(
    table: Path | None, builtin: bool, calibration: str | None, explain_ids: tuple[str, ...], as_json: bool
) -> None:
    """Predict published runs and report the error: the shipped rows, a structured .toml file, or a
    free-text TSV table (format of published-dev.tsv)."""
    if table is not None and builtin:
        raise UserInputError("give a FILE or --builtin, not both (without either, the shipped rows)")
    if explain_ids and as_json:
        raise UserInputError("--explain is for the table view; --json already has every row's assumptions")
    context = get_context()
    efficiency = resolve_efficiency(calibration)
    if table is None or table.suffix.lower() == ".toml":
        report = validate_builtin(
            catalog=context.catalog(), models=context.models(), efficiency=efficiency, path=table
        )
        _show(report, as_json, explain_ids)
        return
    with delayed_progress("predicting rows", total=None, as_json=as_json) as advance:
        report = validate_published(
            path=table,
            catalog=context.catalog(),
            models=context.models(),
            efficiency=efficiency,
            infer=inference_predictor(efficiency),
            progress=advance,
        )
    _show(report, as_json, explain_ids)


def _show(report: Any, as_json: bool, explain_ids: tuple[str, ...]) -> None:
    if as_json:
        print_json(validation_json(report))
        return
    # an unknown id is refused before any table is printed
    render_validation_explained(report, explain_ids, before=lambda: render_validation(report))


def validation_json(report: Any) -> dict[str, Any]:
    """The documented contract: ``{"rows": [{"id", "kind", "metric", "measured",
    "predicted", "rel_error", ...}], "summary": {"train": {...}, "infer": {...}},
    "summary_by_metric": {"infer/ttft_s": {...}, ...}}``."""
    payload = report.to_dict()
    return {"rows": payload["rows"], "summary": payload["summary"], "summary_by_metric": payload["by_metric"]}
