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
# GPUs one node numbers: 8 on a DGX/HGX A100, H100 or B200, 16 on an HGX-2; 64 leaves room and refuses
# an index no node has (10,000,000 made the plan build a row per GPU up to it: 36 s and 1 GB)
MAX_GPUS_PER_NODE: Final = 64
_LGI_ROW: Final = re.compile(
    r"^\|\s*(?P<gpu>\d+)\s+MIG\s+(?P<profile>\S+)\s+(?P<profile_id>\d{1,9})\s+(?P<instance>\d{1,9})\s+"
    r"(?P<start>\d{1,9}):(?P<size>\d{1,9})\s*\|$"
)
# the table's frame and header lines around the rows (nvidia-smi mig -lgi on a driver of 2020-2025)
_LGI_FRAME: Final = re.compile(
    r"^(\+[-=+]*|\|[-=\s]*\||\|\s*(GPU instances:|GPU\s+Name\s+Profile\s+Instance\s+Placement"
    r"|ID\s+ID\s+Start:Size)\s*\|)$"
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
    Every other non-blank line must be the table's frame: a row cut or changed, a GPU index no node
    has (:data:`MAX_GPUS_PER_NODE`) or other text is refused, naming its line.

    >>> rows = parse_lgi("|   0  MIG 3g.40gb          9        2          4:4     |")
    >>> rows[0].profile, rows[0].start
    ('3g.40gb', 4)
    """
    if len(text) > MAX_LGI_BYTES:
        raise TraceError(path, f"above {MAX_LGI_BYTES} bytes: not nvidia-smi mig -lgi output")
    rows, messages, other = [], 0, None
    for number, line in enumerate(text.removeprefix("\ufeff").splitlines(), start=1):
        stripped = line.strip()
        if not stripped or _LGI_FRAME.match(stripped):
            continue
        if stripped.startswith(NO_INSTANCE_MESSAGES):
            messages += 1
        elif stripped.startswith("|"):  # a row, or one cut or changed: refused where it is
            rows.append(_lgi_row(stripped, path=path, line=number))
        elif other is None:
            other = (number, stripped)
    if other is not None or not (rows or messages):
        # only a file of -lgi output alone reads as no instances: other text that mentions
        # 'No GPU instances found' may hide rows, as a row beside other text may be cut from a table
        problems = [] if other is None else [f"{other[1][:80]!r} is not nvidia-smi mig -lgi output"]
        raise TraceError(
            path,
            "; ".join(problems + ([] if rows else ["no GPU instance rows found"])),
            line=None if other is None else other[0],
            fix="save the output of 'nvidia-smi mig -lgi' alone (its 'No GPU instances found' or "
            "'No MIG-enabled devices found' reads as no instances)",
        )
    return tuple(rows)


def _lgi_row(text: str, *, path: str, line: int) -> GpuInstance:
    """The GPU instance of one stripped ``-lgi`` line that is neither the table's frame nor
    nvidia-smi's message: a row, else :class:`TraceError` naming the line (a file of other text that
    mentions 'No GPU instances found' must not read as a machine without instances)."""
    match = _LGI_ROW.match(text)
    if match is None:
        raise TraceError(
            path,
            f"not a row of nvidia-smi mig -lgi output: {text[:80]!r}",
            line=line,
            fix="save the output of 'nvidia-smi mig -lgi' unchanged (rows such as "
            "'|   0  MIG 3g.40gb   9   2   4:4   |')",
        )
    digits = match["gpu"]
    if len(digits) > len(str(MAX_GPUS_PER_NODE)) or int(digits) >= MAX_GPUS_PER_NODE:
        raise TraceError(
            path,
            f"GPU index {digits[:20]}{'...' if len(digits) > 20 else ''} is not a GPU of one node "
            f"(indexes 0 to {MAX_GPUS_PER_NODE - 1}; nodes hold 8 or 16)",
            line=line,
            fix="save the output of 'nvidia-smi mig -lgi' of one node unchanged",
        )
    return GpuInstance(
        gpu=int(digits),
        profile=match["profile"].lower(),
        profile_id=int(match["profile_id"]),
        instance_id=int(match["instance"]),
        start=int(match["start"]),
        size=int(match["size"]),
        line=line,
    )


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
