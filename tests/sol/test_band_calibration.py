"""Error bands calibrated on residuals no fitted value has seen, each source weighing the same."""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import ModuleType

import pytest

from lightspeed.sol.core.uncertainty import (
    Band,
    Residual,
    band_for,
    bands_from_residuals,
    bands_from_sources,
    load_bands,
    weighted_conformal_bound,
)
from lightspeed.sol.validation.band_calibration import coverage_by_source, fit_residuals, table_residuals
from lightspeed.sol.validation.validate import ValidationRow
from scripts import load_script

REPORT = Path(__file__).resolve().parents[2] / "docs" / "band-calibration.json"


def test_unit_weights_give_the_k_th_smallest_magnitude() -> None:
    # 10 residuals, 80%: k = ceil(0.8 x 11) = 9, the 9th smallest magnitude (hand count)
    values = [0.01, -0.02, 0.03, -0.04, 0.05, -0.06, 0.07, -0.08, 0.09, -0.5]
    assert weighted_conformal_bound(values, [1.0] * 10, 0.8) == 0.09
    # 20 residuals: k = ceil(0.8 x 21) = 17
    twenty = [index / 100 for index in range(1, 21)]
    assert weighted_conformal_bound(twenty, [1.0] * 20, 0.8) == 0.17


def test_a_big_source_weighs_as_much_as_a_small_one() -> None:
    # 100 rows of one vendor table within 5%, and one row each from five other sources at
    # 10%, 20%, 30%, 40%, 50%. Six sources of weight 1 need 0.8 x 7 = 5.6 of weight: the vendor's
    # rows reach 1 at 0.05, the others 2, 3, 4, 5 at 0.1..0.4 and 6 >= 5.6 at 0.5.
    rows = [Residual("infer/dense/hopper", 0.05, "vendor") for _ in range(100)]
    rows += [Residual("infer/dense/hopper", value, f"blog{value}") for value in (0.1, 0.2, 0.3, 0.4, 0.5)]
    weighted = bands_from_sources(rows)["infer/dense/hopper"]
    assert (weighted.high, weighted.num_rows, weighted.num_sources) == (0.5, 105, 6)
    # counted row by row the vendor's 100 rows would set it: k = ceil(0.8 x 106) = 85 -> 0.05
    per_row = bands_from_residuals((row.family, row.value) for row in rows)["infer/dense/hopper"]
    assert per_row.high == 0.05


def test_a_family_from_too_few_sources_borrows_its_parents_band() -> None:
    # 30 rows of one table make no band of their own: one source says nothing of the next
    bands = {
        "train": Band("train", 0.8, -0.3, 0.3, 100, 12),
        "train/dense": Band("train/dense", 0.8, -0.2, 0.2, 60, 9),
        "train/dense/blackwell": Band("train/dense/blackwell", 0.8, -0.6, 0.6, 30, 1),
        "train/dense/hopper": Band("train/dense/hopper", 0.8, -0.1, 0.1, 40, 6),
    }
    assert band_for(bands, "train/dense/blackwell").family == "train/dense"
    assert band_for(bands, "train/dense/hopper").high == 0.1
    # bands written before sources were counted keep their own (rows decide, as before)
    legacy = {"train": Band("train", 0.8, -0.3, 0.3, 10)}
    assert band_for(legacy, "train/moe/hopper").high == 0.3


def test_each_source_is_covered_by_the_bands_of_the_others() -> None:
    # Five sources of two rows; leaving t4 (0.3 and 0.6) out, the other eight magnitudes
    # (0.02..0.35) with weight 1/2 each need 0.8 x 5 = 4 of weight: all eight, q = 0.35.
    values = [0.05, -0.1, 0.2, -0.3, 0.3, 0.02, -0.15, 0.25, -0.35, 0.6]
    rows = [Residual("infer/moe/hopper", value, f"t{index % 5}") for index, value in enumerate(values)]
    coverage = coverage_by_source(rows)
    assert (coverage["t4"].num_rows, coverage["t4"].num_covered) == (2, 1)
    assert coverage["t4"].share == 0.5
    # t0 (0.05, 0.02) left out: the others' 0.1..0.6 need all eight too: q = 0.6, both inside
    assert coverage["t0"].num_covered == 2


