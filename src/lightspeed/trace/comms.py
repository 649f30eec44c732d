"""NCCL collectives: size, duration, algbw and busbw against the link's SOL.

Each communication kernel is matched with its parameters: the kernel's own
args (recent PyTorch), else the ``record_param_comms`` op or ``nccl:*``
annotation around the CPU call that launched it (older PyTorch), else only
the collective named in the kernel name. Bandwidths follow nccl-tests
(``trace/data/collectives.toml``): algbw = S / t, busbw = algbw x factor(n).

The SOL is the device's scale-up bandwidth per direction from the catalog
(e.g. A100 SXM: 12 NVLink-3 links, 300 GB/s) for a group that fits in the
device's scale-up domain (the NVLink domain of the catalog system built from it:
8 GPUs in an HGX node, 72 in an NVL72 rack). A larger group crosses domains:
its SOL is the busbw bound of lightspeed's collective model
(:mod:`lightspeed.sol.core.collectives`, at full link efficiency and no
latency) on that many GPUs of the system over the system's own NICs, for
all-reduce, all-gather, reduce-scatter and all-to-all; other collectives of such
a group get none (a note says so). ``link_bandwidth_bytes_per_s`` overrides both.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Final

import numpy as np
import numpy.typing as npt

from lightspeed.catalog import Accelerator, Catalog, System, load_catalog
from lightspeed.datafile import Fields, load_toml
from lightspeed.errors import DataFileError, LightspeedError, UserInputError
from lightspeed.records import Record
from lightspeed.sol.core.collectives import (
    Array,
    Fabric,
    all_gather_s,
    all_reduce_s,
    all_to_all_s,
    fabric_of,
    reduce_scatter_s,
)
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
# the collectives whose cost across scale-up domains lightspeed's collective model gives: seconds of
# one byte (S as collectives.toml defines it) on a fabric, for a group of n ranks
_CROSS_DOMAIN_COST: Final[dict[str, Callable[[Fabric, Array, Array], Array]]] = {
    "all_reduce": all_reduce_s,
    "all_gather": all_gather_s,
    "reduce_scatter": reduce_scatter_s,
    "all_to_all": all_to_all_s,
}
_PASS_A_LINK: Final = "pass --link NIC --num-links N, or --link-bandwidth"
# the collectives whose group size a call's element counts give (elements of the larger buffer over
# those of the smaller: an all-gather's output holds every rank's input, a reduce-scatter's input
# every rank's output), for a trace that writes the sizes but no group (PyTorch's
# c10d::_allgather_base_ / c10d::_reduce_scatter_base_ ops around older nccl:* annotations)
_GROUP_FROM_ELEMENTS: Final[dict[str, str]] = {
    "all_gather": "output / input",
    "reduce_scatter": "input / output",
}
# collectives whose group size says nothing about where their two ends are
_POINT_TO_POINT: Final = frozenset({"send_recv"})


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
    key = match.group(1) if match else name.removeprefix("nccl:").removeprefix("c10d::")
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
    """Every collective call and their groups; ``sol_source`` says where the SOL came from;
    ``device_names`` the devices the ranks' traces name (empty: none names one)."""

    calls: tuple[CollectiveCall, ...]
    groups: tuple[CollectiveGroup, ...]
    sol_source: str
    last_step_excluded: bool
    partial: bool
    notes: tuple[str, ...]
    device_names: tuple[str, ...] = ()


