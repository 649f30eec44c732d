"""Round 16 fixes of the trace analyses, worked out by hand.

- comms: an all-gather's / reduce-scatter's group size from the element counts of the
  ``c10d::_allgather_base_`` / ``c10d::_reduce_scatter_base_`` op around an older PyTorch's
  ``nccl:*`` annotation (output / input), not the world size.
- stragglers: an all-to-all whose ranks' sizes are more than 1000x apart is two calls paired by
  their order, left out with a note giving the ratio.
- --device: refused for a trace that names a GPU of another vendor or architecture.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from lightspeed.errors import UserInputError
from lightspeed.trace import breakdown, collectives, lateness, load_trace, stragglers
from lightspeed.trace.model import Trace
from lightspeed.trace.table import NO_VALUE, CollectiveArgs

ALL_GATHER_OP = "c10d::_allgather_base_"
REDUCE_SCATTER_OP = "c10d::_reduce_scatter_base_"
# (op, output elements, input elements, element type, bytes per element): Input Dims of these ops
# are [[output], [input], []]
OPS = ((ALL_GATHER_OP, 8000, 1000, "signed char", 1.0), (REDUCE_SCATTER_OP, 500, 2000, "float", 4.0))
SEND_RECV = "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t"


def _annotated(
    k: Any, op: str, start: float, *, output: int, given: int, dtype: str, correlation: int
) -> list[Any]:
    """An older PyTorch's call: the c10d op (Input Dims [[output], [input], []]), inside it the
    nccl:* annotation (the input's dims only), inside that the launch."""
    name = "nccl:_all_gather_base" if op == ALL_GATHER_OP else "nccl:_reduce_scatter_base"
    annotation = k.cpu_op(name, start + 5, 50, **{"Input Dims": [[given]], "Input type": [dtype]})
    annotation["cat"] = "user_annotation"
    return [
        k.cpu_op(op, start, 60, **{"Input Dims": [[output], [given], []], "Input type": [dtype, dtype, ""]}),
        annotation,
        k.launch(start + 10, 2, correlation),
    ]


def _base_ops_trace(k: Any) -> dict[str, Any]:
    events = [
        *_annotated(k, ALL_GATHER_OP, 100, output=8000, given=1000, dtype="signed char", correlation=9),
        k.kernel("ncclKernel_AllGather_RING_LL_Sum_int8_t", 120, 10, correlation=9, stream=30),
        *_annotated(k, REDUCE_SCATTER_OP, 300, output=500, given=2000, dtype="float", correlation=11),
        k.kernel("ncclKernel_ReduceScatter_RING_LL_Sum_float", 320, 20, correlation=11, stream=30),
    ]
    return k.document(events, world_size=16)


def _with_op_rows(trace: Trace) -> Trace:
    """``trace`` with the c10d ops' rows in its collective args, as the loader keeps them after the
    kineto_table edit (in: the input's elements, out: the output's, no group size)."""
    rank = trace.ranks[0]
    table = rank.events
    args = table.collectives
    names = [table.names[int(i)] for i in table.name_id]
    rows = [(names.index(op), op, given, output, size) for op, output, given, _, size in OPS]
    joined = CollectiveArgs(
        event_index=np.concatenate([args.event_index, [r[0] for r in rows]]).astype(np.int64),
        collective=(*args.collective, *(r[1] for r in rows)),
        in_elements=np.concatenate([args.in_elements, [r[2] for r in rows]]).astype(np.int64),
        out_elements=np.concatenate([args.out_elements, [r[3] for r in rows]]).astype(np.int64),
        group_size=np.concatenate([args.group_size, [NO_VALUE] * len(rows)]).astype(np.int64),
        element_bytes=np.concatenate([args.element_bytes, [r[4] for r in rows]]).astype(np.float64),
    )
    events = dataclasses.replace(table, collectives=joined)
    return dataclasses.replace(trace, ranks=(dataclasses.replace(rank, events=events),))


def _check_base_op_groups(report: Any) -> None:
    calls = {call.collective: call for call in report.calls}
    gather, scatter = calls["all_gather"], calls["reduce_scatter"]
    # all_gather: output 8000 x 1 B over input 1000 -> 8 ranks, not the world size 16;
    # S = the whole output, 8000 B, in 10 us: algbw 0.8 GB/s, busbw x 7/8 = 0.7 GB/s
    assert gather.group_size == 8
    assert gather.size_bytes == 8000
    assert gather.algbw_bytes_per_s == pytest.approx(0.8e9)
    assert gather.busbw_bytes_per_s == pytest.approx(0.7e9)
    assert gather.size_source == f"annotation, output from {ALL_GATHER_OP}"
    # reduce_scatter: input 2000 over output 500 -> 4 ranks; S = input 2000 x 4 B = 8000 B in 20 us:
    # algbw 0.4 GB/s, busbw x 3/4 = 0.3 GB/s
    assert scatter.group_size == 4
    assert scatter.size_bytes == 8000
    assert scatter.busbw_bytes_per_s == pytest.approx(0.3e9)
    assert not any("assumed the world size" in note for note in report.notes)
    assert any(
        "all_gather group size not in the trace; taken as its output / input" in n for n in report.notes
    )
    assert any(
        "reduce_scatter group size not in the trace; taken as its input / output" in n for n in report.notes
    )


def test_group_size_from_the_c10d_base_op_around_the_annotation(write_trace: Any, kineto: Any) -> None:
    trace = load_trace(write_trace("rank-0.json", _base_ops_trace(kineto)), cache=False)
    _check_base_op_groups(collectives(_with_op_rows(trace)))


def test_group_size_from_the_c10d_base_op_end_to_end(write_trace: Any, kineto: Any) -> None:
    trace = load_trace(write_trace("rank-0.json", _base_ops_trace(kineto)), cache=False)
    _check_base_op_groups(collectives(trace))


def test_an_annotation_alone_still_takes_the_world_size(write_trace: Any, kineto: Any) -> None:
    # no c10d op around it: the output is unknown, so the group is the world size (noted)
    annotation = kineto.cpu_op(
        "nccl:_all_gather_base", 100, 50, **{"Input Dims": [[1000]], "Input type": ["signed char"]}
    )
    annotation["cat"] = "user_annotation"
    events = [
        annotation,
        kineto.launch(110, 2, 9),
        kineto.kernel("ncclKernel_AllGather_RING_LL_Sum_int8_t", 120, 10, correlation=9, stream=30),
    ]
    report = collectives(load_trace(write_trace("rank-0.json", kineto.document(events, world_size=16))))
    (call,) = report.calls
    assert call.group_size == 16
    assert call.size_bytes == 16 * 1000  # S = input x group
    assert any("assumed the world size (16)" in note for note in report.notes)


# -- stragglers: all-to-alls too far apart to be one call -------------------------------------


def _all_to_all_rank(k: Any, rank: int, calls: list[tuple[int, float]]) -> dict[str, Any]:
    """One rank's step 1 with an all_to_all per (bytes, duration us), sizes from nccl:all_to_all."""
    events = [k.step(1, 0, 1000), k.step(2, 1000, 1000)]
    for index, (size, duration) in enumerate(calls):
        annotation = k.cpu_op(
            "nccl:all_to_all", 10 + 10 * index, 5, **{"Input Dims": [[size]], "Input type": ["unsigned char"]}
        )
        annotation["cat"] = "user_annotation"
        events += [
            annotation,
            k.launch(11 + 10 * index, 1, index + 1),
            k.kernel(
                "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t",
                100 * (index + 1),
                duration,
                correlation=index + 1,
            ),
        ]
    return k.document(events, rank=rank, world_size=2)


def test_an_all_to_all_pair_far_apart_is_left_out(write_trace: Any, kineto: Any) -> None:
    # first pair: 3,072 B against 339,738,624 B (110,592x, as trace_filter's step 551): two calls,
    # left out. Second pair: 1 MB against 2 MB (2x, an uneven split): kept.
    paths = [
        write_trace("r0.json", _all_to_all_rank(kineto, 0, [(3072, 30), (1_000_000, 100)])),
        write_trace("r1.json", _all_to_all_rank(kineto, 1, [(339_738_624, 60), (2_000_000, 120)])),
    ]
    report = stragglers(load_trace(paths))
    assert 339_738_624 / 3072 > lateness.MAX_UNEVEN_SIZE_RATIO > 2_000_000 / 1_000_000
    assert report.num_matched_collectives == 1
    assert report.num_mismatched_collectives == 1
    assert report.num_uneven_collectives == 1
    # only the second pair counts: rank 0 ran 100 us, rank 1 120 us -> rank 0 is 20 us late
    late = {row.rank: row.lateness_s for row in report.steps}
    assert late == {0: pytest.approx(20e-6), 1: pytest.approx(0.0)}
    (note,) = [n for n in report.notes if "apart" in n]
    assert "more than 1000x apart" in note
    assert "rank 0 3,072 B, rank 1 339,738,624 B, 110,592x" in note


# -- --device against the device the trace names ---------------------------------------------


@pytest.mark.parametrize(
    ("named", "device"),
    [
        ("AMD Radeon Graphics", "h100-sxm"),  # HTA's amd_trace: another vendor, not in the catalog
        ("NVIDIA B200", "h100-sxm"),  # a known device of another architecture (Blackwell, Hopper)
        ("AMD Instinct MI300X", "h100-sxm"),
    ],
)
def test_device_of_another_vendor_or_architecture_is_refused(named: str, device: str) -> None:
    with pytest.raises(UserInputError, match=r"^rank-0\.json: the trace names .* drop --device"):
        breakdown.check_device_override("rank-0.json", named, device)


@pytest.mark.parametrize(
    ("named", "device"),
    [
        (None, "h100-sxm"),  # the trace names none: what --device is for
        ("NVIDIA A100-PG509-200", "a100-sxm4-80gb"),  # a name no datasheet prints, same vendor
        ("Mystery Accelerator", "h100-sxm"),  # no vendor to tell
        ("NVIDIA H100 PCIe", "h100-sxm"),  # the same architecture: the user's word wins (noted)
    ],
)
def test_device_for_a_trace_naming_none_or_an_unknown_one_is_kept(named: str | None, device: str) -> None:
    breakdown.check_device_override("rank-0.json", named, device)


def test_trace_summary_refuses_an_h100_for_an_amd_trace(write_trace: Any, kineto: Any, run_cli: Any) -> None:
    events = [kineto.step(1, 0, 100), kineto.launch(10, 1, 1), kineto.kernel("gemm", 20, 10, correlation=1)]
    path = write_trace("rank-0.json", kineto.document(events, device="AMD Radeon Graphics"))
    result = run_cli("trace", "summary", str(path), "--device", "h100", "--no-cache")
    assert result.code == 2
    assert result.err.count("\n") == 1
    assert "the trace names AMD Radeon Graphics" in result.err
