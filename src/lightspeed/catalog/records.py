"""Typed hardware records: accelerators, CPUs, links, systems, clusters.

Every figure is base SI (bytes, bytes/s, FLOP/s, W, s) and carries the key of
the source it was read from. Compute figures keep what the vendor printed,
whether it was printed with 2:4 structured sparsity, and the dense value the
rest of lightspeed divides by. Links keep per-direction and bidirectional
bandwidth apart: NVIDIA quotes NVLink and PCIe as bidirectional totals, while
nccl-tests' busbw compares with the per-direction figure.

The same concept as the base :mod:`lightspeed.records` (every record is one) and
:mod:`lightspeed.store.records` (records as stored).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from lightspeed.datafile import Source
from lightspeed.errors import UnsupportedError
from lightspeed.limits import check_kind
from lightspeed.records import Record
from lightspeed.units import compute_precision

# Compute rows a data file may hold, in display order. ``fp64_tensor`` is
# NVIDIA's FP64 tensor-core row (AMD's FP64 matrix row).
COMPUTE_ROWS: Final = (
    "fp64",
    "fp64_tensor",
    "fp32",
    "tf32",
    "bf16",
    "fp16",
    "fp8",
    "fp6",
    "fp4",
    "int8",
    "int4",
)

# Link families a cluster's scale-out (the network between nodes) may use: NICs. NVLink, NVLink-C2C,
# PCIe, xGMI and TPU ICI join accelerators inside a node, rack or pod, never nodes to each other.
SCALE_OUT_LINK_FAMILIES: Final = ("infiniband", "ethernet", "efa")


@dataclass(frozen=True)
class Conflict(Record):
    """Two vendor documents disagree on a figure; records both and the choice."""

    field: str
    values: tuple[str, ...]
    chosen: str
    sources: tuple[str, ...]
    note: str = ""


@dataclass(frozen=True)
class ComputeFigure(Record):
    """One peak-throughput row of a datasheet.

    ``printed_per_s`` is the number as printed (converted to base units),
    ``dense_per_s`` the dense peak lightspeed uses as the SOL denominator.
    ``unit`` is ``"FLOP/s"`` for floating point and ``"OP/s"`` for integer rows.
    """

    precision: str
    printed_per_s: float
    printed_with_sparsity: bool
    dense_per_s: float
    unit: str
    source: str
    note: str = ""

    @property
    def sparse_per_s(self) -> float:
        """Peak with 2:4 structured sparsity where the vendor prints it, else dense x 2."""
        return self.printed_per_s if self.printed_with_sparsity else 2.0 * self.dense_per_s


@dataclass(frozen=True)
class Link(Record):
    """One link or port type (an NVLink port, a PCIe x16 slot, an IB port).

    Bandwidths are per link/port. ``per_direction_bytes_per_s`` is what one
    direction carries after encoding; ``bidirectional_bytes_per_s`` is the
    vendor's two-way total. ``latency_s`` is a typical small-message latency
    of one hop (used as the alpha term of collective models).
    """

    name: str
    display_name: str
    aliases: tuple[str, ...]
    family: str
    per_direction_bytes_per_s: float
    bidirectional_bytes_per_s: float
    latency_s: float
    source: str
    sources: Mapping[str, Source] = field(default_factory=dict)
    note: str = ""
    path: str = ""
    latency_source: str = ""

    @property
    def is_scale_out(self) -> bool:
        """Whether this is a NIC link that may join nodes (:data:`SCALE_OUT_LINK_FAMILIES`)."""
        return self.family in SCALE_OUT_LINK_FAMILIES


@dataclass(frozen=True)
class LinkAttachment(Record):
    """How many links of which type attach one device (or node) to a fabric."""

    link: Link
    num_links: int
    source: str = ""

    @property
    def per_direction_bytes_per_s(self) -> float:
        """Total one-way bandwidth of all links of this attachment."""
        return self.num_links * self.link.per_direction_bytes_per_s

    @property
    def bidirectional_bytes_per_s(self) -> float:
        """Total two-way bandwidth (the figure vendors print)."""
        return self.num_links * self.link.bidirectional_bytes_per_s


@dataclass(frozen=True)
class Accelerator(Record):
    """A GPU or other accelerator SKU with its speed of light.

    Memory keeps the nominal capacity (what the stacks hold, in the binary
    meaning HBM and GDDR vendors give "GB": B200 192 GiB) apart from the usable
    one the vendor lists (B200 180 GB) and the one the driver reports
    (``memory_reported_bytes``, B200 183,359 MiB, never above the nominal). ``tdp_w`` is
    ``None`` where the vendor publishes no power figure (Google TPUs).
    ``num_logical_devices`` is how many devices software reports for one
    package (2 for an MI250X: each GCD appears with half the figures).
    ``power_limit_w`` is a configured cap below the TDP (``nvidia-smi -pl``):
    compute then sustains :attr:`clock_fraction` of its rated clock.
    ``tdp_includes_cpu`` marks a TDP that covers the package's own CPU too (a GH200
    superchip module, a GB10): a system's power then does not add that CPU's TDP again.
    """

    name: str
    display_name: str
    aliases: tuple[str, ...]
    vendor: str
    architecture: str
    form_factor: str
    family: str
    compute: Mapping[str, ComputeFigure]
    memory_type: str
    memory_nominal_bytes: float
    memory_usable_bytes: float
    memory_bandwidth_bytes_per_s: float
    memory_source: str
    l2_cache_bytes: float | None
    num_compute_units: int | None
    boost_clock_hz: float | None
    tdp_w: float | None
    tdp_min_w: float | None
    power_source: str
    scale_up: LinkAttachment | None
    host_link: LinkAttachment | None
    sources: Mapping[str, Source]
    conflicts: tuple[Conflict, ...] = ()
    note: str = ""
    path: str = ""
    num_logical_devices: int = 1
    chip_source: str = ""
    power_limit_w: float | None = None
    memory_reported_bytes: float | None = None
    memory_reported_source: str = ""
    tdp_includes_cpu: bool = False

    @property
    def memory_device_bytes(self) -> float:
        """Memory a process on the device can allocate from: what the driver reports
        (``nvidia-smi`` memory.total) where the catalog records it, else the listed usable figure."""
        return self.memory_reported_bytes or self.memory_usable_bytes

    @property
    def clock_fraction(self) -> float:
        """Sustained compute clock under ``power_limit_w`` relative to the rated TDP.

        Dynamic power goes as ``f V^2`` and voltage tracks frequency in the DVFS
        range, so power ~ ``f^3`` and a cap of ``P`` sustains ``(P / TDP)^(1/3)``
        of the clock (1 without a cap, or a cap at or above the TDP). Memory
        bandwidth is not scaled: HBM runs on its own clock.
        """
        if self.power_limit_w is None or self.tdp_w is None or self.power_limit_w >= self.tdp_w:
            return 1.0
        return float((self.power_limit_w / self.tdp_w) ** (1.0 / 3.0))

    def peak(self, precision: str) -> ComputeFigure:
        """The compute row for ``precision`` (``bf16``, ``fp8``, ``nvfp4`` ...).

        Raises :class:`UnsupportedError` when the device has no such row.
        """
        check_kind("precision", precision, str, "a format such as 'bf16' or 'fp8'", what="text")
        row = compute_precision(precision)
        figure = self.compute.get(row)
        if figure is None:
            raise UnsupportedError(
                f"{self.name} has no {row} compute figure; it has: {', '.join(sorted(self.compute))}"
            )
        return figure

    def dense_flop_per_s(self, precision: str) -> float:
        """Dense peak for ``precision`` in FLOP/s (OP/s for integer rows)."""
        return self.peak(precision).dense_per_s


@dataclass(frozen=True)
class Cpu(Record):
    """A CPU model (one socket) with its printed peak, if any, and memory system.

    ``clock_hz`` is the base clock, ``max_clock_hz`` the highest boost clock.
    Memory capacity and bandwidth are per socket as the vendor prints them.
    """

    name: str
    display_name: str
    aliases: tuple[str, ...]
    vendor: str
    microarchitecture: str
    num_cores: int
    clock_hz: float
    fp64_flop_per_s: float | None
    fp32_flop_per_s: float | None
    memory_type: str
    memory_capacity_bytes: float | None
    memory_bandwidth_bytes_per_s: float | None
    tdp_w: float | None
    source: str
    sources: Mapping[str, Source]
    note: str = ""
    path: str = ""
    max_clock_hz: float | None = None


@dataclass(frozen=True)
class PrintedTotal(Record):
    """A total the vendor prints for a node or rack (checked against derived sums).

    ``key`` names what is totalled (``fp4_sparse``, ``memory_capacity``, ...;
    see :data:`lightspeed.catalog.totals.TOTAL_KEYS`); ``value`` is base SI in ``unit``.
    """

    key: str
    value: float
    unit: str
    source: str
    note: str = ""


@dataclass(frozen=True)
class System(Record):
    """A node (8-GPU HGX/DGX) or rack (NVL72): accelerators, CPUs and fabrics.

    ``scale_up`` is each accelerator's attachment to the fast domain (NVLink,
    xGMI, ICI); ``scale_up_domain_size`` how many accelerators share it (8 in
    an HGX node, 72 in an NVL72 rack). ``scale_out`` is each node's attachment
    to the network between nodes (``nics_per_node`` links).

    A TPU slice's scale-up domain is a torus, not a switch: ``torus_dimensions``
    is its shape (``(16, 16)`` for a v5e pod, empty for a switched domain), and an
    axis has its wraparound link when its length is a multiple of
    ``torus_wraparound_unit`` (v5e/v6e: 16, a full pod axis); with
    ``torus_wraparound_whole_slice`` only when every axis is (v4/v5p: whole
    4x4x4 cubes joined by optical switches). See :mod:`lightspeed.catalog.torus`.

    ``cloud_provider`` names the cloud that rents the system as an instance type
    (``AWS``, ``Google Cloud``, ``Azure``: ``p5.48xlarge``, ``a3-megagpu-8g``); empty for
    the vendor's own system, which is the one a bare GPU name stands for.
    """

    name: str
    display_name: str
    aliases: tuple[str, ...]
    system_type: str
    accelerator: Accelerator
    num_accelerators: int
    cpu: Cpu | None
    num_cpus: int
    scale_up_domain_size: int
    in_network_reduction: bool
    scale_out: LinkAttachment | None
    power_max_w: float | None
    power_min_w: float | None
    printed_totals: tuple[PrintedTotal, ...]
    source: str
    sources: Mapping[str, Source]
    note: str = ""
    path: str = ""
    power_source: str = ""
    conflicts: tuple[Conflict, ...] = ()
    torus_dimensions: tuple[int, ...] = ()
    torus_wraparound_unit: int = 0
    torus_wraparound_whole_slice: bool = False
    cloud_provider: str = ""
    # a rack's node (a compute tray, a server inside it): its accelerators and their source; 0 where
    # the record is itself one node, or where no source counts the node inside it
    accelerators_per_node: int = 0
    node_source: str = ""
    # what a cluster spec calls this system where its name would read back as something else: a
    # TPU slice (``v5e-2x4``), part of a rack (``64xgb200-nvl72``); empty for a whole record
    spec_name: str = ""

    @property
    def scale_up(self) -> LinkAttachment | None:
        """Each accelerator's scale-up attachment (from the accelerator record)."""
        return self.accelerator.scale_up

    @property
    def torus_wraparound(self) -> tuple[bool, ...]:
        """Which axes of ``torus_dimensions`` close into a ring (empty for a switched domain).

        >>> from dataclasses import replace
        >>> from lightspeed.catalog import load_catalog
        >>> pod = load_catalog().system("tpu-v5e-pod")
        >>> pod.torus_wraparound, replace(pod, torus_dimensions=(8, 16)).torus_wraparound
        ((True, True), (False, True))
        """
        unit = self.torus_wraparound_unit
        wraps = tuple(unit > 0 and size > 2 and size % unit == 0 for size in self.torus_dimensions)
        if self.torus_wraparound_whole_slice and not all(wraps):
            return tuple(False for _ in wraps)
        return wraps


