"""Read a run directory's event logs (untrusted input) into records.

Every problem names the file and line. A line cut short by a crash (the last
line of a file, or the line just before a restarted job's ``job_start``) is
skipped with a :class:`TruncatedLogWarning`; anything else malformed is a
:class:`~lightspeed.errors.DataFileError`. Ranks missing from the run make it
*partial*, which the ledger reports.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from lightspeed.datafile import check_version, finite_number, whole_number
from lightspeed.errors import DataFileError
from lightspeed.files import open_input
from lightspeed.goodput.events import (
    EVENT_TYPES,
    JOB_END_STATUSES,
    PHASES,
    READABLE_VERSIONS,
    TOKENS_SCOPES,
)
from lightspeed.goodput.jsonl import decode_object, json_lines, non_finite_number
from lightspeed.records import Record

MAX_LINE_BYTES: Final = 1 << 20
# Events come from one monotonic clock per segment; allow this much disorder
# between threads that record concurrently before calling the clock backwards.
CLOCK_TOLERANCE_NS: Final = 1_000_000
NS_PER_S: Final = 1e9


_REWRITE: Final = "the tracker never writes this: the log was edited or corrupted; use the original file"


class TruncatedLogWarning(UserWarning):
    """A line cut short by a crash was skipped."""


@dataclass(frozen=True)
class StepEvent(Record):
    """One optimizer step; times in seconds since the run's first job start."""

    step: int
    start_s: float
    end_s: float
    tokens: float
    samples: float
    error: bool
    line: int


@dataclass(frozen=True)
class PhaseEvent(Record):
    """One timed phase (init, data_wait, checkpoint_save, ... custom)."""

    phase: str
    name: str
    start_s: float
    end_s: float
    line: int


@dataclass(frozen=True)
class Segment(Record):
    """One process lifetime of one rank: from its job start to its job end or last event.

    ``status`` is the job end status (ok, error, atexit) or ``crashed`` when the
    log stops without a job end (killed, or still running).
    """

    segment_id: str
    start_s: float
    end_s: float
    status: str
    line: int
    pid: int
    host: str
    steps: tuple[StepEvent, ...]
    phases: tuple[PhaseEvent, ...]


@dataclass(frozen=True)
class RankLog(Record):
    """All segments of one rank, in time order."""

    rank: int
    path: str
    segments: tuple[Segment, ...]
    num_skipped_lines: int = 0


@dataclass(frozen=True)
class Workload(Record):
    """What the job trained, as recorded at job start (for MFU/HFU and SOL)."""

    model: str | None = None
    system: str | None = None
    seq_len: int | None = None
    precision: str = "bf16"
    recompute: str = "none"
    training: str = "full"
    num_accelerators: int | None = None
    model_flop_per_token: float | None = None
    hardware_flop_per_token: float | None = None
    peak_flop_per_s: float | None = None
    sol_tokens_per_s_per_accelerator: float | None = None


@dataclass(frozen=True)
class RunLog(Record):
    """A whole run: every rank's log. Times are seconds since ``start_epoch_s``."""

    path: str
    run_id: str
    start_epoch_s: float
    world_size: int
    num_nodes: int
    tokens_scope: str
    workload: Workload
    ranks: tuple[RankLog, ...]
    missing_ranks: tuple[int, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)
    monitor_runs: tuple[str, ...] = ()

    @property
    def partial(self) -> bool:
        """Whether ranks are missing (their time and tokens are not in the ledger)."""
        return bool(self.missing_ranks)


@dataclass
class _RawSegment:
    header: dict[str, Any]
    line: int
    steps: list[tuple[int, int, int, float, float, bool, int]] = field(default_factory=list)
    phases: list[tuple[str, str, int, int, int]] = field(default_factory=list)
    step_ids: dict[int, int] = field(default_factory=dict)  # step index -> line
    last_ns: int = 0
    end_ns: int | None = None
    status: str = "crashed"


