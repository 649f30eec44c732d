"""Predict structured validation rows (``lightspeed validate`` with no file, or ``--builtin``).

The shipped rows (:func:`~lightspeed.sol.validation.structured.builtin_runs_file`)
or a user's file in the same format are predicted the way table rows are: each
row on its own software profile, with the error bars of its family; a row the
engines refuse is reported with its reason, never dropped.

>>> from lightspeed.catalog import load_catalog
>>> from lightspeed.workload import load_models
>>> report = validate_builtin(catalog=load_catalog(), models=load_models())
>>> report.summary["train"].n >= 30
True
"""

from __future__ import annotations

from pathlib import Path

from lightspeed.catalog import Catalog
from lightspeed.errors import LightspeedError
from lightspeed.sol.core.efficiency import EfficiencyModel
from lightspeed.sol.core.serving_stacks import ServingStack
from lightspeed.sol.core.stacks import Stack
from lightspeed.sol.validation.infer_predict import inference_setup, predict_inference_setup
from lightspeed.sol.validation.rows import training_setup
from lightspeed.sol.validation.structured import PublishedRun, builtin_runs_file, load_published_runs
from lightspeed.sol.validation.validate import (
    RowLabel,
    ValidationReport,
    ValidationRow,
    predict_training_setup,
    report_of,
)
from lightspeed.workload import ModelRegistry


def label_of(run: PublishedRun) -> RowLabel:
    """The id, source and publisher a prediction record carries."""
    source = f"{run.source} ({run.url})" if run.url else run.source
    return RowLabel(run.id, source, run.publisher)


def predict_run(
    run: PublishedRun,
    catalog: Catalog,
    *,
    efficiency: EfficiencyModel | None = None,
    stack: Stack | None = None,
    serving: ServingStack | None = None,
) -> ValidationRow:
    """One structured row predicted on its own profile (or on ``stack``/``serving``).

    Raises :class:`~lightspeed.errors.LightspeedError` when the engines refuse the row.
    """
    if run.training is not None:
        setup = training_setup(run.training, catalog, stack=stack)
        return predict_training_setup(label_of(run), setup, efficiency)
    assert run.inference is not None
    inference, cluster = inference_setup(run.inference, catalog, serving=serving)
    return predict_inference_setup(label_of(run), inference, cluster, efficiency)


def _refused(run: PublishedRun, reason: str) -> ValidationRow:
    label = label_of(run)
    return ValidationRow(
        id=run.id,
        kind=run.kind,
        metric=run.metric,
        measured=run.measured,
        predicted=None,
        rel_error=None,
        status="error",
        reason=reason,
        plan=None,
        assumptions=run.spec.assumptions,
        source=label.source,
        publisher=run.publisher,
        stack=run.stack,
    )


def validate_runs(
    *,
    runs: tuple[PublishedRun, ...],
    catalog: Catalog,
    efficiency: EfficiencyModel | None = None,
    path: str = "",
) -> ValidationReport:
    """Every structured row predicted (see the module docs), with the summary per kind and metric."""
    rows = []
    for run in runs:
        try:
            rows.append(predict_run(run, catalog, efficiency=efficiency))
        except LightspeedError as error:
            rows.append(_refused(run, str(error)))
    return report_of(path, tuple(rows))


def validate_builtin(
    *,
    catalog: Catalog,
    models: ModelRegistry,
    efficiency: EfficiencyModel | None = None,
    path: Path | None = None,
) -> ValidationReport:
    """The shipped structured rows (or the file at ``path`` in their format), predicted."""
    file = path or builtin_runs_file()
    runs = load_published_runs(catalog=catalog, models=models, path=file)
    return validate_runs(runs=runs, catalog=catalog, efficiency=efficiency, path=str(file))


__all__ = ["label_of", "predict_run", "validate_builtin", "validate_runs"]
