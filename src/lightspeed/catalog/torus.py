"""TPU slices: the torus shape a number of chips takes, and the names Google gives slices.

A TPU pod's chips sit on a 2D (v5e, v6e: 16 x 16) or 3D (v4, v5p) torus of
inter-chip interconnect (ICI) links, and a job runs on a *slice*: a
rectangular block of the pod, all of it one ICI domain. Google offers
power-of-two slices as balanced as the pod allows (v5e ``2x4``, ``4x4``,
``8x16``; v5p ``2x2x1``, ``4x4x4``, ``8x8x16``: Cloud TPU system-architecture
pages); :func:`slice_dimensions` builds the same shape for any count. A slice
axis closes into a ring only where the hardware has the wraparound link (the
rule is on the system record, :attr:`lightspeed.catalog.System.torus_wraparound`);
without it an axis is a line, which halves what a ring collective moves per
second (the JAX scaling book, "How to think about TPUs", section on ICI).

Slice names: Google counts chips for v5e and v6e (``v5litepod-16``,
``v6e-256``) and TensorCores for v4, v5p and TPU7x, two per chip (``v5p-128`` is 64
chips, ``v4-8`` is 4, ``tpu7x-128`` is 64); a topology counts chips along each axis
(``tpu7x-4x8x8`` is 256, the device types xpk takes).
"""

from __future__ import annotations

import math
import re
from dataclasses import replace
from typing import Final

from lightspeed.catalog.records import System
from lightspeed.errors import InvalidPlanError

# Google's accelerator-type prefixes, the pod record each names, and TensorCores per counted unit.
SLICE_PREFIXES: Final = {
    "v4": ("tpu-v4-pod", 2),
    "v5p": ("tpu-v5p-pod", 2),
    "v5e": ("tpu-v5e-pod", 1),
    "v5litepod": ("tpu-v5e-pod", 1),
    "v5lite": ("tpu-v5e-pod", 1),
    "v6e": ("tpu-v6e-pod", 1),
    "trillium": ("tpu-v6e-pod", 1),
    "tpu7x": ("tpu7x-pod", 2),
}
# TPU7x only with a dash (``tpu7x-256``): ``TPU7x 256 chips`` counts chips, not TensorCores
_SLICE_NAME: Final = re.compile(
    r"^(?:(?:tpu[-_ ]?)?(?P<kind>v4|v5p|v5e|v5litepod|v5lite|v6e|trillium)[-_ ]|(?P<tpu7x>tpu[-_ ]?7x)[-_])"
    r"(?:(?P<topology>\d+(?:x\d+)+)|(?P<count>\d+))$",
    re.IGNORECASE,
)


def slice_name(text: str) -> tuple[str, int] | None:
    """(pod system name, chips) of a Google slice name, else ``None``.

    >>> slice_name("v5p-128"), slice_name("v5litepod-16"), slice_name("TPU v6e-256")
    (('tpu-v5p-pod', 64), ('tpu-v5e-pod', 16), ('tpu-v6e-pod', 256))
    >>> slice_name("tpu7x-128"), slice_name("tpu7x-4x8x8")
    (('tpu7x-pod', 64), ('tpu7x-pod', 256))
    """
    match = _SLICE_NAME.fullmatch(text.strip())
    if match is None:
        return None
    kind = match["kind"] or match["tpu7x"]
    system, cores_per_chip = SLICE_PREFIXES["tpu7x" if match["tpu7x"] else kind.lower()]
    if match["topology"]:  # chips along each axis
        chips = math.prod(int(size) for size in match["topology"].lower().split("x"))
        if chips < 1:
            raise InvalidPlanError(f"{text.strip()!r} has an axis of no chips")
        return system, chips
    count = int(match["count"])
    if count < 1 or count % cores_per_chip:
        raise InvalidPlanError(
            f"{text.strip()!r} counts {count} TensorCores, and a {kind} chip has {cores_per_chip}: "
            f"use an even count (e.g. {kind}-{max(2, count + count % cores_per_chip)})"
        )
    return system, count // cores_per_chip


def _factorizations(number: int, num_axes: int) -> list[tuple[int, ...]]:
    """Every way to write ``number`` as a product of ``num_axes`` whole numbers, smallest first."""
    if num_axes == 1:
        return [(number,)]
    found: list[tuple[int, ...]] = []
    for first in range(1, round(number ** (1.0 / num_axes)) + 2):
        if number % first == 0:
            found.extend(
                (first, *rest) for rest in _factorizations(number // first, num_axes - 1) if rest[0] >= first
            )
    return found


def slice_dimensions(num_chips: int, pod_dimensions: tuple[int, ...]) -> tuple[int, ...]:
    """The most balanced block of ``num_chips`` that fits the pod, smallest axis first (the
    shortest longest axis, then the smallest sum); a count no block of the pod holds (a prime
    above its longest axis) takes the most balanced block regardless.

    >>> slice_dimensions(8, (16, 16)), slice_dimensions(64, (16, 20, 28)), slice_dimensions(256, (16, 16))
    ((2, 4), (4, 4, 4), (16, 16))
    """
    limits = sorted(pod_dimensions)
    shapes = _factorizations(num_chips, len(limits))
    fitting = [
        shape for shape in shapes if all(size <= limit for size, limit in zip(shape, limits, strict=True))
    ]
    return min(fitting or shapes, key=lambda shape: (max(shape), sum(shape)))


def torus_slice(system: System, num_chips: int) -> System:
    """``system`` (a pod) as a slice of ``num_chips``: its torus shape, and wraparound by its rule."""
    if not system.torus_dimensions or num_chips == math.prod(system.torus_dimensions):
        return system
    return replace(system, torus_dimensions=slice_dimensions(num_chips, system.torus_dimensions))


def describe_torus(system: System) -> str:
    """``'2D torus 16x16 (both axes wrap)'``-style words for a slice, empty for a switched domain."""
    dims = system.torus_dimensions
    if not dims:
        return ""
    wraps = system.torus_wraparound
    if all(wraps):
        closing = "every axis wraps"
    elif any(wraps):
        closing = (
            "wraparound on the " + ", ".join(str(d) for d, w in zip(dims, wraps, strict=True) if w) + " axis"
        )
    else:
        closing = "no wraparound: a mesh"
    return f"{len(dims)}D torus {'x'.join(str(d) for d in dims)} ({closing})"


__all__ = ["SLICE_PREFIXES", "describe_torus", "slice_dimensions", "slice_name", "torus_slice"]
