"""Error bars: how far published runs of the same family land from the engine's predictions.

``benchmarks/fit_efficiency.py --write`` predicts every published row with the
profiles fitted without its publisher (leave-one-publisher-out) and stores, per
family, the symmetric split-conformal 80% bound on the speed residual
``log(measured speed / predicted speed)`` in ``sol/data/uncertainty.toml``. A
family is ``kind/dense|moe/architecture`` (``train/dense/hopper``); a family
with fewer than :data:`MIN_ROWS` rows borrows from its parent
(``train/dense``, then ``train``). Every estimate carries the resulting 80%
interval on its speeds and times, and ``lightspeed validate`` measures how
often the published value really falls inside it.

>>> band = interval_for("train", moe=False, architecture="Hopper")
>>> band.level, band.low < 0 < band.high
(0.8, True)
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping
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
LEVEL: Final = 0.8
# Metrics that are times (a slower run has a bigger value): their residual flips sign.
TIME_METRICS: Final = frozenset(
    {"step_time_s", "gpu_hours", "time_to_train_s", "ttft_s", "tpot_s", "itl_s", "request_latency_s"}
)


@dataclass(frozen=True)
class Band(Record):
    """An interval on speed: measured speed / predicted speed lies in ``exp([low, high])`` for
    ``level`` of the published rows of ``family`` (``num_rows`` of them)."""

    family: str
    level: float
    low: float
    high: float
    num_rows: int

    def speed(self, value: float) -> tuple[float, float]:
        """The interval of a speed (tokens/s, FLOP/s, MFU) predicted as ``value``."""
        return value * math.exp(self.low), value * math.exp(self.high)

    def time(self, value: float) -> tuple[float, float]:
        """The interval of a time (step, TTFT, TPOT, GPU-hours) predicted as ``value``."""
        return value * math.exp(-self.high), value * math.exp(-self.low)

    def of(self, metric: str, value: float) -> tuple[float, float]:
        """The interval of ``metric`` predicted as ``value`` (times and speeds as they should be)."""
        return self.time(value) if metric in TIME_METRICS else self.speed(value)


def family_name(kind: str, *, moe: bool, architecture: str) -> str:
    """``train/moe/hopper``: the family whose residuals give an estimate its error bars."""
    return f"{kind}/{'moe' if moe else 'dense'}/{architecture.lower()}"


def family_of(kind: str, model: TransformerSpec, accelerator: Accelerator) -> str:
    """The family of a model on an accelerator (see :func:`family_name`)."""
    return family_name(kind, moe=model.moe is not None, architecture=accelerator.architecture)


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
        )
        for name, table in fields.tables("family").items()
    }


def interval_for(kind: str, *, moe: bool, architecture: str) -> Band:
    """The band of the most specific family with enough rows (``kind/moe/arch``, ``kind/moe``, ``kind``)."""
    return band_for(load_bands(), family_name(kind, moe=moe, architecture=architecture))


def band_for(bands: Mapping[str, Band], family: str) -> Band:
    """The band of ``family`` among ``bands``, or of its nearest parent with :data:`MIN_ROWS`
    rows or more (``train/dense/hopper``, ``train/dense``, ``train``)."""
    parts = family.split("/")
    for depth in (3, 2, 1):
        candidate = "/".join(parts[:depth])
        band = bands.get(candidate)
        if band is not None and band.num_rows >= MIN_ROWS:
            return Band(candidate, band.level, band.low, band.high, band.num_rows)
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
    magnitudes = sorted(abs(value) for value in values)
    count = len(magnitudes)
    quantile = magnitudes[min(count, math.ceil(level * (count + 1))) - 1]
    return -quantile, quantile


def bands_from_residuals(residuals: Iterable[tuple[str, float]], level: float = LEVEL) -> dict[str, Band]:
    """Bands (:func:`conformal_bounds`) of every family and of its parents from
    ``(family, speed residual)`` pairs.

    >>> bands = bands_from_residuals([("train/dense/hopper", r / 10) for r in range(-5, 6)])
    >>> round(bands["train"].low, 2), round(bands["train"].high, 2), bands["train"].num_rows
    (-0.5, 0.5, 11)
    """
    grouped: dict[str, list[float]] = {}
    for family, residual in residuals:
        parts = family.split("/")
        for depth in range(1, len(parts) + 1):
            grouped.setdefault("/".join(parts[:depth]), []).append(residual)
    return {
        name: Band(name, level, *conformal_bounds(values, level), len(values))
        for name, values in sorted(grouped.items())
    }


def speed_residual(metric: str, measured: float, predicted: float) -> float:
    """``log(measured speed / predicted speed)``: positive when the run was faster than predicted
    (for a time metric the ratio of the times is flipped).

    >>> round(speed_residual("step_time_s", measured=1.0, predicted=1.1), 4)
    0.0953
    """
    ratio = math.log(measured / predicted)
    return -ratio if metric in TIME_METRICS else ratio


def write_uncertainty(
    rows: Iterable[tuple[str, str, float, float | None]], *, source: str, path: Path | None = None
) -> Path:
    """Write the bands of ``(family, metric, measured, predicted)`` rows to ``uncertainty.toml``;
    the predictions are out-of-fold (each row predicted by values fitted without its publisher)."""
    residuals = []
    for family, metric, measured, predicted in rows:
        if predicted is None or predicted <= 0 or measured <= 0 or metric == "memory_per_gpu_bytes":
            continue
        residuals.append((family, speed_residual(metric, measured, predicted)))
    bands = bands_from_residuals(residuals)
    lines = [
        "# Error bars of the SOL estimates: speed residuals log(measured / predicted) of the published",
        "# rows, each predicted with values fitted without its publisher (leave-one-publisher-out).",
        "# Written by `python benchmarks/fit_efficiency.py --write`; do not edit by hand.",
        f"schema_version = {UNCERTAINTY_SCHEMA_VERSION}",
        f"level = {LEVEL}",
        f'source = "{source}"',
    ]
    for name, band in bands.items():
        lines += [
            "",
            f'[family."{name}"]',
            f"n = {band.num_rows}",
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
    "band_for",
    "bands_from_residuals",
    "conformal_bounds",
    "family_name",
    "family_of",
    "interval_for",
    "load_bands",
    "speed_residual",
    "write_uncertainty",
]
