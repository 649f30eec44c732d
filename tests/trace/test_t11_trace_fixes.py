"""Trace defects of round 11, each worked out by hand: cut-offs compared in whole nanoseconds,
straggler matches checked by size, collectives across NVLink domains, the summary's SOL flagged
above the peak and named by precision (and shown in the HTML report), several devices in one
file, labels, and whole-number floats in the trace's metadata."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from expect import one_line_error
from lightspeed.errors import TraceError
from lightspeed.report.trace import trace_section
from lightspeed.trace import collectives, launch_stats, load_trace, stragglers, summarize
from lightspeed.units import parse_duration

A100_NAME = "NVIDIA A100-SXM4-80GB"


# --- 1: the same cut-off written two ways counts the same events -------------------------------


def _launches(kineto: Any) -> dict[str, Any]:
    k = kineto
    events = [
        k.launch(0, 50, 1),  # runtime exactly 50 us: not over a 50 us cut-off
        k.kernel("gemm", 150, 10, correlation=1),  # delay 150 - 50 = exactly 100 us; GPU exactly 10 us
        k.launch(300, 51, 2),  # runtime 51 us: over
        k.kernel("gemm", 452, 9, correlation=2),  # delay 452 - 351 = 101 us: over; 9 us: short
    ]
    return k.document(events)


@pytest.mark.parametrize("written", ["100us", "0.1ms", "1e-4"])
def test_delay_cutoff_is_the_same_however_written(write_trace: Any, kineto: Any, written: str) -> None:
    # parse_duration("100us") is 9.999999999999999e-05 s, one float step under 1e-4: compared as
    # floats it counted the delay of exactly 100 us as over the cut-off
    trace = load_trace(write_trace("rank-0.json", _launches(kineto)))
    report = launch_stats(
        trace,
        launch_delay_cutoff_s=parse_duration(written),
        runtime_cutoff_s=parse_duration("50us"),
        short_kernel_s=parse_duration("10us"),
    )
    (stats,) = report.ranks
    assert stats.num_launch_delay_over_cutoff == 1  # only the 101 us delay is strictly over 100 us
    assert stats.num_runtime_over_cutoff == 1  # only the 51 us call is strictly over 50 us
    assert stats.num_short_kernels == 1  # only the 9 us event is strictly under 10 us
    assert report.launch_delay_cutoff_s == 1e-4
    assert report.runtime_cutoff_s == 5e-5
    assert report.short_kernel_s == 1e-5


def test_cli_delay_cutoff_in_us_and_ms_agree(run_cli: Any, write_trace: Any, kineto: Any) -> None:
    path = str(write_trace("rank-0.json", _launches(kineto)))
    counts = []
    for written in ("100us", "0.1ms"):
        result = run_cli("trace", "launch", path, "--delay-cutoff", written, "--json")
        assert result.code == 0, result.err
        payload = json.loads(result.out)
        assert payload["launch_delay_cutoff_s"] == 1e-4
        counts.append(payload["ranks"][0]["num_launch_delay_over_cutoff"])
    assert counts == [1, 1]


# --- 2: stragglers check the sizes of what they match --------------------------------------------


def _collective(kineto: Any, name: str, ts: float, dur: float, correlation: int, **args: Any) -> list[Any]:
    k = kineto
    return [k.launch(ts - 5, 1, correlation), k.kernel(name, ts, dur, correlation=correlation, **args)]


def _straggler_rank(kineto: Any, rank: int, second_all_reduce: int, all_to_all: int) -> dict[str, Any]:
    k = kineto

    def params(collective: str, elements: int) -> dict[str, Any]:
        return {
            "Collective name": collective,
            "In msg nelems": elements,
            "Out msg nelems": elements,
            "Group size": 2,
            "dtype": "Float",
        }

    durations = {0: (10, 30, 40), 1: (4, 5, 25)}[rank]
    events = [k.step(1, 0, 1000)]
    events += _collective(kineto, "ncclKernel_AllReduce", 100, durations[0], 1, **params("allreduce", 1000))
    events += _collective(
        kineto, "ncclKernel_AllReduce", 200, durations[1], 2, **params("allreduce", second_all_reduce)
    )
    events += _collective(
        kineto, "ncclKernel_SendRecv", 300, durations[2], 3, **params("alltoall", all_to_all)
    )
    return k.document(events, rank=rank, world_size=2)


def test_stragglers_leave_out_matches_of_different_sizes(write_trace: Any, kineto: Any) -> None:
    paths = [
        write_trace("r0.json", _straggler_rank(kineto, 0, second_all_reduce=2000, all_to_all=100)),
        write_trace("r1.json", _straggler_rank(kineto, 1, second_all_reduce=1500, all_to_all=900)),
    ]
    report = stragglers(load_trace(paths))
    # the first all_reduce (1000 elements on both) and the all_to_all (sizes may differ) count; the
    # second all_reduce (8000 B against 6000 B) is not one call on both ranks: left out
    assert report.num_matched_collectives == 2
    assert report.num_mismatched_collectives == 1
    assert report.num_uneven_collectives == 1
    assert report.partial
    late = {row.rank: row for row in report.steps}
    # all_reduce: longest 10 -> rank 0 late 0, rank 1 late 6; all_to_all: longest 40 -> 0, 15
    assert late[0].lateness_s == pytest.approx(0.0)
    assert late[1].lateness_s == pytest.approx(21e-6)  # 6 + 15 us; with the left-out pair: 6 + 25 + 15
    assert late[1].num_collectives == 2
    assert any("not the same call on every rank" in note and "all_reduce" in note for note in report.notes)
    assert any("different sizes" in note and "all_to_all" in note for note in report.notes)


def test_stragglers_of_equal_sizes_have_no_size_note(write_trace: Any, kineto: Any) -> None:
    paths = [
        write_trace("r0.json", _straggler_rank(kineto, 0, second_all_reduce=2000, all_to_all=100)),
        write_trace("r1.json", _straggler_rank(kineto, 1, second_all_reduce=2000, all_to_all=100)),
    ]
    report = stragglers(load_trace(paths))
    assert report.num_matched_collectives == 3
    assert report.num_mismatched_collectives == report.num_uneven_collectives == 0
    assert not any("size" in note for note in report.notes)


def test_stragglers_in_parallel_check_sizes_too(write_trace: Any, kineto: Any) -> None:
    from lightspeed.trace import stragglers_ranks

    paths = [
        write_trace("r0.json", _straggler_rank(kineto, 0, second_all_reduce=2000, all_to_all=100)),
        write_trace("r1.json", _straggler_rank(kineto, 1, second_all_reduce=1500, all_to_all=900)),
    ]
    report = stragglers_ranks(paths, jobs=2)
    assert (report.num_matched_collectives, report.num_mismatched_collectives) == (2, 1)


# --- 3: a group larger than the NVLink domain is compared with the NICs ---------------------------

IB_HDR_BYTES_PER_S = 200e9 / 8  # HDR InfiniBand: 200 Gb/s per direction
NVLINK3_BYTES_PER_S = 12 * 25e9  # A100 SXM: 12 NVLink-3 links of 25 GB/s per direction


def _a100_collectives(kineto: Any, group: int) -> dict[str, Any]:
    events = []
    for index, (collective, kernel) in enumerate(
        (
            ("allreduce", "ncclKernel_AllReduce"),
            ("alltoall", "ncclKernel_SendRecv"),
            ("broadcast", "ncclKernel_Broadcast"),
        )
    ):
        events += _collective(
            kineto,
            kernel,
            100 * (index + 1),
            50,
            index + 1,
            **{
                "Collective name": collective,
                "In msg nelems": 1 << 20,
                "Group size": group,
                "dtype": "Float",
            },
        )
    return kineto.document(events, device=A100_NAME)


def test_group_across_nodes_gets_the_nic_bound(write_trace: Any, kineto: Any) -> None:
    report = collectives(load_trace(write_trace("rank-0.json", _a100_collectives(kineto, 128))))
    sol = {call.collective: call.sol_bytes_per_s for call in report.calls}
    # 128 A100s are 16 DGX A100 nodes of 8 (one NVLink domain each), 8 HDR NICs per node.
    # all_reduce, hierarchical: the NICs carry 2(16-1)/16 x S over 8 x 25 GB/s, NVLink 2(8-1)/8 x S
    # over 300 GB/s; the NICs are slower. busbw = 2(128-1)/128 x S / t.
    nic_s = 2 * 15 / 16 / (8 * IB_HDR_BYTES_PER_S)
    assert nic_s > 2 * 7 / 8 / NVLINK3_BYTES_PER_S
    assert sol["all_reduce"] == pytest.approx(2 * 127 / 128 / nic_s)  # 211.7 GB/s
    # all_to_all: each rank sends (128-8)/128 of its buffer off the node on its own NIC;
    # busbw = (128-1)/128 x S / t
    assert sol["all_to_all"] == pytest.approx((127 / 128) / ((120 / 128) / IB_HDR_BYTES_PER_S))  # 26.5 GB/s
    assert math.isnan(sol["broadcast"])  # no model across nodes: no SOL rather than NVLink's
    assert any("groups of 128 ranks cross the 8-GPU scale-up domain of dgx-a100" in n for n in report.notes)
    assert any("broadcast over 128 ranks" in n and "--link" in n for n in report.notes)
    assert "over 128 ranks (collective model, 16 x dgx-a100, 8 x ib-hdr per node)" in report.sol_source
    assert "all_reduce 211.7 GB/s" in report.sol_source


def test_group_inside_one_node_keeps_the_nvlink_sol(write_trace: Any, kineto: Any) -> None:
    report = collectives(load_trace(write_trace("rank-0.json", _a100_collectives(kineto, 8))))
    assert [call.sol_bytes_per_s for call in report.calls] == pytest.approx([NVLINK3_BYTES_PER_S] * 3)
    assert not any("cross" in note for note in report.notes)


def test_given_link_is_the_sol_of_every_group(write_trace: Any, kineto: Any) -> None:
    trace = load_trace(write_trace("rank-0.json", _a100_collectives(kineto, 128)))
    report = collectives(trace, link_bandwidth_bytes_per_s=50e9)
    assert {call.sol_bytes_per_s for call in report.calls} == {50e9}


def test_group_across_nodes_in_parallel(write_trace: Any, kineto: Any) -> None:
    from lightspeed.trace import collectives_ranks

    paths = [write_trace("rank-0.json", _a100_collectives(kineto, 128))]
    report = collectives_ranks(paths, jobs=2)
    sol = {call.collective: call.sol_bytes_per_s for call in report.calls}
    assert sol["all_reduce"] == pytest.approx(2 * 127 / 128 / (2 * 15 / 16 / (8 * IB_HDR_BYTES_PER_S)))
    assert any("cross the 8-GPU scale-up domain" in n for n in report.notes)


# --- 4 and 5: the summary's SOL: above the peak flagged, its precision named, in the report too ---

H100_DENSE_BF16 = 989.5e12  # H100 SXM datasheet: 1979 TFLOP/s bf16 with sparsity, half of it dense


def _flops(kineto: Any, flop: float) -> dict[str, Any]:
    k = kineto
    op = k.cpu_op("aten::mm", 0, 20, flops=flop)
    return k.document([op, k.launch(5, 1, 1), k.kernel("sm90_gemm", 100, 400, correlation=1)])


def test_summary_flags_above_the_peak_and_names_its_precision(
    write_trace: Any, kineto: Any, run_cli: Any
) -> None:
    path = write_trace("rank-0.json", _flops(kineto, 5e11))
    (rank,) = summarize(load_trace(path)).ranks
    achieved = 5e11 / 400e-6  # 1.25 PFLOP/s over the 400 us kernel span
    assert rank.sol_pct == pytest.approx(100 * achieved / H100_DENSE_BF16)  # 126.3%
    assert rank.above_sol
    assert rank.peak_precision == "bf16"
    assert any("above the SOL" in note for note in rank.notes)
    result = run_cli("trace", "summary", str(path), "--json")
    (row,) = json.loads(result.out)
    assert row["sol"]["peak_precision"] == "dense bf16"
    assert row["sol"]["above_sol"] is True
    table = run_cli("trace", "summary", str(path))
    flat = " ".join(table.out.split())
    assert "bf16" in flat  # the cell wraps: its words are checked one by one
    assert "(above" in flat


def test_summary_below_the_peak_is_not_flagged(write_trace: Any, kineto: Any) -> None:
    (rank,) = summarize(load_trace(write_trace("rank-0.json", _flops(kineto, 1e11)))).ranks
    assert rank.sol_pct == pytest.approx(100 * (1e11 / 400e-6) / H100_DENSE_BF16)  # 25.3%
    assert not rank.above_sol
    assert not any("above the SOL" in note for note in rank.notes)


def test_html_trace_table_has_the_events_and_sol_columns(write_trace: Any, kineto: Any) -> None:
    summary = summarize(load_trace(write_trace("rank-0.json", _flops(kineto, 5e11))))
    (table,) = trace_section(summary).tables
    row = dict(zip(table.headers, table.rows[0], strict=True))
    assert row["GPU events"] == "1"
    assert "126.3% of h100-sxm dense bf16 (above SOL)" in row["SOL"]


# --- 6: kernels of several devices in one file ----------------------------------------------------


def test_two_devices_in_one_file_are_noted(write_trace: Any, kineto: Any) -> None:
    k = kineto
    events = [
        k.launch(1, 1, 1),
        k.kernel("gemm_a", 100, 100, correlation=1),
        k.launch(2, 1, 2),
        k.kernel("gemm_b", 300, 100, correlation=2, stream=9, device=1),
    ]
    trace = load_trace(write_trace("rank-0.json", k.document(events)))
    (rank,) = summarize(trace).ranks
    assert any("GPU events on 2 devices (0, 1)" in note for note in rank.notes)
    one = load_trace(write_trace("one.json", k.document(events[:2])))
    assert not any("devices" in note for note in summarize(one).ranks[0].notes)


# --- 7: labels --------------------------------------------------------------------------------------


def test_launch_table_says_gpu_events(run_cli: Any, write_trace: Any, kineto: Any) -> None:
    result = run_cli("trace", "launch", str(write_trace("rank-0.json", _launches(kineto))))
    assert result.code == 0, result.err
    assert "GPU event launches (kernels, copies, memsets)" in result.out
    assert "GPU events < 10 us" in result.out
    assert "Kernel launches" not in result.out
    assert "kernels < 10 us" not in result.out


def test_comms_without_a_device_says_to_pass_one(run_cli: Any, write_trace: Any, kineto: Any) -> None:
    document = _a100_collectives(kineto, 8)
    del document["deviceProperties"]
    result = run_cli("trace", "comms", str(write_trace("rank-0.json", document)))
    assert result.code == 0, result.err
    flat = " ".join(result.out.split())
    assert "the trace names no device: pass --device NAME" in flat
    assert "device not in the catalog" not in flat


# --- 8: whole-number floats in the metadata ---------------------------------------------------------


@pytest.mark.parametrize("at_end", [False, True])
def test_whole_number_float_in_metadata_is_read(write_trace: Any, kineto: Any, at_end: bool) -> None:
    document = _flops(kineto, 1e11)
    document["deviceProperties"] = [{"id": 0.0, "name": kineto.H100_NAME, "totalGlobalMem": 85000000000.0}]
    document["distributedInfo"] = {"rank": 1.0, "world_size": 2.0, "backend": "nccl"}
    document["schemaVersion"] = 1.0
    if at_end:  # the header written after the events (read from the file's tail)
        document = {"traceEvents": document.pop("traceEvents"), **document}
    trace = load_trace(write_trace("trace.json", document))
    (rank,) = trace.ranks
    assert (rank.rank, rank.world_size, rank.device_name) == (1, 2, kineto.H100_NAME)


def test_fraction_in_integer_metadata_is_one_line(write_trace: Any, kineto: Any, run_cli: Any) -> None:
    document = _flops(kineto, 1e11)
    document["deviceProperties"] = [{"id": 0, "name": kineto.H100_NAME, "totalGlobalMem": 85000000000.5}]
    path = write_trace("trace.json", document)
    with pytest.raises(TraceError, match="totalGlobalMem must be a whole number"):
        load_trace(path)
    one_line_error(run_cli("trace", "summary", str(path)), "totalGlobalMem must be a whole number")
