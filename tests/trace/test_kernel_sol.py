"""Kernels against their SOL: ncu's SOLBottleneck rule, ranked findings, FLOP/s against the catalog
and the join with a trace. Expected numbers are worked out in the test from the CSV's printed values,
the rule's thresholds (Nsight Compute rules/SOLBottleneck.py) and the B200 datasheet."""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace

import pytest

from lightspeed.errors import UnknownNameError, UserInputError
from lightspeed.tour.render import SAMPLE_NCU_CSV
from lightspeed.trace import (
    classify_bound,
    kernel_report,
    load_trace,
    parse_gemm_shape,
    read_ncu,
)

NCU_CSV = SAMPLE_NCU_CSV  # real ncu output shipped with the tour (superbenchmark, MIT)
CUTLASS = "cutlass3x_sm100_tensorop_s64x256x32gemm_f8_f8_f32_f16_f16_64x256x128_1x1x1_0_tnn_align4_1sm_bias_f16_relu_aux_scalemax"  # noqa: E501
OTHER = "void other_kernel<float>(float*, int)"


@pytest.mark.parametrize(
    ("compute", "memory", "waves", "bound"),
    [
        (23.59, 21.68, 1.89, "latency"),  # both < 60
        (59.9, 10.0, 2.0, "latency"),
        (60.0, 10.0, 2.0, "compute"),  # 60 <= compute < 80 and 50 points ahead (>= 10)
        (62.0, 75.0, 2.0, "memory"),
        (70.0, 65.0, 2.0, "balanced"),  # within 10 points
        (70.0, 60.0, 2.0, "compute"),  # exactly 10 apart: no longer balanced
        (80.0, 79.0, 2.0, "compute"),  # one at 80 or more: the larger bounds it
        (81.0, 95.0, 2.0, "memory"),
    ],
)
def test_bound_follows_ncus_rule(compute: float, memory: float, waves: float, bound: str) -> None:
    assert classify_bound(compute, memory, waves_per_sm=waves)[0] == bound


def test_a_small_grid_is_named_in_the_latency_reason() -> None:
    bound, reason = classify_bound(10.0, 5.0, waves_per_sm=0.5)
    assert bound == "latency"
    assert "0.50 waves" in reason
    assert classify_bound(math.nan, 5.0)[0] == "unknown"


def test_the_fp8_gemm_is_latency_bound_with_findings_ranked() -> None:
    report = kernel_report(read_ncu(NCU_CSV))
    [kernel] = report.kernels
    assert (kernel.compute_throughput_pct, kernel.memory_throughput_pct) == (23.59, 21.68)
    assert kernel.bound == "latency"
    assert kernel.headroom_pct == pytest.approx(100.0 - 23.59)
    assert kernel.occupancy_limiters == ("registers", "shared memory")
    # shared memory per block = static 0 + dynamic 205,696 + driver 1,024 bytes
    assert kernel.shared_memory_per_block_bytes == 206_720
    # runtime (global) estimates by size, then the local one, then findings without an estimate
    assert [(f.rule, f.estimated_speedup_pct) for f in kernel.findings[:6]] == [
        ("LaunchConfiguration", 50.0),
        ("WorkloadImbalance", 14.55),
        ("WorkloadImbalance", 6.24),
        ("WorkloadImbalance", 5.818),
        ("WorkloadImbalance", 5.818),
        ("TheoreticalOccupancy", 81.25),
    ]
    assert kernel.findings[5].speedup_type == "local"
    assert {f.rule for f in kernel.findings[6:]} == {"SOLBottleneck", "LaunchConfiguration"}
    assert "partial wave" in kernel.findings[0].description
    assert report.accelerator is None  # the details page names no device
    assert any("pass --device" in note for note in report.notes)


