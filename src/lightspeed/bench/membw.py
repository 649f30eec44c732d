"""Memory bandwidth: the four STREAM kernels (McCalpin) through PyTorch.

=====  ====================  ================
kernel operation             bytes per element
=====  ====================  ================
copy   ``c = a``             2 x 8 (read a, write c)
scale  ``b = q c``           2 x 8
add    ``c = a + b``         3 x 8
triad  ``a = b + q c``       3 x 8
=====  ====================  ================

float64 arrays each at least 4x the sum of the last-level caches of all
sockets (STREAM's rule, so caches cannot hold them), every kernel a single
torch call writing into an existing array (``out=``, no hidden temporaries
that would add uncounted traffic), best of N repetitions as STREAM reports, and
a check of every kernel's result on sampled elements. MB are 1e6 bytes, as in STREAM.

``--quick`` caps the arrays at :data:`QUICK_MAX_ARRAY_BYTES` (a server's caches
can ask for gigabytes per array and minutes of setup); where that, or an
``--array-size``, is below the rule, each result says the caches may have held
the arrays (``details.cache_note``, ``details.meets_stream_rule`` false), and
``calibrate`` refuses to fit the memory efficiency from it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, Final

from lightspeed.bench.results import BenchResult, make_result
from lightspeed.bench.runtime import (
    BenchDevice,
    ProgressCallback,
    Timer,
    import_torch,
    load_average_1min,
    require_memory,
    with_load_note,
)
from lightspeed.bench.sol import DeviceSol
from lightspeed.errors import UserInputError
from lightspeed.units import MIB, format_bytes

STREAM_KERNELS: Final = ("copy", "scale", "add", "triad")
BYTES_PER_ELEMENT: Final = 8  # float64, as STREAM
_ARRAYS_PER_KERNEL: Final = {"copy": 2, "scale": 2, "add": 3, "triad": 3}
SCALAR: Final = 3.0
LLC_MULTIPLE: Final = 4
_MINIMUM_ARRAY_BYTES: Final = 64 * MIB
QUICK_MAX_ARRAY_BYTES: Final = 256 * MIB
_CPU_ROOT = Path("/sys/devices/system/cpu")
_NUM_CHECKED: Final = 4096
_ABOVE_NOTE: Final = (
    "caches held part of the arrays (use a larger --array-size) or the memory figure is too low"
)


def _parse_cache_size(text: str) -> int | None:
    match = re.fullmatch(r"\s*(\d+)\s*([KMG]?)B?\s*", text.upper())
    if match is None:
        return None
    return int(match.group(1)) * {"": 1, "K": 2**10, "M": 2**20, "G": 2**30}[match.group(2)]


def last_level_cache_bytes(torch: ModuleType, device: BenchDevice) -> int | None:
    """The GPU's L2, or the sum of the CPU's last-level caches over every socket (from sysfs), in
    bytes; ``None`` if unknown."""
    if device.is_gpu:
        properties = torch.cuda.get_device_properties(device.index)
        size = getattr(properties, "L2_cache_size", 0)
        return int(size) if size else None
    return cpu_last_level_cache_bytes(_CPU_ROOT)


def cpu_last_level_cache_bytes(cpu_root: Path) -> int | None:
    """The sum of the highest-level data or unified caches under ``cpu_root`` (sysfs'
    ``/sys/devices/system/cpu``), each cache once however many CPUs share it: STREAM's "sum of the
    last-level caches of all sockets" (several per socket where a socket has several, as AMD's
    CCDs). ``None`` when sysfs says nothing."""
    caches: dict[tuple[int, str], int] = {}  # (level, CPUs sharing it) -> bytes
    for index in sorted(cpu_root.glob("cpu[0-9]*/cache/index[0-9]*")):
        level, kind, size = (_read(index / name) for name in ("level", "type", "size"))
        shared = _read(index / "shared_cpu_list") or str(index.parents[1].name)
        bytes_ = None if size is None else _parse_cache_size(size)
        if level is None or not level.isdigit() or kind == "Instruction" or not bytes_:
            continue
        caches[(int(level), shared)] = bytes_
    if not caches:
        return None
    last = max(level for level, _ in caches)
    return sum(size for (level, _), size in caches.items() if level == last)


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def array_elements(*, cache_bytes: int | None, array_bytes: float | None = None, quick: bool = False) -> int:
    """Elements per array: ``array_bytes`` if given, else max(4 x LLC, 64 MiB), at most
    :data:`QUICK_MAX_ARRAY_BYTES` with ``quick``.

    >>> array_elements(cache_bytes=2 * 480 * 2**20) * 8 / 2**20  # STREAM: 4 x (2 x 480 MiB)
    3840.0
    >>> array_elements(cache_bytes=2 * 480 * 2**20, quick=True) * 8 / 2**20
    256.0
    """
    if array_bytes is not None:
        if array_bytes < 8 * 1024:
            raise UserInputError(f"array size {array_bytes:g} B is too small; use at least 8 KiB")
        return int(array_bytes // BYTES_PER_ELEMENT)
    target = max(LLC_MULTIPLE * (cache_bytes or 0), _MINIMUM_ARRAY_BYTES)
    if quick:
        target = min(target, QUICK_MAX_ARRAY_BYTES)
    return int(target // BYTES_PER_ELEMENT)


def cache_note(*, array_bytes: int, cache_bytes: int | None, quick: bool) -> str:
    """Why a result may be above the DRAM figure when the arrays are smaller than 4 x the
    last-level caches (STREAM's rule), however their size was chosen: ``--quick``'s cap or an
    ``--array-size`` (``""`` when they are not, or the caches are unknown).

    >>> cache_note(array_bytes=256 * 2**20, cache_bytes=32 * 2**20, quick=True)
    ''
    >>> cache_note(array_bytes=2**20, cache_bytes=210 * 2**20, quick=False)[:56]
    '--array-size: arrays of 1 MiB, under 4 x the 210 MiB of '
    """
    if not under_stream_rule(array_bytes=array_bytes, cache_bytes=cache_bytes):
        return ""
    assert cache_bytes is not None
    rule_mib = math.ceil(LLC_MULTIPLE * cache_bytes / MIB)
    option, fix = (
        ("--quick", "run without --quick for STREAM's rule")
        if quick
        else ("--array-size", f"use --array-size {rule_mib}MiB or more (or leave it out) for STREAM's rule")
    )
    return (
        f"{option}: arrays of {format_bytes(array_bytes, binary=True)}, under {LLC_MULTIPLE} x the "
        f"{format_bytes(cache_bytes, binary=True)} of last-level cache: the caches may hold part of them "
        f"and raise the figures; {fix}"
    )


def under_stream_rule(*, array_bytes: float, cache_bytes: int | None) -> bool:
    """Whether arrays of ``array_bytes`` are smaller than STREAM's rule (4 x the last-level caches);
    ``False`` when the caches are unknown.

    >>> under_stream_rule(array_bytes=2**20, cache_bytes=2**20)
    True
    """
    return cache_bytes is not None and array_bytes < LLC_MULTIPLE * cache_bytes


class _Stream:
    """The three STREAM arrays and the four kernels, each one torch call with ``out=``."""

    def __init__(self, torch: Any, device: BenchDevice, num_elements: int) -> None:
        self.torch = torch
        generator = torch.Generator(device=device.torch_name).manual_seed(1234)
        options = {"device": device.torch_name, "dtype": torch.float64, "generator": generator}
        self.a = torch.rand(num_elements, **options) + 1.0
        self.b = torch.rand(num_elements, **options) + 1.0
        self.c = torch.rand(num_elements, **options) + 1.0
        self.index = torch.randint(
            0, num_elements, (_NUM_CHECKED,), device=device.torch_name, generator=generator
        )

    def kernel(self, name: str) -> Callable[[], object]:
        torch, a, b, c = self.torch, self.a, self.b, self.c
        kernels: dict[str, Callable[[], object]] = {
            "copy": lambda: c.copy_(a),
            "scale": lambda: torch.mul(c, SCALAR, out=b),
            "add": lambda: torch.add(a, b, out=c),
            "triad": lambda: torch.add(b, c, alpha=SCALAR, out=a),
        }
        return kernels[name]

    def correct(self, name: str) -> bool:
        """Whether the kernel's output equals its formula on sampled elements."""
        a, b, c = (array[self.index] for array in (self.a, self.b, self.c))
        expected, got = {
            "copy": (a, c),
            "scale": (SCALAR * c, b),
            "add": (a + b, c),
            "triad": (b + SCALAR * c, a),
        }[name]
        return bool(self.torch.allclose(got, expected, rtol=1e-12, atol=0.0))


def run_membw(
    *,
    device: BenchDevice,
    sol: DeviceSol,
    kernels: Sequence[str] = STREAM_KERNELS,
    array_bytes: float | None = None,
    quick: bool = False,
    progress: ProgressCallback | None = None,
) -> list[BenchResult]:
    """Bytes/s of each STREAM kernel (best of N) beside the device's memory bandwidth.

    The SOL is the whole device's (sockets') bandwidth whatever the threads: the cores share
    it (``sol``'s memory note says when fewer cores may not reach it).
    """
    load_start = load_average_1min()
    unknown = [name for name in kernels if name not in STREAM_KERNELS]
    if unknown:
        raise UserInputError(
            f"unknown STREAM kernel(s) {', '.join(unknown)}; use {', '.join(STREAM_KERNELS)}"
        )
    torch = import_torch()
    cache_bytes = last_level_cache_bytes(torch, device)
    num_elements = array_elements(cache_bytes=cache_bytes, array_bytes=array_bytes, quick=quick)
    # given or chosen, arrays under STREAM's rule are said to be (calibrate refuses them)
    note_of_cache = cache_note(
        array_bytes=num_elements * BYTES_PER_ELEMENT, cache_bytes=cache_bytes, quick=array_bytes is None
    )
    require_memory(
        torch,
        device,
        needed_bytes=3.0 * BYTES_PER_ELEMENT * num_elements,
        what=f"STREAM's three arrays of {format_bytes(num_elements * BYTES_PER_ELEMENT)} each",
        fix="use a smaller --array-size",
    )
    stream = _Stream(torch, device, num_elements)
    timer = Timer(torch, device, flush_l2=False)  # arrays already dwarf the caches
    repeats = 5 if quick else 10
    peak, note = sol.memory()
    if note_of_cache:
        note = f"{note}; {note_of_cache}" if note else note_of_cache
    results: list[BenchResult] = []
    for position, name in enumerate(kernels):
        if progress is not None:
            progress(f"membw {name}", position, len(kernels))
        moved_bytes = _ARRAYS_PER_KERNEL[name] * BYTES_PER_ELEMENT * num_elements
        seconds = timer.time(stream.kernel(name), warmup=2, repeats=repeats)
        results.append(
            make_result(
                suite="membw",
                device=device.torch_name,
                sol_device=sol.device_name,
                name=f"stream {name}",
                dtype="fp64",
                size_bytes=num_elements * BYTES_PER_ELEMENT,
                samples=[moved_bytes / sample for sample in seconds],
                unit="B/s",
                best="max",
                sol=peak,
                sol_note=note,
                correct=stream.correct(name),
                above_sol_note=_ABOVE_NOTE,
                details={
                    "bytes_moved": moved_bytes,
                    "num_elements": num_elements,
                    "last_level_cache_bytes": cache_bytes,
                    "num_threads": device.num_threads,
                    # False: arrays under STREAM's rule (calibrate refuses to fit memory from them)
                    "meets_stream_rule": None if cache_bytes is None else not note_of_cache,
                    # why the figures may be too high (said with the refusal, or carried by --force)
                    **({"cache_note": note_of_cache} if note_of_cache else {}),
                },
            )
        )
    if progress is not None:
        progress("membw done", len(kernels), len(kernels))
    return with_load_note(results, device=device, load_start=load_start)