@dataclass(frozen=True)
class RankSol:
    """Where the SOL of one rank's collectives comes from (bytes/s per direction, compared with busbw).

    ``bandwidth_bytes_per_s`` is the link given (``given``) or the device's scale-up link, ``source``
    says which. ``system`` is the catalog system the device is built into (its scale-up domain, its
    NICs): a group larger than its domain gets the bound of lightspeed's collective model over the
    system's NICs instead (:meth:`of`). ``crossing`` counts, per (collective, group size), the calls
    that crossed domains, and ``cross_sources`` what their SOL came from (for the notes).
    """

    bandwidth_bytes_per_s: float
    source: str
    given: bool = False
    system: System | None = None
    catalog: Catalog | None = None
    crossing: dict[tuple[str, int], int] = field(default_factory=dict)
    cross_sources: dict[tuple[str, int], str] = field(default_factory=dict)
    cross_sols: dict[tuple[str, int], float] = field(default_factory=dict)

    @property
    def domain_size(self) -> int | None:
        """GPUs that share the device's scale-up link (None: the catalog builds no system of it)."""
        return self.system.scale_up_domain_size if self.system is not None else None

    def of(self, kind: CollectiveKind | None, group: int) -> float:
        """The SOL of one call of ``kind`` over ``group`` ranks (NaN: none known)."""
        domain = self.domain_size
        if (
            self.given
            or domain is None
            or group <= domain
            or kind is None
            or kind.name in _POINT_TO_POINT
            or not math.isfinite(self.bandwidth_bytes_per_s)
        ):
            return self.bandwidth_bytes_per_s
        key = (kind.name, group)
        self.crossing[key] = self.crossing.get(key, 0) + 1
        if key not in self.cross_sols:
            self.cross_sols[key], self.cross_sources[key] = _cross_domain_sol(
                self.catalog, self.system, kind, group
            )
        return self.cross_sols[key]

    def crossing_notes(self) -> list[str]:
        """What the calls that crossed the scale-up domain were compared with: one note per group
        size, and one per collective that got no SOL there."""
        if self.system is None:
            return []
        notes = [
            f"groups of {group} ranks cross the {self.domain_size}-GPU scale-up domain of "
            f"{self.system.name}: their SOL is lightspeed's collective-model bound over the nodes' NICs "
            "(busbw; every GPU of each node in the group), not the scale-up link; --link or "
            "--link-bandwidth sets another"
            for group in sorted({group for (_, group), sol in self.cross_sols.items() if math.isfinite(sol)})
        ]
        notes.extend(
            f"{name} over {group} ranks: {self.cross_sources[(name, group)]}"
            for (name, group), sol in sorted(self.cross_sols.items())
            if not math.isfinite(sol)
        )
        return notes

    def sources(self) -> list[str]:
        """Every SOL source used: the scale-up link's, and per group size that crossed domains the
        cross-domain bounds of its collectives (``over 16 ranks (...): all_reduce 321.4 GB/s, ...``)."""
        found = [self.source] if self.source else []
        by_group: dict[int, list[str]] = {}
        for (name, group), sol in sorted(self.cross_sols.items()):
            if math.isfinite(sol):
                by_group.setdefault(group, []).append(f"{name} {sol / 1e9:.4g} GB/s")
        found.extend(
            f"over {group} ranks ({self._cluster_text(group)}): {', '.join(bounds)} busbw"
            for group, bounds in by_group.items()
        )
        return found

    def _cluster_text(self, group: int) -> str:
        return next(
            self.cross_sources[key]
            for key, sol in self.cross_sols.items()
            if key[1] == group and math.isfinite(sol)
        )


