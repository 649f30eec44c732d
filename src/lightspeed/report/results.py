"""Rendering of the results store: run lists, one run's records, CSV export."""

from __future__ import annotations

import csv
import io
import json
import time
from collections.abc import Collection, Sequence
from typing import Any, Final

from lightspeed.bench import BenchResult
from lightspeed.gate.inputs import bench_result_from_dict, is_bench_result
from lightspeed.records import to_jsonable
from lightspeed.report.bench import format_value, fraction_text, result_notes
from lightspeed.report.console import make_console, plain, render_table
from lightspeed.store import PushResult, RunSummary, StoredRecord
from lightspeed.store.records import StoredJson
from lightspeed.units import format_count, format_percent

CSV_COLUMNS: Final = (
    "record_id",
    "run_id",
    "kind",
    "created_s",
    "name",
    "metric",
    "value",
    "unit",
    "sol",
    "fraction_of_sol",
    "fingerprint_id",
    "payload",
    "run_complete",
)
# Units of numbers without a dimension: '1' (goodput_fraction, ratios of figures), 'ratio' (shares
# from 0 to 1, as monitor runs store them).
DIMENSIONLESS_UNITS: Final = ("1", "ratio", "")
# What a run its writer has not finished is (the header of 'results show').
INCOMPLETE_NOTE: Final = (
    "INCOMPLETE: its writer has not finished this run (it is still being written, or its writer "
    "crashed), so its records may be only a part of it; 'lightspeed compare' refuses it until finished"
)
# A cell starting with one of these is a formula in spreadsheet programs (CSV injection).
_FORMULA_PREFIXES: Final = ("=", "+", "-", "@", "\t", "\r")


def _timestamp(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(seconds))


def render_runs(
    runs: Sequence[RunSummary],
    *,
    store_path: str,
    empty_store: bool = True,
    filters: Sequence[str] = (),
    only_incomplete: bool = False,
    num_matching: int | None = None,
) -> None:
    """The runs table, newest first (times in UTC). Without runs, the caption says whether the
    store is empty (``empty_store``), holds only runs still being written (``only_incomplete``:
    ``--all`` shows them) or the ``filters`` (as typed) excluded its runs. ``num_matching``
    (runs the filters match, when more than shown) makes the caption say ``50 of 240 runs``."""
    rows = [
        [
            plain(run.run_id),
            plain(run.kind),
            plain(run.label),
            _timestamp(run.created_s),
            str(run.num_records),
            plain(run.host_name),
            "complete" if run.complete else "INCOMPLETE",
        ]
        for run in runs
    ]
    headers = ["run", "kind", "label", "created (UTC)", "records", "host", "status"]
    if runs:
        caption = _more_caption(len(runs), num_matching)
    else:
        caption = _empty_caption(empty_store, filters, only_incomplete=only_incomplete)
    render_table(f"results in {plain(store_path)}", headers, rows, right_align_from=4, caption=caption)


def _more_runs_note(num_shown: int, num_matching: int | None) -> str | None:
    """``50 of 240 runs (newest first); --limit 240 shows them all``, or ``None`` when all are shown."""
    if num_matching is None or num_matching <= num_shown:
        return None
    return f"{num_shown} of {num_matching} runs (newest first); --limit {num_matching} shows them all"


def _more_caption(num_shown: int, num_matching: int | None) -> str | None:
    note = _more_runs_note(num_shown, num_matching)
    return None if note is None else plain(note)


def _empty_caption(empty_store: bool, filters: Sequence[str], *, only_incomplete: bool) -> str:
    if empty_store:
        return "no runs yet: 'lightspeed bench membw --quick' stores one"
    listing = "'lightspeed results list --all'" if only_incomplete else "'lightspeed results list'"
    if not filters:
        return f"no complete run yet (a writer still running, or one that died): {listing} shows the others"
    matched = plain(" ".join(filters))
    if only_incomplete:
        return f"no run matches {matched}, and the store holds only incomplete runs: {listing} shows them"
    return (
        f"no run matches {matched}: the filters excluded all of the store's runs "
        f"({listing} without them lists them)"
    )


def render_push(result: PushResult) -> None:
    """One line per kind of outcome: runs copied, already there, still being written."""
    console = make_console()
    console.print(
        f"pushed {len(result.copied)} runs ({result.num_records_copied} records) from {result.source} "
        f"to {result.destination}; {len(result.skipped)} already there"
        + (f"; {len(result.incomplete)} incomplete, left for a later push" if result.incomplete else "")
        + (f"; {len(result.conflicting)} conflicting, not pushed" if result.conflicting else ""),
        highlight=False,
        markup=False,
    )


