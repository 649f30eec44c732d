"""Cross-validation of the fit that cannot flatter itself.

* **Leave one publisher out**: the folds are the ``publisher`` column of the
  structured rows (NVIDIA, Meta, DeepSeek, MosaicML, Trainy, LMSYS): every
  row is predicted by values fitted without any row its publisher reported,
  the way lightspeed meets a new lab's numbers.
* **Nested** for every choice among variants (:mod:`.fitting`'s sharings):
  inside each outer fold the variant is chosen by a leave-one-publisher-out
  cross-validation of the remaining publishers, then fitted on them; the
  held-out publisher's error is the error of the whole procedure, choice
  included.
* **Error bands out of fold**: each outer fold's bands come from the inner
  out-of-fold residuals of the chosen variant (never from the held-out rows,
  never from rows predicted by values fitted on them); the coverage of the
  held-out rows is measured the same way. The shipped bands come from the
  out-of-fold residuals of the final choice on every row.

>>> from lightspeed.sol.validation.fitting import Variant
>>> fold_publishers(["NVIDIA", "Meta", "NVIDIA"])
['Meta', 'NVIDIA']
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from lightspeed.records import Record
from lightspeed.sol.core.serving_stacks import load_serving_stacks
from lightspeed.sol.core.stacks import default_stack_name, load_stacks
from lightspeed.sol.core.uncertainty import LEVEL, Band, band_for, band_residual, bands_from_residuals
from lightspeed.sol.validation.fitting import (
    FitChoice,
    FitRow,
    Predictor,
    Values,
    Variant,
    adp_group,
    fit,
    fit_inference,
    fit_training,
    inference_variants,
    log_error,
    predict,
    training_variants,
)

KINDS = ("train", "infer")


def fold_publishers(publishers: Iterable[str]) -> list[str]:
    """The folds: each publisher once, sorted."""
    return sorted(set(publishers))


def leave_one_publisher_out(
    rows: Sequence[FitRow], variant: Variant, kind: str, predictor: Predictor
) -> dict[str, float | None]:
    """Out-of-fold predictions of the ``kind`` rows under ``variant``, by row id."""
    train_variant = variant if kind == "train" else training_variants()[0]
    choice = FitChoice(train_variant, variant)
    predictions: dict[str, float | None] = {}
    for publisher in fold_publishers(row.publisher for row in rows if row.kind == kind):
        rest = [row for row in rows if row.publisher != publisher]
        values = fit_training(rest, train_variant, predictor)
        if kind == "infer":  # a serving variant may take the training median's kernel efficiency
            values = fit_inference(rest, variant, predictor, start=values)
        for row in rows:
            if row.kind == kind and row.publisher == publisher:
                predictions[row.id] = predict(row, values, choice, predictor)
    return predictions


def median_log_error(rows: Sequence[FitRow], predictions: dict[str, float | None]) -> float:
    """Median ``|log(predicted / measured)|`` of the rows predicted (refused rows are charged)."""
    errors = [log_error(row, predictions.get(row.id)) for row in rows if row.id in predictions]
    return statistics.median(errors) if errors else 0.0


@dataclass(frozen=True)
class Selection(Record):
    """The variant chosen for each kind, the inner score of every variant, and the chosen
    variants' out-of-fold predictions (the residuals the error bands are made of)."""

    choice: FitChoice
    scores: dict[str, dict[str, float]]
    predictions: dict[str, float | None] = field(default_factory=dict)


def standard_error_of_median(errors: Sequence[float]) -> float:
    """The standard error of the median of ``errors`` (``1.2533 * stdev / sqrt(n)``, its
    large-sample value for a normal spread; 0 for fewer than two).

    >>> round(standard_error_of_median([0.0, 0.1, 0.2, 0.3]), 4)
    0.0809
    """
    if len(errors) < 2:
        return 0.0
    return 1.2533 * statistics.stdev(errors) / math.sqrt(len(errors))


def select(rows: Sequence[FitRow], predictor: Predictor) -> Selection:
    """Per kind, the simplest variant (fewest fitted groups) whose leave-one-publisher-out median
    error on ``rows`` is within one standard error of the best variant's (the one-standard-error
    rule: with few publishers, a variant with more values wins an inner cross-validation by
    chance more often than it generalizes)."""
    chosen: dict[str, Variant] = {}
    scores: dict[str, dict[str, float]] = {}
    predictions: dict[str, float | None] = {}
    for kind, variants in (("train", training_variants()), ("infer", inference_variants())):
        mine = [row for row in rows if row.kind == kind]
        ranked = []
        for variant in variants:
            oof = leave_one_publisher_out(rows, variant, kind, predictor)
            errors = [log_error(row, oof.get(row.id)) for row in mine if row.id in oof]
            score = statistics.median(errors) if errors else 0.0
            ranked.append((round(score, 9), num_values(variant), variant.name, variant, oof, errors))
        ranked.sort(key=lambda entry: entry[:3])
        limit = ranked[0][0] + standard_error_of_median(ranked[0][5])
        simplest = min(
            (entry for entry in ranked if entry[0] <= limit), key=lambda entry: (entry[1], entry[0])
        )
        chosen[kind] = simplest[3]
        scores[kind] = {entry[2]: entry[0] for entry in ranked}
        predictions.update(simplest[4])
    return Selection(FitChoice(chosen["train"], chosen["infer"]), scores, predictions)


