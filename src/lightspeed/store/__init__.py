"""The results store: persistence only. Runs and their records in a SQLite file or on PostgreSQL.

Doctest with an isolated ``$LIGHTSPEED_HOME`` (the test session sets one):

>>> from lightspeed.store import NewRecord, open_store
>>> with open_store() as store:  # $LIGHTSPEED_STORE, else $LIGHTSPEED_HOME/results.sqlite
...     run_id = store.add_records(kind="prediction", records=[
...         NewRecord(name="gpt-small step", metric="step_time_s", value=0.42, unit="s")])
...     [record.value for record in store.records(run_id=run_id)]
[0.42]

See ``docs/store.md`` for the table layout, the backends and the guarantees.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lightspeed.lazy import attach

if TYPE_CHECKING:
    from lightspeed.store.backends import MEMORY_STORE, StoreMissingError
    from lightspeed.store.database import (
        SCHEMA_VERSION,
        ResultsStore,
        new_run_id,
        open_store,
    )
    from lightspeed.store.location import StoreLocation, default_store_path, store_location
    from lightspeed.store.push import PushResult, push_runs
    from lightspeed.store.query import Condition, parse_conditions
    from lightspeed.store.records import KNOWN_KINDS, NewRecord, RunSummary, StoredRecord


__all__ = [
    "KNOWN_KINDS",
    "MEMORY_STORE",
    "SCHEMA_VERSION",
    "Condition",
    "NewRecord",
    "PushResult",
    "ResultsStore",
    "RunSummary",
    "StoreLocation",
    "StoreMissingError",
    "StoredRecord",
    "default_store_path",
    "new_run_id",
    "open_store",
    "parse_conditions",
    "push_runs",
    "store_location",
]

if not TYPE_CHECKING:
    __getattr__, __dir__ = attach(__name__, __file__)
