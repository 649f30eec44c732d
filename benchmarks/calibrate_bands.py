"""Calibrate the 80% error bands on rows no fitted value has seen, and measure their coverage.

    python benchmarks/calibrate_bands.py --report docs/band-calibration.json --write

Run it after ``benchmarks/fit_efficiency.py --report docs/fit-report.json --write``
(whose out-of-fold residuals it reads). It predicts every row of the held-out tables
in the repository (``tests/data/validation/*.tsv``, ``benchmarks/data/*.tsv``; two
worker processes), then prints, per source, the share of its rows inside

* the bands of the fitted rows' out-of-fold residuals alone, row by row (how the bands were
  made before the held-out tables were added to them), and
* the bands calibrated on every *other* source (leave-one-source-out): what a
  new table or publisher meets (``lightspeed.sol.validation.band_calibration``).

With ``--write`` it writes the bands of all sources into ``sol/data/uncertainty.toml``
(``tests/sol/test_band_calibration.py`` checks they match the report) and replaces the figures
marked ``<!-- bands:KEY -->...<!-- /bands -->`` in README.md, docs/benchmarks.md and docs/sol.md
with the report's (the same test checks they match). ``--markers-only`` rewrites those figures
from an existing report (``--report``, by default docs/band-calibration.json) without predicting
anything:

    python benchmarks/calibrate_bands.py --markers-only
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from fit_efficiency import fail, write_figures  # a sibling script, not a package

from lightspeed.catalog import load_catalog
from lightspeed.errors import LightspeedError
from lightspeed.records import to_jsonable
from lightspeed.sol.core.uncertainty import (
    LEVEL,
    Band,
    Residual,
    band_for,
    bands_from_residuals,
    bands_from_sources,
    write_uncertainty,
)
from lightspeed.sol.validation.band_calibration import (
    coverage_by_source,
    covered,
    fit_residuals,
    table_residuals,
)
from lightspeed.sol.validation.infer_predict import inference_predictor
from lightspeed.sol.validation.validate import validate_published
from lightspeed.workload import load_models

ROOT = Path(__file__).resolve().parents[1]
TABLES = sorted([*ROOT.glob("tests/data/validation/*.tsv"), *ROOT.glob("benchmarks/data/*.tsv")])
COMMAND = "python benchmarks/calibrate_bands.py --report docs/band-calibration.json --write"
REPORT = ROOT / "docs" / "band-calibration.json"
NUM_WORST_TABLES = 3  # the held-out tables the documentation names as covered worst


def residuals_of(path: Path) -> tuple[list[Residual], str]:
    """The residuals of one table's predicted rows (run in a worker process), or why the table
    predicts none (the kernel tables, which ``validate`` refuses as a whole)."""
    try:
        infer = inference_predictor(load_bands=False)  # the predictions alone
        report = validate_published(path=path, catalog=load_catalog(), models=load_models(), infer=infer)
    except LightspeedError as error:
        return [], str(error)
    return table_residuals(report.rows, path.name), ""


def _kind(source_residuals: Sequence[Residual]) -> str:
    kinds = {residual.family.split("/")[0] for residual in source_residuals}
    return "/".join(sorted(kinds))


def coverage_table(residuals: Sequence[Residual]) -> list[dict[str, Any]]:
    """Per source: rows, covered by the fitted rows' bands (the rule before: their out-of-fold
    residuals alone, row by row), covered by the bands of every other source."""
    fitted = [residual for residual in residuals if residual.source.startswith("fit:")]
    before = bands_from_residuals((residual.family, residual.value) for residual in fitted)
    out_of_source = coverage_by_source(residuals)
    entries = []
    for source, coverage in out_of_source.items():
        own = [residual for residual in residuals if residual.source == source]
        entries.append(
            {
                "source": source,
                "kind": _kind(own),
                "rows": coverage.num_rows,
                "covered_before": sum(covered(residual, before) for residual in own),
                "covered_out_of_source": coverage.num_covered,
            }
        )
    return entries


def _share(entries: Sequence[dict[str, Any]], key: str) -> str:
    rows = sum(entry["rows"] for entry in entries)
    return f"{sum(entry[key] for entry in entries) / rows:.0%} of {rows}" if rows else "-"


def markdown(entries: Sequence[dict[str, Any]]) -> str:
    """The coverage table docs/benchmarks.md quotes (one line per held-out table, then totals)."""
    lines = [
        "| source | kind | rows | covered by the fitted rows' bands | covered out of source |",
        "|---|---|---:|---:|---:|",
    ]
    for entry in entries:
        if entry["source"].startswith("fit:"):
            continue
        before, after = (entry[key] / entry["rows"] for key in ("covered_before", "covered_out_of_source"))
        name, kind, rows = entry["source"], entry["kind"], entry["rows"]
        lines.append(f"| {name} | {kind} | {rows} | {before:.0%} | {after:.0%} |")
    groups = {
        "held-out tables": [entry for entry in entries if not entry["source"].startswith("fit:")],
        "fitted rows, out of fold": [entry for entry in entries if entry["source"].startswith("fit:")],
    }
    for name, members in groups.items():
        before, after = (_share(members, key) for key in ("covered_before", "covered_out_of_source"))
        lines.append(f"| **{name}** | | | {before} | {after} |")
    return "\n".join(lines)


# --- figures quoted in the documentation ------------------------------------------------------


def _held_out(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [entry for entry in report["coverage"] if not entry["source"].startswith("fit:")]


def _mean_share(entries: Sequence[dict[str, Any]], key: str) -> float:
    """The share of a table's rows covered, averaged over the tables (each weighing the same)."""
    return float(sum(entry[key] / entry["rows"] for entry in entries) / len(entries))


