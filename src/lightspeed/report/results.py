"""Rendering of the results store: run lists, one run's records, CSV export."""

from __future__ import annotations

import csv
import io
import json
import time
from collections.abc import Sequence
from typing import Any, Final

from lightspeed.bench import BenchResult
from lightspeed.gate.inputs import bench_result_from_dict, is_bench_result
from lightspeed.records import to_jsonable
from lightspeed.report.bench import format_value, fraction_text, result_notes
from lightspeed.report.console import make_console, plain, render_table
from lightspeed.store import PushResult, RunSummary, StoredRecord
from lightspeed.store.records import StoredJson
from lightspeed.units import format_percent

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
) -> None:
    """The runs table, newest first (times in UTC). Without runs, the caption says whether the
    store is empty (``empty_store``) or the ``filters`` (as typed) matched none of its runs."""
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
    caption = None if runs else _empty_caption(empty_store, filters)
    render_table(f"results in {plain(store_path)}", headers, rows, right_align_from=4, caption=caption)


def _empty_caption(empty_store: bool, filters: Sequence[str]) -> str:
    if empty_store:
        return "no runs yet: 'lightspeed bench membw --quick' stores one"
    matched = " ".join(filters) or "the filter"
    return f"no run matches {matched}; the store holds runs: 'lightspeed results list --all' shows them"


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
    above the SOL, their correctness, and their notes (SOL, above the SOL, a busy machine)."""
    console = make_console()
    results = [_bench_result(record) for record in records]
    benchmarks = [result for result in results if result is not None]
    rows = [
        _record_row(record, result, with_correct=bool(benchmarks))
        for record, result in zip(records, results, strict=True)
    ]
    title = plain(
        f"run {run.run_id} ({run.kind}, {run.label or 'no label'}, {_timestamp(run.created_s)} UTC)"
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
        format_value(record.value, record.unit),
        format_value(record.sol, record.unit),
        fraction,
    ]
    if with_correct:
        row.append("-" if result is None else "yes" if result.correct else "WRONG")
    return row


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


def records_csv(records: Sequence[StoredRecord]) -> str:
    """Records as CSV (one row each, payload as a JSON cell; formula-like text cells quoted with ``'``)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
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
        ]
        writer.writerow([_safe_cell(cell) for cell in row])
    return buffer.getvalue()