def test_gemm_shape_gives_flop_per_s_against_the_b200_peak() -> None:
    report = kernel_report(read_ncu(NCU_CSV), device="b200", gemm_shapes=[parse_gemm_shape("2208x2048x5608")])
    [kernel] = report.kernels
    flop = 2 * 2208 * 2048 * 5608  # 50,718,572,544
    assert kernel.flop == flop
    assert kernel.precision == "fp8"  # the kernel's name takes f8 inputs
    assert kernel.achieved_flop_per_s == pytest.approx(flop / 406.24e-6)  # 124.8 TFLOP/s
    # NVIDIA Blackwell datasheet, HGX B200: FP8 9 PFLOPS with sparsity, 4.5 dense
    assert kernel.peak_flop_per_s == 4.5e15
    assert kernel.sol_flop_pct == pytest.approx(100 * flop / 406.24e-6 / 4.5e15)
    # ncu profiled at 1,239,496,049.13 Hz; the catalog's boost clock is 1,965 MHz
    assert kernel.peak_at_profiled_clock_flop_per_s == pytest.approx(4.5e15 * 1239496049.13 / 1.965e9)
    assert any("152 SMs" in note and "148" in note for note in report.notes)


def test_gemm_shapes_and_devices_are_checked() -> None:
    ncu = read_ncu(NCU_CSV)
    with pytest.raises(UserInputError, match="is not MxNxK"):
        parse_gemm_shape("2208x2048")
    with pytest.raises(UserInputError, match="between 1 and"):
        parse_gemm_shape("0x2048x5608")
    with pytest.raises(UserInputError, match="no kernel name holds 'nope'"):
        kernel_report(ncu, gemm_shapes=[parse_gemm_shape("nope=1x2x3")])
    with pytest.raises(UnknownNameError):
        kernel_report(ncu, device="b2000")
    with pytest.raises(UserInputError, match="unknown precision"):
        kernel_report(ncu, precision="fp7")


def _two_kernels(tmp_path: Path) -> Path:
    """The real CSV plus a second kernel: its rows copied with ID 1, another name, 85% compute, 900 us."""
    original = NCU_CSV.read_text(encoding="utf-8")
    lines = original.splitlines()
    copied = [
        line.replace('"0","371693"', '"1","371693"', 1)
        .replace(f'"{CUTLASS}"', f'"{OTHER}"')
        .replace('"Compute (SM) Throughput","%","23.59"', '"Compute (SM) Throughput","%","85.00"')
        .replace('"Duration","ns","406240"', '"Duration","ns","900000"')
        for line in lines[1:]
    ]
    path = tmp_path / "two.csv"
    path.write_text("\n".join([*lines, *copied]) + "\n", encoding="utf-8")
    return path


def test_without_a_trace_kernels_rank_by_ncu_time(tmp_path: Path) -> None:
    report = kernel_report(read_ncu(_two_kernels(tmp_path)))
    assert report.ranked_by == "ncu time"
    assert [k.short_name for k in report.kernels] == ["other_kernel", CUTLASS]
    assert report.kernels[0].bound == "compute"  # 85% >= 80%
    with pytest.raises(UserInputError, match="say which one"):
        kernel_report(read_ncu(_two_kernels(tmp_path)), gemm_shapes=[parse_gemm_shape("1x2x3")])


def test_a_trace_ranks_kernels_by_gpu_time_times_headroom(
    tmp_path: Path, kineto: SimpleNamespace, write_trace
) -> None:  # type: ignore[no-untyped-def]
    # the trace (us): five 2000-us launches of the cutlass GEMM, four 250-us of the other kernel
    events = [kineto.kernel(CUTLASS, 10_000 * i, 2_000) for i in range(5)]
    events += [
        kineto.kernel("void other_kernel<float>(float*, int)", 10_000 * i + 5_000, 250) for i in range(4)
    ]
    events += [kineto.kernel("unprofiled_kernel(int)", 60_000, 700)]
    trace = load_trace(write_trace("rank-0.json", kineto.document(events)))
    report = kernel_report(read_ncu(_two_kernels(tmp_path)), trace=trace)
    assert report.ranked_by == "lever"
    first, second = report.kernels
    assert first.short_name == CUTLASS
    assert (first.trace_count, first.trace_gpu_s) == (5, pytest.approx(10e-3))
    assert first.lever_s == pytest.approx(10e-3 * (100 - 23.59) / 100)  # 7.64 ms
    assert second.lever_s == pytest.approx(1e-3 * (100 - 85.0) / 100)  # 0.15 ms
    assert report.trace_gpu_s == pytest.approx(11.7e-3)
    assert report.matched_trace_gpu_s == pytest.approx(11e-3)
    assert [(k.kernel, k.count) for k in report.unprofiled] == [("unprofiled_kernel(int)", 1)]


