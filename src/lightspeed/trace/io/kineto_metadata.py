"""The metadata of a Kineto trace (its top-level keys other than ``traceEvents``), checked.

msgspec decodes these keys as plain JSON values (:class:`~lightspeed.trace.io.kineto_schema.TraceDocument`);
:func:`trace_metadata` reads them into typed values, so that a wrong one is refused naming the key
that is wrong (``distributedInfo.rank``, ``deviceProperties[2].id``), its value, the file and how to
fix it, whether the key comes before the events or after them. Whole-number floats
(``85000000000.0``, as some JSON writers put every number) are read as the integers they are; a
rank or world size written as text (``"3"``) is read too. Keys lightspeed does not read
(``baseTimeNanoseconds``, ``trace_id``, ...) are not decoded at all, so they are never refused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from lightspeed.errors import TraceError
from lightspeed.trace.io.kineto_schema import TraceDocument

_WHOLE_TEXT: Final = re.compile(r"\s*[+-]?\d{1,18}\s*")  # a rank as text; longer is no rank
_FIX_DISTRIBUTED: Final = (
    "fix or remove distributedInfo (without it the rank is taken from the file name, e.g. rank-3.json)"
)
_FIX_DEVICES: Final = "fix or remove deviceProperties (then pass --device NAME to name the GPU)"


@dataclass(frozen=True)
class DeviceEntry:
    """One entry of ``deviceProperties``: the device id the events name and the GPU's name."""

    id: int | None
    name: str | None


@dataclass(frozen=True)
class TraceMetadata:
    """What lightspeed reads of a Kineto trace's metadata, checked."""

    schema_version: int | str | None = None
    rank: int | None = None
    world_size: int | None = None
    backend: str | None = None
    devices: tuple[DeviceEntry, ...] = ()


def trace_metadata(document: TraceDocument, path: Path) -> TraceMetadata:
    """The checked metadata of ``document`` (read from ``path``); a wrong key raises
    :class:`~lightspeed.errors.TraceError` naming the key, its value and the fix.

    >>> doc = TraceDocument(distributedInfo={"rank": 1.0, "world_size": "2"}, schemaVersion=1)
    >>> meta = trace_metadata(doc, Path("rank-1.json"))
    >>> meta.rank, meta.world_size, meta.schema_version
    (1, 2, 1)
    >>> trace_metadata(TraceDocument(distributedInfo={"rank": "x"}), Path("t.json"))
    Traceback (most recent call last):
    ...
    lightspeed.errors.TraceError: t.json: distributedInfo.rank must be a whole number; value 'x'; fix: fix or remove distributedInfo (without it the rank is taken from the file name, e.g. rank-3.json)
    """  # noqa: E501 - a doctest's expected line is as long as the message
    _check_time_unit(document.displayTimeUnit, path)
    rank, world_size, backend = _distributed(document.distributedInfo, path)
    return TraceMetadata(
        schema_version=_schema_version(document.schemaVersion, path),
        rank=rank,
        world_size=world_size,
        backend=backend,
        devices=_devices(document.deviceProperties, path),
    )


def _check_time_unit(value: object, path: Path) -> None:
    """``displayTimeUnit`` is only checked (the events' unit is read from their values)."""
    if value is not None and not isinstance(value, str):
        raise TraceError(
            path,
            "displayTimeUnit must be text",
            value=value,
            fix='fix or remove displayTimeUnit ("ms" or "ns")',
        )


def _schema_version(value: object, path: Path) -> int | str | None:
    if value is None or isinstance(value, str):
        return value
    return _whole(value, "schemaVersion", path, fix="fix or remove schemaVersion (profilers write 1)")


def _distributed(value: object, path: Path) -> tuple[int | None, int | None, str | None]:
    """The rank, world size and backend of ``distributedInfo``."""
    if value is None:
        return None, None, None
    if not isinstance(value, dict):
        raise TraceError(
            path,
            'distributedInfo must be an object ({"rank": 0, "world_size": 8, "backend": "nccl"})',
            value=value,
            fix=_FIX_DISTRIBUTED,
        )
    rank = _optional_whole(value.get("rank"), "distributedInfo.rank", path, fix=_FIX_DISTRIBUTED)
    world_size = _optional_whole(
        value.get("world_size"), "distributedInfo.world_size", path, fix=_FIX_DISTRIBUTED
    )
    backend = value.get("backend")
    if backend is not None and not isinstance(backend, str):
        raise TraceError(path, "distributedInfo.backend must be text", value=backend, fix=_FIX_DISTRIBUTED)
    return rank, world_size, backend


def _devices(value: object, path: Path) -> tuple[DeviceEntry, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise TraceError(
            path,
            'deviceProperties must be a list of devices ([{"id": 0, "name": "NVIDIA H100 80GB HBM3"}])',
            value=value,
            fix=_FIX_DEVICES,
        )
    return tuple(_device(entry, f"deviceProperties[{index}]", path) for index, entry in enumerate(value))


def _device(entry: object, where: str, path: Path) -> DeviceEntry:
    if not isinstance(entry, dict):
        raise TraceError(
            path, f'{where} must be an object ({{"id": 0, "name": ...}})', value=entry, fix=_FIX_DEVICES
        )
    name = entry.get("name")
    if name is not None and not isinstance(name, str):
        raise TraceError(path, f"{where}.name must be text", value=name, fix=_FIX_DEVICES)
    _optional_whole(
        entry.get("totalGlobalMem"), f"{where}.totalGlobalMem", path, fix=_FIX_DEVICES, text=False
    )
    return DeviceEntry(
        id=_optional_whole(entry.get("id"), f"{where}.id", path, fix=_FIX_DEVICES, text=False), name=name
    )


def _optional_whole(value: object, field: str, path: Path, *, fix: str, text: bool = True) -> int | None:
    """A whole-number field, absent as None; ``text``: ``"3"`` is read as 3 too."""
    if value is None:
        return None
    if text and isinstance(value, str) and _WHOLE_TEXT.fullmatch(value):
        return int(value)
    return _whole(value, field, path, fix=fix)


def _whole(value: object, field: str, path: Path, *, fix: str) -> int:
    """``value`` as an integer: an int, or a float that is a whole number; anything else refused."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    raise TraceError(path, f"{field} must be a whole number", value=value, fix=fix)


__all__ = ["DeviceEntry", "TraceMetadata", "trace_metadata"]
