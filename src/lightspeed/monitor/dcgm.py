"""DCGM profiling fields through DCGM's own Python bindings, when they can be imported.

NVML's utilisation says only whether *a* kernel ran; DCGM's profiling fields
say how much of the GPU it used: SM active (cycles an SM had a warp), SM
occupancy, tensor pipe active, DRAM active, and NVLink / PCIe bytes per
second. The bindings ship with DCGM (``/usr/local/dcgm/bindings/python3``,
put it on ``PYTHONPATH``) and talk to its host engine (``nv-hostengine``,
which ``dcgm-exporter`` also uses). Field ids are looked up by name in the
bindings' ``dcgm_fields`` module, so a DCGM that lacks a field leaves that
metric ``None``. DCGM samples profiling fields at most every 100 ms.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any, Final, Protocol

from lightspeed.errors import MissingExtraError, UnsupportedError, first_line
from lightspeed.monitor.backend import Backend, DeviceInfo, Reading, Values

# lightspeed metric -> DCGM field name (dcgm_fields.h); all are ratios or bytes per second.
FIELDS: Final[dict[str, str]] = {
    "gr_engine_active_ratio": "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
    "sm_active_ratio": "DCGM_FI_PROF_SM_ACTIVE",
    "sm_occupancy_ratio": "DCGM_FI_PROF_SM_OCCUPANCY",
    "tensor_active_ratio": "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
    "dram_active_ratio": "DCGM_FI_PROF_DRAM_ACTIVE",
    "nvlink_tx_bytes_per_s": "DCGM_FI_PROF_NVLINK_TX_BYTES",
    "nvlink_rx_bytes_per_s": "DCGM_FI_PROF_NVLINK_RX_BYTES",
    "pcie_tx_bytes_per_s": "DCGM_FI_PROF_PCIE_TX_BYTES",
    "pcie_rx_bytes_per_s": "DCGM_FI_PROF_PCIE_RX_BYTES",
}
MIN_INTERVAL_S: Final = 0.1


class DcgmReaderLike(Protocol):
    """What lightspeed uses of the bindings' ``DcgmReader``."""

    def GetLatestGpuValuesAsFieldIdDict(self) -> Mapping[int, Mapping[int, float]]:  # noqa: N802 - DCGM's name
        """``{gpu id: {field id: value}}`` of the latest samples."""

    def Shutdown(self) -> None:  # noqa: N802 - DCGM's name
        """Disconnect from the host engine."""


BINDINGS_DIR: Final = "/usr/local/dcgm/bindings/python3"


class MissingDcgmError(MissingExtraError):
    """DCGM's Python bindings cannot be imported: they come with DCGM, not with a lightspeed extra."""

    def __init__(self, problem: str | None = None) -> None:
        super().__init__("dcgm_fields", "monitor", "DCGM profiling counters", problem=problem)
        found = (
            "are not importable" if problem is None else f"are installed but cannot be imported ({problem})"
        )
        message = (
            f"DCGM profiling counters need DCGM's Python bindings (dcgm_fields, DcgmReader), which {found}; "
            f"they ship with DCGM (NVIDIA's datacenter-gpu-manager package): install DCGM and put "
            f"{BINDINGS_DIR} on PYTHONPATH, or leave out --backend dcgm"
        )
        self.args = (message,)
        self.msg = message  # what ImportError.__str__ prints


