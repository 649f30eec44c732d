"""Error bars: how far published runs of the same family land from the engine's predictions.

``benchmarks/calibrate_bands.py --write`` stores, per family, the symmetric
split-conformal 80% bound on the speed residual ``log(measured speed /
predicted speed)`` in ``sol/data/uncertainty.toml``, from two kinds of residuals
no fitted value has seen: the fitted rows predicted without their publisher
(leave-one-publisher-out, ``benchmarks/fit_efficiency.py``) and the rows of the
held-out tables in the repository, which nothing is fitted on. Each *source*
(a publisher of the fitted rows, a held-out table) weighs the same, however many
rows it has (:func:`weighted_conformal_bound`). A family is
``kind/dense|moe/architecture`` (``train/dense/hopper``); a family with fewer
than :data:`MIN_ROWS` rows, or with rows from fewer than :data:`MIN_SOURCES`
sources, borrows from its parent (``train/dense``, then ``train``). Every
estimate carries the resulting 80% interval on its speeds and times, and
``lightspeed validate`` measures how often the published value really falls
inside it.

>>> band = interval_for("train", moe=False, architecture="Hopper")
>>> band.level, band.low < 0 < band.high
(0.8, True)
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from lightspeed.catalog import Accelerator
from lightspeed.datafile import Fields, load_toml
from lightspeed.errors import DataFileError
from lightspeed.paths import package_data
from lightspeed.records import Record
from lightspeed.workload import TransformerSpec

UNCERTAINTY_SCHEMA_VERSION: Final = 1
MIN_ROWS: Final = 5
# A family's own band needs this many sources: below, level * (S + 1) > S for an 80% level and
# the weighted bound is just the largest residual of the few sources seen (band_for).
MIN_SOURCES: Final = 4
LEVEL: Final = 0.8
# Metrics that are times (a slower run has a bigger value): their residual flips sign.
TIME_METRICS: Final = frozenset(
    {"step_time_s", "gpu_hours", "time_to_train_s", "ttft_s", "tpot_s", "itl_s", "request_latency_s"}
)


@dataclass(frozen=True)
class Band(Record):
    """An interval on speed: measured speed / predicted speed lies in ``exp([low, high])`` for
    ``level`` of the published rows of ``family`` (``num_rows`` of them, from ``num_sources``
    publishers and tables)."""

    family: str
    level: float
    low: float
    high: float
    num_rows: int
    num_sources: int = 0

    def speed(self, value: float) -> tuple[float, float]:
        """The interval of a speed (tokens/s, FLOP/s, MFU) predicted as ``value``."""
        return value * math.exp(self.low), value * math.exp(self.high)

    def time(self, value: float) -> tuple[float, float]:
        """The interval of a time (step, TTFT, TPOT, GPU-hours) predicted as ``value``."""
        return value * math.exp(-self.high), value * math.exp(-self.low)

    def of(self, metric: str, value: float) -> tuple[float, float]:
        """The interval of ``metric`` predicted as ``value`` (times and speeds as they should be)."""
        return self.time(value) if metric in TIME_METRICS else self.speed(value)


def family_name(kind: str, *, moe: bool, architecture: str, hybrid: bool = False) -> str:
    """``train/moe/hopper``: the family whose residuals give an estimate its error bars; a
    hybrid Mamba-Transformer's are ``train/hybrid/...``, apart from the transformers'."""
    middle = "hybrid" if hybrid else ("moe" if moe else "dense")
    return f"{kind}/{middle}/{architecture.lower()}"


def _model_family(kind: str, model: TransformerSpec, architecture: str) -> str:
    return family_name(
        kind, moe=model.moe is not None, architecture=architecture, hybrid=model.recurrent is not None
    )


def family_of(kind: str, model: TransformerSpec, accelerator: Accelerator) -> str:
    """The family of a model on an accelerator (see :func:`family_name`)."""
    return _model_family(kind, model, accelerator.architecture)


def model_interval(kind: str, model: TransformerSpec, architecture: str) -> Band:
    """The band of ``model`` run on an accelerator of ``architecture``: its family's, or its
    nearest parent's with enough rows (:func:`band_for`)."""
    return band_for(load_bands(), _model_family(kind, model, architecture))


def _data_file() -> Path:
    return package_data("sol", "data", "uncertainty.toml")


