"""NCCL collectives: size, duration, algbw and busbw against the link's SOL.

Each communication kernel is matched with its parameters: the kernel's own
args (recent PyTorch), else the ``record_param_comms`` op or ``nccl:*``
annotation around the CPU call that launched it (older PyTorch), else only
the collective named in the kernel name. Bandwidths follow nccl-tests
(``trace/data/collectives.toml``): algbw = S / t, busbw = algbw x factor(n).

The SOL is the device's scale-up bandwidth per direction from the catalog
(e.g. A100 SXM: 12 NVLink-3 links, 300 GB/s): collectives between nodes are
bounded by the NIC instead, so pass ``link_bandwidth_bytes_per_s`` for them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Final

import numpy as np

from lightspeed.catalog import Accelerator, Catalog, load_catalog
from lightspeed.datafile import Fields, load_toml
from lightspeed.errors import DataFileError, UserInputError
from lightspeed.records import Record
from lightspeed.trace.breakdown import NS, require_gpu_events
from lightspeed.trace.gpu import GpuEvents, dropped_step, gpu_events
from lightspeed.trace.kinds import COMMUNICATION
from lightspeed.trace.model import RankTrace, Trace
from lightspeed.trace.table import GPU_CATEGORIES, NO_VALUE

GIVEN_LINK: Final = "given"  # how a link bandwidth given as a number is named in the SOL source
COLLECTIVES_FILE: Final = Path(__file__).resolve().parent / "data" / "collectives.toml"
_FACTORS: Final[dict[str, Callable[[int], float]]] = {
    "2(n-1)/n": lambda n: 2.0 * (n - 1) / n,
    "(n-1)/n": lambda n: (n - 1) / n,
    "1": lambda n: 1.0,
}
_KERNEL_COLLECTIVE: Final = re.compile(r"^nccl(?:Dev)?Kernel_([A-Za-z]+)")


@dataclass(frozen=True)
class CollectiveKind:
    """One collective's conventions: which buffer is S and the busbw factor."""

    name: str
    size: str
    busbw_factor: str

    def factor(self, num_ranks: int) -> float:
        """busbw / algbw for ``num_ranks`` ranks."""
        return _FACTORS[self.busbw_factor](num_ranks) if num_ranks >= 1 else math.nan


@lru_cache(maxsize=1)
def _collective_kinds() -> dict[str, CollectiveKind]:
    """Normalized alias -> collective kind."""
    fields = Fields(str(COLLECTIVES_FILE), load_toml(COLLECTIVES_FILE))
    by_alias: dict[str, CollectiveKind] = {}
    for name, entry in fields.tables("collective").items():
        kind = CollectiveKind(name, entry.string("size"), entry.string("busbw_factor"))
        if kind.size not in ("input", "output") or kind.busbw_factor not in _FACTORS:
            raise DataFileError(COLLECTIVES_FILE, "bad size or busbw_factor", field=f"collective.{name}")
        for alias in (name, *entry.strings("aliases")):
            by_alias[_normalize(alias)] = kind
    return by_alias


def _normalize(name: str) -> str:
    return name.lower().replace("_", "").replace(" ", "")


def collective_kind(name: str) -> CollectiveKind | None:
    """The collective a trace name means (``allreduce``, ``nccl:all_reduce``, a kernel name), if known.

    >>> collective_kind("ncclDevKernel_AllGather_RING_LL").name
    'all_gather'
    """
    match = _KERNEL_COLLECTIVE.match(name)
    key = match.group(1) if match else name.removeprefix("nccl:")
    return _collective_kinds().get(_normalize(key))


@dataclass(frozen=True)
class CollectiveCall(Record):
    """One collective kernel on one rank. Bandwidths in bytes/s; NaN when the size is unknown."""

    rank: int
    step: int
    collective: str
    kernel: str
    start_s: float
    duration_s: float
    size_bytes: float
    group_size: int | None
    algbw_bytes_per_s: float
    busbw_bytes_per_s: float
    sol_bytes_per_s: float
    busbw_sol_pct: float
    size_source: str


@dataclass(frozen=True)
class CollectiveGroup(Record):
    """Calls of one collective with one size and group size, across ranks (medians).

    ``median_algbw_bytes_per_s`` is the algbw of the median call time, ``size_bytes`` /
    ``median_duration_s``, and ``median_busbw_bytes_per_s`` that algbw x the busbw factor, so the
    figures agree with each other as shown (the median of per-call algbw differs from it when the
    number of calls is even: it averages two rates, not two times).
    """

    collective: str
    size_bytes: float
    group_size: int | None
    count: int
    total_duration_s: float
    median_duration_s: float
    median_algbw_bytes_per_s: float
    median_busbw_bytes_per_s: float
    sol_bytes_per_s: float
    busbw_sol_pct: float


@dataclass(frozen=True)
class CommsReport(Record):
    """Every collective call and their groups; ``sol_source`` says where the SOL came from."""

    calls: tuple[CollectiveCall, ...]
    groups: tuple[CollectiveGroup, ...]
    sol_source: str
    last_step_excluded: bool
    partial: bool
    notes: tuple[str, ...]


