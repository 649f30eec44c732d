"""MLPerf Training result logs (MLLOG) and system descriptions, read as untrusted input.

A result file holds one ``:::MLLOG {json}`` line per event (``time_ms``,
``event_type``, ``key``, ``value``, ``metadata``), sometimes ``:::SYSJSON``
lines with the system description, and other program output (ignored).
Submitters log differently, so the reader is lenient where the logs differ:

- ``init_start`` may be logged by every rank (the earliest counts) or as an
  ``INTERVAL_END`` (JuniperNetworks v4.0);
- the first training block may have no ``block_start`` (it starts at
  ``run_start``, Google and JuniperNetworks v4.0);
- evaluation may be logged as ``eval_start``/``eval_stop`` intervals between
  blocks (NVIDIA), inside a block (Intel-HabanaLabs), or only as
  ``eval_accuracy`` points (its time is then inside the blocks).

Time to train is ``run_stop - run_start`` (MLPerf's score); init is
``init_stop - init_start``. What no real run logs is refused with its line: a
block or evaluation outside ``run_start .. run_stop`` or ending before it
starts, blocks that overlap (the clock went backwards), a second
``block_start`` or ``eval_start`` before the first one's stop. A log with no
blocks at all trains from ``run_start`` to its end (a note says so).
"""

from __future__ import annotations

import itertools
import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import msgspec

from lightspeed.datafile import Fields, check_nesting, load_json, load_toml
from lightspeed.errors import DataFileError, UnknownNameError
from lightspeed.files import open_input
from lightspeed.goodput.reader import MAX_LINE_BYTES, TruncatedLogWarning
from lightspeed.paths import package_data
from lightspeed.records import Record

MLLOG_PREFIX: Final = b":::MLLOG "
SYSJSON_PREFIX: Final = b":::SYSJSON "
MAX_SYSTEM_JSON_BYTES: Final = 1 << 20
# (time_ms, line, key, event_type, value, metadata)
_Event = tuple[int, int, str, str, Any, dict[str, Any]]
# Keys whose metadata counts progress (samples, or tokens for gpt3).
_COUNT_KEYS: Final = ("samples_count", "epoch_num")
_BLOCK_KEYS: Final = ("block_start", "block_stop")
# Events that must lie inside the run (run_start .. run_stop).
_RUN_KEYS: Final = (*_BLOCK_KEYS, "eval_start", "eval_stop", "eval_accuracy")


@dataclass(frozen=True)
class MlperfBlock(Record):
    """A training block (between evaluations); times in seconds since the log's first event."""

    start_s: float
    end_s: float
    end_count: float | None
    line: int


@dataclass(frozen=True)
class MlperfEval(Record):
    """An evaluation interval (or point) and the accuracy it reported."""

    start_s: float
    end_s: float
    accuracy: float | None
    count: float | None
    line: int


@dataclass(frozen=True)
class MlperfSystem(Record):
    """The parts of an MLPerf system description lightspeed uses."""

    path: str
    system_name: str
    submitter: str
    num_nodes: int
    accelerators_per_node: int
    accelerator_model_name: str
    framework: str = ""

    @property
    def num_accelerators(self) -> int:
        """Accelerators in the whole system."""
        return self.num_nodes * self.accelerators_per_node


@dataclass(frozen=True)
class MlperfBenchmark(Record):
    """What a benchmark trains: model, tokens per sequence, what its counters count."""

    name: str
    model: str
    seq_len: int
    count_unit: str
    training: str
    recompute: bool
    source: str


@dataclass(frozen=True)
class MlperfLog(Record):
    """One MLPerf Training result file. Times are seconds since ``start_epoch_s``."""

    path: str
    benchmark: str
    submitter: str
    platform: str
    status: str
    start_epoch_s: float
    init_start_s: float
    init_stop_s: float | None
    run_start_s: float | None
    run_stop_s: float | None
    end_s: float  # run_stop, else (a cut log) the last event
    blocks: tuple[MlperfBlock, ...]
    evals: tuple[MlperfEval, ...]
    global_batch_size: int | None
    max_sequence_length: int | None
    trained_count: float | None
    embedded_system: MlperfSystem | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def init_s(self) -> float | None:
        """Initialization time (``init_stop - init_start``)."""
        return None if self.init_stop_s is None else self.init_stop_s - self.init_start_s

    @property
    def time_to_train_s(self) -> float | None:
        """MLPerf's score: ``run_stop - run_start``."""
        if self.run_start_s is None or self.run_stop_s is None:
            return None
        return self.run_stop_s - self.run_start_s

    @property
    def partial(self) -> bool:
        """Whether the run has no ``run_stop`` (it crashed or the log is cut)."""
        return self.run_stop_s is None