def _cross_domain_sol(
    catalog: Catalog | None, system: System | None, kind: CollectiveKind, group: int
) -> tuple[float, str]:
    """(busbw SOL, the cluster it was found on, or why there is none) of ``kind`` over ``group``
    GPUs of ``system``: nccl-tests' busbw of the time lightspeed's collective model gives it on that
    many GPUs over the system's own NICs, at full link efficiency and no latency (a bandwidth bound,
    as the scale-up SOL is)."""
    cost = _CROSS_DOMAIN_COST.get(kind.name)
    refuse = (
        "no SOL across scale-up domains (lightspeed's collective model covers all-reduce, all-gather, "
        f"reduce-scatter and all-to-all there): {_PASS_A_LINK}"
    )
    if cost is None or catalog is None or system is None:
        return math.nan, refuse
    try:
        cluster = catalog.cluster(system.name, num_accelerators=group)
    except LightspeedError as error:
        return math.nan, f"no SOL ({error}): {_PASS_A_LINK}"
    fabric = fabric_of(cluster, 1.0)
    if fabric.scale_out is None:
        return math.nan, f"no SOL ({system.name} records no NICs): {_PASS_A_LINK}"
    fabric = replace(
        fabric,
        scale_up=replace(fabric.scale_up, latency_s=0.0),
        scale_out=replace(fabric.scale_out, latency_s=0.0),
    )
    seconds_per_byte = float(cost(fabric, 1.0, group))
    sol = kind.factor(group) / seconds_per_byte
    nics = cluster.fabric
    over = f"{nics.num_links} x {nics.link.name} per node" if nics is not None else "its NICs"
    return sol, f"collective model, {cluster.num_nodes} x {cluster.system.name}, {over}"


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
        rank_calls, source = rank_collectives(
            rank,
            gpu_events(rank, dropped_step=dropped),
            catalog,
            notes,
            override=link_bandwidth_bytes_per_s,
            label=link_label,
        )
        sources.update(filter(None, source.split("; ")))
        calls.extend(rank_calls)
    names = tuple(dict.fromkeys(rank.device_name for rank in trace.ranks if rank.device_name))
    return comms_report(calls, notes, sources, drop_last=dropped is not None, device_names=names)


def rank_collectives(
    rank: RankTrace,
    events: GpuEvents,
    catalog: Catalog,
    notes: list[str],
    *,
    override: float | None,
    label: str | None,
) -> tuple[list[CollectiveCall], str]:
    """One rank's collective calls and the SOL sources they used (``; ``-joined; empty: no SOL),
    with its notes added to ``notes`` (shared with the parallel analysis in ``ranks``)."""
    sol = _sol(rank, catalog, override, label)
    if not sol.source:
        notes.append(f"rank {rank.rank}: no SOL for {rank.device_name or 'an unnamed device'}")
    calls = _rank_calls(rank, events, sol, notes)
    notes.extend(sol.crossing_notes())
    return calls, "; ".join(sol.sources())


def comms_report(
    calls: list[CollectiveCall],
    notes: list[str],
    sources: set[str],
    *,
    drop_last: bool,
    device_names: tuple[str, ...] = (),
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
        device_names=device_names,
    )


def _sol(rank: RankTrace, catalog: Catalog, override: float | None, label: str | None = None) -> RankSol:
    if override is not None:
        return RankSol(override, f"{label or GIVEN_LINK}: {override / 1e9:g} GB/s per direction", given=True)
    accelerator: Accelerator | None = catalog.find_device(rank.device_name) if rank.device_name else None
    if accelerator is None or accelerator.scale_up is None:
        return RankSol(math.nan, "")
    attachment = accelerator.scale_up
    bandwidth = attachment.per_direction_bytes_per_s
    built = catalog.systems_built_from(accelerator.name)
    return RankSol(
        bandwidth,
        f"{accelerator.name} scale-up: {attachment.num_links} x {attachment.link.name}, "
        f"{bandwidth / 1e9:g} GB/s per direction"
        + (f" (groups of up to {built[0].scale_up_domain_size} GPUs, {built[0].name})" if built else ""),
        system=built[0] if built else None,
        catalog=catalog,
    )


def _rank_calls(rank: RankTrace, events: GpuEvents, sol: RankSol, notes: list[str]) -> list[CollectiveCall]:
    comm = events.subset(events.kind == COMMUNICATION)
    table = rank.events
    finder = ParamFinder(rank)
    calls: list[CollectiveCall] = []
    for index in range(comm.size):
        kernel = table.names[int(comm.name_id[index])]
        params = finder.find(int(comm.row[index]), int(comm.launch[index]), kernel)
        calls.append(_call(rank, comm, index, kernel=kernel, params=params, sol=sol, notes=notes))
    return calls


