"""Many-rank traces in parallel: each rank loaded and analysed in a worker (a local process, or a
Ray task on a cluster), results merged.

A 64-rank job writes 64 trace files; loading them one after another in one
process holds every rank's tables at once. Here each rank file goes to one of
``jobs`` worker processes, which loads it with :func:`~lightspeed.trace.load_trace`,
runs the per-rank part of the analysis and sends back only that part (a rank
summary, its collective calls, its collective durations); the rank's event
tables are dropped before the worker takes the next file. So a worker holds
one rank at a time (bounded further by ``max_bytes`` per file, and by
``max_worker_bytes`` of address space when given), and the parent holds only
the per-rank results. The merged result is the same record the serial
analysis returns, equal field for field (the tests check it). With
``engine="ray"`` the workers are Ray tasks, one per rank file, on a local Ray
or on the cluster at ``address`` (:mod:`lightspeed.trace.ray_engine`); the
reduction is the same.

What needs every rank is decided after the merge: whether a rank's last
``ProfilerStep`` is left out depends on the step numbers of all ranks (the
collection's highest step number is; a rank without it keeps all its steps),
so a worker, which cannot tell, computes its part both ways; ranks must be
distinct; schema versions must agree (unless allowed).

Example::

    from lightspeed.trace import summarize_ranks
    summary = summarize_ranks(["traces/"], jobs=4)
    len(summary.ranks)
    # -> 64
"""

from __future__ import annotations

import multiprocessing
import os
from collections import defaultdict
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lightspeed.catalog import Catalog, load_catalog
from lightspeed.errors import LightspeedError, TraceError, UserInputError
from lightspeed.trace.breakdown import TraceSummary, _summarize_rank
from lightspeed.trace.comms import CollectiveCall, CommsReport, comms_report, rank_collectives
from lightspeed.trace.gpu import gpu_events
from lightspeed.trace.integrity import BadEvent, skipped_note
from lightspeed.trace.io.kineto_parallel import forbid_in_this_process
from lightspeed.trace.io.source import DEFAULT_MAX_BYTES, trace_files
from lightspeed.trace.lateness import Arrival, StragglerReport, _collective_durations, straggler_report
from lightspeed.trace.loader import check_schema_versions, load_trace
from lightspeed.trace.model import RankTrace
from lightspeed.trace.ray_engine import ENGINES, ray_map


@dataclass(frozen=True)
class LoadOptions:
    """How each rank file is read (the keywords of :func:`~lightspeed.trace.load_trace`)."""

    max_bytes: float = DEFAULT_MAX_BYTES
    time_unit: str = "auto"
    round_to_us: bool = True
    allow_mixed_schema: bool = False
    skip_bad_events: bool = False
    cache: bool = True  # keep and reuse each file's tables as Parquet (lightspeed.trace.cache)
    device: str | None = None  # the accelerator every rank ran on (--device), over what the trace says


@dataclass(frozen=True)
class _Task:
    path: Path
    analysis: str
    load: LoadOptions
    include_last_step: bool
    link_bandwidth_bytes_per_s: float | None
    link_label: str | None = None


@dataclass(frozen=True)
class _RankPart:
    """What a worker sends back for one rank file: its metadata and the per-rank results."""

    rank: int
    path: str
    rank_known: bool
    schema_version: str
    step_numbers: frozenset[int]
    has_gpu_events: bool
    num_steps: int
    device_name: str | None
    skipped_events: tuple[BadEvent, ...] = ()
    # per-rank result keyed by "this rank's last step dropped"
    results: dict[bool, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class _Failure:
    """A user-facing error raised in a worker, sent back whole (its class and its fields)."""

    kind: type[LightspeedError]
    message: str
    state: dict[str, Any]

    def rebuild(self) -> LightspeedError:
        # Errors with their own __init__ (TraceError(path, problem, ...)) do not unpickle: rebuild.
        error = self.kind.__new__(self.kind)
        error.args = (self.message,)
        error.__dict__.update(self.state)
        return error


_WORKER_CATALOG: dict[str, Catalog] = {}


def _start_worker(catalog: Catalog, max_worker_bytes: int | None) -> None:
    _WORKER_CATALOG["catalog"] = catalog
    forbid_in_this_process()  # one rank per worker: no pool of parsing processes inside it
    if max_worker_bytes is not None:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (max_worker_bytes, max_worker_bytes))


