"""Round 16, helper S: ``lightspeed simulate``'s horizon, caps, plan files, notes and SLO share."""

from __future__ import annotations

from pathlib import Path

import tomllib

from expect import one_line_error

M8 = [
    "simulate",
    *("--model", "llama-3-8b", "--system", "dgx-h100", "--gpus", "1", "--precision", "fp8"),
    *("--isl", "500", "--osl", "200"),
]


def test_a_horizon_before_any_measured_arrival_is_one_error(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(
        *M8,
        *("--arrival-rate", "1", "--horizon", "1ms", "--requests", "50", "--warmup", "10"),
        *("--slo", "ttft=1s,tpot=50ms"),
    )
    one_line_error(result, "ends before any measured request arrives", "raise --horizon", "lower --warmup")


def test_max_num_seqs_beside_a_different_max_batch_is_one_error(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(*M8, "--offline", "--requests", "50", "--max-batch", "16", "--max-num-seqs", "64")
    one_line_error(result, "--max-num-seqs 64 and --max-batch 16", "give one of them")


def test_a_saved_plan_keeps_the_mean_of_lengths_drawn(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """uniform:50-250 draws whole lengths 50 to 250, mean (50 + 250) / 2 = 150: the plan file's
    output_tokens (which plan infer analyses) is that, not --osl's default of 1,024, and its
    comment says so and that plan infer takes the arrivals as Poisson, not burstiness 2."""
    plan = tmp_path / "p.toml"
    result = run_cli(
        *M8[:9],
        *("--isl", "700", "--osl-dist", "uniform:50-250", "--burstiness", "2", "--arrival-rate", "30"),
        *("--requests", "50", "--save-config", str(plan)),
    )
    assert result.code == 0, result.err
    text = plan.read_text()
    data = tomllib.loads(text)
    assert (data["input_tokens"], data["output_tokens"]) == (700, 150)
    assert data["simulate"]["osl_dist"] == "uniform:50-250"
    assert "output_tokens = 150 above is the mean of the lengths drawn here: plan infer" in text
    assert "Poisson" in text
    assert "CV 2" in text
    again = run_cli("simulate", "--config", str(plan), "--requests", "20")
    assert again.code == 0, again.err


def test_no_request_finished_is_not_called_one_output_token(run_cli) -> None:  # type: ignore[no-untyped-def]
    """A 100 ms horizon stops 4 users' 200-token answers long before they finish."""
    result = run_cli(*M8, "--concurrency", "4", "--horizon", "100ms", "--requests", "50")
    assert result.code == 0, result.err
    flat = " ".join(result.out.split())
    assert "no measured request finished within the horizon" in flat
    assert "one output token" not in flat


def test_more_users_than_requests_is_noted(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(*M8, "--concurrency", "500", "--requests", "100")
    assert result.code == 0, result.err
    assert "--concurrency 500 with 100 requests" in result.err
    assert "all 100 are in flight from the start" in result.err


def test_an_slo_met_by_every_request_is_accepted(run_cli) -> None:  # type: ignore[no-untyped-def]
    every = "ttft=1s,tpot=50ms,attainment=100%"
    result = run_cli(*M8, "--arrival-rate", "5", "--requests", "20", "--slo", every)
    assert result.code == 0, result.err
    assert "for 100% of requests" in " ".join(result.out.split())


def test_an_slo_share_past_every_request_speaks_in_percent(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(*M8, "--requests", "20", "--slo", "ttft=1s,tpot=50ms,attainment=150%")
    one_line_error(result, "150% is above the limit of 100%", "at most 100%")
