"""DCGM profiling fields through stand-ins of DCGM's bindings (no DCGM on this machine)."""

from __future__ import annotations

import sys
import types
from collections.abc import Mapping
from typing import Any

import pytest

from lightspeed.errors import MissingExtraError, UnsupportedError
from lightspeed.monitor import DcgmBackend

# Field ids as dcgm_fields.h defines them.
IDS = {
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE": 1001,
    "DCGM_FI_PROF_SM_ACTIVE": 1002,
    "DCGM_FI_PROF_SM_OCCUPANCY": 1003,
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": 1004,
    "DCGM_FI_PROF_DRAM_ACTIVE": 1005,
    "DCGM_FI_PROF_PCIE_TX_BYTES": 1009,
    "DCGM_FI_PROF_PCIE_RX_BYTES": 1010,
    "DCGM_FI_PROF_NVLINK_TX_BYTES": 1011,
    "DCGM_FI_PROF_NVLINK_RX_BYTES": 1012,
}


def bindings(latest: Mapping[int, Mapping[int, float]]) -> tuple[types.ModuleType, Any]:
    fields = types.ModuleType("dcgm_fields")
    for name, value in IDS.items():
        setattr(fields, name, value)
    made: list[dict[str, Any]] = []

    class Reader:
        def __init__(self, **kwargs: Any) -> None:
            made.append(kwargs)

        def GetLatestGpuValuesAsFieldIdDict(self) -> Mapping[int, Mapping[int, float]]:
            return latest

        def Shutdown(self) -> None:
            made.append({"shutdown": True})

    Reader.made = made  # type: ignore[attr-defined]
    return fields, Reader


def test_profiling_fields_map_to_metrics_and_blank_ones_are_none() -> None:
    # GPU 1 lacks NVLink fields (DCGM drops blank values from the dict)
    latest = {0: {1002: 0.81, 1003: 0.42, 1004: 0.55, 1005: 0.30, 1011: 2.0e11, 1012: 1.9e11}, 1: {1002: 0.1}}
    fields, reader = bindings(latest)
    backend = DcgmBackend(interval_s=0.5, modules=(fields, reader))
    devices = backend.open()
    assert [device.device_id for device in devices] == ["gpu0", "gpu1"]
    assert reader.made[0]["updateFrequency"] == 500_000  # microseconds
    assert sorted(reader.made[0]["fieldIds"]) == sorted(IDS.values())
    values = backend.read()
    assert values["gpu0"]["sm_active_ratio"] == 0.81
    assert values["gpu0"]["tensor_active_ratio"] == 0.55
    assert values["gpu0"]["nvlink_tx_bytes_per_s"] == 2.0e11
    assert values["gpu1"]["nvlink_tx_bytes_per_s"] is None
    backend.close()
    assert reader.made[-1] == {"shutdown": True}


def test_interval_is_at_least_dcgms_100_ms() -> None:
    fields, reader = bindings({0: {1002: 0.5}})
    DcgmBackend(interval_s=0.01, modules=(fields, reader)).open()
    assert reader.made[0]["updateFrequency"] == 100_000


def test_no_host_engine_is_unsupported() -> None:
    fields, reader = bindings({})
    with pytest.raises(UnsupportedError, match="nv-hostengine"):
        DcgmBackend(modules=(fields, reader)).open()


def test_missing_bindings_name_where_they_come_from(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "dcgm_fields", None)
    with pytest.raises(MissingExtraError, match="bindings/python3"):
        DcgmBackend().open()