def read_run(path: str | Path, *, quiet: bool = False) -> RunLog:
    """Read a run directory (``rank-*.jsonl`` files) or one rank's ``.jsonl`` file.

    A line cut short by a crash is skipped with a :class:`TruncatedLogWarning`; ``quiet`` skips it
    without one (a reader of a live run, whose last line may be half written: the exporter).

    >>> import tempfile
    >>> from lightspeed.goodput import Tracker
    >>> folder = tempfile.mkdtemp()
    >>> with Tracker(folder) as tracker:
    ...     with tracker.step(tokens=4096):
    ...         pass
    >>> run = read_run(folder)
    >>> run.ranks[0].segments[0].status, len(run.ranks[0].segments[0].steps)
    ('ok', 1)
    """
    source = Path(path)
    files = _rank_files(source)
    raw = {file: _parse_file(file, quiet=quiet) for file in files}
    ranks = _check_ranks(raw)
    run_id = _check_run_ids(raw)
    first = next(iter(raw.values()))[0].header
    origin_ns = min(segment.header["t_ns"] for segments in raw.values() for segment in segments)
    world_size = max(segment.header["world_size"] for segments in raw.values() for segment in segments)
    missing = tuple(sorted(set(range(world_size)) - set(ranks)))
    tokens_scope = first.get("tokens_scope", "rank")
    rank_logs = tuple(
        sorted(
            (_build_rank(file, segments, origin_ns) for file, segments in raw.items()), key=lambda r: r.rank
        )
    )
    notes = _notes(raw, missing, tokens_scope)
    return RunLog(
        path=str(source),
        run_id=run_id,
        start_epoch_s=origin_ns / NS_PER_S,
        world_size=world_size,
        num_nodes=int(first.get("num_nodes", 1)),
        tokens_scope=tokens_scope,
        workload=_workload(first),
        ranks=rank_logs,
        missing_ranks=missing,
        notes=notes,
        monitor_runs=_monitor_runs(raw),
    )


def _monitor_runs(raw: dict[Path, list[_RawSegment]]) -> tuple[str, ...]:
    """The ``lightspeed monitor run`` folders the segments' job starts name, in order of appearance."""
    folders = (segment.header.get("monitor_run") for segments in raw.values() for segment in segments)
    return tuple(dict.fromkeys(folder for folder in folders if isinstance(folder, str) and folder))


def _rank_files(source: Path) -> list[Path]:
    if source.is_dir():
        files = sorted(source.glob("rank-*.jsonl"))
        if not files:
            raise DataFileError(
                source,
                "no rank-*.jsonl event logs in this directory",
                fix="point at the run_dir given to lightspeed.goodput.Tracker",
            )
        return files
    if not source.exists():
        raise DataFileError(source, "no such file or directory", fix="check the path")
    return [source]


def _parse_file(path: Path, *, quiet: bool) -> list[_RawSegment]:
    segments: list[_RawSegment] = []
    pending_bad: int | None = None
    pending_text = b""
    skipped = 0
    with open_input(path, what="goodput event log (rank-*.jsonl)") as handle:
        for number, line in json_lines(handle, path, MAX_LINE_BYTES):
            if not line.strip():
                continue
            event = decode_object(line, path=path, number=number)
            if event is None:
                if pending_bad is not None:
                    raise _bad_json(path, pending_bad, pending_text)
                if non_finite_number(line) is not None:
                    raise _bad_json(path, number, line)
                pending_bad, pending_text = number, line
                continue
            if pending_bad is not None:
                if event.get("type") != "job_start":
                    raise _bad_json(path, pending_bad, pending_text)
                if not quiet:
                    _warn_skipped(path, pending_bad)
                skipped += 1
                pending_bad = None
            _apply(path, number, event, segments)
    if pending_bad is not None:
        if not quiet:
            _warn_skipped(path, pending_bad)
        skipped += 1
    if not segments:
        raise DataFileError(path, "no job_start event", fix="the file is empty or not a lightspeed event log")
    segments[0].header["_skipped"] = skipped
    return segments


