"""Kernels against their speed of light: Nsight Compute's view, tied to a trace's real GPU time.

For each kernel ncu profiled (launches of one name are pooled, medians):

- its GPU Speed Of Light percentages and what bounds it, by ncu's own
  SOLBottleneck rule (``trace/data/kernel_sol.toml``): compute or memory
  when one is high or clearly ahead, *latency* when both stay under 60 % of
  peak, *balanced* when they are close;
- the **headroom** = 100 % - the busiest unit's %: the share of the kernel's
  time it would save at the SOL of that unit;
- ncu's findings ranked: estimates of the whole kernel's runtime (``global``)
  first, by estimated speedup, then those of one part seen in isolation
  (``local``), then findings without an estimate;
- achieved FLOP/s beside the catalog's dense peak of the kernel's precision
  when the FLOP count is known (ncu's floating-point instruction counts, or
  a GEMM shape: 2 M N K), also against the peak at the clock ncu profiled at
  (ncu locks the SM clock to base by default); above 100 % of either peak is
  flagged (``above_sol``, and a note): no kernel outruns its SOL, so the FLOP
  count, the precision or the device does not match the kernel (a precision
  other than the one the kernel's name states is named, with the fix);
- with a trace (Kineto or Nsight Systems): the kernel's total GPU time in the
  real run, joined by name, and the **lever** = that time x headroom. Kernels
  are ranked by lever, biggest first.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from operator import attrgetter
from pathlib import Path
from typing import Final

import numpy as np

from lightspeed.catalog import Accelerator, Catalog, load_catalog
from lightspeed.datafile import Fields, load_toml
from lightspeed.errors import UnsupportedError, UserInputError
from lightspeed.records import Record
from lightspeed.trace.breakdown import NS
from lightspeed.trace.gpu import dropped_step, gpu_events
from lightspeed.trace.io.ncu import NcuLaunch, NcuReport, NcuRule
from lightspeed.trace.kernels import shorten_name
from lightspeed.trace.model import Trace
from lightspeed.units import compute_precision

KERNEL_SOL_FILE: Final = Path(__file__).resolve().parent / "data" / "kernel_sol.toml"
BOUNDS: Final = ("compute", "memory", "balanced", "latency")
_GEMM: Final = re.compile(r"^(?:(?P<pattern>.+)=)?(?P<m>\d+)x(?P<n>\d+)x(?P<k>\d+)(?:x(?P<batch>\d+))?$")
MAX_GEMM_DIMENSION: Final = 1 << 40


@dataclass(frozen=True)
class Thresholds(Record):
    """ncu's SOLBottleneck thresholds (% of peak; waves per SM)."""

    latency_bound_pct: float
    no_bound_pct: float
    balanced_pct: float
    waves: float


@dataclass(frozen=True)
class GemmShape(Record):
    """A GEMM a kernel computes: ``2 m n k batch`` FLOP; ``pattern`` picks kernels by name (substring)."""

    m: int
    n: int
    k: int
    batch: int = 1
    pattern: str | None = None

    @property
    def flop(self) -> float:
        """Multiply-adds count two FLOP each."""
        return 2.0 * self.m * self.n * self.k * self.batch


@dataclass(frozen=True)
class Finding(Record):
    """One ncu rule finding of one kernel, with its estimated speedup (NaN when none)."""

    kernel: str
    rule: str
    section: str
    type: str
    speedup_type: str
    estimated_speedup_pct: float
    description: str


