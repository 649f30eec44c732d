"""The counters a monitor samples: one name per quantity, its unit, and its dcgm-exporter name.

Values are base SI inside lightspeed (ratios 0..1, Hz, bytes, watts, joules,
bytes per second); the Prometheus exporter converts to the units
dcgm-exporter uses (percent, MHz, MiB, millijoules) so that existing Grafana
dashboards read lightspeed's metrics unchanged. ``kind`` says how a series is
summarised over a window: a ``gauge`` by its time-weighted mean, a
``counter`` (cumulative, like the energy counter) by its increase, a
``bitmask`` (clock event reasons) by the share of samples with a bit set, and
``last`` (the last XID error) by its latest value.

>>> METRICS["power_w"].exporter_name, METRICS["power_w"].unit
('DCGM_FI_DEV_POWER_USAGE', 'W')
>>> METRICS["gpu_util_ratio"].to_exporter(0.5)
50.0
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

from lightspeed.records import Record

MIB: Final = 2.0**20


@dataclass(frozen=True)
class MetricSpec(Record):
    """One counter: its name (with its unit), kind, device kind and exporter name.

    ``exporter_scale`` multiplies the SI value into the exporter's unit
    (a ratio x 100 = percent, Hz x 1e-6 = MHz, bytes / 2^20 = MiB).
    """

    name: str
    unit: str
    kind: str
    device_kind: str
    description: str
    exporter_name: str
    exporter_scale: float = 1.0
    exporter_unit: str = ""

    def to_exporter(self, value: float) -> float:
        """``value`` (SI) in the exporter's unit."""
        return value * self.exporter_scale


def _gpu(
    name: str, unit: str, description: str, exporter: str, scale: float = 1.0, *, kind: str = "gauge"
) -> MetricSpec:
    return MetricSpec(
        name=name,
        unit=unit,
        kind=kind,
        device_kind="gpu",
        description=description,
        exporter_name=exporter,
        exporter_scale=scale,
    )


def _host(name: str, unit: str, description: str, exporter: str) -> MetricSpec:
    return MetricSpec(
        name=name,
        unit=unit,
        kind="gauge",
        device_kind="host",
        description=description,
        exporter_name=exporter,
    )


_SPECS: Final = (
    # NVML (nvidia-ml-py)
    _gpu(
        "gpu_util_ratio", "ratio", "time a kernel ran in the last sample period", "DCGM_FI_DEV_GPU_UTIL", 100
    ),
    _gpu(
        "memory_util_ratio",
        "ratio",
        "time device memory was read or written in the last sample period",
        "DCGM_FI_DEV_MEM_COPY_UTIL",
        100,
    ),
    _gpu("sm_clock_hz", "Hz", "SM clock", "DCGM_FI_DEV_SM_CLOCK", 1e-6),
    _gpu("max_sm_clock_hz", "Hz", "maximum SM clock of the device", "DCGM_FI_DEV_MAX_SM_CLOCK", 1e-6),
    _gpu("memory_clock_hz", "Hz", "memory clock", "DCGM_FI_DEV_MEM_CLOCK", 1e-6),
    _gpu(
        "clock_event_reasons",
        "bitmask",
        "why the clocks are held down (NVML clocks event / throttle reasons)",
        "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS",
        kind="bitmask",
    ),
    _gpu("memory_used_bytes", "B", "device memory in use", "DCGM_FI_DEV_FB_USED", 1 / MIB),
    _gpu("memory_total_bytes", "B", "device memory", "DCGM_FI_DEV_FB_TOTAL", 1 / MIB),
    _gpu("temperature_celsius", "C", "GPU temperature", "DCGM_FI_DEV_GPU_TEMP"),
    _gpu("power_w", "W", "power draw", "DCGM_FI_DEV_POWER_USAGE"),
    _gpu("power_limit_w", "W", "enforced power limit", "DCGM_FI_DEV_POWER_MGMT_LIMIT"),
    _gpu(
        "energy_j",
        "J",
        "energy consumed since the driver loaded",
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        1e3,
        kind="counter",
    ),
    _gpu("pcie_tx_bytes_per_s", "B/s", "PCIe transmit throughput", "DCGM_FI_PROF_PCIE_TX_BYTES"),
    _gpu("pcie_rx_bytes_per_s", "B/s", "PCIe receive throughput", "DCGM_FI_PROF_PCIE_RX_BYTES"),
    _gpu("nvlink_tx_bytes_per_s", "B/s", "NVLink transmit throughput", "DCGM_FI_PROF_NVLINK_TX_BYTES"),
    _gpu("nvlink_rx_bytes_per_s", "B/s", "NVLink receive throughput", "DCGM_FI_PROF_NVLINK_RX_BYTES"),
    _gpu(
        "ecc_corrected_errors",
        "count",
        "corrected (single-bit) ECC errors since the driver loaded",
        "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
        kind="counter",
    ),
    _gpu(
        "ecc_uncorrected_errors",
        "count",
        "uncorrected (double-bit) ECC errors since the driver loaded",
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
        kind="counter",
    ),
    _gpu("xid_last", "code", "the last XID error seen while sampling", "DCGM_FI_DEV_XID_ERRORS", kind="last"),
    _gpu("num_mig_instances", "count", "MIG GPU instances on the device", "lightspeed_gpu_mig_instances"),
    # DCGM profiling fields (DCGM Python bindings)
    _gpu(
        "gr_engine_active_ratio", "ratio", "graphics/compute engine active", "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
    ),
    _gpu("sm_active_ratio", "ratio", "cycles an SM had at least one warp", "DCGM_FI_PROF_SM_ACTIVE"),
    _gpu("sm_occupancy_ratio", "ratio", "resident warps over the SM maximum", "DCGM_FI_PROF_SM_OCCUPANCY"),
    _gpu(
        "tensor_active_ratio", "ratio", "cycles the tensor pipe was active", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"
    ),
    _gpu("dram_active_ratio", "ratio", "cycles the DRAM interface was active", "DCGM_FI_PROF_DRAM_ACTIVE"),
    # the host (psutil)
    _host("cpu_util_ratio", "ratio", "busy share of all host CPUs", "lightspeed_host_cpu_utilization_ratio"),
    _host("host_memory_used_bytes", "B", "host memory in use", "lightspeed_host_memory_used_bytes"),
    _host("host_memory_total_bytes", "B", "host memory", "lightspeed_host_memory_total_bytes"),
    _host(
        "net_tx_bytes_per_s",
        "B/s",
        "bytes sent on all network interfaces but loopback",
        "lightspeed_host_network_transmit_bytes_per_second",
    ),
    _host(
        "net_rx_bytes_per_s",
        "B/s",
        "bytes received on all network interfaces but loopback",
        "lightspeed_host_network_receive_bytes_per_second",
    ),
    _host(
        "disk_read_bytes_per_s", "B/s", "bytes read from disks", "lightspeed_host_disk_read_bytes_per_second"
    ),
    _host(
        "disk_write_bytes_per_s",
        "B/s",
        "bytes written to disks",
        "lightspeed_host_disk_write_bytes_per_second",
    ),
    _host(
        "process_cpu_cores",
        "cores",
        "CPU seconds per second used by the watched process and its children",
        "lightspeed_process_cpu_cores",
    ),
    _host(
        "process_rss_bytes",
        "B",
        "resident memory of the watched process and its children",
        "lightspeed_process_resident_memory_bytes",
    ),
)

