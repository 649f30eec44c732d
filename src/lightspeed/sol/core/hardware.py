"""The hardware side of an estimate: peaks, bandwidths, fabric and efficiencies.

Every SOL figure comes from the catalog (dense peak of the precision run, HBM
bandwidth, usable memory, links); every efficiency from the
:class:`~lightspeed.sol.core.efficiency.EfficiencyModel` (family default or a
calibration profile). Nothing here is specific to one validation row.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from typing import Final

from numpy.typing import ArrayLike

from lightspeed.catalog import Accelerator, Cluster
from lightspeed.datafile import Fields, load_toml
from lightspeed.errors import UnsupportedError
from lightspeed.paths import package_data
from lightspeed.records import Record
from lightspeed.sol.core.calibration import check_calibration_device
from lightspeed.sol.core.collectives import Fabric, RingProtocol, RingProtocols, fabric_of
from lightspeed.sol.core.efficiency import EfficiencyModel, FloatArray, default_efficiency
from lightspeed.sol.core.stacks import Stack, capped, load_stack
from lightspeed.units import bytes_per_element, compute_precision

# Compute rows whose training recipes run the linears in 8 or 4 bits and keep the weights in 16
# bits beside a low-precision copy (FP8, MXFP8, NVFP4, MXFP4): the training engine's rule, which
# `lightspeed memory --training` counts too.
QUANTIZED_LINEAR_ROWS: Final = ("fp8", "fp4")


@dataclass(frozen=True)
class RuntimeOverheads(Record):
    """Memory the framework holds outside the model (CUDA context, NCCL buffers,
    allocator fragmentation) and activation bytes per element."""

    reserved_bytes: float
    fragmentation_fraction: float
    source: str

    def reserved_of(self, usable_bytes: float) -> float:
        """Bytes not available to the model on a device with ``usable_bytes``."""
        return min(self.reserved_bytes, 0.05 * usable_bytes) + self.fragmentation_fraction * usable_bytes


def _runtime_fields() -> Fields:
    path = package_data("sol", "data", "runtime.toml")
    return Fields(str(path), load_toml(path))


@functools.lru_cache(maxsize=1)
def load_runtime_overheads() -> RuntimeOverheads:
    """The documented defaults in ``sol/data/runtime.toml`` (read once)."""
    table = _runtime_fields().table("memory")
    assert table is not None
    return RuntimeOverheads(
        reserved_bytes=table.quantity("reserved", "bytes"),
        fragmentation_fraction=table.number("fragmentation_fraction", positive=False),
        source=table.string("source"),
    )


@dataclass(frozen=True)
class LatencyFloors(Record):
    """Fixed costs no bandwidth or FLOP figure covers (``[launch]`` and ``[collectives]`` of
    ``sol/data/runtime.toml``, cited there): the GPU time each kernel costs beyond its
    roofline, what every NCCL collective costs before its first hop, and NCCL's ring protocols
    on an NVLink domain (``[collectives.protocols]``)."""

    gpu_kernel_s: float
    collective_base_latency_s: float
    launch_source: str
    collectives_source: str
    ring_protocols: RingProtocols


@functools.lru_cache(maxsize=1)
def load_latency_floors() -> LatencyFloors:
    """The cited fixed costs per kernel and per collective (read once).

    >>> round(load_latency_floors().collective_base_latency_s, 12)
    6.6e-06
    """
    fields = _runtime_fields()
    launch = fields.table("launch")
    collectives_table = fields.table("collectives")
    assert launch is not None
    assert collectives_table is not None
    return LatencyFloors(
        gpu_kernel_s=launch.quantity("gpu_kernel", "seconds"),
        collective_base_latency_s=collectives_table.quantity("base_latency", "seconds"),
        launch_source=launch.string("source"),
        collectives_source=collectives_table.string("source"),
        ring_protocols=_ring_protocols(collectives_table),
    )


def _ring_protocols(collectives_table: Fields) -> RingProtocols:
    """NCCL's ring protocols of ``[collectives.protocols]`` (LL128 and Simple: ``<name>_base_latency``,
    ``<name>_step_latency``, ``<name>_bandwidth_share``)."""
    table = collectives_table.table("protocols")
    assert table is not None
    protocols = tuple(
        RingProtocol(
            name=name,
            base_latency_s=table.quantity(f"{name}_base_latency", "seconds"),
            step_latency_s=table.quantity(f"{name}_step_latency", "seconds"),
            bandwidth_share=table.number(f"{name}_bandwidth_share"),
        )
        for name in table.strings("protocols")
    )
    return RingProtocols(
        link_families=table.strings("link_families"),
        ll_bandwidth_share=table.number("ll_bandwidth_share"),
        protocols=protocols,
        in_switch_latency_s=table.quantity("in_switch_latency", "seconds"),
    )


@dataclass(frozen=True)
class Hardware(Record):
    """What one GPU of a cluster can do, and how it talks to the others."""

    cluster: Cluster
    accelerator: Accelerator
    precision: str
    peak_flop_per_s: float
    memory_bandwidth_bytes_per_s: float
    usable_memory_bytes: float
    input_bytes_per_element: float
    activation_bytes_per_element: float
    fabric: Fabric
    efficiency: EfficiencyModel
    overheads: RuntimeOverheads
    stack: Stack
    compute_row: str = "bf16"
    clock_fraction: float = 1.0
    calibration_note: str = ""  # set when a calibration from another device is applied by --force

    def compute_text(self, precision: str) -> str:
        """The format the GEMMs of a run in ``precision`` compute in, as assumption lines name it:
        ``fp32 on the TF32 tensor cores`` where FP32 runs at the TF32 rate (PyTorch's
        ``allow_tf32``; with it off, FP32 GEMMs run far slower), else ``precision`` itself."""
        if self.compute_row == "tf32" and precision != "tf32":
            return (
                f"{precision} on the TF32 tensor cores (PyTorch's allow_tf32; FP32 GEMMs are far "
                "slower without it)"
            )
        return precision

    @property
    def quantized_linears(self) -> bool:
        """Whether the run's linears compute in an 8- or 4-bit format (FP8, MXFP8, NVFP4, MXFP4
        recipes): their inputs and output gradients are cast, their weights kept beside a 16-bit copy."""
        return self.compute_row in QUANTIZED_LINEAR_ROWS

    def in_bf16(self) -> Hardware:
        """The same GPU running its linears in BF16: the layers an FP8 or FP4 recipe keeps wide
        (Megatron's ``num_layers_at_start_in_bf16`` / ``num_layers_at_end_in_bf16``)."""
        row = "bf16" if "bf16" in self.accelerator.compute else "fp16"
        return replace(
            self,
            precision=row,
            peak_flop_per_s=self.accelerator.compute[row].dense_per_s,
            input_bytes_per_element=self.activation_bytes_per_element,
            compute_row=row,
        )

    @property
    def sustained_flop_per_s(self) -> float:
        """Peak of the precision run times the clock a power cap leaves and the share of the
        kernel ceilings the stack sustains: the rate every GEMM and attention efficiency multiplies."""
        return self.peak_flop_per_s * self.clock_fraction * self.stack.kernel_efficiency

    def gemm_flop_per_s(
        self, m: ArrayLike, n: ArrayLike, k: ArrayLike, compute_row: str | None = None
    ) -> FloatArray:
        """Sustained FLOP/s of an ``(m x k) @ (k x n)`` GEMM on ``compute_row`` (default: the run's)."""
        row = compute_row or self.compute_row
        peak = (
            self.accelerator.compute[row].dense_per_s
            if row in self.accelerator.compute
            else self.peak_flop_per_s
        )
        scale = self.clock_fraction * self.stack.kernel_efficiency
        rate: FloatArray = peak * scale * self.efficiency.gemm_efficiency(m, n, k, row)
        return rate

    @property
    def num_gpus(self) -> int:
        """Accelerators in the cluster."""
        return self.cluster.num_accelerators

    @property
    def domain_size(self) -> int:
        """GPUs per scale-up domain."""
        return self.fabric.scale_up.domain_size


def fp32_runs_on_tf32(accelerator: Accelerator) -> bool:
    """Whether fp32 GEMMs are priced on ``accelerator``'s TF32 tensor-core row (PyTorch's
    ``allow_tf32``): where it has one, on GPUs."""
    return "tf32" in accelerator.compute and accelerator.family != "cpu"


def _no_compute_row(accelerator: Accelerator, row: str, asked: str | None) -> UnsupportedError:
    """The one-line refusal of a precision whose compute row ``accelerator`` lacks; ``asked``: the
    precision the user named, where it was mapped to ``row``."""
    held = ", ".join(sorted(accelerator.compute)) or "none"
    if asked is None:
        return UnsupportedError(
            f"{accelerator.name} has no {row} compute figure (it has {held}); choose another precision"
        )
    return UnsupportedError(
        f"{accelerator.name} has no compute figure for precision {asked} (its GEMMs would run on the "
        f"{row} row, which it lacks; it has {held}); choose another precision"
    )


def hardware_for(
    cluster: Cluster,
    precision: str,
    efficiency: EfficiencyModel | None = None,
    sharp: bool = False,
    stack: Stack | None = None,
    *,
    asked: str | None = None,
) -> Hardware:
    """Bundle the catalog figures an estimate needs for ``precision`` on ``cluster``.

    The peak is the accelerator's *dense* figure for the precision the GEMMs run
    in; fp32 training uses the TF32 tensor row when the device has one (as
    PyTorch does with ``allow_tf32``), else plain FP32. ``sharp`` turns on
    in-network reduction on the scale-out network (InfiniBand SHARP).
    ``stack`` is the software profile (default: the current one); memory is what
    the driver reports; a power cap derates compute by the clock it leaves. A
    calibrated ``efficiency`` measured on another device is refused unless it was
    loaded with ``force`` (:func:`~lightspeed.sol.core.calibration.check_calibration_device`).
    ``asked`` is the precision the user named where ``precision`` is the format it was mapped to
    (an inference plan's bf16 runs in fp16 on a GPU without bf16): a missing row names both.
    """
    accelerator = cluster.system.accelerator
    row = compute_precision(precision)
    if row == "fp32" and fp32_runs_on_tf32(accelerator):
        row = "tf32"
    if row not in accelerator.compute:
        raise _no_compute_row(accelerator, row, asked if asked != precision else None)
    model = efficiency or default_efficiency(accelerator.family)
    note = check_calibration_device(model, device=accelerator.name, family=accelerator.family)
    activation_bytes = 4.0 if row in ("fp32", "tf32") else 2.0
    return Hardware(
        cluster=cluster,
        accelerator=accelerator,
        precision=precision,
        peak_flop_per_s=accelerator.compute[row].dense_per_s,
        memory_bandwidth_bytes_per_s=accelerator.memory_bandwidth_bytes_per_s,
        usable_memory_bytes=accelerator.memory_device_bytes,
        input_bytes_per_element=min(bytes_per_element(precision), activation_bytes),
        activation_bytes_per_element=activation_bytes,
        fabric=fabric_of(
            cluster,
            model.collective_bandwidth_efficiency,
            sharp,
            base_latency_s=load_latency_floors().collective_base_latency_s,
            reduction_efficiency=model.nvls_all_reduce_efficiency or 0.0,
            ring_protocols=load_latency_floors().ring_protocols,
        ),
        efficiency=model,
        overheads=load_runtime_overheads(),
        stack=capped(stack or load_stack(), accelerator.architecture),
        compute_row=row,
        clock_fraction=accelerator.clock_fraction,
        calibration_note=note,
    )
