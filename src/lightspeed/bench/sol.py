"""The speed of light each benchmark result is compared with, from the catalog.

A GPU is looked up by the name the driver reports; a CPU through the catalog's
local-CPU detection (peak from the microarchitecture table, with its stated
assumptions). A device the catalog does not know gets no SOL and a note
saying so and how to name one (``--sol-device``): never a silent guess.
``--sol-device`` names a catalog accelerator record for a GPU run or a CPU record for a CPU run
(the other kind is refused: a CPU measured against an H100's peaks is no comparison); a CPU record's peak
is derived as detection derives one (its microarchitecture at its base clock,
this machine's sockets) and scaled by the threads the same way.

A CPU's compute peak counts every core of every socket; a run on fewer threads
than cores is compared with the share of the cores it could occupy
(``min(threads, cores) / cores`` of the peak). Memory bandwidth is shared by
the cores and stays the socket's figure (a note says when fewer cores than the
socket has may not reach it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from lightspeed.bench.runtime import BenchDevice
from lightspeed.catalog import (
    Accelerator,
    Catalog,
    Cpu,
    CpuPeak,
    LocalCpu,
    cpu_record_peak,
    detect_cpu,
    read_cpu_info,
)
from lightspeed.catalog.names import closest_records
from lightspeed.errors import UnknownNameError, UserInputError
from lightspeed.records import Record
from lightspeed.units import compute_precision, format_flop_per_s

# How a bench user names a SOL (hw detect names its own options for what detection lacks)
SOL_DEVICE_HINT: Final = "name a catalog device or CPU record with --sol-device ('lightspeed hw list')"


@dataclass(frozen=True)
class DeviceSol(Record):
    """Peak figures of the device a suite runs on (base SI; ``None`` = unknown).

    ``host_link_bytes_per_s`` and ``scale_up_bytes_per_s`` are per direction
    (what one copy or nccl-tests' busbw can reach), not the bidirectional totals
    vendors print. ``compute_scope`` says which part of the device the compute
    peaks count (``1 of 2 cores``; empty: the whole device); ``above_note`` why a
    result can exceed the compute peak (the clock the peak assumes).
    ``precision_notes`` derive each compute peak where it has its own derivation
    (a CPU's FP64 lanes, its BF16 matrix path); ``figures_from`` is where the
    figures come from (named when a precision has none).
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
    precision_notes: Mapping[str, str] = field(default_factory=dict)
    figures_from: str = "the catalog"

    def memory(self) -> tuple[float | None, str]:
        """Memory bandwidth SOL and the note that goes with it (why it is unknown, or its basis)."""
        note = self.memory_note or self.note
        if self.memory_bandwidth_bytes_per_s is None and not note:
            note = "no memory bandwidth figure for this device"
        return self.memory_bandwidth_bytes_per_s, note

    def compute(self, precision: str) -> tuple[float | None, str]:
        """Dense peak FLOP/s a GEMM in ``precision`` can reach, and the note that derives it (or
        says why it is unknown).

        A GEMM runs on the matrix units, so where the catalog has a matrix row for the precision
        (``fp64_tensor``: NVIDIA's FP64 tensor cores, AMD's FP64 matrix cores) that row is the
        ceiling, not the vector one: cuBLAS's DGEMM on an H200 runs at about 62 TFLOP/s, 1.8
        times the 34 TFLOP/s vector figure and 93% of the 67 TFLOP/s tensor-core one.
        A device without any compute figure keeps the reason it has none (``note``)."""
        row = compute_precision(precision)
        peak = self.flop_per_s.get(f"{row}_tensor", self.flop_per_s.get(row))
        if peak is not None:
            return peak, self.precision_notes.get(row, self.note)
        if self.device_name is None or (not self.flop_per_s and self.note):
            return None, self.note
        return None, f"{self.device_name} has no {row} compute figure in {self.figures_from}"

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

    ``sol_device`` names an accelerator record or, for a run on the CPU, a CPU record (its peak
    derived at its base clock for this machine's sockets, scaled to the threads' cores like a
    detected CPU's). An explicitly named record that does not exist is an error; a detected
    device the catalog does not know gives :meth:`DeviceSol.unknown` (a CPU: no compute figure)
    with the reason. A detected CPU's compute peak is that of the cores ``device.num_threads``
    can occupy; its memory figure is its catalog record's where its model name is in the catalog.
    """
    if sol_device is not None:
        return _named_sol(sol_device, device=device, catalog=catalog)
    if device.is_gpu:
        return _gpu_sol(device, catalog)
    return sol_from_local_cpu(detect_cpu(catalog=catalog), num_threads=device.num_threads)


def _named_sol(name: str, *, device: BenchDevice, catalog: Catalog) -> DeviceSol:
    """The SOL of the record ``name``: an accelerator for a GPU run, a CPU for a CPU run.

    A record of the other kind is refused: a CPU's results beside an H100's peaks read as
    "0.0% of SOL" and would be stored (and calibrated) as such."""
    try:
        accelerator = catalog.accelerator(name)
    except UnknownNameError:
        accelerator = None
    if accelerator is not None:
        if not device.is_gpu:
            raise UserInputError(
                f"--sol-device {name} is an accelerator record ({accelerator.name}) but the benchmark "
                f"runs on the CPU ({device.name}); name a CPU record of 'lightspeed hw list', drop "
                "--sol-device to use the detected CPU, or run on a GPU with --device cuda"
            )
        return sol_from_accelerator(accelerator, note=f"SOL of {name} (named)")
    cpu = catalog.find_cpu(name)
    if cpu is None:
        accelerators, cpus = catalog.accelerators, catalog.cpus
        suggested = [  # each record once, by its best-ranked spelling (name or alias)
            *closest_records(accelerators, name, _spellings(accelerators)),
            *closest_records(cpus, name, _spellings(cpus)),
        ]
        raise UnknownNameError(
            "--sol-device record", name, suggested, hint="a device or CPU of 'lightspeed hw list'"
        )
    if device.is_gpu:
        raise UserInputError(
            f"--sol-device {name} is a CPU record but the benchmark runs on {device.torch_name} "
            f"({device.name}); name a GPU record, or run on the CPU with --device cpu"
        )
    return sol_from_cpu_record(cpu, num_sockets=read_cpu_info().num_sockets, num_threads=device.num_threads)


def _spellings(records: Mapping[str, Accelerator] | Mapping[str, Cpu]) -> list[str]:
    """Every name and alias of ``records``."""
    return [*records, *(alias for record in records.values() for alias in record.aliases)]


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
    A CPU without a peak gets the reason and how to name a record (``--sol-device``).
    """
    name = f"local {local.microarchitecture}" if local.microarchitecture else "local cpu"
    memory_note = f"memory SOL: {_bench_memory_note(local)}"
    if local.peak is None:
        return DeviceSol(
            device_name=name,
            memory_bandwidth_bytes_per_s=local.memory_bandwidth_bytes_per_s,
            note=f"no CPU peak: {'; '.join(local.assumptions)}; {_record_hint(local)}",
            memory_note=memory_note,
            figures_from="the microarchitecture table",
        )
    return _cpu_peak_sol(
        local.peak,
        name=name,
        num_threads=num_threads,
        memory_bandwidth_bytes_per_s=local.memory_bandwidth_bytes_per_s,
        memory_note=memory_note,
        basis="CPU peak",
        clock_source=_local_clock_source(local),
    )


def _local_clock_source(local: LocalCpu) -> str:
    """Where a local CPU's peak clock comes from: detection (with how it was read) or the caller."""
    assert local.peak is not None
    if local.info.clock_hz == local.peak.clock_hz:
        return f"clock detected ({local.info.clock_note})"
    return "clock given by the user"


def sol_from_cpu_record(cpu: Cpu, *, num_sockets: int = 1, num_threads: int | None = None) -> DeviceSol:
    """The SOL of catalog CPU ``cpu`` named with ``--sol-device``: its microarchitecture's peak at
    its base clock for ``num_sockets`` sockets, scaled to the cores ``num_threads`` occupy, and
    ``num_sockets`` x its memory figure (not scaled: the cores share it)."""
    bandwidth = cpu.memory_bandwidth_bytes_per_s
    memory = None if bandwidth is None else num_sockets * bandwidth
    memory_note = (
        f"memory SOL: {num_sockets} socket(s) x the {cpu.display_name} figure (SOL of {cpu.name}, named)"
        if memory is not None
        else f"memory SOL: unknown: the catalog has no memory bandwidth figure for {cpu.name}"
    )
    peak = cpu_record_peak(cpu, num_sockets)
    if peak is None:
        return DeviceSol(
            device_name=cpu.name,
            memory_bandwidth_bytes_per_s=memory,
            note=f"no CPU peak: microarchitecture {cpu.microarchitecture!r} of {cpu.name} is not in the table"
            f"; {SOL_DEVICE_HINT}",
            memory_note=memory_note,
            figures_from="the microarchitecture table",
        )
    return _cpu_peak_sol(
        peak,
        name=cpu.name,
        num_threads=num_threads,
        memory_bandwidth_bytes_per_s=memory,
        memory_note=memory_note,
        basis=f"SOL of {cpu.name} (named)",
        clock_source=f"base clock of the {cpu.name} record named with --sol-device, not this machine's",
    )


def _cpu_peak_sol(
    peak: CpuPeak,
    *,
    name: str,
    num_threads: int | None,
    memory_bandwidth_bytes_per_s: float | None,
    memory_note: str,
    basis: str,
    clock_source: str,
) -> DeviceSol:
    """A CPU peak scaled to the cores ``num_threads`` occupy, each precision with its derivation;
    ``clock_source`` says where the clock the peak assumes comes from (detected, or a named
    record's base clock), for results that beat it."""
    num_cores = peak.num_sockets * peak.num_cores_per_socket
    used = num_cores_used(num_threads=num_threads, num_cores=num_cores)
    share = used / num_cores
    whole = {"fp64": peak.fp64_flop_per_s, "fp32": peak.fp32_flop_per_s}
    if peak.bf16_flop_per_s is not None:
        whole["bf16"] = peak.bf16_flop_per_s
    flop = {precision: figure * share for precision, figure in whole.items()}
    threads = "" if num_threads is None else f" ({num_threads} thread{'s' if num_threads != 1 else ''})"
    scope = f"{basis} for {used} of {num_cores} cores{threads}"
    notes = {
        precision: _scaled(f"{scope}: {formula}", used=used, num_cores=num_cores, figure=flop[precision],
                           precision=precision)
        for precision, formula in peak.formulas().items()
    }  # fmt: skip
    if used < num_cores:
        memory_note += (
            f"; not scaled by threads: the cores share it, and {used} of {num_cores} cores may not "
            "reach it (each core's outstanding cache misses bound its bandwidth)"
        )
    return DeviceSol(
        device_name=name,
        flop_per_s=flop,
        memory_bandwidth_bytes_per_s=memory_bandwidth_bytes_per_s,
        note=notes["fp32"],
        memory_note=memory_note,
        compute_scope=f"{used} of {num_cores} cores",
        above_note=(
            f"the peak assumes the {peak.clock_hz / 1e9:.3g} GHz {clock_source}; a higher clock (turbo) "
            "or a wrong core count can exceed it"
        ),
        precision_notes=notes,
        figures_from="the microarchitecture table",
    )


def _scaled(text: str, *, used: int, num_cores: int, figure: float, precision: str) -> str:
    """``<derivation>; x 1/2 = 83.08 GFLOP/s FP32`` when fewer cores than the sockets have run."""
    if used < num_cores:
        text += f"; x {used}/{num_cores} = {format_flop_per_s(figure)} {precision.upper()}"
    return text


def _bench_memory_note(local: LocalCpu) -> str:
    """Detection's memory note, its hint replaced by one ``bench`` can follow when the figure is unknown."""
    note = local.memory_bandwidth_note
    if local.memory_bandwidth_bytes_per_s is not None:
        return note
    return f"{note}; {_record_hint(local)}"


def _record_hint(local: LocalCpu) -> str:
    """How to give this CPU a SOL: its own catalog record where its model name has one."""
    if local.catalog_cpu:
        return f"name its catalog record with --sol-device {local.catalog_cpu}"
    return SOL_DEVICE_HINT