def render_run(run: RunSummary, records: Sequence[StoredRecord], fingerprint: StoredJson) -> None:
    """One run: its records beside their SOL (the fraction of it reached: ``sol / value`` for a
    time), then the environment it ran in (shown whole when it is not a JSON object).

    Benchmark results are shown as ``lightspeed bench`` showed them: the fraction marked ``*``
    above the SOL, their correctness, and their notes (SOL, above the SOL, a busy machine). A run
    its writer has not finished says so (``INCOMPLETE``) in its header and below its records."""
    console = make_console()
    results = [_bench_result(record) for record in records]
    benchmarks = [result for result in results if result is not None]
    rows = [
        _record_row(record, result, with_correct=bool(benchmarks))
        for record, result in zip(records, results, strict=True)
    ]
    title = plain(
        f"run {run.run_id} ({run.kind}, {run.label or 'no label'}, {_timestamp(run.created_s)} UTC)"
        + ("" if run.complete else ", INCOMPLETE")
    )
    headers = ["name", "metric", "value", "SOL", "of SOL", *(["correct"] if benchmarks else [])]
    notes = result_notes(benchmarks)
    render_table(
        title,
        headers,
        rows,
        right_align_from=2,
        caption="\n".join(plain(note) for note in notes) if notes else None,
        console=console,
    )
    if not run.complete:
        console.print(INCOMPLETE_NOTE, highlight=False, markup=False)
    wrong = [result for result in benchmarks if not result.correct]
    if wrong:
        console.print(f"[bold red]{len(wrong)} result(s) failed their correctness check[/]")
    environment = [[plain(key), plain(_environment_text(value))] for key, value in _fields(fingerprint)]
    render_table(f"environment {plain(run.fingerprint_id)}", ["field", "value"], environment, console=console)


def _bench_result(record: StoredRecord) -> BenchResult | None:
    """The benchmark result a record holds (``None``: another kind, or a payload it cannot be read from)."""
    payload = record.stored_payload
    if record.kind != "benchmark" or not isinstance(payload, dict) or not is_bench_result(payload):
        return None
    try:
        return bench_result_from_dict(payload)
    except (KeyError, TypeError, ValueError):
        return None


def _record_row(record: StoredRecord, result: BenchResult | None, *, with_correct: bool) -> list[str]:
    if result is None:
        fraction = format_percent(record.fraction_of_sol) if record.fraction_of_sol is not None else "-"
    else:
        fraction = fraction_text(result)
    row = [
        plain(record.name),
        plain(record.metric),
        plain(_value_text(record.value, record.unit, record.metric)),
        plain(_value_text(record.sol, record.unit, record.metric)),
        fraction,
    ]
    if with_correct:
        row.append("-" if result is None else "yes" if result.correct else "WRONG")
    return row


def _value_text(value: float | None, unit: str, metric: str) -> str:
    """A stored value for reading: a share (unit ``ratio``, or ``1`` for a ``*_fraction`` metric) as
    a percent, another dimensionless number bare (``0.03077``, not ``0.03077 1``), else in its unit."""
    if value is not None and unit == "GPU-hours":  # 2.503 M GPU-hours, not 2.503e+06
        return f"{format_count(value)} {unit}"
    if value is None or unit not in DIMENSIONLESS_UNITS:
        return format_value(value, unit)
    if unit == "ratio" or metric.endswith("fraction"):
        return format_percent(value, decimals=2)
    return f"{value:.4g}"


def _fields(fingerprint: StoredJson) -> list[tuple[str, Any]]:
    """The environment's fields; one that is not a JSON object (kept whole) as one row."""
    if isinstance(fingerprint, dict):
        return list(fingerprint.items())
    return [("(not a JSON object, as stored)", fingerprint)]


def _environment_text(value: Any) -> str:
    if isinstance(value, list | tuple):
        return " ".join(str(item) for item in value) or "-"
    return "-" if value is None else str(value)


def _safe_cell(value: Any) -> Any:
    if isinstance(value, str) and value.startswith(_FORMULA_PREFIXES):
        return "'" + value
    return value


def records_csv(records: Sequence[StoredRecord], incomplete_run_ids: Collection[str] = ()) -> str:
    """Records as CSV (one row each, payload as a JSON cell; formula-like text cells quoted with ``'``);
    ``run_complete`` is ``false`` for a record of a run in ``incomplete_run_ids`` (its writer has not
    finished it), as the JSON export marks it."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    unfinished = frozenset(incomplete_run_ids)
    for record in records:
        row = [
            record.record_id,
            record.run_id,
            record.kind,
            record.created_s,
            record.name,
            record.metric,
            "" if record.value is None else record.value,
            record.unit,
            "" if record.sol is None else record.sol,
            "" if record.fraction_of_sol is None else record.fraction_of_sol,
            record.fingerprint_id,
            json.dumps(to_jsonable(record.stored_payload), sort_keys=True),
            "false" if record.run_id in unfinished else "true",
        ]
        writer.writerow([_safe_cell(cell) for cell in row])
    return buffer.getvalue()
