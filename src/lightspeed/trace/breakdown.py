"""Temporal breakdown per rank, with HTA's definitions, tied to the device's SOL.

For one rank, over the counted GPU events (see :mod:`lightspeed.trace.gpu`):

- kernel span = end of the last GPU event - start of the first;
- idle = span - union of all GPU events;
- compute = union of computation kernels;
- non-compute = span - compute - idle (communication, memory, other, alone);
- comm/comp overlap = time computing while communicating / time communicating.

Percentages are of the kernel span, as in HTA's ``get_temporal_breakdown``
and ``get_comm_comp_overlap``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

import numpy as np

from lightspeed.catalog import Accelerator, Catalog, load_catalog
from lightspeed.errors import TraceError, UnsupportedError, UserInputError
from lightspeed.records import Record
from lightspeed.trace.gpu import (
    GpuEvents,
    devices_note,
    dropped_step,
    duplicates_note,
    gpu_events,
    step_start,
)
from lightspeed.trace.intervals import measure, overlap_measure, sweep_states, union, union_measures
from lightspeed.trace.kinds import COMMUNICATION, COMPUTATION, KIND_NAMES, MEMORY
from lightspeed.trace.model import RankTrace, Trace

NS: Final = 1e-9
NS_PER_S: Final = 1_000_000_000
# a cut-off this close to a whole number of ns (absolute, in ns, plus a trillionth of the value) is
# that number written in another unit: 100us parses to 9.999999999999999e-05 s, 99999.99999999999 ns
WHOLE_NS_TOLERANCE_NS: Final = 1e-6
WHOLE_NS_TOLERANCE_RELATIVE: Final = 1e-12
# Kinds in HTA's overlap breakdown, in HTA's bit order (computation 1, communication 2, memory 4).
OVERLAP_KINDS: Final = (COMPUTATION, COMMUNICATION, MEMORY)
PEAK_PRECISIONS: Final = ("bf16", "fp16")
# Words that give away the vendor of a device name the catalog does not know ("AMD Radeon Graphics",
# "NVIDIA A100-PG509-200"), keyed by the catalog's vendor names: enough to refuse a --device of
# another vendor, where no SOL of that device can describe the trace.
_VENDOR_WORDS: Final[dict[str, tuple[str, ...]]] = {
    "NVIDIA": ("nvidia", "tesla", "geforce", "quadro"),
    "AMD": ("amd", "radeon", "instinct"),
    "Intel": ("intel", "gaudi", "habana"),
    "Google": ("tpu",),
}


def whole_ns(seconds: float, *, what: str) -> int:
    """``seconds`` as whole nanoseconds, the unit of a trace's times: cut-offs are compared with
    integer durations, so ``100us`` (9.999999999999999e-05 s once parsed) and ``0.1ms`` (1e-04 s)
    are the same 100,000 ns and count the same events. A cut-off between two whole ns (``0.5ns``,
    ``1.5ns``) would be rounded and count other events than the ones asked for: it is refused, as is
    one below 0. ``what`` names the setting in the refusal.

    >>> [whole_ns(seconds, what="the cut-off") for seconds in (100 * 1e-6, 0.1 * 1e-3, 0.0)]
    [100000, 100000, 0]
    >>> whole_ns(1.5e-9, what="the cut-off")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    lightspeed.errors.UserInputError: the cut-off is 1.5 ns: ... e.g. 1ns or 2ns
    """
    if not math.isfinite(seconds) or seconds < 0:
        raise UserInputError(f"{what} must be >= 0 s, got {seconds}")
    ns = seconds * NS_PER_S
    whole = round(ns)
    if abs(ns - whole) <= WHOLE_NS_TOLERANCE_NS + WHOLE_NS_TOLERANCE_RELATIVE * ns:
        return whole
    below, above = math.floor(ns), math.ceil(ns)
    written = "1ns (or 0)" if below == 0 else f"{below}ns or {above}ns"
    raise UserInputError(
        f"{what} is {ns:.9g} ns: a trace's times are whole nanoseconds, so it would be rounded to "
        f"another cut-off; give a whole number of ns, e.g. {written}"
    )


@dataclass(frozen=True)
class KindTime(Record):
    """Time during which exactly this combination of kinds ran (e.g. computation + communication)."""

    kinds: tuple[str, ...]
    time_s: float
    share_pct: float


@dataclass(frozen=True)
class StepTime(Record):
    """One ``ProfilerStep``: its CPU duration and the GPU time of the work launched in it (NaN in
    the step left out, ``counted`` false: its GPU work is not analysed)."""

    step: int
    cpu_s: float
    gpu_busy_s: float
    compute_s: float
    communication_s: float
    memory_s: float
    counted: bool


@dataclass(frozen=True)
class RankSummary(Record):
    """Temporal breakdown of one rank (seconds and % of the kernel span).

    ``partial`` marks a rank whose numbers are missing or incomplete (no GPU
    events); ``notes`` say why. SOL fields are NaN when the device is not in
    the catalog or the trace carries no FLOP counts.
    """

    rank: int
    device_name: str | None
    accelerator: str | None
    num_gpu_events: int
    kernel_span_s: float
    idle_s: float
    compute_s: float
    non_compute_s: float
    communication_s: float
    idle_pct: float
    compute_pct: float
    non_compute_pct: float
    comm_comp_overlap_pct: float
    kind_overlaps: tuple[KindTime, ...]
    steps: tuple[StepTime, ...]
    flop: float
    achieved_flop_per_s: float
    peak_flop_per_s: float
    sol_pct: float
    partial: bool
    notes: tuple[str, ...]
    peak_precision: str | None = None  # the peak's precision, dense: "bf16" (fp16 where no bf16)
    above_sol: bool = False  # achieved above the peak: the FLOP counts or the precision assumed are off


@dataclass(frozen=True)
class TraceSummary(Record):
    """``summarize`` of a whole trace collection: one :class:`RankSummary` per rank."""

    ranks: tuple[RankSummary, ...]
    last_step_excluded: bool
    partial: bool
    notes: tuple[str, ...]


def summarize(
    trace: Trace, *, include_last_step: bool = False, catalog: Catalog | None = None
) -> TraceSummary:
    """Temporal breakdown, kind overlaps, comm/comp overlap and step times of every rank.

    ``include_last_step`` keeps the last profiler step (HTA leaves it out).
    ``catalog`` resolves ``deviceProperties`` names to SOL records (default:
    the built-in catalog). Raises :class:`TraceError` when no rank has GPU
    events; ranks without GPU events are kept, marked ``partial``.

    Example::

        summary = summarize(load_trace("rank-0.json.gz"))
        summary.ranks[0].idle_pct
        # -> 2.63
    """
    require_gpu_events(trace)
    catalog = catalog if catalog is not None else load_catalog()
    dropped = dropped_step(trace, include_last_step=include_last_step)
    ranks = tuple(_summarize_rank(rank, dropped, catalog) for rank in trace.ranks)
    notes = trace.notes + tuple(n for r in ranks for n in r.notes)
    return TraceSummary(
        ranks=ranks,
        last_step_excluded=dropped is not None,
        partial=any(r.partial for r in ranks),
        notes=notes,
    )


def require_gpu_events(trace: Trace) -> None:
    """Raise :class:`TraceError` when no rank recorded GPU activity (a CPU-only trace)."""
    if not any(rank.has_gpu_events for rank in trace.ranks):
        first = trace.ranks[0]
        raise TraceError(
            first.path,
            "no GPU events (kernels, copies, memsets): a CPU-only trace has no GPU time to analyse",
            fix="profile with nsys profile --trace=cuda,nvtx"
            if first.source_format == "nsys"
            else "profile with activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]",
        )


def check_device_override(
    path: str, named: str | None, device: str, *, catalog: Catalog | None = None
) -> None:
    """Refuse ``--device`` ``device`` (a catalog name) for a trace at ``path`` whose
    ``deviceProperties`` name ``named`` is a device of another architecture (one the catalog
    knows) or of another vendor (one it does not): the override is for traces that name no
    device or one the catalog does not know, not for giving a trace another GPU's SOL.

    >>> check_device_override("rank-0.json", "NVIDIA H100 80GB HBM3", "h100-sxm")
    """
    if not named:
        return
    catalog = catalog if catalog is not None else load_catalog()
    given = catalog.accelerator(device)
    known = catalog.find_device(named)
    if known is not None:
        other = known.architecture != given.architecture
        what = f"{named} ({known.vendor} {known.architecture}, {known.name})"
    else:
        vendor = _vendor_of(named)
        other = vendor is not None and vendor != given.vendor
        what = f"{named} ({vendor}, not in the catalog)"
    if other:
        raise UserInputError(
            f"{path}: the trace names {what}, and --device {device} is {given.vendor} {given.architecture}: "
            "drop --device (it is for traces that name no device or one the catalog does not know) or "
            "name the GPU that was profiled"
        )


def _vendor_of(name: str) -> str | None:
    """The vendor a device name gives away by a word of it (None: no word does)."""
    words = set(name.lower().replace("-", " ").replace("_", " ").split())
    return next((vendor for vendor, marks in _VENDOR_WORDS.items() if words & set(marks)), None)


def _summarize_rank(rank: RankTrace, dropped: int | None, catalog: Catalog) -> RankSummary:
    """One rank's summary, without its step ``dropped`` (see :func:`~lightspeed.trace.gpu.dropped_step`)."""
    events = gpu_events(rank, dropped_step=dropped)
    accelerator = catalog.find_device(rank.device_name) if rank.device_name else None
    notes = list(rank.notes)
    if events.size == 0:
        notes.append(
            f"rank {rank.rank}: no GPU events" + (" before its last step" if rank.has_gpu_events else "")
        )
        return _empty_summary(rank, accelerator, tuple(notes))
    if accelerator is None:
        notes.append(f"rank {rank.rank}: no SOL for {rank.device_name or 'an unnamed device'}")
    found = (devices_note(rank), duplicates_note(events))
    notes.extend(note for note in found if note is not None)
    all_union = union(events.start_ns, events.end_ns)
    span = int(all_union[1][-1] - all_union[0][0])
    idle = span - measure(*all_union)
    kind_unions = {kind: union(*_of_kind(events, kind)) for kind in OVERLAP_KINDS}
    compute = measure(*kind_unions[COMPUTATION])
    communication = measure(*kind_unions[COMMUNICATION])
    overlap = overlap_measure(kind_unions[COMPUTATION], kind_unions[COMMUNICATION])
    flop = _counted_flop(rank, dropped)
    peak, precision = peak_flop_per_s(accelerator)
    achieved = flop / (span * NS) if flop > 0 and span > 0 else math.nan
    sol_pct = 100.0 * achieved / peak if math.isfinite(achieved) and math.isfinite(peak) else math.nan
    if sol_pct > 100.0:
        notes.append(
            f"rank {rank.rank}: {sol_pct:.1f}% of the dense {precision} peak: above the SOL, so the "
            "profiler's FLOP estimates count more than ran, or the work ran at a faster precision "
            "(fp8, sparsity) than the peak assumed"
        )
    return RankSummary(
        rank=rank.rank,
        device_name=rank.device_name,
        accelerator=accelerator.name if accelerator else None,
        num_gpu_events=events.size,
        kernel_span_s=span * NS,
        idle_s=idle * NS,
        compute_s=compute * NS,
        non_compute_s=(span - compute - idle) * NS,
        communication_s=communication * NS,
        idle_pct=_pct(idle, span),
        compute_pct=_pct(compute, span),
        non_compute_pct=_pct(span - compute - idle, span),
        comm_comp_overlap_pct=_pct(overlap, communication),
        kind_overlaps=_kind_overlaps(kind_unions),
        steps=_step_times(rank, events, dropped),
        flop=flop,
        achieved_flop_per_s=achieved,
        peak_flop_per_s=peak,
        sol_pct=sol_pct,
        partial=False,
        notes=tuple(notes),
        peak_precision=precision,
        above_sol=sol_pct > 100.0,
    )


