"""NVIDIA GPUs through NVML (``nvidia-ml-py``, the ``monitor`` extra), read only: the sampling backend.

The same concept one layer down, :mod:`lightspeed.nvml`, opens and closes NVML for every part of
lightspeed; this module samples the counters through it.

Per GPU and tick: utilisation (kernel time and memory time over the driver's
last sample period), SM and memory clocks, clocks event (throttle) reasons,
memory used and total, temperature, power draw and limit, the total energy
counter, PCIe throughput (NVML reports KB/s over a 20 ms window), NVLink
data throughput (cumulative KiB counters per link, turned into a rate between
ticks), volatile ECC error counts, the last XID error (from an NVML event set
polled without waiting) and the number of MIG GPU instances.

A call the device does not support (``NVML_ERROR_NOT_SUPPORTED``,
``NO_PERMISSION``) gives ``None`` for its metrics and is not called again: the
sampler says so once. A GPU that is lost (``NVML_ERROR_GPU_IS_LOST``) raises
instead: sampling stops and the command says so, rather than its series
silently vanishing. Units are converted here: mW to W, mJ to J, MHz to Hz,
KB/s and KiB to bytes.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any, Final

from lightspeed import nvml as nvml_access
from lightspeed.errors import LightspeedError, UnsupportedError
from lightspeed.monitor.backend import Backend, DeviceInfo, Reading, Values, rate

KIB: Final = 1024.0
# NVML field ids (nvml.h): NVLink data throughput counters in KiB, and the link count.
FI_NVLINK_LINK_COUNT: Final = 91
FI_NVLINK_THROUGHPUT_DATA_TX: Final = 138
FI_NVLINK_THROUGHPUT_DATA_RX: Final = 139
XID_EVENT: Final = 0x8  # nvmlEventTypeXidCriticalError


class NvmlBackend(Backend):
    """Counters of every GPU NVML sees (or of ``indices`` only).

    ``nvml`` is the ``pynvml`` module (a test passes a stand-in with the same
    functions). Raises :class:`UnsupportedError` when NVML cannot start (no
    driver) and when it finds no GPU.
    """

    name = "nvml"
    min_interval_s = 0.01

    def __init__(self, *, indices: tuple[int, ...] | None = None, nvml: ModuleType | None = None) -> None:
        self.indices = indices
        self._nvml: Any = nvml
        self._handles: list[tuple[str, Any]] = []
        self._unsupported: dict[str, set[str]] = {}
        self._nvlinks: dict[str, int] = {}
        self._nvlink_kib: dict[str, tuple[float | None, float | None]] = {}
        self._events: Any = None
        self._xid: dict[str, float | None] = {}
        self._last_s = 0.0
        self._started = False

    def open(self) -> tuple[DeviceInfo, ...]:
        nvml = self._nvml = self._nvml or nvml_access.import_nvml("sampling NVIDIA GPUs through NVML")
        nvml_access.start(nvml)
        self._started = True
        count = nvml.nvmlDeviceGetCount()
        chosen = self.indices if self.indices is not None else tuple(range(count))
        bad = [index for index in chosen if not 0 <= index < count]
        if bad or not chosen:
            self.close()
            raise UnsupportedError(f"NVML sees {count} GPU(s); cannot sample GPU index(es) {bad or '(none)'}")
        devices = []
        for index in chosen:
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
            device_id = f"gpu{index}"
            self._handles.append((device_id, handle))
            self._unsupported[device_id] = set()
            devices.append(self._describe(index, device_id, handle))
        self._events = self._event_set()
        self._last_s = time.perf_counter()
        for device_id, handle in self._handles:
            self._nvlink_kib[device_id] = self._nvlink_totals(device_id, handle)
        return tuple(devices)

    def close(self) -> None:
        nvml = self._nvml
        if nvml is None or not self._started:
            return
        self._started = False
        if self._events is not None:
            self._quiet(lambda: nvml.nvmlEventSetFree(self._events))
            self._events = None
        nvml_access.stop(nvml)

    def read(self) -> Reading:
        now = time.perf_counter()
        elapsed = now - self._last_s
        self._last_s = now
        self._poll_xid()
        reading: Reading = {}
        for device_id, handle in self._handles:
            values = self._device_values(device_id, handle)
            tx, rx = self._nvlink_totals(device_id, handle)
            previous_tx, previous_rx = self._nvlink_kib.get(device_id, (None, None))
            self._nvlink_kib[device_id] = (tx, rx)
            values["nvlink_tx_bytes_per_s"] = _scaled(rate(previous_tx, tx, elapsed), KIB)
            values["nvlink_rx_bytes_per_s"] = _scaled(rate(previous_rx, rx, elapsed), KIB)
            values["xid_last"] = self._xid.get(device_id)
            reading[device_id] = values
        return reading

    # -- per device ----------------------------------------------------------

    def _describe(self, index: int, device_id: str, handle: Any) -> DeviceInfo:
        nvml = self._nvml
        name = _text(self._call(device_id, "name", lambda: nvml.nvmlDeviceGetName(handle))) or f"GPU {index}"
        uuid = _text(self._call(device_id, "uuid", lambda: nvml.nvmlDeviceGetUUID(handle)))
        mig = self._call(device_id, "mig", lambda: nvml.nvmlDeviceGetMigMode(handle))
        links = self._call(device_id, "nvlink", lambda: _field(nvml, handle, FI_NVLINK_LINK_COUNT))
        self._nvlinks[device_id] = int(links) if links else 0
        pci = self._call(device_id, "pci", lambda: nvml.nvmlDeviceGetPciInfo(handle))
        driver = self._call(device_id, "driver", nvml.nvmlSystemGetDriverVersion)
        details = {
            "mig_mode": bool(mig[0]) if isinstance(mig, list | tuple) and mig else None,
            "num_nvlinks": self._nvlinks[device_id],
            "pci_bus_id": _text(getattr(pci, "busId", "")) if pci is not None else "",
            "driver_version": _text(driver),
        }
        return DeviceInfo(
            device_id=device_id,
            kind="gpu",
            name=name,
            backend="nvml",
            index=index,
            uuid=uuid,
            details=details,
        )

    def _device_values(self, device_id: str, handle: Any) -> Values:
        nvml = self._nvml
        call = self._call
        values: Values = {}
        utilization = call(device_id, "utilization", lambda: nvml.nvmlDeviceGetUtilizationRates(handle))
        values["gpu_util_ratio"] = utilization.gpu / 100.0 if utilization is not None else None
        values["memory_util_ratio"] = utilization.memory / 100.0 if utilization is not None else None
        for metric, clock in (("sm_clock_hz", nvml.NVML_CLOCK_SM), ("memory_clock_hz", nvml.NVML_CLOCK_MEM)):
            values[metric] = _scaled(
                call(device_id, metric, functools.partial(nvml.nvmlDeviceGetClockInfo, handle, clock)), 1e6
            )
        values["max_sm_clock_hz"] = _scaled(
            call(
                device_id,
                "max_sm_clock_hz",
                lambda: nvml.nvmlDeviceGetMaxClockInfo(handle, nvml.NVML_CLOCK_SM),
            ),
            1e6,
        )
        values["clock_event_reasons"] = _number(
            call(device_id, "reasons", lambda: _clock_reasons(nvml, handle))
        )
        memory = call(device_id, "memory", lambda: nvml.nvmlDeviceGetMemoryInfo(handle))
        values["memory_used_bytes"] = float(memory.used) if memory is not None else None
        values["memory_total_bytes"] = float(memory.total) if memory is not None else None
        values["temperature_celsius"] = _number(
            call(
                device_id,
                "temperature",
                lambda: nvml.nvmlDeviceGetTemperature(handle, nvml.NVML_TEMPERATURE_GPU),
            )
        )
        values["power_w"] = _scaled(
            call(device_id, "power", lambda: nvml.nvmlDeviceGetPowerUsage(handle)), 1e-3
        )
        values["power_limit_w"] = _scaled(
            call(device_id, "power_limit", lambda: nvml.nvmlDeviceGetEnforcedPowerLimit(handle)), 1e-3
        )
        values["energy_j"] = _scaled(
            call(device_id, "energy", lambda: nvml.nvmlDeviceGetTotalEnergyConsumption(handle)), 1e-3
        )
        for metric, counter in (
            ("pcie_tx_bytes_per_s", nvml.NVML_PCIE_UTIL_TX_BYTES),
            ("pcie_rx_bytes_per_s", nvml.NVML_PCIE_UTIL_RX_BYTES),
        ):
            kb_per_s = call(
                device_id, metric, functools.partial(nvml.nvmlDeviceGetPcieThroughput, handle, counter)
            )
            values[metric] = _scaled(kb_per_s, 1e3)  # NVML's "KB/s" are 1000 bytes
        for metric, kind in (
            ("ecc_corrected_errors", nvml.NVML_MEMORY_ERROR_TYPE_CORRECTED),
            ("ecc_uncorrected_errors", nvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED),
        ):
            values[metric] = _number(
                call(
                    device_id,
                    metric,
                    functools.partial(nvml.nvmlDeviceGetTotalEccErrors, handle, kind, nvml.NVML_VOLATILE_ECC),
                )
            )
        values["num_mig_instances"] = _number(call(device_id, "mig_count", lambda: _mig_count(nvml, handle)))
        return values

    def _nvlink_totals(self, device_id: str, handle: Any) -> tuple[float | None, float | None]:
        """Cumulative NVLink data KiB sent and received over all links (``None`` without NVLink)."""
        links = self._nvlinks.get(device_id, 0)
        if not links:
            return None, None
        nvml = self._nvml
        ids = [
            (field, link)
            for field in (FI_NVLINK_THROUGHPUT_DATA_TX, FI_NVLINK_THROUGHPUT_DATA_RX)
            for link in range(links)
        ]
        values = self._call(
            device_id, "nvlink_throughput", lambda: nvml.nvmlDeviceGetFieldValues(handle, ids)
        )
        if values is None:
            return None, None
        numbers = [_field_number(value) for value in values]
        if any(number is None for number in numbers):
            return None, None
        tx = sum(number for number in numbers[:links] if number is not None)
        rx = sum(number for number in numbers[links:] if number is not None)
        return float(tx), float(rx)

    def _event_set(self) -> Any:
        nvml = self._nvml
        events = self._quiet(nvml.nvmlEventSetCreate)
        if events is None:
            return None
        for device_id, handle in self._handles:
            registered = self._quiet(functools.partial(_register_xid, nvml, handle, events))
            self._xid[device_id] = 0.0 if registered else None
        return events

    def _poll_xid(self) -> None:
        """Drain XID events without waiting; remember the last code per GPU."""
        nvml = self._nvml
        if self._events is None:
            return
        for _ in range(64):  # a storm of events must not stall the sampler
            event = self._quiet(lambda: nvml.nvmlEventSetWait(self._events, 0))
            if event is None:
                return
            index = self._quiet(functools.partial(nvml.nvmlDeviceGetIndex, event.device))
            if index is not None and f"gpu{index}" in self._xid:
                self._xid[f"gpu{index}"] = float(getattr(event, "eventData", 0))

    def _call(self, device_id: str, key: str, function: Callable[[], Any]) -> Any:
        """``function()``, or ``None`` when the device lacks it (and never call it again)."""
        skipped = self._unsupported.setdefault(device_id, set())
        if key in skipped:
            return None
        try:
            return function()
        except self._nvml.NVMLError as error:
            if getattr(error, "value", None) == getattr(self._nvml, "NVML_ERROR_GPU_IS_LOST", _GPU_IS_LOST):
                # not "this device cannot": the device is gone; stop sampling so the run says so
                raise LightspeedError(
                    f"NVML: GPU {device_id} is lost (NVML_ERROR_GPU_IS_LOST: off the bus or dropped by "
                    "the driver); check the kernel log for an Xid and drain or reset the node"
                ) from error
            if _is_transient(self._nvml, error):
                return None
            skipped.add(key)
            return None

    def _quiet(self, function: Callable[[], Any]) -> Any:
        try:
            return function()
        except self._nvml.NVMLError:
            return None


_GPU_IS_LOST: Final = 15  # NVML_ERROR_GPU_IS_LOST in nvml.h


def _is_transient(nvml: Any, error: Any) -> bool:
    """Whether an NVML error may pass (a timeout), as opposed to 'this device cannot'."""
    code = getattr(error, "value", None)
    return code in {getattr(nvml, "NVML_ERROR_TIMEOUT", -1), getattr(nvml, "NVML_ERROR_UNKNOWN", -1)}


def _register_xid(nvml: Any, handle: Any, events: Any) -> bool:
    nvml.nvmlDeviceRegisterEvents(handle, XID_EVENT, events)
    return True


def _clock_reasons(nvml: Any, handle: Any) -> int:
    getter = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
    if getter is None:
        getter = nvml.nvmlDeviceGetCurrentClocksThrottleReasons
    return int(getter(handle))


def _mig_count(nvml: Any, handle: Any) -> int:
    current, _pending = nvml.nvmlDeviceGetMigMode(handle)
    if not current:
        return 0
    count = 0
    for slot in range(int(nvml.nvmlDeviceGetMaxMigDeviceCount(handle))):
        try:
            nvml.nvmlDeviceGetMigDeviceHandleByIndex(handle, slot)
        except nvml.NVMLError:
            continue
        count += 1
    return count


def _field(nvml: Any, handle: Any, field_id: int) -> float | None:
    values = nvml.nvmlDeviceGetFieldValues(handle, [field_id])
    return _field_number(values[0])


def _field_number(value: Any) -> float | None:
    """The number in an ``nvmlFieldValue_t``, or ``None`` when NVML returned an error for it."""
    if getattr(value, "nvmlReturn", 0) != 0:
        return None
    union = value.value
    member = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal", 6: "usVal"}.get(
        int(getattr(value, "valueType", 3)), "ullVal"
    )
    return float(getattr(union, member))


def _number(value: Any) -> float | None:
    return None if value is None else float(value)


def _scaled(value: Any, factor: float) -> float | None:
    return None if value is None else float(value) * factor


def _text(value: Any) -> str:
    return "" if value is None else nvml_access.text(value)
