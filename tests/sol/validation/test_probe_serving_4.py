"""The fourth probe (S01-S15): MLPerf Inference Server-scenario latencies, TTFT and TPOT of eight
published summaries (v4.1 and v5.0; NVIDIA on B200, H100 and H200, AMD on MI300X), added on
5 December to test the simulator's latencies at a submitter's target rate out of sample; on the
conventions of ``test_probe_serving.py``: each row read by hand, no accuracy asserted
(docs/benchmarks.md records it)."""

from __future__ import annotations

import pytest

from lightspeed.catalog import Catalog
from lightspeed.workload import ModelRegistry
from probes import assert_mlperf_read, probe

_rows, _read = probe("probe-serving-4.tsv")

# id -> (catalog system, GPUs, metric key, value in base units), read by hand from each summary:
# '50.00 percentile first token latency (ns)' is the median TTFT, 'Mean Time to Output Token (ns)'
# the mean TPOT, at the summary's target_qps
MLPERF = {
    "S01": ("dgx-b200", 8, "ttft_s", 0.457462192),
    "S02": ("dgx-b200", 8, "tpot_s", 0.150215005),
    "S03": ("dgx-h100", 8, "ttft_s", 0.443159146),
    "S04": ("dgx-h100", 8, "tpot_s", 0.139313889),
    "S05": ("dgx-b200", 8, "ttft_s", 0.210013392),
    "S06": ("dgx-b200", 8, "tpot_s", 0.110007327),
    "S07": ("dgx-b200", 8, "ttft_s", 0.07401935),
    "S08": ("dgx-b200", 8, "tpot_s", 0.036129344),
    "S09": ("dgx-b200", 8, "ttft_s", 1.853367569),
    "S10": ("dgx-b200", 8, "tpot_s", 0.087022478),
    "S11": ("mi300x-platform", 8, "ttft_s", 0.990199455),
    "S12": ("mi300x-platform", 8, "tpot_s", 0.143097185),
    "S13": ("dgx-h200", 8, "ttft_s", 0.180758928),
    "S14": ("dgx-h200", 8, "tpot_s", 0.123263268),
    "S15": ("dgx-h200", 8, "tpot_s", 0.13838873),
}


def test_every_row_is_in_the_table() -> None:
    assert sorted(_rows()) == sorted(MLPERF)


@pytest.mark.parametrize("row_id", sorted(MLPERF))
def test_every_summary_is_read_as_its_server_run(
    catalog: Catalog, models: ModelRegistry, row_id: str
) -> None:
    spec = _read(row_id, catalog, models)
    assert_mlperf_read(spec, *MLPERF[row_id])
    assert spec.simulation is not None
    assert spec.simulation.target_rate_per_s is not None  # latencies at the summary's target_qps


@pytest.mark.parametrize(
    ("row_id", "benchmark", "target"),
    [
        ("S01", "llama2-70b", 364.0),
        ("S07", "llama2-70b", 220.0),
        ("S09", "llama3_1-405b", 1.3),
        ("S11", "llama2-70b", 73.5),
    ],
)
def test_the_benchmark_and_its_target_rate(
    catalog: Catalog, models: ModelRegistry, row_id: str, benchmark: str, target: float
) -> None:
    # 'MLPerf Inference v5.0 llama2-70b-interactive-99' runs the Llama 2 70B workload in the
    # Interactive setting; 'Scenario : Server, target_qps : 1.3' the rate LoadGen issued
    simulation = _read(row_id, catalog, models).simulation
    assert simulation is not None
    assert (simulation.mlperf, simulation.target_rate_per_s) == (benchmark, pytest.approx(target))
