"""Honest fitting (issue 28, point 7): folds are publishers, a held-out row never informs its own
prediction, variants are chosen inside each fold, and error bands are symmetric conformal bounds."""

from __future__ import annotations

import dataclasses

import pytest

from lightspeed.catalog import Catalog
from lightspeed.sol.core.uncertainty import bands_from_residuals, conformal_bounds
from lightspeed.sol.validation.crossval import (
    fold_publishers,
    leave_one_publisher_out,
    nested_cross_validation,
    num_values,
    standard_error_of_median,
)
from lightspeed.sol.validation.fitting import (
    FitRow,
    Predictor,
    central_mean,
    fit_rows,
    fit_training,
    inference_variants,
    loss,
    training_variants,
)
from lightspeed.sol.validation.structured import PublishedRun, load_published_runs
from lightspeed.workload import ModelRegistry

# Five cheap training rows from three publishers (MosaicML's llm-foundry, Trainy, Meta's torchtitan).
SMALL = ("T61", "T64", "T105", "T106", "T107")


@pytest.fixture(scope="module")
def runs(catalog: Catalog, models: ModelRegistry) -> tuple[PublishedRun, ...]:
    return load_published_runs(catalog=catalog, models=models)


@pytest.fixture(scope="module")
def small(runs: tuple[PublishedRun, ...], catalog: Catalog) -> list[FitRow]:
    rows, refused = fit_rows([run for run in runs if run.id in SMALL], catalog)
    assert not refused
    return rows


@pytest.fixture(scope="module")
def predictor() -> Predictor:
    return Predictor()  # shared: predictions are cached by row and values


def _scaled(rows: list[FitRow], row_id: str, factor: float) -> list[FitRow]:
    """``rows`` with one row's published value multiplied by ``factor``."""
    changed = []
    for row in rows:
        if row.id == row_id:
            assert row.run.training is not None
            spec = dataclasses.replace(row.run.training, measured=row.measured * factor)
            row = dataclasses.replace(row, run=dataclasses.replace(row.run, training=spec))
        changed.append(row)
    return changed


def test_the_folds_are_the_publishers_not_the_citations(runs: tuple[PublishedRun, ...]) -> None:
    # Narayanan et al., Korthikanti et al., the Megatron-LM README, TensorRT-LLM and Megatron-Bridge are
    # all NVIDIA's: one fold, where the first two words of the citation made five.
    assert fold_publishers(run.publisher for run in runs) == [
        "DeepSeek",
        "LMSYS",
        "Meta",
        "MosaicML",
        "NVIDIA",
        "Trainy",
    ]


def test_a_held_out_row_never_informs_its_own_prediction(small: list[FitRow], predictor: Predictor) -> None:
    one = next(variant for variant in training_variants() if variant.name == "one")
    before = leave_one_publisher_out(small, one, "train", predictor)
    # MosaicML's rows published twice as fast: their own out-of-fold predictions do not move ...
    faster = _scaled(_scaled(small, "T61", 2.0), "T64", 2.0)
    after = leave_one_publisher_out(faster, one, "train", predictor)
    assert (after["T61"], after["T64"]) == (before["T61"], before["T64"])
    # ... while the rows of other publishers, whose fits now include them, do.
    assert after["T106"] != before["T106"]
    # The same change moves a fit that sees those rows (so the test above could fail).
    assert fit_training(faster, one, predictor).kernel != fit_training(small, one, predictor).kernel


def test_the_whole_procedure_runs_without_the_held_out_publisher(
    small: list[FitRow], predictor: Predictor
) -> None:
    nested = nested_cross_validation(small, predictor)
    assert [fold.publisher for fold in nested.folds] == ["Meta", "MosaicML", "Trainy"]
    # Meta's rows reported 3x slower: the variant chosen, the fit and the bands of Meta's fold are made
    # without them, so Meta's out-of-fold predictions and intervals stay what they were.
    slower = nested_cross_validation(_scaled(_scaled(small, "T106", 1 / 3), "T107", 1 / 3), predictor)
    for row_id in ("T106", "T107"):
        assert slower.rows[row_id].predicted == nested.rows[row_id].predicted
        assert slower.rows[row_id].interval == nested.rows[row_id].interval
    assert slower.folds[0] == nested.folds[0]
    # Other publishers' intervals are built from residuals that include Meta's rows: they widen.
    mosaic = nested.rows["T61"].interval
    mosaic_slower = slower.rows["T61"].interval
    assert mosaic is not None
    assert mosaic_slower is not None
    assert mosaic_slower[1] - mosaic_slower[0] > mosaic[1] - mosaic[0]


def test_conformal_bounds_by_hand() -> None:
    residuals = [0.01 * step for step in range(-4, 5)]  # nine: -0.04 .. 0.04
    # k = ceil(0.8 x (9 + 1)) = 8: the eighth smallest magnitude of 0, .01, .01, .02, .02, .03, .03, .04, .04
    assert conformal_bounds(residuals) == (-0.04, 0.04)
    twenty = [0.01 * step for step in range(1, 21)]  # k = ceil(0.8 x 21) = 17 -> 0.17
    assert conformal_bounds(twenty) == pytest.approx((-0.17, 0.17))
    bands = bands_from_residuals([("train/dense/hopper", value) for value in twenty])
    assert bands["train"].high == pytest.approx(0.17)
    assert bands["train"].low == -bands["train"].high


def test_the_loss_is_the_interquartile_mean_plus_a_quarter_of_the_mean_by_hand() -> None:
    errors = [0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 1.0]
    # middle half: the 3rd to 6th of 8 (0.03 .. 0.06), mean 0.045; the mean of all is 1.28 / 8 = 0.16
    assert central_mean(errors) == pytest.approx(0.045)
    assert loss(errors) == pytest.approx(0.045 + 0.25 * 0.16)
    assert central_mean([0.1, 0.3, 0.8]) == pytest.approx(0.4)  # under four values: all of them
    assert loss([]) == 0.0


def test_the_loss_moves_smoothly_where_a_median_jumps() -> None:
    # Two clusters of errors: moving one value across the middle moves a median by the gap
    # between the clusters (0.02 -> 0.08) but the interquartile mean by a quarter of it.
    low = [0.01, 0.02, 0.02, 0.08, 0.08, 0.09]
    high = [0.01, 0.02, 0.08, 0.08, 0.08, 0.09]
    assert central_mean(high) - central_mean(low) == pytest.approx((0.08 - 0.02) / 4)
    assert sorted(high)[2] - sorted(low)[2] == pytest.approx(0.06)


def test_standard_error_of_the_median_by_hand() -> None:
    # stdev of (0, 0.2) = 0.1414; x 1.2533 / sqrt(2) = 0.1253
    assert standard_error_of_median([0.0, 0.2]) == pytest.approx(0.12533, rel=1e-3)
    assert standard_error_of_median([0.3]) == 0.0


def test_variants_count_the_values_they_fit() -> None:
    counts = {variant.name: num_values(variant) for variant in training_variants()}
    assert counts["one"] == 1
    assert counts["era"] == 2  # before 2023, from 2023
    assert counts["lineage"] > counts["era"]
    serving = {variant.name: num_values(variant) for variant in inference_variants()}
    assert serving["training"] < serving["one"] < serving["lineage"]  # no kernel value of its own