@dataclass(frozen=True)
class KernelSol(Record):
    """One kernel against its SOL. Percentages are of peak; NaN where a metric was not collected.

    ``lever_s`` = ``trace_gpu_s`` x ``headroom_pct`` / 100 (NaN without a trace).
    ``name_precision`` is the precision the kernel's name states (None when it states none);
    ``above_sol`` is set when ``sol_flop_pct`` or ``sol_at_profiled_clock_pct`` is above 100.
    """

    kernel: str
    short_name: str
    num_launches: int
    duration_s: float
    compute_throughput_pct: float
    memory_throughput_pct: float
    dram_throughput_pct: float
    l1tex_throughput_pct: float
    l2_throughput_pct: float
    bound: str
    bound_reason: str
    headroom_pct: float
    grid: tuple[int, int, int] | None
    block: tuple[int, int, int] | None
    waves_per_sm: float
    registers_per_thread: float
    shared_memory_per_block_bytes: float
    theoretical_occupancy_pct: float
    achieved_occupancy_pct: float
    occupancy_limiters: tuple[str, ...]
    findings: tuple[Finding, ...]
    precision: str | None
    precision_source: str
    name_precision: str | None
    flop: float
    flop_source: str
    achieved_flop_per_s: float
    peak_flop_per_s: float
    sol_flop_pct: float
    peak_at_profiled_clock_flop_per_s: float
    sol_at_profiled_clock_pct: float
    above_sol: bool
    trace_gpu_s: float
    trace_count: int
    lever_s: float


@dataclass(frozen=True)
class TraceKernelTime(Record):
    """A kernel of the trace and its total GPU time (for kernels ncu did not profile)."""

    kernel: str
    gpu_s: float
    count: int


@dataclass(frozen=True)
class KernelSolReport(Record):
    """Every profiled kernel against its SOL, ranked (by lever with a trace, else by ncu time)."""

    source: str
    trace_source: str | None
    device_name: str | None
    accelerator: str | None
    device_source: str
    kernels: tuple[KernelSol, ...]
    ranked_by: str
    thresholds: Thresholds
    trace_gpu_s: float
    matched_trace_gpu_s: float
    unprofiled: tuple[TraceKernelTime, ...]
    notes: tuple[str, ...]


@dataclass(frozen=True)
class _Rules:
    thresholds: Thresholds
    precisions: tuple[tuple[str, tuple[re.Pattern[str], ...]], ...]
    families: dict[str, str]  # compute capability ("9.0") -> the catalog's GPU family


@lru_cache(maxsize=1)
def _rules() -> _Rules:
    fields = Fields(str(KERNEL_SOL_FILE), load_toml(KERNEL_SOL_FILE))
    bottleneck = fields.table("bottleneck")
    assert bottleneck is not None
    thresholds = Thresholds(
        latency_bound_pct=bottleneck.number("latency_bound_pct"),
        no_bound_pct=bottleneck.number("no_bound_pct"),
        balanced_pct=bottleneck.number("balanced_pct"),
        waves=bottleneck.number("waves"),
    )
    precisions = tuple(
        (entry.string("name"), tuple(re.compile(p, re.IGNORECASE) for p in entry.strings("patterns")))
        for entry in fields.array_of_tables("precision")
    )
    capabilities = fields.table("compute_capability")
    assert capabilities is not None
    families = {key: capabilities.string(key) for key in capabilities.data if key != "source"}
    return _Rules(thresholds=thresholds, precisions=precisions, families=families)


def parse_gemm_shape(text: str) -> GemmShape:
    """``MxNxK``, ``MxNxKxBATCH`` or ``PATTERN=MxNxK`` (PATTERN: part of the kernel name).

    >>> parse_gemm_shape("2208x2048x5608").flop
    50718572544.0
    >>> parse_gemm_shape("gemm_f8=128x256x64x4").pattern
    'gemm_f8'
    """
    match = _GEMM.match(text.strip())
    if match is None:
        raise UserInputError(
            f"GEMM shape {text!r} is not MxNxK; write e.g. 2208x2048x5608, 4096x4096x4096x8 (batch 8) "
            "or NAME=MxNxK to give the shape of the kernels whose name holds NAME"
        )
    dims = [int(match.group(key) or 1) for key in ("m", "n", "k", "batch")]
    if not all(1 <= dim <= MAX_GEMM_DIMENSION for dim in dims):
        raise UserInputError(f"GEMM shape {text!r}: every dimension must be between 1 and 2**40")
    return GemmShape(m=dims[0], n=dims[1], k=dims[2], batch=dims[3], pattern=match.group("pattern"))


