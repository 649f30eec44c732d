"""The expert check of bench's SOL (defects 2, 3, 5, 7 and 10): each SOL says where it comes from,
a CPU the table does not know names the option that gives it one, catalog CPU records are SOLs,
collectives carry a link note, and STREAM's arrays follow its rule (and --quick its promise)."""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest

from lightspeed.bench import BenchDevice, DeviceSol, assemble_results, device_sol
from lightspeed.bench import membw as bench_membw
from lightspeed.bench import sol as bench_sol
from lightspeed.bench.sol import sol_from_cpu_record, sol_from_local_cpu
from lightspeed.catalog import LocalCpu, detect_cpu, load_catalog
from lightspeed.catalog import detect as catalog_detect
from lightspeed.errors import UnknownNameError, UserInputError

CPUINFO = Path(__file__).resolve().parents[1] / "catalog" / "fixtures" / "cpuinfo"
CPU = BenchDevice(kind="cpu", index=0, name="a CPU", num_threads=1)


def _machine(tmp_path: Path, cpuinfo_text: str) -> tuple[Path, Path]:
    proc, sys_root = tmp_path / "proc", tmp_path / "sys"
    proc.mkdir()
    (sys_root / "devices" / "system" / "cpu").mkdir(parents=True)
    (proc / "cpuinfo").write_text(cpuinfo_text, encoding="utf-8")
    (proc / "meminfo").write_text("MemTotal: 16777216 kB\n", encoding="utf-8")
    return proc, sys_root


def _local(tmp_path: Path, cpuinfo_text: str, *, clock_hz: float | None = None) -> LocalCpu:
    proc, sys_root = _machine(tmp_path, cpuinfo_text)
    return detect_cpu(proc_root=proc, sys_root=sys_root, clock_hz=clock_hz)


def _spr_text() -> str:
    return (CPUINFO / "sapphire-rapids-2s.cpuinfo").read_text(encoding="utf-8")


def test_a_cpu_the_table_does_not_know_says_so_and_names_sol_device(tmp_path: Path) -> None:
    # the expert's KVM guest: family 6, model 167, not in the microarchitecture table
    text = re.sub(r"^model\t\t: 143$", "model\t\t: 167", _spr_text(), flags=re.MULTILINE)
    text = text.replace("Intel(R) Xeon(R) Platinum 8480C", "Intel(R) Xeon(R) Processor")
    sol = sol_from_local_cpu(_local(tmp_path, text), num_threads=1)
    peak, note = sol.compute("fp32")
    assert peak is None
    assert "microarchitecture not in the table" in note
    assert "family 6, model 167" in note
    assert "--sol-device" in note
    assert "in the catalog" not in note  # the old wording blamed the catalog


def test_bf16_and_fp64_rows_carry_their_own_derivation(tmp_path: Path) -> None:
    # 2 sockets x 2 cores of Sapphire Rapids at 2.0 GHz (the clock given), one thread: 1 of 4 cores.
    # FP64: 2 FMA units x 8 lanes (512 bits / 64) x 2 = 32 FLOP/cycle: 4 x 2e9 x 32 = 256 GFLOP/s,
    #       x 1/4 = 64 GFLOP/s.
    # BF16 on AMX: 1,024 FLOP/cycle/core (Intel's optimization manual): 4 x 2e9 x 1024
    #       = 8.192 TFLOP/s, x 1/4 = 2.048 TFLOP/s.
    sol = sol_from_local_cpu(_local(tmp_path, _spr_text(), clock_hz=2.0e9), num_threads=1)
    bf16, bf16_note = sol.compute("bf16")
    assert bf16 == pytest.approx(4 * 2.0e9 * 1024 / 4)
    assert "amx-bf16" in bf16_note
    assert "1,024 FLOP/cycle/core" in bf16_note
    assert "8.192 TFLOP/s BF16" in bf16_note
    assert "x 1/4 = 2.048 TFLOP/s BF16" in bf16_note
    fp64, fp64_note = sol.compute("fp64")
    assert fp64 == pytest.approx(4 * 2.0e9 * 32 / 4)
    assert "8 FP64 lanes" in fp64_note
    assert "256 GFLOP/s FP64" in fp64_note
    assert "x 1/4 = 64 GFLOP/s FP64" in fp64_note
    # FP32 keeps the catalog's own formula: 2 FMA x 16 lanes x 2 = 64 FLOP/cycle -> 512 GFLOP/s
    assert "512 GFLOP/s FP32" in sol.compute("fp32")[1]


def test_a_catalog_cpu_record_is_a_sol_device_scaled_by_threads() -> None:
    catalog = load_catalog()
    # Intel Xeon Platinum 8480C: 56 cores at 2.0 GHz base, 8 channels of DDR5-4800 (ark.intel.com):
    # 8 x 4800e6 x 8 B = 307.2 GB/s a socket. Two sockets, one thread: 1 of 112 cores at
    # 2.0 GHz x 64 FP32 FLOP/cycle (2 AVX-512 FMA units x 16 lanes x 2) = 128 GFLOP/s.
    sol = sol_from_cpu_record(catalog.cpu("xeon-platinum-8480c"), num_sockets=2, num_threads=1)
    assert sol.device_name == "xeon-platinum-8480c"
    assert sol.compute("fp32")[0] == pytest.approx(2.0e9 * 64)
    assert sol.compute_scope == "1 of 112 cores"
    assert sol.memory_bandwidth_bytes_per_s == pytest.approx(2 * 8 * 4800e6 * 8)
    assert "xeon-platinum-8480c" in sol.compute("fp32")[1]
    # through device_sol, as 'bench --sol-device xeon-platinum-8480c' asks for it
    named = device_sol(device=CPU, catalog=catalog, sol_device="xeon-platinum-8480c")
    assert named.device_name == "xeon-platinum-8480c"
    assert named.compute("fp32")[0] == pytest.approx(2.0e9 * 64)  # one thread: one core, any sockets


