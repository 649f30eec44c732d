"""NVML, opened in one place: NVIDIA's management library through ``nvidia-ml-py`` (the ``monitor`` extra).

Every part of lightspeed that talks to NVML goes through this module: device detection
(``hw detect``, the benchmarks' device, :mod:`lightspeed.catalog.detect`), the monitor's
sampling backend (:mod:`lightspeed.monitor.nvml`, the same concept one layer up: it samples
through the session opened here) and the machine's MIG layout (:mod:`lightspeed.mig.device`).
So a missing library, a machine without a driver and the shutdown after use are handled
once, with the same messages.

A test (or a replay) passes a stand-in module with the same functions as ``nvml``.

>>> available() in (True, False)
True
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
from collections.abc import Iterator
from typing import Any

from lightspeed.errors import MissingExtraError, UnsupportedError
from lightspeed.extras import import_extra


def available() -> bool:
    """Whether ``nvidia-ml-py`` is installed (without importing it)."""
    return importlib.util.find_spec("pynvml") is not None


def import_nvml(purpose: str = "talking to NVIDIA GPUs through NVML") -> Any:
    """The ``pynvml`` module of nvidia-ml-py, or one clear error naming the extra."""
    if not available():
        raise MissingExtraError("nvidia-ml-py", "monitor", purpose)
    return import_extra("pynvml", extra="monitor", purpose=purpose)


def _errors(nvml: Any) -> tuple[type[BaseException], ...]:
    """What NVML calls raise: ``NVMLError`` (and its library-not-found subclasses); a binding or a
    stand-in without that class raises ``RuntimeError`` or ``OSError`` when the library is missing."""
    return (getattr(nvml, "NVMLError", RuntimeError), RuntimeError, OSError)


def start(nvml: Any, *, fix: str = "") -> None:
    """``nvmlInit``, or :class:`UnsupportedError` saying NVML cannot start here (no driver)."""
    try:
        nvml.nvmlInit()
    except _errors(nvml) as error:
        hint = f"; {fix}" if fix else ""
        raise UnsupportedError(
            f"NVML cannot start ({error}): no NVIDIA driver on this machine{hint}"
        ) from None


def stop(nvml: Any) -> None:
    """``nvmlShutdown``, quietly: a failing shutdown must not hide what happened before it."""
    with contextlib.suppress(*_errors(nvml)):
        nvml.nvmlShutdown()


@contextlib.contextmanager
def session(nvml: Any | None = None, *, purpose: str = "", fix: str = "") -> Iterator[Any]:
    """NVML started for the ``with`` block and shut down after it; yields the module.

    ``nvml`` is the module to use (a stand-in in tests), else ``pynvml`` is imported.
    """
    module = nvml if nvml is not None else import_nvml(purpose or "talking to NVIDIA GPUs through NVML")
    start(module, fix=fix)
    try:
        yield module
    finally:
        stop(module)


def text(value: Any) -> str:
    """NVML strings are ``bytes`` in older bindings and ``str`` in newer ones."""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def device_handles(nvml: Any) -> list[tuple[int, Any]]:
    """``(index, handle)`` of every GPU NVML sees, in index order."""
    return [(index, nvml.nvmlDeviceGetHandleByIndex(index)) for index in range(nvml.nvmlDeviceGetCount())]


__all__ = ["available", "device_handles", "import_nvml", "session", "start", "stop", "text"]