def _bad_json(path: Path, line: int, text: bytes) -> DataFileError:
    literal = non_finite_number(text)
    if literal is not None:
        return DataFileError(
            path,
            f"{literal[1]} is not a JSON number",
            line=line,
            field=literal[0],
            fix="write a finite number there (the tracker refuses NaN and infinite values)",
        )
    return DataFileError(
        path,
        "not a JSON object (only the last line of a crashed segment may be cut short)",
        line=line,
        fix="repair or delete that line",
    )


def _warn_skipped(path: Path, line: int) -> None:
    warnings.warn(f"{path}:{line}: skipped a line cut short by a crash", TruncatedLogWarning, stacklevel=4)


def _apply(path: Path, number: int, event: dict[str, Any], segments: list[_RawSegment]) -> None:
    check_version(event, READABLE_VERSIONS, path=path, what="event schema", line=number)
    kind = event.get("type")
    if kind not in EVENT_TYPES:
        raise DataFileError(path, "unknown event type", line=number, field="type", value=kind)
    if kind == "job_start":
        segments.append(_start_segment(path, number, event, segments))
        return
    if not segments:
        raise DataFileError(path, f"{kind} event before any job_start", line=number)
    segment = segments[-1]
    if event.get("seg") != segment.header["seg"]:
        raise DataFileError(
            path,
            "event of another job segment: two processes wrote this rank's log at once",
            line=number,
            field="seg",
            value=event.get("seg"),
            fix="give each process its own rank (Tracker(rank=...)) or its own run_dir",
        )
    if segment.end_ns is not None:
        raise DataFileError(path, f"{kind} event after job_end", line=number)
    if kind == "job_end":
        _end_segment(path, number, event, segment)
    elif kind == "step":
        _add_step(path, number, event, segment)
    else:
        _add_phase(path, number, event, segment)


def _start_segment(
    path: Path, number: int, event: dict[str, Any], segments: list[_RawSegment]
) -> _RawSegment:
    t_ns = _integer(path, number, event, "t_ns")
    rank = _integer(path, number, event, "rank")
    world_size = _integer(path, number, event, "world_size")
    if world_size < 1:
        raise DataFileError(
            path, "world_size must be >= 1", line=number, field="world_size", value=world_size, fix=_REWRITE
        )
    if not 0 <= rank < world_size:
        raise DataFileError(
            path,
            f"rank {rank} is not in 0..world_size-1 (world_size {world_size})",
            line=number,
            field="rank",
            value=rank,
            fix=_REWRITE,
        )
    for key in ("run_id", "seg"):
        if not isinstance(event.get(key), str) or not event[key]:
            raise DataFileError(path, "missing or empty string", line=number, field=key, value=event.get(key))
    if event.get("tokens_scope", "rank") not in TOKENS_SCOPES:
        raise DataFileError(path, "unknown tokens scope", line=number, field="tokens_scope")
    if segments and t_ns < segments[-1].last_ns - CLOCK_TOLERANCE_NS:
        raise DataFileError(
            path,
            f"this job segment starts {(segments[-1].last_ns - t_ns) / NS_PER_S:.3f} s before the previous "
            f"segment's last event (line {segments[-1].line} onwards): the wall clock went backwards "
            "between restarts, or two jobs wrote the same run_dir",
            line=number,
            fix="use a fresh run_dir per job, or keep the host clocks in sync (NTP)",
        )
    segment = _RawSegment(header=dict(event), line=number)
    segment.last_ns = t_ns
    return segment


