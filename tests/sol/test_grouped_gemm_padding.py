"""A MoE layer's experts run as one grouped GEMM, each expert tiled on its own: the last row tile of
every expert is computed whole (issue 27/28). Hand calculations of the padded rows on Hopper's
128-row tiles; FP4 GEMMs count their tiles already (``fp4_tile_occupancy``) and are left alone."""

from __future__ import annotations

import numpy as np
import pytest

from lightspeed.catalog import Catalog
from lightspeed.sol import InferencePlan, default_efficiency
from lightspeed.sol.core.shapes import layer_shapes
from lightspeed.sol.infer.inference_hardware import inference_hardware_for
from lightspeed.sol.infer.iteration import _gemms
from lightspeed.workload import ModelRegistry


def test_an_expert_pays_half_a_tile_on_average_and_few_rows_take_a_smaller_tile() -> None:
    hopper = default_efficiency("nvidia-hopper")
    assert hopper.gemm_tile == 128
    # 192 rows on average: 192 + 64 padded rows, against the 192 + 16 a lone GEMM is charged
    assert float(hopper.grouped_row_padding(192)) == pytest.approx(256 / 208, rel=1e-12)
    # 48 rows: a tile of at most 48 rows, half of it wasted on average: 72 rows against 64
    assert float(hopper.grouped_row_padding(48)) == pytest.approx(72 / 64, rel=1e-12)
    # 8 rows: 12 padded rows, less than the 24 a lone GEMM is already charged, so nothing added
    assert float(hopper.grouped_row_padding(8)) == 1.0
    # many rows: the half tile vanishes (4,096 + 64 over 4,096 + 16)
    assert float(hopper.grouped_row_padding(4096)) == pytest.approx(4160 / 4112, rel=1e-12)


def _expert_gemms(
    models: ModelRegistry, catalog: Catalog, system: str, precision: str, grouped: bool
) -> tuple[float, float]:
    """(compute s, memory s) of Mixtral 8x7B's eight experts, 192 rows each, on one GPU."""
    model = models.get("mixtral-8x7b")
    hardware = inference_hardware_for(
        catalog.cluster(system), InferencePlan(precision=precision), model=model
    )
    compute, memory = _gemms(
        hardware,
        layer_shapes(model).experts,
        np.asarray([192.0]),
        np.asarray([1.0]),
        copies=8.0,
        grouped=grouped,
    )
    return float(np.asarray(compute)[0]), float(np.asarray(memory)[0])


def test_the_experts_math_grows_by_the_padded_rows_and_their_traffic_does_not(
    models: ModelRegistry, catalog: Catalog
) -> None:
    alone = _expert_gemms(models, catalog, "dgx-h200", "fp8", grouped=False)
    grouped = _expert_gemms(models, catalog, "dgx-h200", "fp8", grouped=True)
    assert grouped[0] / alone[0] == pytest.approx(256 / 208, rel=1e-9)
    assert grouped[1] == alone[1]  # the padded rows are never read or written


def test_fp4_experts_keep_their_own_tile_count(models: ModelRegistry, catalog: Catalog) -> None:
    alone = _expert_gemms(models, catalog, "dgx-b200", "nvfp4", grouped=False)
    grouped = _expert_gemms(models, catalog, "dgx-b200", "nvfp4", grouped=True)
    assert grouped == alone
