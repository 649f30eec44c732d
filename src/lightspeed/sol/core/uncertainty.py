"""Error bars: how far published runs of the same family land from the engine's predictions.

``benchmarks/fit_efficiency.py --write`` predicts every published row with the
profiles fitted on the *other* sources (leave-one-source-out) and stores, per
family, the 10th and 90th percentiles of the speed residual
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
    {"step_time_s", "gpu_hours", "time_to_train_s", "ttft_s", "tpot_s", "request_latency_s"}
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
    bands = load_bands()
    name = family_name(kind, moe=moe, architecture=architecture)
    parts = name.split("/")
    for depth in (3, 2, 1):
        candidate = "/".join(parts[:depth])
        band = bands.get(candidate)
        if band is not None and band.num_rows >= MIN_ROWS:
            return Band(candidate, band.level, band.low, band.high, band.num_rows)
    return bands.get(kind) or Band(kind, LEVEL, -0.3, 0.3, 0)


def _quantile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    position = share * (len(ordered) - 1)
    below, above = math.floor(position), math.ceil(position)
    return ordered[below] + (ordered[above] - ordered[below]) * (position - below)


def bands_from_residuals(residuals: Iterable[tuple[str, float]], level: float = LEVEL) -> dict[str, Band]:
    """Bands of every family and of its parents from ``(family, speed residual)`` pairs.

    >>> bands = bands_from_residuals([("train/dense/hopper", r / 10) for r in range(-5, 6)])
    >>> round(bands["train"].low, 2), round(bands["train"].high, 2)
    (-0.4, 0.4)
    """
    grouped: dict[str, list[float]] = {}
    for family, residual in residuals:
        parts = family.split("/")
        for depth in range(1, len(parts) + 1):
            grouped.setdefault("/".join(parts[:depth]), []).append(residual)
    tail = (1.0 - level) / 2.0
    return {
        name: Band(name, level, _quantile(values, tail), _quantile(values, 1.0 - tail), len(values))
        for name, values in sorted(grouped.items())
    }


def write_uncertainty(
    rows: Iterable[tuple[str, str, float, float | None]], *, source: str, path: Path | None = None
) -> Path:
    """Write the bands of ``(family, metric, measured, predicted)`` rows to ``uncertainty.toml``."""
    residuals = []
    for family, metric, measured, predicted in rows:
        if predicted is None or predicted <= 0 or measured <= 0 or metric == "memory_per_gpu_bytes":
            continue
        ratio = math.log(measured / predicted)
        residuals.append((family, -ratio if metric in TIME_METRICS else ratio))
    bands = bands_from_residuals(residuals)
    lines = [
        "# Error bars of the SOL estimates: speed residuals log(measured / predicted) of the published",
        "# rows, predicted with profiles fitted on the other sources (leave-one-source-out).",
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
    "bands_from_residuals",
    "family_name",
    "family_of",
    "interval_for",
    "load_bands",
    "write_uncertainty",
]
