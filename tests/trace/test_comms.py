"""Collective sizes and bandwidths (nccl-tests conventions), worked out by hand."""

from __future__ import annotations

import math
from typing import Any

import pytest

from lightspeed.errors import UserInputError
from lightspeed.trace import collectives, load_trace
from lightspeed.trace.comms import collective_kind


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("allreduce", "all_reduce"),
        ("nccl:all_reduce", "all_reduce"),
        ("nccl:_all_gather_base", "all_gather"),
        ("_reduce_scatter_base", "reduce_scatter"),
        ("nccl:all_to_all", "all_to_all"),
        ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", "all_reduce"),
        ("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL", "reduce_scatter"),
        ("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t", "send_recv"),
        ("ncclKernel_Broadcast_RING_LL_Sum_int8_t", "broadcast"),
    ],
)
def test_collective_names(name: str, kind: str) -> None:
    found = collective_kind(name)
    assert found is not None
    assert found.name == kind


def test_busbw_factors_of_nccl_tests() -> None:
    # nccl-tests PERFORMANCE.md: all_reduce 2(n-1)/n, all_gather (n-1)/n, broadcast 1
    assert collective_kind("allreduce").factor(8) == pytest.approx(1.75)
    assert collective_kind("allgather").factor(8) == pytest.approx(0.875)
    assert collective_kind("broadcast").factor(8) == 1.0


def _trace(kineto: Any) -> dict[str, Any]:
    k = kineto
    all_gather = k.kernel(
        "ncclDevKernel_AllGather_RING_LL",
        0,
        10,
        stream=30,
        **{
            "Collective name": "allgather",
            "In msg nelems": 1000,
            "Out msg nelems": 8000,
            "Group size": 8,
            "dtype": "BFloat16",
        },
    )
    annotation = k.cpu_op(
        "nccl:all_reduce", 100, 50, **{"Input Dims": [[1024, 1024]], "Input type": ["c10::BFloat16"]}
    )
    annotation["cat"] = "user_annotation"
    events = [
        all_gather,
        annotation,
        k.launch(110, 2, 9),  # inside the annotation, same thread
        k.kernel("ncclKernel_AllReduce_RING_LL_Sum_bf16", 120, 100, correlation=9, stream=30),
        k.kernel("ncclKernel_Broadcast_RING_LL_Sum_int8_t", 300, 4, stream=30),  # no size anywhere
    ]
    return k.document(events, world_size=4)


def test_collectives_by_hand(write_trace: Any, kineto: Any) -> None:
    report = collectives(load_trace(write_trace("rank-0.json", _trace(kineto))))
    calls = {c.collective: c for c in report.calls}
    gather = calls["all_gather"]
    # S = whole output = 8000 bf16 = 16000 B in 10 us: algbw 1.6 GB/s, busbw x 7/8
    assert gather.size_bytes == 16000
    assert gather.algbw_bytes_per_s == pytest.approx(1.6e9)
    assert gather.busbw_bytes_per_s == pytest.approx(1.4e9)
    # H100 SXM: 18 NVLink-4 links x 25 GB/s per direction = 450 GB/s
    assert gather.sol_bytes_per_s == pytest.approx(450e9)
    assert gather.busbw_sol_pct == pytest.approx(100 * 1.4e9 / 450e9)
    assert gather.size_source == "kernel args"
    reduce = calls["all_reduce"]
    # 1024 x 1024 bf16 = 2 MiB from the nccl:all_reduce annotation; group = world size 4 (noted)
    assert reduce.size_bytes == 2 * 1024 * 1024
    assert reduce.size_source == "annotation"
    assert reduce.group_size == 4
    assert reduce.busbw_bytes_per_s == pytest.approx(2 * 1024 * 1024 / 100e-6 * 2 * 3 / 4)
    assert any("assumed the world size (4)" in note for note in report.notes)
    broadcast = calls["broadcast"]
    assert math.isnan(broadcast.size_bytes)
    assert broadcast.size_source == "kernel name"
    assert report.partial  # one collective without a size
    assert "h100-sxm scale-up: 18 x nvlink-4" in report.sol_source


def test_link_bandwidth_override(write_trace: Any, kineto: Any) -> None:
    trace = load_trace(write_trace("rank-0.json", _trace(kineto)))
    report = collectives(trace, link_bandwidth_bytes_per_s=50e9)
    gather = next(c for c in report.calls if c.collective == "all_gather")
    assert gather.busbw_sol_pct == pytest.approx(100 * 1.4e9 / 50e9)
    assert report.sol_source.startswith("given: 50 GB/s")
    with pytest.raises(UserInputError):
        collectives(trace, link_bandwidth_bytes_per_s=0)


def test_unknown_device_has_no_sol(write_trace: Any, kineto: Any) -> None:
    content = _trace(kineto)
    content["deviceProperties"][0]["name"] = "Mystery GPU"
    report = collectives(load_trace(write_trace("rank-0.json", content)))
    assert all(math.isnan(c.sol_bytes_per_s) for c in report.calls)
    assert any("no SOL for Mystery GPU" in note for note in report.notes)


def test_groups_collect_calls_of_one_size(write_trace: Any, kineto: Any) -> None:
    report = collectives(load_trace(write_trace("rank-0.json", _trace(kineto))))
    assert sum(g.count for g in report.groups) == len(report.calls) == 3
    # the longest total first: the 100 us all_reduce
    assert report.groups[0].collective == "all_reduce"


def test_group_bandwidths_follow_the_size_and_median_time_shown(write_trace: Any, kineto: Any) -> None:
    def gather(start_us: float, duration_us: float) -> dict[str, Any]:
        args = {"Collective name": "allgather", "In msg nelems": 1000, "Out msg nelems": 8000}
        return kineto.kernel(
            "ncclDevKernel_AllGather_RING_LL",
            start_us,
            duration_us,
            stream=30,
            **args,
            **{"Group size": 8, "dtype": "BFloat16"},
        )

    content = kineto.document([gather(0, 10), gather(100, 30)], world_size=8)
    report = collectives(load_trace(write_trace("rank-0.json", content)))
    (group,) = report.groups
    # S = 8000 bf16 = 16000 B; calls of 10 us and 30 us: median time 20 us
    assert group.median_duration_s == pytest.approx(20e-6)
    # algbw = 16000 B / 20 us = 0.8 GB/s (the median of the per-call rates, 1.6 and 0.533 GB/s,
    # would be 1.067 GB/s: not what size / median time shows)
    assert group.median_algbw_bytes_per_s == pytest.approx(0.8e9)
    # busbw = algbw x (n-1)/n = 0.8 x 7/8 = 0.7 GB/s; H100 SXM SOL 450 GB/s
    assert group.median_busbw_bytes_per_s == pytest.approx(0.7e9)
    assert group.busbw_sol_pct == pytest.approx(100 * 0.7e9 / 450e9)