def _counted_flop(rank: RankTrace, dropped: int | None) -> float:
    """The FLOP estimates of the ops the GPU events counted come from: those that began before the
    left-out step (the cutoff of the GPU events, :func:`~lightspeed.trace.gpu.gpu_events`)."""
    table = rank.events
    flop = table.flop  # sparse: only events with a FLOP estimate, at rows ``flop_row``
    cutoff = step_start(rank.steps, dropped)
    if cutoff is not None and flop.size:  # no start read without an estimate (a cached table's column)
        flop = flop[table.start_ns[table.flop_row] < cutoff]
    return float(flop.sum())


def _empty_summary(rank: RankTrace, accelerator: Accelerator | None, notes: tuple[str, ...]) -> RankSummary:
    nan = math.nan
    peak, precision = peak_flop_per_s(accelerator)
    return RankSummary(
        rank=rank.rank,
        device_name=rank.device_name,
        accelerator=accelerator.name if accelerator else None,
        num_gpu_events=0,
        kernel_span_s=nan,
        idle_s=nan,
        compute_s=nan,
        non_compute_s=nan,
        communication_s=nan,
        idle_pct=nan,
        compute_pct=nan,
        non_compute_pct=nan,
        comm_comp_overlap_pct=nan,
        kind_overlaps=(),
        steps=(),
        flop=nan,
        achieved_flop_per_s=nan,
        peak_flop_per_s=peak,
        sol_pct=nan,
        partial=True,
        notes=notes,
        peak_precision=precision,
    )


