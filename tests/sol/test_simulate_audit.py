"""The serving simulator's audit fixes in the library: Mooncake timestamps, ITL max, settling with
few arrivals and its backlog share, the clipped log-normal's description, trace and length-file
validation, the served rate goodput is a share of."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from lightspeed.catalog import Catalog
from lightspeed.errors import DataFileError
from lightspeed.sol.infer.plan import InferencePlan
from lightspeed.sol.serve.run_metrics import LatencyStats, ServiceLevel, settling
from lightspeed.sol.serve.simulator import simulate
from lightspeed.sol.serve.workload import (
    ArrivalProcess,
    LengthDistribution,
    ServingWorkload,
    load_lengths,
    load_request_trace,
)
from lightspeed.workload import ModelRegistry


def _mooncake(path: Path, count: int, gap_ms: int) -> Path:
    lines = [
        f'{{"timestamp": {index * gap_ms}, "input_length": 500, "output_length": 50, "hash_ids": [1, 2]}}'
        for index in range(count)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_mooncake_trace_has_its_timestamps_in_milliseconds(tmp_path: Path) -> None:
    trace = load_request_trace(_mooncake(tmp_path / "mooncake.jsonl", 3, 200))
    assert trace.arrival_s == pytest.approx((0.0, 0.2, 0.4))  # 200 ms apart
    assert trace.arrival_unit == "ms"
    assert "milliseconds" in trace.describe_arrivals()
    # the same key read beside other token keys keeps the documented seconds
    plain = tmp_path / "seconds.csv"
    plain.write_text("timestamp,prompt_tokens,output_tokens\n0,5,6\n2.5,5,6\n")
    seconds = load_request_trace(plain)
    assert seconds.arrival_s == (0.0, 2.5)
    assert seconds.arrival_unit == "s"
    assert seconds.describe_arrivals() == ""


def test_a_mooncake_trace_runs_at_its_own_rate(
    tmp_path: Path, catalog: Catalog, models: ModelRegistry
) -> None:
    """300 requests 200 ms apart (5 req/s) of 50 output tokens: 5 x 50 = 250 tokens/s while they
    arrive (the run ends a little after the last, so a little below); read as seconds it was 0.25."""
    trace = load_request_trace(_mooncake(tmp_path / "mooncake.jsonl", 300, 200))
    result = simulate(
        model=models.get("llama-3-8b"),
        cluster=catalog.cluster("dgx-h100"),
        plan=InferencePlan(tp=1, precision="fp8"),
        workload=ServingWorkload(arrivals=ArrivalProcess("trace"), trace=trace, num_requests=300),
    )
    assert 240.0 < result.output_tokens_per_s <= 250.0
    assert any("milliseconds" in line for line in result.assumptions)


def test_the_itl_maximum_is_a_gap_that_counts() -> None:
    """A prompt-only step (weight 0: no sequence sees a token gap in it) is no inter-token latency:
    gaps of 4 ms, and a 17 ms prefill step no token waited on, have a maximum of 4 ms."""
    stats = LatencyStats.of(np.array([0.004, 0.004, 0.017]), np.array([3.0, 2.0, 0.0]))
    assert stats.max_s == pytest.approx(0.004)
    assert stats.p99_s == pytest.approx(0.004)


def test_settling_needs_forty_measured_arrivals() -> None:
    """One request more in flight over a half moves the share by 2 / arrivals: below 40 arrivals a
    single request reads as a 5% backlog, so no judgement is made."""
    for count, judged in ((39, False), (40, True)):
        arrivals = np.arange(count, dtype=np.float64)
        finishes = arrivals + 0.5
        found = settling(arrivals, finishes, arrivals)
        assert (found is not None) == judged


def test_the_backlog_share_of_arrivals_is_at_most_all_of_them() -> None:
    """One request at 0 s, 98 just after the middle (0.5001 s) and one at 1 s, none completing: the
    requests in flight grow from 1 over the first half to about 99 over the second, exactly what
    arrived, so the deployment fell behind by 100% of it, not more. The old share (growth over half
    the 100 arrivals, 50) read this as about 196%."""
    arrivals = np.concatenate(([0.0], np.full(98, 0.5001), [1.0]))
    never = np.full(arrivals.shape, np.inf)
    found = settling(arrivals, never, arrivals)
    assert found is not None
    growth = found.second_half_in_flight - found.first_half_in_flight
    assert growth == pytest.approx(1 + 98 * 0.4999 / 0.5 - 1)  # 98 arrived, none completed
    assert growth / (arrivals.size / 2) == pytest.approx(1.96, abs=0.01)  # the old definition
    assert found.backlog_share == pytest.approx(1.0)
    assert found.to_dict()["backlog_share"] <= 1.0


def test_a_clipped_lognormal_says_what_clipping_does() -> None:
    """Mean 1000 and sd 2000 clipped to 1-1500: the description gives the share clipped and the mean
    after, checked against two million draws of the same log-normal (numpy's, not the class's)."""
    spread = LengthDistribution.lognormal(1000.0, 2000.0, 1, 1500)
    sigma2 = math.log1p((2000.0 / 1000.0) ** 2)
    draws = np.random.default_rng(7).lognormal(math.log(1000.0) - sigma2 / 2, math.sqrt(sigma2), 2_000_000)
    clipped = np.clip(draws, 1.0, 1500.0)
    share, mean = float(((draws > 1500.0) | (draws < 1.0)).mean()), float(clipped.mean())
    found_share, found_mean = spread.clipped()
    assert found_share == pytest.approx(share, abs=0.002)
    assert found_mean == pytest.approx(mean, rel=0.005)
    text = spread.describe()
    assert "before clipping to 1-1500" in text
    assert f"{found_share:.1%} clipped" in text
    assert f"mean {found_mean:,.0f} after" in text
    assert LengthDistribution.lognormal(1000.0, 2000.0).describe() == "lognormal mean 1000 (sd 2000)"


@pytest.mark.parametrize(
    ("name", "text", "fragments"),
    [
        (
            "bool.jsonl",
            '{"arrival_s": true, "input_tokens": 5, "output_tokens": 5}\n',
            ("bool.jsonl:1", "true"),
        ),
        ("ragged.csv", "arrival_s,input_tokens,output_tokens\n0,500,50,7\n", ("ragged.csv:2", "4 cells")),
        ("short.csv", "arrival_s,input_tokens,output_tokens\n0,500\n", ("short.csv:2", "2 cells")),
        (
            "empty.csv",
            "arrival_s,input_tokens,output_tokens\n0,500,\n",
            ("empty.csv:2", "empty cell", "output_tokens"),
        ),
        (  # the field as the file names it, not lightspeed's own name for it
            "zero.jsonl",
            '{"timestamp": 0, "input_length": 0, "output_length": 50}\n',
            ("zero.jsonl:1", "field 'input_length'"),
        ),
    ],
)
def test_bad_trace_rows_name_the_file_line_and_column(
    tmp_path: Path, name: str, text: str, fragments: tuple[str, ...]
) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(DataFileError) as error:
        load_request_trace(path)
    for fragment in fragments:
        assert fragment in str(error.value)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize(
    ("name", "text", "column", "fragments"),
    [
        ("frac.csv", "n\n100.7\n", "n", ("frac.csv:2", "whole number", "100.7")),
        ("zero.txt", "100\n0\n300\n", None, ("zero.txt:2", "0")),
        ("none.txt", "# nothing\n", None, ("none.txt", "no lengths")),
        ("zero.csv", "n\n5\n0\n", "n", ("zero.csv:3", "'n'")),
    ],
)
def test_bad_length_files_name_the_line(
    tmp_path: Path, name: str, text: str, column: str | None, fragments: tuple[str, ...]
) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(DataFileError) as error:
        load_lengths(path, column)
    for fragment in fragments:
        assert fragment in str(error.value)


def test_goodput_is_a_share_of_the_rate_the_run_says_it_serves(
    catalog: Catalog, models: ModelRegistry
) -> None:
    result = simulate(
        model=models.get("llama-3-8b"),
        cluster=catalog.cluster("dgx-h100"),
        plan=InferencePlan(tp=1, precision="fp8"),
        workload=ServingWorkload(
            arrivals=ArrivalProcess.poisson(20.0),
            input_lengths=LengthDistribution.fixed(500),
            output_lengths=LengthDistribution.fixed(100),
            num_requests=300,
        ),
        slo=ServiceLevel(ttft_s=10.0, tpot_s=1.0),
    )
    assert result.slo is not None
    assert result.slo.attainment == 1.0
    # 300 requests over the span of their arrivals: (300 - 1) / (last - first)
    assert result.served_requests_per_s == pytest.approx(299 / result.outcome.arrival_s.max())
    assert result.slo.served_requests_per_s == result.served_requests_per_s
    assert result.slo.goodput_requests_per_s == pytest.approx(result.served_requests_per_s)
    assert result.requests_per_s < result.served_requests_per_s  # the drain after the last arrival
