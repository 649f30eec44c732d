"""Local CPU detection from captured /proc and /sys trees; GPU probes through fake NVML/torch modules."""

from __future__ import annotations

import dataclasses
import importlib.machinery
import shutil
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from lightspeed.catalog import (
    Catalog,
    detect_cpu,
    detect_gpus,
    detect_local,
    load_microarchitectures,
    local_cpu_accelerator,
    local_system,
    read_cpu_info,
)
from lightspeed.catalog.detect import LocalMachine, parse_cpuinfo
from lightspeed.catalog.microarch import match_microarchitecture
from lightspeed.errors import UnsupportedError
from lightspeed.report.hardware import render_detected_machine

CPUINFO = Path(__file__).resolve().parent / "fixtures" / "cpuinfo"


def _machine(tmp_path: Path, cpuinfo: str, mem_kib: int = 16 * 2**20) -> tuple[Path, Path]:
    """A /proc and an empty /sys tree holding ``cpuinfo`` and a MemTotal line."""
    proc = tmp_path / "proc"
    sys_root = tmp_path / "sys"
    proc.mkdir()
    (sys_root / "devices" / "system" / "cpu").mkdir(parents=True)
    shutil.copy(CPUINFO / cpuinfo, proc / "cpuinfo")
    (proc / "meminfo").write_text(f"MemTotal:       {mem_kib} kB\nMemFree: 1 kB\n", encoding="utf-8")
    return proc, sys_root


def _cpu_dir(sys_root: Path, index: int, package: int, core: int) -> Path:
    folder = sys_root / "devices" / "system" / "cpu" / f"cpu{index}"
    (folder / "topology").mkdir(parents=True)
    (folder / "topology" / "physical_package_id").write_text(f"{package}\n", encoding="utf-8")
    (folder / "topology" / "core_id").write_text(f"{core}\n", encoding="utf-8")
    return folder


def test_zen4_vm_without_cpufreq(tmp_path: Path, catalog: Catalog) -> None:
    proc, sys_root = _machine(tmp_path, "zen4-vm.cpuinfo", mem_kib=24684096)
    cpu = detect_cpu(catalog=catalog, proc_root=proc, sys_root=sys_root)
    info = cpu.info
    assert (info.vendor, info.cpu_family, info.model) == ("AuthenticAMD", 25, 17)
    assert (info.num_sockets, info.num_physical_cores, info.num_logical_cpus) == (1, 2, 2)
    assert info.clock_hz == pytest.approx(2596.132e6)
    assert "no cpufreq" in info.clock_note
    assert info.memory_total_bytes == 24684096 * 1024
    assert cpu.microarchitecture == "zen4-genoa"
    assert cpu.peak is not None
    # 1 socket x 2 cores x 2.596 GHz x 1 FMA unit x 16 FP32 lanes (512-bit, double-pumped) x 2.
    assert cpu.peak.fp32_flop_per_s == pytest.approx(2 * 2.596132e9 * 1 * 16 * 2)
    assert cpu.peak.fp64_flop_per_s == pytest.approx(cpu.peak.fp32_flop_per_s / 2)
    # avx512_bf16 on Zen 4: 64 BF16 FLOP per cycle per core.
    assert cpu.peak.bf16_flop_per_s == pytest.approx(2 * 2.596132e9 * 64)
    assert any("virtual machine" in note for note in cpu.assumptions)
    assert any("double-pumped" in note for note in cpu.assumptions)
    # 12 channels x 4800 MT/s x 8 bytes, said to be the platform maximum, shared in a VM.
    assert cpu.memory_bandwidth_bytes_per_s == pytest.approx(12 * 4800e6 * 8)
    assert "platform maximum" in cpu.memory_bandwidth_note
    assert "share" in cpu.memory_bandwidth_note


