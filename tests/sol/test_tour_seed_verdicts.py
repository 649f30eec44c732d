"""The tour says how each of the seed's figures fares beside the one lightspeed computes (the
figures were printed side by side with no verdict; docs/seed.md has them claim by claim)."""

from __future__ import annotations

import pytest

from lightspeed.catalog import Catalog
from lightspeed.tour.seed import memory_100t, nvl72_vs_infiniband, verdict
from lightspeed.workload import ModelRegistry


@pytest.mark.parametrize(
    ("value", "claimed", "expected"),
    [
        (1041.0, 1000.0, "agrees (+4%)"),  # B200s for 100T weights vs the seed's ~1,000
        (1.74e28, 1.2e29, "does not hold: the seed's figure is 6.9x this"),  # 1.2e29 / 1.74e28
        (2.0, 1.0, "does not hold: this is 2x the seed's"),
        (50e9, (20e9, 80e9), "within its range"),
        (5e-6 * (1 - 1e-12), (5e-6, 10e-6), "within its range"),  # on the end, in floating point
        (100e9, (20e9, 80e9), "does not hold: 1.2x its high end"),  # 100 / 80 = 1.25
        (10e9, (20e9, 80e9), "does not hold: 0.5x its low end"),
    ],
)
def test_verdict(value: float, claimed: float | tuple[float, float], expected: str) -> None:
    assert verdict(value, claimed) == expected


def test_the_100t_flop_claim_is_said_not_to_follow(catalog: Catalog, models: ModelRegistry) -> None:
    # 6ND = 6 x 100e12 x 29e12 = 1.74e28; the seed's 1.2e29 is 6.9x that
    line = memory_100t(catalog, models).lines[0]
    assert "1.74e+28" in line
    assert "does not hold: the seed's figure is 6.9x this" in line


def test_the_fabric_claims_are_judged_each_way(catalog: Catalog, models: ModelRegistry) -> None:
    lines = nvl72_vs_infiniband(catalog, models).lines
    # one 400 Gb/s NDR port per H100: 50 GB/s each way, inside the seed's 20-80 GB/s
    assert "50 GB/s each way (seed read per direction: within its range)" in lines[1]
    # NVL72: 18 x 100 GB/s bidirectional = 1.8 TB/s, the seed's figure
    assert "1.8 TB/s bidirectional per GPU, 900 GB/s each way (seed: agrees (+0%))" in lines[0]
    # the best plans keep communication a few % on both: the seed's "tens of %" is judged
    assert "tens of % over InfiniBand: " in lines[-1]
