"""Turn other layers' results into store records (one place that knows both shapes)."""

from __future__ import annotations

from collections.abc import Sequence

from lightspeed.bench import BenchResult
from lightspeed.store.records import NewRecord


def benchmark_records(results: Sequence[BenchResult]) -> list[NewRecord]:
    """One record per benchmark result, named by :attr:`BenchResult.key`, with the result as payload.

    The payload keeps every field of the result (stats, samples, details), so the
    regression gate can compare samples (``lower_is_better`` for latencies) and
    calibration can refit from it.
    """
    return [
        NewRecord(
            name=result.key,
            metric=result.metric,
            value=result.value,
            unit=result.unit,
            sol=result.sol,
            payload={**result.to_dict(), "lower_is_better": result.unit == "s"},
        )
        for result in results
    ]