@functools.lru_cache(maxsize=2)
def load_bands(path: Path | None = None) -> Mapping[str, Band]:
    """Every family's band from the shipped data file (read once)."""
    file = path or _data_file()
    fields = Fields(str(file), load_toml(file))
    version = fields.integer("schema_version", minimum=1)
    if version != UNCERTAINTY_SCHEMA_VERSION:
        raise DataFileError(file, f"unsupported schema_version {version}", field="schema_version")
    level = fields.number("level")
    return {
        name: Band(
            name,
            level,
            table.number("low", positive=False),
            table.number("high", positive=False),
            table.integer("n"),
            table.integer("sources", 0),
        )
        for name, table in fields.tables("family").items()
    }


def interval_for(kind: str, *, moe: bool, architecture: str, hybrid: bool = False) -> Band:
    """The band of the most specific family with enough rows (``kind/moe/arch``, ``kind/moe``, ``kind``)."""
    return band_for(load_bands(), family_name(kind, moe=moe, architecture=architecture, hybrid=hybrid))


def band_for(bands: Mapping[str, Band], family: str) -> Band:
    """The band of ``family`` among ``bands``, or of its nearest parent with :data:`MIN_ROWS`
    rows or more from :data:`MIN_SOURCES` sources or more (``train/dense/hopper``,
    ``train/dense``, ``train``; a band that records no sources counts its rows)."""
    parts = family.split("/")
    for depth in (3, 2, 1):
        candidate = "/".join(parts[:depth])
        band = bands.get(candidate)
        if (
            band is not None
            and band.num_rows >= MIN_ROWS
            and (band.num_sources or MIN_SOURCES) >= MIN_SOURCES
        ):
            return Band(candidate, band.level, band.low, band.high, band.num_rows, band.num_sources)
    return bands.get(parts[0]) or Band(parts[0], LEVEL, -0.3, 0.3, 0)


def conformal_bounds(values: Iterable[float], level: float = LEVEL) -> tuple[float, float]:
    """The symmetric split-conformal interval of ``level`` from out-of-fold residuals: ``+-q``
    with q the k-th smallest of the n magnitudes, k = ceil(level * (n + 1)) (at most n). Under
    exchangeable rows a new row falls inside with probability >= ``level``. Symmetric because a
    new publisher's runs may sit above or below the model, whichever way the publishers the
    residuals come from happened to (asymmetric percentiles covered 71% out of fold, not 80%).

    >>> conformal_bounds([r / 10 for r in range(-5, 6)])
    (-0.5, 0.5)
    >>> conformal_bounds([r / 100 for r in range(100)])
    (-0.8, 0.8)
    """
    values = list(values)
    quantile = weighted_conformal_bound(values, [1.0] * len(values), level)
    return -quantile, quantile


def weighted_conformal_bound(
    values: Sequence[float], weights: Sequence[float], level: float = LEVEL
) -> float:
    """The smallest magnitude q such that the residuals within +-q carry at least ``level`` of
    the total weight W plus one more unit (the new row's): ``level * (W + 1)``, the largest
    magnitude where that exceeds W. With unit weights it is :func:`conformal_bounds`' k-th
    smallest; with each source's rows weighing 1 in all, it bounds a new *source*'s rows (a new
    publisher's run is exchangeable with the sources seen, not with their rows).

    >>> weighted_conformal_bound([0.1, 0.2, 0.3, 0.4], [1, 1, 1, 1], 0.6)
    0.3
    >>> weighted_conformal_bound([0.1, 0.2, 0.9], [0.5, 0.5, 1.0], 0.6)  # two sources: q is the largest
    0.9
    """
    if len(values) != len(weights) or not values:
        raise ValueError("weighted_conformal_bound needs one weight per residual, and a residual")
    pairs = sorted(zip((abs(value) for value in values), weights, strict=True))
    needed = level * (math.fsum(weights) + 1.0)
    total = 0.0
    for magnitude, weight in pairs:
        total += weight
        if total >= needed - 1e-12:
            return magnitude
    return pairs[-1][0]


@dataclass(frozen=True)
class Residual(Record):
    """One row's speed residual (:func:`speed_residual`) in its family, from its ``source``: the
    publisher of a fitted row (its residual out of fold) or the held-out table it comes from."""

    family: str
    value: float
    source: str