def classify_bound(
    compute_pct: float, memory_pct: float, *, waves_per_sm: float = math.nan
) -> tuple[str, str]:
    """``(bound, reason)`` by ncu's SOLBottleneck rule; bound is one of :data:`BOUNDS` or ``unknown``.

    >>> classify_bound(23.59, 21.68, waves_per_sm=1.89)[0]
    'latency'
    >>> classify_bound(85.0, 30.0)[0], classify_bound(62.0, 75.0)[0], classify_bound(70.0, 65.0)[0]
    ('compute', 'memory', 'balanced')
    """
    limits = _rules().thresholds
    if math.isnan(compute_pct) or math.isnan(memory_pct):
        return "unknown", "the SpeedOfLight section was not collected (ncu --section SpeedOfLight)"
    larger = "compute" if compute_pct >= memory_pct else "memory"
    if compute_pct >= limits.no_bound_pct or memory_pct >= limits.no_bound_pct:
        return (
            larger,
            f"{larger} is at {max(compute_pct, memory_pct):.1f}% of peak (>= {limits.no_bound_pct:g}%)",
        )
    if compute_pct < limits.latency_bound_pct and memory_pct < limits.latency_bound_pct:
        if waves_per_sm < limits.waves:
            return (
                "latency",
                f"both under {limits.latency_bound_pct:g}% of peak; the grid fills {waves_per_sm:.2f} waves",
            )
        return "latency", f"compute and memory both under {limits.latency_bound_pct:g}% of peak"
    if abs(compute_pct - memory_pct) >= limits.balanced_pct:
        return (
            larger,
            f"{larger} leads by {abs(compute_pct - memory_pct):.1f} points (>= {limits.balanced_pct:g})",
        )
    return "balanced", f"compute and memory within {limits.balanced_pct:g} points of each other"


def precision_from_name(kernel: str) -> str | None:
    """The precision a kernel's name says it computes in (``fp8`` for ``..._gemm_f8_f8_f32...``), else None.

    >>> precision_from_name("ampere_sgemm_128x64_nn"), precision_from_name("sm90_xmma_gemm_bf16bf16_bf16f32")
    ('fp32', 'bf16')
    """
    for name, patterns in _rules().precisions:
        if any(pattern.search(kernel) for pattern in patterns):
            return name
    return None


def join_key(name: str) -> str:
    """The name a trace kernel and an ncu kernel are joined on: the function's own name.

    >>> join_key("void at::native::elementwise_kernel<4, at::native::FillFunctor<float>>(int, float)")
    'elementwise_kernel'
    """
    return shorten_name(name.strip()).split("::")[-1]


def kernel_report(
    ncu: NcuReport,
    *,
    trace: Trace | None = None,
    gemm_shapes: Sequence[GemmShape] = (),
    device: str | None = None,
    precision: str | None = None,
    include_last_step: bool = False,
    catalog: Catalog | None = None,
) -> KernelSolReport:
    """Every kernel of ``ncu`` against its SOL; with ``trace``, ranked by real GPU time x headroom.

    ``device`` names the catalog record to compare with (ncu's details page
    gives only the compute capability); without it the device comes from the
    raw page's ``device__attribute_display_name`` or the trace.
    ``gemm_shapes`` give FLOP counts (``parse_gemm_shape``); ``precision``
    picks the peak (default: from ncu's instruction counts or the kernel name).

    Example::

        report = kernel_report(read_ncu("gemm.csv"), device="b200")
        report.kernels[0].bound
        # -> 'latency'
    """
    catalog = catalog if catalog is not None else load_catalog()
    if precision is not None:
        compute_precision(precision)  # an unknown name is a UserInputError listing the known ones
    groups: dict[str, list[NcuLaunch]] = {}
    for launch in ncu.launches:
        groups.setdefault(launch.kernel, []).append(launch)
    shapes = _shapes_by_kernel(list(groups), gemm_shapes)
    notes = list(ncu.notes)
    accelerator, device_name, device_source = _device(ncu, trace, device, catalog, notes)
    if accelerator is not None:
        _check_compute_capability(ncu, accelerator, device_source, notes)
        _check_sm_count(ncu, accelerator, notes)
    times = _trace_times(trace, include_last_step) if trace is not None else {}
    matched, joined = _join(list(groups), times, notes)
    kernels = [
        _kernel(
            name,
            launches,
            shape=shapes.get(name),
            accelerator=accelerator,
            precision=precision,
            trace_time=joined.get(name),
            notes=notes,
        )
        for name, launches in groups.items()
    ]
    ranked_by = "lever" if trace is not None else "ncu time"
    kernels.sort(key=_lever_order if trace is not None else _time_order)
    total = sum(seconds for seconds, _ in times.values())
    unprofiled = sorted(
        (
            TraceKernelTime(kernel=name, gpu_s=s, count=c)
            for name, (s, c) in times.items()
            if name not in matched
        ),
        key=lambda item: -item.gpu_s,
    )[:10]
    return KernelSolReport(
        source=ncu.path,
        trace_source=", ".join(dict.fromkeys(rank.path for rank in trace.ranks))
        if trace is not None
        else None,
        device_name=device_name,
        accelerator=accelerator.name if accelerator is not None else None,
        device_source=device_source,
        kernels=tuple(kernels),
        ranked_by=ranked_by,
        thresholds=_rules().thresholds,
        trace_gpu_s=total if trace is not None else math.nan,
        matched_trace_gpu_s=sum(times[name][0] for name in matched) if trace is not None else math.nan,
        unprofiled=tuple(unprofiled),
        notes=tuple(dict.fromkeys(notes)),
    )


