"""NVML: unit conversions and unsupported metrics through a stand-in of the pynvml module
(this machine has no GPU), the real library's start-up error, and a real device when there is one."""

from __future__ import annotations

import importlib.util
import sys
import types
from typing import Any

import pytest

from lightspeed.errors import LightspeedError, MissingExtraError, UnsupportedError
from lightspeed.monitor import NvmlBackend


class NVMLError(Exception):
    def __init__(self, value: int) -> None:
        super().__init__(f"NVML error {value}")
        self.value = value


NOT_SUPPORTED = 3


def fake_nvml(*, nvlink_kib: list[float] | None = None, no_energy: bool = False) -> Any:
    """What NVML would return for one H100, in NVML's own units (mW, mJ, MHz, KB/s, KiB)."""
    calls: dict[str, int] = {}
    kib = iter(nvlink_kib or [])

    def counted(name: str, value: Any) -> Any:
        def function(*args: Any) -> Any:
            calls[name] = calls.get(name, 0) + 1
            if isinstance(value, Exception):
                raise value
            return value(*args) if callable(value) else value

        return function

    def field_values(handle: Any, ids: list[Any]) -> list[Any]:
        if ids == [91]:  # NVML_FI_DEV_NVLINK_LINK_COUNT
            return [types.SimpleNamespace(nvmlReturn=0, valueType=1, value=types.SimpleNamespace(uiVal=2))]
        per_link = next(kib)  # KiB sent (first ids) and received (last ids) on each link so far
        return [
            types.SimpleNamespace(nvmlReturn=0, valueType=3, value=types.SimpleNamespace(ullVal=per_link))
            for _ in ids
        ]

    return types.SimpleNamespace(
        NVMLError=NVMLError,
        NVML_ERROR_TIMEOUT=10,
        NVML_ERROR_UNKNOWN=999,
        NVML_CLOCK_SM=1,
        NVML_CLOCK_MEM=2,
        NVML_TEMPERATURE_GPU=0,
        NVML_PCIE_UTIL_TX_BYTES=0,
        NVML_PCIE_UTIL_RX_BYTES=1,
        NVML_MEMORY_ERROR_TYPE_CORRECTED=0,
        NVML_MEMORY_ERROR_TYPE_UNCORRECTED=1,
        NVML_VOLATILE_ECC=0,
        calls=calls,
        nvmlInit=counted("init", None),
        nvmlShutdown=counted("shutdown", None),
        nvmlDeviceGetCount=counted("count", 1),
        nvmlDeviceGetHandleByIndex=counted("handle", "h0"),
        nvmlDeviceGetName=counted("name", b"NVIDIA H100 80GB HBM3"),
        nvmlDeviceGetUUID=counted("uuid", "GPU-1234"),
        nvmlDeviceGetMigMode=counted("mig", [0, 0]),
        nvmlDeviceGetPciInfo=counted("pci", types.SimpleNamespace(busId=b"00000000:1B:00.0")),
        nvmlSystemGetDriverVersion=counted("driver", "550.54"),
        nvmlDeviceGetFieldValues=counted("fields", field_values),
        nvmlDeviceGetUtilizationRates=counted("util", types.SimpleNamespace(gpu=87, memory=41)),
        nvmlDeviceGetClockInfo=counted("clock", lambda handle, kind: 1755 if kind == 1 else 2619),
        nvmlDeviceGetMaxClockInfo=counted("max_clock", 1980),
        nvmlDeviceGetCurrentClocksEventReasons=counted("reasons", 0x40 | 0x1),
        nvmlDeviceGetMemoryInfo=counted("memory", types.SimpleNamespace(used=40 * 2**30, total=80 * 2**30)),
        nvmlDeviceGetTemperature=counted("temperature", 71),
        nvmlDeviceGetPowerUsage=counted("power", 612_500),
        nvmlDeviceGetEnforcedPowerLimit=counted("power_limit", 700_000),
        nvmlDeviceGetTotalEnergyConsumption=counted(
            "energy", NVMLError(NOT_SUPPORTED) if no_energy else 123_456_789
        ),
        nvmlDeviceGetPcieThroughput=counted("pcie", lambda handle, kind: 2_000 if kind == 0 else 500),
        nvmlDeviceGetTotalEccErrors=counted("ecc", NVMLError(NOT_SUPPORTED)),
        nvmlEventSetCreate=counted("events", "set"),
        nvmlDeviceRegisterEvents=counted("register", None),
        nvmlEventSetWait=counted("wait", NVMLError(10)),
        nvmlEventSetFree=counted("free", None),
    )


