"""PyTorch plumbing shared by the suites: import, device choice, timing, L2 flush.

Timing follows the pitfalls in REFERENCE.md section 5: on a GPU, CUDA events
around the work (launches are asynchronous) with a 256 MiB buffer zeroed
before each repetition to flush L2 (as Triton, DeepEP and MAMF do); on a CPU,
``time.perf_counter`` around the call, which returns only when the work is
done. Every point gets warm-up calls first.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from types import ModuleType
from typing import Any, Final

from lightspeed.bench.results import BenchResult
from lightspeed.errors import UnsupportedError, UserInputError
from lightspeed.extras import import_extra
from lightspeed.records import Record
from lightspeed.units import MIB, format_bytes

L2_FLUSH_BYTES: Final = 256 * MIB
# CPUs of load from other processes a CPU run tolerates beyond the CPUs it leaves idle
# (the kernel's own housekeeping) before its figures get a "machine was busy" note.
BUSY_SLACK_CPUS: Final = 0.5
DEVICE_CHOICES: Final = ("auto", "cpu", "cuda")

# torch dtype attribute for each lightspeed precision name the suites accept.
TORCH_DTYPES: Final[dict[str, str]] = {
    "fp64": "float64",
    "fp32": "float32",
    "tf32": "float32",
    "bf16": "bfloat16",
    "fp16": "float16",
    "fp8": "float8_e4m3fn",
}

ProgressCallback = Callable[[str, int, int], None]


def import_torch() -> ModuleType:
    """``torch``, or :class:`~lightspeed.errors.MissingExtraError` naming the ``bench`` extra."""
    return import_extra("torch", extra="bench", purpose="lightspeed bench")


@dataclass(frozen=True)
class BenchDevice(Record):
    """Where a suite runs: ``cpu`` or ``cuda:<index>``, and what it is called."""

    kind: str
    index: int
    name: str
    num_threads: int

    @property
    def torch_name(self) -> str:
        """The device string torch takes (``cpu``, ``cuda:0``)."""
        return "cpu" if self.kind == "cpu" else f"cuda:{self.index}"

    @property
    def is_gpu(self) -> bool:
        """Whether this is a CUDA (or ROCm) device."""
        return self.kind == "cuda"


def _cpu_name() -> str:
    from lightspeed.environment import environment_fingerprint

    return environment_fingerprint().cpu_model


def resolve_device(device: str = "auto", *, num_threads: int | None = None) -> BenchDevice:
    """``auto`` (a GPU when visible, else the CPU), ``cpu``, ``cuda`` or ``cuda:N``.

    ``num_threads`` sets torch's CPU threads (default: torch's choice, all cores).
    Raises :class:`UnsupportedError` when a GPU is asked for and none is visible.
    """
    torch = import_torch()
    if num_threads is not None:
        if num_threads < 1:
            raise UserInputError(f"threads must be >= 1 (got {num_threads})")
        torch.set_num_threads(num_threads)
    choice = device.strip().lower()
    kind, _, index_text = choice.partition(":")
    if kind not in DEVICE_CHOICES or (index_text and not index_text.isdigit()):
        raise UserInputError(f"unknown device {device!r}; use auto, cpu, cuda or cuda:N")
    if kind == "auto":
        kind = "cuda" if torch.cuda.is_available() else "cpu"
    if kind == "cpu":
        return BenchDevice(kind="cpu", index=0, name=_cpu_name(), num_threads=torch.get_num_threads())
    if not torch.cuda.is_available():
        built = "without CUDA" if torch.version.cuda is None else f"with CUDA {torch.version.cuda}"
        raise UnsupportedError(
            f"no CUDA GPU is visible (torch {torch.__version__} built {built}); "
            "run on the CPU with --device cpu"
        )
    index = int(index_text or 0)
    if index >= torch.cuda.device_count():
        raise UnsupportedError(f"cuda:{index} does not exist; {torch.cuda.device_count()} GPU(s) are visible")
    return BenchDevice(
        kind="cuda", index=index, name=torch.cuda.get_device_name(index), num_threads=torch.get_num_threads()
    )


def available_memory_bytes(torch: Any, device: BenchDevice) -> float:
    """Bytes a suite may allocate on ``device`` now: free GPU memory, or the host's available RAM.

    The host figure is ``MemAvailable`` of /proc/meminfo (what the kernel can hand out without
    swapping), else physical memory; ``inf`` when neither can be read.
    """
    if device.is_gpu:
        free_bytes, _ = torch.cuda.mem_get_info(device.index)
        return float(free_bytes)
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return float(line.split()[1]) * 1024.0
    except OSError:
        pass
    try:
        return float(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, OSError, ValueError):
        return float("inf")


def require_memory(torch: Any, device: BenchDevice, *, needed_bytes: float, what: str, fix: str) -> None:
    """Refuse, before allocating anything, a run that needs more memory than ``device`` has free.

    The message names the size, the limit and ``fix``.
    """
    available = available_memory_bytes(torch, device)
    if needed_bytes > available:
        where = (
            f"free on {device.name or device.torch_name}" if device.is_gpu else "available on this machine"
        )
        raise UserInputError(
            f"{what}: {format_bytes(needed_bytes)} of memory needed, {format_bytes(available)} {where}; {fix}"
        )


def require_gpu(device: BenchDevice, suite: str, what: str) -> None:
    """Raise :class:`UnsupportedError` when ``suite`` (GPU only) is asked to run on a CPU."""
    if not device.is_gpu:
        raise UnsupportedError(
            f"the {suite} suite measures {what} and needs a CUDA GPU; {device.name or 'this CPU'} "
            "has none visible (choose another suite or run on a GPU machine)"
        )


def torch_dtype(torch: ModuleType, precision: str) -> Any:
    """The torch dtype for a lightspeed precision name (``fp32``, ``bf16`` ...)."""
    key = precision.strip().lower()
    if key not in TORCH_DTYPES:
        raise UserInputError(f"unsupported dtype {precision!r}; use one of {', '.join(TORCH_DTYPES)}")
    return getattr(torch, TORCH_DTYPES[key])


class Timer:
    """Time a callable on a device, excluding warm-up and cache flushing."""

    def __init__(self, torch: Any, device: BenchDevice, *, flush_l2: bool = False) -> None:
        self._torch = torch
        self._device = device
        self._flush_buffer = None
        if flush_l2 and device.is_gpu:
            count = int(L2_FLUSH_BYTES // 4)
            self._flush_buffer = torch.empty(count, dtype=torch.int32, device=device.torch_name)

    def synchronize(self) -> None:
        """Wait for queued GPU work (no-op on CPU)."""
        if self._device.is_gpu:
            self._torch.cuda.synchronize(self._device.index)

    def _flush(self) -> None:
        if self._flush_buffer is not None:
            self._flush_buffer.zero_()

    def time(
        self,
        work: Callable[[], object],
        *,
        warmup: int,
        repeats: int,
        inner: int = 1,
        wall_clock: bool = False,
    ) -> list[float]:
        """Seconds per call of ``work`` for each of ``repeats`` samples of ``inner`` calls.

        On a GPU, CUDA events time the queued work unless ``wall_clock`` (then the
        host clock, with a synchronize closing each sample).
        """
        assert repeats >= 1, repeats
        assert inner >= 1, inner
        for _ in range(warmup):
            work()
        self.synchronize()
        if self._device.is_gpu and not wall_clock:
            return self._time_gpu(work, repeats, inner)
        samples: list[float] = []
        for _ in range(repeats):
            start = time.perf_counter()
            for _ in range(inner):
                work()
            self.synchronize()
            samples.append((time.perf_counter() - start) / inner)
        return samples

    def _time_gpu(self, work: Callable[[], object], repeats: int, inner: int) -> list[float]:
        cuda = self._torch.cuda
        events = [(cuda.Event(enable_timing=True), cuda.Event(enable_timing=True)) for _ in range(repeats)]
        for start, end in events:
            self._flush()  # queued before `start`, so not timed
            start.record()
            for _ in range(inner):
                work()
            end.record()
        self.synchronize()
        return [start.elapsed_time(end) * 1e-3 / inner for start, end in events]


def plan_repeats(first_call_s: float, *, budget_s: float, minimum: int, maximum: int) -> int:
    """How many timed repetitions fit in ``budget_s`` given one call's time (clamped).

    >>> plan_repeats(0.1, budget_s=1.0, minimum=5, maximum=100)
    10
    """
    if first_call_s <= 0:
        return maximum
    return max(minimum, min(maximum, int(budget_s / first_call_s)))


def time_once(work: Callable[[], object], timer: Timer) -> float:
    """Wall seconds of one synchronised call (used to size the repetitions)."""
    timer.synchronize()
    start = time.perf_counter()
    work()
    timer.synchronize()
    return time.perf_counter() - start


def cpu_count() -> int:
    """Logical CPUs this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        return os.cpu_count() or 1