def test_trace_and_ncu_names_join_on_the_function_name(
    tmp_path: Path, kineto: SimpleNamespace, write_trace
) -> None:  # type: ignore[no-untyped-def]
    # ncu prints "other_kernel"-style names without namespace or arguments; a trace the full signature
    csv = _two_kernels(tmp_path)
    csv.write_text(csv.read_text().replace(f'"{OTHER}"', '"other_kernel"'))
    trace = load_trace(
        write_trace("t.json", kineto.document([kineto.kernel("void ns::other_kernel<4>(int)", 0, 300)]))
    )
    report = kernel_report(read_ncu(csv), trace=trace)
    other = next(k for k in report.kernels if k.short_name == "other_kernel")
    assert other.trace_gpu_s == pytest.approx(300e-6)


def test_instruction_counts_give_fp32_flop_and_the_device_from_the_raw_page(raw_ncu_csv: Path) -> None:
    report = kernel_report(read_ncu(raw_ncu_csv))
    [kernel] = report.kernels
    assert report.accelerator == "h100-sxm"  # device__attribute_display_name "NVIDIA H100 80GB HBM3"
    assert kernel.num_launches == 2
    assert kernel.duration_s == pytest.approx(12.6e-6)  # median of 12.50 and 12.70 us
    assert kernel.bound == "compute"  # 81.2 and 80.9 % >= 80
    assert (kernel.precision, kernel.precision_source) == ("fp32", "ncu instruction counts")
    flop = 2 * 1_048_576 + 2_048
    assert kernel.flop == flop
    # H100 SXM datasheet: FP32 67 TFLOPS
    assert kernel.peak_flop_per_s == 67e12
    assert kernel.achieved_flop_per_s == pytest.approx(flop / 12.6e-6)


def test_report_json_round_trips(tmp_path: Path) -> None:
    payload = kernel_report(read_ncu(NCU_CSV)).to_dict()
    assert json.loads(json.dumps(payload, allow_nan=False))["kernels"][0]["bound"] == "latency"


def test_a_precision_the_kernel_name_contradicts_is_named_and_above_sol_is_flagged() -> None:
    gemm = parse_gemm_shape("2208x2048x5608")
    report = kernel_report(read_ncu(NCU_CSV), device="b200", gemm_shapes=[gemm], precision="fp64")
    [kernel] = report.kernels
    assert (kernel.precision, kernel.name_precision) == ("fp64", "fp8")  # the name says f8_f8
    achieved = 2 * 2208 * 2048 * 5608 / 406.24e-6  # 124.85 TFLOP/s
    # B200 datasheet: FP64 37 TFLOPS dense -> 337.4 %; at ncu's 1.2395 GHz of 1.965: 23.34 TFLOP/s -> 534.9 %
    assert kernel.sol_flop_pct == pytest.approx(100 * achieved / 37e12)
    assert kernel.sol_at_profiled_clock_pct == pytest.approx(
        100 * achieved / (37e12 * 1239496049.13 / 1.965e9)
    )
    assert kernel.above_sol
    assert any("its name says fp8" in note and "--precision fp8" in note for note in report.notes)
    assert any("337% of the fp64 peak (535% of it at ncu's clock)" in note for note in report.notes)


def test_a_kernel_below_its_sol_is_not_flagged() -> None:
    gemm = parse_gemm_shape("2208x2048x5608")
    report = kernel_report(read_ncu(NCU_CSV), device="b200", gemm_shapes=[gemm])
    [kernel] = report.kernels
    # 124.85 TFLOP/s of FP8's 4.5 PFLOP/s: 2.8 %; 4.4 % at ncu's clock
    assert (kernel.precision, kernel.name_precision, kernel.above_sol) == ("fp8", "fp8", False)
    assert not any("above the SOL" in note or "its name says" in note for note in report.notes)
