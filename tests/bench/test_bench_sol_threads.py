"""A CPU run is compared with the peak of the cores its threads occupy; results above the SOL and
runs on a busy machine say so."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from lightspeed.bench import BenchDevice, BenchResult, DeviceSol, make_result
from lightspeed.bench import runtime as bench_runtime
from lightspeed.bench.runtime import busy_note, with_load_note
from lightspeed.bench.sol import sol_from_local_cpu
from lightspeed.catalog import LocalCpu, detect_cpu

CPUINFO = Path(__file__).resolve().parents[1] / "catalog" / "fixtures" / "cpuinfo"


def _local_cpu(tmp_path: Path, cpuinfo: str, *, clock_hz: float | None = None) -> LocalCpu:
    """The CPU of a captured /proc/cpuinfo (no /sys topology), as detection reads it."""
    proc = tmp_path / "proc"
    sys_root = tmp_path / "sys"
    proc.mkdir()
    (sys_root / "devices" / "system" / "cpu").mkdir(parents=True)
    shutil.copy(CPUINFO / cpuinfo, proc / "cpuinfo")
    (proc / "meminfo").write_text("MemTotal: 16777216 kB\n", encoding="utf-8")
    return detect_cpu(proc_root=proc, sys_root=sys_root, clock_hz=clock_hz)


def test_one_thread_is_compared_with_one_cores_peak(tmp_path: Path) -> None:
    # The 2-core Zen 4 VM of the expert check: /proc/cpuinfo says 2596.132 MHz, AVX-512 double-pumped:
    # one core = 2.596132 GHz x 1 FMA unit x 16 FP32 lanes x 2 = 83.076224 GFLOP/s (the socket: 2 x that).
    local = _local_cpu(tmp_path, "zen4-vm.cpuinfo")
    one_core_fp32 = 2.596132e9 * 1 * 16 * 2
    sol = sol_from_local_cpu(local, num_threads=1)
    assert sol.compute("fp32")[0] == pytest.approx(one_core_fp32)
    assert sol.compute("fp64")[0] == pytest.approx(one_core_fp32 / 2)  # 8 FP64 lanes
    assert sol.compute_scope == "1 of 2 cores"
    assert "1 of 2 cores (1 thread)" in sol.note
    assert "x 1/2 = 83.08 GFLOP/s FP32" in sol.note
    # memory bandwidth is shared by the cores: 12 channels x 4,800 MT/s x 8 B, not halved, with a note
    assert sol.memory_bandwidth_bytes_per_s == pytest.approx(12 * 4800e6 * 8)
    assert "not scaled by threads" in sol.memory()[1]
    # the clock the peak assumes is named for results that beat it
    assert "2.6 GHz" in sol.above_note
    assert "turbo" in sol.above_note


@pytest.mark.parametrize("num_threads", [2, 4, None])
def test_threads_beyond_the_cores_get_the_whole_socket(tmp_path: Path, num_threads: int | None) -> None:
    local = _local_cpu(tmp_path, "zen4-vm.cpuinfo")
    sol = sol_from_local_cpu(local, num_threads=num_threads)
    # min(threads, 2 cores) = 2: 2 x 2.596132 GHz x 16 lanes x 2
    assert sol.compute("fp32")[0] == pytest.approx(2 * 2.596132e9 * 16 * 2)
    assert sol.compute_scope == "2 of 2 cores"
    assert "not scaled by threads" not in sol.memory()[1]


def test_two_sockets_scale_by_all_their_cores(tmp_path: Path) -> None:
    # Sapphire Rapids fixture: 2 sockets x 2 cores; at 2.0 GHz x 2 FMA x 8 FP64 lanes x 2 = 64 GFLOP/s
    # per core. Three threads occupy 3 of the 4 cores: 3 x 64 = 192 GFLOP/s FP64.
    local = _local_cpu(tmp_path, "sapphire-rapids-2s.cpuinfo", clock_hz=2.0e9)
    sol = sol_from_local_cpu(local, num_threads=3)
    assert sol.compute("fp64")[0] == pytest.approx(3 * 2.0e9 * 2 * 8 * 2)
    assert sol.compute_scope == "3 of 4 cores"


def _gemm(value: float, sol: float | None, *, unit: str = "FLOP/s", note: str = "") -> BenchResult:
    return make_result(
        suite="gemm",
        name="gemm 256x256x256",
        dtype="fp32",
        flop_per_call=2 * 256**3,
        samples=[value],
        unit=unit,
        best="median",
        sol=sol,
        sol_note="",
        correct=True,
        above_sol_note=note,
    )


def test_a_result_above_the_sol_is_flagged_with_its_reason() -> None:
    # the expert check's fp32 point: 178.3 GFLOP/s against the 166.2 GFLOP/s socket peak = 107.3%
    above = _gemm(178.3e9, 166.2e9, note="the peak assumes the 2.6 GHz clock detected")
    assert above.fraction_of_sol == pytest.approx(178.3 / 166.2)
    assert above.above_sol is True
    data = above.to_dict()
    assert data["above_sol"] is True
    assert data["details"]["above_sol_note"] == "above the SOL: the peak assumes the 2.6 GHz clock detected"
    below = _gemm(93.84e9, 166.2e9, note="unused")
    assert below.above_sol is False
    assert below.to_dict()["above_sol"] is False
    assert "above_sol_note" not in below.details
    assert _gemm(1e9, None).to_dict()["above_sol"] is None
    # a latency beats its SOL by being shorter: 2 us against a 3 us floor
    assert _gemm(2e-6, 3e-6, unit="s").above_sol is True


def test_busy_rule_by_hand() -> None:
    # 2 CPUs, 2 threads: no CPU left idle, so more than 0.5 CPU of other load is busy.
    # start 0.3 -> other 0.3; end 2.4 - 2 own threads = 0.4 -> max 0.4 <= 0 + 0.5: quiet.
    assert busy_note(load_start=0.3, load_end=2.4, num_threads=2, num_cpus=2) == ""
    # start 2.01 (others' jobs) -> 2.01 > 0.5: busy
    note = busy_note(load_start=2.01, load_end=2.0, num_threads=2, num_cpus=2)
    assert note.startswith(
        "the machine was busy: 1-minute load average 2.01 at the start and 2.00 at the end"
    )
    assert "about 2.0 CPU(s) of other work" in note
    # 1 thread of 2 CPUs leaves 1 idle: other load up to 1.5 is tolerated (1.4), beyond it (1.6) not
    assert busy_note(load_start=1.4, load_end=1.0, num_threads=1, num_cpus=2) == ""
    assert busy_note(load_start=1.6, load_end=1.0, num_threads=1, num_cpus=2) != ""
    # no load average on this platform: no note
    assert busy_note(load_start=None, load_end=None, num_threads=1, num_cpus=2) == ""


def test_load_note_goes_into_cpu_results_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bench_runtime, "load_average_1min", lambda: 3.0)
    monkeypatch.setattr(bench_runtime, "cpu_count", lambda: 2)
    result = _gemm(1e9, 2e9)
    cpu = BenchDevice(kind="cpu", index=0, name="cpu", num_threads=2)
    (noted,) = with_load_note([result], device=cpu, load_start=2.5)
    assert noted.details["load_average_1min"] == {"start": 2.5, "end": 3.0}
    # other load max(2.5, 3.0 - 2) = 2.5 > 0 idle CPUs + 0.5
    assert "the figures may be low" in str(noted.details["load_note"])
    gpu = BenchDevice(kind="cuda", index=0, name="gpu", num_threads=2)
    assert with_load_note([result], device=gpu, load_start=2.5) == [result]


@pytest.mark.torch
def test_gemm_run_records_the_scope_and_flags_a_point_above_the_sol() -> None:
    pytest.importorskip("torch")
    from lightspeed.bench import GemmShape, resolve_device, run_gemm

    device = resolve_device("cpu")
    # a 1 kFLOP/s "peak" that any multiply beats
    sol = DeviceSol(
        device_name="tiny", flop_per_s={"fp32": 1e3}, compute_scope="1 of 2 cores", above_note="test clock"
    )
    (result,) = run_gemm(
        device=device, sol=sol, shapes=[GemmShape(m=32, n=32, k=32)], quick=True, warmup_s=0.0
    )
    assert result.above_sol is True
    assert result.details["above_sol_note"] == "above the SOL: test clock"
    assert result.details["sol_scope"] == "1 of 2 cores"
    assert result.details["num_threads"] == device.num_threads
    assert "load_average_1min" in result.details
