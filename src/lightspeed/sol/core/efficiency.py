"""How close the best kernels get to the speed of light: the ceilings of each device family.

A handful of figures per family, each from a published kernel measurement
(no per-run tuning; ``sol/data/efficiency.toml`` cites them):

* GEMM efficiency: the best-shape ceiling of the precision run (MAMF for BF16
  and FP8), times a shape factor: it saturates with size (half at
  ``gemm_half_saturation_flop``), loses to padding of the weight dimension to
  ``gemm_tile``, and is smooth in the token dimension.
* Fused attention per kernel (unfused, FlashAttention-2, the best fused kernel
  of the family), forward and backward, saturating with sequence length.
* Streaming (memory-bound) kernels reach ``memory_efficiency`` of peak bandwidth.
* Collectives follow alpha-beta: ``time = latency + bytes / (link bandwidth x
  collective_bandwidth_efficiency)``.
* Every kernel pays ``kernel_launch_s`` unless hidden by CUDA graphs.

What a software stack sustains of these ceilings is one number per stack
(:mod:`lightspeed.sol.core.stacks`).

Defaults per family live in ``sol/data/efficiency.toml`` with the reasoning
and sources; ``lightspeed calibrate`` fits the same parameters from
measurements and saves them as a named profile (see :mod:`lightspeed.sol.core.calibration`).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from numpy.typing import ArrayLike

from lightspeed.datafile import Fields, load_toml
from lightspeed.errors import UnknownNameError
from lightspeed.paths import package_data
from lightspeed.records import Record

FloatArray = npt.NDArray[np.float64]
EFFICIENCY_SCHEMA_VERSION = 2


@dataclass(frozen=True)
class EfficiencyModel(Record):
    """Fractions of peak that the best public kernels reach, for one device family or calibration.

    ``gemm_max_efficiency`` is the best-shape BF16 GEMM (MAMF), the ceiling of every 16- and
    32-bit row; the FP8 (and INT8) and FP4 ceilings default to it scaled by Hopper's measured
    FP8/BF16 ratio when the family has no measurement of its own (a calibration fits the one of
    the format it measured: :func:`gemm_ceiling_parameter`). Attention ceilings are per kernel
    (``flash`` = the best fused kernel of the family, ``flash2`` =
    FlashAttention-2), forward and backward, for long sequences.
    ``fp4_tile_rows`` x ``fp4_tile_columns``: the output tile one SM computes in the family's FP4
    GEMMs, which do not split K, so a GEMM of few tiles leaves SMs idle
    (:meth:`fp4_tile_occupancy`; 0 where no kernel table shows it).
    ``nvls_all_reduce_efficiency``: the algorithm bandwidth (buffer bytes per second) an all-reduce
    reduced in the NVLink switches (NVLS) reaches, over the per-direction link, where each byte
    crosses the link once each way (``None``: no measurement, ``collective_bandwidth_efficiency``).
    ``roofline_overlap_power``: how a kernel's math and memory traffic combine near the ridge point
    (:meth:`kernel_s`; ``None``: the hard roofline, ``max(compute, memory)``).
    """

    name: str
    gemm_max_efficiency: float
    gemm_half_saturation_flop: float
    gemm_tile: int
    memory_efficiency: float
    collective_bandwidth_efficiency: float
    kernel_launch_s: float
    source: str = ""
    gemm_max_efficiency_fp8: float | None = None
    gemm_max_efficiency_fp4: float | None = None
    attention_flash_forward_efficiency: float = 0.6
    attention_flash_backward_efficiency: float = 0.5
    attention_flash2_forward_efficiency: float = 0.6
    attention_flash2_backward_efficiency: float = 0.5
    attention_half_saturation_tokens: float = 500.0
    fp4_tile_rows: int = 0
    fp4_tile_columns: int = 0
    nvls_all_reduce_efficiency: float | None = None
    roofline_overlap_power: float | None = None
    measured_on: str = ""  # the device a calibration measured ("cpu", a catalog name; "" = family defaults)
    other_devices_allowed: bool = False  # --force: apply it to another device anyway
    # a calibration's base family's memory_efficiency (None: family defaults); see streaming_efficiency
    base_memory_efficiency: float | None = None

    @property
    def label(self) -> str:
        """The family's name as plans print it, marked where its figures are assumed rather than
        measured (its ``source`` says so: TPU, Gaudi, Ada, CDNA 2/4, CPU).

        >>> default_efficiency("nvidia-hopper").label, default_efficiency("google-tpu").label
        ("'nvidia-hopper'", "'google-tpu' (assumed, not measured: calibrate)")
        """
        assumed = self.source.lower().startswith("assumed")
        return f"'{self.name}'" + (" (assumed, not measured: calibrate)" if assumed else "")

    def gemm_ceiling(self, compute_row: str = "bf16") -> float:
        """Best-shape GEMM efficiency on the ``compute_row`` tensor cores (``bf16``, ``fp8``, ``fp4`` ...).

        >>> hopper = default_efficiency("nvidia-hopper")
        >>> hopper.gemm_ceiling("bf16"), hopper.gemm_ceiling("fp8")
        (0.803, 0.709)
        """
        parameter = gemm_ceiling_parameter(compute_row)
        own: float | None = getattr(self, parameter) if parameter is not None else None
        if own is not None:
            return own
        if parameter == "gemm_max_efficiency_fp4":  # no FP4 figure: FP8's, scaled as FP8 is from BF16
            return self.gemm_ceiling("fp8") * FP8_TO_BF16_CEILING
        return self.gemm_max_efficiency * FP8_TO_BF16_CEILING  # FP8 or FP6 without a figure

    def streaming_efficiency(self, default: float) -> float:
        """The share of HBM bandwidth that weight/KV streaming kernels reach (inference decode),
        given ``default``, what they reach on the family's defaults (``stream_memory_efficiency``).

        A calibration measures STREAM, not decode kernels: its ``memory_efficiency`` over the
        family's (``base_memory_efficiency``) scales ``default``, so a machine whose STREAM
        reaches 0.50 where the family expects 0.85 streams weights at 0.80 x 0.50 / 0.85 = 0.47.
        Family defaults return ``default`` itself.

        >>> hopper = default_efficiency("nvidia-hopper")
        >>> hopper.streaming_efficiency(0.8)
        0.8
        >>> measured = hopper.with_overrides(memory_efficiency=0.5, base_memory_efficiency=0.85)
        >>> round(measured.streaming_efficiency(0.8), 4)
        0.4706
        """
        if self.base_memory_efficiency is None or self.memory_efficiency == self.base_memory_efficiency:
            return default
        return default * self.memory_efficiency / self.base_memory_efficiency

    def kernel_s(self, compute_s: ArrayLike, memory_s: ArrayLike) -> FloatArray:
        """Time of a kernel that needs ``compute_s`` of math at its ceiling and ``memory_s`` of
        traffic at its bandwidth: ``(compute^p + memory^p)^(1/p)`` with ``p`` the family's
        ``roofline_overlap_power`` (the two overlap imperfectly where they are close: a GEMM at the
        ridge point takes 2^(1/p) of either), else the hard roofline ``max(compute, memory)``.

        >>> hopper = default_efficiency("nvidia-hopper")
        >>> round(float(hopper.kernel_s(1.0, 1.0)), 3), round(float(hopper.kernel_s(1.0, 0.2)), 3)
        (1.26, 1.003)
        """
        compute = np.asarray(compute_s, dtype=np.float64)
        memory = np.asarray(memory_s, dtype=np.float64)
        power = self.roofline_overlap_power
        if power is None:
            hard: FloatArray = np.maximum(compute, memory)
            return hard
        longer = np.maximum(compute, memory)
        ratio = np.minimum(compute, memory) / np.where(longer > 0.0, longer, 1.0)
        smooth: FloatArray = longer * (1.0 + ratio**power) ** (1.0 / power)
        return smooth

    def attention_efficiency(self, kernel: str, *, backward: bool, seq_len: ArrayLike = 1e9) -> FloatArray:
        """Fraction of peak a fused attention kernel reaches at ``seq_len`` (attended tokens).

        >>> round(float(default_efficiency("nvidia-ampere").attention_efficiency("flash", backward=False,
        ...     seq_len=400)), 3)
        0.35
        """
        if kernel == "flash2":
            ceiling = (
                self.attention_flash2_backward_efficiency
                if backward
                else self.attention_flash2_forward_efficiency
            )
        else:
            ceiling = (
                self.attention_flash_backward_efficiency
                if backward
                else self.attention_flash_forward_efficiency
            )
        tokens = np.maximum(np.asarray(seq_len, dtype=np.float64), 1.0)
        result: FloatArray = ceiling * tokens / (tokens + self.attention_half_saturation_tokens)
        return result

    def gemm_efficiency(
        self, m: ArrayLike, n: ArrayLike, k: ArrayLike, compute_row: str = "bf16"
    ) -> FloatArray:
        """Fraction of dense peak a ``(m x k) @ (k x n)`` GEMM reaches (numpy-broadcastable).

        >>> model = default_efficiency("nvidia-hopper")
        >>> 0.0 < float(model.gemm_efficiency(8192, 8192, 8192)) <= model.gemm_max_efficiency
        True
        """
        return self.gemm_ceiling(compute_row) * self.gemm_shape_factor(m, n, k)

    def fp4_tile_occupancy(self, m: ArrayLike, n: ArrayLike, groups: ArrayLike, num_sms: int) -> FloatArray:
        """Share of ``num_sms`` SMs' time that ``groups`` FP4 GEMMs of ``(m x k) @ (k x n)`` run as
        one kernel keep busy: their ``ceil(m / rows) x ceil(n / columns)`` output tiles per group
        (``groups`` may be an expected count, as of the experts a batch reaches), one per SM, in
        whole waves (1 where the family has no tile). Both the tensor-core rate and
        the weight stream of the GEMM scale with it.

        >>> blackwell = default_efficiency("nvidia-blackwell")
        >>> round(float(blackwell.fp4_tile_occupancy(1, 8192, 1, 148)), 3)  # 64 tiles on 148 SMs
        0.432
        >>> float(blackwell.fp4_tile_occupancy(2048, 8192, 1, 148)) > 0.98  # 1,024 tiles, 7 waves
        True
        """
        if not (self.fp4_tile_rows and self.fp4_tile_columns):
            return np.ones(np.broadcast(np.asarray(m), np.asarray(n), np.asarray(groups)).shape)
        rows = np.ceil(np.maximum(np.asarray(m, dtype=np.float64), 1.0) / self.fp4_tile_rows)
        columns = np.ceil(np.asarray(n, dtype=np.float64) / self.fp4_tile_columns)
        tiles = np.maximum(np.asarray(groups, dtype=np.float64), 1.0) * rows * columns
        occupancy: FloatArray = tiles / (np.ceil(tiles / num_sms) * num_sms)
        return occupancy

    def gemm_shape_factor(self, m: ArrayLike, n: ArrayLike, k: ArrayLike) -> FloatArray:
        """The part of :meth:`gemm_efficiency` that depends on the shape (1 for huge, aligned GEMMs)."""
        return gemm_shape_factor(
            m, n, k, half_saturation_flop=self.gemm_half_saturation_flop, tile=self.gemm_tile
        )

    def grouped_row_padding(self, mean_rows: ArrayLike) -> FloatArray:
        """What a group of a grouped GEMM (a MoE layer's experts run as one kernel) computes over
        what :meth:`gemm_efficiency` charges a lone GEMM of ``mean_rows`` rows (``rows + tile / 8``,
        see :func:`gemm_shape_factor`), at least 1. Each group is tiled on its own, so its last
        row tile is partial, yet the tensor cores compute it whole; a group's rows are a random
        count (the tokens an expert draws), so half a tile on average: ``rows + tile / 2``. The
        kernels pick a smaller row tile for fewer rows (vLLM's fused-MoE configurations:
        ``BLOCK_SIZE_M`` 16 for a few tokens, 64-128 for many), so the tile is at most the rows:
        ``rows + min(rows, tile) / 2``. Grouped-GEMM libraries pad so: vLLM's
        ``moe_align_block_size`` rounds every expert's token count up to ``BLOCK_SIZE_M``, and
        DeepGEMM's contiguous layout aligns each expert's segment to its 128-row block
        (``get_m_alignment_for_contiguous_layout``).

        >>> hopper = default_efficiency("nvidia-hopper")
        >>> round(float(hopper.grouped_row_padding(192)), 4)  # (192 + 64) / (192 + 16)
        1.2308
        >>> round(float(hopper.grouped_row_padding(64)), 4)  # (64 + 32) / (64 + 16)
        1.2
        >>> float(hopper.grouped_row_padding(8))  # 12 padded rows: below a lone GEMM's 24
        1.0
        """
        rows = np.asarray(mean_rows, dtype=np.float64)
        tile = float(self.gemm_tile)
        padded = rows + np.minimum(rows, tile) / 2.0
        factor: FloatArray = np.maximum(1.0, padded / (rows + tile / 8.0))
        return factor

    def with_overrides(self, **changes: float | str | bool) -> EfficiencyModel:
        """A copy with some parameters replaced (e.g. from a calibration profile)."""
        return replace(self, **changes)  # type: ignore[arg-type]


def gemm_ceiling_parameter(compute_row: str) -> str | None:
    """The :class:`EfficiencyModel` field that :meth:`~EfficiencyModel.gemm_ceiling` reads for
    GEMMs on ``compute_row``: what a calibration from GEMMs of that format fits (``None`` for a
    row whose ceiling is only ever derived from another one: fp6).

    >>> gemm_ceiling_parameter("bf16"), gemm_ceiling_parameter("int8"), gemm_ceiling_parameter("fp4")
    ('gemm_max_efficiency', 'gemm_max_efficiency_fp8', 'gemm_max_efficiency_fp4')
    """
    if compute_row in ("fp8", "int8"):
        return "gemm_max_efficiency_fp8"
    if compute_row in ("fp4", "int4"):
        return "gemm_max_efficiency_fp4"
    if compute_row == "fp6":
        return None
    return "gemm_max_efficiency"


# Hopper's measured FP8/BF16 best-shape ratio (MAMF: 1402.6/1979 over 794.5/989), used where a
# family has no FP8 (or FP4) measurement of its own.
FP8_TO_BF16_CEILING = 0.709 / 0.803


def gemm_shape_factor(
    m: ArrayLike,
    n: ArrayLike,
    k: ArrayLike,
    *,
    half_saturation_flop: ArrayLike,
    tile: int,
) -> FloatArray:
    """Weight-dimension padding x row smoothing x size saturation of an ``(m x k) @ (k x n)`` GEMM.

    ``n / padded n`` for the weight's output dimension on tiles of ``tile``; the token
    dimension ``m`` is smooth, ``m / (m + tile / 8)``: cuBLAS picks 64-, 128- or 256-row
    tiles and split-K by shape, so one more row never costs a whole tile (no 128-row
    swings). Size saturation is a fixed cost of ``half`` FLOP-equivalents beside the work the
    tensor cores do, the padded work: ``padded / (padded + half)``. (It had multiplied the
    fixed cost by the padding too: a ``hidden -> 1`` gate, Qwen3-Next's shared-expert gate,
    cost 4.4 ms on a B200, a router of 8 experts 16x its fixed cost.)
    Shared by the engine and by calibration's fit.

    >>> f = lambda rows: float(gemm_shape_factor(rows, 8192, 8192, half_saturation_flop=0.0, tile=128))
    >>> round(f(128), 3), round(f(136), 3), f(129) < f(136)
    (0.889, 0.895, True)
    >>> gate = float(gemm_shape_factor(4096, 1, 2048, half_saturation_flop=4.5e10, tile=128))
    >>> round(2 * 4096 * 2048 / gate / 4.5e10, 2)  # the fixed cost once, beside 128 padded columns
    1.05
    """
    m_array = np.asarray(m, dtype=np.float64)
    n_array = np.asarray(n, dtype=np.float64)
    k_array = np.asarray(k, dtype=np.float64)
    flop = 2.0 * m_array * n_array * k_array
    padding = n_array / (np.ceil(n_array / tile) * tile)
    rows = m_array / (m_array + tile / 8.0)
    padded = flop / (padding * rows)
    size_factor = padded / (padded + np.asarray(half_saturation_flop, dtype=np.float64))
    factor: FloatArray = size_factor * padding * rows
    return factor


_OPTIONAL_NUMBERS = (
    "gemm_max_efficiency_fp8",
    "gemm_max_efficiency_fp4",
    "nvls_all_reduce_efficiency",
    "roofline_overlap_power",
)
_ATTENTION = (
    "attention_flash_forward_efficiency",
    "attention_flash_backward_efficiency",
    "attention_flash2_forward_efficiency",
    "attention_flash2_backward_efficiency",
    "attention_half_saturation_tokens",
)


def _data_file() -> Path:
    return package_data("sol", "data", "efficiency.toml")


def _parse_family(name: str, table: Fields) -> EfficiencyModel:
    numbers: dict[str, Any] = {key: table.number(key) for key in _OPTIONAL_NUMBERS if table.has(key)}
    numbers.update({key: table.number(key) for key in _ATTENTION})
    return EfficiencyModel(
        name=name,
        gemm_max_efficiency=table.number("gemm_max_efficiency"),
        gemm_half_saturation_flop=table.number("gemm_half_saturation_flop"),
        gemm_tile=table.integer("gemm_tile", minimum=1),
        memory_efficiency=table.number("memory_efficiency"),
        collective_bandwidth_efficiency=table.number("collective_bandwidth_efficiency"),
        kernel_launch_s=table.number("kernel_launch_s"),
        source=table.string("source"),
        fp4_tile_rows=table.integer("fp4_tile_rows", 0, minimum=0),
        fp4_tile_columns=table.integer("fp4_tile_columns", 0, minimum=0),
        **numbers,
    )


def load_efficiency_defaults(path: Path | None = None) -> Mapping[str, EfficiencyModel]:
    """Every family's default efficiency model from the shipped data file (read once)."""
    return _load_defaults(path or _data_file())


@functools.lru_cache(maxsize=8)
def _load_defaults(file: Path) -> Mapping[str, EfficiencyModel]:
    fields = Fields(str(file), load_toml(file))
    fields.schema_version({EFFICIENCY_SCHEMA_VERSION})
    return {name: _parse_family(name, table) for name, table in fields.tables("family").items()}


def default_efficiency(family: str) -> EfficiencyModel:
    """The documented default for a device family (``nvidia-hopper``, ``cpu-x86`` ...)."""
    defaults = load_efficiency_defaults()
    if family not in defaults:
        raise UnknownNameError("device family", family, list(defaults))
    return defaults[family]


__all__ = [
    "FP8_TO_BF16_CEILING",
    "EfficiencyModel",
    "default_efficiency",
    "gemm_ceiling_parameter",
    "gemm_shape_factor",
    "load_efficiency_defaults",
]