def _of_kind(events: GpuEvents, kind: int) -> tuple[np.ndarray, np.ndarray]:
    mask = events.kind == kind
    return events.start_ns[mask], events.end_ns[mask]


def _pct(part: float, whole: float) -> float:
    return 100.0 * part / whole if whole > 0 else math.nan


def peak_flop_per_s(accelerator: Accelerator | None) -> tuple[float, str | None]:
    """(dense peak, its precision): bf16, else fp16 on devices without bf16 (e.g. V100); (NaN, None)
    if unknown."""
    if accelerator is None:
        return math.nan, None
    for precision in PEAK_PRECISIONS:
        try:
            return accelerator.dense_flop_per_s(precision), precision
        except UnsupportedError:
            continue
    return math.nan, None


def _kind_overlaps(kind_unions: dict[int, tuple[np.ndarray, np.ndarray]]) -> tuple[KindTime, ...]:
    states = sweep_states([kind_unions[kind] for kind in OVERLAP_KINDS])
    total = sum(states.values())
    rows = [
        KindTime(
            kinds=tuple(KIND_NAMES[kind] for bit, kind in enumerate(OVERLAP_KINDS) if state & (1 << bit)),
            time_s=time * NS,
            share_pct=_pct(time, total),
        )
        for state, time in states.items()
    ]
    return tuple(sorted(rows, key=lambda row: -row.time_s))