def test_sapphire_rapids_two_sockets_from_sys_topology(tmp_path: Path, catalog: Catalog) -> None:
    proc, sys_root = _machine(tmp_path, "sapphire-rapids-2s.cpuinfo")
    for index, (package, core) in enumerate([(0, 0), (0, 1), (1, 0), (1, 1)]):
        _cpu_dir(sys_root, index, package, core)
    cpufreq = sys_root / "devices" / "system" / "cpu" / "cpu0" / "cpufreq"
    cpufreq.mkdir()
    (cpufreq / "base_frequency").write_text("2000000\n", encoding="utf-8")
    (cpufreq / "cpuinfo_max_freq").write_text("3800000\n", encoding="utf-8")
    cpu = detect_cpu(catalog=catalog, proc_root=proc, sys_root=sys_root)
    assert (cpu.info.num_sockets, cpu.info.num_physical_cores) == (2, 4)
    assert cpu.info.clock_hz == 2.0e9
    assert "base frequency" in cpu.info.clock_note
    assert cpu.peak is not None
    # 2 sockets x 2 cores x 2.0 GHz x 2 FMA x 8 FP64 lanes x 2 = 256 GFLOP/s FP64.
    assert cpu.peak.fp64_flop_per_s == pytest.approx(256e9)
    assert cpu.peak.bf16_path == "amx-bf16"
    assert cpu.peak.bf16_flop_per_s == pytest.approx(4 * 2.0e9 * 1024)
    # The model name is in the catalog: its per-socket bandwidth x 2 sockets.
    assert cpu.catalog_cpu == "xeon-platinum-8480c"
    assert cpu.memory_bandwidth_bytes_per_s == pytest.approx(2 * 307.2e9)
    assert any("licence" in note for note in cpu.assumptions)


def test_max_frequency_is_flagged_as_an_upper_bound(tmp_path: Path) -> None:
    proc, sys_root = _machine(tmp_path, "sapphire-rapids-2s.cpuinfo")
    cpufreq = sys_root / "devices" / "system" / "cpu" / "cpu0" / "cpufreq"
    cpufreq.mkdir(parents=True)
    (cpufreq / "cpuinfo_max_freq").write_text("3800000\n", encoding="utf-8")
    info = read_cpu_info(proc_root=proc, sys_root=sys_root)
    assert info.clock_hz == 3.8e9
    assert "upper bound" in info.clock_note
    # No /sys topology: cores come from /proc/cpuinfo's (physical id, core id) pairs.
    assert (info.num_sockets, info.num_physical_cores) == (2, 4)


def test_grace_has_no_bf16_row_and_no_assumed_bandwidth(tmp_path: Path) -> None:
    proc, sys_root = _machine(tmp_path, "grace.cpuinfo")
    cpu = detect_cpu(proc_root=proc, sys_root=sys_root, clock_hz=3.1e9)
    assert cpu.info.vendor == "ARM"
    assert (cpu.info.implementer, cpu.info.part) == (0x41, 0xD4F)
    assert cpu.microarchitecture == "neoverse-v2"
    assert cpu.peak is not None
    assert cpu.peak.isa == "sve2"
    # 2 cores x 3.1 GHz x 4 pipes x 4 FP32 lanes x 2.
    assert cpu.peak.fp32_flop_per_s == pytest.approx(2 * 3.1e9 * 4 * 4 * 2)
    assert cpu.peak.bf16_flop_per_s is None
    assert cpu.memory_bandwidth_bytes_per_s is None
    assert cpu.missing == ("memory_bandwidth",)  # hw detect offers --memory-bandwidth for it
    assert any("no core topology" in note for note in cpu.assumptions)
    with pytest.raises(UnsupportedError) as info:
        local_cpu_accelerator(cpu=cpu)
    assert "memory_bandwidth_bytes_per_s=" in str(info.value)
    accelerator = local_cpu_accelerator(
        cpu=detect_cpu(proc_root=proc, sys_root=sys_root, clock_hz=3.1e9, memory_bandwidth_bytes_per_s=400e9)
    )
    assert set(accelerator.compute) == {"fp64", "fp32"}


