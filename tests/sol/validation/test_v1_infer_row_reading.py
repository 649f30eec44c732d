"""A user's inference rows read as they say, or refused naming what is wrong (review 11, V1).

1. A latency percentile written as vLLM's result keys (``p99_ttft_ms``, ``median_ttft_ms``), as
   ``p999``, ``99%ile``, ``(99th)`` or ``99th pct`` was dropped and the mean predicted.
2. ``offline`` in the metric overrode the concurrency the row states (the KV-limit batch, 256,
   was predicted instead of 16 in flight).
3. Two loads in one row (``concurrency 16`` and a metric ``at 64 concurrent``) were resolved
   silently to the first.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lightspeed.catalog import Catalog
from lightspeed.sol import inference_predictor, validate_published
from lightspeed.sol.validation.infer_load import latency_percentile
from lightspeed.sol.validation.infer_rows import InferenceRowSpec, read_inference_row
from lightspeed.sol.validation.published import read_table
from lightspeed.sol.validation.readings import RowError
from lightspeed.sol.validation.validate import ValidationReport
from lightspeed.workload import ModelRegistry

HEADER = "id\tkind\tsource\tmodel\tGPUs\thardware\tprecision\tTP\tseq\tglobal_batch\tmetric\tmeasured"


def _row(row_id: str, metric: str, load: str = "concurrency 16", measured: str = "350") -> str:
    return (
        f"{row_id}\tinfer\tvendor blog vLLM 2024\tLlama 3.1 8B\t1\tH100 SXM\tFP8\t1"
        f"\tISL/OSL 1024/256\t{load}\t{metric}\t{measured}"
    )


def _table(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "rows.tsv"
    path.write_text("\n".join((HEADER, *lines)) + "\n", encoding="utf-8")
    return path


def _validate(path: Path, catalog: Catalog, models: ModelRegistry) -> ValidationReport:
    return validate_published(path=path, catalog=catalog, models=models, infer=inference_predictor())


# The percentile each form names, by its definition: ``pNN`` is the NNth percentile, ``pNNN`` the
# quantile 0.NNN (p999: 0.999, the 99.9th percentile; p9999: 0.9999), ``median`` the 50th.
@pytest.mark.parametrize(
    ("metric", "percentile"),
    [
        ("p99_ttft_ms", 99.0),  # vLLM benchmark_serving's result keys
        ("median_ttft_ms", 50.0),
        ("p99_tpot_ms", 99.0),
        ("p99_e2el_ms", 99.0),
        ("ttft_p99", 99.0),
        ("TTFT p999 ms", 99.9),
        ("TTFT p9999 ms", 99.99),
        ("TTFT 99%ile (ms)", 99.0),
        ("TTFT (99th) ms", 99.0),
        ("TTFT 99th pct (ms)", 99.0),
        ("TTFT P99.9 ms", 99.9),
        ("TTFT p99 ms", 99.0),
    ],
)
def test_every_way_of_writing_a_percentile_is_read(metric: str, percentile: float) -> None:
    assert latency_percentile(metric) == pytest.approx(percentile)


@pytest.mark.parametrize("metric", ["mean_ttft_ms", "TTFT ms", "1st Token Latency (ms)", "TPOT ms"])
def test_a_latency_naming_no_percentile_is_the_mean(metric: str) -> None:
    assert latency_percentile(metric) is None


@pytest.mark.parametrize(
    ("metric", "words"),
    [
        ("TTFT p125 ms", "'p125'"),  # no percentile: refused, never the mean
        ("TTFT percentile (ms)", "'percentile'"),
        ("TTFT p50/p99 ms", "two percentiles"),
        ("std_ttft_ms", "standard deviation"),  # vLLM's spread of TTFTs is no TTFT
    ],
)
def test_a_percentile_that_cannot_be_read_is_refused(metric: str, words: str) -> None:
    with pytest.raises(RowError, match=words):
        latency_percentile(metric)


def test_a_percentile_key_predicts_that_percentile_not_the_mean(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    path = _table(
        tmp_path,
        _row("K", "p99_ttft_ms"),
        _row("W", "TTFT p99 ms"),
        _row("M", "mean_ttft_ms"),
        _row("T", "TTFT 99th pct (ms)"),
        _row("Q", "TTFT p999 ms"),
        _row("R", "TTFT P99.9 ms"),
        _row("X", "TTFT p125 ms"),
    )
    rows = {row.id: row for row in _validate(path, catalog, models).rows}
    # the same run read through a key and through words: the same figure, its 99th percentile
    assert rows["K"].plan is not None
    assert rows["K"].plan["percentile"] == 99.0
    assert rows["K"].predicted == rows["W"].predicted == rows["T"].predicted
    assert rows["M"].plan is not None
    assert "percentile" not in rows["M"].plan
    assert rows["K"].predicted != rows["M"].predicted
    assert rows["Q"].predicted == rows["R"].predicted
    assert rows["Q"].plan is not None
    assert rows["Q"].plan["percentile"] == pytest.approx(99.9)
    assert any("percentile 99 of the simulated" in note for note in rows["K"].assumptions)
    assert rows["X"].predicted is None
    assert "'p125'" in rows["X"].reason


def _read(tmp_path: Path, catalog: Catalog, models: ModelRegistry, line: str) -> InferenceRowSpec:
    (row,) = read_table(_table(tmp_path, line))
    return read_inference_row(row, catalog, models)


def test_a_stated_concurrency_wins_over_offline_in_the_metric(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    metric = "output tokens/s/GPU (offline, out_tps=OSL*BS/latency/TP)"
    spec = _read(tmp_path, catalog, models, _row("B4", metric, measured="500"))
    assert (spec.batching, spec.load.concurrency) == ("continuous", 16)
    assert any("16 in flight ('offline' with a stated concurrency" in note for note in spec.assumptions)
    # offline at a stated batch is that fixed batch
    spec = _read(tmp_path, catalog, models, _row("S", "output tokens/s/GPU (offline)", "batch 64", "500"))
    assert (spec.batching, spec.load.concurrency) == ("static", 64)
    # offline alone is still the server at its most load
    spec = _read(tmp_path, catalog, models, _row("O", "output tokens/s/GPU (offline)", "", "500"))
    assert (spec.batching, spec.load.concurrency) == ("continuous", None)


def test_offline_with_a_concurrency_predicts_as_that_concurrency(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    path = _table(
        tmp_path,
        _row("B4", "output tokens/s/GPU (offline)", measured="500"),
        _row("B8", "output tokens/s/GPU", measured="500"),
    )
    rows = {row.id: row for row in _validate(path, catalog, models).rows}
    assert rows["B4"].predicted is not None
    assert rows["B4"].predicted == rows["B8"].predicted


def test_two_loads_in_one_row_are_refused_naming_both(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    path = _table(
        tmp_path,
        _row("E4", "TTFT p99 ms at 64 concurrent"),
        _row("B2", "TTFT p99 ms at 16 concurrent"),  # the same load twice: read
        _row("E9", "TTFT ms", "batch 8, concurrency 32"),
    )
    rows = {row.id: row for row in _validate(path, catalog, models).rows}
    assert rows["E4"].predicted is None
    assert "'concurrency 16'" in rows["E4"].reason
    assert "'64 concurrent'" in rows["E4"].reason
    assert rows["B2"].predicted is not None, rows["B2"].reason
    assert rows["E9"].predicted is None
    assert "'batch 8'" in rows["E9"].reason
    assert "'concurrency 32'" in rows["E9"].reason


def test_a_batch_range_is_no_batch(tmp_path: Path, catalog: Catalog, models: ModelRegistry) -> None:
    # 'BS 1-256' was read as a static batch of 1
    with pytest.raises(RowError, match="'bs 1-256' is a range"):
        _read(tmp_path, catalog, models, _row("R", "output tokens/s/GPU", "BS 1-256", "500"))
    spec = _read(
        tmp_path, catalog, models, _row("Z", "output tokens/s/GPU", "max throughput (BS 1-256)", "500")
    )
    assert (spec.batching, spec.load.concurrency) == ("continuous", None)