def bands_from_residuals(residuals: Iterable[tuple[str, float]], level: float = LEVEL) -> dict[str, Band]:
    """Bands (:func:`conformal_bounds`) of every family and of its parents from
    ``(family, speed residual)`` pairs, each row its own source.

    >>> bands = bands_from_residuals([("train/dense/hopper", r / 10) for r in range(-5, 6)])
    >>> round(bands["train"].low, 2), round(bands["train"].high, 2), bands["train"].num_rows
    (-0.5, 0.5, 11)
    """
    return bands_from_sources(
        (Residual(family, value, str(index)) for index, (family, value) in enumerate(residuals)), level
    )


def bands_from_sources(residuals: Iterable[Residual], level: float = LEVEL) -> dict[str, Band]:
    """Bands of every family and of its parents, each source's rows of a family weighing 1 in
    all (:func:`weighted_conformal_bound`): a table of 200 rows from one publisher counts as
    much as one of 20 from another.

    >>> rows = [Residual("infer/dense/hopper", 0.05, "big") for _ in range(9)]
    >>> rows += [Residual("infer/dense/hopper", 0.5, "small"), Residual("infer/dense/hopper", 0.6, "other")]
    >>> pairs = [(row.family, row.value) for row in rows]
    >>> bands_from_sources(rows)["infer"].high, bands_from_residuals(pairs)["infer"].high
    (0.6, 0.5)
    """
    grouped: dict[str, list[Residual]] = {}
    for residual in residuals:
        parts = residual.family.split("/")
        for depth in range(1, len(parts) + 1):
            grouped.setdefault("/".join(parts[:depth]), []).append(residual)
    bands = {}
    for name, members in sorted(grouped.items()):
        per_source = Counter(member.source for member in members)
        weights = [1.0 / per_source[member.source] for member in members]
        quantile = weighted_conformal_bound([member.value for member in members], weights, level)
        bands[name] = Band(name, level, -quantile, quantile, len(members), len(per_source))
    return bands


def speed_residual(metric: str, measured: float, predicted: float) -> float:
    """``log(measured speed / predicted speed)``: positive when the run was faster than predicted
    (for a time metric the ratio of the times is flipped).

    >>> round(speed_residual("step_time_s", measured=1.0, predicted=1.1), 4)
    0.0953
    """
    ratio = math.log(measured / predicted)
    return -ratio if metric in TIME_METRICS else ratio


def band_residual(metric: str, measured: float | None, predicted: float | None) -> float | None:
    """The speed residual (:func:`speed_residual`) a band is drawn from, ``None`` for a row that
    has none: not predicted, a memory figure (bytes, not speed), or a value not above 0.

    >>> band_residual("memory_per_gpu_bytes", 7e10, 6e10), band_residual("ttft_s", 0.2, None)
    (None, None)
    """
    if metric == "memory_per_gpu_bytes" or measured is None or predicted is None:
        return None
    if not (measured > 0 and predicted > 0):
        return None
    return speed_residual(metric, measured, predicted)


def write_uncertainty(bands: Mapping[str, Band], *, source: str, path: Path | None = None) -> Path:
    """Write ``bands`` (:func:`bands_from_sources`) to ``uncertainty.toml``, with what they come from."""
    lines = [
        "# Error bars of the SOL estimates: speed residuals log(measured / predicted) of published rows no",
        "# fitted value has seen (the fitted rows predicted without their publisher, the held-out tables),",
        "# each source weighing the same. Written by `python benchmarks/calibrate_bands.py --write`; do not",
        "# edit by hand.",
        f"schema_version = {UNCERTAINTY_SCHEMA_VERSION}",
        f"level = {LEVEL}",
        f'source = "{source}"',
    ]
    for name, band in bands.items():
        lines += [
            "",
            f'[family."{name}"]',
            f"n = {band.num_rows}",
            f"sources = {band.num_sources}",
            f"low = {band.low:.4f}",
            f"high = {band.high:.4f}",
        ]
    file = path or _data_file()
    file.write_text("\n".join(lines) + "\n", encoding="utf-8")
    load_bands.cache_clear()
    return file


__all__ = [
    "LEVEL",
    "TIME_METRICS",
    "Band",
    "Residual",
    "band_for",
    "band_residual",
    "bands_from_residuals",
    "bands_from_sources",
    "conformal_bounds",
    "family_name",
    "family_of",
    "interval_for",
    "load_bands",
    "model_interval",
    "speed_residual",
    "weighted_conformal_bound",
    "write_uncertainty",
]