def _lever_order(kernel: KernelSol) -> tuple[float, float]:
    lever = kernel.lever_s if math.isfinite(kernel.lever_s) else -1.0
    return (-lever, -kernel.duration_s * kernel.num_launches)


def _time_order(kernel: KernelSol) -> tuple[float]:
    total = kernel.duration_s * kernel.num_launches
    return (-(total if math.isfinite(total) else -1.0),)


def _shapes_by_kernel(names: list[str], shapes: Sequence[GemmShape]) -> dict[str, GemmShape]:
    """Which GEMM shape each kernel computes; a shape without a pattern needs a single kernel."""
    chosen: dict[str, GemmShape] = {}
    for shape in shapes:
        if shape.pattern is None:
            if len(names) != 1:
                listed = ", ".join(join_key(name) for name in names[:5])
                raise UserInputError(
                    f"the CSV holds {len(names)} kernels ({listed}); say which one the GEMM shape is: "
                    f"--gemm NAME={shape.m}x{shape.n}x{shape.k}"
                )
            targets = names
        else:
            targets = [name for name in names if shape.pattern in name]
            if not targets:
                raise UserInputError(
                    f"no kernel name holds {shape.pattern!r}; kernels: "
                    + ", ".join(join_key(name) for name in names[:5])
                )
        for name in targets:
            chosen[name] = shape
    return chosen


def _device(
    ncu: NcuReport, trace: Trace | None, device: str | None, catalog: Catalog, notes: list[str]
) -> tuple[Accelerator | None, str | None, str]:
    """The catalog record to compare with: given, else named by ncu, else by the trace."""
    if device is not None:
        return catalog.accelerator(device), device, "given"
    candidates = [(launch.device_name, "ncu") for launch in ncu.launches if launch.device_name]
    if trace is not None:
        candidates += [(rank.device_name, "trace") for rank in trace.ranks if rank.device_name]
    for name, source in candidates:
        found = catalog.find_device(name)
        if found is not None:
            return found, name, source
    if candidates:
        notes.append(f"no SOL for {candidates[0][0]}: not in the catalog (pass --device NAME)")
        return None, candidates[0][0], candidates[0][1]
    capability = next(
        (launch.compute_capability for launch in ncu.launches if launch.compute_capability), "?"
    )
    notes.append(
        f"the CSV names no device (compute capability {capability} only): pass --device NAME for "
        "FLOP/s against the catalog's peak"
    )
    return None, None, "unknown"


def _check_compute_capability(
    ncu: NcuReport, accelerator: Accelerator, source: str, notes: list[str]
) -> None:
    """Refuse a ``device`` given for a CSV profiled on another GPU family (its CC column says which);
    a device named by the trace or ncu that disagrees gets a note."""
    families = _rules().families
    seen = sorted({launch.compute_capability for launch in ncu.launches if launch.compute_capability})
    other = [(cc, families[cc]) for cc in seen if cc in families and families[cc] != accelerator.family]
    if not other:
        return
    capability, family = other[0]
    problem = (
        f"the CSV's kernels ran on compute capability {capability} ({family}), and "
        f"{accelerator.name} is {accelerator.family}"
    )
    if source == "given":
        raise UserInputError(f"{problem}: name the GPU that was profiled with --device")
    notes.append(f"{problem} (named by the {source}): its peaks may not be the profiled GPU's; pass --device")


