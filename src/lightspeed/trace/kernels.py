"""Top GPU kernels by total time, per kind, with count, min, median and max.

Kernels are grouped by exact name; with ``per_rank=False`` the ranks are
pooled. Names are the trace's own (long C++ signatures); each row also
carries ``short_name``, HTA's short name (:func:`shorten_name`) made
distinct among the report's kernels (:func:`distinct_short_names`: CUTLASS
wraps every GEMM in ``cutlass::Kernel<...>``, so three GEMMs share one short
name).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from lightspeed.errors import UserInputError
from lightspeed.records import Record
from lightspeed.trace.breakdown import NS, require_gpu_events
from lightspeed.trace.gpu import GpuEvents, dropped_step, duplicates_note, gpu_events
from lightspeed.trace.kinds import KIND_NAMES
from lightspeed.trace.model import RankTrace, Trace


@dataclass(frozen=True)
class KernelStats(Record):
    """Durations of one kernel name on one rank (``rank`` None: all ranks pooled); ``short_name``
    is a short form of ``name`` that no other kernel of the report shares."""

    rank: int | None
    kind: str
    name: str
    count: int
    total_s: float
    mean_s: float
    min_s: float
    median_s: float
    max_s: float
    share_of_kind_pct: float
    short_name: str = ""


@dataclass(frozen=True)
class KernelReport(Record):
    """The top kernels of each kind (and rank), largest total first."""

    kernels: tuple[KernelStats, ...]
    top: int
    last_step_excluded: bool
    notes: tuple[str, ...]


def top_kernels(
    trace: Trace,
    *,
    top: int = 10,
    kinds: tuple[str, ...] = KIND_NAMES,
    per_rank: bool = False,
    include_last_step: bool = False,
) -> KernelReport:
    """The ``top`` kernels by total time for each of ``kinds`` (and each rank when ``per_rank``).

    Example::

        report = top_kernels(load_trace("rank-0.json.gz"), top=5)
        report.kernels[0].name
        # -> 'volta_scudnn_128x128_relu_small_nn_v1'
    """
    if top < 1:
        raise UserInputError(f"top must be at least 1, got {top}")
    unknown = [kind for kind in kinds if kind not in KIND_NAMES]
    if unknown:
        raise UserInputError(f"unknown kernel kind {unknown[0]!r}; allowed: {', '.join(KIND_NAMES)}")
    require_gpu_events(trace)
    dropped = dropped_step(trace, include_last_step=include_last_step)
    per_rank_events = [(rank, gpu_events(rank, dropped_step=dropped)) for rank in trace.ranks]
    rows: list[KernelStats] = []
    for kind in kinds:
        code = KIND_NAMES.index(kind)
        if per_rank:
            for rank, events in per_rank_events:
                rows.extend(
                    _top_of(events.subset(events.kind == code), rank.events.names, kind, rank.rank, top)
                )
        else:
            rows.extend(_pooled(per_rank_events, code, kind, top))
    labels = distinct_short_names([row.name for row in rows])
    found = (*(duplicates_note(events) for _, events in per_rank_events), short_names_note(labels))
    return KernelReport(
        kernels=tuple(replace(row, short_name=labels[row.name]) for row in rows),
        top=top,
        last_step_excluded=dropped is not None,
        notes=trace.notes + tuple(note for note in found if note is not None),
    )


def _pooled(
    per_rank_events: list[tuple[RankTrace, GpuEvents]], code: int, kind: str, top: int
) -> list[KernelStats]:
    """Pool ranks: map each rank's name ids onto one shared name table."""
    names: dict[str, int] = {}
    ids: list[np.ndarray] = []
    durations: list[np.ndarray] = []
    for rank, events in per_rank_events:
        chosen = events.subset(events.kind == code)
        local = np.array([names.setdefault(n, len(names)) for n in rank.events.names], dtype=np.int64)
        ids.append(local[chosen.name_id] if chosen.size else np.zeros(0, np.int64))
        durations.append(chosen.end_ns - chosen.start_ns)
    return _stats(np.concatenate(ids), np.concatenate(durations), tuple(names), kind=kind, rank=None, top=top)


def _top_of(events: GpuEvents, names: tuple[str, ...], kind: str, rank: int, top: int) -> list[KernelStats]:
    durations = events.end_ns - events.start_ns
    return _stats(events.name_id.astype(np.int64), durations, names, kind=kind, rank=rank, top=top)