def _row(
    metric: str, measured: float, predicted: float | None, family: str = "infer/dense/hopper"
) -> ValidationRow:
    return ValidationRow(
        id="r",
        kind="infer",
        metric=metric,
        measured=measured,
        predicted=predicted,
        rel_error=None,
        status="ok" if predicted is not None else "refused",
        reason="",
        plan=None,
        assumptions=(),
        source="",
        family=family,
    )


def test_a_tables_residuals_are_speeds_and_leave_out_what_has_none() -> None:
    rows = [
        _row("output_tokens_per_s", 1000.0, 1250.0),  # predicted 25% fast: log(1000/1250)
        _row("ttft_s", 0.2, 0.1),  # took twice the time predicted: speed residual log(0.1/0.2)
        _row("output_tokens_per_s", 1000.0, None),  # refused
        _row("memory_per_gpu_bytes", 7e10, 6e10),  # bytes, not a speed
    ]
    found = table_residuals(rows, "probe.tsv")
    assert [residual.value for residual in found] == pytest.approx([math.log(0.8), math.log(0.5)])
    assert {residual.source for residual in found} == {"probe.tsv"}


def test_the_fit_reports_rows_are_sourced_by_publisher() -> None:
    report = {
        "rows": [
            {"metric": "step_time_s", "family": "train/dense/hopper", "publisher": "Meta", "measured": 2.0,
             "out_of_fold": 1.0},
            {"metric": "mfu", "family": "train/dense/hopper", "publisher": "NVIDIA", "measured": 0.4,
             "out_of_fold": None},
        ]
    }  # fmt: skip
    (residual,) = fit_residuals(report)
    assert (residual.source, residual.value) == ("fit:Meta", pytest.approx(-math.log(2.0)))
    with pytest.raises(ValueError, match="list of rows"):
        fit_residuals({"rows": None})


def test_the_shipped_bands_are_the_calibration_reports() -> None:
    report = json.loads(REPORT.read_text(encoding="utf-8"))
    shipped = load_bands()
    assert set(shipped) == set(report["bands"])
    for name, band in report["bands"].items():
        assert (shipped[name].low, shipped[name].high) == pytest.approx((band["low"], band["high"]), abs=5e-5)
        assert (shipped[name].num_rows, shipped[name].num_sources) == (band["num_rows"], band["num_sources"])
    # the calibration measured what a new source meets: each held-out table against the bands of
    # the others covers 80% of its rows on average (the level), not the 62% the fit-only bands did
    held = [entry for entry in report["coverage"] if not entry["source"].startswith("fit:")]
    mean = sum(entry["covered_out_of_source"] / entry["rows"] for entry in held) / len(held)
    assert mean >= 0.78


# --- the figures the documentation quotes from the report (between <!-- bands:KEY --> markers) --

REPO = REPORT.parents[1]
# What README's "Accuracy and speed", docs/sol.md "Error bars" and docs/benchmarks.md "Error bands
# a new source meets" must quote from the report.
README_BAND_FIGURES = {"num_tables", "mean_coverage"}
SOL_BAND_FIGURES = README_BAND_FIGURES | {
    "mean_coverage_before",
    "band_infer_moe_hopper",
    "band_infer_moe_blackwell",
    "band_infer_dense_hopper",
    "band_train_dense_hopper",
}
BENCHMARK_BAND_FIGURES = {"num_tables", "mean_coverage", "table_coverage", "table_bands"}


@pytest.fixture(scope="module")
def fit_script() -> ModuleType:
    """benchmarks/fit_efficiency.py: the markers' pattern and writer, which both scripts use."""
    return load_script("benchmarks/fit_efficiency.py")


@pytest.fixture(scope="module")
def calibrate(fit_script: ModuleType) -> ModuleType:
    return load_script("benchmarks/calibrate_bands.py")  # after its sibling, which it imports by name