def _end_segment(path: Path, number: int, event: dict[str, Any], segment: _RawSegment) -> None:
    t_ns = _integer(path, number, event, "t_ns")
    _check_order(path, number, segment, t_ns, t_ns)
    if t_ns < segment.last_ns - CLOCK_TOLERANCE_NS:
        raise DataFileError(
            path,
            f"job_end is stamped {(segment.last_ns - t_ns) / NS_PER_S:.3f} s before the segment's last event "
            "ends: the events after it would be cut off",
            line=number,
            field="t_ns",
            value=t_ns,
            fix="the log was edited or merged from another run; use the original file",
        )
    status = event.get("status")
    if status not in JOB_END_STATUSES:
        raise DataFileError(path, "unknown job end status", line=number, field="status", value=status)
    segment.end_ns = t_ns
    segment.status = str(status)
    segment.last_ns = max(segment.last_ns, t_ns)


def _add_step(path: Path, number: int, event: dict[str, Any], segment: _RawSegment) -> None:
    start_ns = _integer(path, number, event, "start_ns")
    end_ns = _integer(path, number, event, "end_ns")
    _check_order(path, number, segment, start_ns, end_ns)
    step = _integer(path, number, event, "step")
    if step in segment.step_ids:
        raise DataFileError(
            path,
            f"step {step} is logged twice in one job segment (first on line {segment.step_ids[step]})",
            line=number,
            field="step",
            value=step,
            fix="give each step its own index (Tracker.step() counts them); a restart starts a new segment",
        )
    tokens = _number(path, number, event, "tokens")
    samples = _number(path, number, event, "samples")
    error = bool(event.get("error", False))
    if not error:  # a step that raised may be run again under its index
        segment.step_ids[step] = number
    segment.steps.append((step, start_ns, end_ns, tokens, samples, error, number))
    segment.last_ns = max(segment.last_ns, end_ns)


def _add_phase(path: Path, number: int, event: dict[str, Any], segment: _RawSegment) -> None:
    start_ns = _integer(path, number, event, "start_ns")
    end_ns = _integer(path, number, event, "end_ns")
    _check_order(path, number, segment, start_ns, end_ns)
    phase = event.get("phase")
    if phase not in PHASES:
        raise DataFileError(
            path,
            "unknown phase",
            line=number,
            field="phase",
            value=phase,
            fix=f"use one of {', '.join(PHASES)}",
        )
    name = event.get("name", "")
    if phase == "custom" and (not isinstance(name, str) or not name):
        raise DataFileError(path, "custom badput without a name", line=number, field="name", value=name)
    segment.phases.append((str(phase), str(name) if phase == "custom" else "", start_ns, end_ns, number))
    segment.last_ns = max(segment.last_ns, end_ns)


def _check_order(path: Path, number: int, segment: _RawSegment, start_ns: int, end_ns: int) -> None:
    if end_ns < start_ns:
        raise DataFileError(path, "event ends before it starts", line=number, value=[start_ns, end_ns])
    segment_start = segment.header["t_ns"]
    if start_ns < segment_start - CLOCK_TOLERANCE_NS:
        raise DataFileError(
            path,
            f"event starts {(segment_start - start_ns) / NS_PER_S:.3f} s before its job_start "
            f"(line {segment.line}): the clock went backwards",
            line=number,
            fix="the log was edited or merged from another run; use the original file",
        )


def _integer(path: Path, number: int, event: dict[str, Any], key: str) -> int:
    return whole_number(event, key, path=path, line=number)


def _number(path: Path, number: int, event: dict[str, Any], key: str) -> float:
    return finite_number(event, key, path=path, line=number, default=0)


def _check_ranks(raw: dict[Path, list[_RawSegment]]) -> list[int]:
    seen: dict[int, Path] = {}
    for path, segments in raw.items():
        ranks = {segment.header["rank"] for segment in segments}
        if len(ranks) != 1:
            raise DataFileError(
                path, f"one file holds several ranks: {sorted(ranks)}", fix="keep one rank per file"
            )
        rank = ranks.pop()
        if rank in seen:
            raise DataFileError(
                path, f"rank {rank} is also logged in {seen[rank]}", fix="remove the duplicate"
            )
        seen[rank] = path
    return sorted(seen)