def _check_sm_count(ncu: NcuReport, accelerator: Accelerator, notes: list[str]) -> None:
    """Say so when ncu saw another number of SMs than the catalog's record has (another SKU?)."""
    expected = accelerator.num_compute_units
    seen = {int(launch.launch.num_sms) for launch in ncu.launches if math.isfinite(launch.launch.num_sms)}
    if expected is not None and seen and seen != {expected}:
        notes.append(
            f"ncu saw {', '.join(str(n) for n in sorted(seen))} SMs where the catalog's "
            f"{accelerator.name} has {expected}: check that --device names the GPU profiled "
            "(peaks are the catalog's)"
        )


def _trace_times(trace: Trace, include_last_step: bool) -> dict[str, tuple[float, int]]:
    """Kernel name -> (total GPU seconds, launches) over every rank's counted kernels."""
    dropped = dropped_step(trace, include_last_step=include_last_step)
    totals: dict[str, tuple[float, int]] = {}
    for rank in trace.ranks:
        events = gpu_events(rank, dropped_step=dropped)
        table = rank.events
        kernel_codes = [code for code, name in enumerate(table.categories) if name in ("kernel", "Kernel")]
        is_kernel = np.isin(table.category_id[events.row], kernel_codes)
        durations = (events.end_ns - events.start_ns)[is_kernel]
        ids = events.name_id[is_kernel]
        for name_id, seconds, count in _sums(ids, durations):
            name = table.names[name_id]
            before = totals.get(name, (0.0, 0))
            totals[name] = (before[0] + seconds, before[1] + count)
    return totals


def _sums(ids: np.ndarray, durations_ns: np.ndarray) -> list[tuple[int, float, int]]:
    if ids.size == 0:
        return []
    unique, inverse, counts = np.unique(ids, return_inverse=True, return_counts=True)
    sums = np.bincount(inverse.reshape(-1), weights=durations_ns.astype(np.float64))
    return [(int(u), float(s) * NS, int(c)) for u, s, c in zip(unique, sums, counts, strict=True)]


def _join(
    names: list[str], times: dict[str, tuple[float, int]], notes: list[str]
) -> tuple[set[str], dict[str, tuple[float, int]]]:
    """Trace time of each ncu kernel: its exact name, else every trace kernel with its join key."""
    by_key: dict[str, list[str]] = {}
    for trace_name in times:
        by_key.setdefault(join_key(trace_name), []).append(trace_name)
    ncu_keys: dict[str, list[str]] = {}
    for name in names:
        ncu_keys.setdefault(join_key(name), []).append(name)
    matched: set[str] = set()
    joined: dict[str, tuple[float, int]] = {}
    for name in names:
        members = [name] if name in times else by_key.get(join_key(name), [])
        if not members:
            continue
        if name not in times and len(ncu_keys[join_key(name)]) > 1:
            notes.append(
                f"{len(ncu_keys[join_key(name)])} profiled kernels share the name {join_key(name)!r}: "
                "each is given the trace time of all of them"
            )
        matched.update(members)
        joined[name] = (sum(times[m][0] for m in members), sum(times[m][1] for m in members))
    return matched, joined


def _median(values: list[float]) -> float:
    finite = [value for value in values if math.isfinite(value)]
    return float(np.median(finite)) if finite else math.nan


