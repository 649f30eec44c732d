"""The speed of light each benchmark result is compared with, from the catalog.

A GPU is looked up by the name the driver reports; a CPU through the catalog's
local-CPU detection (peak from the microarchitecture table, with its stated
assumptions). A device the catalog does not know gets no SOL and a note
saying so and how to name one (``--sol-device``): never a silent guess.

A CPU's compute peak counts every core of every socket; a run on fewer threads
than cores is compared with the share of the cores it could occupy
(``min(threads, cores) / cores`` of the peak). Memory bandwidth is shared by
the cores and stays the socket's figure (a note says when fewer cores than the
socket has may not reach it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from lightspeed.bench.runtime import BenchDevice
from lightspeed.catalog import Accelerator, Catalog, LocalCpu, detect_cpu
from lightspeed.records import Record
from lightspeed.units import compute_precision, format_flop_per_s


@dataclass(frozen=True)
class DeviceSol(Record):
    """Peak figures of the device a suite runs on (base SI; ``None`` = unknown).

    ``host_link_bytes_per_s`` and ``scale_up_bytes_per_s`` are per direction
    (what one copy or nccl-tests' busbw can reach), not the bidirectional totals
    vendors print. ``compute_scope`` says which part of the device the compute
    peaks count (``1 of 2 cores``; empty: the whole device); ``above_note`` why a
    result can exceed the compute peak (the clock the peak assumes).
    """

    device_name: str | None
    flop_per_s: Mapping[str, float] = field(default_factory=dict)
    memory_bandwidth_bytes_per_s: float | None = None
    host_link_bytes_per_s: float | None = None
    scale_up_bytes_per_s: float | None = None
    note: str = ""
    memory_note: str = ""
    compute_scope: str = ""
    above_note: str = ""

    def memory(self) -> tuple[float | None, str]:
        """Memory bandwidth SOL and the note that goes with it (why it is unknown, or its basis)."""
        note = self.memory_note or self.note
        if self.memory_bandwidth_bytes_per_s is None and not note:
            note = "no memory bandwidth figure for this device"
        return self.memory_bandwidth_bytes_per_s, note

    def compute(self, precision: str) -> tuple[float | None, str]:
        """Dense peak FLOP/s a GEMM in ``precision`` can reach, and a note when it is unknown.

        A GEMM runs on the matrix units, so where the catalog has a matrix row for the precision
        (``fp64_tensor``: NVIDIA's FP64 tensor cores, AMD's FP64 matrix cores) that row is the
        ceiling, not the vector one: cuBLAS's DGEMM on an H200 runs at about 62 TFLOP/s, 1.8
        times the 34 TFLOP/s vector figure and 93% of the 67 TFLOP/s tensor-core one."""
        row = compute_precision(precision)
        peak = self.flop_per_s.get(f"{row}_tensor", self.flop_per_s.get(row))
        if peak is not None:
            return peak, self.note
        if self.device_name is None:
            return None, self.note
        return None, f"{self.device_name} has no {row} compute figure in the catalog"

    @staticmethod
    def unknown(note: str) -> DeviceSol:
        """No figures, with the reason."""
        return DeviceSol(device_name=None, note=note)


def sol_from_accelerator(accelerator: Accelerator, note: str = "") -> DeviceSol:
    """The SOL figures of a catalog accelerator record."""
    flop = {precision: figure.dense_per_s for precision, figure in accelerator.compute.items()}
    host = accelerator.host_link.per_direction_bytes_per_s if accelerator.host_link else None
    scale_up = accelerator.scale_up.per_direction_bytes_per_s if accelerator.scale_up else None
    return DeviceSol(
        device_name=accelerator.name,
        flop_per_s=flop,
        memory_bandwidth_bytes_per_s=accelerator.memory_bandwidth_bytes_per_s,
        host_link_bytes_per_s=host,
        scale_up_bytes_per_s=scale_up,
        note=note or accelerator.note,
        above_note=(
            "the catalog figure is the datasheet's dense peak; a higher clock than the datasheet's, "
            "another SKU's record (check --sol-device) or a FLOP count the kernel did not do can exceed it"
        ),
    )


def device_sol(*, device: BenchDevice, catalog: Catalog, sol_device: str | None = None) -> DeviceSol:
    """The SOL of ``device``: the catalog record ``sol_device`` if named, else detected.

    An explicitly named record that does not exist is an error; a detected
    device the catalog does not know gives :meth:`DeviceSol.unknown` with the reason.
    A detected CPU's compute peak is that of the cores ``device.num_threads`` can occupy.
    """
    if sol_device is not None:
        return sol_from_accelerator(catalog.accelerator(sol_device), note=f"SOL of {sol_device} (named)")
    if device.is_gpu:
        return _gpu_sol(device, catalog)
    return sol_from_local_cpu(detect_cpu(), num_threads=device.num_threads)


def _gpu_sol(device: BenchDevice, catalog: Catalog) -> DeviceSol:
    record = catalog.find_device(device.name)
    if record is None:
        return DeviceSol.unknown(
            f"GPU {device.name!r} is not in the catalog; name its record with --sol-device"
        )
    return sol_from_accelerator(record, note=f"catalog record {record.name} for {device.name!r}")


def num_cores_used(*, num_threads: int | None, num_cores: int) -> int:
    """Physical cores ``num_threads`` threads can occupy: ``min(threads, cores)`` (all when unknown).

    >>> num_cores_used(num_threads=1, num_cores=2), num_cores_used(num_threads=8, num_cores=2)
    (1, 2)
    """
    if num_threads is None:
        return num_cores
    return max(1, min(num_threads, num_cores))


def sol_from_local_cpu(local: LocalCpu, *, num_threads: int | None = None) -> DeviceSol:
    """The local CPU's peak (microarchitecture table) and memory figure, each with its assumptions.

    The compute peaks are scaled to the cores ``num_threads`` threads can occupy
    (``min(threads, cores) / cores`` of the sockets' peak; ``None``: every core).
    Memory bandwidth is not scaled: the cores share it. Built from
    :func:`lightspeed.catalog.detect_cpu` rather than the CPU-as-accelerator
    record so that a missing bandwidth figure does not hide a known compute peak.
    """
    flop: dict[str, float] = {}
    notes: list[str] = []
    scope = ""
    above = ""
    memory_note = f"memory SOL: {local.memory_bandwidth_note}"
    if local.peak is None:
        notes.append(f"no CPU peak: {'; '.join(local.assumptions)}")
    else:
        peak = local.peak
        num_cores = peak.num_sockets * peak.num_cores_per_socket
        used = num_cores_used(num_threads=num_threads, num_cores=num_cores)
        share = used / num_cores
        flop = {"fp64": peak.fp64_flop_per_s * share, "fp32": peak.fp32_flop_per_s * share}
        if peak.bf16_flop_per_s is not None:
            flop["bf16"] = peak.bf16_flop_per_s * share
        scope = f"{used} of {num_cores} cores"
        notes.append(
            _cpu_peak_note(
                peak.formula, used=used, num_cores=num_cores, num_threads=num_threads, fp32=flop["fp32"]
            )
        )
        above = (
            f"the peak assumes the {peak.clock_hz / 1e9:.3g} GHz clock detected (turbo not counted); "
            "turbo or a wrong core count can exceed it"
        )
        if used < num_cores:
            memory_note += (
                f"; not scaled by threads: the cores share it, and {used} of {num_cores} cores may not "
                "reach it (each core's outstanding cache misses bound its bandwidth)"
            )
    name = f"local {local.microarchitecture}" if local.microarchitecture else "local cpu"
    return DeviceSol(
        device_name=name,
        flop_per_s=flop,
        memory_bandwidth_bytes_per_s=local.memory_bandwidth_bytes_per_s,
        note="; ".join(notes),
        memory_note=memory_note,
        compute_scope=scope,
        above_note=above,
    )


def _cpu_peak_note(formula: str, *, used: int, num_cores: int, num_threads: int | None, fp32: float) -> str:
    """``CPU peak for 1 of 2 cores (1 thread): <formula>; x 1/2 = 83.08 GFLOP/s FP32``."""
    threads = "" if num_threads is None else f" ({num_threads} thread{'s' if num_threads != 1 else ''})"
    text = f"CPU peak for {used} of {num_cores} cores{threads}: {formula}"
    if used < num_cores:
        text += f"; x {used}/{num_cores} = {format_flop_per_s(fp32)} FP32"
    return text
