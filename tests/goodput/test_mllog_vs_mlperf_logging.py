"""lightspeed's MLPerf log reader against MLCommons' own parser (``mlperf-logging``, a peer program)
on the real MLPerf Training v4.0 result files: the same events, read into the same figures.

lightspeed keeps its own reader (bounded, typed, one error per bad line: docs/architecture.md,
"Hand-written on purpose"); this test is what keeps the two from drifting apart.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lightspeed.goodput.mllog import read_mllog

mlp_parser = pytest.importorskip("mlperf_logging.compliance_checker.mlp_parser")

RESULTS = sorted(
    (Path(__file__).resolve().parents[1] / "data" / "shared" / "data" / "mlperf").rglob("result_*.txt")
)


def _peer(path: Path) -> list[Any]:
    loglines, errors = mlp_parser.parse_file(str(path), ruleset="4.0.0")
    assert errors == []
    return list(loglines)


def _first(lines: list[Any], key: str) -> Any:
    return next((line for line in lines if line.key == key), None)


@pytest.mark.parametrize("path", RESULTS, ids=lambda p: "/".join(p.parts[-4:-1]))
def test_the_same_times_and_figures_as_mlcommons_parser(path: Path) -> None:
    lines = _peer(path)
    ours = read_mllog(path)
    start_ms = min(line.timestamp for line in lines)
    assert ours.start_epoch_s == pytest.approx(start_ms / 1e3, abs=1e-6)

    def seconds(key: str) -> float | None:
        line = _first(lines, key)
        return None if line is None else (line.timestamp - start_ms) / 1e3

    assert ours.init_start_s == pytest.approx(seconds("init_start"), abs=1e-6)
    assert ours.init_stop_s == pytest.approx(seconds("init_stop"), abs=1e-6)
    assert ours.run_start_s == pytest.approx(seconds("run_start"), abs=1e-6)
    assert ours.run_stop_s == pytest.approx(seconds("run_stop"), abs=1e-6)
    stop = _first(lines, "run_stop")
    assert ours.status == stop.value["metadata"]["status"]
    assert ours.benchmark == _first(lines, "submission_benchmark").value["value"]
    assert ours.global_batch_size == _first(lines, "global_batch_size").value["value"]
    accuracies = [line.value["value"] for line in lines if line.key == "eval_accuracy"]
    assert [evaluation.accuracy for evaluation in ours.evals] == pytest.approx(accuracies)
    # a block ends at each block_stop (one may stop without a block_start: Google's TPU log has 24
    # stops for 23 starts, the first block beginning at run_start)
    stops = [(line.timestamp - start_ms) / 1e3 for line in lines if line.key == "block_stop"]
    assert [block.end_s for block in ours.blocks][: len(stops)] == pytest.approx(stops, abs=1e-6)