def _kernel(
    name: str,
    launches: list[NcuLaunch],
    *,
    shape: GemmShape | None,
    accelerator: Accelerator | None,
    precision: str | None,
    trace_time: tuple[float, int] | None,
    notes: list[str],
) -> KernelSol:
    def median(field: str | Callable[[NcuLaunch], float]) -> float:
        get = attrgetter(field) if isinstance(field, str) else field
        return _median([float(get(launch)) for launch in launches])

    first = launches[0]
    compute = median("sol.compute_throughput_pct")
    memory = median("sol.memory_throughput_pct")
    waves = median("launch.waves_per_sm")
    bound, reason = classify_bound(compute, memory, waves_per_sm=waves)
    headroom = 100.0 - max(compute, memory) if math.isfinite(compute) and math.isfinite(memory) else math.nan
    duration = median("sol.duration_s")
    flop = _flop(first, shape, precision, name)
    peaks = _peaks(accelerator, flop.precision, median("sol.sm_frequency_hz"), name, notes)
    achieved = flop.flop / duration if flop.flop > 0 and duration > 0 else math.nan
    sol_pct, at_clock_pct = _pct(achieved, peaks[0]), _pct(achieved, peaks[1])
    named = precision_from_name(name)
    _check_precision(name, flop, named, (sol_pct, at_clock_pct), notes)
    trace_s, trace_count = trace_time if trace_time is not None else (math.nan, 0)
    return KernelSol(
        kernel=name,
        short_name=join_key(name),
        num_launches=len(launches),
        duration_s=duration,
        compute_throughput_pct=compute,
        memory_throughput_pct=memory,
        dram_throughput_pct=median("sol.dram_throughput_pct"),
        l1tex_throughput_pct=median("sol.l1tex_throughput_pct"),
        l2_throughput_pct=median("sol.l2_throughput_pct"),
        bound=bound,
        bound_reason=reason,
        headroom_pct=headroom,
        grid=first.launch.grid,
        block=first.launch.block,
        waves_per_sm=waves,
        registers_per_thread=median("launch.registers_per_thread"),
        shared_memory_per_block_bytes=median(_shared_memory_bytes),
        theoretical_occupancy_pct=median("occupancy.theoretical_pct"),
        achieved_occupancy_pct=median("occupancy.achieved_pct"),
        occupancy_limiters=first.occupancy.limiters,
        findings=_findings(name, launches),
        precision=flop.precision,
        precision_source=flop.precision_source,
        name_precision=named,
        flop=flop.flop if flop.flop > 0 else math.nan,
        flop_source=flop.source,
        achieved_flop_per_s=achieved,
        peak_flop_per_s=peaks[0],
        sol_flop_pct=sol_pct,
        peak_at_profiled_clock_flop_per_s=peaks[1],
        sol_at_profiled_clock_pct=at_clock_pct,
        above_sol=_max_finite(sol_pct, at_clock_pct) > 100.0,
        trace_gpu_s=trace_s,
        trace_count=trace_count,
        lever_s=trace_s * headroom / 100.0 if math.isfinite(trace_s) else math.nan,
    )


def _max_finite(*values: float) -> float:
    """The largest finite value, NaN when none is.

    >>> _max_finite(float("nan"), 337.4, 534.9), _max_finite(float("nan"))
    (534.9, nan)
    """
    finite = [value for value in values if math.isfinite(value)]
    return max(finite) if finite else math.nan


def _check_precision(
    name: str, flop: _Flop, named: str | None, pcts: tuple[float, float], notes: list[str]
) -> None:
    """Note a given precision the kernel's name contradicts, and FLOP/s above the SOL (no kernel's)."""
    short = join_key(name)
    mismatch = flop.precision_source == "given" and named is not None and named != flop.precision
    if mismatch:
        notes.append(
            f"{short}: its name says {named}, the peak is of --precision {flop.precision}; "
            f"if it computes in {named}, pass --precision {named}"
        )
    if _max_finite(*pcts) > 100.0:
        fix = _precision_hint(named, flop.precision)
        at_clock = f" ({pcts[1]:.0f}% of it at ncu's clock)" if math.isfinite(pcts[1]) else ""
        notes.append(
            f"{short}: {pcts[0]:.0f}% of the {flop.precision} peak{at_clock}, above the SOL no kernel "
            f"exceeds: the FLOP count ({flop.source}), the precision ({flop.precision_source}) or the "
            f"device does not match the kernel ({fix})"
        )