def test_a_cpu_record_for_a_gpu_run_and_an_unknown_name_are_refused() -> None:
    catalog = load_catalog()
    gpu = BenchDevice(kind="cuda", index=0, name="NVIDIA H100 80GB HBM3", num_threads=1)
    with pytest.raises(UserInputError, match="is a CPU record"):
        device_sol(device=gpu, catalog=catalog, sol_device="xeon-platinum-8480c")
    with pytest.raises(UnknownNameError, match="xeon-platinum-8480c"):
        device_sol(device=CPU, catalog=catalog, sol_device="xeon-platinum-8480")


def _grace_text() -> str:
    text = (CPUINFO / "grace.cpuinfo").read_text(encoding="utf-8")
    return re.sub(r"^(processor\t: \d+)$", r"\1\nmodel name\t: NVIDIA Grace", text, flags=re.MULTILINE)


def test_detection_in_bench_uses_the_catalog_cpus_memory_figure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Neoverse V2 has no platform figure (Grace and Graviton4 differ); the catalog's Grace record
    # has NVIDIA's 512 GB/s (LPDDR5X). 'hw detect' used it; bench did not.
    proc, sys_root = _machine(tmp_path, _grace_text())
    detect = functools.partial(catalog_detect.detect_cpu, proc_root=proc, sys_root=sys_root, clock_hz=3.1e9)
    monkeypatch.setattr(bench_sol, "detect_cpu", detect)
    sol = device_sol(device=CPU, catalog=load_catalog())
    assert sol.memory_bandwidth_bytes_per_s == pytest.approx(512e9)


def test_an_unknown_memory_figure_names_an_option_bench_has(tmp_path: Path) -> None:
    local = _local(tmp_path, _grace_text(), clock_hz=3.1e9)  # no catalog: no memory figure
    _, note = sol_from_local_cpu(local).memory()
    assert "--memory-bandwidth" not in note  # an option of 'hw detect', not of bench
    assert "--sol-device" in note


def test_collectives_without_a_link_figure_do_not_carry_the_compute_note() -> None:
    cpu_sol = DeviceSol(
        device_name="local sapphire-rapids", flop_per_s={"fp32": 1e11}, note="CPU peak for ..."
    )
    rank = [("all_reduce", 65536, [0.001, 0.001], True)]
    (result,) = assemble_results(per_rank=[rank, rank], backend="gloo", sol=cpu_sol)
    assert result.sol is None
    assert result.sol_note == "no catalog link figure between these ranks"


def _fake_sysfs(root: Path) -> Path:
    """Two sockets of two CPUs: per CPU 48 KiB L1d, 32 KiB L1i, 2 MiB L2; per socket 105 MiB L3."""
    cpu_root = root / "cpu"
    for cpu in range(4):
        socket = "0-1" if cpu < 2 else "2-3"
        caches = [(1, "Data", "48K", str(cpu)), (1, "Instruction", "32K", str(cpu)),
                  (2, "Unified", "2048K", str(cpu)), (3, "Unified", "107520K", socket)]  # fmt: skip
        for index, (level, kind, size, shared) in enumerate(caches):
            folder = cpu_root / f"cpu{cpu}" / "cache" / f"index{index}"
            folder.mkdir(parents=True)
            for name, value in (
                ("level", str(level)),
                ("type", kind),
                ("size", size),
                ("shared_cpu_list", shared),
            ):
                (folder / name).write_text(value + "\n")
    return cpu_root


def test_stream_sums_the_last_level_caches_of_all_sockets(tmp_path: Path) -> None:
    # STREAM: each array at least 4 x the sum of the last-level caches: 2 sockets x 105 MiB = 210 MiB
    cpu_root = _fake_sysfs(tmp_path)
    assert bench_membw.cpu_last_level_cache_bytes(cpu_root) == 2 * 105 * 2**20
    elements = bench_membw.array_elements(cache_bytes=2 * 105 * 2**20)
    assert elements * 8 == 4 * 210 * 2**20


def test_quick_caps_the_arrays_and_says_the_caches_may_help() -> None:
    # the expert's VM: 480 MiB of L3 -> 1,920 MiB arrays by the rule; --quick caps them at 256 MiB
    assert bench_membw.array_elements(cache_bytes=480 * 2**20, quick=True) * 8 == 256 * 2**20
    assert bench_membw.array_elements(cache_bytes=480 * 2**20) * 8 == 4 * 480 * 2**20
    # an explicit size is the user's, quick or not
    assert bench_membw.array_elements(cache_bytes=480 * 2**20, array_bytes=2**30, quick=True) * 8 == 2**30


def test_a_quick_membw_run_notes_its_small_arrays(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("torch")
    monkeypatch.setattr(bench_membw, "QUICK_MAX_ARRAY_BYTES", 2**20)  # 1 MiB: a cheap run
    monkeypatch.setattr(bench_membw, "last_level_cache_bytes", lambda torch, device: 64 * 2**20)
    sol = DeviceSol(device_name="test-cpu", memory_bandwidth_bytes_per_s=1e11, memory_note="memory SOL: test")
    results = bench_membw.run_membw(device=CPU, sol=sol, kernels=["triad"], quick=True)
    assert results[0].size_bytes == 2**20
    assert "--quick: arrays of 1 MiB, under 4 x the 64 MiB" in results[0].sol_note
    assert results[0].sol_note.startswith("memory SOL: test")
