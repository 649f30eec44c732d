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
(``tests/sol/test_band_calibration.py`` checks they match the report).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from lightspeed.catalog import load_catalog
from lightspeed.errors import LightspeedError
from lightspeed.records import to_jsonable
from lightspeed.sol.core.uncertainty import (
    LEVEL,
    Residual,
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
from lightspeed.sol.validation.infer_rows import inference_predictor
from lightspeed.sol.validation.validate import validate_published
from lightspeed.workload import load_models

ROOT = Path(__file__).resolve().parents[1]
TABLES = sorted([*ROOT.glob("tests/data/validation/*.tsv"), *ROOT.glob("benchmarks/data/*.tsv")])
COMMAND = "python benchmarks/calibrate_bands.py --report docs/band-calibration.json --write"


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fit-report", type=Path, default=ROOT / "docs" / "fit-report.json")
    parser.add_argument("--report", type=Path, help="write the calibration here (JSON)")
    parser.add_argument("--write", action="store_true", help="write sol/data/uncertainty.toml")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    args = parser.parse_args()
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
    if args.write:
        write_uncertainty(bands, source=description)
    if args.report:
        report = {
            "level": LEVEL,
            "command": COMMAND,
            "num_residuals": len(residuals),
            "num_sources": len(sources),
            "bands": {name: to_jsonable(band) for name, band in bands.items()},
            "coverage": entries,
        }
        args.report.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print(markdown(entries))
    print(f"{time.perf_counter() - started:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