METRICS: Final[dict[str, MetricSpec]] = {spec.name: spec for spec in _SPECS}

# What a value of each unit can physically be (base SI). A ratio is a share of time or
# cycles (0 to 1: NVML's and DCGM's percentages over 100); temperatures lie between absolute
# zero and 200 C (solder melts near 220 C); everything else counts or rates something.
UNIT_RANGES: Final[dict[str, tuple[float, float]]] = {
    "ratio": (0.0, 1.0),
    "C": (-273.15, 200.0),
    **dict.fromkeys(("B", "B/s", "W", "J", "Hz", "count", "cores", "bitmask", "code"), (0.0, math.inf)),
}


# Units whose values are whole numbers: NVML holds a bitmask and an XID code in an unsigned
# 64-bit integer (a fraction, or 1e300, is no reading of either).
WHOLE_UNITS: Final = frozenset({"bitmask", "code"})
MAX_WHOLE: Final = 2.0**64


def out_of_range(metric: str, value: float) -> str:
    """Why ``value`` cannot be a reading of ``metric`` (``''`` when it can, or the metric is unknown).

    >>> out_of_range("cpu_util_ratio", -5.0)
    'cpu_util_ratio = -5 (-500%) is outside its range 0 to 1 (0% to 100%)'
    >>> out_of_range("power_w", 612.0)
    ''
    >>> out_of_range("clock_event_reasons", 0.5)
    'clock_event_reasons = 0.5 is not a whole number from 0 to 2^64 - 1 (a bitmask)'
    """
    spec = METRICS.get(metric)
    if spec is None or spec.unit not in UNIT_RANGES:
        return ""
    if spec.unit in WHOLE_UNITS and not (float(value).is_integer() and 0 <= value < MAX_WHOLE):
        return f"{metric} = {value:g} is not a whole number from 0 to 2^64 - 1 (a {spec.unit})"
    low, high = UNIT_RANGES[spec.unit]
    if low <= value <= high:
        return ""
    if spec.unit == "ratio":
        return f"{metric} = {value:g} ({value:.0%}) is outside its range 0 to 1 (0% to 100%)"
    upper = "" if math.isinf(high) else f" to {high:g}"
    return f"{metric} = {value:g} is outside its range {low:g}{upper} {spec.unit}"


# NVML clocks event reasons (nvml.h, nvmlClocksEventReason*), by bit.
CLOCK_EVENT_BITS: Final[dict[int, str]] = {
    0x1: "GPU idle",
    0x2: "applications clocks setting",
    0x4: "SW power cap",
    0x8: "HW slowdown",
    0x10: "sync boost",
    0x20: "SW thermal slowdown",
    0x40: "HW thermal slowdown",
    0x80: "HW power brake",
    0x100: "display clock setting",
}
# Those that slow a busy GPU down; idle, application clocks, sync boost and display clocks are
# not a loss.
THROTTLE_BITS: Final[dict[int, str]] = {
    bit: name for bit, name in CLOCK_EVENT_BITS.items() if bit in (0x4, 0x8, 0x20, 0x40, 0x80)
}


def throttle_names(mask: int) -> tuple[str, ...]:
    """The slowing reasons set in an NVML clocks event reasons bitmask.

    >>> throttle_names(0x4 | 0x40 | 0x1)
    ('SW power cap', 'HW thermal slowdown')
    """
    return tuple(name for bit, name in THROTTLE_BITS.items() if mask & bit)


def named_bits(mask: int) -> tuple[tuple[int, str], ...]:
    """Each bit set in an NVML clocks event reasons bitmask with its name (a bit without one: hex).

    >>> named_bits(0x5 | 0x1000)
    ((1, 'GPU idle'), (4, 'SW power cap'), (4096, '0x1000'))
    """
    bits = [1 << place for place in range(max(mask, 0).bit_length()) if mask >> place & 1]
    return tuple((bit, CLOCK_EVENT_BITS.get(bit, f"0x{bit:x}")) for bit in bits)
