"""A result above a CPU's SOL says where the clock the peak assumes comes from (expert check M2,
defect 3): a record named with ``--sol-device`` is priced at that record's base clock, not at a
clock detected on this machine."""

from __future__ import annotations

import shutil
from pathlib import Path

from lightspeed.bench import BenchDevice, device_sol
from lightspeed.bench.sol import sol_from_cpu_record, sol_from_local_cpu
from lightspeed.catalog import LocalCpu, detect_cpu, load_catalog

CPUINFO = Path(__file__).resolve().parents[1] / "catalog" / "fixtures" / "cpuinfo"
CPU = BenchDevice(kind="cpu", index=0, name="a CPU", num_threads=1)


def _local_cpu(tmp_path: Path, *, clock_hz: float | None = None) -> LocalCpu:
    """The 2-core Zen 4 VM of a captured /proc/cpuinfo (2596.132 MHz, no cpufreq in /sys)."""
    proc, sys_root = tmp_path / "proc", tmp_path / "sys"
    proc.mkdir()
    (sys_root / "devices" / "system" / "cpu").mkdir(parents=True)
    shutil.copy(CPUINFO / "zen4-vm.cpuinfo", proc / "cpuinfo")
    (proc / "meminfo").write_text("MemTotal: 16777216 kB\n", encoding="utf-8")
    return detect_cpu(proc_root=proc, sys_root=sys_root, clock_hz=clock_hz)


def test_a_named_cpu_record_says_its_base_clock_not_a_detected_one() -> None:
    # Intel Xeon Platinum 8480C: 2.0 GHz base clock (ark.intel.com), the clock its record's peak uses
    named = device_sol(device=CPU, catalog=load_catalog(), sol_device="xeon-platinum-8480c")
    assert "detected" not in named.above_note
    assert "2 GHz base clock of the xeon-platinum-8480c record" in named.above_note
    assert "--sol-device" in named.above_note
    record = sol_from_cpu_record(load_catalog().cpu("xeon-platinum-8480c"), num_threads=1)
    assert record.above_note == named.above_note


def test_a_detected_cpu_says_how_its_clock_was_read(tmp_path: Path) -> None:
    sol = sol_from_local_cpu(_local_cpu(tmp_path), num_threads=1)
    assert "2.6 GHz clock detected" in sol.above_note
    assert "/proc/cpuinfo" in sol.above_note  # no cpufreq in the VM: the clock /proc/cpuinfo reports


def test_a_clock_given_by_the_caller_is_not_called_detected(tmp_path: Path) -> None:
    sol = sol_from_local_cpu(_local_cpu(tmp_path, clock_hz=3.0e9), num_threads=1)
    assert "3 GHz clock given" in sol.above_note
    assert "detected" not in sol.above_note