def _drop_choices(step_numbers: frozenset[int], include_last_step: bool) -> tuple[bool, ...]:
    """The last-step decisions this rank's part is needed for (it cannot see the other ranks: a
    rank whose last step is not the collection's keeps it)."""
    if include_last_step or not step_numbers:
        return (False,)  # kept, or no step to drop: both decisions give the same part
    return (False, True)


def _analyse_file(task: _Task) -> list[_RankPart] | _Failure:
    """Worker: load one file (one rank; an Nsight Systems export may hold several), compute
    each rank's part of the analysis, drop the tables."""
    try:
        return _analyse(task)
    except LightspeedError as error:
        return _Failure(type(error), str(error), dict(vars(error)))


def _analyse(task: _Task) -> list[_RankPart]:
    load = task.load
    trace = load_trace(
        [task.path],
        max_bytes=load.max_bytes,
        time_unit=load.time_unit,
        round_to_us=load.round_to_us,
        allow_mixed_schema=True,  # one file: checked across ranks after the merge
        skip_bad_events=load.skip_bad_events,
        cache=load.cache,
        device=load.device,
    )
    return [_analyse_rank(task, rank) for rank in trace.ranks]


def _analyse_rank(task: _Task, rank: RankTrace) -> _RankPart:
    catalog = _WORKER_CATALOG.get("catalog") or load_catalog()
    numbers = frozenset(int(number) for number in rank.steps.number)
    results: dict[bool, Any] = {}
    for drop in _drop_choices(numbers, task.include_last_step):
        dropped = max(numbers) if drop else None
        if task.analysis == "summary":
            results[drop] = _summarize_rank(rank, dropped, catalog)
        elif task.analysis == "stragglers":
            results[drop] = _collective_durations(rank, dropped)
        else:
            notes: list[str] = []
            calls, source = rank_collectives(
                rank,
                gpu_events(rank, dropped_step=dropped),
                catalog,
                notes,
                override=task.link_bandwidth_bytes_per_s,
                label=task.link_label,
            )
            results[drop] = (calls, source, tuple(notes))
    return _RankPart(
        rank=rank.rank,
        path=rank.path,
        # the loader's note for a lone file that names its rank nowhere (tested against the serial load)
        rank_known=not any("assumed rank 0" in note for note in rank.notes),
        schema_version=rank.schema_version,
        step_numbers=numbers,
        has_gpu_events=rank.has_gpu_events,
        num_steps=rank.steps.num_steps,
        device_name=rank.device_name,
        skipped_events=rank.skipped_events,
        results=results,
    )


def _analyse_on_ray(task: _Task, catalog: Catalog) -> list[_RankPart] | _Failure:
    """A Ray task: one rank file's parts (the catalog comes from Ray's object store)."""
    _WORKER_CATALOG["catalog"] = catalog
    forbid_in_this_process()  # Ray gives each task one CPU
    return _analyse_file(task)


def _map(
    tasks: Sequence[_Task],
    *,
    jobs: int,
    catalog: Catalog,
    max_worker_bytes: int | None,
    engine: str = "local",
    address: str | None = None,
) -> list[_RankPart]:
    if engine == "ray":
        return _parts(ray_map(_analyse_on_ray, tasks, shared=catalog, address=address))
    if jobs == 1 or len(tasks) == 1:
        _WORKER_CATALOG["catalog"] = catalog  # this process analyses the files: no worker set-up
        return _parts([_analyse_file(task) for task in tasks])
    # forkserver: workers fork from a small clean process that imported the analyses once,
    # not from a copy of this one (which may hold anything)
    if os.name == "posix":
        context: Any = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload([__name__])
    else:
        context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(
        max_workers=min(jobs, len(tasks)),
        mp_context=context,
        initializer=_start_worker,
        initargs=(catalog, max_worker_bytes),
    ) as pool:
        try:
            return _parts(list(pool.map(_analyse_file, tasks)))
        except (MemoryError, BrokenProcessPool):
            limit = f"its limit ({max_worker_bytes} bytes)" if max_worker_bytes else "the memory it could get"
            raise UserInputError(
                f"a worker ran out of memory analysing a rank file ({limit}); raise --max-worker-memory, "
                "or lower --jobs so that each worker may take more"
            ) from None


