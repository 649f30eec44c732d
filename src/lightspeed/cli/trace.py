"""``lightspeed trace``: profiler trace analyses (Kineto JSON, Nsight Systems exports), HTA definitions.

Every subcommand takes trace files or folders of per-rank files, prints
tables (or ``--json``), and exits 2 with one line on bad input.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

import lightspeed.trace as trace_api
from lightspeed import report  # lazy packages: each command loads only what it uses
from lightspeed.cli._common import get_context, given_flags, json_option, print_json, refuse_together
from lightspeed.cli.options import (
    BANDWIDTH,
    CUTOFF,
    JOBS,
    KERNEL_WAIT_THRESHOLD,
    NUM_LINKS,
    PROBABILITY_OPEN,
    ROWS,
    TRACE_MAX_BYTES,
    WORKER_MEMORY,
)
from lightspeed.cli.text_options import OutputPath
from lightspeed.errors import UserInputError
from lightspeed.records import to_jsonable
from lightspeed.trace import DEFAULT_MAX_BYTES, ENGINES, KIND_NAMES, TIME_UNITS

if TYPE_CHECKING:
    from lightspeed.trace import BadEvent, Trace, TraceCache

F = TypeVar("F", bound=Callable[..., Any])


def _load_options(function: F) -> F:
    """Options every subcommand shares: how to read traces and which steps count."""
    options = [
        click.option(
            "--max-bytes",
            type=TRACE_MAX_BYTES,
            envvar="LIGHTSPEED_TRACE_MAX_BYTES",
            default=None,
            help=f"Largest decompressed size of one trace file (default {DEFAULT_MAX_BYTES / 2**30:g}GiB; "
            "env LIGHTSPEED_TRACE_MAX_BYTES).",
        ),
        click.option(
            "--time-unit",
            type=click.Choice(TIME_UNITS),
            default="auto",
            show_default=True,
            help="Unit of a Kineto trace's timestamps (it writes us; auto picks ns for values above 1e17).",
        ),
        click.option(
            "--exact-ns",
            is_flag=True,
            help="Keep nanosecond timestamps (default: round inwards to whole us as HTA does, to match it).",
        ),
        click.option(
            "--include-last-step", is_flag=True, help="Count the last ProfilerStep (HTA leaves it out)."
        ),
        click.option(
            "--allow-mixed-schema",
            is_flag=True,
            help="Analyse ranks written with different schemaVersion values.",
        ),
        click.option(
            "--skip-bad-events",
            is_flag=True,
            help="Leave impossible events out (negative or absurd durations, times far outside the "
            "trace, no ts) instead of stopping on the first; the count is shown beside every figure.",
        ),
        click.option(
            "--device",
            default=None,
            metavar="NAME",
            help="The accelerator the ranks ran on, e.g. h100, for traces that name none (no "
            "deviceProperties) or one the catalog does not know, so their figures get a SOL; refused "
            "for a trace that names a GPU of another vendor or architecture.",
        ),
        click.option(
            "--no-cache",
            is_flag=True,
            help="Parse every file again and keep nothing (default: parsed tables are kept as Parquet in "
            "the lightspeed cache, see 'lightspeed trace cache info').",
        ),
        json_option,
    ]
    for option in reversed(options):
        function = option(function)
    return function


def _load(paths: tuple[Path, ...] | Path, options: dict[str, Any]) -> Trace:
    return trace_api.load_trace(paths, **_load_keywords(options))


def _load_keywords(options: dict[str, Any]) -> dict[str, Any]:
    """The keywords of :func:`lightspeed.trace.load_trace` (and of its ``LoadOptions``), taken out
    of ``options`` (the command's own stay)."""
    max_bytes = options.pop("max_bytes")
    return {
        "max_bytes": DEFAULT_MAX_BYTES if max_bytes is None else max_bytes,
        "time_unit": options.pop("time_unit"),
        "round_to_us": not options.pop("exact_ns"),
        "allow_mixed_schema": options.pop("allow_mixed_schema"),
        "skip_bad_events": options.pop("skip_bad_events"),
        "cache": not options.pop("no_cache"),
        "device": _device_name(options.pop("device")),
    }


def _device_name(text: str | None) -> str | None:
    """The catalog name of ``--device`` (a record name, alias or the name a driver reports)."""
    if text is None:
        return None
    catalog = get_context().catalog()
    found = catalog.find_device(text)
    name: str = (found or catalog.accelerator(text)).name
    return name


def _traces(function: F) -> F:
    """Add the PATHS argument and the shared options; pass a loaded ``trace`` to the command."""

    @click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
    @_load_options
    @functools.wraps(function)
    def wrapper(paths: tuple[Path, ...], **options: Any) -> Any:
        trace = _load(paths, options)
        return function(trace, **options)

    return wrapper  # type: ignore[return-value]


def _emit(result: Any, num_skipped_events: int, as_json: bool, render: Callable[[Any], None]) -> None:
    """Print ``result``; JSON carries ``num_skipped_events`` (tables show it in their notes)."""
    if not as_json:
        render(result)
        return
    payload = to_jsonable(result)
    if isinstance(payload, dict):
        payload["num_skipped_events"] = num_skipped_events
    print_json(payload)


class _Ranks:
    """What a ``--jobs`` command calls: ``ranks(analysis, **keywords)`` runs the analysis of
    :mod:`lightspeed.trace` named ``analysis`` on the loaded trace (one job), or its ``_ranks``
    sibling over the rank files; afterwards ``skipped_by_rank`` counts the impossible events left
    out (``--skip-bad-events``). Only the one that runs is imported (the parallel machinery and
    Ray cost a serial command nothing)."""

    def __init__(
        self,
        paths: tuple[Path, ...],
        options: dict[str, Any],
        jobs: int,
        limit: int | None,
        *,
        engine: str = "local",
        address: str | None = None,
    ) -> None:
        self.skipped_by_rank: dict[int, int] = {}
        if address is not None and engine != "ray":
            raise UserInputError("--address is a Ray cluster's: give it with --engine ray")
        self._serial = jobs == 1 and engine == "local"
        self._trace: Trace | None = None  # loaded on the first call: after the command checked its options
        self._paths, self._jobs, self._limit = paths, jobs, limit
        self._engine, self._address = engine, address
        self._keywords = _load_keywords(options)  # taken out of options: the command's own stay
        if not self._serial:
            self._load = trace_api.LoadOptions(**self._keywords)

    @property
    def num_skipped_events(self) -> int:
        return sum(self.skipped_by_rank.values())

    def __call__(self, analysis: str, **keywords: Any) -> Any:
        if self._serial:
            if self._trace is None:
                self._trace = trace_api.load_trace(self._paths, **self._keywords)
            self.skipped_by_rank = {rank.rank: rank.num_skipped_events for rank in self._trace.ranks}
            return getattr(trace_api, analysis)(self._trace, **keywords)
        skipped: dict[int, tuple[BadEvent, ...]] = {}
        result = getattr(trace_api, f"{analysis}_ranks")(
            self._paths,
            jobs=self._jobs,
            load=self._load,
            max_worker_bytes=self._limit,
            skipped=skipped,
            engine=self._engine,
            address=self._address,
            **keywords,
        )
        self.skipped_by_rank = {rank: len(events) for rank, events in skipped.items()}
        return result


def _ranks(function: F) -> F:
    """Like :func:`_traces`, plus ``--jobs``: with N > 1 the ranks are loaded and analysed in N
    worker processes; the command gets a :class:`_Ranks` to call."""

    @click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
    @_load_options
    @click.option(
        "--jobs",
        "-j",
        default=1,
        show_default=True,
        type=JOBS,
        help="Worker processes loading and analysing ranks in parallel (one rank at a time each).",
    )
    @click.option(
        "--max-worker-memory",
        type=WORKER_MEMORY,
        default=None,
        help="With --jobs: cap each worker's memory (address space), e.g. 8GiB.",
    )
    @click.option(
        "--engine",
        type=click.Choice(ENGINES),
        default="local",
        show_default=True,
        help="Where ranks are analysed: this machine (serially, or --jobs processes), or one Ray task per "
        "rank file (the 'ray' extra; a local Ray unless --address).",
    )
    @click.option(
        "--address",
        default=None,
        metavar="ADDRESS",
        help="With --engine ray: a running Ray cluster (ray://head:10001, or auto on one of its nodes).",
    )
    @functools.wraps(function)
    def wrapper(
        paths: tuple[Path, ...],
        jobs: int,
        max_worker_memory: float | None,
        engine: str,
        address: str | None,
        **options: Any,
    ) -> Any:
        if engine == "ray":
            refuse_together(
                given_flags("jobs", "max_worker_memory"),
                "local worker processes only (--engine local): Ray places its own tasks",
            )
        elif jobs == 1:
            refuse_together(
                given_flags("max_worker_memory"),
                "it caps the worker processes of --jobs N (N of 2 or more): give --jobs too, or leave it out",
            )
        limit = None if max_worker_memory is None else int(max_worker_memory)
        return function(_Ranks(paths, options, jobs, limit, engine=engine, address=address), **options)

    return wrapper  # type: ignore[return-value]


@click.group("trace")
def command() -> None:
    """Profiler trace analyses (PyTorch/Kineto .json[.gz], Nsight Systems .sqlite or .nsys-rep; a file or
    a folder of ranks)."""
    # A large trace file is read on the machine's idle cores (lightspeed.trace.io.kineto_parallel): safe
    # in this process, whose main module is lightspeed's own. Set here, for trace commands only, so that
    # no other command hands it to the programs it starts (`monitor run -- CMD`).
    os.environ.setdefault("LIGHTSPEED_PARSE_WORKERS", "auto")


@command.command("summary")
@_ranks
@click.option(
    "--plot", "plot_path", type=OutputPath(example="ranks.png"), help="Write the per-rank chart (.png/.svg)."
)
def summary_command(ranks: _Ranks, *, as_json: bool, include_last_step: bool, plot_path: Path | None) -> None:
    """Temporal breakdown per rank (idle, compute, non-compute), kernel kinds, overlap, steps.

    Example: lightspeed trace summary traces/ --json; lightspeed trace summary ranks/ --jobs 8
    """
    result = ranks("summarize", include_last_step=include_last_step, catalog=get_context().catalog())
    if plot_path is not None:
        for path in report.save_temporal_breakdown(result, plot_path):
            click.echo(f"wrote {path}", err=True)
    if as_json:
        skipped = ranks.skipped_by_rank
        print_json(
            [
                {**row, "num_skipped_events": skipped.get(row["rank"], 0)}
                for row in report.trace_summary_json(result)
            ]
        )
    else:
        report.render_trace_summary(result)


@command.command("kernels")
@_traces
@click.option("--top", default=10, show_default=True, type=ROWS, help="Kernels per kind.")
@click.option(
    "--kind", "kinds", multiple=True, type=click.Choice(KIND_NAMES), help="Only these kinds (repeatable)."
)
@click.option("--per-rank", is_flag=True, help="One list per rank instead of pooling ranks.")
@click.option("--full-names", is_flag=True, help="Print whole kernel names (default: shortened).")
def kernels_command(
    trace: Trace,
    *,
    as_json: bool,
    include_last_step: bool,
    top: int,
    kinds: tuple[str, ...],
    per_rank: bool,
    full_names: bool,
) -> None:
    """Top kernels by total time, per kind, with count, min, median and max."""
    result = trace_api.top_kernels(
        trace, top=top, kinds=kinds or KIND_NAMES, per_rank=per_rank, include_last_step=include_last_step
    )
    _emit(
        result,
        trace.num_skipped_events,
        as_json,
        lambda r: report.render_trace_kernels(r, full_names=full_names),
    )


@command.command("idle")
@_traces
@click.option(
    "--kernel-wait-threshold",
    "kernel_wait_threshold_s",
    type=KERNEL_WAIT_THRESHOLD,
    default="30us",
    show_default=True,
    help="Gaps shorter than this between launched kernels count as kernel wait (HTA's default); "
    "give the unit: a bare 30 is refused.",
)
@click.option("--no-streams", is_flag=True, help="Only the whole-GPU view, not each stream.")
def idle_command(
    trace: Trace, *, as_json: bool, include_last_step: bool, kernel_wait_threshold_s: float, no_streams: bool
) -> None:
    """Idle GPU time split into host wait, kernel wait and other."""
    result = trace_api.idle_breakdown(
        trace,
        kernel_wait_threshold_s=kernel_wait_threshold_s,
        include_last_step=include_last_step,
    )
    _emit(
        result,
        trace.num_skipped_events,
        as_json,
        lambda r: report.render_trace_idle(r, per_stream=not no_streams),
    )


@command.command("launch")
@_traces
@click.option(
    "--runtime-cutoff",
    "runtime_cutoff_s",
    type=CUTOFF,
    default="50us",
    show_default=True,
    help="Runtime calls longer than this are outliers.",
)
@click.option(
    "--delay-cutoff",
    "delay_cutoff_s",
    type=CUTOFF,
    default="100us",
    show_default=True,
    help="Launch delays longer than this are outliers.",
)
@click.option(
    "--short-kernel",
    "short_kernel_s",
    type=CUTOFF,
    default="10us",
    show_default=True,
    help="GPU events shorter than this are short.",
)
def launch_command(
    trace: Trace,
    *,
    as_json: bool,
    include_last_step: bool,
    runtime_cutoff_s: float,
    delay_cutoff_s: float,
    short_kernel_s: float,
) -> None:
    """Launch delay and runtime statistics, short-kernel counts."""
    result = trace_api.launch_stats(
        trace,
        runtime_cutoff_s=runtime_cutoff_s,
        launch_delay_cutoff_s=delay_cutoff_s,
        short_kernel_s=short_kernel_s,
        include_last_step=include_last_step,
    )
    _emit(result, trace.num_skipped_events, as_json, report.render_trace_launch)


@command.command("comms")
@_ranks
@click.option(
    "--link-bandwidth",
    "link_bandwidth_bytes_per_s",
    type=BANDWIDTH,
    help=(
        "SOL per direction: 50GB/s (bytes) or a NIC's 400Gb/s (lowercase b: bits, the same 50 GB/s) "
        "(default: the device's scale-up link, catalog)."
    ),
)
@click.option("--link", "link_name", help="SOL from a catalog link record (per direction), e.g. ib-ndr.")
@click.option("--num-links", default=1, show_default=True, type=NUM_LINKS, help="Links of --link.")
@click.option("--calls", "show_calls", is_flag=True, help="Also list every collective call.")
def comms_command(
    ranks: _Ranks,
    *,
    as_json: bool,
    include_last_step: bool,
    link_bandwidth_bytes_per_s: float | None,
    link_name: str | None,
    num_links: int,
    show_calls: bool,
) -> None:
    """Each NCCL collective's size, duration, algbw and busbw against the link SOL."""
    if link_bandwidth_bytes_per_s is not None and link_name is not None:
        raise UserInputError("give --link-bandwidth or --link, not both")
    if link_name is None:
        refuse_together(
            given_flags("num_links"), "it counts the links of --link NAME: give --link too, or leave it out"
        )
    catalog = get_context().catalog()
    bandwidth, label = link_bandwidth_bytes_per_s, None
    if link_name is not None:
        link = catalog.link(link_name)
        bandwidth = link.per_direction_bytes_per_s * num_links
        label = f"{link.name} x {num_links} (catalog)"
    result = ranks(
        "collectives",
        link_bandwidth_bytes_per_s=bandwidth,
        link_label=label,
        include_last_step=include_last_step,
        catalog=catalog,
    )
    _emit(result, ranks.num_skipped_events, as_json, lambda r: report.render_trace_comms(r, calls=show_calls))


@command.command("stragglers")
@_ranks
def stragglers_command(ranks: _Ranks, *, as_json: bool, include_last_step: bool) -> None:
    """Per-step, per-rank lateness of collectives across ranks."""
    result = ranks("stragglers", include_last_step=include_last_step)
    _emit(result, ranks.num_skipped_events, as_json, report.render_trace_stragglers)


@command.command("diff")
@click.argument("trace_a", type=click.Path(path_type=Path))
@click.argument("trace_b", type=click.Path(path_type=Path))
@_load_options
@click.option(
    "--top",
    default=10,
    show_default=True,
    type=ROWS,
    help="Kernels compared.",
)
@click.option(
    "--alpha",
    default=0.05,
    show_default=True,
    type=PROBABILITY_OPEN,
    help="Significance level (after adjustment).",
)
@click.option("--full-names", is_flag=True, help="Print whole kernel names (default: shortened).")
def diff_command(
    trace_a: Path, trace_b: Path, top: int, alpha: float, full_names: bool, **options: Any
) -> None:
    """What got slower or faster from A to B: a per-step Mann-Whitney U test per metric.

    Example: lightspeed trace diff before/ after/
    """
    as_json = options.pop("as_json")
    include_last_step = options.pop("include_last_step")
    first = _load(trace_a, dict(options))
    second = _load(trace_b, options)
    result = trace_api.diff_traces(first, second, top=top, alpha=alpha, include_last_step=include_last_step)
    _emit(
        result,
        first.num_skipped_events + second.num_skipped_events,
        as_json,
        lambda r: report.render_trace_diff(r, full_names=full_names),
    )


@command.group("cache")
def cache_group() -> None:
    """The Parquet cache of parsed traces: what it holds, and clearing it."""


def _cache() -> TraceCache:
    cache = trace_api.TraceCache.default()
    if cache is None:
        raise UserInputError(
            "the trace cache is off (pyarrow is not installed, or LIGHTSPEED_TRACE_CACHE=off); "
            "pip install 'lightspeed[trace]' to turn it on"
        )
    return cache


@cache_group.command("info")
@json_option
def cache_info_command(as_json: bool) -> None:
    """Where the cache is, its entries and bytes, and its limit (LIGHTSPEED_TRACE_CACHE_MAX_BYTES)."""
    info = _cache().info()
    if as_json:
        print_json(info)
    else:
        report.render_trace_cache(info, cleared=False)


@cache_group.command("clear")
@json_option
def cache_clear_command(as_json: bool) -> None:
    """Delete every cached trace (each is parsed again on its next use)."""
    info = _cache().clear()
    if as_json:
        print_json({**info.to_dict(), "cleared": True})
    else:
        report.render_trace_cache(info, cleared=True)