def _stats(
    name_ids: np.ndarray,
    durations_ns: np.ndarray,
    names: tuple[str, ...],
    *,
    kind: str,
    rank: int | None,
    top: int,
) -> list[KernelStats]:
    if name_ids.size == 0:
        return []
    order = np.lexsort((durations_ns, name_ids))
    ids, durations = name_ids[order], durations_ns[order].astype(np.float64)
    first = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
    counts = np.diff(np.r_[first, ids.size])
    totals = np.add.reduceat(durations, first)
    lower = durations[first + (counts - 1) // 2]
    upper = durations[first + counts // 2]
    kind_total = float(durations.sum())
    best = np.argsort(-totals, kind="stable")[:top]
    return [
        KernelStats(
            rank=rank,
            kind=kind,
            name=names[int(ids[first[g]])],
            count=int(counts[g]),
            total_s=float(totals[g]) * NS,
            mean_s=float(totals[g]) / counts[g] * NS,
            min_s=float(durations[first[g]]) * NS,
            median_s=(float(lower[g]) + float(upper[g])) / 2.0 * NS,
            max_s=float(durations[first[g] + counts[g] - 1]) * NS,
            share_of_kind_pct=100.0 * float(totals[g]) / kind_total if kind_total > 0 else math.nan,
        )
        for g in best
    ]


def shorten_name(name: str) -> str:
    """A kernel name without template and argument lists (HTA's ``shorten_name``).

    >>> shorten_name("void at::native::elementwise_kernel<4, at::native::FillFunctor<float>>(int, float)")
    'at::native::elementwise_kernel'
    """
    if re.match(r"^(Memcpy|Memset|dma)", name) or ("<" not in name and "(" not in name):
        return name
    stack: list[str] = []
    for character in name.replace("->", ""):
        closing = {">": "<", ")": "("}.get(character)
        if closing is None:
            stack.append(character)
            continue
        while stack and stack[-1] != closing:
            stack.pop()
        if stack:
            stack.pop()
    return "".join(stack).split(" ")[-1]


def distinct_short_names(names: Sequence[str]) -> dict[str, str]:
    """For each distinct name, a short label no other of ``names`` has: its :func:`shorten_name`;
    where several names share that, the name with its template arguments (:func:`templated_name`);
    where those are alike too, that numbered ``#1``, ``#2`` in the order of ``names``.

    >>> labels = distinct_short_names(["void k<1>(int)", "void k<2>(int)", "void k<2>(float)", "m(int)"])
    >>> list(labels.values())
    ['k<1>', 'k<2> #1', 'k<2> #2', 'm']
    """
    distinct = list(dict.fromkeys(names))
    short = {name: shorten_name(name) for name in distinct}
    shared = Counter(short.values())
    labels = {name: templated_name(name) if shared[short[name]] > 1 else short[name] for name in distinct}
    repeated = Counter(labels.values())
    seen: Counter[str] = Counter()
    for name in distinct:
        label = labels[name]
        if repeated[label] > 1:
            seen[label] += 1
            labels[name] = f"{label} #{seen[label]}"
    return labels


def short_names_note(labels: dict[str, str]) -> str | None:
    """A note when some kernels' short names had to be lengthened or numbered to tell them apart."""
    changed = sum(1 for name, label in labels.items() if label != shorten_name(name))
    if not changed:
        return None
    return (
        f"{changed} kernel(s) share a short name with another: shown with their template arguments "
        "or numbered (#1, #2); --full-names shows whole names"
    )


def templated_name(name: str) -> str:
    """A kernel name without its return type and parameter list (its last top-level ``(...)``),
    template arguments kept.

    >>> templated_name("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_64x64_nt>(Params)")
    'cutlass::Kernel<cutlass_80_tensorop_s1688gemm_64x64_nt>'
    >>> templated_name("void at::(anonymous namespace)::fill<float>(int, float)")
    'at::(anonymous namespace)::fill<float>'
    """
    depth = 0
    cut = len(name)
    spaces: list[int] = []
    for index, character in enumerate(name):
        if character in "<(":
            if depth == 0 and character == "(":
                cut = index
            depth += 1
        elif character in ">)" and depth > 0 and name[index - 1 : index + 1] != "->":
            depth -= 1
        elif character == " " and depth == 0:
            spaces.append(index)
    begin = max((index + 1 for index in spaces if index < cut), default=0)
    return name[begin:cut].strip() or name
