"""search infer --slo says each finalist's warm-up and measured requests and the simulate command
that repeats the best one's run; --rate without --slo is refused before any work."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

SEARCH = (
    "search",
    "infer",
    "--model",
    "llama-3-8b",
    "--system",
    "dgx-h100",
    "--gpus",
    "2",
    "--precision",
    "fp8",
    "--isl",
    "500",
    "--osl",
    "100",
)


def test_the_simulate_command_repeats_the_best_finalists_run(run_cli: Any) -> None:
    """The search's figures at --rate (measured after an automatic warm-up) and those of the
    command it prints (the same plan, rate, requests, warm-up, seed and SLO) are the same run."""
    searched = run_cli(
        *SEARCH,
        "--slo",
        "ttft=300ms,tpot=15ms",
        "--rate",
        "30",
        "--requests",
        "200",
        "--finalists",
        "2",
        "--json",
    )
    assert searched.code == 0, searched.err
    goodput = json.loads(searched.out)["goodput"]
    best = goodput["ranking"][0]
    assert best["warmup_requests"] > 0
    # as many measured as warmed up, at least --requests (steady_state_workload)
    assert best["measured_requests"] == max(200, best["warmup_requests"])
    words = shlex.split(goodput["simulate_command"])
    assert words[:2] == ["lightspeed", "simulate"]
    assert words[words.index("--warmup") + 1] == str(best["warmup_requests"])
    simulated = run_cli(*words[1:], "--json")
    assert simulated.code == 0, simulated.err
    payload = json.loads(simulated.out)
    assert payload["slo"]["attainment"] == best["attainment"]
    assert payload["ttft"]["p99_s"] == best["ttft_p99_s"]
    assert payload["tpot"]["p99_s"] == best["tpot_p99_s"]


def test_the_table_shows_each_finalists_requests(run_cli: Any) -> None:
    result = run_cli(
        *SEARCH, "--slo", "ttft=300ms,tpot=15ms", "--rate", "30", "--requests", "200", "--finalists", "1"
    )
    assert result.code == 0, result.err
    assert "warm-up" in result.out
    command = result.out.split("lightspeed simulate ")[-1]
    words = shlex.split(command)
    warmup = int(words[words.index("--warmup") + 1])
    requests = int(words[words.index("--requests") + 1])
    assert f"{warmup:,} + {requests - warmup:,}" in result.out
    assert "--model llama-3-8b" in command


def test_a_rate_without_an_slo_is_refused_before_the_plot_is_written(run_cli: Any, tmp_path: Path) -> None:
    plot = tmp_path / "pareto.png"
    result = run_cli(*SEARCH, "--rate", "5", "--plot", str(plot))
    assert result.code == 2
    assert "give --slo too" in result.err
    assert not plot.exists()