def is_mllog(path: Path) -> bool:
    """Whether ``path`` is a file whose first 64 KiB hold an ``:::MLLOG`` line."""
    try:
        with open_input(path) as handle:
            head = handle.read(65536)
    except (OSError, DataFileError):
        return False
    return MLLOG_PREFIX.strip() in head


@dataclass
class _State:
    events: list[_Event] = field(default_factory=list)
    system: dict[str, Any] | None = None
    system_line: int = 0


def read_mllog(path: str | Path) -> MlperfLog:
    """Read an MLPerf Training ``result_*.txt`` file.

    Example::

        log = read_mllog("result_0.txt")
        log.time_to_train_s
        # -> 1411.212
    """
    source = Path(path)
    state = _scan(source)
    if not state.events:
        raise DataFileError(source, "no :::MLLOG lines", fix="pass an MLPerf Training result_*.txt file")
    return _build(source, state)


def _scan(path: Path) -> _State:
    state = _State()
    pending: int | None = None
    with open_input(path, what="MLPerf log (result_*.txt)") as handle:
        for number, raw in enumerate(iter(lambda: handle.readline(MAX_LINE_BYTES + 1), b""), start=1):
            if len(raw) > MAX_LINE_BYTES:
                raise DataFileError(path, f"line longer than {MAX_LINE_BYTES} bytes", line=number)
            line = raw.strip()
            if not line:
                continue
            if pending is not None:
                raise _bad_line(path, pending)
            if line.startswith(SYSJSON_PREFIX) and state.system is None:
                state.system = _json_object(line[len(SYSJSON_PREFIX) :], path, number)
                state.system_line = number
            elif line.startswith(MLLOG_PREFIX):
                event = _json_object(line[len(MLLOG_PREFIX) :], path, number)
                if event is None:
                    pending = number
                    continue
                state.events.append(_event(path, number, event))
    if pending is not None:
        warnings.warn(f"{path}:{pending}: skipped a line cut short", TruncatedLogWarning, stacklevel=3)
    return state


