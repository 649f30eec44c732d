"""Serving workloads and simulate's load options (issue 27's expert check): a replayed trace's
workload line shows prefix hits and warm-up, a CSV with Mooncake's columns is refused (its unit is
ambiguous), the offline default is stated in --help and on stderr under an SLO, and bad
--prefix-hit-rate, --isl-dist/--osl-dist and trace --requests get the house one-line treatment."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from expect import one_line_error
from lightspeed.cli._serve_options import resolve_arrivals
from lightspeed.errors import DataFileError, UserInputError
from lightspeed.sol.serve.workload import (
    ArrivalProcess,
    RequestTrace,
    ServingWorkload,
    load_request_trace,
)

SIMULATE = ["simulate", "--model", "llama-3-8b", "--system", "dgx-h100", "--gpus", "1", "--precision", "fp8"]


def _trace_file(path: Path) -> Path:
    """Four short requests at 5, 1, 3 and 3 s (seconds: the column is arrival_s)."""
    path.write_text("arrival_s,isl,osl\n5,100,10\n1,200,10\n3,300,10\n3,300,10\n")
    return path


def _unwrapped(text: str) -> str:
    """``text`` without its white space, as a terminal of any width wraps it."""
    return "".join(text.split())


def _trace(count: int = 4) -> RequestTrace:
    return RequestTrace(
        arrival_s=tuple(float(index) for index in range(count)),
        input_tokens=(100,) * count,
        output_tokens=(10,) * count,
        path="t.csv",
    )


# --- 1: a trace's workload line --------------------------------------------------------------


def test_a_trace_workload_line_shows_prefix_hits_and_warm_up() -> None:
    workload = ServingWorkload(
        arrivals=ArrivalProcess("trace"),
        trace=_trace(),
        num_requests=4,
        prefix_hit_rate=0.5,
        warmup_requests=1,
    )
    # written by hand as the synthetic line writes the same two facts
    assert workload.describe() == (
        "4 requests replayed from t.csv, prefix cache hits 50%, the first 1 not measured (warm-up)"
    )
    cut = ServingWorkload(arrivals=ArrivalProcess("trace"), trace=_trace(), num_requests=2)
    assert cut.describe() == "2 requests replayed from t.csv (the first 2 of its 4)"


def test_simulate_shows_a_trace_runs_prefix_hits_and_warm_up(run_cli: Any, tmp_path: Path) -> None:
    trace = _trace_file(tmp_path / "t2.csv")
    result = run_cli(*SIMULATE, "--trace", str(trace), "--prefix-hit-rate", "0.5", "--warmup", "1")
    assert result.code == 0, result.err
    line = f"workload: 4 requests replayed from {trace}, prefix cache hits 50%, the first 1 not measured"
    assert _unwrapped(line) in _unwrapped(result.out)  # the terminal may wrap it


# --- 2: a CSV with Mooncake's columns ----------------------------------------------------------


def test_a_csv_with_mooncakes_columns_is_refused_not_read_as_milliseconds(tmp_path: Path) -> None:
    table = tmp_path / "mc.csv"
    table.write_text("timestamp,input_length,output_length\n0,1000,100\n10,1000,100\n20,1000,100\n")
    with pytest.raises(DataFileError, match=r"mc\.csv:1: .*Mooncake.*fix: name the column arrival_s"):
        load_request_trace(table)
    # Mooncake's own format, JSONL, keeps its milliseconds: 0, 10, 20 ms are 0, 0.01, 0.02 s
    lines = tmp_path / "mc.jsonl"
    lines.write_text(
        "".join(f'{{"timestamp": {ms}, "input_length": 5, "output_length": 6}}\n' for ms in (0, 10, 20))
    )
    assert load_request_trace(lines).arrival_s == pytest.approx((0.0, 0.01, 0.02))
    # a CSV with the same arrival key beside other token columns is seconds, as documented
    seconds = tmp_path / "s.csv"
    seconds.write_text("timestamp,input_tokens,output_tokens\n0,5,6\n10,5,6\n")
    assert load_request_trace(seconds).arrival_s == (0.0, 10.0)


def test_simulate_refuses_a_mooncake_csv_in_one_line(run_cli: Any, tmp_path: Path) -> None:
    table = tmp_path / "mc.csv"
    table.write_text("timestamp,input_length,output_length\n0,1000,100\n10,1000,100\n")
    one_line_error(run_cli(*SIMULATE, "--trace", str(table)), "mc.csv:1", "Mooncake", "arrival_s", "JSONL")


# --- 3: the offline default ----------------------------------------------------------------------


def test_the_load_options_help_states_the_offline_default(run_cli: Any) -> None:
    result = run_cli("simulate", "--help")
    assert result.code == 0
    wanted = "--offline Every request at time zero (MLPerf Offline); also the default when none of "
    assert _unwrapped(wanted + "--arrival-rate, --concurrency or --trace is given.") in _unwrapped(result.out)


def test_an_slo_judged_offline_default_says_so_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    arrivals = resolve_arrivals(rate_per_s=None, cv=None, offline=False, concurrency=None, slo_judged=True)
    assert arrivals.kind == "offline"
    note = capsys.readouterr().err
    assert note.count("\n") == 1
    assert note.startswith("lightspeed: note: ")
    assert "every request arriving at time zero" in note
    assert "--arrival-rate R" in note
    # --offline asked for it, no SLO judges it, or a load is given: nothing to say
    for given in (
        {"offline": True, "slo_judged": True},
        {"offline": False, "slo_judged": False},
    ):
        resolve_arrivals(rate_per_s=None, cv=None, concurrency=None, **given)
    resolve_arrivals(rate_per_s=2.0, cv=None, offline=False, concurrency=None, slo_judged=True)
    resolve_arrivals(rate_per_s=None, cv=None, offline=False, concurrency=8, slo_judged=True)
    assert capsys.readouterr().err == ""


# --- 4: bad input in the house format -------------------------------------------------------------


def test_a_prefix_hit_rate_of_one_is_refused_once_naming_the_option(run_cli: Any) -> None:
    line = one_line_error(
        run_cli(*SIMULATE, "--requests", "4", "--prefix-hit-rate", "1"), "--prefix-hit-rate", "below 1"
    )
    assert "[0, 1)" not in line
    assert "from 0 to 1" not in line
    # the library's one check: 0.999 is a share cached, 1 (every token, none to sample from) is not
    ServingWorkload(num_requests=1, prefix_hit_rate=0.999)
    with pytest.raises(
        UserInputError, match=r"prefix_hit_rate must be .*>= 0 and < 1 \(got 1.0\): the prefix hit rate"
    ):
        ServingWorkload(num_requests=1, prefix_hit_rate=1.0)


@pytest.mark.parametrize(
    ("flag", "written", "fixed"),
    [
        ("--isl-dist", "uniform:900-100", "--isl-dist uniform:100-900"),
        ("--osl-dist", "uniform:900-100", "--osl-dist uniform:100-900"),
        ("--isl-dist", "lognormal:100:500-100", "--isl-dist lognormal:100.0:100-500"),
    ],
)
def test_length_bounds_written_largest_first_name_the_option(
    run_cli: Any, flag: str, written: str, fixed: str
) -> None:
    one_line_error(
        run_cli(*SIMULATE, "--requests", "4", flag, written),
        f"'{flag}'",
        "minimum",
        "above the maximum",
        fixed,
    )


def test_a_trace_shorter_than_requests_says_it_runs_them_all(run_cli: Any, tmp_path: Path) -> None:
    trace = _trace_file(tmp_path / "t2.csv")
    result = run_cli(*SIMULATE, "--trace", str(trace), "--requests", "10")
    assert result.code == 0, result.err
    assert (
        f"lightspeed: note: the trace {trace} holds 4 requests; --requests 10 runs them all once"
        in result.err
    )
    assert f"workload: 4 requests replayed from {trace};" in result.out
    quiet = run_cli(*SIMULATE, "--trace", str(trace), "--requests", "4")
    assert "holds 4 requests" not in quiet.err
