"""Inputs of the regression gate (sample files, store runs, goodput run folders) and metric history.

Each source becomes a tuple of :class:`~lightspeed.gate.compare.MetricSamples`
(one per metric). Files come from other machines: JSON is parsed with the
standard library's parser, size-bounded, and every field is validated with an
error naming the file, field, value and fix.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from dataclasses import fields as dataclass_fields
from pathlib import Path
from typing import Any, Final

import numpy as np

from lightspeed.bench import BenchResult, Stats, size_fields
from lightspeed.datafile import load_json, read_bounded
from lightspeed.environment import EnvironmentFingerprint
from lightspeed.errors import DataFileError, StoreError, UserInputError
from lightspeed.files import check_input, looks_like_path
from lightspeed.gate.compare import ENVIRONMENT_FIELDS, MetricSamples, compare_samples
from lightspeed.gate.history import benchmark_records
from lightspeed.gate.run_compare import series_label
from lightspeed.goodput import read_run
from lightspeed.records import Record
from lightspeed.store.backends import StoreMissingError
from lightspeed.store.database import ResultsStore, open_store
from lightspeed.store.records import NewRecord, RunSummary, StoredRecord
from lightspeed.trace import detect_format, load_trace
from lightspeed.units import unit_direction

# The fields that make a JSON object a benchmark result (plus one size field: BENCH_SIZE_FIELDS).
BENCH_FIELDS: Final = ("suite", "name", "value", "unit", "correct")
BENCH_SIZE_FIELDS: Final = ("size", "flop_per_call", "size_bytes", "num_ops_per_sample")
# Kinds of run that measure something (their history can regress); predictions do not.
MEASURED_KINDS: Final = ("benchmark", "goodput", "trace", "monitor")
# A sample file larger than this is not a list of timings; refuse to parse it.
MAX_SAMPLE_FILE_BYTES: Final = 64 * 2**20
# The keys of a sample file's metric object (docs/regression-gate.md, "Sample file schema").
SAMPLE_FILE_KEYS: Final = ("metric", "unit", "lower_is_better", "samples", "warmup", "environment")
# An environment fingerprint's keys: a sample file's environment may be one copied whole (the gate
# compares ENVIRONMENT_FIELDS of it and reads nothing else).
FINGERPRINT_KEYS: Final = (
    *(item.name for item in dataclass_fields(EnvironmentFingerprint)),
    "fingerprint_id",
)
# The fields of a record of 'lightspeed results export --json' that the gate reads.
EXPORTED_RECORD_FIELDS: Final = ("record_id", "run_id", "name", "metric", "unit", "payload")
# Records older writers stored in another form, read as today's writers store them:
# (metric, unit) -> (metric, unit, scale to today's unit, lower_is_better). The tour stored a
# trace's idle share as idle_pct in % without a direction; it stores idle_fraction now.
LEGACY_METRICS: Final[dict[tuple[str, str], tuple[str, str, float, bool]]] = {
    ("idle_pct", "%"): ("idle_fraction", "1", 0.01, True),
    # the tour's DeepSeek-V3 GPU-hours, stored in "h" before round 15
    ("gpu_hours", "h"): ("gpu_hours", "GPU-hours", 1.0, True),
}


def read_sample_file(path: Path) -> tuple[MetricSamples, ...]:
    """Read a sample file: one object or a list of objects

    ``{"metric": "step_time_s", "unit": "s", "lower_is_better": true,
    "samples": [0.52, 0.51, ...], "warmup": 2}`` (``warmup`` optional, default 0),
    or ``lightspeed bench --json`` output (one series per benchmark result).
    or ``lightspeed results export --json`` output (one series per stored name and
    metric, as ``run:ID`` gives). Raises :class:`DataFileError` naming the file, field and fix.
    """
    data = _load_json(path)
    items = data if isinstance(data, list) else [data]
    if not items:
        raise DataFileError(path, "the file holds an empty list", fix="add at least one metric object")
    if all(isinstance(item, Mapping) and is_bench_result(item) for item in items):
        return _bench_file_samples(items, path)
    if any(isinstance(item, Mapping) and is_exported_record(item) for item in items):
        return _exported_samples(items, path)
    return tuple(parse_sample_object(item, path=path, where=f"[{index}]") for index, item in enumerate(items))


def is_bench_result(data: Mapping[str, Any]) -> bool:
    """Whether ``data`` looks like a :class:`~lightspeed.bench.BenchResult` as JSON (old or new keys)."""
    return all(key in data for key in BENCH_FIELDS) and any(key in data for key in BENCH_SIZE_FIELDS)


def is_exported_record(data: Mapping[str, Any]) -> bool:
    """Whether ``data`` looks like a record of ``lightspeed results export --json``."""
    return all(key in data for key in EXPORTED_RECORD_FIELDS)


def bench_result_from_dict(data: Mapping[str, Any]) -> BenchResult:
    """A benchmark result from its JSON (``lightspeed bench --json``, a stored payload).

    Results written before the size split (only ``size``) are read too.
    Raises ``TypeError``/``ValueError``/``KeyError`` on a malformed field; callers
    turn them into errors that name their file or run.
    """
    stats = data.get("stats") or {}
    value = float(data["value"])
    sizes = size_fields(data)
    return BenchResult(
        suite=str(data["suite"]),
        name=str(data["name"]),
        dtype=None if data.get("dtype") is None else str(data["dtype"]),
        value=value,
        unit=str(data["unit"]),
        sol=None if data.get("sol") is None else float(data["sol"]),
        fraction_of_sol=None if data.get("fraction_of_sol") is None else float(data["fraction_of_sol"]),
        stats=Stats(**{key: float(stats.get(key, value)) for key in ("min", "median", "max")}),
        correct=bool(data["correct"]),
        sol_note=str(data.get("sol_note", "")),
        details=dict(data.get("details") or {}),
        samples=tuple(float(sample) for sample in data.get("samples") or ()),
        flop_per_call=sizes["flop_per_call"],
        size_bytes=sizes["size_bytes"],
        num_ops_per_sample=sizes["num_ops_per_sample"],
    )


def _bench_file_samples(items: Sequence[Mapping[str, Any]], path: Path) -> tuple[MetricSamples, ...]:
    """``lightspeed bench --json`` output: one series per result, its repetitions as samples."""
    for index, item in enumerate(items):
        if not isinstance(item["correct"], bool):
            raise DataFileError(
                path, f"entry [{index}] needs true or false", field="correct", value=item["correct"],
                fix="pass the file 'lightspeed bench --json' wrote, unchanged",
            )  # fmt: skip
    try:
        results = [bench_result_from_dict(item) for item in items]
    except (TypeError, ValueError, KeyError) as error:
        raise DataFileError(path, f"a benchmark result is malformed ({error})") from None
    return samples_from_records(benchmark_records(results), source=str(path))


def _exported_samples(items: Sequence[Any], path: Path) -> tuple[MetricSamples, ...]:
    """``lightspeed results export --json`` output: the records as ``run:ID`` reads them from the
    store (the payload's samples and direction), the environment from their fingerprints. An
    export of several runs is refused: the gate compares one run with another, and pooling the
    runs' samples would judge a mixture that ``run:ID`` never gives."""
    records: list[NewRecord] = []
    environment: list[tuple[str, str]] = []
    for index, item in enumerate(items):
        records.append(_exported_record(item, path, f"[{index}]"))
        environment += environment_pairs(item.get("fingerprint"))
    runs = list(dict.fromkeys(str(item["run_id"]) for item in items))
    if len(runs) > 1:
        raise DataFileError(
            path,
            f"the export holds {len(runs)} runs ({_listed(runs)}); the gate compares one run with "
            "another and does not pool runs",
            fix=f"export one run ('lightspeed results export {runs[-1]} --json > FILE'), or compare run:ID",
        )
    _refuse_incomplete_export(items, path, runs[0])
    return samples_from_records(
        records, source=f"{path} (run {runs[0]})", environment=tuple(dict.fromkeys(environment))
    )


def _refuse_incomplete_export(items: Sequence[Mapping[str, Any]], path: Path, run_id: str) -> None:
    """An export of a run its writer had not finished (``"run_complete": false``) is refused as
    ``run:ID`` of that run is: its records may be only a part of the run. Exports written before
    the key existed carry none and are read as before."""
    if all(item.get("run_complete", True) is True for item in items):
        return
    raise DataFileError(
        path,
        f"the export of run {run_id} is incomplete: its writer had not finished the run when it was "
        "exported, so its records may be only a part of the run",
        field="run_complete",
        value=False,
        fix=f"export run {run_id} again once it is complete ('lightspeed results list' lists complete "
        "runs), or compare a complete run",
    )


def _listed(names: Sequence[str], most: int = 4) -> str:
    """The first ``most`` names, and how many more."""
    shown = ", ".join(names[:most])
    return shown if len(names) <= most else f"{shown} and {len(names) - most} more"


def _exported_record(item: object, path: Path, where: str) -> NewRecord:
    fix = "pass the file 'lightspeed results export --json' wrote, unchanged, or compare run:ID"
    if not isinstance(item, Mapping) or not is_exported_record(item):
        fields = ", ".join(EXPORTED_RECORD_FIELDS)
        raise DataFileError(
            path, f"entry {where} is not an exported record like the others ({fields})", fix=fix
        )
    texts = {key: item[key] for key in ("name", "metric", "unit")}
    for key, text in texts.items():
        if not isinstance(text, str):
            raise DataFileError(path, f"entry {where} needs a string", field=key, value=text, fix=fix)
    payload, value = item["payload"], item.get("value")
    if not isinstance(payload, Mapping):
        raise DataFileError(
            path,
            f"entry {where} (run {item['run_id']}) has a payload that is not a JSON object: "
            "its samples and direction are unknown",
            field="payload",
            value=payload,
            fix="leave that record out of the export (or correct it in the store)",
        )
    if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
        raise DataFileError(
            path, f"entry {where} needs a number or null", field="value", value=value, fix=fix
        )
    if not isinstance(item.get("run_complete", True), bool):
        raise DataFileError(
            path,
            f"entry {where} needs true or false",
            field="run_complete",
            value=item["run_complete"],
            fix=fix,
        )
    try:
        return NewRecord(
            name=texts["name"],
            metric=texts["metric"],
            value=None if value is None else float(value),
            unit=texts["unit"],
            payload=dict(payload),
        )
    except UserInputError as error:
        raise DataFileError(path, f"entry {where}: {error}", fix=fix) from None


def environment_pairs(fingerprint: object) -> tuple[tuple[str, str], ...]:
    """The :data:`~lightspeed.gate.compare.ENVIRONMENT_FIELDS` that an environment fingerprint
    (or a sample file's ``environment`` object) records, as ``(key, value)`` pairs; ``gpus`` (one
    name per device) as the distinct names joined. Anything else (absent, empty, not text) is
    left out: a field one side does not record is not compared."""
    if not isinstance(fingerprint, Mapping):
        return ()
    pairs = []
    for key, _label, _hardware in ENVIRONMENT_FIELDS:
        value = fingerprint.get(key)
        if isinstance(value, list | tuple):
            text = ", ".join(
                sorted({name.strip() for name in value if isinstance(name, str) and name.strip()})
            )
        else:
            text = value.strip() if isinstance(value, str) else ""
        if text:
            pairs.append((key, text))
    return tuple(pairs)


def _file_environment(item: Mapping[str, Any], path: Path | str, where: str) -> tuple[tuple[str, str], ...]:
    """A sample file entry's optional ``environment``: an object of fingerprint fields."""
    environment = item.get("environment")
    if environment is None:
        return ()
    fix = 'e.g. {"gpus": ["NVIDIA H100 80GB HBM3"], "cpu_model": "...", "torch_version": "2.5.1"}'
    if not isinstance(environment, Mapping):
        raise DataFileError(
            path, f"entry {where} needs an object", field="environment", value=environment, fix=fix
        )
    _refuse_unknown_keys(
        environment,
        (*(key for key, _label, _hardware in ENVIRONMENT_FIELDS), *FINGERPRINT_KEYS),
        path,
        f"entry {where} environment",
        shown=", ".join(key for key, _label, _hardware in ENVIRONMENT_FIELDS)
        + " (the keys compared; an exported fingerprint's other keys are allowed)",
    )
    for key, _label, _hardware in ENVIRONMENT_FIELDS:
        value = environment.get(key)
        names = value if key == "gpus" and isinstance(value, list) else [value]
        if not all(name is None or isinstance(name, str) for name in names):
            raise DataFileError(
                path, f"entry {where} needs text (gpus: a list of names)", field=f"environment.{key}",
                value=value, fix=fix,
            )  # fmt: skip
    return environment_pairs(environment)


def _refuse_unknown_keys(
    item: Mapping[str, Any],
    known: Sequence[str],
    path: Path | str,
    where: str,
    *,
    shown: str = "",
) -> None:
    """Refuse the keys of ``item`` not in ``known`` (a misspelled key would be silently ignored),
    in one line naming them and the keys that are read (``shown``, default ``known``)."""
    unknown = [str(key) for key in item if key not in known]
    if unknown:
        raise DataFileError(
            path,
            f"{where} has the unknown key(s) {', '.join(repr(key) for key in unknown)}",
            fix=f"use only {shown or ', '.join(known)} (see docs/regression-gate.md)",
        )


def _load_json(path: Path) -> Any:
    if read_bounded(path, max_bytes=MAX_SAMPLE_FILE_BYTES, what="sample file").strip() == b"":
        raise DataFileError(path, "the file is empty", fix="write a JSON sample object into it")
    return load_json(
        path, max_bytes=MAX_SAMPLE_FILE_BYTES, what="sample file", fix="see docs/regression-gate.md"
    )


def parse_sample_object(item: object, *, path: Path | str, where: str = "") -> MetricSamples:
    """One metric object of a sample file as :class:`MetricSamples` (validated); a key it does
    not know (``"warmups"``) is refused rather than ignored."""
    if not isinstance(item, Mapping):
        raise DataFileError(path, f"entry {where} is not a JSON object", fix="see docs/regression-gate.md")
    _refuse_unknown_keys(item, SAMPLE_FILE_KEYS, path, f"entry {where}")
    metric = _string_field(item, "metric", path, where)
    unit = _string_field(item, "unit", path, where)
    lower = item.get("lower_is_better")
    if not isinstance(lower, bool):
        raise DataFileError(
            path, f"entry {where} needs true or false", field="lower_is_better", value=lower,
            fix="true for times and latencies, false for throughputs (for the output of 'lightspeed "
            "results export --json', compare the run as run:ID, or pass the file unchanged)",
        )  # fmt: skip
    raw = item.get("samples")
    if not isinstance(raw, list) or not raw:
        raise DataFileError(
            path, f"entry {where} needs a non-empty list of numbers", field="samples", value=raw
        )
    samples = tuple(_number(value, path, where, index) for index, value in enumerate(raw))
    warmup = item.get("warmup", 0)
    if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
        raise DataFileError(path, f"entry {where} needs a count >= 0", field="warmup", value=warmup)
    return MetricSamples(
        metric=metric,
        unit=unit,
        lower_is_better=lower,
        samples=samples,
        num_warmup=warmup,
        source=str(path),
        environment=_file_environment(item, path, where),
    )


def _string_field(item: Mapping[str, Any], key: str, path: Path | str, where: str) -> str:
    value = item.get(key)
    if not isinstance(value, str) or not value.strip():
        raise DataFileError(path, f"entry {where} needs a non-empty string", field=key, value=value)
    return value.strip()


def _number(value: object, path: Path | str, where: str, index: int) -> float:
    """One sample: a finite number, 0 or more (times, rates and sizes are never negative)."""
    field = f"samples[{index}]"
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise DataFileError(
            path, f"entry {where} has a sample that is not a finite number", field=field, value=value
        )
    if value < 0:
        raise DataFileError(
            path,
            f"entry {where} has a negative sample: a time, rate or size is 0 or more",
            field=field,
            value=value,
            fix="give the measurements themselves (compare differences by comparing the runs)",
        )
    return float(value)


def load_metric_samples(
    source: str | Path, *, store_path: str | Path | None = None, include_last_step: bool = False
) -> tuple[MetricSamples, ...]:
    """The metric samples held by ``source``.

    ``source`` is a sample file (JSON, see :func:`read_sample_file`), a goodput
    run folder (step times, see :func:`goodput_step_samples`), a profiler trace
    file or folder of rank files (step times, see :func:`trace_step_samples`),
    or a run of the results store: ``run:ID`` (an id, a unique prefix or ``latest``), or a bare
    id when no file of that name exists. ``store_path`` is a store file or URL
    (``postgresql://...``), default ``$LIGHTSPEED_STORE`` else the file in ``$LIGHTSPEED_HOME``.
    ``include_last_step`` keeps a trace's last profiler step (left out by default, as HTA does).
    """
    text = str(source)
    path = Path(text)
    if not text.startswith("run:"):
        if is_trace_source(path):
            return trace_step_samples(path, include_last_step=include_last_step)
        if path.is_file():
            return read_sample_file(path)
        if path.is_dir():
            return goodput_step_samples(path)
        if looks_like_path(text):  # meant as a path, not a run id: missing, or a FIFO, a device...
            check_input(
                path,
                what="sample file (JSON), goodput run folder or trace",
                fix="pass a sample file (JSON), a goodput run folder, a trace, or run:ID",
                folder_ok=True,
            )
    run_ref = text.removeprefix("run:")
    bare = not text.startswith("run:") and run_ref != "latest"
    try:
        opened = open_store(store_path, create=False)
    except StoreMissingError as error:
        if bare:
            raise UserInputError(
                f"{text!r} is neither a file, a folder nor a run (and there is no results store: {error})"
            ) from None
        raise
    with opened as store:
        if bare and not any(run.run_id.startswith(run_ref) for run in store.runs(include_incomplete=True)):
            raise UserInputError(
                f"{text!r} is neither a file, a folder nor a run of the results store {store.location}; "
                "pass a sample file (JSON), a goodput run folder, or run:ID (see 'lightspeed results list')"
            )
        run = store.run(run_ref)
        _refuse_incomplete(run)
        records = store.records(run_id=run.run_id)
    return samples_from_records(records, source=f"run:{run.run_id}")


def _refuse_incomplete(run: RunSummary) -> None:
    """A run its writer has not finished is no result to judge: its records may be a part."""
    if run.complete:
        return
    raise UserInputError(
        f"run:{run.run_id} is incomplete: its writer has not finished it (it is still being written, "
        "or its writer crashed), so its records may be only a part of the run; wait for it to finish "
        "and compare again, or compare a complete run ('lightspeed results list' lists them; "
        f"'lightspeed results show {run.run_id}' shows what this one holds so far)"
    )


def samples_from_records(
    records: Sequence[StoredRecord] | Sequence[NewRecord],
    *,
    source: str,
    environment: tuple[tuple[str, str], ...] | None = None,
) -> tuple[MetricSamples, ...]:
    """Group records (stored, or about to be) into one series per (name, metric, unit).

    A record whose payload has a ``samples`` list contributes those repetitions
    (benchmarks store them), the first ``warmup`` of them (payload, default 0) as warm-up
    (as a sample file's ``warmup``); otherwise its ``value`` is one sample. The
    direction comes from the payload's ``lower_is_better`` when present, else
    from a unit that decides it (:func:`unit_direction`: durations and energies
    lower, rates higher); otherwise higher is assumed and the series says so
    (``direction_assumed``). ``environment`` (default: from the stored records'
    fingerprints) names the machine for the gate's environment check. A record stored in an
    older form (:data:`LEGACY_METRICS`) is read in today's (``idle_pct`` in % as
    ``idle_fraction``, lower is better), so old runs compare with new ones. A payload
    that is not a JSON object is refused (its samples and direction are unknown), and so
    is a result that failed its correctness check (``"correct": false``: no measurement).
    """
    groups: dict[tuple[str, str, str], list[StoredRecord | NewRecord]] = {}
    for record in records:
        _payload(record, source)
        _refuse_wrong_result(record, source)
        metric, unit, _scale, _lower = _current_form(record)
        groups.setdefault((record.name, metric, unit), []).append(record)
    series: list[MetricSamples] = []
    for (name, metric, unit), members in groups.items():
        per_record = [_record_samples(record, source) for record in members]
        warmup = [value for samples, num_warmup in per_record for value in samples[:num_warmup]]
        measured = [value for samples, num_warmup in per_record for value in samples[num_warmup:]]
        if not warmup + measured:
            continue
        lower, assumed = _records_direction(members, unit)
        label = series_label(name, metric)
        series.append(
            MetricSamples(
                label,
                unit,
                lower,
                tuple(warmup + measured),
                num_warmup=len(warmup),
                source=source,
                direction_assumed=assumed,
                environment=_records_environment(members) if environment is None else environment,
            )
        )
    if not series:
        raise UserInputError(f"{source} holds no record with a finite value to compare")
    return tuple(series)


def _current_form(record: StoredRecord | NewRecord) -> tuple[str, str, float, bool | None]:
    """(metric, unit, scale, lower_is_better) as today's writers store the record: its own, or
    the :data:`LEGACY_METRICS` entry for an older form (``None``: the record says or the unit)."""
    legacy = LEGACY_METRICS.get((record.metric, record.unit))
    return legacy if legacy is not None else (record.metric, record.unit, 1.0, None)


def _records_direction(members: Sequence[StoredRecord | NewRecord], unit: str) -> tuple[bool, bool]:
    """(lower_is_better, assumed): the first stored ``lower_is_better``, else a legacy form's,
    else the unit's, else higher is better, assumed."""
    for record in members:
        hint = record.payload.get("lower_is_better")
        if isinstance(hint, bool):
            return hint, False
    for record in members:
        legacy_lower = _current_form(record)[3]
        if legacy_lower is not None:
            return legacy_lower, False
    from_unit = unit_direction(unit)
    return (False, True) if from_unit is None else (from_unit, False)


def _records_environment(members: Sequence[StoredRecord | NewRecord]) -> tuple[tuple[str, str], ...]:
    pairs: list[tuple[str, str]] = []
    for record in members:
        if isinstance(record, StoredRecord):
            try:
                fingerprint = record.fingerprint
            except StoreError:  # an environment kept as text (damaged): nothing to compare
                continue
            pairs += environment_pairs(fingerprint)
    return tuple(dict.fromkeys(pairs))


def _payload(record: StoredRecord | NewRecord, source: str) -> Mapping[str, Any]:
    """The record's payload, refused with one line when it is not a JSON object (a JSON string
    that PostgreSQL migration 3 kept for text that was not JSON)."""
    payload: object = record.payload
    if not isinstance(payload, Mapping):
        where = f"record {record.record_id} " if isinstance(record, StoredRecord) else "a record "
        raise UserInputError(
            f"{source}: {where}({record.name} [{record.metric}]) has a payload that is not a JSON object "
            f"but {type(payload).__name__} {str(payload)[:40]!r}: its samples and direction are unknown; "
            "compare another run, or correct that row in the store"
        )
    return payload


def failed_correctness(record: StoredRecord | NewRecord) -> bool:
    """Whether the record holds a benchmark result that failed its correctness check."""
    payload: object = record.payload
    return isinstance(payload, Mapping) and payload.get("correct") is False


def _refuse_wrong_result(record: StoredRecord | NewRecord, source: str) -> None:
    """A wrong result is no measurement: comparing its speed would pass a broken kernel as fast."""
    if not failed_correctness(record):
        return
    where = f"record {record.record_id} " if isinstance(record, StoredRecord) else "the result "
    raise UserInputError(
        f"{source}: {where}({record.name} [{record.metric}]) failed its correctness check "
        "(correct: false), so its speed is no measurement to compare; fix what computes it wrong and "
        "run the benchmark again (or leave that result out of the file)"
    )


def _record_samples(record: StoredRecord | NewRecord, source: str) -> tuple[list[float], int]:
    """The record's samples and how many of the first are warm-up (the payload's ``warmup``)."""
    scale = _current_form(record)[2]
    raw = record.payload.get("samples")
    if isinstance(raw, list) and raw:
        values = [float(v) for v in raw if isinstance(v, int | float) and not isinstance(v, bool)]
        finite = [v * scale for v in values if math.isfinite(v)]
        if finite:
            return finite, _record_warmup(record, source, len(finite))
    if record.value is not None and math.isfinite(record.value):
        return [float(record.value) * scale], 0
    return [], 0


def _record_warmup(record: StoredRecord | NewRecord, source: str, num_samples: int) -> int:
    """The payload's ``warmup`` (default 0): a count below the number of samples."""
    warmup = record.payload.get("warmup", 0)
    if isinstance(warmup, bool) or not isinstance(warmup, int) or not 0 <= warmup < num_samples:
        where = f"record {record.record_id} " if isinstance(record, StoredRecord) else "a record "
        raise UserInputError(
            f"{source}: {where}({record.name} [{record.metric}]) has warmup {warmup!r}: it must be a "
            f"count from 0 to {num_samples - 1} (leading samples of its {num_samples} to leave out); "
            "correct that record or compare another run"
        )
    return warmup


def is_trace_source(path: Path) -> bool:
    """A profiler trace file (Kineto ``.json.gz`` or JSON with ``traceEvents`` near its start, an
    Nsight Systems SQLite export or ``.nsys-rep``) or a folder of them (a goodput run folder
    holds ``.jsonl`` logs instead)."""
    if path.is_dir():
        names = [child.name for child in path.iterdir() if child.is_file()]
        has_traces = any(name.endswith((".json", ".json.gz", ".sqlite", ".nsys-rep")) for name in names)
        return has_traces and not any(name.endswith(".jsonl") for name in names)
    if not path.is_file():
        return False
    if path.name.endswith(".gz") or detect_format(path) in ("nsys-sqlite", "nsys-rep"):
        return True
    with path.open("rb") as handle:
        return b'"traceEvents"' in handle.read(1 << 20)


def trace_step_samples(path: Path, *, include_last_step: bool = False) -> tuple[MetricSamples, ...]:
    """Durations (seconds) of the ``ProfilerStep#N`` annotations of a trace, one per step.

    With several ranks a step lasts as long as its slowest rank. The first
    profiled step is warm-up (the profiler's own start-up) and is excluded
    by default. The last step is left out unless ``include_last_step``, as
    every trace analysis leaves it out (HTA's convention): the profiler stops
    inside it, so it is often a few microseconds, which would pull the median
    of an even count halfway down.
    """
    by_step: dict[int, float] = {}
    for rank in load_trace(path).ranks:
        durations_s = (rank.steps.end_ns - rank.steps.start_ns) * 1e-9
        for number, duration_s in zip(rank.steps.number.tolist(), durations_s.tolist(), strict=True):
            by_step[int(number)] = max(float(duration_s), by_step.get(int(number), 0.0))
    if not by_step:
        raise UserInputError(
            f"trace {path} has no ProfilerStep annotations to compare; call profiler.step() once per "
            "training step (torch.profiler), or push one NVTX range per step named 'step N' (Nsight "
            "Systems), so that step times are recorded"
        )
    numbers = sorted(by_step)
    if len(numbers) >= 2 and not include_last_step:
        numbers = numbers[:-1]
    if len(numbers) < 2:  # only the warm-up step is left: nothing steady to judge
        cut = "" if include_last_step or len(by_step) < 2 else " and the last is cut by the profiler"
        raise UserInputError(
            f"trace {path} has {len(by_step)} profiled step(s): the first is warm-up{cut}, so no steady "
            "step is left to compare; profile at least 3 steps (torch.profiler's schedule: active=3 or "
            "more)" + ("" if include_last_step else ", or pass --include-last-step to keep the last")
        )
    return (_step_series([by_step[number] for number in numbers], str(path)),)


def _step_series(durations_s: Sequence[float], source: str) -> MetricSamples:
    """Step times in run order (at least two: the callers refuse fewer); the first is warm-up."""
    return MetricSamples(
        metric="step_time_s",
        unit="s",
        lower_is_better=True,
        samples=tuple(durations_s),
        num_warmup=1,
        source=source,
    )


def goodput_step_samples(run_dir: Path) -> tuple[MetricSamples, ...]:
    """Step times (seconds) of a goodput run folder, one sample per step number.

    With several ranks a step takes as long as its slowest rank; a step
    repeated after a restart counts once (its last attempt). The first step
    is warm-up (start-up, compilation) and is excluded by default.
    """
    run = read_run(run_dir)
    by_step: dict[int, float] = {}
    for rank in run.ranks:
        durations: dict[int, float] = {}
        for segment in rank.segments:
            for step in segment.steps:
                if not step.error:
                    durations[step.step] = step.end_s - step.start_s
        for number, duration_s in durations.items():
            by_step[number] = max(duration_s, by_step.get(number, 0.0))
    if not by_step:
        raise UserInputError(f"goodput run {run_dir} has no completed step to compare")
    if len(by_step) < 2:  # its one step is the warm-up (start-up, compilation)
        raise UserInputError(
            f"goodput run {run_dir} has one completed step, its warm-up (start-up, compilation): no "
            "steady step to compare; run at least 2 steps"
        )
    return (_step_series([by_step[number] for number in sorted(by_step)], str(run_dir)),)


@dataclass(frozen=True)
class HistoryPoint(Record):
    """One run's value of a metric; ``verdict`` compares it with the run before."""

    run_id: str
    created_s: float
    value: float
    sol: float | None
    num_samples: int
    min_value: float
    max_value: float
    verdict: str


@dataclass(frozen=True)
class MetricHistory(Record):
    """A metric (``name`` + ``metric``) across the runs of the store, oldest first."""

    name: str
    metric: str
    unit: str
    lower_is_better: bool
    points: tuple[HistoryPoint, ...]


def metric_history(
    *, store: ResultsStore, name: str | None = None, metric: str | None = None, max_runs: int = 50
) -> MetricHistory:
    """The history of one stored metric over its last ``max_runs`` runs.

    Without ``name``/``metric``, the (name, metric) pair stored in the most
    runs is chosen (ties: measurements before predictions, then the most
    recent). Each point after the first carries the regression gate's
    verdict against the previous run (``'first run'`` for the first;
    ``'too few samples'`` when a run stored a single value). Results that failed their
    correctness check are left out, as calibration leaves them out.
    """
    stored = store.records(name=name, metric=metric)
    records = [r for r in stored if r.value is not None and not failed_correctness(r)]
    if not records:
        wanted = " ".join(part for part in (name, metric) if part) or "any metric"
        raise UserInputError(f"the results store {store.location} holds no record of {wanted}")
    if name is None or metric is None:
        name, metric = _most_run_key(records)
        records = [r for r in records if (r.name, r.metric) == (name, metric)]
    by_run: dict[str, list[StoredRecord]] = {}
    for record in records:
        by_run.setdefault(record.run_id, []).append(record)
    runs = sorted(by_run.values(), key=lambda group: group[0].created_s)[-max_runs:]
    series = [samples_from_records(group, source=f"run:{group[0].run_id}")[0] for group in runs]
    previous_series: list[MetricSamples | None] = [None, *series[:-1]]
    points = [
        _history_point(group, current, previous)
        for group, current, previous in zip(runs, series, previous_series, strict=True)
    ]
    return MetricHistory(
        name=name,
        metric=metric,
        unit=series[0].unit,
        lower_is_better=series[0].lower_is_better,
        points=tuple(points),
    )


def _most_run_key(records: Sequence[StoredRecord]) -> tuple[str, str]:
    """The (name, metric) stored in the most runs; ties go to measurements (a
    prediction repeats itself), then to the most recent."""
    runs: dict[tuple[str, str], set[str]] = {}
    measured: dict[tuple[str, str], bool] = {}
    latest: dict[tuple[str, str], float] = {}
    for record in records:
        key = (record.name, record.metric)
        runs.setdefault(key, set()).add(record.run_id)
        measured[key] = measured.get(key, False) or record.kind in MEASURED_KINDS
        latest[key] = max(latest.get(key, 0.0), record.created_s)
    return max(runs, key=lambda key: (len(runs[key]), measured[key], latest[key]))


def _history_point(
    group: Sequence[StoredRecord], current: MetricSamples, previous: MetricSamples | None
) -> HistoryPoint:
    verdict = "first run"
    if previous is not None:
        verdict = compare_samples(baseline=previous, current=current).verdict
    values = current.measured()
    return HistoryPoint(
        run_id=group[0].run_id,
        created_s=group[0].created_s,
        value=float(np.median(values)),
        sol=group[0].sol,
        num_samples=len(values),
        min_value=min(values),
        max_value=max(values),
        verdict=verdict,
    )
