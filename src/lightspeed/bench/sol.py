"""The speed of light each benchmark result is compared with, from the catalog.

A GPU is looked up by the name the driver reports; a CPU through the catalog's
local-CPU detection (peak from the microarchitecture table, with its stated
assumptions). A device the catalog does not know gets no SOL and a note
saying so and how to name one (``--sol-device``): never a silent guess.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from lightspeed.bench.runtime import BenchDevice
from lightspeed.catalog import Accelerator, Catalog, detect_cpu
from lightspeed.records import Record
from lightspeed.units import compute_precision


@dataclass(frozen=True)
class DeviceSol(Record):
    """Peak figures of the device a suite runs on (base SI; ``None`` = unknown).

    ``host_link_bytes_per_s`` and ``scale_up_bytes_per_s`` are per direction
    (what one copy or nccl-tests' busbw can reach), not the bidirectional totals
    vendors print.
    """

    device_name: str | None
    flop_per_s: Mapping[str, float] = field(default_factory=dict)
    memory_bandwidth_bytes_per_s: float | None = None
    host_link_bytes_per_s: float | None = None
    scale_up_bytes_per_s: float | None = None
    note: str = ""
    memory_note: str = ""

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
    )


def device_sol(*, device: BenchDevice, catalog: Catalog, sol_device: str | None = None) -> DeviceSol:
    """The SOL of ``device``: the catalog record ``sol_device`` if named, else detected.

    An explicitly named record that does not exist is an error; a detected
    device the catalog does not know gives :meth:`DeviceSol.unknown` with the reason.
    """
    if sol_device is not None:
        return sol_from_accelerator(catalog.accelerator(sol_device), note=f"SOL of {sol_device} (named)")
    if device.is_gpu:
        return _gpu_sol(device, catalog)
    return _cpu_sol()


def _gpu_sol(device: BenchDevice, catalog: Catalog) -> DeviceSol:
    record = catalog.find_device(device.name)
    if record is None:
        return DeviceSol.unknown(
            f"GPU {device.name!r} is not in the catalog; name its record with --sol-device"
        )
    return sol_from_accelerator(record, note=f"catalog record {record.name} for {device.name!r}")


def _cpu_sol() -> DeviceSol:
    """The local CPU's peak (microarchitecture table) and memory figure, each with its assumptions.

    Built from :func:`lightspeed.catalog.detect_cpu` rather than the CPU-as-accelerator
    record so that a missing bandwidth figure does not hide a known compute peak.
    """
    local = detect_cpu()
    flop: dict[str, float] = {}
    notes: list[str] = []
    if local.peak is None:
        notes.append(f"no CPU peak: {'; '.join(local.assumptions)}")
    else:
        flop = {"fp64": local.peak.fp64_flop_per_s, "fp32": local.peak.fp32_flop_per_s}
        if local.peak.bf16_flop_per_s is not None:
            flop["bf16"] = local.peak.bf16_flop_per_s
        notes.append(f"CPU peak {local.peak.formula}")
    name = f"local {local.microarchitecture}" if local.microarchitecture else "local cpu"
    return DeviceSol(
        device_name=name,
        flop_per_s=flop,
        memory_bandwidth_bytes_per_s=local.memory_bandwidth_bytes_per_s,
        note="; ".join(notes),
        memory_note=f"memory SOL: {local.memory_bandwidth_note}",
    )
