"""How close real kernels get to the speed of light: the engine's efficiency model.

A handful of global parameters per device family (no per-run tuning):

* GEMM efficiency rises with size and saturates:
  ``eff(flop) = gemm_max_efficiency * flop / (flop + gemm_half_saturation_flop)``,
  further reduced by tile quantization for dimensions that do not fill
  ``gemm_tile`` (a 4,100-wide GEMM pads to 4,224 on 128-wide tiles).
* Streaming (memory-bound) kernels reach ``memory_efficiency`` of peak bandwidth.
* Collectives follow alpha-beta: ``time = latency + bytes / (link bandwidth x
  collective_bandwidth_efficiency)``.
* Every kernel pays ``kernel_launch_s`` unless hidden by CUDA graphs.
* Fused (flash) attention reaches ``attention_efficiency_factor`` of the GEMM
  ceiling (FlashAttention-2/3 run at 70-75% of peak where cuBLAS runs at 80%).

Defaults per family live in ``sol/data/efficiency.toml`` with the reasoning
and sources; ``lightspeed calibrate`` fits the same parameters from
measurements and saves them as a named profile (see :mod:`lightspeed.sol.core.calibration`).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path

import numpy as np
import numpy.typing as npt
from numpy.typing import ArrayLike

from lightspeed.datafile import Fields, load_toml
from lightspeed.errors import UnknownNameError
from lightspeed.records import Record

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class EfficiencyModel(Record):
    """Fractions of peak that real kernels reach, for one device family or calibration."""

    name: str
    gemm_max_efficiency: float
    gemm_half_saturation_flop: float
    gemm_tile: int
    memory_efficiency: float
    collective_bandwidth_efficiency: float
    kernel_launch_s: float
    source: str = ""
    attention_efficiency_factor: float = 0.85

    def gemm_efficiency(
        self, m: ArrayLike, n: ArrayLike, k: ArrayLike, num_compute_units: int | None = None
    ) -> FloatArray:
        """Fraction of dense peak a ``(m x k) @ (k x n)`` GEMM reaches (numpy-broadcastable).

        ``num_compute_units`` (SMs or CUs) adds wave quantization: output tiles are
        dealt to the units in waves, and a last partial wave leaves units idle.

        >>> model = default_efficiency("nvidia-hopper")
        >>> 0.0 < float(model.gemm_efficiency(8192, 8192, 8192)) <= model.gemm_max_efficiency
        True
        """
        return self.gemm_max_efficiency * self.gemm_shape_factor(m, n, k, num_compute_units)

    def gemm_shape_factor(
        self, m: ArrayLike, n: ArrayLike, k: ArrayLike, num_compute_units: int | None = None
    ) -> FloatArray:
        """The part of :meth:`gemm_efficiency` that depends on the shape (1 for huge, aligned GEMMs)."""
        return gemm_shape_factor(
            m,
            n,
            k,
            half_saturation_flop=self.gemm_half_saturation_flop,
            tile=self.gemm_tile,
            num_compute_units=num_compute_units,
        )

    def with_overrides(self, **changes: float | str) -> EfficiencyModel:
        """A copy with some parameters replaced (e.g. from a calibration profile)."""
        return replace(self, **changes)  # type: ignore[arg-type]


def gemm_shape_factor(
    m: ArrayLike,
    n: ArrayLike,
    k: ArrayLike,
    *,
    half_saturation_flop: ArrayLike,
    tile: int,
    num_compute_units: int | None = None,
) -> FloatArray:
    """Size saturation x tile padding x wave quantization of an ``(m x k) @ (k x n)`` GEMM.

    ``flop / (flop + half)`` for size; ``m / padded m x n / padded n`` for tiles of
    ``tile``; with ``num_compute_units`` (SMs/CUs), tiles dealt in waves waste the
    idle units of the last wave. Shared by the engine and by calibration's fit.
    """
    m_array = np.asarray(m, dtype=np.float64)
    n_array = np.asarray(n, dtype=np.float64)
    k_array = np.asarray(k, dtype=np.float64)
    flop = 2.0 * m_array * n_array * k_array
    size_factor = flop / (flop + np.asarray(half_saturation_flop, dtype=np.float64))
    tiles_m = np.ceil(m_array / tile)
    tiles_n = np.ceil(n_array / tile)
    quantization = (m_array / (tiles_m * tile)) * (n_array / (tiles_n * tile))
    if num_compute_units:
        tiles = tiles_m * tiles_n
        quantization = quantization * tiles / (np.ceil(tiles / num_compute_units) * num_compute_units)
    factor: FloatArray = size_factor * quantization
    return factor


_PARAMETERS = (
    "gemm_max_efficiency",
    "gemm_half_saturation_flop",
    "memory_efficiency",
    "collective_bandwidth_efficiency",
    "kernel_launch_s",
)


def _data_file() -> Path:
    return Path(str(resources.files("lightspeed.sol") / "data" / "efficiency.toml"))


def _parse_family(path: str, name: str, table: Fields) -> EfficiencyModel:
    return EfficiencyModel(
        name=name,
        gemm_max_efficiency=table.number("gemm_max_efficiency"),
        gemm_half_saturation_flop=table.number("gemm_half_saturation_flop"),
        gemm_tile=table.integer("gemm_tile", minimum=1),
        memory_efficiency=table.number("memory_efficiency"),
        collective_bandwidth_efficiency=table.number("collective_bandwidth_efficiency"),
        kernel_launch_s=table.number("kernel_launch_s"),
        source=table.string("source"),
        attention_efficiency_factor=table.number("attention_efficiency_factor", 0.85),
    )


def load_efficiency_defaults(path: Path | None = None) -> Mapping[str, EfficiencyModel]:
    """Every family's default efficiency model from the shipped data file (read once)."""
    return _load_defaults(path or _data_file())


@functools.lru_cache(maxsize=8)
def _load_defaults(file: Path) -> Mapping[str, EfficiencyModel]:
    fields = Fields(str(file), load_toml(file))
    return {name: _parse_family(str(file), name, table) for name, table in fields.tables("family").items()}


def default_efficiency(family: str) -> EfficiencyModel:
    """The documented default for a device family (``nvidia-hopper``, ``cpu-x86`` ...)."""
    defaults = load_efficiency_defaults()
    if family not in defaults:
        raise UnknownNameError("device family", family, list(defaults))
    return defaults[family]


__all__ = ["EfficiencyModel", "default_efficiency", "gemm_shape_factor", "load_efficiency_defaults"]
