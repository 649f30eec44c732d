"""The GPU names of an Nsight Systems export, by CUDA device id.

Exports of different nsys versions keep them in different tables; each is
read by its column names, newest layout first:

- ``TARGET_INFO_CUDA_GPU`` (``deviceId``/``cudaId``, ``name``);
- ``TARGET_INFO_CUDA_DEVICE`` (``cudaId``, ``gpuId``) joined with ``TARGET_INFO_GPU`` (``id``, ``name``);
- ``TARGET_INFO_GPU`` with ``deviceId``;
- older ``TARGET_INFO_GPU`` with ``cuDevice``, where rows without SMs
  (``smCount = 0``: an integrated or display adapter) are not CUDA devices.
"""

from __future__ import annotations

from typing import Final

from lightspeed.trace.io.nsys_sqlite import Export

CUDA_GPU: Final = "TARGET_INFO_CUDA_GPU"
CUDA_DEVICE: Final = "TARGET_INFO_CUDA_DEVICE"
GPU: Final = "TARGET_INFO_GPU"


def device_names(export: Export) -> dict[int, str]:
    """``CUDA device id -> name`` ("A100-PCIE-40GB"), empty when the export names no GPU."""
    for reader in (_from_cuda_gpu, _from_cuda_device, _from_gpu_device_id, _from_gpu_cu_device):
        found = reader(export)
        if found:
            return found
    return {}


def _pairs(export: Export, sql: str) -> dict[int, str]:
    found: dict[int, str] = {}
    for key, name in export.fetchall(sql):
        if isinstance(key, int) and isinstance(name, str) and name.strip():
            found.setdefault(key, name.strip())
    return found


def _from_cuda_gpu(export: Export) -> dict[int, str]:
    columns = export.columns(CUDA_GPU)
    key = next((c for c in ("deviceId", "cudaId", "id") if c in columns), None)
    if key is None or "name" not in columns:
        return {}
    return _pairs(export, f'SELECT "{key}", "name" FROM "{CUDA_GPU}"')


def _from_cuda_device(export: Export) -> dict[int, str]:
    if not ({"cudaId", "gpuId"} <= export.columns(CUDA_DEVICE) and {"id", "name"} <= export.columns(GPU)):
        return {}
    return _pairs(
        export,
        f'SELECT d."cudaId", g."name" FROM "{CUDA_DEVICE}" AS d JOIN "{GPU}" AS g ON g."id" = d."gpuId"',
    )


def _from_gpu_device_id(export: Export) -> dict[int, str]:
    if not {"deviceId", "name"} <= export.columns(GPU):
        return {}
    return _pairs(export, f'SELECT "deviceId", "name" FROM "{GPU}"')


def _from_gpu_cu_device(export: Export) -> dict[int, str]:
    columns = export.columns(GPU)
    if not {"cuDevice", "name"} <= columns:
        return {}
    cuda_only = ' WHERE "smCount" > 0' if "smCount" in columns else ""
    return _pairs(export, f'SELECT "cuDevice", "name" FROM "{GPU}"{cuda_only}')