def test_values_are_converted_to_si_units() -> None:
    nvml = fake_nvml(nvlink_kib=[0.0, 1000.0])
    backend = NvmlBackend(nvml=nvml)
    (device,) = backend.open()
    assert (device.device_id, device.name, device.uuid) == ("gpu0", "NVIDIA H100 80GB HBM3", "GPU-1234")
    assert device.details["num_nvlinks"] == 2
    assert device.details["pci_bus_id"] == "00000000:1B:00.0"
    values = backend.read()["gpu0"]
    assert values["gpu_util_ratio"] == 0.87  # 87 %
    assert values["memory_util_ratio"] == 0.41
    assert values["sm_clock_hz"] == 1755e6  # MHz
    assert values["max_sm_clock_hz"] == 1980e6
    assert values["memory_clock_hz"] == 2619e6
    assert values["clock_event_reasons"] == 0x41
    assert values["memory_used_bytes"] == 40 * 2**30
    assert values["temperature_celsius"] == 71
    assert values["power_w"] == 612.5  # 612500 mW
    assert values["power_limit_w"] == 700.0
    assert values["energy_j"] == pytest.approx(123_456.789)  # mJ
    assert values["pcie_tx_bytes_per_s"] == 2e6  # 2000 KB/s, NVML's KB are 1000 bytes
    assert values["pcie_rx_bytes_per_s"] == 5e5
    assert values["num_mig_instances"] == 0
    # NVLink: 1000 KiB per link (2 links) sent and received between open and read
    assert values["nvlink_tx_bytes_per_s"] is not None
    assert values["nvlink_tx_bytes_per_s"] > 0
    assert values["xid_last"] == 0.0  # registered for XID events, none came
    backend.close()
    assert nvml.calls["shutdown"] == 1


def test_nvlink_rate_is_the_counter_increase_over_the_elapsed_time(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = iter([100.0, 102.0])  # open at t=100 s, read at t=102 s
    monkeypatch.setattr("lightspeed.monitor.nvml.time.perf_counter", lambda: next(clock))
    # each link's counters: 0 KiB at open, 1000 KiB at the read
    backend = NvmlBackend(nvml=fake_nvml(nvlink_kib=[0.0, 1000.0]))
    backend.open()
    values = backend.read()["gpu0"]
    # tx = 2 links x 1000 KiB = 2000 KiB = 2,048,000 B over 2 s = 1,024,000 B/s
    assert values["nvlink_tx_bytes_per_s"] == pytest.approx(1_024_000.0)
    assert values["nvlink_rx_bytes_per_s"] == pytest.approx(1_024_000.0)


def test_unsupported_calls_give_none_and_are_not_called_again() -> None:
    nvml = fake_nvml(nvlink_kib=[0.0] * 10, no_energy=True)
    backend = NvmlBackend(nvml=nvml)
    backend.open()
    for _ in range(3):
        values = backend.read()["gpu0"]
        assert values["energy_j"] is None
        assert values["ecc_corrected_errors"] is None
        assert values["power_w"] == 612.5
    assert nvml.calls["energy"] == 1
    assert nvml.calls["ecc"] == 2  # corrected and uncorrected, once each
    assert nvml.calls["power"] == 3


def test_no_driver_is_unsupported() -> None:
    nvml = fake_nvml()
    nvml.nvmlInit = lambda: (_ for _ in ()).throw(NVMLError(12))
    with pytest.raises(UnsupportedError, match="NVML cannot start"):
        NvmlBackend(nvml=nvml).open()


def test_bad_index_is_unsupported() -> None:
    with pytest.raises(UnsupportedError, match=r"NVML sees 1 GPU\(s\)"):
        NvmlBackend(nvml=fake_nvml(), indices=(3,)).open()


@pytest.mark.skipif(importlib.util.find_spec("pynvml") is None, reason="needs nvidia-ml-py (monitor extra)")
def test_real_library_without_a_driver_says_so() -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU (see the gpu test)")
    with pytest.raises(UnsupportedError, match="NVML cannot start"):
        NvmlBackend().open()


def test_missing_module_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)
    with pytest.raises(MissingExtraError, match=r"nvidia-ml-py.*lightspeed\[monitor\]"):
        NvmlBackend().open()


@pytest.mark.gpu
def test_real_gpu_counters_are_plausible() -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    pytest.importorskip("pynvml")
    backend = NvmlBackend(indices=(0,))
    (device,) = backend.open()
    try:
        values = backend.read()["gpu0"]
        total = torch.cuda.get_device_properties(0).total_memory
        assert values["memory_total_bytes"] is not None
        assert abs(values["memory_total_bytes"] - total) <= 0.05 * total  # torch and NVML see one device
        assert values["power_w"] is not None
        assert 10 < values["power_w"] < 2000
        assert values["sm_clock_hz"] is not None
        assert 1e8 < values["sm_clock_hz"] < 4e9
        assert 0.0 <= values["gpu_util_ratio"] <= 1.0  # type: ignore[operator]
        assert device.name
    finally:
        backend.close()


def test_a_lost_gpu_stops_the_reading_instead_of_vanishing() -> None:
    """NVML_ERROR_GPU_IS_LOST (15 in nvml.h) is a device gone, not a counter it lacks: reading
    raises, so the sampler stops and `monitor run`/`serve` say so, where the series used to
    drop out of the scrape without a word."""
    nvml = fake_nvml(nvlink_kib=[0.0] * 10)
    backend = NvmlBackend(nvml=nvml)
    backend.open()
    assert backend.read()["gpu0"]["power_w"] == 612.5
    nvml.nvmlDeviceGetPowerUsage = lambda handle: (_ for _ in ()).throw(NVMLError(15))
    with pytest.raises(LightspeedError, match="GPU gpu0 is lost"):
        backend.read()
