"""``simulate`` refuses the workload options it would ignore: a --trace's own arrivals and lengths,
an MLPerf scenario's own arrivals, a --scenario without --mlperf, a model other than the MLPerf
benchmark's, speculation's knobs without draft tokens, an SLO limit given twice; and it says when
a sustained rate's steady state measures more requests than --requests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from expect import one_line_error

SIMULATE = ["simulate", "--model", "llama-3-8b", "--system", "dgx-h100", "--gpus", "1", "--requests", "10"]
# llama3_1-8b is MLPerf's benchmark of llama-3.1-8b; it publishes no output lengths (give --osl)
MLPERF = [
    *(arg if arg != "llama-3-8b" else "llama-3.1-8b" for arg in SIMULATE),
    "--mlperf",
    "llama3_1-8b",
    "--osl",
    "20",
]


def _trace(folder: Path) -> Path:
    trace = folder / "trace.csv"
    trace.write_text("arrival_s,input_tokens,output_tokens\n0,100,10\n0.5,200,20\n1.0,300,30\n")
    return trace


@pytest.mark.parametrize(
    "args",
    [
        ["--isl", "100"],
        ["--osl", "100"],
        ["--isl-dist", "uniform:10-20"],
        ["--osl-dist", "lognormal:5"],
        ["--arrival-rate", "2"],
        ["--concurrency", "4"],
        ["--offline"],
        ["--burstiness", "2"],  # it used to ask for --arrival-rate, which the trace would ignore
    ],
)
def test_a_trace_refuses_the_arrivals_and_lengths(run_cli, tmp_path: Path, args: list[str]) -> None:  # type: ignore[no-untyped-def]
    one_line_error(run_cli(*SIMULATE, "--trace", str(_trace(tmp_path)), *args), args[0], "--trace")


def test_a_trace_says_its_lengths_and_arrivals_are_its_own(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(*SIMULATE, "--trace", str(_trace(tmp_path)), "--json")
    assert result.code == 0, result.err
    workload = json.loads(result.out)["workload"]
    assert workload["arrivals"]["kind"] == "trace"
    assert workload["input_lengths"]["kind"] == "empirical"  # not 'fixed 1024'
    assert workload["input_lengths"]["values"] == [100, 200, 300]
    assert workload["output_lengths"]["mean_tokens"] == 20.0
    assert workload["num_requests"] == 3


def test_a_plan_files_lengths_give_way_to_a_trace(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    written = run_cli(
        "plan", "infer", "--model", "llama-3-8b", "--system", "dgx-h100", "--gpus", "1", "--json"
    )
    assert written.code == 0, written.err
    plan = tmp_path / "plan.json"
    plan.write_text(written.out)  # holds input_tokens and output_tokens
    result = run_cli("simulate", "--config", str(plan), "--trace", str(_trace(tmp_path)), "--json")
    assert result.code == 0, result.err


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--scenario", "offline"], ("--scenario", "--mlperf")),
        (["--scenario", "server"], ("--scenario", "--mlperf")),
        (["--acceptance", "0.8"], ("--acceptance", "--draft-tokens")),
        (["--expert-imbalance", "2"], ("--expert-imbalance", "dense")),
        (["--slo", "ttft=2s,ttft=3s"], ("--slo", "ttft is given twice")),
        (["--slo", "ttft=2s,tpot=50ms,TPOT=60ms"], ("--slo", "tpot is given twice")),
        (["--slo", "ttft=2s,,tpot=50ms"], ("--slo", "empty item")),
        # a run stopped part-way beside whole runs at other rates (the sweep's points ran whole)
        (["--arrival-rate", "5", "--horizon", "1s", "--sweep"], ("--sweep", "--horizon")),
        (["--slo", "ttft=1s,tpot=50ms", "--max-rate-at-slo", "--horizon", "1s"], ("--horizon", "whole runs")),
    ],
)
def test_simulate_refuses(run_cli, args: list[str], words: tuple[str, ...]) -> None:  # type: ignore[no-untyped-def]
    one_line_error(run_cli(*SIMULATE, *args), *words)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--concurrency", "4"], ("--concurrency", "--scenario sets the arrivals")),
        (["--offline"], ("--offline", "--scenario sets the arrivals")),
        (["--arrival-rate", "2", "--burstiness", "3"], ("--burstiness", "--scenario sets the arrivals")),
        (["--scenario", "offline", "--arrival-rate", "2"], ("--arrival-rate", "Offline")),
    ],
)
def test_an_mlperf_scenario_refuses_other_arrivals(run_cli, args: list[str], words: tuple[str, ...]) -> None:  # type: ignore[no-untyped-def]
    one_line_error(run_cli(*MLPERF, *args), *words)


def test_an_mlperf_workload_is_its_own_models_benchmark(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    other = run_cli(*SIMULATE, "--mlperf", "llama2-70b")
    one_line_error(other, "--mlperf llama2-70b", "llama-2-70b", "not llama-3-8b", "--model llama-2-70b")
    one_line_error(run_cli(*SIMULATE, "--mlperf", "llama2-70b", "--trace", str(_trace(tmp_path))), "--trace")
    # its own model under another of the registry's names runs it, its sample lengths kept
    renamed = [arg if arg != "llama-3.1-8b" else "meta-llama/Llama-3.1-8B" for arg in MLPERF]
    own = run_cli(*renamed, "--scenario", "offline", "--json")
    assert own.code == 0, own.err
    workload = json.loads(own.out)["workload"]
    assert workload["num_requests"] == 10  # --requests honoured in Offline
    assert workload["output_lengths"]["kind"] == "fixed"  # --osl 20
    assert workload["input_lengths"]["kind"] != "fixed"  # the benchmark's, though --osl was given


def test_explicit_requests_raised_by_the_steady_state_are_stated(run_cli) -> None:  # type: ignore[no-untyped-def]
    # long prompts: the deployment holds few requests at once, so the warm-up stays small
    args = [*MLPERF, "--isl", "32000", "--arrival-rate", "1", "--json"]
    result = run_cli(*[arg if arg != "10" else "5" for arg in args])
    assert result.code == 0, result.err
    workload = json.loads(result.out)["workload"]
    measured = workload["num_requests"] - workload["warmup_requests"]
    assert measured > 5
    warmup = workload["warmup_requests"]
    assert f"lightspeed: note: --requests 5: {measured:,} requests measured after {warmup:,}" in result.err
    # with --warmup the run is the one asked for, and nothing is said
    kept = run_cli(*[arg if arg != "10" else "8" for arg in args], "--warmup", "2")
    assert kept.code == 0, kept.err
    assert json.loads(kept.out)["workload"]["num_requests"] == 8
    assert "note" not in kept.err