def band_key(family: str) -> str:
    """``band_infer_moe_hopper``: the figure of a family's band (``infer/moe/hopper``)."""
    return "band_" + re.sub(r"\W+", "_", family)


def _factor(band: dict[str, Any]) -> str:
    """``x1.25``: the band as a speed factor either way (symmetric bands: ``exp(high)``)."""
    return f"x{math.exp(band['high']):.2f}"


def _covered_share(entry: dict[str, Any]) -> float:
    return float(entry["covered_out_of_source"] / entry["rows"])


def _worst(entries: Sequence[dict[str, Any]]) -> str:
    """``probe-serving-4 (40%), ...``: the tables least covered out of source (ties by name)."""
    ranked = sorted(entries, key=lambda entry: (_covered_share(entry), entry["source"]))
    return ", ".join(
        f"`{entry['source'].removesuffix('.tsv')}` ({_covered_share(entry):.0%})"
        for entry in ranked[:NUM_WORST_TABLES]
    )


def own_bands(report: dict[str, Any]) -> list[str]:
    """The families with a band of their own (enough rows and sources, ``band_for``; the others
    borrow their parent's), training first."""
    bands = {
        name: Band(name, band["level"], band["low"], band["high"], band["num_rows"], band["num_sources"])
        for name, band in report["bands"].items()
    }
    own = [name for name in bands if band_for(bands, name).family == name]
    return sorted(own, key=lambda name: (not name.startswith("train"), name))


def table_bands(report: dict[str, Any]) -> str:
    """Each family with a band of its own: its rows, sources and band as a speed factor."""
    lines = ["| family | rows | sources | band |", "|---|---:|---:|---:|"]
    for name in own_bands(report):
        band = report["bands"][name]
        lines.append(f"| {name} | {band['num_rows']} | {band['num_sources']} | {_factor(band)} |")
    return "\n".join(lines)


def figures(report: dict[str, Any]) -> dict[str, str]:
    """Every figure the documentation quotes from the calibration report, as it is written there."""
    held = _held_out(report)
    numbers = {
        "num_tables": str(len(held)),
        "num_sources": str(report["num_sources"]),
        "held_rows": f"{sum(entry['rows'] for entry in held):,}",
        "held_covered": f"{sum(entry['covered_out_of_source'] for entry in held):,}",
        "mean_coverage": f"{_mean_share(held, 'covered_out_of_source'):.0%}",
        "mean_coverage_before": f"{_mean_share(held, 'covered_before'):.0%}",
        "worst_tables": _worst(held),
        "table_coverage": markdown(report["coverage"]),
        "table_bands": table_bands(report),
    }
    return numbers | {band_key(name): _factor(report["bands"][name]) for name in own_bands(report)}


def figures_of_file(path: Path) -> dict[str, str]:
    """The documented figures of the calibration saved at ``path`` (nothing is predicted)."""
    try:
        return figures(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError, ZeroDivisionError) as error:
        fail(f"cannot read the band calibration {path}: {error!r}; write it with {COMMAND}")


# --- main ---------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fit-report", type=Path, default=ROOT / "docs" / "fit-report.json")
    parser.add_argument(
        "--report",
        type=Path,
        help="write the calibration here (JSON); with --markers-only, read it from here",
    )
    parser.add_argument(
        "--write", action="store_true", help="write sol/data/uncertainty.toml and the documented figures"
    )
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument(
        "--markers-only",
        action="store_true",
        help="predict nothing: rewrite the documented bands: figures from the existing report "
        "(--report, default docs/band-calibration.json)",
    )
    args = parser.parse_args()
    if args.markers_only:
        write_figures(figures_of_file(args.report or REPORT), "bands")
        return
    started = time.perf_counter()
    try:
        residuals = fit_residuals(json.loads(args.fit_report.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError) as error:
        print(
            f"error: cannot read the fit report {args.fit_report}: {error}; write it with "
            "python benchmarks/fit_efficiency.py --report docs/fit-report.json",
            file=sys.stderr,
        )
        sys.exit(2)
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for path, (found, refused) in zip(TABLES, pool.map(residuals_of, TABLES), strict=True):
            print(f"{path.name}: {len(found)} rows predicted {refused[:80]}", file=sys.stderr)
            residuals.extend(found)
    entries = coverage_table(residuals)
    bands = bands_from_sources(residuals)
    sources = {residual.source for residual in residuals}
    description = (
        f"benchmarks/calibrate_bands.py: symmetric split-conformal bounds, each source weighing the same, "
        f"of {len(residuals)} residuals from {len(sources)} sources (the fitted rows out of fold by "
        f"publisher, the held-out tables)"
    )
    report = {
        "level": LEVEL,
        "command": COMMAND,
        "num_residuals": len(residuals),
        "num_sources": len(sources),
        "bands": {name: to_jsonable(band) for name, band in bands.items()},
        "coverage": entries,
    }
    if args.write:
        write_uncertainty(bands, source=description)
        write_figures(figures(report), "bands")
    if args.report:
        args.report.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print(markdown(entries))
    print(f"{time.perf_counter() - started:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