def _parts(outcomes: Sequence[list[_RankPart] | _Failure]) -> list[_RankPart]:
    for outcome in outcomes:
        if isinstance(outcome, _Failure):
            raise outcome.rebuild()
    return [part for outcome in outcomes if not isinstance(outcome, _Failure) for part in outcome]


def _check_ranks(parts: Sequence[_RankPart], allow_mixed_schema: bool) -> tuple[str, ...]:
    """The loader's checks across ranks: known and distinct ranks, one schema version."""
    unknown = [part for part in parts if not part.rank_known]
    if unknown and len(parts) > 1:
        raise TraceError(
            unknown[0].path,
            "cannot tell which rank this file is: no distributedInfo.rank and no rank in the file name",
            fix="rename the files rank-0.json.gz, rank-1.json.gz, ... or load them one at a time",
        )
    seen: dict[int, str] = {}
    for part in parts:
        if part.rank in seen:
            raise TraceError(
                part.path,
                f"rank {part.rank} is also the rank of {seen[part.rank]}",
                fix="load one file per rank (a folder should hold one collection)",
            )
        seen[part.rank] = part.path
    return check_schema_versions(parts, allow_mixed_schema)


def _gather(
    paths: Iterable[Path | str] | Path | str,
    *,
    analysis: str,
    jobs: int,
    load: LoadOptions,
    include_last_step: bool,
    catalog: Catalog | None,
    max_worker_bytes: int | None,
    link_bandwidth_bytes_per_s: float | None = None,
    link_label: str | None = None,
    skipped: dict[int, tuple[BadEvent, ...]] | None = None,
    engine: str = "local",
    address: str | None = None,
) -> tuple[list[_RankPart], tuple[str, ...], int | None]:
    """Analyse every rank file; return the parts (by rank), the trace notes and the step number every
    rank that has it leaves out (``None``: none)."""
    if jobs < 1:
        raise UserInputError(f"jobs must be >= 1, got {jobs}")
    if engine not in ENGINES:
        raise UserInputError(f"unknown engine {engine!r}; allowed: {', '.join(ENGINES)}")
    if address is not None and engine != "ray":
        raise UserInputError("an address is a Ray cluster's: give it with engine 'ray' (--engine ray)")
    if load.time_unit not in ("auto", "us", "ns"):
        raise UserInputError(f"unknown time unit {load.time_unit!r}; allowed: auto, us, ns")
    items = [paths] if isinstance(paths, str | Path) else list(paths)
    tasks = [
        _Task(path, analysis, load, include_last_step, link_bandwidth_bytes_per_s, link_label)
        for path in trace_files(items)
    ]
    parts = _map(
        tasks,
        jobs=jobs,
        catalog=catalog or load_catalog(),
        max_worker_bytes=max_worker_bytes,
        engine=engine,
        address=address,
    )
    trace_notes = _check_ranks(parts, load.allow_mixed_schema)
    left_out = {part.rank: part.skipped_events for part in parts if part.skipped_events}
    if left_out:  # as load_trace notes them for a serial load
        trace_notes = (*trace_notes, skipped_note(left_out))
    if skipped is not None:
        skipped.update(left_out)
    parts.sort(key=lambda part: part.rank)
    if not any(part.has_gpu_events for part in parts):
        raise TraceError(
            parts[0].path,
            "no GPU events (kernels, copies, memsets): a CPU-only trace has no GPU time to analyse",
            fix="profile with activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]",
        )
    numbers = set().union(*(part.step_numbers for part in parts))
    dropped = max(numbers) if len(numbers) >= 2 and not include_last_step else None
    return parts, trace_notes, dropped


def _result(part: _RankPart, dropped: int | None) -> Any:
    """The rank's part for the collection's left-out step number ``dropped`` (as
    :func:`~lightspeed.trace.gpu.dropped_step`): its last step is left out when it has that step."""
    return part.results[dropped in part.step_numbers]


