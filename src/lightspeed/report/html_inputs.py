"""Gather what the HTML report draws: ``--from`` sources, else the results store.

Sources are read with the areas' public readers: a goodput run folder (or one rank's
``rank-*.jsonl`` log) with :func:`lightspeed.goodput.read_run`, a monitor run folder (or one
``capture-*.jsonl``) with :func:`lightspeed.monitor.analyze_run`, a profiler trace with the trace area's
loader, benchmark results (``lightspeed bench --json``) or a plan estimate
(``lightspeed plan train --json``), a serving estimate (``lightspeed plan infer --json``) or a
simulated serving run (``lightspeed simulate --json``) from JSON, a results-store run by id. Without
sources, the store's newest runs are drawn: benchmarks and predictions from
their records, goodput, trace and monitor runs from the folders their records
name (a folder no longer on this machine is said in its section). Every source
is untrusted: JSON is parsed by the standard library with a size bound and every
field is checked.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final

from lightspeed.bench import BenchResult, DeviceSol
from lightspeed.catalog import Catalog
from lightspeed.datafile import JsonFields, load_json
from lightspeed.errors import DataFileError, StoreError, UserInputError
from lightspeed.files import check_input, looks_like_path
from lightspeed.gate import MetricHistory, metric_history
from lightspeed.gate.inputs import bench_result_from_dict, is_bench_result, is_trace_source
from lightspeed.goodput import Ledger, build_ledger, read_run
from lightspeed.monitor import MonitorReport, analyze_run, is_monitor_folder, monitor_folders_of
from lightspeed.records import JsonObject
from lightspeed.report.breakdown_json import checked_breakdown
from lightspeed.report.html import ReportSection
from lightspeed.report.html_cost import ServedPlan, served_plan
from lightspeed.report.html_sections import BenchInputs, PredictedStep, ReportInputs
from lightspeed.report.inference_section import inference_section, is_inference_estimate, simulated_section
from lightspeed.report.kernels import kernel_section
from lightspeed.report.simulation_section import is_simulation_result, serving_section
from lightspeed.report.sol import PART_NAMES
from lightspeed.report.trace import trace_section
from lightspeed.store import (
    MEMORY_STORE,
    ResultsStore,
    RunSummary,
    StoredRecord,
    StoreMissingError,
    open_store,
)
from lightspeed.trace import detect_format, kernel_report, load_trace, read_ncu, summarize
from lightspeed.trace.io.formats import GOODPUT_LOG, MONITOR_CAPTURE, NCU_CSV
from lightspeed.units import compute_precision

MAX_JSON_BYTES: Final = 64 * 2**20
# How far back the report looks for the newest run of each benchmark suite.
MAX_BENCH_RUNS: Final = 50
# Kinds of stored run drawn from the folder their records name (payload keys, in order), and the
# report section a missing folder is said in.
FOLDER_KINDS: Final = {"goodput": "goodput", "trace": "trace", "monitor": "monitor"}
FOLDER_KEYS: Final = ("run_dir", "path")

# More GPUs than any cluster: a larger count is a broken file, not a plan.
MAX_NUM_GPUS: Final = 10**7
_PLAN_FIX: Final = "pass the output of this lightspeed's 'lightspeed plan train ... --json'"
# what a JSON source may be: the commands whose --json output the report draws
_JSON_FIX: Final = (
    "pass the --json output of 'lightspeed bench', 'plan train', 'plan infer' or 'simulate' "
    "(a JSON object, or a list of them)"
)


def predicted_step(data: JsonObject, *, source: str) -> PredictedStep:
    """A :class:`PredictedStep` from a ``plan train --json`` object; checks every field.

    ``step_time_s`` and ``breakdown_s`` are required: every part one the report knows
    (:data:`~lightspeed.report.sol.PART_NAMES`), finite and >= 0, the parts adding up to the step
    time within :data:`~lightspeed.report.breakdown_json.BREAKDOWN_TOLERANCE`. The other fields
    are optional and shown only when present; present, each is checked (``num_gpus`` a whole
    number from 1 to :data:`MAX_NUM_GPUS`, ``mfu`` a fraction from 0 to 1, ``fits`` true or false,
    names strings).
    """
    breakdown = data.get("breakdown_s")
    if not isinstance(breakdown, Mapping) or not breakdown:
        raise DataFileError(source, "not a training estimate", field="breakdown_s", fix=_PLAN_FIX)
    fields = JsonFields(source, data)
    step_s = fields.number("step_time_s")
    present = fields.present
    return PredictedStep(
        model=fields.string("model") if present("model") else None,
        system=fields.string("system") if present("system") else None,
        num_gpus=_num_gpus(fields) if present("num_gpus") else None,
        step_time_s=step_s,
        breakdown_s=_breakdown(JsonFields(source, breakdown, prefix="breakdown_s."), step_s),
        mfu=_fraction(fields, "mfu") if present("mfu") else None,
        bound=fields.string("bound") if present("bound") else None,
        bound_part=fields.string("bound_part") if present("bound_part") else None,
        fits=fields.boolean("fits") if present("fits") else None,
        source=Path(source).name,
    )


def _breakdown(parts: JsonFields, step_s: float) -> dict[str, float]:
    """The parts of the step: known names, finite and >= 0, adding up to the step time."""
    return checked_breakdown(parts, step_s, names=PART_NAMES, what="step", fix=_PLAN_FIX)


def _fraction(fields: JsonFields, key: str) -> float:
    value = fields.number(key, positive=False)
    if not 0.0 <= value <= 1.0:
        raise DataFileError(fields.path, "needs a fraction from 0 to 1", field=key, value=value)
    return value


def _num_gpus(fields: JsonFields) -> int:
    value = fields.data["num_gpus"]
    if isinstance(value, float) and value.is_integer() and value <= MAX_NUM_GPUS:
        value = int(value)  # JSON writers may print 64 as 64.0
    gpus = JsonFields(fields.path, {"num_gpus": value}).integer("num_gpus", minimum=1)
    if gpus > MAX_NUM_GPUS:
        raise DataFileError(
            fields.path,
            f"needs a whole number of GPUs from 1 to {MAX_NUM_GPUS:,}",
            field="num_gpus",
            value=gpus,
        )
    return gpus


def bench_results_from_records(records: Sequence[StoredRecord]) -> list[BenchResult]:
    """Benchmark results back from the store (the payload keeps every field of the result).

    Records that are not benchmark results are skipped; a benchmark payload
    with a malformed field (another version, a hand-edited store) is a
    :class:`StoreError` naming the run and the record.
    """
    results = []
    for record in records:
        payload = dict(record.payload)
        if not is_bench_result(payload):
            continue
        try:
            results.append(bench_result_from_dict(payload))
        except (TypeError, ValueError, KeyError) as error:
            raise StoreError(
                f"run {record.run_id}: benchmark record {record.name!r} has a malformed payload ({error}); "
                "re-run the benchmark or use another LIGHTSPEED_HOME"
            ) from None
    return results


def sol_from_results(results: Sequence[BenchResult], device_name: str | None) -> DeviceSol:
    """The device SOL the results were compared with: GEMM peaks per precision, STREAM bandwidth."""
    flop: dict[str, float] = {}
    bandwidth: float | None = None
    for result in results:
        if result.sol is None:
            continue
        if result.suite == "gemm" and result.dtype is not None:
            flop[compute_precision(result.dtype)] = result.sol
        elif result.suite == "membw":
            bandwidth = result.sol
    return DeviceSol(device_name=device_name, flop_per_s=flop, memory_bandwidth_bytes_per_s=bandwidth)


def _latest_bench(store: ResultsStore) -> BenchInputs | None:
    """The newest run of each benchmark suite on the host of the newest benchmark run."""
    runs = store.runs(kind="benchmark", limit=MAX_BENCH_RUNS)
    if not runs:
        return None
    host = runs[0].host_name
    chosen: dict[str, list[BenchResult]] = {}
    for run in runs:
        if run.host_name != host:
            continue
        results = bench_results_from_records(store.records(run_id=run.run_id))
        for suite in {result.suite for result in results} - set(chosen):
            chosen[suite] = [result for result in results if result.suite == suite]
    results = [result for suite in sorted(chosen) for result in chosen[suite]]
    if not results:
        return None
    device = next((str(r.details["device"]) for r in results if r.details.get("device")), host or None)
    return BenchInputs(results=tuple(results), sol=sol_from_results(results, device), label="benchmarks")


def _latest_predictions(store: ResultsStore) -> list[PredictedStep]:
    runs = store.runs(kind="prediction", limit=1)
    if not runs:
        return []
    records = store.records(run_id=runs[0].run_id)
    return [
        predicted_step(record.payload, source=f"run:{record.run_id}")
        for record in records
        if "breakdown_s" in record.payload
    ]


def _read_json(path: Path) -> Any:
    return load_json(path, max_bytes=MAX_JSON_BYTES, what="results file")


@dataclass(frozen=True)
class SourceOptions:
    """How sources are read: ``skip_bad_events`` and ``include_last_step`` as ``trace summary``
    takes them, ``device`` the catalog device Nsight Compute kernels are compared with (as
    ``kernels report --device``), ``catalog`` the hardware catalog (default: the built-in one)."""

    skip_bad_events: bool = False
    include_last_step: bool = False
    device: str | None = None
    catalog: Catalog | None = None


@dataclass
class _Collected:
    """Inputs found so far while reading the sources, and how to read them."""

    options: SourceOptions = field(default_factory=SourceOptions)

    bench: BenchInputs | None = None
    steps: list[PredictedStep] = field(default_factory=list)
    ledgers: list[Ledger] = field(default_factory=list)
    traces: list[ReportSection] = field(default_factory=list)
    monitors: list[MonitorReport] = field(default_factory=list)
    kernels: list[ReportSection] = field(default_factory=list)
    serving: list[ReportSection] = field(default_factory=list)
    inference: list[ReportSection] = field(default_factory=list)  # plan infer --json estimates
    served: list[ServedPlan] = field(default_factory=list)  # their figures, for the cost section
    folders: set[Path] = field(default_factory=set)  # read already (a monitor run names its goodput run)


def gather_inputs(
    *,
    sources: Sequence[str] = (),
    store_path: str | Path | None = None,
    history_name: str | None = None,
    history_metric: str | None = None,
    skip_bad_events: bool = False,
    include_last_step: bool = False,
    device: str | None = None,
    catalog: Catalog | None = None,
) -> ReportInputs:
    """Everything the report draws: from ``sources`` when given, else the store's newest runs.

    A source is a goodput run folder or one rank's log (its monitor runs are drawn too), a
    ``lightspeed monitor run`` folder or one capture file, a profiler trace (a file, or a folder of
    per-rank files; Kineto or Nsight Systems), Nsight Compute CSV output, a plan
    estimate JSON file, or a store run (``run:ID``).
    The metric history comes from the store (``history_name`` / ``history_metric``
    choose it; by default the metric stored in the most runs), with ``sources`` only
    where one of them names it (a report of given inputs is of those inputs).
    ``skip_bad_events`` leaves impossible trace events out (counted in the section's notes);
    ``include_last_step`` keeps a trace's last profiler step (left out by default, as HTA);
    ``device`` names the catalog device Nsight Compute kernels are compared with (for FLOP/s
    against the SOL; ncu's details page names none); ``catalog`` resolves device names.
    """
    found = _Collected(
        options=SourceOptions(
            skip_bad_events=skip_bad_events,
            include_last_step=include_last_step,
            device=device,
            catalog=catalog,
        )
    )
    reasons: dict[str, str] = {}
    named_history = history_name is not None or history_metric is not None
    # a history named needs the store: its absence is the error, not an empty store's "no record"
    with _reading(store_path, needed=not sources or named_history, reasons=reasons) as store:
        for source in sources:
            _read_source(source, store, found)
        if not sources:
            found.bench = _latest_bench(store)
            found.steps = _latest_predictions(store)
            reasons.update(_latest_folders(store, found))
        history, reason = None, ""
        if not sources or named_history:
            history, reason = _history(store, history_name, history_metric)
            if reason:  # no store at all says more than "the empty store holds no metric"
                reasons["history"] = reasons.pop("store", "") or reason
        else:  # a report of given inputs draws those; a stored metric's history only when named
            reasons.pop("store", None)
            reasons["history"] = (
                "not drawn beside --from inputs; --history NAME or --history-metric METRIC adds it"
            )
    return ReportInputs(
        bench=found.bench,
        estimates=tuple(found.steps),
        ledgers=tuple(found.ledgers),
        trace_sections=tuple(found.traces),
        kernel_sections=tuple(found.kernels),
        history=history,
        reasons=reasons,
        monitors=tuple(found.monitors),
        serving_sections=tuple(found.serving),
        inference_sections=tuple(found.inference),
        served=tuple(found.served),
    )


def _read_source(source: str, store: ResultsStore, found: _Collected) -> None:
    path = Path(source)
    if path.exists():
        if path.resolve() in found.folders:
            return
        found.folders.add(path.resolve())
    # a file's format by its first bytes: one rank's goodput log or one monitor capture is read as
    # its run folder is (each reader takes a single file), never as one JSON document
    file_format = detect_format(path, unknown="") if path.is_file() else None
    if file_format == NCU_CSV:
        _read_ncu(path, found)
    elif file_format == MONITOR_CAPTURE:
        found.monitors.append(analyze_run(path=path))
    elif file_format == GOODPUT_LOG:
        _read_goodput(path, found)
    elif is_trace_source(path):
        _read_trace(path, found)
    elif is_monitor_folder(path):
        found.monitors.append(analyze_run(path=path))
    elif path.is_dir():
        _read_goodput(path, found)
    elif path.is_file():
        _read_json_source(path, found)
    else:
        _from_run(store, source, found)


def _read_goodput(path: Path, found: _Collected) -> None:
    """A goodput run's ledger (a run folder, or one rank's log) and the monitor runs that watched it."""
    found.ledgers.append(build_ledger(run=read_run(path)))
    found.monitors.extend(analyze_run(path=folder, goodput_run=path) for folder in monitor_folders_of(path))


def _read_ncu(path: Path, found: _Collected) -> None:
    """An Nsight Compute CSV's kernel section (its own key: a report may hold several)."""
    options = found.options
    report = kernel_report(read_ncu(path), device=options.device, catalog=options.catalog)
    section = kernel_section(report, label=f"{path.name}: Nsight Compute")
    found.kernels.append(
        replace(section, key=f"kernels-{len(found.kernels) + 1}", title=f"{section.title}: {path.name}")
    )


def _read_trace(path: Path, found: _Collected) -> None:
    """A profiler trace's section, summarized as ``trace summary`` does with the same options."""
    options = found.options
    trace = load_trace(path, skip_bad_events=options.skip_bad_events)
    summary = summarize(trace, include_last_step=options.include_last_step, catalog=options.catalog)
    section = trace_section(
        summary,
        label=f"{path.name}: {len(summary.ranks)} rank(s)",
        num_skipped_events=sum(rank.num_skipped_events for rank in trace.ranks),
    )
    # Several traces in one report: each section needs its own anchor (and its charts their own ids).
    found.traces.append(
        replace(section, key=f"trace-{len(found.traces) + 1}", title=f"{section.title}: {path.name}")
    )


def _read_json_source(path: Path, found: _Collected) -> None:
    """``lightspeed bench --json`` results, ``lightspeed plan train --json`` estimates,
    ``lightspeed plan infer --json`` serving estimates (with their run simulated under the load)
    or ``lightspeed simulate --json`` serving runs."""
    data = _read_json(path)
    items = [item for item in (data if isinstance(data, list) else [data]) if isinstance(item, Mapping)]
    if not items:
        raise DataFileError(path, "holds no JSON object", fix=_JSON_FIX)
    for item in items:
        if is_simulation_result(item):
            found.serving.append(serving_section(item, source=path.name, index=len(found.serving) + 1))
        elif is_inference_estimate(item):
            _read_inference(item, path, found)
        elif not is_bench_result(item) and "breakdown_s" not in item:
            raise DataFileError(
                path,
                "not a result the report draws (no 'breakdown_s' of a training estimate, no "
                "'iteration_breakdown_s' of a serving estimate, not a benchmark result or a simulated run)",
                fix=_JSON_FIX,
            )
    items = [item for item in items if not (is_simulation_result(item) or is_inference_estimate(item))]
    bench_items = [item for item in items if is_bench_result(item)]
    found.steps.extend(predicted_step(item, source=str(path)) for item in items if item not in bench_items)
    if bench_items:
        try:
            results = [bench_result_from_dict(item) for item in bench_items]
        except (TypeError, ValueError, KeyError) as error:
            raise DataFileError(path, f"a benchmark result is malformed ({error})") from None
        device = str(bench_items[0].get("device") or path.stem)
        found.bench = _merge_bench(found.bench, results, device=device, label=path.stem)


def _read_inference(item: JsonObject, path: Path, found: _Collected) -> None:
    """A ``plan infer --json`` estimate's section, and its run simulated under the load (a serving
    section, as a ``simulate --json`` result's) where it has one."""
    found.inference.append(inference_section(item, source=path.name, index=len(found.inference) + 1))
    found.served.append(served_plan(item, source=path.name))
    simulated = simulated_section(item, source=path.name, index=len(found.serving) + 1)
    if simulated is not None:
        found.serving.append(simulated)


def _merge_bench(
    bench: BenchInputs | None, results: Sequence[BenchResult], *, device: str | None, label: str
) -> BenchInputs:
    """Results added to those already found; the SOL is re-derived from all of them."""
    merged = [*(bench.results if bench else ()), *results]
    return BenchInputs(results=tuple(merged), sol=sol_from_results(merged, device), label=label)


def _history(store: ResultsStore, name: str | None, metric: str | None) -> tuple[MetricHistory | None, str]:
    """The chosen history, or why there is none; naming a missing metric is an error."""
    try:
        return metric_history(store=store, name=name, metric=metric), ""
    except UserInputError as error:
        if name or metric:
            raise
        return None, str(error)


def metric_history_or_reason(
    *, store_path: str | Path | None = None, name: str | None = None, metric: str | None = None
) -> tuple[MetricHistory | None, str]:
    """The history of a metric in the store (by default the one stored in the most runs), or why none."""
    try:
        store = open_store(store_path, create=False)
    except StoreMissingError as error:
        return None, str(error)
    with store:
        return _history(store, name, metric)


def _reading(store_path: str | Path | None, *, needed: bool, reasons: dict[str, str]) -> ResultsStore:
    """The store, opened for reading; when it does not exist and the report has other sources,
    an empty in-memory store (the report says why its history is missing). Nothing is created."""
    try:
        return open_store(store_path, create=False)
    except StoreMissingError as error:
        if needed:
            raise
        reasons["store"] = str(error)
        return open_store(MEMORY_STORE, create=False)


def _from_run(store: ResultsStore, source: str, found: _Collected) -> None:
    if looks_like_path(source):
        check_input(
            Path(source),
            what="bench or plan JSON file, goodput run folder or trace",
            fix="pass bench or plan JSON, a goodput run folder, a trace or run:ID",
            folder_ok=True,
        )
    run = store.run(source.removeprefix("run:"))
    records = store.records(run_id=run.run_id)
    if run.kind == "prediction":
        source_name = f"run:{run.run_id}"
        found.steps.extend(
            predicted_step(r.payload, source=source_name) for r in records if "breakdown_s" in r.payload
        )
    elif run.kind == "benchmark":
        results = bench_results_from_records(records)
        found.bench = _merge_bench(found.bench, results, device=run.host_name or None, label=run.label)
    elif run.kind in FOLDER_KINDS:
        _read_source(str(stored_folder(run, records)), store, found)
    else:
        raise UserInputError(
            f"run {run.run_id} is a {run.kind!r} run; the report draws {', '.join(_DRAWN_KINDS)} runs"
        )


_DRAWN_KINDS: Final = ("benchmark", "prediction", *FOLDER_KINDS)


def stored_folder(run: RunSummary, records: Sequence[StoredRecord]) -> Path:
    """The folder (or trace file) the records of a goodput, trace or monitor run name, when it is
    still on this machine; else a :class:`UserInputError` that says which and where it was."""
    named = [
        str(record.payload[key])
        for record in records
        for key in FOLDER_KEYS
        if isinstance(record.payload.get(key), str) and record.payload[key]
    ]
    if not named:
        raise UserInputError(
            f"{run.kind} run {run.run_id} names no folder to draw; pass its folder with --from PATH"
        )
    path = Path(named[0])
    if not path.exists():
        raise UserInputError(
            f"{run.kind} run {run.run_id} was read from {path}, which is not on this machine (moved, "
            "deleted or another host); copy it back or pass its new place with --from PATH"
        )
    return path


def _latest_folders(store: ResultsStore, found: _Collected) -> dict[str, str]:
    """The newest goodput, trace and monitor runs, drawn from their folders; a reason per section
    whose newest run's folder is gone."""
    reasons: dict[str, str] = {}
    for kind, section in FOLDER_KINDS.items():
        runs = store.runs(kind=kind, limit=1)
        if not runs:
            continue
        try:
            _read_source(str(stored_folder(runs[0], store.records(run_id=runs[0].run_id))), store, found)
        except UserInputError as error:
            reasons[section] = str(error)
    return reasons
