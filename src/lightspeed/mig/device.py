"""The MIG layout a machine has now: from NVML when it is there, or from saved ``nvidia-smi mig -lgi`` text.

:func:`read_mig_layout` asks NVML (``nvidia-ml-py``, the ``monitor`` extra)
for every GPU instance on every GPU with MIG on; :func:`parse_lgi` reads the
same rows from ``nvidia-smi mig -lgi`` output, so a layout can be replayed
on a machine without a GPU. Nothing here changes the GPU.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from lightspeed import nvml
from lightspeed.errors import TraceError
from lightspeed.records import Record

MAX_LGI_BYTES: Final = 1 << 20
_LGI_ROW: Final = re.compile(
    r"^\|\s*(?P<gpu>\d+)\s+MIG\s+(?P<profile>\S+)\s+(?P<profile_id>\d+)\s+(?P<instance>\d+)\s+"
    r"(?P<start>\d+):(?P<size>\d+)\s*\|$"
)
# What nvidia-smi mig -lgi prints instead of rows: MIG on with no instances, or MIG off on every GPU
# (as read_mig_layout finds through NVML: no instances either way).
NO_INSTANCE_MESSAGES: Final = ("No GPU instances found", "No MIG-enabled devices found")


@dataclass(frozen=True)
class GpuInstance(Record):
    """One row of ``nvidia-smi mig -lgi``: a GPU instance on GPU ``gpu``.

    ``line`` is the row's line number in the saved text (1 first; 0 when read through NVML).
    """

    gpu: int
    profile: str
    profile_id: int
    instance_id: int
    start: int
    size: int
    line: int = field(default=0, compare=False)  # where it was read, not what it is


def parse_lgi(text: str, *, path: str = "<text>") -> tuple[GpuInstance, ...]:
    """GPU instances from ``nvidia-smi mig -lgi`` output (rows ``| 0  MIG 3g.40gb  9  2  4:4 |``);
    none when it says there are none or that MIG is off (``No MIG-enabled devices found.``).

    >>> rows = parse_lgi("|   0  MIG 3g.40gb          9        2          4:4     |")
    >>> rows[0].profile, rows[0].start
    ('3g.40gb', 4)
    """
    if len(text) > MAX_LGI_BYTES:
        raise TraceError(path, f"above {MAX_LGI_BYTES} bytes: not nvidia-smi mig -lgi output")
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        match = _LGI_ROW.match(line.strip())
        if match is not None:
            rows.append(
                GpuInstance(
                    gpu=int(match["gpu"]),
                    profile=match["profile"].lower(),
                    profile_id=int(match["profile_id"]),
                    instance_id=int(match["instance"]),
                    start=int(match["start"]),
                    size=int(match["size"]),
                    line=number,
                )
            )
    if not rows and not any(message in text for message in NO_INSTANCE_MESSAGES):
        raise TraceError(
            path,
            "no GPU instance rows found",
            fix="save the output of 'nvidia-smi mig -lgi' (its 'No GPU instances found' or "
            "'No MIG-enabled devices found' reads as no instances)",
        )
    return tuple(rows)


def read_mig_layout(profile_names: Mapping[int, str] | None = None) -> tuple[GpuInstance, ...]:
    """Every GPU instance on this machine's GPUs with MIG on, read through NVML (read only).

    ``profile_names`` maps NVML profile IDs to names (``{9: "3g.40gb"}``, from
    the catalog's MIG data); an unknown ID is named ``profile-<id>``. Raises
    :class:`MissingExtraError` without ``nvidia-ml-py`` and
    :class:`UnsupportedError` when NVML cannot start (no driver).
    """
    with nvml.session(
        purpose="reading the machine's MIG layout", fix="save 'nvidia-smi mig -lgi' output instead"
    ) as module:
        return tuple(
            row
            for index, handle in nvml.device_handles(module)
            for row in _device_instances(module, index, handle, profile_names or {})
        )


def _device_instances(
    nvml: Any, index: int, handle: Any, profile_names: Mapping[int, str]
) -> list[GpuInstance]:
    try:
        current, _pending = nvml.nvmlDeviceGetMigMode(handle)
    except nvml.NVMLError:  # not MIG-capable
        return []
    if current != nvml.NVML_DEVICE_MIG_ENABLE:
        return []
    rows = []
    for profile_index in range(nvml.NVML_GPU_INSTANCE_PROFILE_COUNT):
        try:
            info = nvml.nvmlDeviceGetGpuInstanceProfileInfo(handle, profile_index)
            instances = nvml.nvmlDeviceGetGpuInstances(handle, info.id)
        except nvml.NVMLError:  # profile not supported on this GPU
            continue
        for instance in instances:
            details = nvml.nvmlGpuInstanceGetInfo(instance)
            rows.append(
                GpuInstance(
                    gpu=index,
                    profile=profile_names.get(info.id, f"profile-{info.id}"),
                    profile_id=int(info.id),
                    instance_id=int(details.id),
                    start=int(details.placement.start),
                    size=int(details.placement.size),
                )
            )
    return rows