def _check_run_ids(raw: dict[Path, list[_RawSegment]]) -> str:
    first: tuple[str, Path, int] | None = None
    for path, segments in raw.items():
        for segment in segments:
            run_id = segment.header["run_id"]
            if first is None:
                first = (run_id, path, segment.line)
            elif run_id != first[0]:
                raise DataFileError(
                    path,
                    f"run id {run_id!r} differs from {first[0]!r} ({first[1]}:{first[2]}): "
                    "logs of different runs are mixed",
                    line=segment.line,
                    fix="give each run its own run_dir",
                )
    assert first is not None
    return first[0]


def _build_rank(path: Path, segments: list[_RawSegment], origin_ns: int) -> RankLog:
    def seconds(value: int) -> float:
        return (value - origin_ns) / NS_PER_S

    built = []
    skipped = 0
    for raw in segments:
        skipped += int(raw.header.get("_skipped", 0))
        steps = tuple(
            StepEvent(step=s, start_s=seconds(a), end_s=seconds(b), tokens=t, samples=n, error=e, line=ln)
            for s, a, b, t, n, e, ln in raw.steps
        )
        phases = tuple(
            PhaseEvent(phase=p, name=nm, start_s=seconds(a), end_s=seconds(b), line=ln)
            for p, nm, a, b, ln in raw.phases
        )
        built.append(
            Segment(
                segment_id=str(raw.header["seg"]),
                start_s=seconds(raw.header["t_ns"]),
                end_s=seconds(raw.end_ns if raw.end_ns is not None else raw.last_ns),
                status=raw.status,
                line=raw.line,
                pid=int(raw.header.get("pid", 0)),
                host=str(raw.header.get("host", "")),
                steps=steps,
                phases=phases,
            )
        )
    rank = int(segments[0].header["rank"])
    return RankLog(rank=rank, path=str(path), segments=tuple(built), num_skipped_lines=skipped)


_WORKLOAD_KEYS: Final = {
    "model": str,
    "system": str,
    "seq_len": int,
    "precision": str,
    "recompute": str,
    "training": str,
    "num_accelerators": int,
    "model_flop_per_token": float,
    "hardware_flop_per_token": float,
    "peak_flop_per_s": float,
    "sol_tokens_per_s_per_accelerator": float,
}


def _workload(header: dict[str, Any]) -> Workload:
    values: dict[str, Any] = {}
    for key, kind in _WORKLOAD_KEYS.items():
        value = header.get(key)
        if value is None:
            continue
        if kind is float and isinstance(value, int | float) and not isinstance(value, bool):
            values[key] = float(value)
        elif isinstance(value, kind) and not isinstance(value, bool):
            values[key] = value
    return Workload(**values)


def _notes(
    raw: dict[Path, list[_RawSegment]], missing: tuple[int, ...], tokens_scope: str
) -> tuple[str, ...]:
    notes = []
    if missing:
        counted = "time is" if tokens_scope == "global" else "time and tokens are"
        notes.append(f"partial: no log for rank(s) {_ranges(missing)}; their {counted} not counted")
    counts = {len(segments) for segments in raw.values()}
    if len(counts) > 1:
        notes.append(
            f"ranks logged different numbers of job segments ({sorted(counts)}): a rank missed a restart"
        )
    last_status = [segments[-1].status for segments in raw.values()]
    if "crashed" in last_status:
        notes.append("the last segment has no job end: the job is still running or was killed")
    return tuple(notes)


def reference_rank(run: RunLog) -> RankLog:
    """The rank with the most job segments (the lowest such rank): restarts hit every rank, but a rank
    that logged fewer segments missed some, so the one with the most counts each restart once."""
    return max(run.ranks, key=lambda rank: (len(rank.segments), -rank.rank))


def _ranges(values: tuple[int, ...]) -> str:
    parts: list[str] = []
    start = previous = values[0]
    for value in (*values[1:], None):
        if value is not None and value == previous + 1:
            previous = value
            continue
        parts.append(str(start) if start == previous else f"{start}-{previous}")
        if value is not None:
            start = previous = value
    return ", ".join(parts)