@dataclass(frozen=True)
class _Params:
    collective: str
    elements_in: int
    elements_out: int
    group_size: int
    element_bytes: float
    source: str


def collectives(
    trace: Trace,
    *,
    link_bandwidth_bytes_per_s: float | None = None,
    include_last_step: bool = False,
    catalog: Catalog | None = None,
    link_label: str | None = None,
) -> CommsReport:
    """Size, duration, algbw and busbw of every NCCL collective, against the link SOL.

    ``link_bandwidth_bytes_per_s`` overrides the SOL (per direction, bytes/s),
    ``link_label`` says where it came from (default ``given``; the CLI names a
    catalog link ``ib-ndr x 1 (catalog)``); otherwise each rank's device is looked up in ``catalog`` and its
    scale-up bandwidth per direction is used ("no SOL for <device>" when the
    device is unknown).

    Example::

        report = collectives(load_trace("nccl_data.json.gz"))
        report.groups[0].collective
        # -> 'all_reduce'
    """
    if link_bandwidth_bytes_per_s is not None and link_bandwidth_bytes_per_s <= 0:
        raise UserInputError(f"link bandwidth must be positive, got {link_bandwidth_bytes_per_s} bytes/s")
    require_gpu_events(trace)
    catalog = catalog if catalog is not None else load_catalog()
    dropped = dropped_step(trace, include_last_step=include_last_step)
    calls: list[CollectiveCall] = []
    notes = list(trace.notes)
    sources: set[str] = set()
    for rank in trace.ranks:
        sol, source = _sol(rank, catalog, link_bandwidth_bytes_per_s, link_label)
        if source:
            sources.add(source)
        else:
            notes.append(f"rank {rank.rank}: no SOL for {rank.device_name or 'an unnamed device'}")
        calls.extend(_rank_calls(rank, gpu_events(rank, dropped_step=dropped), sol, notes))
    return comms_report(calls, notes, sources, drop_last=dropped is not None)


def comms_report(
    calls: list[CollectiveCall], notes: list[str], sources: set[str], *, drop_last: bool
) -> CommsReport:
    """The report of every rank's calls (shared with the parallel analysis in ``ranks``)."""
    if not calls:
        notes.append("no communication kernels (NCCL) in the counted GPU events")
    above = sum(1 for call in calls if call.busbw_sol_pct > 100.0)
    if above:
        notes.append(
            f"{above} collectives run above the SOL: the group is smaller than assumed, the link is not "
            "the one that carried them, or in-network reduction (NVLS/SHARP) is at work"
        )
    unknown = sum(1 for call in calls if math.isnan(call.size_bytes))
    if unknown:
        notes.append(f"{unknown} of {len(calls)} collectives carry no size in the trace (bandwidth unknown)")
    return CommsReport(
        calls=tuple(calls),
        groups=_groups(calls),
        sol_source="; ".join(sorted(sources)),
        last_step_excluded=drop_last,
        partial=unknown > 0,
        notes=tuple(dict.fromkeys(notes)),
    )


def _sol(
    rank: RankTrace, catalog: Catalog, override: float | None, label: str | None = None
) -> tuple[float, str]:
    if override is not None:
        return override, f"{label or GIVEN_LINK}: {override / 1e9:g} GB/s per direction"
    accelerator: Accelerator | None = catalog.find_device(rank.device_name) if rank.device_name else None
    if accelerator is None or accelerator.scale_up is None:
        return math.nan, ""
    attachment = accelerator.scale_up
    bandwidth = attachment.per_direction_bytes_per_s
    return bandwidth, (
        f"{accelerator.name} scale-up: {attachment.num_links} x {attachment.link.name}, "
        f"{bandwidth / 1e9:g} GB/s per direction"
    )


def _rank_calls(rank: RankTrace, events: GpuEvents, sol: float, notes: list[str]) -> list[CollectiveCall]:
    comm = events.subset(events.kind == COMMUNICATION)
    table = rank.events
    finder = _ParamFinder(rank)
    calls: list[CollectiveCall] = []
    for index in range(comm.size):
        kernel = table.names[int(comm.name_id[index])]
        params = finder.find(int(comm.row[index]), int(comm.launch[index]), kernel)
        calls.append(_call(rank, comm, index, kernel=kernel, params=params, sol=sol, notes=notes))
    return calls


