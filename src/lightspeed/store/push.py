"""Copy runs from one results store to another (``lightspeed results push --to URL``).

A team's nodes and CI jobs each keep a local SQLite store; pushing copies
their complete runs into a shared one (PostgreSQL, or another file). Runs keep
their ids, times, labels, environments and records; a run already in the
destination is skipped, so pushing again, or from two machines at once, never
makes a duplicate. Each run is copied in one transaction: all its records or
none. Runs still being written (incomplete) are left for a later push.

>>> import tempfile, pathlib
>>> from lightspeed.store import NewRecord, open_store
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> with open_store(folder / "node.sqlite") as node, open_store(folder / "team.sqlite") as team:
...     run_id = node.add_records(kind="benchmark", fingerprint={"host_name": "node-7"}, records=[
...         NewRecord(name="triad", metric="bytes_per_s", value=2e10, unit="B/s")])
...     first = push_runs(source=node, destination=team)
...     again = push_runs(source=node, destination=team)
...     (first.copied == (run_id,), again.skipped == (run_id,), team.run(run_id).host_name)
(True, True, 'node-7')
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from lightspeed.records import Record
from lightspeed.store.database import ResultsStore
from lightspeed.store.records import RunSummary


@dataclass(frozen=True)
class PushResult(Record):
    """What a push did: run ids copied, skipped (already there) and left (incomplete)."""

    source: str
    destination: str
    copied: tuple[str, ...]
    skipped: tuple[str, ...]
    incomplete: tuple[str, ...]
    num_records_copied: int


def _chosen_runs(source: ResultsStore, run_ids: Sequence[str] | None, kind: str | None) -> list[RunSummary]:
    if not run_ids:
        runs = source.runs(kind=kind, include_incomplete=True)
        return sorted(runs, key=lambda run: (run.created_s, run.run_id))  # oldest first
    chosen = [source.run(run_id) for run_id in run_ids]
    return list({run.run_id: run for run in chosen}.values())


def push_runs(
    *,
    source: ResultsStore,
    destination: ResultsStore,
    run_ids: Sequence[str] | None = None,
    kind: str | None = None,
    progress: Callable[[RunSummary, bool], None] | None = None,
) -> PushResult:
    """Copy complete runs of ``source`` (all, or ``run_ids`` / ``kind``) into ``destination``.

    ``run_ids`` may be ids, unique prefixes or ``latest``. ``progress`` is
    called after each run with whether it was copied.
    """
    copied: list[str] = []
    skipped: list[str] = []
    incomplete: list[str] = []
    num_records = 0
    for run in _chosen_runs(source, run_ids, kind):
        if not run.complete:
            incomplete.append(run.run_id)
            continue
        if destination.has_run(run.run_id):
            done = False
        else:
            records = source.records(run_id=run.run_id)
            done = destination.copy_run(
                run=run, fingerprint=source.fingerprint(run.fingerprint_id), records=records
            )
            num_records += len(records) if done else 0
        (copied if done else skipped).append(run.run_id)
        if progress is not None:
            progress(run, done)
    return PushResult(
        source=source.location,
        destination=destination.location,
        copied=tuple(copied),
        skipped=tuple(skipped),
        incomplete=tuple(incomplete),
        num_records_copied=num_records,
    )
