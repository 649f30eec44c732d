"""Request generators: arrival processes, length distributions, traces and length files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from lightspeed.errors import DataFileError, UserInputError
from lightspeed.sol.serve import (
    ArrivalProcess,
    LengthDistribution,
    ServingWorkload,
    generate_requests,
    load_lengths,
    load_request_trace,
)


def _gaps(arrivals: ArrivalProcess, count: int = 20000) -> np.ndarray:
    requests = generate_requests(ServingWorkload(arrivals=arrivals, num_requests=count), seed=4)
    return np.diff(requests.arrival_s)


def test_poisson_gaps_are_exponential() -> None:
    """Exponential gaps: mean 1 / rate and a coefficient of variation of 1."""
    gaps = _gaps(ArrivalProcess.poisson(8.0))
    assert gaps.mean() == pytest.approx(1 / 8.0, rel=0.03)
    assert gaps.std() / gaps.mean() == pytest.approx(1.0, rel=0.05)


def test_gamma_gaps_keep_the_rate_and_take_the_burstiness() -> None:
    gaps = _gaps(ArrivalProcess.gamma(8.0, 3.0))
    assert gaps.mean() == pytest.approx(1 / 8.0, rel=0.08)
    assert gaps.std() / gaps.mean() == pytest.approx(3.0, rel=0.1)


def test_offline_and_closed_loop_arrivals() -> None:
    offline = generate_requests(ServingWorkload(arrivals=ArrivalProcess.offline(), num_requests=5))
    assert offline.arrival_s.tolist() == [0.0] * 5
    closed = generate_requests(ServingWorkload(arrivals=ArrivalProcess.closed(2), num_requests=5))
    assert closed.concurrency == 2
    assert closed.arrival_s[:2].tolist() == [0.0, 0.0]
    assert np.isnan(closed.arrival_s[2:]).all()


def test_length_distributions() -> None:
    rng = np.random.default_rng(0)
    uniform = LengthDistribution.uniform(100, 200).sample(rng, 20000)
    assert uniform.min() == 100
    assert uniform.max() == 200
    lognormal = LengthDistribution.lognormal(300.0, 150.0).sample(rng, 50000)
    assert lognormal.mean() == pytest.approx(300.0, rel=0.02)
    assert lognormal.std() == pytest.approx(150.0, rel=0.05)
    clipped = LengthDistribution.lognormal(300.0, 150.0, 50, 400).sample(rng, 1000)
    assert clipped.min() >= 50
    assert clipped.max() <= 400
    empirical = LengthDistribution.empirical([7, 9]).sample(rng, 1000)
    assert set(empirical.tolist()) == {7, 9}


def test_prefix_hits_are_a_share_of_each_prompt() -> None:
    requests = generate_requests(
        ServingWorkload(input_lengths=LengthDistribution.fixed(1000), num_requests=3, prefix_hit_rate=0.4)
    )
    assert requests.cached_tokens.tolist() == [400, 400, 400]


def test_trace_replay_from_csv_and_jsonl(tmp_path: Path) -> None:
    csv = tmp_path / "trace.csv"
    csv.write_text("timestamp,prompt_tokens,output_tokens\n12.5,100,20\n10.0,300,40\n")
    trace = load_request_trace(csv)
    assert trace.arrival_s == (0.0, 2.5)  # sorted, from the first arrival
    assert trace.input_tokens == (300, 100)
    assert trace.output_tokens == (40, 20)
    jsonl = tmp_path / "trace.jsonl"
    jsonl.write_text('{"arrival_s": 0, "isl": 5, "osl": 6}\n\n{"arrival_s": 1, "isl": 7, "osl": 8}\n')
    replay = generate_requests(ServingWorkload(trace=load_request_trace(jsonl), num_requests=10))
    assert replay.input_tokens.tolist() == [5, 7]
    assert replay.arrival_s.tolist() == [0.0, 1.0]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("time,isl,osl\n0,abc,3\n", "not a number"),
        ("time,isl,osl\n0,0,3\n", "whole numbers"),
        ("time,osl\n0,3\n", "no input_tokens column"),
        ("time,isl,osl\n-1,2,3\n", ">= 0"),
    ],
)
def test_bad_traces_name_the_line_and_field(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(DataFileError, match=message) as error:
        load_request_trace(path)
    # a missing column is the header's (line 1), a bad value its row's (line 2)
    assert f"bad.csv:{1 if 'column' in message else 2}" in str(error.value)


def test_length_files(tmp_path: Path) -> None:
    plain = tmp_path / "lengths.txt"
    plain.write_text("# output tokens\n10\n20\n1,000\n")
    assert load_lengths(plain).values == (10, 20, 1000)
    table = tmp_path / "lengths.csv"
    table.write_text("input_tokens,x\n5,1\n6,2\n")
    assert load_lengths(table, column="input_tokens").values == (5, 6)
    plain.write_text("ten\n")
    with pytest.raises(DataFileError, match="not a whole number"):
        load_lengths(plain)


def test_bad_workloads_are_refused() -> None:
    with pytest.raises(UserInputError, match="need a rate"):
        ArrivalProcess("poisson")
    with pytest.raises(UserInputError, match="concurrency"):
        ArrivalProcess("closed", concurrency=0)
    with pytest.raises(UserInputError, match="prefix hit rate"):
        ServingWorkload(prefix_hit_rate=1.0)
    with pytest.raises(UserInputError, match="token bounds"):
        LengthDistribution.uniform(10, 5)