def described(rank: RankTrace, params: _Params, notes: list[str]) -> tuple[CollectiveKind | None, int, float]:
    """(kind, group size or NO_VALUE, size S in bytes or NaN) of a collective with ``params``; a
    group size the trace does not give is taken from the call's element counts (all-gather,
    reduce-scatter) or else as the world size (either noted in ``notes``)."""
    kind = collective_kind(params.collective)
    group = params.group_size
    if group <= 0:
        group = _group_from_elements(rank, kind, params, notes)
    if group <= 0:
        group = rank.world_size or NO_VALUE
        if rank.world_size:
            notes.append(
                f"rank {rank.rank}: group size not in the trace; assumed the world size ({rank.world_size})"
            )
    return kind, group, _size_bytes(kind, params, group)


def _group_from_elements(
    rank: RankTrace, kind: CollectiveKind | None, params: _Params, notes: list[str]
) -> int:
    """The group of an all-gather (output / input elements) or reduce-scatter (input / output), when
    the trace gives both counts and they divide evenly (NO_VALUE otherwise); noted in ``notes``."""
    ratio = _GROUP_FROM_ELEMENTS.get(kind.name) if kind is not None else None
    if kind is None or ratio is None or params.elements_in <= 0 or params.elements_out <= 0:
        return NO_VALUE
    larger, smaller = sorted((params.elements_in, params.elements_out), reverse=True)
    if larger % smaller:
        return NO_VALUE
    group = larger // smaller
    notes.append(
        f"rank {rank.rank}: {kind.name} group size not in the trace; taken as its {ratio} elements "
        f"({params.source})"
    )
    return group


def _call(
    rank: RankTrace,
    comm: GpuEvents,
    index: int,
    *,
    kernel: str,
    params: _Params,
    sol: RankSol,
    notes: list[str],
) -> CollectiveCall:
    duration_s = float(comm.end_ns[index] - comm.start_ns[index]) * NS
    kind, group, size = described(rank, params, notes)
    algbw = size / duration_s if duration_s > 0 else math.nan
    busbw = algbw * kind.factor(group) if kind is not None and group > 0 else math.nan
    link = sol.of(kind, group)
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
        sol_bytes_per_s=link,
        busbw_sol_pct=100.0 * busbw / link if math.isfinite(busbw) and math.isfinite(link) else math.nan,
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


class ParamFinder:
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
                return self._with_output(self._params(int(best), self._source(int(best))), ordered)
        return _Params(kernel, NO_VALUE, NO_VALUE, NO_VALUE, math.nan, "kernel name")

    def _source(self, index: int) -> str:
        name = self.table.names[int(self.table.name_id[self.args.event_index[index]])]
        if name.startswith("nccl:"):
            return "annotation"
        return name if name.startswith("c10d::") else "record_param_comms"

    def _with_output(self, params: _Params, ordered: npt.NDArray[np.int64]) -> _Params:
        """``params`` with the output elements of an op further out (an older PyTorch's
        ``c10d::_allgather_base_`` around its ``nccl:_all_gather_base`` annotation, which writes
        the input only), when ``params`` give neither the output nor the group."""
        if params.elements_out >= 0 or params.group_size > 0:
            return params
        kind = collective_kind(params.collective)
        args = self.args
        outer = next(
            (
                int(i)
                for i in ordered
                if args.in_elements[i] >= 0
                and args.out_elements[i] >= 0
                and collective_kind(args.collective[i]) == kind
            ),
            None,
        )
        if outer is None or kind is None:
            return params
        return replace(
            params,
            elements_in=int(args.in_elements[outer]),
            elements_out=int(args.out_elements[outer]),
            source=f"{params.source}, output from {self._source(outer)}",
        )

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