def _call(
    rank: RankTrace,
    comm: GpuEvents,
    index: int,
    *,
    kernel: str,
    params: _Params,
    sol: float,
    notes: list[str],
) -> CollectiveCall:
    duration_s = float(comm.end_ns[index] - comm.start_ns[index]) * NS
    kind = collective_kind(params.collective)
    group = params.group_size if params.group_size > 0 else (rank.world_size or NO_VALUE)
    if params.group_size <= 0 and rank.world_size:
        notes.append(
            f"rank {rank.rank}: group size not in the trace; assumed the world size ({rank.world_size})"
        )
    size = _size_bytes(kind, params, group)
    algbw = size / duration_s if duration_s > 0 else math.nan
    busbw = algbw * kind.factor(group) if kind is not None and group > 0 else math.nan
    return CollectiveCall(
        rank=rank.rank,
        step=int(comm.step[index]),
        collective=kind.name if kind else (params.collective or "unknown"),
        kernel=kernel,
        start_s=float(comm.start_ns[index]) * NS,
        duration_s=duration_s,
        size_bytes=size,
        group_size=group if group > 0 else None,
        algbw_bytes_per_s=algbw,
        busbw_bytes_per_s=busbw,
        sol_bytes_per_s=sol,
        busbw_sol_pct=100.0 * busbw / sol if math.isfinite(busbw) and math.isfinite(sol) else math.nan,
        size_source=params.source,
    )


def _size_bytes(kind: CollectiveKind | None, params: _Params, group: int) -> float:
    """S of nccl-tests: the per-rank input, or the whole output for all_gather."""
    if kind is None or params.elements_in < 0 or not math.isfinite(params.element_bytes):
        return math.nan
    if kind.size == "output":
        elements = (
            params.elements_out
            if params.elements_out >= 0
            else (params.elements_in * group if group > 0 else -1)
        )
        return elements * params.element_bytes if elements >= 0 else math.nan
    return params.elements_in * params.element_bytes


class _ParamFinder:
    """Finds a communication kernel's collective parameters in one rank's table."""

    def __init__(self, rank: RankTrace) -> None:
        table = rank.events
        args = table.collectives
        self.args = args
        self.by_row = {int(row): i for i, row in enumerate(args.event_index.tolist())}
        on_cpu = (
            ~table.category_mask(GPU_CATEGORIES)[args.event_index]
            if args.event_index.size
            else np.zeros(0, bool)
        )
        self.cpu = np.flatnonzero(on_cpu)
        rows = args.event_index[self.cpu]
        self.cpu_start = table.start_ns[rows]
        self.cpu_end = self.cpu_start + table.duration_ns[rows]
        self.cpu_thread = table.tid[rows]
        self.table = table

    def find(self, row: int, launch: int, kernel: str) -> _Params:
        """From the kernel's args, else around its launch, else from its name alone."""
        if row in self.by_row:
            return self._params(self.by_row[row], "kernel args")
        if launch >= 0 and self.cpu.size:
            when = self.table.start_ns[launch]
            around = (
                (self.cpu_thread == self.table.tid[launch])
                & (self.cpu_start <= when)
                & (self.cpu_end >= when)
            )
            candidates = self.cpu[around]
            if candidates.size:
                # the innermost enclosing op (latest start) that knows a size
                ordered = candidates[np.argsort(-self.cpu_start[around], kind="stable")]
                best = next((i for i in ordered if self.args.in_elements[i] >= 0), ordered[0])
                name = self.table.names[int(self.table.name_id[self.args.event_index[best]])]
                return self._params(
                    int(best), "annotation" if name.startswith("nccl:") else "record_param_comms"
                )
        return _Params(kernel, NO_VALUE, NO_VALUE, NO_VALUE, math.nan, "kernel name")

    def _params(self, index: int, source: str) -> _Params:
        args = self.args
        return _Params(
            collective=args.collective[index],
            elements_in=int(args.in_elements[index]),
            elements_out=int(args.out_elements[index]),
            group_size=int(args.group_size[index]),
            element_bytes=float(args.element_bytes[index]),
            source=source,
        )


def _groups(calls: list[CollectiveCall]) -> tuple[CollectiveGroup, ...]:
    buckets: dict[tuple[str, float, int | None], list[CollectiveCall]] = {}
    for call in calls:
        key = (call.collective, call.size_bytes if math.isfinite(call.size_bytes) else -1.0, call.group_size)
        buckets.setdefault(key, []).append(call)
    groups = []
    for (name, size, group_size), members in buckets.items():
        median_s = float(np.median([c.duration_s for c in members]))
        algbw = size / median_s if size >= 0 and median_s > 0 else math.nan
        busbw = algbw * _busbw_factor(name, group_size)
        sol = float(np.median([c.sol_bytes_per_s for c in members]))
        groups.append(
            CollectiveGroup(
                collective=name,
                size_bytes=size if size >= 0 else math.nan,
                group_size=group_size,
                count=len(members),
                total_duration_s=float(sum(c.duration_s for c in members)),
                median_duration_s=median_s,
                median_algbw_bytes_per_s=algbw,
                median_busbw_bytes_per_s=busbw,
                sol_bytes_per_s=sol,
                busbw_sol_pct=100.0 * busbw / sol
                if math.isfinite(busbw) and math.isfinite(sol)
                else math.nan,
            )
        )
    return tuple(sorted(groups, key=lambda g: -g.total_duration_s))


def _busbw_factor(collective: str, group_size: int | None) -> float:
    """busbw / algbw of a group's calls (NaN for an unknown collective or group size)."""
    kind = collective_kind(collective)
    return kind.factor(group_size) if kind is not None and group_size else math.nan