def load_average_1min() -> float | None:
    """The 1-minute load average (runnable and uninterruptible tasks); ``None`` where unknown."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):  # pragma: no cover - not on Unix
        return None


def busy_note(*, load_start: float | None, load_end: float | None, num_threads: int, num_cpus: int) -> str:
    """Why a CPU run's figures may be low because other processes ran, or ``""``.

    Other processes' load is the 1-minute load average at the start, or at the end minus the
    run's own ``num_threads`` (what they add at most), whichever is higher. The run is called
    busy when that load exceeds the CPUs it left idle (``num_cpus - min(threads, cpus)``) by
    more than :data:`BUSY_SLACK_CPUS`.

    >>> busy_note(load_start=0.1, load_end=2.2, num_threads=2, num_cpus=2)
    ''
    >>> busy_note(load_start=1.6, load_end=3.5, num_threads=1, num_cpus=2)[:21]
    'the machine was busy:'
    """
    loads = [
        load
        for load in (load_start, None if load_end is None else load_end - num_threads)
        if load is not None
    ]
    if not loads:
        return ""
    other_load = max(loads)
    idle_cpus = num_cpus - min(num_threads, num_cpus)
    if other_load <= idle_cpus + BUSY_SLACK_CPUS:
        return ""
    start = "?" if load_start is None else f"{load_start:.2f}"
    end = "?" if load_end is None else f"{load_end:.2f}"
    return (
        f"the machine was busy: 1-minute load average {start} at the start and {end} at the end, "
        f"about {other_load:.1f} CPU(s) of other work beside {num_threads} benchmark thread(s) on "
        f"{num_cpus} CPU(s); the figures may be low"
    )


def with_load_note(
    results: Sequence[BenchResult], *, device: BenchDevice, load_start: float | None
) -> list[BenchResult]:
    """A CPU run's results with the load averages in ``details`` and :func:`busy_note` when busy.

    ``load_start`` is :func:`load_average_1min` taken before the run; the end is read now.
    GPU runs are returned unchanged (the host's load does not bound the device's figures).
    """
    if device.is_gpu:
        return list(results)
    load_end = load_average_1min()
    note = busy_note(
        load_start=load_start, load_end=load_end, num_threads=device.num_threads, num_cpus=cpu_count()
    )
    extra: dict[str, object] = {"load_average_1min": {"start": load_start, "end": load_end}}
    if note:
        extra["load_note"] = note
    return [replace(result, details={**result.details, **extra}) for result in results]
