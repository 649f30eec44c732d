"""The fit and its honest error, in one record: what ``benchmarks/fit_efficiency.py`` reports.

:func:`fit_report` fits the profiles on every structured row (the shipped
values), runs the nested leave-one-publisher-out cross-validation, and lays out
per row the fitted and the out-of-fold prediction with its out-of-fold 80%
interval, per kind, publisher and profile the median errors, the coverage, and
every fitted number with the rows it is fitted on.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from lightspeed.catalog import Catalog
from lightspeed.sol.core.stacks import default_stack_name
from lightspeed.sol.core.uncertainty import LEVEL
from lightspeed.sol.validation.crossval import (
    FinalFit,
    Nested,
    final_fit,
    nested_cross_validation,
    num_values,
)
from lightspeed.sol.validation.fitting import (
    FitRow,
    Predictor,
    attention_dp_landscape,
    fit_rows,
    fitted_rows,
    predict,
    rival_minimum,
)
from lightspeed.sol.validation.structured import load_published_runs
from lightspeed.sol.validation.validate import p90_of
from lightspeed.workload import ModelRegistry

FIT_REPORT_SCHEMA_VERSION = 1


def error_summary(errors: Sequence[float | None]) -> dict[str, float | int | None]:
    """``n``, median, p90 (:func:`~lightspeed.sol.validation.validate.p90_of`, as ``validate``
    prints it) and max of the absolute relative errors (``None`` entries: not predicted).

    >>> error_summary([0.1, -0.2, None])["median_abs_error"]
    0.15000000000000002
    """
    absolute = sorted(abs(error) for error in errors if error is not None)
    if not absolute:
        return {"n": 0, "num_not_predicted": len(errors), "median_abs_error": None, "p90_abs_error": None}
    return {
        "n": len(absolute),
        "num_not_predicted": len(errors) - len(absolute),
        "median_abs_error": statistics.median(absolute),
        "p90_abs_error": p90_of(absolute),
        "max_abs_error": absolute[-1],
    }


def _relative(predicted: float | None, measured: float) -> float | None:
    return None if predicted is None else predicted / measured - 1.0


def _row_entry(row: FitRow, final: FinalFit, nested: Nested, predictor: Predictor) -> dict[str, Any]:
    fitted = predict(row, final.values, final.selection.choice, predictor)
    held = nested.rows[row.id]
    return {
        "id": row.id,
        "kind": row.kind,
        "publisher": row.publisher,
        "profile": row.profile,
        "family": row.family,
        "metric": row.metric,
        "measured": row.measured,
        "fitted": fitted,
        "fitted_error": _relative(fitted, row.measured),
        "out_of_fold": held.predicted,
        "out_of_fold_error": _relative(held.predicted, row.measured),
        "out_of_fold_interval": list(held.interval) if held.interval is not None else None,
        "out_of_fold_covered": held.covered,
        "fold_choice": {"train": held.train_variant, "infer": held.infer_variant},
    }


def _grouped(entries: list[dict[str, Any]], key: str) -> dict[str, Any]:
    result = {}
    for value in sorted({entry[key] for entry in entries}):
        chosen = [entry for entry in entries if entry[key] == value]
        result[value] = _summary(chosen)
    return result


def _summary(entries: list[dict[str, Any]]) -> dict[str, Any]:
    covered = [entry["out_of_fold_covered"] for entry in entries if entry["out_of_fold_covered"] is not None]
    return {
        "rows": [entry["id"] for entry in entries],
        "fitted": error_summary([entry["fitted_error"] for entry in entries]),
        "out_of_fold": error_summary([entry["out_of_fold_error"] for entry in entries]),
        "out_of_fold_coverage": sum(covered) / len(covered) if covered else None,
        "share_predicted": sum(entry["out_of_fold"] is not None for entry in entries) / len(entries),
    }


# a second basin this far from the fitted pace is a different deployment picture, not a finer
# reading of the same one
RIVAL_APART = 0.05


def _rivals(rows: list[FitRow], final: FinalFit, predictor: Predictor) -> dict[str, dict[str, float]]:
    """Per attention-DP group, the loss at the fitted pace and the lowest other minimum of its
    loss (:func:`~lightspeed.sol.validation.fitting.rival_minimum`), where it has one."""
    values, variant = final.values, final.selection.choice.infer
    out = {}
    for group, fitted in values.attention_dp.items():
        landscape = attention_dp_landscape(rows, values, variant, predictor, group)
        rival = rival_minimum(landscape, fitted, apart=RIVAL_APART)
        if rival is None:
            continue
        at_fit = min(landscape, key=lambda pair: abs(pair[0] - fitted))[1]
        out[f"attention_dp {group}"] = {"value": rival[0], "loss": rival[1], "loss_at_fit": at_fit}
    return out


def _parameters(rows: list[FitRow], final: FinalFit, predictor: Predictor) -> list[dict[str, Any]]:
    """Every fitted number of the shipped choice with its value, the rows it is fitted on and,
    for the attention-DP pace, the rival minimum of its loss (``rival``; ``None``: none)."""
    values, choice = final.values, final.selection.choice
    fitted_on = fitted_rows(rows, choice)
    listed: list[tuple[str, float | None, str]] = [
        (f"kernel {group}", value, f"training kernel efficiency ({choice.train.name} sharing)")
        for group, value in sorted(values.kernel.items())
    ]
    listed.append(("default", values.default, f"{default_stack_name()}: the median published run"))
    listed.append(("overlap_contention", values.contention, "every training stack"))
    listed += [
        (f"serving kernel {group}", value, "serving kernel efficiency")
        for group, value in values.serving_kernel.items()
    ]
    listed += [
        (f"attention_dp {group}", value, "attention-DP pace") for group, value in values.attention_dp.items()
    ]
    listed += [
        (f"iteration_overhead_s {name}", value, "host seconds per iteration")
        for name, value in values.overhead_s.items()
    ]
    rivals = _rivals(rows, final, predictor)
    return [
        {
            "name": name,
            "value": value,
            "what": what,
            "fitted_on": fitted_on.get(name, []),
            "rival": rivals.get(name),
        }
        for name, value, what in listed
    ]


def fit_report(
    *,
    catalog: Catalog,
    models: ModelRegistry,
    path: Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Fit on the structured rows (default: the shipped ones) and cross-validate (module docs)."""
    note = progress or (lambda message: None)
    runs = load_published_runs(catalog=catalog, models=models, path=path)
    rows, refused = fit_rows(runs, catalog)
    predictor = Predictor()
    note(f"{len(rows)} rows; fitting on all of them")
    final = final_fit(rows, predictor)
    note("nested leave-one-publisher-out cross-validation")
    nested = nested_cross_validation(rows, predictor)
    entries = [_row_entry(row, final, nested, predictor) for row in rows]
    choice = final.selection.choice
    return {
        "schema_version": FIT_REPORT_SCHEMA_VERSION,
        "level": LEVEL,
        "num_rows": len(runs),
        "refused": refused,
        "choice": {
            "train": {"variant": choice.train.name, "description": choice.train.description},
            "infer": {"variant": choice.infer.name, "description": choice.infer.description},
            "scores": final.selection.scores,
            "num_values": {"train": num_values(choice.train), "infer": num_values(choice.infer)},
        },
        "values": asdict(final.values),
        "parameters": _parameters(rows, final, predictor),
        "bands": {name: band.to_dict() for name, band in final.bands.items()},
        "final_out_of_fold": final.selection.predictions,
        "folds": [fold.to_dict() for fold in nested.folds],
        "rows": entries,
        "summary": {
            "kind": _grouped(entries, "kind"),
            "publisher": _grouped(entries, "publisher"),
            "profile": _grouped(entries, "profile"),
            "all": _summary(entries),
        },
    }


__all__ = ["FIT_REPORT_SCHEMA_VERSION", "error_summary", "fit_report"]