def _json_object(text: bytes, path: Path, number: int) -> dict[str, Any] | None:
    check_nesting(text, path=path, line=number)
    try:
        value = msgspec.json.decode(text)
    except (msgspec.DecodeError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _bad_line(path: Path, line: int) -> DataFileError:
    return DataFileError(
        path, "an :::MLLOG line is not a JSON object", line=line, fix="repair or delete that line"
    )


def _event(path: Path, number: int, event: dict[str, Any]) -> _Event:
    time_ms = event.get("time_ms")
    if isinstance(time_ms, bool) or not isinstance(time_ms, int | float) or time_ms < 0:
        raise DataFileError(path, "expected a time in ms >= 0", line=number, field="time_ms", value=time_ms)
    key = event.get("key")
    if not isinstance(key, str):
        raise DataFileError(path, "expected a string", line=number, field="key", value=key)
    metadata = event.get("metadata")
    event_type = event.get("event_type")
    return (
        int(time_ms),
        number,
        key,
        event_type if isinstance(event_type, str) else "",
        event.get("value"),
        metadata if isinstance(metadata, dict) else {},
    )


def _build(path: Path, state: _State) -> MlperfLog:
    events = state.events
    origin_ms = min(event[0] for event in events)

    def seconds(time_ms: int) -> float:
        return (time_ms - origin_ms) / 1000.0

    first = _first_values(events)
    init_start = min((e[0] for e in events if e[2] == "init_start"), default=origin_ms)
    init_stop = _first_time(events, "init_stop")
    run_start = _first_time(events, "run_start")
    run_stop = _first_time(events, "run_stop")
    marks = [
        ("init_start", init_start),
        ("init_stop", init_stop),
        ("run_start", run_start),
        ("run_stop", run_stop),
    ]
    _check_order(path, events, marks)
    end_ms = run_stop if run_stop is not None else max(e[0] for e in events)
    _check_inside_run(path, events, run_start, run_stop)
    run_start_s = None if run_start is None else seconds(run_start)
    run_end_s = seconds(end_ms)
    notes = _status_notes(_status(events))
    if run_stop is None:
        notes.append("partial: no run_stop (the run crashed or the log is cut): times end at the last event")
    evals = _evals(path, events, seconds)
    if any(event[2] in _BLOCK_KEYS for event in events):
        blocks = _blocks(path, events, seconds, run_start, end_ms)
    else:
        blocks = _run_as_block(events, seconds, run_start, end_ms)
        notes.append(
            "the log marks no training blocks (no block_start/block_stop): the run "
            f"(run_start to {'run_stop' if run_stop is not None else 'the last event'}) less its "
            "evaluations is counted as training"
        )
    if evals and all(item.start_s == item.end_s for item in evals):
        notes.append("evaluation is logged as points only: its time is inside the training blocks")
    system = _system_from_dict(path, state.system, line=state.system_line) if state.system else None
    trained_count, count_notes = _trained_count(path, events, run_start)
    notes += count_notes
    return MlperfLog(
        path=str(path),
        benchmark=str(first.get("submission_benchmark", "")),
        submitter=str(first.get("submission_org", "")),
        platform=str(first.get("submission_platform", "")),
        status=_status(events),
        start_epoch_s=origin_ms / 1000.0,
        init_start_s=seconds(init_start),
        init_stop_s=None if init_stop is None else seconds(init_stop),
        run_start_s=run_start_s,
        run_stop_s=None if run_stop is None else seconds(run_stop),
        end_s=run_end_s,
        blocks=blocks,
        evals=evals,
        global_batch_size=_int_or_none(first.get("global_batch_size")),
        max_sequence_length=_int_or_none(first.get("max_sequence_length")),
        trained_count=trained_count,
        embedded_system=system,
        notes=tuple(notes),
    )


def _first_values(events: list[_Event]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for event in events:
        values.setdefault(event[2], event[4])
    return values


def _first_time(events: list[_Event], key: str) -> int | None:
    return next((event[0] for event in events if event[2] == key), None)


def _check_order(path: Path, events: list[_Event], marks: list[tuple[str, int | None]]) -> None:
    """init_start <= init_stop <= run_start <= run_stop, and a run_start exists."""
    run_start = dict(marks).get("run_start")
    present = [(key, value) for key, value in marks if value is not None]
    for (key_a, time_a), (key_b, time_b) in itertools.pairwise(present):
        if time_b < time_a:
            line = next(event[1] for event in events if event[2] == key_b)
            raise DataFileError(
                path,
                f"{key_b} at {time_b} ms is before {key_a} at {time_a} ms: the clock went backwards",
                line=line,
                fix="use the original result file",
            )
    if run_start is None:
        raise DataFileError(path, "no run_start event", fix="pass a complete MLPerf Training result file")


def _check_inside_run(path: Path, events: list[_Event], run_start: int | None, run_stop: int | None) -> None:
    """Blocks and evaluations lie inside the run (``run_start .. run_stop``): a time outside it means
    the clock went backwards (or the log was edited)."""
    if run_start is None:
        return
    for time_ms, line, key, *_ in events:
        if key not in _RUN_KEYS:
            continue
        if time_ms < run_start:
            raise _backwards(path, line, f"{key} at {time_ms} ms is before run_start at {run_start} ms")
        if run_stop is not None and time_ms > run_stop:
            raise _backwards(path, line, f"{key} at {time_ms} ms is after run_stop at {run_stop} ms")


def _backwards(path: Path, line: int, what: str) -> DataFileError:
    return DataFileError(
        path, f"{what}: the clock went backwards", line=line, fix="use the original result file"
    )


def _unclosed(path: Path, line: int, kind: str, opened_line: int) -> DataFileError:
    return DataFileError(
        path,
        f"a second {kind}_start: the {kind} started at line {opened_line} has no {kind}_stop",
        line=line,
        fix=f"use the original result file: every {kind}_start needs its {kind}_stop",
    )


def _blocks(
    path: Path,
    events: list[_Event],
    seconds: Any,
    run_start_ms: int | None,
    end_ms: int,
) -> tuple[MlperfBlock, ...]:
    """Training blocks in log order; a block_stop with no block_start begins where the previous block
    or evaluation ended (at run_start for the first). Overlapping or reversed blocks are refused."""
    blocks: list[MlperfBlock] = []
    opened: tuple[int, int] | None = None  # (time_ms, line) of the block_start not yet stopped
    boundary = run_start_ms if run_start_ms is not None else 0  # where an unannounced block begins
    previous_end = boundary  # the end of the previous block
    for time_ms, line, key, _, _, metadata in events:
        if key == "block_start":
            if opened is not None:
                raise _unclosed(path, line, "block", opened[1])
            if time_ms < previous_end:
                raise _backwards(
                    path,
                    line,
                    f"block_start at {time_ms} ms is before the previous block's end at {previous_end} ms",
                )
            opened = (time_ms, line)
        elif key == "block_stop":
            start = opened[0] if opened is not None else boundary
            if time_ms < start:
                began = (
                    f"its block_start at {start} ms (line {opened[1]})"
                    if opened
                    else f"its start at {start} ms"
                )
                raise _backwards(path, line, f"block_stop at {time_ms} ms is before {began}")
            blocks.append(
                MlperfBlock(
                    start_s=seconds(start), end_s=seconds(time_ms), end_count=_count(metadata), line=line
                )
            )
            opened = None
            boundary = previous_end = time_ms
        elif key == "eval_stop":
            boundary = max(boundary, time_ms)
    if opened is not None and end_ms > opened[0]:
        blocks.append(MlperfBlock(start_s=seconds(opened[0]), end_s=seconds(end_ms), end_count=None, line=0))
    return tuple(blocks)


def _run_as_block(
    events: list[_Event], seconds: Any, run_start_ms: int | None, end_ms: int
) -> tuple[MlperfBlock, ...]:
    """A log that marks no blocks trains from run_start to its end: one block (evaluations are taken
    out of it by the ledger, as inside any block)."""
    if run_start_ms is None or end_ms <= run_start_ms:
        return ()
    line = next(event[1] for event in events if event[2] == "run_start")
    return (MlperfBlock(start_s=seconds(run_start_ms), end_s=seconds(end_ms), end_count=None, line=line),)


def _evals(path: Path, events: list[_Event], seconds: Any) -> tuple[MlperfEval, ...]:
    evals: list[MlperfEval] = []
    opened: tuple[int, int] | None = None  # (time_ms, line) of the eval_start not yet stopped
    accuracy: float | None = None
    for time_ms, line, key, _, value, metadata in events:
        if key == "eval_start":
            if opened is not None:
                raise _unclosed(path, line, "eval", opened[1])
            opened, accuracy = (time_ms, line), None
        elif key == "eval_accuracy":
            accuracy = (
                float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
            )
            if opened is None:  # a point: evaluation time is inside a block
                point = seconds(time_ms)
                evals.append(
                    MlperfEval(
                        start_s=point, end_s=point, accuracy=accuracy, count=_count(metadata), line=line
                    )
                )
        elif key == "eval_stop" and opened is not None:
            if time_ms < opened[0]:
                began = f"its eval_start at {opened[0]} ms (line {opened[1]})"
                raise _backwards(path, line, f"eval_stop at {time_ms} ms is before {began}")
            evals.append(
                MlperfEval(
                    start_s=seconds(opened[0]),
                    end_s=seconds(time_ms),
                    accuracy=accuracy,
                    count=_count(metadata),
                    line=line,
                )
            )
            opened = None
    return tuple(evals)


def _count(metadata: dict[str, Any]) -> float | None:
    for key in _COUNT_KEYS:
        value = metadata.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    return None


def _trained_count(path: Path, events: list[_Event], run_start: int | None) -> tuple[float | None, list[str]]:
    """Samples (or tokens) trained and a note on where they came from: run_stop's samples_count,
    else a train(ed)_samples logged after run_start (before it, train_samples is the dataset size),
    else the largest counter. A negative or non-finite run_stop count is refused (file:line); a zero
    one (a logger
    that did not count) gives way to the other counters, with a note."""
    for _, number, key, _, _, metadata in events:
        count = metadata.get("samples_count") if key == "run_stop" else None
        if not isinstance(count, int | float) or isinstance(count, bool):
            continue
        if not 0 <= count < math.inf:
            raise DataFileError(
                path,
                "run_stop's samples_count is not a finite number >= 0",
                line=number,
                field="samples_count",
                value=count,
                fix="a count of trained samples is >= 0: use the log the run wrote",
            )
        if count > 0:
            return float(count), []
        fallback = _fallback_count(events, run_start)
        where = "taken from the other counters" if fallback is not None else "unknown (no other counter)"
        return fallback, [f"run_stop's samples_count (line {number}) is 0: the samples trained are {where}"]
    return _fallback_count(events, run_start), []


def _fallback_count(events: list[_Event], run_start: int | None) -> float | None:
    """Samples trained without a run_stop count: the largest train(ed)_samples after run_start,
    else the largest block_stop or eval_accuracy counter."""
    after = [
        float(value)
        for time_ms, _, key, _, value, _ in events
        if key in ("trained_samples", "train_samples")
        and run_start is not None
        and time_ms >= run_start
        and isinstance(value, int | float)
        and not isinstance(value, bool)
    ]
    if after:
        return max(after)
    counts = [
        _count(metadata) for _, _, key, _, _, metadata in events if key in ("block_stop", "eval_accuracy")
    ]
    known = [count for count in counts if count is not None]
    return max(known) if known else None


def _status(events: list[_Event]) -> str:
    for event in events:
        if event[2] == "run_stop":
            status = event[5].get("status")
            return str(status) if status else "unknown"
    return "no run_stop"


def _status_notes(status: str) -> list[str]:
    """A run_stop whose status is not success (``aborted``: the run stopped before its quality target)."""
    if status in ("success", "no run_stop"):
        return []
    if status == "unknown":
        return ["run_stop records no status: whether the run reached its quality target is not known"]
    return [
        f"run_stop status is {status!r}, not 'success': the run did not reach its quality target, "
        "so its time to train is not a valid MLPerf result"
    ]


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def read_system_json(path: str | Path) -> MlperfSystem:
    """Read an MLPerf ``<system>.json`` system description (nodes, accelerators per node, model)."""
    source = Path(path)
    data = load_json(
        source,
        max_bytes=MAX_SYSTEM_JSON_BYTES,
        what="system description",
        fix="pass the submission's systems/*.json",
    )
    if not isinstance(data, dict):
        raise DataFileError(source, "expected a JSON object", fix="pass the submission's systems/*.json")
    return _system_from_dict(source, data)


def _system_from_dict(path: Path, data: dict[str, Any], line: int | None = None) -> MlperfSystem:
    def whole(key: str) -> int:
        value = data.get(key)
        text = str(value).strip() if value is not None else ""
        if not text.isdigit() or int(text) < 1:
            raise DataFileError(
                path,
                "expected a whole number >= 1",
                field=key,
                value=value,
                line=line,
                fix=f'write "{key}": "8"',
            )
        return int(text)

    model = data.get("accelerator_model_name")
    if not isinstance(model, str) or not model.strip():
        raise DataFileError(path, "missing accelerator model", field="accelerator_model_name", line=line)
    return MlperfSystem(
        path=str(path),
        system_name=str(data.get("system_name", "")),
        submitter=str(data.get("submitter", "")),
        num_nodes=whole("number_of_nodes"),
        accelerators_per_node=whole("accelerators_per_node"),
        accelerator_model_name=model.strip(),
        framework=str(data.get("framework", "")),
    )


def load_benchmarks() -> dict[str, MlperfBenchmark]:
    """The MLPerf benchmarks with known models, from ``goodput/data/mlperf.toml``."""
    path = package_data("goodput", "data", "mlperf.toml")
    root = Fields(str(path), load_toml(path))
    sources = root.tables("sources")
    benchmarks = {}
    for name, table in root.tables("benchmark").items():
        unit = table.string("count_unit")
        if unit not in ("tokens", "sequences"):
            raise DataFileError(
                path, "count_unit must be tokens or sequences", field=f"benchmark.{name}.count_unit"
            )
        training = table.string("training")
        if training not in ("full", "lora"):
            raise DataFileError(path, "training must be full or lora", field=f"benchmark.{name}.training")
        benchmarks[name] = MlperfBenchmark(
            name=name,
            model=table.string("model"),
            seq_len=table.integer("seq_len", minimum=1),
            count_unit=unit,
            training=training,
            recompute=table.boolean("recompute", default=False),
            source=table.check_source("source", sources),
        )
    return benchmarks


def benchmark_info(name: str) -> MlperfBenchmark:
    """The benchmark called ``name`` (``gpt3``, ``llama2_70b_lora``)."""
    benchmarks = load_benchmarks()
    if name not in benchmarks:
        raise UnknownNameError("MLPerf benchmark", name, benchmarks, hint="pass --model to name the model")
    return benchmarks[name]