@pytest.mark.parametrize(
    ("document", "required"),
    [
        ("README.md", README_BAND_FIGURES),
        ("docs/sol.md", SOL_BAND_FIGURES),
        ("docs/benchmarks.md", BENCHMARK_BAND_FIGURES),
    ],
)
def test_documented_band_figures_equal_the_report(
    fit_script: ModuleType, calibrate: ModuleType, document: str, required: set[str]
) -> None:
    text = (REPO / document).read_text(encoding="utf-8")
    markers = list(fit_script.marker("bands").finditer(text))
    assert len(markers) == text.count("<!-- bands:"), f"{document}: a bands: marker the pattern misses"
    assert {match["key"] for match in markers} >= required
    made = calibrate.figures(json.loads(REPORT.read_text(encoding="utf-8")))
    for match in markers:
        assert match["text"].strip() == made[match["key"]].strip(), (document, match["key"])


def test_the_documented_coverage_is_the_mean_over_the_held_out_tables() -> None:
    # counted here from the report, apart from the script: each held-out table's share of rows
    # covered out of source, averaged with each table weighing the same
    report = json.loads(REPORT.read_text(encoding="utf-8"))
    held = [entry for entry in report["coverage"] if not entry["source"].startswith("fit:")]
    shares = [entry["covered_out_of_source"] / entry["rows"] for entry in held]
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert f"<!-- bands:num_tables -->{len(held)}<!-- /bands --> held-out tables" in readme
    percent = round(100 * sum(shares) / len(shares))
    assert f"<!-- bands:mean_coverage -->{percent}%<!-- /bands --> of its rows on average" in readme


def test_band_figures_from_a_small_report(calibrate: ModuleType) -> None:
    # two held-out tables: 3 of 4 rows covered (75%) and 1 of 3 (33.3%): mean 54.2%, 4 of 7 rows;
    # before: 1 of 4 and 2 of 3, mean (25% + 66.7%) / 2 = 45.8%
    report = {
        "num_sources": 7,
        "coverage": [
            {"source": "fit:Meta", "kind": "train", "rows": 9, "covered_before": 9,
             "covered_out_of_source": 9},
            {"source": "a.tsv", "kind": "infer", "rows": 4, "covered_before": 1, "covered_out_of_source": 3},
            {"source": "b.tsv", "kind": "train", "rows": 3, "covered_before": 2, "covered_out_of_source": 1},
        ],
        "bands": {
            # 20 rows from 5 sources: a band of its own, exp(log 1.25) = x1.25
            "train": {"level": 0.8, "low": -math.log(1.25), "high": math.log(1.25), "num_rows": 20,
                      "num_sources": 5},
            # 3 sources: below MIN_SOURCES, it borrows train's and is quoted nowhere
            "train/dense/hopper": {"level": 0.8, "low": -1.0, "high": 1.0, "num_rows": 12, "num_sources": 3},
        },
    }  # fmt: skip
    numbers = calibrate.figures(report)
    assert (numbers["num_tables"], numbers["held_rows"], numbers["held_covered"]) == ("2", "7", "4")
    assert (numbers["mean_coverage"], numbers["mean_coverage_before"]) == ("54%", "46%")
    assert numbers["worst_tables"] == "`b` (33%), `a` (75%)"
    assert numbers["band_train"] == "x1.25"
    assert "band_train_dense_hopper" not in numbers
    assert "| train | 20 | 5 | x1.25 |" in numbers["table_bands"]
    assert "hopper" not in numbers["table_bands"]
    assert "| a.tsv | infer | 4 | 25% | 75% |" in numbers["table_coverage"]


def test_a_marker_holds_the_figure_it_names(fit_script: ModuleType) -> None:
    text = "covers <!-- bands:mean_coverage -->84%<!-- /bands --> of <!-- fit:num_rows -->5<!-- /fit -->"
    replaced = fit_script.replace_figures(text, {"mean_coverage": "82%"}, "bands")
    assert (
        replaced
        == "covers <!-- bands:mean_coverage -->82%<!-- /bands --> of <!-- fit:num_rows -->5<!-- /fit -->"
    )
    with pytest.raises(SystemExit) as exit_info:
        fit_script.replace_figures(text, {}, "bands")
    assert exit_info.value.code == 2
