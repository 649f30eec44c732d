"""Inference rows whose figure depends on load are simulated; MLPerf rows are read."""

from __future__ import annotations

from pathlib import Path

from lightspeed.catalog import Catalog
from lightspeed.sol import inference_predictor, validate_published
from lightspeed.workload import ModelRegistry

DATA = Path(__file__).resolve().parents[1] / "data"


def test_mlperf_rows_are_simulated(catalog: Catalog, models: ModelRegistry) -> None:
    """MLPerf Inference v4.1, 8 x H100, Llama 2 70B (tests/data/validation/mlperf-llm.tsv): the
    Offline row is the simulated throughput with every sample waiting, the Server row the highest
    Poisson rate whose p99 TTFT and TPOT stay under 2 s and 200 ms."""
    report = validate_published(
        path=DATA / "validation" / "mlperf-llm.tsv",
        catalog=catalog,
        models=models,
        infer=inference_predictor(),
    )
    rows = {row.id: row for row in report.rows}
    offline, server = rows["M1"], rows["M2"]
    assert offline.status == "ok"
    assert server.status == "ok"
    assert offline.plan is not None
    assert server.plan is not None
    assert offline.plan["simulated"] == "offline"
    assert server.plan["simulated"] == "capacity"
    assert server.metric == offline.metric == "output_tokens_per_s"
    assert offline.predicted is not None
    assert server.predicted is not None
    assert server.predicted < offline.predicted  # as measured: 21,606 < 24,525 tokens/s
    assert any("MLPerf Llama 2 70B" in line for line in server.assumptions)


def test_concurrency_rows_are_simulated_and_offline_rows_are_not(
    shared: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    report = validate_published(
        path=shared / "validation" / "published-dev-2025.tsv",
        catalog=catalog,
        models=models,
        infer=inference_predictor(),
    )
    rows = {row.id: row for row in report.rows if row.kind == "infer"}
    assert rows["I102"].plan is not None
    assert rows["I102"].plan["simulated"] == "closed"  # concurrency 1024; the row ran 5,120 requests
    assert rows["I102"].plan["num_requests"] == 4 * 1024  # simulated: four rounds of the concurrency at most
    assert rows["I104"].plan is not None
    assert "simulated" not in rows["I104"].plan  # a saturated decode pool: the analytic steady state