def _step_times(rank: RankTrace, events: GpuEvents, dropped: int | None) -> tuple[StepTime, ...]:
    steps = rank.steps
    # every step's unions at once (one sort, not one per step and kind): each GPU event goes to
    # the slot of its step number (events outside every step to none)
    numbers = np.sort(steps.number)  # the distinct step numbers (np.unique would load numpy.ma)
    numbers = numbers[np.flatnonzero(np.diff(numbers, prepend=numbers[:1] - 1))]
    slot = np.searchsorted(numbers, events.step)
    inside = slot < numbers.size
    inside[inside] = numbers[slot[inside]] == events.step[inside]
    kinds, starts, ends = events.kind, events.start_ns, events.end_ns
    if not inside.all():  # copies only where some event is outside every step
        slot, kinds, starts, ends = slot[inside], kinds[inside], starts[inside], ends[inside]
    busy = union_measures(slot, starts, ends, numbers.size)
    slot *= len(KIND_NAMES)  # slot is ours (searchsorted's answer): each step's kinds, in place
    slot += kinds
    by_kind = union_measures(slot, starts, ends, numbers.size * len(KIND_NAMES))
    by_kind = by_kind.reshape(numbers.size, len(KIND_NAMES))
    rows: list[StepTime] = []
    for number, start, end in zip(
        steps.number.tolist(), steps.start_ns.tolist(), steps.end_ns.tolist(), strict=True
    ):
        index = int(numbers.searchsorted(number))
        counted = number != dropped  # the left-out step's GPU work is not analysed: NaN, not 0
        scale = NS if counted else math.nan
        rows.append(
            StepTime(
                step=number,
                cpu_s=(end - start) * NS,
                gpu_busy_s=int(busy[index]) * scale,
                compute_s=int(by_kind[index, COMPUTATION]) * scale,
                communication_s=int(by_kind[index, COMMUNICATION]) * scale,
                memory_s=int(by_kind[index, MEMORY]) * scale,
                counted=counted,
            )
        )
    return tuple(rows)
