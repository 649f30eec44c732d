"""Error bands calibrated on rows nothing was fitted on, and how often they cover a new source.

The fitted rows' leave-one-publisher-out residuals (``benchmarks/fit_efficiency.py``)
alone gave bands that covered 90% of the shared files' rows and 56% of the rows
of the held-out tables in the repository (gathered as new serving and training
runs would be, and never fitted on): the fitted rows are the ones the engine's
rules were written against. The shipped bands (:mod:`lightspeed.sol.core.uncertainty`)
therefore come from both: every fitted row out of fold, with its publisher as
its source, and every predicted row of each held-out table, with the table as
its source, each source weighing the same
(:func:`~lightspeed.sol.core.uncertainty.bands_from_sources`).

:func:`coverage_by_source` measures them as a new source meets them: each
source's rows against the bands calibrated on every *other* source
(leave-one-source-out), on the residual of the row's own family band.

>>> from lightspeed.sol.core.uncertainty import Residual
>>> rows = [Residual("infer/dense/hopper", value, f"t{index % 5}") for index, value in
...         enumerate([0.05, -0.1, 0.2, -0.3, 0.3, 0.02, -0.15, 0.25, -0.35, 0.6])]
>>> coverage = coverage_by_source(rows)
>>> coverage["t4"].num_covered, coverage["t4"].num_rows
(1, 2)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from lightspeed.records import Record
from lightspeed.sol.core.uncertainty import (
    LEVEL,
    Band,
    Residual,
    band_for,
    band_residual,
    bands_from_sources,
)
from lightspeed.sol.validation.validate import ValidationRow


def table_residuals(rows: Iterable[ValidationRow], source: str) -> list[Residual]:
    """The residuals of the predicted rows of one held-out table, ``source`` naming it."""
    found = []
    for row in rows:
        value = band_residual(row.metric, row.measured, row.predicted)
        if value is not None and row.family:
            found.append(Residual(row.family, value, source))
    return found


def fit_residuals(report: Mapping[str, object]) -> list[Residual]:
    """The out-of-fold residuals of the fitted rows in a fit report (``docs/fit-report.json``,
    written by ``benchmarks/fit_efficiency.py``), each row's publisher its source."""
    rows = report.get("rows")
    if not isinstance(rows, list):
        raise ValueError("a fit report has a list of rows (benchmarks/fit_efficiency.py --report)")
    found = []
    for row in rows:
        value = band_residual(str(row["metric"]), row.get("measured"), row.get("out_of_fold"))
        if value is not None:
            found.append(Residual(str(row["family"]), value, f"fit:{row['publisher']}"))
    return found


@dataclass(frozen=True)
class SourceCoverage(Record):
    """How many of a source's ``num_rows`` rows fell inside the bands calibrated without it."""

    source: str
    num_rows: int
    num_covered: int

    @property
    def share(self) -> float:
        """The covered share of the source's rows."""
        return self.num_covered / self.num_rows


def covered(residual: Residual, bands: Mapping[str, Band]) -> bool:
    """Whether ``residual`` lies inside its family's band (:func:`band_for`) of ``bands``."""
    band = band_for(bands, residual.family)
    return band.low <= residual.value <= band.high


def coverage_by_source(residuals: Sequence[Residual], level: float = LEVEL) -> dict[str, SourceCoverage]:
    """Each source's rows against the bands of every other source (leave-one-source-out)."""
    sources = sorted({residual.source for residual in residuals})
    coverage = {}
    for source in sources:
        held = [residual for residual in residuals if residual.source == source]
        bands = bands_from_sources((residual for residual in residuals if residual.source != source), level)
        hits = sum(covered(residual, bands) for residual in held)
        coverage[source] = SourceCoverage(source, len(held), hits)
    return coverage


__all__ = ["SourceCoverage", "coverage_by_source", "covered", "fit_residuals", "table_residuals"]