def test_hw_detect_names_its_options_for_what_detection_lacks(tmp_path: Path) -> None:
    """Detection's notes name no option (bench and the Python API have others); hw detect's
    rendering adds its own: --memory-bandwidth for the bandwidth, --cpu-ghz for the clock."""
    proc, sys_root = _machine(tmp_path, "grace.cpuinfo")
    cpu = detect_cpu(proc_root=proc, sys_root=sys_root, clock_hz=3.1e9)
    assert "--" not in cpu.memory_bandwidth_note
    console = Console(record=True, width=200)
    render_detected_machine(LocalMachine(cpu=cpu, gpus=(), gpu_notes=()), console)
    assert "pass --memory-bandwidth" in console.export_text()
    unclocked = dataclasses.replace(cpu, peak=None, missing=("clock",))
    console = Console(record=True, width=200)
    render_detected_machine(LocalMachine(cpu=unclocked, gpus=(), gpu_notes=()), console)
    assert "--cpu-ghz" in console.export_text()
    assert "pass --memory-bandwidth" not in console.export_text()


def test_unknown_cpu_has_no_peak_and_says_why(tmp_path: Path) -> None:
    proc, sys_root = _machine(tmp_path, "unknown-vendor.cpuinfo")
    cpu = detect_cpu(proc_root=proc, sys_root=sys_root)
    assert cpu.peak is None
    assert cpu.microarchitecture is None
    assert any("not in the table" in note for note in cpu.assumptions)
    with pytest.raises(UnsupportedError) as info:
        local_cpu_accelerator(cpu=cpu)
    assert "no peak" in str(info.value)


def test_local_cpu_accelerator_and_system(tmp_path: Path) -> None:
    proc, sys_root = _machine(tmp_path, "zen4-vm.cpuinfo", mem_kib=1024)
    cpu = detect_cpu(proc_root=proc, sys_root=sys_root)
    accelerator = local_cpu_accelerator(cpu=cpu)
    assert accelerator.family == "cpu"
    assert set(accelerator.compute) == {"fp64", "fp32", "bf16"}
    assert cpu.peak is not None
    assert accelerator.dense_flop_per_s("fp32") == cpu.peak.fp32_flop_per_s
    assert accelerator.memory_nominal_bytes == accelerator.memory_usable_bytes == 1024 * 1024
    assert accelerator.memory_bandwidth_bytes_per_s == cpu.memory_bandwidth_bytes_per_s
    for figure in accelerator.compute.values():
        assert figure.source in accelerator.sources
    system = local_system(cpu=cpu)
    assert system.num_accelerators == 1
    assert system.accelerator == accelerator
    assert system.to_dict()["accelerator"]["family"] == "cpu"


def test_this_machine_detects_without_error(catalog: Catalog) -> None:
    machine = detect_local(catalog=catalog, probe_gpus=False)
    assert machine.cpu.info.num_logical_cpus >= 1
    assert machine.gpu_notes == ("GPU probe skipped",)


def test_missing_proc_is_unsupported(tmp_path: Path) -> None:
    with pytest.raises(UnsupportedError) as info:
        read_cpu_info(proc_root=tmp_path, sys_root=tmp_path)
    assert "cpuinfo" in str(info.value)


def _fake_module(name: str, **attributes: Any) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__spec__ = importlib.machinery.ModuleSpec(name, None)
    for key, value in attributes.items():
        setattr(module, key, value)
    return module


def test_gpus_from_nvml_are_mapped_to_records(monkeypatch: pytest.MonkeyPatch, catalog: Catalog) -> None:
    names = [b"NVIDIA H100 80GB HBM3", "NVIDIA A100-PG509-200"]
    nvml = _fake_module(
        "pynvml",
        nvmlInit=lambda: None,
        nvmlShutdown=lambda: None,
        nvmlDeviceGetCount=lambda: len(names),
        nvmlDeviceGetHandleByIndex=lambda index: index,
        nvmlDeviceGetName=lambda handle: names[handle],
        nvmlDeviceGetMemoryInfo=lambda handle: types.SimpleNamespace(total=85e9),
    )
    monkeypatch.setitem(sys.modules, "pynvml", nvml)
    gpus, notes = detect_gpus(catalog)
    assert [(gpu.name, gpu.accelerator, gpu.backend) for gpu in gpus] == [
        ("NVIDIA H100 80GB HBM3", "h100-sxm", "nvml"),
        ("NVIDIA A100-PG509-200", None, "nvml"),  # not in the catalog: no guess
    ]
    assert notes == ()


