"""The results store: benchmark, prediction and goodput records in one SQLite file.

>>> from lightspeed.store import NewRecord, open_store
>>> with open_store() as store:  # $LIGHTSPEED_HOME/results.sqlite
...     run_id = store.add_records(kind="prediction", records=[
...         NewRecord(name="gpt-small step", metric="step_time_s", value=0.42, unit="s")])
...     [record.value for record in store.records(run_id=run_id)]
[0.42]

See ``docs/store.md`` for the table layout and the guarantees.
"""

from lightspeed.store.convert import benchmark_payloads, benchmark_records, calibration_inputs
from lightspeed.store.database import (
    SCHEMA_VERSION,
    ResultsStore,
    default_store_path,
    new_run_id,
    open_store,
)
from lightspeed.store.records import KNOWN_KINDS, NewRecord, RunSummary, StoredRecord
from lightspeed.store.regression import (
    GateResult,
    MetricComparison,
    MetricSamples,
    compare_runs,
    compare_samples,
)
from lightspeed.store.regression_inputs import (
    HistoryPoint,
    MetricHistory,
    load_metric_samples,
    metric_history,
    read_sample_file,
    samples_from_records,
)

__all__ = [
    "KNOWN_KINDS",
    "SCHEMA_VERSION",
    "GateResult",
    "HistoryPoint",
    "MetricComparison",
    "MetricHistory",
    "MetricSamples",
    "NewRecord",
    "ResultsStore",
    "RunSummary",
    "StoredRecord",
    "benchmark_payloads",
    "benchmark_records",
    "calibration_inputs",
    "compare_runs",
    "compare_samples",
    "default_store_path",
    "load_metric_samples",
    "metric_history",
    "new_run_id",
    "open_store",
    "read_sample_file",
    "samples_from_records",
]
