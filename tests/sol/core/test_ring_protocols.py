"""NCCL's ring protocols inside an NVLink domain (sol/core/collectives.py RingProtocols), against
hand calculations with NCCL's tuner constants (src/graph/tuning.cc) and against measured
nccl-tests curves (benchmarks/data/nccl-all-reduce.tsv, none of which the ring constants were
set from)."""

from __future__ import annotations

import dataclasses
import statistics
from types import ModuleType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lightspeed.catalog import Catalog
from lightspeed.sol.core.collectives import all_gather_s, all_reduce_s
from lightspeed.sol.core.hardware import hardware_for, load_latency_floors
from scripts import load_script

MIB = 2**20
US = 1e-6
# 8 H100: NVLink 4 at 450 GB/s per direction, 80% on a ring, 8 / (2 x 7) of it per all-reduced byte
RING_ALGBW_8XH100 = 0.8 * 450e9 * 8 / 14


@pytest.fixture(scope="module")
def dgx_h100(catalog: Catalog):  # type: ignore[no-untyped-def]
    return hardware_for(catalog.cluster("dgx-h100", num_nodes=1), "bf16").fabric


def test_the_constants_are_nccls(dgx_h100) -> None:  # type: ignore[no-untyped-def]
    protocols = load_latency_floors().ring_protocols
    by_name = {protocol.name: protocol for protocol in protocols.protocols}
    # tuning.cc baseLatencies Ring: LL128 14.0, Simple 8.4; hwLatencies NVLINK Ring: 1.9, 3.4
    assert by_name["ll128"].base_latency_s == pytest.approx(14.0 * US)
    assert by_name["ll128"].step_latency_s == pytest.approx(1.9 * US)
    assert by_name["simple"].base_latency_s == pytest.approx(8.4 * US)
    assert by_name["simple"].step_latency_s == pytest.approx(3.4 * US)
    assert (by_name["ll128"].bandwidth_share, protocols.ll_bandwidth_share) == (0.92, 0.5)
    assert dgx_h100.ring_protocols == protocols  # an NVLink node gets them


def test_an_8_mib_all_reduce_on_8_h100_runs_ll128s_ring(dgx_h100) -> None:  # type: ignore[no-untyped-def]
    size = 8 * MIB
    ll128 = 14.0 * US + 14 * 1.9 * US + size / (0.92 * RING_ALGBW_8XH100)  # 40.6 + 44.3 = 84.9 us
    simple = 8.4 * US + 14 * 3.4 * US + size / RING_ALGBW_8XH100  # 56.0 + 40.8 = 96.8 us
    in_switch = 80 * US + size / (0.611 * 450e9)  # 80 + 30.5 = 110.5 us
    assert ll128 < min(simple, in_switch)
    assert float(all_reduce_s(dgx_h100, size, 8)) == pytest.approx(ll128, rel=1e-6)
    assert ll128 == pytest.approx(84.9 * US, abs=0.1 * US)


def test_a_decode_steps_all_reduce_keeps_the_small_message_cost(dgx_h100) -> None:  # type: ignore[no-untyped-def]
    # 16 KiB (a batch of 1 of an 8,192-wide model): NCCL's base latency and six link hops (the
    # tree's 2 log2 8 steps), the bytes at LL's half of the ring bandwidth
    size = 16 * 1024
    alpha = dgx_h100.scale_up.latency_s
    expected = 6.6 * US + 6 * alpha + 2 * 7 / 8 * size / (0.8 * 450e9) / 0.5
    assert float(all_reduce_s(dgx_h100, size, 8)) == pytest.approx(expected, rel=1e-6)


def test_the_in_switch_reduction_wins_only_for_large_buffers(dgx_h100) -> None:  # type: ignore[no-untyped-def]
    size = 1024 * MIB
    in_switch = 80 * US + size / (0.611 * 450e9)  # 80 + 3,905 us
    simple = 8.4 * US + 14 * 3.4 * US + size / RING_ALGBW_8XH100  # 56 + 5,220 us
    assert float(all_reduce_s(dgx_h100, size, 8)) == pytest.approx(in_switch, rel=1e-6)
    assert in_switch < simple