def _precision_hint(named: str | None, precision: str | None) -> str:
    """Where to look when a kernel comes out above its SOL: the precision its name states, else the rest.

    >>> _precision_hint("fp8", "fp64"), _precision_hint("fp8", "fp8")
    ('its name says fp8: --precision fp8', 'its name says fp8 too: check the GEMM shape and --device')
    """
    if named is None:
        return "its name states no precision: pass the one it computes in with --precision"
    if named != precision:
        return f"its name says {named}: --precision {named}"
    return f"its name says {named} too: check the GEMM shape and --device"


def _pct(part: float, whole: float) -> float:
    return 100.0 * part / whole if math.isfinite(part) and math.isfinite(whole) and whole > 0 else math.nan


def _shared_memory_bytes(launch: NcuLaunch) -> float:
    """Shared memory one block holds: static + dynamic + the driver's reserve."""
    config = launch.launch
    parts = [
        config.static_shared_memory_per_block_bytes,
        config.dynamic_shared_memory_per_block_bytes,
        config.driver_shared_memory_per_block_bytes,
    ]
    known = [part for part in parts if math.isfinite(part)]
    return float(sum(known)) if known else math.nan


@dataclass(frozen=True)
class _Flop:
    flop: float
    source: str
    precision: str | None
    precision_source: str


def _flop(launch: NcuLaunch, shape: GemmShape | None, precision: str | None, name: str) -> _Flop:
    """FLOP of one launch: a given GEMM shape, else ncu's instruction counts; and the precision."""
    counted = {key: value for key, value in launch.flop_by_precision.items() if value > 0}
    if shape is not None:
        flop, source = (
            shape.flop,
            f"GEMM {shape.m}x{shape.n}x{shape.k}" + (f"x{shape.batch}" if shape.batch > 1 else ""),
        )
    elif counted:
        flop, source = sum(counted.values()), "ncu instruction counts (2 x FMA + ADD + MUL)"
    else:
        flop, source = 0.0, "unknown (no GEMM shape given, no instruction counts collected)"
    if precision is not None:
        return _Flop(flop, source, precision, "given")
    if shape is None and counted:
        return _Flop(flop, source, max(counted, key=lambda key: counted[key]), "ncu instruction counts")
    from_name = precision_from_name(name)
    return _Flop(flop, source, from_name, "kernel name" if from_name else "unknown")


def _peaks(
    accelerator: Accelerator | None, precision: str | None, sm_hz: float, name: str, notes: list[str]
) -> tuple[float, float]:
    """The catalog's dense peak and that peak scaled to the SM clock ncu profiled at."""
    if accelerator is None or precision is None:
        return math.nan, math.nan
    try:
        peak = accelerator.dense_flop_per_s(precision)
    except UnsupportedError as error:
        notes.append(f"{join_key(name)}: {error}")
        return math.nan, math.nan
    boost = accelerator.boost_clock_hz
    at_clock = peak * sm_hz / boost if boost and math.isfinite(sm_hz) else math.nan
    return peak, at_clock


def _findings(name: str, launches: list[NcuLaunch]) -> tuple[Finding, ...]:
    """ncu's findings over the kernel's launches, each once (its largest estimate), ranked."""
    best: dict[tuple[str, str], NcuRule] = {}
    for launch in launches:
        for rule in launch.rules:
            key = (rule.rule, rule.description)
            kept = best.get(key)
            if kept is None or _speedup(rule) > _speedup(kept):
                best[key] = rule
    findings = [
        Finding(
            kernel=join_key(name),
            rule=rule.rule,
            section=rule.section,
            type=rule.type,
            speedup_type=rule.speedup_type,
            estimated_speedup_pct=rule.estimated_speedup_pct,
            description=rule.description,
        )
        for rule in best.values()
    ]
    return tuple(sorted(findings, key=finding_order))


def _speedup(rule: NcuRule) -> float:
    return rule.estimated_speedup_pct if math.isfinite(rule.estimated_speedup_pct) else -1.0


def finding_order(finding: Finding) -> tuple[int, float]:
    """Runtime estimates (``global``) first, then ``local`` ones, then none; larger speedups first."""
    speedup = finding.estimated_speedup_pct
    if not math.isfinite(speedup):
        return (2, 0.0)
    return (0 if finding.speedup_type == "global" else 1, -speedup)
