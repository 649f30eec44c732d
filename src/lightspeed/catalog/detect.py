"""This machine: its CPU (from /proc and /sys), its GPUs (when torch or NVML can see them), its SOL.

The CPU peak comes from :func:`lightspeed.catalog.microarch.cpu_peak`: the
microarchitecture is matched from /proc/cpuinfo ids, physical cores and
sockets from /sys topology, the frequency from cpufreq (the base frequency if
exposed, else the maximum) or, in VMs without cpufreq, the clock /proc/cpuinfo
reports. Memory bandwidth is the figure of a catalog CPU with the same model
name, else the microarchitecture's server platform, else unknown. Everything
assumed is listed in ``assumptions``.

:func:`local_cpu_accelerator` wraps the result as an :class:`Accelerator` and
:func:`local_system` as a one-device :class:`System`, so that the SOL engine
can predict a PyTorch-on-CPU step with the same code as for a GPU.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

from lightspeed import nvml
from lightspeed.catalog.microarch import (
    CpuPeak,
    Microarchitecture,
    cpu_peak,
    load_microarchitectures,
    match_microarchitecture,
)
from lightspeed.catalog.mig_profiles import single_gpu_system
from lightspeed.catalog.records import Accelerator, ComputeFigure, Cpu, System
from lightspeed.catalog.registry import Catalog
from lightspeed.datafile import Source
from lightspeed.errors import MissingExtraError, UnsupportedError
from lightspeed.extras import import_extra
from lightspeed.records import Record

PROC: Final = Path("/proc")
SYS: Final = Path("/sys")
KIB: Final = 1024.0
DETECTION_SOURCE: Final = Source(
    key="local-detection",
    title="lightspeed hw detect on this machine: /proc/cpuinfo, /proc/meminfo, /sys/devices/system/cpu",
)


@dataclass(frozen=True)
class CpuInfo(Record):
    """What /proc/cpuinfo, /proc/meminfo and /sys say about the CPU, unprocessed."""

    vendor: str
    model_name: str
    cpu_family: int | None
    model: int | None
    implementer: int | None
    part: int | None
    num_logical_cpus: int
    num_sockets: int
    num_physical_cores: int
    flags: tuple[str, ...]
    clock_hz: float | None
    clock_note: str
    memory_total_bytes: float | None
    notes: tuple[str, ...]


@dataclass(frozen=True)
class LocalCpu(Record):
    """The local CPU with its microarchitecture, peak and memory bandwidth figure."""

    info: CpuInfo
    microarchitecture: str | None
    catalog_cpu: str | None
    peak: CpuPeak | None
    memory_bandwidth_bytes_per_s: float | None
    memory_bandwidth_note: str
    assumptions: tuple[str, ...]
    # figures detection could not find and a caller can supply: "clock", "memory_bandwidth" (each
    # command names its own way to give them: hw detect's --cpu-ghz, bench's --sol-device)
    missing: tuple[str, ...] = ()


@dataclass(frozen=True)
class LocalGpu(Record):
    """A GPU seen by NVML or torch, with the catalog record its name maps to (if any)."""

    index: int
    name: str
    memory_bytes: float | None
    backend: str
    accelerator: str | None


@dataclass(frozen=True)
class LocalMachine(Record):
    """This machine: CPU, GPUs, and notes on what could not be probed."""

    cpu: LocalCpu
    gpus: tuple[LocalGpu, ...]
    gpu_notes: tuple[str, ...]


def parse_cpuinfo(text: str) -> list[dict[str, str]]:
    """The processor blocks of a /proc/cpuinfo text as ``key -> value`` dicts."""
    blocks: list[dict[str, str]] = []
    current: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if current:
                blocks.append(current)
                current = {}
            continue
        key, separator, value = line.partition(":")
        if separator:
            current[key.strip().lower()] = value.strip()
    if current:
        blocks.append(current)
    return blocks


def _integer(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        return int(text, 0)
    except ValueError:
        return None


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def _topology(sys_root: Path, blocks: list[dict[str, str]]) -> tuple[int, int, str | None]:
    """(sockets, physical cores, note) from /sys topology, else /proc/cpuinfo ids."""
    pairs = set()
    for folder in sorted((sys_root / "devices" / "system" / "cpu").glob("cpu[0-9]*")):
        package = _integer(_read(folder / "topology" / "physical_package_id"))
        core = _integer(_read(folder / "topology" / "core_id"))
        if package is not None and core is not None:
            pairs.add((package, core))
    if not pairs:
        pairs = {
            (_integer(block.get("physical id")) or 0, core)
            for block in blocks
            if (core := _integer(block.get("core id"))) is not None
        }
    if pairs:
        return len({package for package, _ in pairs}), len(pairs), None
    note = (
        "no core topology in /sys or /proc/cpuinfo: counted every logical CPU as a physical core, one socket"
    )
    return 1, max(1, len(blocks)), note


def _clock(sys_root: Path, blocks: list[dict[str, str]]) -> tuple[float | None, str]:
    cpufreq = sys_root / "devices" / "system" / "cpu" / "cpu0" / "cpufreq"
    base = _integer(_read(cpufreq / "base_frequency"))
    if base:
        return base * 1e3, "base frequency from cpufreq (all-core turbo may be higher, AVX-512 clocks lower)"
    maximum = _integer(_read(cpufreq / "cpuinfo_max_freq"))
    if maximum:
        return maximum * 1e3, (
            "maximum frequency from cpufreq (cpuinfo_max_freq): a single-core boost clock, above what all "
            "cores sustain, so this peak is an upper bound"
        )
    reported = [float(block["cpu mhz"]) for block in blocks if _is_number(block.get("cpu mhz"))]
    if reported:
        return max(reported) * 1e6, (
            "no cpufreq in /sys (typical of VMs): used the clock /proc/cpuinfo reports, the host's nominal "
            "clock; turbo is not counted"
        )
    return None, "no frequency in cpufreq or /proc/cpuinfo"


def _is_number(text: str | None) -> bool:
    try:
        return text is not None and float(text) > 0
    except ValueError:
        return False


def read_cpu_info(*, proc_root: Path = PROC, sys_root: Path = SYS) -> CpuInfo:
    """Read the CPU description of this machine (or of a captured /proc and /sys tree)."""
    text = _read(proc_root / "cpuinfo")
    if text is None:
        raise UnsupportedError(f"cannot read {proc_root / 'cpuinfo'}: CPU detection needs Linux /proc")
    blocks = [block for block in parse_cpuinfo(text) if "processor" in block]
    first = blocks[0] if blocks else {}
    sockets, cores, topology_note = _topology(sys_root, blocks)
    clock_hz, clock_note = _clock(sys_root, blocks)
    flags = tuple(sorted(set((first.get("flags") or first.get("features") or "").split())))
    notes = [note for note in (topology_note,) if note]
    if "hypervisor" in flags:
        notes.append("the CPU reports the hypervisor flag: this is a virtual machine, sharing its host")
    return CpuInfo(
        vendor=first.get("vendor_id") or _arm_vendor(first),
        model_name=first.get("model name", ""),
        cpu_family=_integer(first.get("cpu family")),
        model=_integer(first.get("model")),
        implementer=_integer(first.get("cpu implementer")),
        part=_integer(first.get("cpu part")),
        num_logical_cpus=len(blocks),
        num_sockets=sockets,
        num_physical_cores=cores,
        flags=flags,
        clock_hz=clock_hz,
        clock_note=clock_note,
        memory_total_bytes=_memory_total(proc_root),
        notes=tuple(notes),
    )


def _arm_vendor(block: Mapping[str, str]) -> str:
    return "ARM" if "cpu implementer" in block else "unknown"


def _memory_total(proc_root: Path) -> float | None:
    for line in (_read(proc_root / "meminfo") or "").splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "MemTotal":
            amount = _integer(value.split()[0]) if value.split() else None
            return amount * KIB if amount is not None else None
    return None


def detect_cpu(
    *,
    catalog: Catalog | None = None,
    proc_root: Path = PROC,
    sys_root: Path = SYS,
    clock_hz: float | None = None,
    memory_bandwidth_bytes_per_s: float | None = None,
) -> LocalCpu:
    """The local CPU, its peak FLOP/s and memory bandwidth, with assumptions.

    ``clock_hz`` and ``memory_bandwidth_bytes_per_s`` override what detection
    would find (for VMs that hide the clock, or a measured bandwidth).
    """
    info = read_cpu_info(proc_root=proc_root, sys_root=sys_root)
    table = load_microarchitectures()
    arch = match_microarchitecture(
        table,
        vendor=info.vendor,
        cpu_family=info.cpu_family,
        model=info.model,
        implementer=info.implementer,
        part=info.part,
    )
    known_cpu = catalog.find_cpu(info.model_name) if catalog is not None and info.model_name else None
    assumptions = list(info.notes)
    clock, clock_note = (
        (clock_hz, "frequency given by the user") if clock_hz else (info.clock_hz, info.clock_note)
    )
    peak = None
    if arch is None:
        assumptions.append(
            f"microarchitecture not in the table (vendor {info.vendor}, family {info.cpu_family}, "
            f"model {info.model}, implementer {info.implementer}, part {info.part}): no peak"
        )
    elif clock is None:
        assumptions.append("no CPU frequency found: no peak")
    else:
        per_socket = max(1, info.num_physical_cores // info.num_sockets)
        peak = cpu_peak(
            microarchitecture=arch,
            flags=info.flags,
            num_sockets=info.num_sockets,
            num_cores_per_socket=per_socket,
            clock_hz=clock,
            clock_note=clock_note,
        )
        if peak is None:
            assumptions.append(f"none of the vector ISAs of {arch.name} appear in the CPU flags: no peak")
    bandwidth, bandwidth_note = _memory_bandwidth(info, arch, known_cpu, memory_bandwidth_bytes_per_s)
    return LocalCpu(
        info=info,
        microarchitecture=arch.name if arch else None,
        catalog_cpu=known_cpu.name if known_cpu else None,
        peak=peak,
        memory_bandwidth_bytes_per_s=bandwidth,
        memory_bandwidth_note=bandwidth_note,
        assumptions=tuple(assumptions + list(peak.assumptions if peak else ())),
        missing=tuple(
            name
            for name, lacking in (
                ("clock", arch is not None and clock is None),
                ("memory_bandwidth", bandwidth is None),
            )
            if lacking
        ),
    )


def _memory_bandwidth(
    info: CpuInfo, arch: Microarchitecture | None, known_cpu: Cpu | None, given: float | None
) -> tuple[float | None, str]:
    shared = " (a VM reaches only its share of it)" if "hypervisor" in info.flags else ""
    if given is not None:
        return given, "memory bandwidth given by the user"
    if known_cpu is not None and known_cpu.memory_bandwidth_bytes_per_s is not None:
        return info.num_sockets * known_cpu.memory_bandwidth_bytes_per_s, (
            f"{info.num_sockets} socket(s) x the {known_cpu.display_name} figure from the catalog{shared}"
        )
    if arch is not None and arch.memory_bandwidth_bytes_per_s is not None:
        return info.num_sockets * arch.memory_bandwidth_bytes_per_s, (
            f"{info.num_sockets} socket(s) x {arch.memory_channels} channels of {arch.memory_type} "
            f"(the platform maximum of {arch.display_name}; fewer or slower DIMMs give less){shared}"
        )
    reason = arch.memory_note if arch is not None and arch.memory_note else "platform unknown"
    return None, f"unknown: {reason}"


def detect_gpus(catalog: Catalog | None = None) -> tuple[tuple[LocalGpu, ...], tuple[str, ...]]:
    """GPUs seen by NVML (nvidia-ml-py) or else torch, and notes on what could not be probed."""
    notes: list[str] = []
    for probe in (_nvml_gpus, _torch_gpus):
        gpus, note = probe()
        if note:
            notes.append(note)
        if gpus:
            return tuple(_mapped(gpu, catalog) for gpu in gpus), tuple(notes)
    return (), tuple(notes)


def _mapped(gpu: LocalGpu, catalog: Catalog | None) -> LocalGpu:
    found = catalog.find_device(gpu.name) if catalog is not None else None
    return LocalGpu(
        index=gpu.index,
        name=gpu.name,
        memory_bytes=gpu.memory_bytes,
        backend=gpu.backend,
        accelerator=found.name if found else None,
    )


def _nvml_gpus() -> tuple[list[LocalGpu], str]:
    if not nvml.available():
        return [], "nvidia-ml-py not installed: NVML not probed (pip install 'lightspeed[monitor]')"
    try:
        with nvml.session() as module:
            gpus = [
                LocalGpu(
                    index,
                    nvml.text(module.nvmlDeviceGetName(handle)),
                    float(module.nvmlDeviceGetMemoryInfo(handle).total),
                    "nvml",
                    None,
                )
                for index, handle in nvml.device_handles(module)
            ]
    except UnsupportedError as error:
        return [], f"NVML found no driver: {error}"
    return gpus, ""


def _torch_gpus() -> tuple[list[LocalGpu], str]:
    try:
        torch: Any = import_extra("torch", extra="bench", purpose="probing GPUs through torch.cuda")
    except MissingExtraError as error:  # not installed, or installed but failing to import
        return [], str(error)
    if not torch.cuda.is_available():
        return [], "torch sees no CUDA or ROCm device"
    gpus = []
    for index in range(torch.cuda.device_count()):
        properties = torch.cuda.get_device_properties(index)
        gpus.append(LocalGpu(index, str(properties.name), float(properties.total_memory), "torch", None))
    return gpus, ""


def detect_local(
    *,
    catalog: Catalog | None = None,
    proc_root: Path = PROC,
    sys_root: Path = SYS,
    clock_hz: float | None = None,
    memory_bandwidth_bytes_per_s: float | None = None,
    probe_gpus: bool = True,
) -> LocalMachine:
    """This machine's CPU and GPUs (``probe_gpus=False`` skips importing NVML and torch)."""
    cpu = detect_cpu(
        catalog=catalog,
        proc_root=proc_root,
        sys_root=sys_root,
        clock_hz=clock_hz,
        memory_bandwidth_bytes_per_s=memory_bandwidth_bytes_per_s,
    )
    gpus, notes = detect_gpus(catalog) if probe_gpus else ((), ("GPU probe skipped",))
    return LocalMachine(cpu=cpu, gpus=gpus, gpu_notes=notes)