def import_dcgm() -> tuple[Any, Any]:
    """``(dcgm_fields, DcgmReader class)`` from DCGM's bindings, or one clear error saying how to get them.

    >>> import sys; sys.modules["dcgm_fields"] = None  # no DCGM here
    >>> import_dcgm()
    Traceback (most recent call last):
    ...
    lightspeed.monitor.dcgm.MissingDcgmError: DCGM profiling counters need DCGM's Python bindings \
(dcgm_fields, DcgmReader), which are not importable; they ship with DCGM (NVIDIA's datacenter-gpu-manager \
package): install DCGM and put /usr/local/dcgm/bindings/python3 on PYTHONPATH, or leave out --backend dcgm
    >>> del sys.modules["dcgm_fields"]
    """
    try:
        fields = importlib.import_module("dcgm_fields")
        reader = importlib.import_module("DcgmReader").DcgmReader
    except ModuleNotFoundError as error:
        if error.name in ("dcgm_fields", "DcgmReader"):
            raise MissingDcgmError() from None
        raise MissingDcgmError(first_line(error)) from None
    except Exception as error:  # bindings of another DCGM version raise anything at import
        raise MissingDcgmError(first_line(error)) from None
    return fields, reader


def field_ids(fields: Any) -> dict[str, int]:
    """lightspeed metric -> DCGM field id, for the fields this DCGM version defines."""
    ids = {}
    for metric, name in FIELDS.items():
        value = getattr(fields, name, None)
        if isinstance(value, int):
            ids[metric] = value
    return ids


def dcgm_values(raw: Mapping[int, Any], ids: Mapping[str, int]) -> Values:
    """One GPU's ``{field id: value}`` from DCGM as lightspeed metrics (missing or blank: ``None``).

    >>> dcgm_values({1002: 0.75, 1011: 2.0e9}, {"sm_active_ratio": 1002, "nvlink_tx_bytes_per_s": 1011,
    ...                                          "dram_active_ratio": 1005})
    {'sm_active_ratio': 0.75, 'nvlink_tx_bytes_per_s': 2000000000.0, 'dram_active_ratio': None}
    """
    values: Values = {}
    for metric, field_id in ids.items():
        value = raw.get(field_id)
        values[metric] = (
            float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
        )
    return values


class DcgmBackend(Backend):
    """DCGM profiling fields of every GPU the host engine at ``hostname`` watches.

    ``modules`` is ``(dcgm_fields, DcgmReader)`` (a test passes stand-ins).
    """

    name = "dcgm"
    min_interval_s = MIN_INTERVAL_S

    def __init__(
        self,
        *,
        interval_s: float = 1.0,
        hostname: str = "localhost",
        modules: tuple[ModuleType, Callable[..., DcgmReaderLike]] | None = None,
    ) -> None:
        self.interval_s = max(interval_s, MIN_INTERVAL_S)
        self.hostname = hostname
        self._modules = modules
        self._reader: DcgmReaderLike | None = None
        self._ids: dict[str, int] = {}

    def open(self) -> tuple[DeviceInfo, ...]:
        fields, reader_class = self._modules or import_dcgm()
        self._ids = field_ids(fields)
        if not self._ids:
            raise UnsupportedError("this DCGM defines none of the profiling fields (DCGM_FI_PROF_*)")
        self._reader = reader_class(
            hostname=self.hostname,
            fieldIds=list(self._ids.values()),
            updateFrequency=round(self.interval_s * 1e6),  # microseconds
        )
        latest = self._latest()
        if not latest:
            self.close()
            raise UnsupportedError(
                f"DCGM host engine at {self.hostname} gave no GPU values; is nv-hostengine running?"
            )
        return tuple(
            DeviceInfo(device_id=f"gpu{gpu}", kind="gpu", name=f"GPU {gpu}", backend="dcgm", index=int(gpu))
            for gpu in sorted(latest)
        )

    def read(self) -> Reading:
        return {f"gpu{gpu}": dcgm_values(raw, self._ids) for gpu, raw in self._latest().items()}

    def close(self) -> None:
        if self._reader is not None:
            self._reader.Shutdown()
            self._reader = None

    def _latest(self) -> dict[int, Mapping[int, Any]]:
        if self._reader is None:
            raise UnsupportedError("the DCGM backend is not open")
        latest = self._reader.GetLatestGpuValuesAsFieldIdDict()
        return {int(gpu): values for gpu, values in dict(latest or {}).items()}
