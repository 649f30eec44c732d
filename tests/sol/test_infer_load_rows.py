"""Inference rows whose figure depends on load are simulated; MLPerf rows are read."""

from __future__ import annotations

from pathlib import Path

import pytest

from lightspeed.catalog import Catalog
from lightspeed.sol import inference_predictor, validate_published
from lightspeed.sol.infer.plan import InferencePlan
from lightspeed.sol.serve import ArrivalProcess, LengthDistribution, ServingWorkload, simulate
from lightspeed.sol.validation.infer_load import latency_percentile
from lightspeed.sol.validation.predict_runs import validate_builtin
from lightspeed.sol.validation.structured import load_published_runs
from lightspeed.sol.validation.structured_writer import dump_runs
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
    # LoadGen's Server run lasts ten minutes: every probe is measured after a warm-up
    assert server.plan["warmup_requests"] > 0
    assert server.plan["num_requests"] >= 2 * server.plan["warmup_requests"]
    assert any("steady state" in line for line in server.assumptions)


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


def test_a_latency_metric_names_its_statistic() -> None:
    """vLLM's benchmark prints Mean/Median/P99 TTFT, trtllm-bench AVERAGE/P50/P90/P95/P99."""
    assert latency_percentile("median TTFT (ms)") == 50.0
    assert latency_percentile("P99 TPOT (ms)") == 99.0
    assert latency_percentile("p95 ITL") == 95.0
    assert latency_percentile("90th percentile TTFT") == 90.0
    assert latency_percentile("99.9-percentile latency") == 99.9
    assert latency_percentile("mean TTFT (ms)") is None
    assert latency_percentile("Average time-to-first-token [TTFT] (ms)") is None
    assert latency_percentile("first-token latency") is None


def _ttft_rows(path: Path) -> Path:
    """Three rows of one closed loop (8 users, 512/32 tokens, Llama 3 8B on one H100): its
    mean, median and 99th-percentile TTFT."""
    columns = ["id", "kind", "source", "model", "seq", "global_batch", "TP", "GPUs", "hardware"]
    columns += ["precision", "metric", "measured"]
    common = ["vLLM benchmark_serving", "Llama 3 8B", "ISL/OSL 512/32", "concurrency 8", "1", "1"]
    common += ["H100 SXM 80GB (DGX H100)", "FP8"]
    lines = ["\t".join(columns)]
    for row_id, metric in (("L1", "mean TTFT (ms)"), ("L2", "median TTFT (ms)"), ("L3", "P99 TTFT (ms)")):
        lines.append("\t".join([row_id, "infer", *common, metric, "100"]))
    table = path / "ttft.tsv"
    table.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return table


def test_a_percentile_row_is_predicted_at_that_percentile(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    report = validate_published(
        path=_ttft_rows(tmp_path), catalog=catalog, models=models, infer=inference_predictor()
    )
    rows = {row.id: row for row in report.rows}
    assert {row.status for row in rows.values()} == {"ok"}
    # the same closed loop run directly: 8 users, 1,000 requests (the rows' default count), on the
    # server the rows resolve to (vLLM with no year: 2024 for Hopper)
    assert any("serving stack vllm-2024" in line for line in rows["L1"].assumptions)
    result = simulate(
        model=models.get("llama-3-8b"),
        cluster=catalog.cluster("dgx-h100", num_accelerators=1),
        plan=InferencePlan(tp=1, precision="fp8"),
        workload=ServingWorkload(
            ArrivalProcess.closed(8), LengthDistribution.fixed(512), LengthDistribution.fixed(32), 1000
        ),
        serving="vllm-2024",
    )
    assert rows["L1"].predicted == pytest.approx(result.ttft.mean_s, rel=1e-9)
    assert rows["L2"].predicted == pytest.approx(result.ttft.p50_s, rel=1e-9)
    assert rows["L3"].predicted == pytest.approx(result.ttft.p99_s, rel=1e-9)
    assert result.percentile_s("ttft", 100.0) == pytest.approx(result.ttft.max_s)
    assert result.percentile_s("e2e", 50.0) == pytest.approx(result.e2e.p50_s)


def test_a_structured_row_at_an_arrival_rate_is_simulated_in_an_open_loop(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    """The shipped I102 row (DeepSeek-R1 on 8 H200, a closed loop of 1,024 users) rewritten as
    Poisson arrivals at 2 requests/s reads back with the rate and runs as an open loop (far
    below the closed loop's saturation: every request is served as it comes)."""
    runs = load_published_runs(catalog=catalog, models=models)
    i102 = next(run for run in runs if run.id == "I102")
    text = dump_runs([i102])
    assert "concurrency = 1024" in text
    path = tmp_path / "open.toml"
    path.write_text(text.replace("concurrency = 1024", "arrival_rate_per_s = 2.0"), encoding="utf-8")
    report = validate_builtin(catalog=catalog, models=models, path=path)
    (row,) = report.rows
    assert row.status == "ok", row.reason
    assert row.plan is not None
    assert row.plan["simulated"] == "open"
    # Output tokens over first arrival to last completion: 1,000 requests arrive over about
    # 1,000 / 2 = 500 s (a sum of exponentials: +-3%), and the last finishes one request
    # latency (TTFT + 2,047 TPOT, the run's own means) after it arrives.
    ttft_s, tpot_s = float(row.plan["ttft_s"]), float(row.plan["tpot_s"])
    assert row.predicted == pytest.approx(1000 * 2048 / (1000 / 2.0 + ttft_s + 2047 * tpot_s), rel=0.08)
    (again,) = load_published_runs(catalog=catalog, models=models, path=path)
    assert again.inference is not None
    assert again.inference.load.arrival_rate_per_s == 2.0
    assert "arrival_rate_per_s = 2.0" in dump_runs([again])
