"""The environment fingerprint stored with every result.

Numbers mean little without the machine and software that produced them
(MI300X gained ~300 TFLOP/s between ROCm 6.1 and 6.2), so every stored record
carries: CPU model and flags, core counts, frequency governor, GPUs, driver,
torch, CUDA and NCCL versions, Python, the OS and the host name. Collecting it
never imports torch: versions come from package metadata unless torch is
already loaded (then CUDA, NCCL and the GPU names are read from it too).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import socket
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from lightspeed import __version__
from lightspeed.records import Record

_CPUINFO = Path("/proc/cpuinfo")
_GOVERNOR = Path("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
_NVIDIA_DRIVER = Path("/proc/driver/nvidia/version")
# Flags that decide CPU peak and kernel choice; the full list is long and noisy.
_RELEVANT_FLAGS = (
    "avx",
    "avx2",
    "fma",
    "f16c",
    "avx512f",
    "avx512bw",
    "avx512vl",
    "avx512_bf16",
    "avx512_fp16",
    "avx512_vnni",
    "amx_bf16",
    "amx_int8",
    "amx_tile",
    "asimd",
    "sve",
    "sve2",
)


@dataclass(frozen=True)
class EnvironmentFingerprint(Record):
    """What produced a result: hardware, software versions and host.

    ``fingerprint_id`` is a stable hash of every other field, so that results
    from the same environment share one id.
    """

    host_name: str
    os: str
    python_version: str
    lightspeed_version: str
    cpu_model: str
    cpu_flags: tuple[str, ...]
    num_logical_cpus: int
    num_physical_cores: int | None
    cpu_governor: str | None
    gpus: tuple[str, ...]
    gpu_driver_version: str | None
    torch_version: str | None
    cuda_version: str | None
    nccl_version: str | None

    @property
    def fingerprint_id(self) -> str:
        """First 16 hex digits of the SHA-256 of the fields (stable across runs)."""
        text = json.dumps(self.to_dict(), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def _cpuinfo_fields(text: str) -> tuple[str, tuple[str, ...], int | None]:
    model = ""
    flags: set[str] = set()
    cores: set[tuple[str, str]] = set()
    physical_id = "0"
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if key in ("model name", "Model", "Hardware") and not model:
            model = value
        elif key in ("flags", "Features"):
            flags.update(value.split())
        elif key == "physical id":
            physical_id = value
        elif key == "core id":
            cores.add((physical_id, value))
    relevant = tuple(flag for flag in _RELEVANT_FLAGS if flag in flags)
    return model, relevant, (len(cores) or None)


def _torch_details() -> tuple[str | None, str | None, str | None, tuple[str, ...]]:
    try:
        version: str | None = metadata.version("torch")
    except metadata.PackageNotFoundError:
        version = None
    torch = sys.modules.get("torch")
    if torch is None:
        return version, None, None, ()
    cuda = getattr(torch.version, "cuda", None) or getattr(torch.version, "hip", None)
    nccl: str | None = None
    gpus: tuple[str, ...] = ()
    if torch.cuda.is_available():
        gpus = tuple(torch.cuda.get_device_name(index) for index in range(torch.cuda.device_count()))
        try:
            nccl = ".".join(str(part) for part in torch.cuda.nccl.version())
        except (AttributeError, RuntimeError):
            nccl = None
    return str(torch.__version__), cuda, nccl, gpus


def _driver_version() -> str | None:
    text = _read_text(_NVIDIA_DRIVER)
    if not text:
        return None
    for word in text.split():
        if word.count(".") in (1, 2) and word.replace(".", "").isdigit():
            return word
    return None


def environment_fingerprint() -> EnvironmentFingerprint:
    """Describe this machine and its software (cheap; never imports torch).

    >>> environment_fingerprint().num_logical_cpus >= 1
    True
    """
    model, flags, num_cores = _cpuinfo_fields(_read_text(_CPUINFO) or "")
    torch_version, cuda_version, nccl_version, gpus = _torch_details()
    governor = _read_text(_GOVERNOR)
    return EnvironmentFingerprint(
        host_name=socket.gethostname(),
        os=f"{platform.system()} {platform.release()}",
        python_version=platform.python_version(),
        lightspeed_version=__version__,
        cpu_model=model or platform.processor() or platform.machine(),
        cpu_flags=flags,
        num_logical_cpus=os.cpu_count() or 1,
        num_physical_cores=num_cores,
        cpu_governor=governor.strip() if governor else None,
        gpus=gpus,
        gpu_driver_version=_driver_version(),
        torch_version=torch_version,
        cuda_version=cuda_version,
        nccl_version=nccl_version,
    )