def num_values(variant: Variant) -> int:
    """How many values ``variant`` can fit, over every profile of its kind (the complexity the
    one-standard-error rule weighs; a fold's rows may not show every group)."""
    if variant.kind == "train":
        return len({variant.group(name) for name in load_stacks() if name != default_stack_name()})
    serving = list(load_serving_stacks())
    kernels = set() if variant.kernel_from_training else {variant.group(name) for name in serving}
    return len(kernels) + len({adp_group(variant, name) for name in serving})


def residual_bands(rows: Sequence[FitRow], predictions: dict[str, float | None]) -> dict[str, Band]:
    """The bands (:func:`~lightspeed.sol.core.uncertainty.bands_from_residuals`) of out-of-fold
    predictions; rows refused or reporting memory are left out."""
    residuals = [
        (row.family, residual)
        for row in rows
        if (residual := band_residual(row.metric, row.measured, predictions.get(row.id))) is not None
    ]
    return bands_from_residuals(residuals)


@dataclass(frozen=True)
class HeldOut(Record):
    """One row predicted by the whole procedure without its publisher: value, interval, whether the
    measurement fell inside, and the sharing chosen in its fold."""

    id: str
    predicted: float | None
    interval: tuple[float, float] | None
    covered: bool | None
    train_variant: str
    infer_variant: str


@dataclass(frozen=True)
class Fold(Record):
    """One outer fold: the publisher held out, what was chosen without it, and the inner scores."""

    publisher: str
    train_variant: str
    infer_variant: str
    scores: dict[str, dict[str, float]]


@dataclass(frozen=True)
class Nested(Record):
    """The nested leave-one-publisher-out result: every row held out once, and the folds."""

    rows: dict[str, HeldOut]
    folds: tuple[Fold, ...]


def _held_out(row: FitRow, predicted: float | None, band: Band, selection: Selection) -> HeldOut:
    interval = band.of(row.metric, predicted) if predicted is not None and predicted > 0 else None
    covered = None if interval is None else interval[0] <= row.measured <= interval[1]
    return HeldOut(
        row.id, predicted, interval, covered, selection.choice.train.name, selection.choice.infer.name
    )


def nested_cross_validation(rows: Sequence[FitRow], predictor: Predictor) -> Nested:
    """Each publisher held out of the whole procedure: variant choice, fit and error bands."""
    held: dict[str, HeldOut] = {}
    folds = []
    for publisher in fold_publishers(row.publisher for row in rows):
        rest = [row for row in rows if row.publisher != publisher]
        selection = select(rest, predictor)
        values = fit(rest, selection.choice, predictor)
        bands = residual_bands(rest, selection.predictions)
        for row in rows:
            if row.publisher == publisher:
                predicted = predict(row, values, selection.choice, predictor)
                held[row.id] = _held_out(row, predicted, band_for(bands, row.family), selection)
        folds.append(
            Fold(publisher, selection.choice.train.name, selection.choice.infer.name, selection.scores)
        )
    return Nested(held, tuple(folds))


@dataclass(frozen=True)
class FinalFit(Record):
    """What ships: the sharing chosen on every row, the values fitted on every row, and the
    out-of-fold predictions of that choice (the shipped error bands' residuals)."""

    selection: Selection
    values: Values
    bands: dict[str, Band]


def final_fit(rows: Sequence[FitRow], predictor: Predictor) -> FinalFit:
    """The same procedure on every row: choose, fit, and bands from the choice's out-of-fold residuals."""
    selection = select(rows, predictor)
    values = fit(rows, selection.choice, predictor)
    return FinalFit(selection, values, residual_bands(rows, selection.predictions))


def coverage(held: Iterable[HeldOut]) -> float | None:
    """Share of rows whose measurement fell inside their out-of-fold interval."""
    flags = [row.covered for row in held if row.covered is not None]
    return sum(flags) / len(flags) if flags else None


__all__ = [
    "KINDS",
    "LEVEL",
    "FinalFit",
    "Fold",
    "HeldOut",
    "Nested",
    "Selection",
    "coverage",
    "final_fit",
    "fold_publishers",
    "leave_one_publisher_out",
    "median_log_error",
    "nested_cross_validation",
    "residual_bands",
    "select",
]
