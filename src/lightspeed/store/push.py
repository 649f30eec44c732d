"""Copy runs from one results store to another (``lightspeed results push --to URL``).

A team's nodes and CI jobs each keep a local SQLite store; pushing copies
their complete runs into a shared one (PostgreSQL, or another file). Runs keep
their ids, times, labels, environments and records; a run already in the
destination with the same content is skipped, so pushing again, or from two
machines at once, never makes a duplicate. A different run under the same id
there (an id collision, or a run changed since it was pushed) is a conflict:
neither is changed, and :attr:`PushResult.conflicting` names it (the CLI
exits 2). Each run is copied in one transaction: all its records or none.
Runs still being written (incomplete) are left for a later push. ``run_ids``
and ``kind`` together push the named runs, each of which must be of that kind.

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

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from lightspeed.records import Record
from lightspeed.store.database import ResultsStore, record_content
from lightspeed.store.records import RunSummary


@dataclass(frozen=True)
class PushResult(Record):
    """What a push did: run ids copied, skipped (already there, the same), left (incomplete) and
    conflicting (a different run under the same id in the destination; neither was changed)."""

    source: str
    destination: str
    copied: tuple[str, ...]
    skipped: tuple[str, ...]
    incomplete: tuple[str, ...]
    num_records_copied: int
    conflicting: tuple[str, ...] = ()


def _content(store: ResultsStore, run: RunSummary) -> tuple[Any, ...]:
    """What two stores must agree on to hold the same run (record ids aside)."""
    records = store.records(run_id=run.run_id, include_incomplete=True)
    return (
        run.kind,
        run.label,
        run.created_s,
        run.completed_s,
        run.fingerprint_id,
        Counter(record_content(record) for record in records),
    )


def _same_run(source: ResultsStore, destination: ResultsStore, run: RunSummary) -> bool:
    there = destination.run(run.run_id)  # an exact id is preferred over a prefix
    return there.run_id == run.run_id and _content(source, run) == _content(destination, there)


def push_runs(
    *,
    source: ResultsStore,
    destination: ResultsStore,
    run_ids: Sequence[str] | None = None,
    kind: str | None = None,
    progress: Callable[[RunSummary, bool], None] | None = None,
) -> PushResult:
    """Copy complete runs of ``source`` (all, or ``run_ids``, of ``kind``) into ``destination``.

    ``run_ids`` may be ids, unique prefixes or ``latest``; with ``kind`` too, each must be of
    that kind. ``progress`` is called after each run with whether it was copied. A run whose
    id the destination holds is compared with it: the same is skipped, a different one is
    listed in ``conflicting`` and left as it is on both sides.
    """
    copied: list[str] = []
    skipped: list[str] = []
    incomplete: list[str] = []
    conflicting: list[str] = []
    num_records = 0
    for run in source.select_runs(run_ids, kind):
        if not run.complete:
            incomplete.append(run.run_id)
            continue
        done = False
        if not destination.has_run(run.run_id):
            records = source.records(run_id=run.run_id)
            done = destination.copy_run(
                run=run, fingerprint=source.fingerprint(run.fingerprint_id), records=records
            )
            num_records += len(records) if done else 0
        if done:
            copied.append(run.run_id)
        elif _same_run(source, destination, run):
            skipped.append(run.run_id)
        else:
            conflicting.append(run.run_id)
        if progress is not None:
            progress(run, done)
    return PushResult(
        source=source.location,
        destination=destination.location,
        copied=tuple(copied),
        skipped=tuple(skipped),
        incomplete=tuple(incomplete),
        num_records_copied=num_records,
        conflicting=tuple(conflicting),
    )
