"""The serving commands' defaults and refusals an expert check found wrong: an MLPerf scenario ran
the generic 2,000 requests instead of its benchmark's samples, and needed --model although its data
names the model; a bare SLO limit (``ttft=300``) was read as seconds where vLLM's ``--goodput``
reads milliseconds; ``--max-rate-at-slo`` was silently dropped beside ``--rate`` (search infer) or
``--arrival-rate`` (simulate)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from expect import one_line_error

ONE_H100 = ["--system", "dgx-h100", "--gpus", "1"]
# llama3_1-8b is MLPerf's benchmark of llama-3.1-8b; it publishes no output lengths (give --osl)
LLAMA3_8B_MLPERF = ["simulate", "--mlperf", "llama3_1-8b", "--osl", "20", *ONE_H100]
SHAPE = ["--isl", "500", "--osl", "100"]
SIMULATE = ["simulate", "--model", "llama-3-8b", *ONE_H100, *SHAPE, "--requests", "50"]
SEARCH = ["search", "infer", "--model", "llama-3-8b", *ONE_H100, *SHAPE]
COMPARE = ["compare", "systems", "--workload", "infer", "--model", "llama-3-8b", "--systems", "dgx-h100"]


def _payload(result: Any) -> dict[str, Any]:
    """The JSON a command printed, which it must have run to print."""
    assert result.code == 0, result.err
    payload: dict[str, Any] = json.loads(result.out)
    return payload


# --- 1. an MLPerf scenario runs its benchmark's samples --------------------------------------------


def test_mlperf_offline_runs_the_benchmarks_samples_unless_requests_is_given(run_cli) -> None:  # type: ignore[no-untyped-def]
    # mlperf.toml (loadgen mlperf.conf, language/llama2-70b/README.md): 24,576 OpenOrca samples
    args = ["simulate", "--mlperf", "llama2-70b", "--scenario", "offline", "--system", "dgx-h100",
            "--precision", "fp8", "--tp", "2", "--json"]  # fmt: skip
    default = run_cli(*args)
    payload = _payload(default)
    assert payload["num_requests"] == payload["workload"]["num_requests"] == 24_576
    assert payload["num_requests_source"] == "mlperf-samples"
    assert "24,576 samples" in payload["num_requests_reason"]
    assert "lightspeed: note: 24,576 requests measured: MLPerf Llama 2 70B" in default.err
    # the default run is the run of --requests 24576 (same seed, same count): the same throughput
    stated = _payload(run_cli(*args, "--requests", "24576"))
    assert stated["requests_per_s"] == payload["requests_per_s"]
    assert stated["num_requests_source"] == "--requests"
    # --requests still sets the count
    assert _payload(run_cli(*args, "--requests", "500"))["num_requests"] == 500


def test_mlperf_server_measures_the_benchmarks_samples_after_its_warm_up(run_cli) -> None:  # type: ignore[no-untyped-def]
    # a Server run at one rate is measured at the steady state (steady_state_workload: a warm-up,
    # then at least the workload's count); that count is now the benchmark's 13,368 samples
    # (mlperf.toml: llama3_1-8b num_samples = 13368), not --requests' default of 2,000
    payload = _payload(run_cli(*LLAMA3_8B_MLPERF, "--scenario", "server", "--arrival-rate", "5", "--json"))
    workload = payload["workload"]
    assert workload["warmup_requests"] > 0
    assert workload["num_requests"] - workload["warmup_requests"] == 13_368
    assert payload["num_requests_source"] == "mlperf-samples"
    warmed = f"after {workload['warmup_requests']:,} that warm the deployment up"
    assert warmed in payload["num_requests_reason"]


# --- 4. --mlperf names its model -----------------------------------------------------------------


def test_mlperf_without_a_model_runs_the_benchmarks_model(run_cli) -> None:  # type: ignore[no-untyped-def]
    # mlperf.toml: [workloads.llama3_1-8b] model = "llama-3.1-8b" (Llama 3 8B's shapes, 128K context)
    payload = _payload(run_cli(*LLAMA3_8B_MLPERF, "--scenario", "offline", "--requests", "50", "--json"))
    assert payload["model"] == "llama-3.1-8b"
    assert payload["config"]["model"] == "llama-3.1-8b"
    # another model is still refused, Llama 3 8B (an 8K context) too
    other = run_cli(*LLAMA3_8B_MLPERF, "--model", "llama-2-70b", "--requests", "50")
    one_line_error(other, "--mlperf llama3_1-8b", "not llama-2-70b", "--model llama-3.1-8b")
    one_line_error(
        run_cli(*LLAMA3_8B_MLPERF, "--model", "llama-3-8b"), "not llama-3-8b", "--model llama-3.1-8b"
    )


# --- 2. an SLO limit carries its unit ------------------------------------------------------------


@pytest.mark.parametrize(
    ("slo", "words"),
    [
        ("ttft=300,tpot=20", ("--slo", "ttft=300: give a unit (300ms or 300s)")),
        ("ttft=2s,tpot=20", ("--slo", "tpot=20: give a unit (20ms or 20s)")),
        ("ttft=0.3s,tpot=2e-2", ("--slo", "tpot=2e-2: give a unit")),
    ],
)
def test_a_bare_slo_limit_is_refused(run_cli, slo: str, words: tuple[str, ...]) -> None:  # type: ignore[no-untyped-def]
    one_line_error(run_cli(*SIMULATE, "--arrival-rate", "2", "--slo", slo), *words)
    one_line_error(run_cli(*SEARCH, "--slo", slo), *words)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        ([*SEARCH, "--max-ttft", "300"], ("--max-ttft", "300: give a unit (300ms or 300s)")),
        ([*SEARCH, "--max-tpot", "0.02"], ("--max-tpot", "0.02: give a unit")),
        ([*COMPARE, "--max-tpot", "50"], ("--max-tpot", "50: give a unit")),
    ],
)
def test_a_bare_latency_bound_is_refused(run_cli, args: list[str], words: tuple[str, ...]) -> None:  # type: ignore[no-untyped-def]
    one_line_error(run_cli(*args), *words)


def test_limits_with_units_and_a_bare_attainment_still_read(run_cli) -> None:  # type: ignore[no-untyped-def]
    # 300ms = 0.3 s, 20ms = 0.02 s; an attainment is a share, 0.95 as it is
    payload = _payload(
        run_cli(*SIMULATE, "--arrival-rate", "2", "--slo", "ttft=300ms,tpot=20ms,attainment=0.95", "--json")
    )
    limits = payload["slo"]["slo"]
    assert (limits["ttft_s"], limits["tpot_s"], limits["attainment"]) == (0.3, 0.02, 0.95)


def test_a_plan_files_seconds_key_takes_a_number_but_slo_text_needs_units(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    head = 'kind = "serving-search"\nmodel = "llama-3-8b"\nsystem = "dgx-h100"\nnum_gpus = 1\n'
    seconds = tmp_path / "seconds.toml"
    seconds.write_text(head + "max_ttft_s = 0.5\n")  # the key names its unit
    assert _payload(run_cli("search", "infer", "--config", str(seconds), "--json"))["best"]["ttft_s"] <= 0.5
    bare = tmp_path / "bare.toml"
    bare.write_text(head + 'slo = "ttft=500,tpot=50ms"\n')
    one_line_error(run_cli("search", "infer", "--config", str(bare)), str(bare), "ttft=500: give a unit")


# --- 3. a rate search beside a rate --------------------------------------------------------------


def test_search_infer_refuses_a_rate_and_the_highest_rate_together(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    args = [*SEARCH, "--slo", "ttft=1s,tpot=40ms", "--rate", "10", "--max-rate-at-slo"]
    one_line_error(run_cli(*args), "give --rate or --max-rate-at-slo, not both", "highest rate")
    plan = tmp_path / "both.toml"
    plan.write_text(
        'kind = "serving-search"\nmodel = "llama-3-8b"\nsystem = "dgx-h100"\nnum_gpus = 1\n'
        'slo = "ttft=1s,tpot=40ms"\nrate_per_s = 10.0\nmax_rate_at_slo = true\n'
    )
    one_line_error(run_cli("search", "infer", "--config", str(plan)), "--rate or --max-rate-at-slo")


@pytest.mark.parametrize(
    "args",
    [["--arrival-rate", "5"], ["--concurrency", "4"], ["--offline"]],
)
def test_simulate_refuses_the_arrivals_a_rate_search_replaces(run_cli, args: list[str]) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(*SIMULATE, "--slo", "ttft=300ms,tpot=20ms", "--max-rate-at-slo", *args)
    one_line_error(result, args[0], "--max-rate-at-slo looks for the highest arrival rate")


def test_an_mlperf_offline_run_refuses_a_rate_search(run_cli) -> None:  # type: ignore[no-untyped-def]
    args = [*LLAMA3_8B_MLPERF, "--scenario", "offline", "--slo", "ttft=2s,tpot=100ms", "--max-rate-at-slo"]
    one_line_error(run_cli(*args), "--max-rate-at-slo", "Offline", "--scenario server")


def test_a_rate_search_keeps_the_burstiness_of_its_arrivals(run_cli) -> None:  # type: ignore[no-untyped-def]
    # --burstiness needed --arrival-rate, which the search then replaced, and the run shown at the
    # rate found was Poisson although the search probed gamma gaps (max_rate_at_slo keeps the CV)
    args = [*SIMULATE, "--slo", "ttft=300ms,tpot=20ms", "--max-rate-at-slo", "--burstiness", "2", "--json"]
    payload = _payload(run_cli(*args))
    arrivals = payload["workload"]["arrivals"]
    assert (arrivals["kind"], arrivals["cv"]) == ("gamma", 2.0)
    assert arrivals["rate_per_s"] == payload["capacity"]["max_rate_per_s"]
