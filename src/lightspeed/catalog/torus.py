"""TPU slices: the torus shape a number of chips takes, and the names Google gives slices.

A TPU pod's chips sit on a 2D (v5e, v6e: 16 x 16) or 3D (v4, v5p) torus of
inter-chip interconnect (ICI) links, and a job runs on a *slice*: a
rectangular block of the pod, all of it one ICI domain. Google offers only
some slices (Cloud TPU system-architecture pages): on v5e and v6e the eight of
:data:`SLICE_SHAPES_2D` (1, 4, 8 ... 256 chips: ``1x1``, ``2x2``, ``2x4`` ...
``16x16``); on v4, v5p and TPU7x ``2x2x1``, ``2x2x2``, ``2x2x4``, ``2x4x4`` and
any block of whole 4x4x4 cubes (``4x4x4``, ``4x4x8``, ``8x8x16``).
:func:`slice_dimensions` gives a count the most balanced of them that fits the
pod and refuses a count none holds (``v5e-3``, 13 chips). A slice
axis closes into a ring only where the hardware has the wraparound link (the
rule is on the system record, :attr:`lightspeed.catalog.System.torus_wraparound`);
without it an axis is a line, which halves what a ring collective moves per
second (the JAX scaling book, "How to think about TPUs", section on ICI).

Slice names: Google counts chips for v5e and v6e (``v5litepod-16``,
``v6e-256``) and TensorCores for v4, v5p and TPU7x, two per chip (``v5p-128`` is 64
chips, ``v4-8`` is 4, ``tpu7x-128`` is 64); a topology counts chips along each axis
(``tpu7x-4x8x8`` is 256, the device types xpk takes) and keeps its shape
(``v5p-4x4x16`` is not reshaped to the ``4x8x8`` 256 chips would take).
:func:`topology_name` writes a slice back that way (``v5e-2x4``): what a
cluster spec calls it.
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


# The slice shapes Google offers (Cloud TPU v5e, v6e, v5p, v4 and TPU7x system-architecture pages,
# "configurations" / topology tables). 2D pods (v5e, v6e): exactly these, 1 to 256 chips.
SLICE_SHAPES_2D: Final = ((1, 1), (2, 2), (2, 4), (4, 4), (4, 8), (8, 8), (8, 16), (16, 16))
# 3D pods (v4, v5p, TPU7x): these small blocks, else whole 4x4x4 cubes (every axis a multiple of 4)
SLICE_SHAPES_3D_SMALL: Final = ((1, 2, 2), (2, 2, 2), (2, 2, 4), (2, 4, 4))
CUBE_EDGE: Final = 4
# axes of each pod a slice prefix names (a topology must have as many)
_POD_AXES: Final = {"tpu-v4-pod": 3, "tpu-v5p-pod": 3, "tpu-v5e-pod": 2, "tpu-v6e-pod": 2, "tpu7x-pod": 3}


def slice_name(text: str) -> tuple[str, int] | None:
    """(pod system name, chips) of a Google slice name, else ``None``; a slice Google does not
    offer (``v5e-3``, ``v5e-17x3``, ``v4-2x2x2x2``, ``tpu7x-2``) is refused, naming those it does.

    >>> slice_name("v5p-128"), slice_name("v5litepod-16"), slice_name("TPU v6e-256")
    (('tpu-v5p-pod', 64), ('tpu-v5e-pod', 16), ('tpu-v6e-pod', 256))
    >>> slice_name("tpu7x-128"), slice_name("tpu7x-4x8x8")
    (('tpu7x-pod', 64), ('tpu7x-pod', 256))
    """
    parsed = _parse_slice_name(text)
    return None if parsed is None else (parsed[0], math.prod(parsed[1]))


def slice_topology(text: str) -> tuple[int, ...] | None:
    """The shape a Google topology name writes, smallest axis first (``v5p-4x4x16``: ``(4, 4, 16)``),
    else ``None`` (a name that counts chips or cores takes the pod's balanced shape for the count).

    >>> slice_topology("tpu7x-4x4x16"), slice_topology("v5e-8")
    ((4, 4, 16), None)
    """
    parsed = _parse_slice_name(text)
    return parsed[1] if parsed is not None and parsed[2] else None


def topology_name(system: System) -> str:
    """Google's name of the slice a pod ``system`` is cut to (``v5e-2x4``), empty for another system.

    >>> from lightspeed.catalog import load_catalog
    >>> topology_name(torus_slice(load_catalog().system("tpu-v5p-pod"), 64))
    'v5p-4x4x4'
    """
    prefix = next((key for key, (pod, _) in SLICE_PREFIXES.items() if pod == system.name), None)
    if prefix is None or not system.torus_dimensions:
        return ""
    return f"{prefix}-{'x'.join(str(size) for size in system.torus_dimensions)}"


def _parse_slice_name(text: str) -> tuple[str, tuple[int, ...], bool] | None:
    """(pod system name, slice shape sorted, whether the name wrote the shape) of a Google slice
    name, else ``None``."""
    match = _SLICE_NAME.fullmatch(text.strip())
    if match is None:
        return None
    kind = match["kind"] or match["tpu7x"]
    prefix = "tpu7x" if match["tpu7x"] else kind.lower()
    system, cores_per_chip = SLICE_PREFIXES[prefix]
    axes = _POD_AXES[system]
    if match["topology"]:  # chips along each axis
        shape = tuple(sorted(int(size) for size in match["topology"].lower().split("x")))
        if shape[0] < 1:
            raise InvalidPlanError(f"{text.strip()!r} has an axis of no chips")
        if len(shape) != axes or not _offered(shape):
            raise InvalidPlanError(
                f"{text.strip()!r} is not a {prefix} slice Google offers; {_offered_words(axes)}"
            )
        return system, shape, True
    count = int(match["count"])
    if count < 1 or count % cores_per_chip:
        raise InvalidPlanError(
            f"{text.strip()!r} counts {count} TensorCores, and a {kind} chip has {cores_per_chip}: "
            f"use an even count (e.g. {kind}-{max(2, count + count % cores_per_chip)})"
        )
    chips = count // cores_per_chip
    shapes = [shape for shape in _factorizations(chips, axes) if _offered(shape)]
    if not shapes:
        unit = "TensorCores" if cores_per_chip > 1 else "chips"
        raise InvalidPlanError(
            f"{text.strip()!r} ({chips} chip{'' if chips == 1 else 's'}) is not a {prefix} slice Google "
            f"offers; {_offered_words(axes)} "
            f"(the name counts {unit})"
        )
    return system, min(shapes, key=_balance), False


def _offered(shape: tuple[int, ...]) -> bool:
    """Whether Google offers a slice of ``shape`` (sorted): the 2D table, or the 3D small blocks
    and whole cubes; a shape of other axes is judged by balance alone (a user's own torus)."""
    if len(shape) == 2:
        return shape in SLICE_SHAPES_2D
    if len(shape) == 3:
        return shape in SLICE_SHAPES_3D_SMALL or all(size >= 1 and size % CUBE_EDGE == 0 for size in shape)
    return all(size >= 1 for size in shape)


def _offered_words(axes: int, pod_dimensions: tuple[int, ...] = ()) -> str:
    """The slices Google offers on a pod of ``axes`` axes, as a reader wants them listed."""
    if axes == 2:
        listed = ", ".join(f"{math.prod(shape)} ({_shape_text(shape)})" for shape in SLICE_SHAPES_2D)
        return f"slices of {listed} chips"
    if axes == 3:
        small = ", ".join(_shape_text(shape) for shape in SLICE_SHAPES_3D_SMALL)
        most = f" up to {_shape_text(pod_dimensions)}" if pod_dimensions else ""
        return (
            f"slices {small} (4, 8, 16, 32 chips) or whole {CUBE_EDGE}x{CUBE_EDGE}x{CUBE_EDGE} cubes, "
            f"every axis a multiple of {CUBE_EDGE} (64, 128, 256 ... chips){most}"
        )
    return f"slices of {axes} axes"


def _shape_text(shape: tuple[int, ...]) -> str:
    return "x".join(str(size) for size in shape)


def _balance(shape: tuple[int, ...]) -> tuple[int, int]:
    """The most balanced shape first: the shortest longest axis, then the smallest sum."""
    return max(shape), sum(shape)


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
    """The most balanced slice of ``num_chips`` Google offers that fits the pod, smallest axis first
    (the shortest longest axis, then the smallest sum). A count no such slice holds (3 chips, 13,
    a prime above the longest axis) is refused, naming the slices there are.

    >>> slice_dimensions(8, (16, 16)), slice_dimensions(64, (16, 20, 28)), slice_dimensions(256, (16, 16))
    ((2, 4), (4, 4, 4), (16, 16))
    """
    limits = tuple(sorted(pod_dimensions))
    fitting = [shape for shape in _factorizations(num_chips, len(limits)) if _fits(shape, limits)]
    if not fitting:
        raise InvalidPlanError(
            f"no slice of {num_chips} chips on a {_shape_text(limits)} pod: Google offers "
            f"{_offered_words(len(limits), limits)}, or whole pods of {math.prod(limits):,} chips"
        )
    return min(fitting, key=_balance)


def _fits(shape: tuple[int, ...], limits: tuple[int, ...]) -> bool:
    """Whether the sorted ``shape`` is an offered slice inside a pod of sorted ``limits``."""
    return _offered(shape) and all(size <= limit for size, limit in zip(shape, limits, strict=True))


def torus_slice(system: System, num_chips: int, shape: tuple[int, ...] | None = None) -> System:
    """``system`` (a pod) as a slice of ``num_chips``: its torus shape (``shape`` where a slice name
    gave one, else :func:`slice_dimensions`), wraparound by its rule, and Google's name for it."""
    if not system.torus_dimensions or num_chips == math.prod(system.torus_dimensions):
        return system
    limits = tuple(sorted(system.torus_dimensions))
    if shape is None or math.prod(shape) != num_chips:
        dimensions = slice_dimensions(num_chips, limits)
    elif _fits(shape, limits):
        dimensions = shape
    else:
        raise InvalidPlanError(
            f"a {_shape_text(shape)} slice does not fit {system.name} ({_shape_text(limits)}); Google "
            f"offers {_offered_words(len(limits), limits)}"
        )
    sliced = replace(system, torus_dimensions=dimensions)
    return replace(sliced, spec_name=topology_name(sliced))


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


__all__ = [
    "SLICE_PREFIXES",
    "describe_torus",
    "slice_dimensions",
    "slice_name",
    "slice_topology",
    "topology_name",
    "torus_slice",
]
