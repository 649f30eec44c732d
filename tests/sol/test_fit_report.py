"""The fit report (docs/fit-report.json, written by `python benchmarks/fit_efficiency.py --report
docs/fit-report.json --write`) describes the shipped data files, and every figure the documentation
quotes from it equals the report (issue 28, point 7)."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from lightspeed.catalog import Catalog
from lightspeed.sol.core.serving_stacks import load_serving_stacks
from lightspeed.sol.core.stacks import default_stack_name, load_stacks
from lightspeed.sol.validation.fitting import (
    adp_group,
    inference_variants,
    overhead_group,
    training_variants,
)
from lightspeed.sol.validation.predict_runs import validate_builtin
from lightspeed.workload import ModelRegistry
from scripts import load_script

REPO = Path(__file__).resolve().parents[2]
# What README's "Accuracy and speed" and docs/benchmarks.md must quote from the report.
README_FIGURES = {"train_oof_median", "infer_oof_median", "all_oof_coverage", "train_fitted_median"}
BENCHMARK_FIGURES = README_FIGURES | {
    "infer_fitted_median",
    "train_oof_coverage",
    "infer_oof_coverage",
    "train_oof_outside",
    "infer_oof_outside",
    "num_parameters",
    "table_rows",
    "table_publishers",
    "table_parameters",
}


@pytest.fixture(scope="module")
def report() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((REPO / "docs" / "fit-report.json").read_text(encoding="utf-8"))
    return data


@pytest.fixture(scope="module")
def fit_script() -> ModuleType:
    return load_script("benchmarks/fit_efficiency.py")


def test_the_reports_figures_are_its_own(report: dict[str, Any], fit_script: ModuleType) -> None:
    # the figures saved in the report are the ones the script makes of the report's rows (a
    # figure added since the last fit is made from the saved rows by --markers-only)
    made = fit_script.figures(report)
    assert {key: made[key] for key in report["figures"]} == report["figures"]


@pytest.mark.parametrize(
    ("document", "required"),
    [("README.md", README_FIGURES), ("docs/benchmarks.md", BENCHMARK_FIGURES), ("docs/sol.md", set())],
)
def test_documented_figures_equal_the_report(
    report: dict[str, Any], fit_script: ModuleType, document: str, required: set[str]
) -> None:
    text = (REPO / document).read_text(encoding="utf-8")
    markers = list(fit_script.marker("fit").finditer(text))
    assert len(markers) == text.count("<!-- fit:"), f"{document}: a fit: marker the pattern misses"
    assert {match["key"] for match in markers} >= required
    made = fit_script.figures(report)
    for match in markers:
        assert match["text"].strip() == made[match["key"]].strip(), (document, match["key"])


def test_the_report_meets_the_targets_it_can(report: dict[str, Any]) -> None:
    summary = report["summary"]
    train = summary["kind"]["train"]["out_of_fold"]
    assert train["median_abs_error"] <= 0.08  # out of fold, leave-one-publisher-out, nested
    assert summary["all"]["share_predicted"] >= 0.90
    assert 0.75 <= summary["all"]["out_of_fold_coverage"] <= 0.85
    # Every fold held out one publisher, and every row was held out exactly once.
    assert sorted(fold["publisher"] for fold in report["folds"]) == sorted(summary["publisher"])
    assert len({row["id"] for row in report["rows"]}) == report["num_rows"]


def test_the_report_describes_the_shipped_values(
    report: dict[str, Any], catalog: Catalog, models: ModelRegistry
) -> None:
    shipped = {row.id: row.predicted for row in validate_builtin(catalog=catalog, models=models).rows}
    for row in report["rows"]:
        assert shipped[row["id"]] == pytest.approx(row["fitted"], rel=1e-9), row["id"]


def test_the_data_files_hold_the_reported_values(report: dict[str, Any]) -> None:
    values, choice = report["values"], report["choice"]
    train = next(variant for variant in training_variants() if variant.name == choice["train"]["variant"])
    for stack in load_stacks().values():
        default = stack.name == default_stack_name()
        expected = values["default"] if default else values["kernel"][train.group(stack.name)]
        assert stack.kernel_efficiency == pytest.approx(expected, abs=5e-5), stack.name
        assert stack.overlap_contention == pytest.approx(values["contention"])
    serving = next(variant for variant in inference_variants() if variant.name == choice["infer"]["variant"])
    for stack in load_serving_stacks().values():
        if serving.kernel_from_training:
            assert stack.kernel_efficiency == pytest.approx(values["default"], abs=5e-5), stack.name
        pace = values["attention_dp"].get(adp_group(serving, stack.name))
        if pace is not None:
            assert stack.attention_dp_efficiency == pytest.approx(pace, abs=5e-5), stack.name
        overhead = values["overhead_s"].get(overhead_group(stack.name), 0.0)
        assert stack.iteration_overhead_s == pytest.approx(overhead), stack.name
    # the shipped error bands: tests/sol/test_band_calibration.py (benchmarks/calibrate_bands.py)


def test_the_attention_dp_pace_has_one_basin_once_the_experts_pay_their_row_tiles(
    report: dict[str, Any],
) -> None:
    """Before the experts' grouped GEMMs paid their partial row tiles (docs/inference.md), the
    pace's loss over its six rows had a second basin, TensorRT-LLM's rows wanting a slower pace
    than SGLang's and DeepSeek's (0.6375 at a loss of 0.1061 against 0.1045 at the fitted 0.575),
    and the report named it. With the padding the rows agree on one basin, which the report says
    (no rival); the search for a rival is checked on landscapes with and without one by
    ``fitting.rival_minimum``'s own examples."""
    parameters = {item["name"]: item for item in report["parameters"]}
    pace = parameters["attention_dp all"]
    assert pace["rival"] is None
    assert pace["fitted_on"] == ["I101", "I102", "I104", "I105", "I106", "I107"]
    assert 0.5 < pace["value"] < 0.65
