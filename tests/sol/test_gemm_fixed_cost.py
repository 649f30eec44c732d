"""A GEMM's fixed cost (the efficiency model's half-saturation FLOP) is paid once per GEMM, beside
the tile-padded work: a narrow output (a ``hidden -> 1`` gate, a router over 8 experts) pads its
columns to a tile but does not pay the fixed cost once per padded column. Before, the fixed cost
was divided by the padding too: Qwen3-Next's shared-expert gate cost 4.4 ms a micro-batch on a
B200 in training, longer than the layer's routed experts."""

from __future__ import annotations

import pytest

from lightspeed.catalog import Catalog
from lightspeed.sol.core.efficiency import gemm_shape_factor
from lightspeed.sol.core.hardware import hardware_for
from lightspeed.sol.core.roofline import gemm_s

HALF = 4.5e10  # nvidia-blackwell's gemm_half_saturation_flop
TILE = 128


def test_the_fixed_cost_is_paid_once_beside_the_padded_work() -> None:
    # seconds per unit of peak: (padded work + fixed cost), the padded work being the GEMM's FLOPs
    # over the column padding (1 of 128) and the row smoothing (4096 / (4096 + 16))
    flop = 2.0 * 4096 * 1 * 2048
    padded = flop * 128 * (4096 + 16) / 4096
    factor = float(gemm_shape_factor(4096, 1, 2048, half_saturation_flop=HALF, tile=TILE))
    assert flop / factor == pytest.approx(padded + HALF, rel=1e-12)
    # an aligned GEMM is as before: flop / (flop + half) x rows
    big = 2.0 * 8192 * 8192 * 8192
    aligned = float(gemm_shape_factor(8192, 8192, 8192, half_saturation_flop=HALF, tile=TILE))
    rows = 8192 / (8192 + 16)
    assert aligned == pytest.approx(big / rows / (big / rows + HALF) * rows, rel=1e-12)


def test_a_gate_of_one_output_costs_one_gemms_fixed_time(catalog: Catalog) -> None:
    hardware = hardware_for(catalog.resolve_cluster("b200"), "bf16")
    gate = float(gemm_s(hardware, 4096, 1, 2048, "bf16"))
    router = float(gemm_s(hardware, 4096, 512, 2048, "bf16"))  # 512 experts: aligned
    assert gate < 1e-4  # tens of microseconds, not the 4.4 ms it had cost
    assert gate < router  # and less than a router of 512 outputs on the same tokens