def test_without_ring_protocols_the_alpha_beta_cost_stands(dgx_h100) -> None:  # type: ignore[no-untyped-def]
    plain = dataclasses.replace(dgx_h100, ring_protocols=None)
    size = 8 * MIB
    alpha = dgx_h100.scale_up.latency_s
    expected = size / (0.611 * 450e9) + 6.6 * US + 6 * alpha  # in-switch, no latency of its own: 43 us
    assert float(all_reduce_s(plain, size, 8)) == pytest.approx(expected, rel=1e-6)
    assert float(all_reduce_s(dgx_h100, size, 8)) > 1.9 * expected


def test_an_all_gather_runs_the_same_protocols_over_g_minus_1_steps(dgx_h100) -> None:  # type: ignore[no-untyped-def]
    size = 8 * MIB  # the whole output
    transfer = 7 / 8 * size / (0.8 * 450e9)  # 20.4 us at the ring's full bandwidth
    ll128 = 14.0 * US + 7 * 1.9 * US + transfer / 0.92  # 27.3 + 22.2 us
    simple = 8.4 * US + 7 * 3.4 * US + transfer  # 32.2 + 20.4 us
    assert float(all_gather_s(dgx_h100, size, 8)) == pytest.approx(min(ll128, simple), rel=1e-6)


def test_links_nccl_does_not_describe_keep_the_alpha_beta_cost(catalog: Catalog) -> None:
    # an MI300X platform's xGMI and a TPU slice's ICI are not NVLink: no ring protocols
    assert hardware_for(catalog.cluster("mi300x-platform", num_nodes=1), "bf16").fabric.ring_protocols is None
    tpu = catalog.cluster("tpu-v5e-pod", num_accelerators=256)
    assert hardware_for(tpu, "bf16").fabric.ring_protocols is None


@pytest.fixture(scope="module")
def check() -> ModuleType:
    return load_script("benchmarks/collectives_check.py")


def test_mid_size_all_reduces_land_near_the_measured_nccl_tests_curves(check: ModuleType) -> None:
    """8-64 MiB on four published sweeps (8 H100 and 8 H200 with NVLS, 4 GB200 with rings, 8 H20):
    the engine's time is within 25% of the measured one at every size; the alpha-beta cost without
    the protocols was 1.4-2.0 times too fast there. (Below a few MiB nccl-tests times a launch
    without CUDA graphs, 20-40 us, that a serving engine's graphed custom all-reduce does not pay.)"""
    rows = [row for row in check.measured_rows() if 8 * MIB <= row["size_bytes"] <= 64 * MIB]
    assert {row["table"] for row in rows} == {"nd-h100-v5", "nd-h200-v5", "nd-gb200-v6", "hgx-h20"}
    engine, plain = check.engine_times_us(rows)
    ratios = [row["time_us"] / time for row, time in zip(rows, engine, strict=True)]
    assert all(0.85 < ratio < 1.25 for ratio in ratios), ratios
    assert statistics.median(row["time_us"] / time for row, time in zip(rows, plain, strict=True)) > 1.5


def test_the_in_switch_latency_is_the_median_residual_of_the_nvls_tables(check: ModuleType) -> None:
    # runtime.toml in_switch_latency_us = 80: the median over 8 MiB-1 GiB of measured time minus the
    # bytes at 0.611 x 450 GB/s on the ND H100 v5 and ND H200 v5 tables (81 us)
    residuals = check.in_switch_residuals_us(check.measured_rows())
    assert len(residuals) == 16
    assert statistics.median(residuals) == pytest.approx(
        load_latency_floors().ring_protocols.in_switch_latency_s / US, abs=2
    )


@settings(max_examples=60, deadline=None)
@given(
    size=st.floats(1.0, 2.0**34),
    ratio=st.floats(1.0, 4.0),
    group=st.sampled_from([2, 4, 8]),
)
def test_an_all_reduce_never_beats_its_bytes_and_grows_with_them(
    catalog: Catalog, size: float, ratio: float, group: int
) -> None:
    # the fastest protocol is still a collective: never under the bytes one GPU must send at the
    # link's full per-direction bandwidth (the in-switch reduction's once, a ring's 2(g-1)/g
    # times), and a larger buffer never costs less
    fabric = hardware_for(catalog.cluster("dgx-h100", num_nodes=1), "bf16").fabric
    time_s = float(all_reduce_s(fabric, size, group))
    assert time_s >= size / 450e9
    assert float(all_reduce_s(fabric, size * ratio, group)) >= time_s