def local_cpu_accelerator(
    *,
    catalog: Catalog | None = None,
    cpu: LocalCpu | None = None,
    clock_hz: float | None = None,
    memory_bandwidth_bytes_per_s: float | None = None,
) -> Accelerator:
    """This machine's CPU as an :class:`Accelerator` (family ``cpu``) for the SOL engine.

    Compute rows: ``fp64`` and ``fp32`` from the peak, ``bf16`` only where the
    ISA has a BF16 FMA path. Memory is the RAM (nominal = usable), bandwidth
    the detected figure. ``catalog`` lets a CPU whose model name is in the
    catalog use that record's memory bandwidth. Raises :class:`UnsupportedError`
    when the peak or the bandwidth is unknown, saying which argument supplies it.

    Example::

        local_cpu_accelerator().family
        # -> 'cpu'
    """
    local = cpu or detect_cpu(
        catalog=catalog, clock_hz=clock_hz, memory_bandwidth_bytes_per_s=memory_bandwidth_bytes_per_s
    )
    info = local.info
    if local.peak is None:
        give = "; pass clock_hz=" if "clock" in local.missing else ""
        raise UnsupportedError(f"no peak FLOP/s for this CPU: {'; '.join(local.assumptions)}{give}")
    if local.memory_bandwidth_bytes_per_s is None:
        raise UnsupportedError(
            f"no memory bandwidth figure for this CPU ({local.memory_bandwidth_note}); "
            "pass memory_bandwidth_bytes_per_s="
        )
    sources = {DETECTION_SOURCE.key: DETECTION_SOURCE}
    rows = {"fp64": local.peak.fp64_flop_per_s, "fp32": local.peak.fp32_flop_per_s}
    if local.peak.bf16_flop_per_s is not None:
        rows["bf16"] = local.peak.bf16_flop_per_s
    compute = {
        name: ComputeFigure(name, value, False, value, "FLOP/s", DETECTION_SOURCE.key)
        for name, value in rows.items()
    }
    memory = info.memory_total_bytes or 0.0
    return Accelerator(
        name="local-cpu",
        display_name=f"{info.model_name or local.microarchitecture} ({info.num_physical_cores} cores)",
        aliases=(),
        vendor=info.vendor,
        architecture=local.microarchitecture or "unknown",
        form_factor=f"{info.num_sockets} socket(s)",
        family="cpu",
        compute=compute,
        memory_type="DRAM",
        memory_nominal_bytes=memory,
        memory_usable_bytes=memory,
        memory_bandwidth_bytes_per_s=local.memory_bandwidth_bytes_per_s,
        memory_source=DETECTION_SOURCE.key,
        l2_cache_bytes=None,
        num_compute_units=info.num_physical_cores,
        boost_clock_hz=local.peak.clock_hz,
        tdp_w=None,
        tdp_min_w=None,
        power_source="",
        scale_up=None,
        host_link=None,
        sources=sources,
        note="; ".join((*local.assumptions, local.memory_bandwidth_note)),
    )


def local_system(
    *,
    catalog: Catalog | None = None,
    cpu: LocalCpu | None = None,
    clock_hz: float | None = None,
    memory_bandwidth_bytes_per_s: float | None = None,
) -> System:
    """This machine as a one-accelerator :class:`System` whose accelerator is the CPU.

    Arguments as for :func:`local_cpu_accelerator`; ``system.accelerator.family`` is ``'cpu'``.
    """
    accelerator = local_cpu_accelerator(
        catalog=catalog, cpu=cpu, clock_hz=clock_hz, memory_bandwidth_bytes_per_s=memory_bandwidth_bytes_per_s
    )
    return replace(
        single_gpu_system(accelerator),
        name="local",
        display_name=f"this machine: {accelerator.display_name}",
        system_type="node",
        source=DETECTION_SOURCE.key,
        note=accelerator.note,
        path="",
    )
