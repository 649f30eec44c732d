"""Nsight Compute ``--csv`` output into records. Expected values are read by hand from the
CSV (quoted in the comments) or follow from text transformations written in the test."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lightspeed.errors import TraceError
from lightspeed.tour.render import SAMPLE_NCU_CSV
from lightspeed.trace import read_ncu
from lightspeed.trace.io.ncu_csv import parse_number

NCU_CSV = SAMPLE_NCU_CSV  # real ncu output shipped with the tour (superbenchmark, MIT)
KERNEL = (
    "cutlass3x_sm100_tensorop_s64x256x32gemm_f8_f8_f32_f16_f16_64x256x128_1x1x1_0_tnn_align4_1sm_bias_"
    "f16_relu_aux_scalemax"
)


def test_the_shipped_copy_is_the_shared_file(shared: Path) -> None:
    assert (shared / "data" / "nsight" / "ncu" / NCU_CSV.name).read_bytes() == NCU_CSV.read_bytes()


def test_speed_of_light_section_as_printed() -> None:
    launch = read_ncu(NCU_CSV).launches[0]
    assert launch.kernel == KERNEL
    assert (launch.launch_id, launch.process_id, launch.compute_capability) == (0, 371693, "10.0")
    sol = launch.sol
    # "Duration","ns","406240"; "Compute (SM) Throughput","%","23.59"; "Memory Throughput","%","21.68"
    assert sol.duration_s == pytest.approx(406240e-9, rel=1e-15)
    assert (sol.compute_throughput_pct, sol.memory_throughput_pct) == (23.59, 21.68)
    # "DRAM Throughput" 0.74, "L1/TEX Cache Throughput" 23.23, "L2 Cache Throughput" 15.12
    assert (sol.dram_throughput_pct, sol.l1tex_throughput_pct, sol.l2_throughput_pct) == (0.74, 23.23, 15.12)
    # "SM Frequency","hz","1239496049.13"; "Elapsed Cycles","cycle","508757"
    assert (sol.sm_frequency_hz, sol.elapsed_cycles) == (1239496049.13, 508757.0)


def test_launch_statistics_and_occupancy() -> None:
    launch = read_ncu(NCU_CSV).launches[0]
    config = launch.launch
    # "Block Size" (384, 1, 1), "Grid Size" (9, 32, 1) = 288 blocks; "Waves Per SM" 1.89
    assert (config.block, config.grid, config.grid_size, config.block_size) == (
        (384, 1, 1),
        (9, 32, 1),
        288,
        384,
    )
    assert (config.waves_per_sm, config.registers_per_thread, config.num_sms) == (1.89, 168, 152)
    # "Dynamic Shared Memory Per Block","byte/block","205696"; driver 1024; static 0
    assert config.dynamic_shared_memory_per_block_bytes == 205696
    assert config.driver_shared_memory_per_block_bytes == 1024
    assert config.static_shared_memory_per_block_bytes == 0
    occupancy = launch.occupancy
    assert (occupancy.theoretical_pct, occupancy.achieved_pct) == (18.75, 15.53)
    # Block Limit Registers 1, Shared Mem 1, Warps 5, SM 32, Barriers 9: registers and shared memory cap it
    assert occupancy.limiters == ("registers", "shared memory")


def test_rule_findings_with_their_estimated_speedups() -> None:
    rules = read_ncu(NCU_CSV).launches[0].rules
    assert [
        (r.rule, r.speedup_type, r.estimated_speedup_pct)
        for r in rules
        if math.isfinite(r.estimated_speedup_pct)
    ] == [
        ("LaunchConfiguration", "global", 50.0),
        ("TheoreticalOccupancy", "local", 81.25),
        ("WorkloadImbalance", "global", 5.818),
        ("WorkloadImbalance", "global", 6.24),
        ("WorkloadImbalance", "global", 5.818),
        ("WorkloadImbalance", "global", 14.55),
    ]
    tail = next(r for r in rules if r.estimated_speedup_pct == 50.0)
    assert "partial wave of 136 thread blocks" in tail.description
    assert {r.rule for r in rules if not math.isfinite(r.estimated_speedup_pct)} == {
        "SOLBottleneck",
        "LaunchConfiguration",
    }


def _variant(tmp_path: Path, text: str, name: str = "variant.csv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_preamble_program_output_separators_and_scaled_units(tmp_path: Path) -> None:
    original = NCU_CSV.read_text(encoding="utf-8")
    text = (
        "==PROF== Connected to process 371693 (/usr/bin/cublaslt_gemm)\n"
        "cublaslt_gemm: m=2208 n=2048 k=5608\n"
        '==PROF== Profiling "cutlass3x_sm100": 0%....50%....100% - 38 passes\n'
        + original.replace('"Duration","ns","406240"', '"Duration","usecond","406.24"')
        .replace('"Elapsed Cycles","cycle","508757"', '"Elapsed Cycles","cycle","508,757"')
        .replace('"SM Frequency","hz","1239496049.13"', '"SM Frequency","Ghz","1.24"')
        .replace(
            '"Dynamic Shared Memory Per Block","byte/block","205696"',
            '"Dynamic Shared Memory Per Block","Kbyte/block","205.70"',
        )
        .replace('"Threads","thread","110592"', '"Threads","thread","110,592"')
        + "==PROF== Disconnected from process 371693\n"
    )
    report = read_ncu(_variant(tmp_path, text))
    launch = report.launches[0]
    assert launch.sol.duration_s == pytest.approx(406.24e-6, rel=1e-15)
    assert launch.sol.elapsed_cycles == 508757
    assert launch.sol.sm_frequency_hz == pytest.approx(1.24e9)
    assert launch.launch.dynamic_shared_memory_per_block_bytes == pytest.approx(
        205700.0
    )  # Kbyte = 1000 bytes
    assert launch.launch.num_threads == 110592
    assert report.notes == ("4 lines that are not CSV rows (ncu messages, program output) skipped",)


def test_raw_page(raw_ncu_csv: Path) -> None:
    report = read_ncu(raw_ncu_csv)
    assert report.page == "raw"
    assert [launch.launch_id for launch in report.launches] == [0, 1]
    first = report.launches[0]
    assert first.device_name == "NVIDIA H100 80GB HBM3"
    assert first.sol.duration_s == pytest.approx(12.5e-6)
    assert (first.sol.compute_throughput_pct, first.sol.memory_throughput_pct) == (81.2, 12.03)
    assert first.launch.waves_per_sm == 3.88
    # FLOP = 2 x FFMA + FADD + FMUL = 2 x 1,048,576 + 2,048 + 0
    assert first.flop_by_precision == {"fp32": 2 * 1_048_576 + 2_048}
    assert first.rules == ()
    assert "raw page: no rule findings" in report.notes[-1]


@pytest.mark.parametrize(
    ("mangle", "message"),
    [
        (lambda text: text[: len(text) // 2], "truncated"),
        (lambda text: text.replace('"DRAM Frequency","hz",', "", 1), "does not match the header"),
        (lambda text: text.splitlines()[0] + "\n", "no kernel launches"),
        (lambda text: "hello\nworld\n", "no Nsight Compute CSV header"),
        (
            lambda text: text.replace('"0","371693"', '"x","371693"', 1),
            "ID of a kernel launch is not a number",
        ),
        # impossible values were accepted: 250% of peak, a negative throughput or duration
        (
            lambda text: text.replace(
                '"Compute (SM) Throughput","%","23.59"', '"Compute (SM) Throughput","%","250"'
            ),
            r"launch ID 0: Compute \(SM\) Throughput = 250 % is outside 0% to 100% of peak",
        ),
        (
            lambda text: text.replace('"Memory Throughput","%","21.68"', '"Memory Throughput","%","-21.68"'),
            r"Memory Throughput = -21.68 % is outside",
        ),
        (
            lambda text: text.replace('"Duration","ns","406240"', '"Duration","ns","-406240"'),
            r"variant.csv:\d+: kernel launch ID 0: Duration = -406240 ns is outside 0 or more",
        ),
    ],
)
def test_malformed_csv_is_one_clear_error(tmp_path: Path, mangle, message: str) -> None:  # type: ignore[no-untyped-def]
    path = _variant(tmp_path, mangle(NCU_CSV.read_text(encoding="utf-8")))
    with pytest.raises(TraceError, match=message):
        read_ncu(path)


def test_not_utf8_and_too_large(tmp_path: Path) -> None:
    binary = tmp_path / "b.csv"
    binary.write_bytes(b'"ID","Process ID"\n\xff\xfe')
    with pytest.raises(TraceError, match="not UTF-8"):
        read_ncu(binary)
    with pytest.raises(TraceError, match="over the"):
        read_ncu(NCU_CSV, max_bytes=1000)


@given(st.integers(min_value=0, max_value=10**15), st.integers(min_value=0, max_value=99))
def test_thousands_separators_parse_back(whole: int, cents: int) -> None:
    assert parse_number(f"{whole:,}") == whole
    assert parse_number(f"{whole:,}.{cents:02d}") == pytest.approx(whole + cents / 100, rel=1e-15)
    assert parse_number("n/a") is None
    assert parse_number("1,5") is None  # not ncu's format: a decimal comma is not read as 15
