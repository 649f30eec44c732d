"""``lightspeed validate FILE.tsv``: predict published runs, report the error."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from lightspeed.cli._common import get_context, json_option, print_json
from lightspeed.cli._sol_options import calibration_option, resolve_efficiency
from lightspeed.report import delayed_progress, render_validation
from lightspeed.sol import inference_predictor, validate_published


@click.command()
@click.argument("table", type=click.Path(path_type=Path))
@calibration_option
@json_option
def command(table: Path, calibration: str | None, as_json: bool) -> None:
    """Predict every row of a published-results TSV (format of published-dev.tsv) and report the error."""
    context = get_context()
    efficiency = resolve_efficiency(calibration)
    with delayed_progress("predicting rows", total=None, as_json=as_json) as advance:
        report = validate_published(
            path=table,
            catalog=context.catalog(),
            models=context.models(),
            efficiency=efficiency,
            infer=inference_predictor(efficiency),
            progress=advance,
        )
    if as_json:
        print_json(validation_json(report))
    else:
        render_validation(report)


def validation_json(report: Any) -> dict[str, Any]:
    """The documented contract: ``{"rows": [{"id", "kind", "metric", "measured",
    "predicted", "rel_error", ...}], "summary": {"train": {...}, "infer": {...}}}``."""
    payload = report.to_dict()
    return {"rows": payload["rows"], "summary": payload["summary"]}
