"""`plan infer` under a load prints the analytic headline and the simulated run of the same load;
where they part, a note says by how much and which to read (an expert found 37 ms beside 133 ms
with no word)."""

from __future__ import annotations

import json
from typing import Any

import pytest

ARGS = ("plan", "infer", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--precision", "fp8",
        "--isl", "2048", "--osl", "256", "--requests", "200")  # fmt: skip


def _json(run_cli: Any, *extra: str) -> dict[str, Any]:
    result = run_cli(*ARGS, *extra, "--json")
    assert result.code == 0, result.err
    return dict(json.loads(result.out))


def test_one_user_at_a_time_is_the_analytic_prediction_and_no_note(run_cli: Any) -> None:
    """One request in flight is the analytic model's own case (same cost model, nothing waits)."""
    payload = _json(run_cli, "--concurrency", "1")
    ratios = payload["simulated"]["against_analytic"]
    assert ratios["ttft_p50_over_analytic"] == pytest.approx(1.0, abs=1e-3)
    assert ratios["output_tokens_per_s_over_analytic"] == pytest.approx(1.0, abs=1e-3)
    assert "note: under this load" not in run_cli(*ARGS, "--concurrency", "1").out


def test_users_that_prefill_together_are_said_to_part_from_the_headline(run_cli: Any) -> None:
    payload = _json(run_cli, "--concurrency", "8")
    simulated_ttft = payload["simulated"]["ttft"]["p50_s"]
    ratio = payload["simulated"]["against_analytic"]["ttft_p50_over_analytic"]
    assert ratio == pytest.approx(simulated_ttft / payload["ttft_s"])
    assert ratio > 1.2  # eight users' 2,048-token prompts share the 8,192-token prefill chunks
    table = run_cli(*ARGS, "--concurrency", "8").out
    assert f"simulated TTFT p50 is {ratio:.2f}x" in " ".join(table.split())


def test_the_headline_shows_the_simulated_ttft_and_its_band(run_cli: Any) -> None:
    """Beside the analytic TTFT the headline names the simulated p50 of the same load, and the
    error bar row gives TTFT's band as it gives TPOT's (the JSON always had it)."""
    payload = _json(run_cli, "--concurrency", "8")
    table = " ".join(run_cli(*ARGS, "--concurrency", "8").out.split())
    p50_ms = payload["simulated"]["ttft"]["p50_s"] * 1e3
    assert f"simulated under this load, below: p50 {p50_ms:.3g} ms" in table
    low_s, high_s = payload["intervals"]["ttft_s"]
    assert low_s < payload["ttft_s"] < high_s
    assert f"TTFT {low_s * 1e3:.3g} ms-{high_s * 1e3:.3g} ms" in table
    assert "of at most" in table
    assert "(the KV cache)" in table