def test_gpus_from_torch_when_nvml_is_absent(monkeypatch: pytest.MonkeyPatch, catalog: Catalog) -> None:
    def failing_init() -> None:
        raise RuntimeError("NVML Shared Library Not Found")

    monkeypatch.setitem(sys.modules, "pynvml", _fake_module("pynvml", nvmlInit=failing_init))
    cuda = types.SimpleNamespace(
        is_available=lambda: True,
        device_count=lambda: 1,
        get_device_properties=lambda index: types.SimpleNamespace(
            name="AMD Instinct MI300X", total_memory=2e11
        ),
    )
    monkeypatch.setitem(sys.modules, "torch", _fake_module("torch", cuda=cuda))
    gpus, notes = detect_gpus(catalog)
    assert [(gpu.accelerator, gpu.backend) for gpu in gpus] == [("mi300x", "torch")]
    assert any("NVML found no driver" in note for note in notes)


def test_a_broken_torch_is_a_note_naming_the_extra(
    monkeypatch: pytest.MonkeyPatch, catalog: Catalog, tmp_path: Path
) -> None:
    """torch installed but failing to import (a CUDA build without its libraries) is a note that
    names the extra, never torch's own OSError out of 'hw detect'."""
    monkeypatch.setitem(sys.modules, "pynvml", None)  # no NVML: the torch probe runs
    package = tmp_path / "torch"
    package.mkdir()
    (package / "__init__.py").write_text(
        "raise OSError('libcudart.so.12: cannot open shared object file: No such file or directory')\n"
    )
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    monkeypatch.syspath_prepend(str(tmp_path))
    gpus, notes = detect_gpus(catalog)
    assert gpus == ()
    (torch_note,) = [note for note in notes if "torch" in note]
    assert "libcudart.so.12" in torch_note
    assert "'lightspeed[bench]'" in torch_note


@pytest.mark.parametrize(
    ("ids", "expected"),
    [
        ({"vendor": "GenuineIntel", "cpu_family": 6, "model": 143}, "sapphire-rapids"),
        ({"vendor": "GenuineIntel", "cpu_family": 6, "model": 85}, "skylake-sp"),
        ({"vendor": "AuthenticAMD", "cpu_family": 23, "model": 49}, "zen2-rome"),
        ({"vendor": "AuthenticAMD", "cpu_family": 26, "model": 2}, "zen5-turin"),
        ({"vendor": "ARM", "implementer": 0x41, "part": 0xD0C}, "neoverse-n1"),
        ({"vendor": "GenuineIntel", "cpu_family": 6, "model": 1}, None),
        ({"vendor": "AuthenticAMD", "cpu_family": 6, "model": 143}, None),  # Intel ids, AMD vendor
    ],
)
def test_match_microarchitecture(ids: dict[str, Any], expected: str | None) -> None:
    found = match_microarchitecture(load_microarchitectures(), **ids)
    assert (found.name if found else None) == expected


def test_every_microarchitecture_has_a_sourced_isa() -> None:
    for arch in load_microarchitectures().values():
        assert arch.isas, arch.name
        assert arch.source.title, arch.name
        if arch.memory_channels is not None:
            assert arch.memory_source is not None, arch.name
        else:
            assert arch.memory_note, arch.name  # says why no figure is assumed


@given(st.text(max_size=400))
def test_parse_cpuinfo_never_fails(text: str) -> None:
    blocks = parse_cpuinfo(text)
    assert all(isinstance(block, dict) for block in blocks)


@given(
    st.dictionaries(
        st.from_regex(r"[a-z][a-z _]{0,12}[a-z]", fullmatch=True),
        st.from_regex(r"[A-Za-z0-9_ .]{0,20}[A-Za-z0-9_.]", fullmatch=True),
        min_size=1,
        max_size=6,
    )
)
@pytest.mark.slow
def test_parse_cpuinfo_reads_back_what_was_written(fields: dict[str, str]) -> None:
    text = "\n".join(f"{key}\t: {value}" for key, value in fields.items())
    blocks = parse_cpuinfo(f"{text}\n\n{text}\n")
    assert len(blocks) == 2
    assert blocks[0] == {key.strip(): value.strip() for key, value in fields.items()}
