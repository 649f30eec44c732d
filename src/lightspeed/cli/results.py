"""``lightspeed results list|show|export|push``: read the results store, copy runs to a shared one.

Commands that only read a store open it for reading and never create or change it: a
missing store is one line naming it (exit 2). ``push`` creates its destination when
needed and says so on stderr; a run that conflicts with a different one of the same id
there is one line, exit 2, after the others were pushed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Final

import click

from lightspeed.cli._common import json_option, print_json
from lightspeed.cli.options import ROWS
from lightspeed.cli.text_options import OutputPath
from lightspeed.errors import UserInputError
from lightspeed.files import write_output_text
from lightspeed.records import JsonDict, to_jsonable
from lightspeed.report import records_csv, render_push, render_run, render_runs
from lightspeed.store import (
    PushResult,
    ResultsStore,
    RunSummary,
    StoredRecord,
    StoreLocation,
    open_store,
    parse_conditions,
    push_runs,
    store_location,
)


@click.group("results")
def command() -> None:
    """The results store (a file, or PostgreSQL via $LIGHTSPEED_STORE): list, show, export, push."""


WHERE_HELP = (
    "Only runs with a record whose payload, or whose run's environment, holds VALUE at KEY (dots for "
    "nested fields; env.KEY for the environment only; kind/label for the run); repeatable, all must "
    "hold. E.g. --where model=llama-3-8b --where env.host_name=node-7"
)


@command.command("list")
@click.option("--kind", default=None, help="Only runs of this kind (benchmark, prediction, goodput ...).")
@click.option("--where", "where", multiple=True, metavar="KEY=VALUE", help=WHERE_HELP)
@click.option("--limit", default=50, show_default=True, type=ROWS, help="Newest N runs.")
@click.option("--all", "include_incomplete", is_flag=True, help="Also runs whose writer has not finished.")
@json_option
def list_runs(
    kind: str | None, where: tuple[str, ...], limit: int, include_incomplete: bool, as_json: bool
) -> None:
    """List stored runs, newest first.

    Example: lightspeed results list --where model=llama-3-8b --where git_commit=FULL_COMMIT_ID
    """
    conditions = parse_conditions(where)
    with open_store(create=False) as store:
        runs = store.runs(kind=kind, limit=limit, include_incomplete=include_incomplete, where=conditions)
        num_matching = len(runs)
        if len(runs) == limit:  # there may be more: count them (the table and stderr say so)
            num_matching = len(store.runs(kind=kind, include_incomplete=include_incomplete, where=conditions))
        path = store.location
        empty_store = not runs and store.is_empty()
        only_incomplete = not runs and not empty_store and not store.runs(limit=1)
    if as_json:
        print_json(runs)  # a list, as always: how many runs it leaves out goes to stderr
        if num_matching > len(runs):
            click.echo(
                f"lightspeed: note: the newest {len(runs)} of {num_matching} runs; "
                f"--limit {num_matching} lists them all",
                err=True,
            )
        return
    filters = [f"--kind {kind}"] * (kind is not None) + [f"--where {item}" for item in where]
    render_runs(
        runs,
        store_path=path,
        empty_store=empty_store,
        filters=filters,
        only_incomplete=only_incomplete,
        num_matching=num_matching,
    )


@command.command("show")
@click.argument("run_id")
@json_option
def show(run_id: str, as_json: bool) -> None:
    """Show one run's records beside their SOL (RUN_ID, a unique prefix, or 'latest')."""
    with open_store(create=False) as store:
        run = store.run(run_id)
        records = store.records(run_id=run.run_id, include_incomplete=True)
        fingerprint = store.fingerprint(run.fingerprint_id)
    if as_json:
        print_json({"run": run, "records": records})
    else:
        render_run(run, records, fingerprint)


# The most run ids a message lists (an ambiguous prefix, record names).
MAX_LISTED: Final = 5


def _select(
    run_ids: tuple[str, ...], kind: str | None, name: str | None, where: tuple[str, ...]
) -> tuple[list[StoredRecord], list[str]]:
    """The records export writes, and the ids of the runs named that are incomplete (their writer
    has not finished them: the records are those written so far; without RUN_IDs only complete
    runs are exported). A --kind that a run named is not of, or a --name that no record of the
    selection has, is refused (as push refuses them), not exported as an empty list."""
    conditions = parse_conditions(where)
    with open_store(create=False) as store:
        if not run_ids:
            selected = store.records(kind=kind, name=name, where=conditions)
            if name is not None and not selected and not store.records(kind=kind, name=name, limit=1):
                of_kind = f" of kind {kind}" if kind is not None else ""
                raise UserInputError(
                    f"no complete run{of_kind} in {store.location} has a record named {name!r}; "
                    "'lightspeed results show RUN' lists a run's record names"
                )
            return selected, []
        runs = [store.run(run_id) for run_id in run_ids]
        _refuse_other_kind(runs, kind)
        selected = []
        for run in runs:
            selected += store.records(
                run_id=run.run_id, kind=kind, name=name, include_incomplete=True, where=conditions
            )
        if name is not None and not selected:
            _refuse_unknown_name(store, runs, name)
        return selected, [run.run_id for run in runs if not run.complete]


def _refuse_other_kind(runs: list[RunSummary], kind: str | None) -> None:
    other = [run for run in runs if kind is not None and run.kind != kind]
    if other:
        named = ", ".join(f"{run.run_id} ({run.kind})" for run in other)
        raise UserInputError(
            f"--kind {kind} and the runs named disagree: {named} not of kind {kind}; nothing was "
            "exported; fix: drop --kind, or name only runs of that kind"
        )