@dataclass(frozen=True)
class Cluster(Record):
    """``num_nodes`` copies of a system joined by a scale-out fabric.

    ``fabric`` is each node's attachment to the network between nodes: the
    system's own NICs unless a cluster spec or file names another link or NIC
    count. ``label`` is the name of a cluster defined in a file (else empty).
    """

    system: System
    num_nodes: int
    fabric: LinkAttachment | None
    label: str = ""
    path: str = ""

    @property
    def num_accelerators(self) -> int:
        """Accelerators in the whole cluster."""
        return self.num_nodes * self.system.num_accelerators

    @property
    def name(self) -> str:
        """The file's cluster name, else a readable one such as ``'9 x dgx-h100 over ib-ndr'``."""
        if self.label:
            return self.label
        fabric = f" over {self.fabric.link.name}" if self.fabric is not None else ""
        return f"{self.num_nodes} x {self.system.name}{fabric}"

    @property
    def nics_per_accelerator(self) -> float:
        """Scale-out NICs (links of ``fabric``) per accelerator; 0 without a fabric."""
        if self.fabric is None:
            return 0.0
        return self.fabric.num_links / self.system.num_accelerators

    @property
    def spec(self) -> str:
        """The compact spec string that :meth:`Catalog.parse_cluster` reads back.

        A TPU slice is written by its Google topology (``1xv5e-2x4@ethernet-100g:0.25nic``), part of
        a rack by the GPUs used in each (``2x64xgb200-nvl72@ib-ndr:1nic``): :attr:`System.spec_name`.
        The NIC count keeps 15 significant digits, so a third reads back as a third.

        >>> from lightspeed.catalog import load_catalog
        >>> load_catalog().parse_cluster("9 x DGX-H100 @ ndr").spec
        '9xdgx-h100@ib-ndr:1nic'
        """
        text = f"{self.num_nodes}x{self.system.spec_name or self.system.name}"
        if self.fabric is not None:
            text += f"@{self.fabric.link.name}:{self.nics_per_accelerator:.15g}nic"
        return text

    def scale_out_per_accelerator_bytes_per_s(self) -> float:
        """One-way scale-out bandwidth per accelerator (0 without a fabric)."""
        if self.fabric is None:
            return 0.0
        return self.fabric.per_direction_bytes_per_s / self.system.num_accelerators