def summarize_ranks(
    paths: Iterable[Path | str] | Path | str,
    *,
    jobs: int = 2,
    load: LoadOptions | None = None,
    include_last_step: bool = False,
    catalog: Catalog | None = None,
    max_worker_bytes: int | None = None,
    skipped: dict[int, tuple[BadEvent, ...]] | None = None,
    engine: str = "local",
    address: str | None = None,
) -> TraceSummary:
    """:func:`~lightspeed.trace.summarize` of many rank files, ``jobs`` ranks at a time.

    ``load`` says how files are read; ``max_worker_bytes`` caps each worker's
    address space (a rank that needs more is an error naming the fix).
    ``engine="ray"`` runs one Ray task per file instead (``address``: a running
    cluster's; default a local Ray), and ``jobs`` and ``max_worker_bytes`` are
    Ray's to decide.
    """
    parts, trace_notes, dropped = _gather(
        paths, analysis="summary", jobs=jobs, load=load or LoadOptions(), include_last_step=include_last_step,
        catalog=catalog, max_worker_bytes=max_worker_bytes, skipped=skipped, engine=engine, address=address,
    )  # fmt: skip
    ranks = tuple(_result(part, dropped) for part in parts)
    notes = trace_notes + tuple(note for rank in ranks for note in rank.notes)
    return TraceSummary(
        ranks=ranks,
        last_step_excluded=dropped is not None,
        partial=any(rank.partial for rank in ranks),
        notes=notes,
    )


def stragglers_ranks(
    paths: Iterable[Path | str] | Path | str,
    *,
    jobs: int = 2,
    load: LoadOptions | None = None,
    include_last_step: bool = False,
    max_worker_bytes: int | None = None,
    skipped: dict[int, tuple[BadEvent, ...]] | None = None,
    engine: str = "local",
    address: str | None = None,
) -> StragglerReport:
    """:func:`~lightspeed.trace.lateness` of many rank files, ``jobs`` ranks at a time (or on Ray)."""
    parts, trace_notes, dropped = _gather(
        paths, analysis="stragglers", jobs=jobs, load=load or LoadOptions(),
        include_last_step=include_last_step, catalog=None, max_worker_bytes=max_worker_bytes, skipped=skipped,
        engine=engine, address=address,
    )  # fmt: skip
    if len(parts) < 2:
        raise TraceError(
            parts[0].path,
            "straggler analysis compares ranks, and this trace has one",
            fix="pass a folder (or several files) holding every rank's trace",
        )
    durations: dict[Any, dict[int, Arrival]] = defaultdict(dict)
    notes = list(trace_notes)
    for part in parts:
        for key, arrival in _result(part, dropped).items():
            durations[key][part.rank] = arrival
        if part.num_steps == 0:
            notes.append(f"rank {part.rank}: no ProfilerStep annotations; its collectives cannot be matched")
    return straggler_report(
        durations, tuple(part.rank for part in parts), notes, drop_last=dropped is not None
    )


def collectives_ranks(
    paths: Iterable[Path | str] | Path | str,
    *,
    jobs: int = 2,
    load: LoadOptions | None = None,
    link_bandwidth_bytes_per_s: float | None = None,
    include_last_step: bool = False,
    catalog: Catalog | None = None,
    max_worker_bytes: int | None = None,
    skipped: dict[int, tuple[BadEvent, ...]] | None = None,
    engine: str = "local",
    address: str | None = None,
    link_label: str | None = None,
) -> CommsReport:
    """:func:`~lightspeed.trace.collectives` of many rank files, ``jobs`` ranks at a time (or on Ray)."""
    if link_bandwidth_bytes_per_s is not None and not link_bandwidth_bytes_per_s > 0:
        raise UserInputError(f"link bandwidth must be positive, got {link_bandwidth_bytes_per_s} bytes/s")
    parts, trace_notes, dropped = _gather(
        paths, analysis="comms", jobs=jobs, load=load or LoadOptions(), include_last_step=include_last_step,
        catalog=catalog, max_worker_bytes=max_worker_bytes, skipped=skipped,
        link_bandwidth_bytes_per_s=link_bandwidth_bytes_per_s, link_label=link_label, engine=engine,
        address=address,
    )  # fmt: skip
    calls: list[CollectiveCall] = []
    notes = list(trace_notes)
    sources: set[str] = set()
    for part in parts:
        rank_calls, source, rank_notes = _result(part, dropped)
        sources.update(filter(None, source.split("; ")))
        notes.extend(rank_notes)
        calls.extend(rank_calls)
    names = tuple(dict.fromkeys(part.device_name for part in parts if part.device_name))
    return comms_report(calls, notes, sources, drop_last=dropped is not None, device_names=names)