def _refuse_unknown_name(store: ResultsStore, runs: list[RunSummary], name: str) -> None:
    """Refuse a --name no record of ``runs`` has (one a --where excluded exports as nothing)."""
    names: dict[str, None] = {}
    for run in runs:
        names.update(dict.fromkeys(r.name for r in store.records(run_id=run.run_id, include_incomplete=True)))
    if name in names:
        return
    listed = ", ".join(repr(known) for known in list(names)[:MAX_LISTED])
    more = f" ({len(names)} in all)" if len(names) > MAX_LISTED else ""
    ids = ", ".join(run.run_id for run in runs)
    raise UserInputError(
        f"no record named {name!r} in run {ids}; its names: {listed or 'none'}{more}; nothing was "
        "exported; fix: give one of them (exactly), or drop --name"
    )


@command.command("export")
@click.argument("run_ids", nargs=-1)
@click.option("--kind", default=None, help="Only records of this kind.")
@click.option("--name", default=None, help="Only records with this exact name.")
@click.option(
    "--where",
    "where",
    multiple=True,
    metavar="KEY=VALUE",
    help="Only records whose payload holds VALUE at KEY.",
)
@click.option("--json", "as_json", is_flag=True, help="JSON list of records (the default).")
@click.option("--csv", "as_csv", is_flag=True, help="CSV, one row per record, payload as a JSON cell.")
@click.option(
    "--output",
    type=OutputPath(dir_okay=False, example="results.json", what="records", new_folder_ok=False),
    default=None,
    help="Write to a file, not stdout.",
)
def export(
    run_ids: tuple[str, ...],
    *,
    kind: str | None,
    name: str | None,
    where: tuple[str, ...],
    as_json: bool,
    as_csv: bool,
    output: Path | None,
) -> None:
    """Export records of the given runs (default: every complete run) as JSON or CSV."""
    if as_json and as_csv:
        raise UserInputError("choose one of --json and --csv")
    records, incomplete = _select(run_ids, kind, name, where)
    if as_csv:
        text = records_csv(records, incomplete)
    else:
        text = json.dumps(_exported(records, incomplete), indent=2, allow_nan=False) + "\n"
    _note_incomplete(incomplete, as_csv=as_csv)
    if output is None:
        click.echo(text, nl=False)
        return
    write_output_text(output, text, what="records", example="results.json")
    click.echo(f"wrote {len(records)} records to {output}", err=True)


def _exported(records: list[StoredRecord], incomplete: list[str]) -> list[JsonDict]:
    """The records as JSON, each with ``run_complete``: false for a run its writer has not finished,
    which the regression gate refuses to judge, as it refuses ``run:ID`` of that run."""
    unfinished = set(incomplete)
    return [{**to_jsonable(record), "run_complete": record.run_id not in unfinished} for record in records]


def _note_incomplete(incomplete: list[str], *, as_csv: bool) -> None:
    """Say on stderr that an exported run is not finished: its records may be only a part of it."""
    marked = (
        ", its rows marked run_complete=false"
        if as_csv
        else ", marked \"run_complete\": false, which 'lightspeed compare' refuses"
    )
    for run_id in incomplete:
        click.echo(
            f"lightspeed: note: run {run_id} is incomplete (its writer has not finished it, or crashed): "
            f"the export holds only the records written so far{marked}",
            err=True,
        )


@command.command("push")
@click.argument("run_ids", nargs=-1)
@click.option(
    "--to",
    "destination",
    required=True,
    help="The shared store: postgresql://user@host/db (password via PGPASSWORD or ~/.pgpass) or a file.",
)
@click.option(
    "--from",
    "source",
    default=None,
    help="The store to copy from (default: $LIGHTSPEED_STORE, else $LIGHTSPEED_HOME/results.sqlite).",
)
@click.option("--kind", default=None, help="Only runs of this kind (benchmark, prediction, goodput ...).")
@json_option
def push(
    run_ids: tuple[str, ...], destination: str, source: str | None, kind: str | None, as_json: bool
) -> None:
    """Copy complete runs (default: all; or RUN_IDs) to another store; runs keep their ids.

    Runs already in the destination (the same content) are skipped, so pushing again never
    duplicates; a different run under the same id there is a conflict (exit 2, neither changed).
    With RUN_IDs and --kind, each run named must be of that kind.
    Example: lightspeed results push --to postgresql://ci@perf-db/lightspeed
    """
    target_location = store_location(destination, given_as="--to")  # refused before anything opens
    source_location = store_location(source, given_as="--from")  # an empty --from is not the current folder
    with open_store(source_location, create=False) as origin:
        origin.select_runs(run_ids, kind)  # a bad id or --kind is refused before the destination is made
    if target_location.same_as(source_location):  # also spelled another way: a link, '..', relative
        raise UserInputError(
            f"--to and --from are the same store ({target_location.display}); push to another"
        )
    with open_store(source_location, create=False) as origin, _destination(target_location) as target:
        result = push_runs(source=origin, destination=target, run_ids=run_ids or None, kind=kind)
    if as_json:
        print_json(result)
    else:
        render_push(result)
    _refuse_conflicts(result)


def _refuse_conflicts(result: PushResult) -> None:
    if not result.conflicting:
        return
    shown = ", ".join(result.conflicting[:5]) + (" ..." if len(result.conflicting) > 5 else "")
    raise UserInputError(
        f"{len(result.conflicting)} run(s) not pushed: {result.destination} holds a different run under "
        f"the same id ({shown}); neither was changed; fix: compare them with 'lightspeed results show ID' "
        "on each store (LIGHTSPEED_STORE=...); the source keeps its run, so nothing is lost"
    )


def _destination(location: StoreLocation) -> ResultsStore:
    """The store pushed to: opened for writing, created (and said so on stderr) when it does not
    exist yet."""
    store = open_store(location, create=True)
    if store.created:
        click.echo(f"created the results store {store.location}", err=True)
    return store
