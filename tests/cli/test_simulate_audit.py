"""``lightspeed simulate`` audit fixes from the command line: a saved run re-runs as the same run,
a trace replays whole, one goodput per run, the horizon's counts, one-token outputs, the HTML
capacity block, and ``plan infer``'s throughput against the analytic headline."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from expect import one_line_error

SIMULATE = ["simulate", "--model", "llama-3-8b", "--system", "dgx-h100", "--gpus", "1", "--precision", "fp8"]
# figures that differ between two identical runs (wall time) or name where the count came from
# (--requests the first time, the plan file the second)
_NOT_THE_RUN = {"elapsed_s", "num_requests_source", "num_requests_reason"}


def _json(run_cli: Any, *args: str) -> dict[str, Any]:
    result = run_cli(*args, "--json")
    assert result.code == 0, result.err
    payload: dict[str, Any] = json.loads(result.out)
    return payload


def _same_run(first: dict[str, Any], second: dict[str, Any]) -> None:
    differing = sorted(key for key in first if key not in _NOT_THE_RUN and first[key] != second.get(key))
    assert differing == []  # to the last digit


def test_a_saved_run_reruns_as_the_same_run(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Gamma arrivals, spread prompts, prefix hits, an SLO and a sequence cap: --save-config's file
    and the --json output each re-run as the same run (they were Poisson, fixed, uncached, no SLO)."""
    plan = tmp_path / "p.toml"
    args = [
        *SIMULATE,
        "--osl", "50", "--requests", "200", "--arrival-rate", "5", "--burstiness", "3",
        "--isl-dist", "uniform:100-900", "--osl-dist", "lognormal:20:1-90", "--prefix-hit-rate", "0.3",
        "--slo", "ttft=100ms,tpot=10ms,attainment=85%", "--max-num-seqs", "64",
        "--max-num-batched-tokens", "4096", "--block-size", "32", "--kv-policy", "on-demand",
        "--router", "round-robin", "--prefill-steps", "separate",
    ]  # fmt: skip
    first = _json(run_cli, *args, "--save-config", str(plan))
    text = plan.read_text()
    assert "[simulate]" in text
    assert 'isl_dist = "uniform:100-900"' in text
    assert "burstiness = 3.0" in text
    assert first["config"]["simulate"]["slo"] == "ttft=0.1s,tpot=0.01s,attainment=0.85"
    assert first["workload"]["arrivals"]["kind"] == "gamma"
    from_toml = _json(run_cli, "simulate", "--config", str(plan))
    json_file = tmp_path / "a.json"
    json_file.write_text(json.dumps(first))
    from_json = _json(run_cli, "simulate", "--config", str(json_file))
    _same_run(first, from_toml)
    _same_run(first, from_json)
    assert from_toml["slo"]["slo"]["attainment"] == 0.85
    # the command line still wins over the file
    faster = _json(run_cli, "simulate", "--config", str(plan), "--arrival-rate", "6")
    assert faster["workload"]["arrivals"] == {**first["workload"]["arrivals"], "rate_per_s": 6.0}


def _trace(path: Path, count: int) -> Path:
    rows = "".join(f"{index * 0.05:.2f},200,20\n" for index in range(count))
    path.write_text("arrival_s,input_tokens,output_tokens\n" + rows)
    return path


def test_a_trace_replays_whole_and_reruns_from_its_json(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """2,100 requests (more than the 2,000 --requests defaults to) replay whole; the JSON, given to
    --config, replays the same trace (it ran 2,000 requests offline), named by its path as given."""
    trace = _trace(tmp_path / "trace.csv", 2100)
    first = _json(run_cli, *SIMULATE, "--trace", str(trace))
    assert first["num_requests"] == 2100
    assert first["num_requests_source"] == "trace"
    assert first["config"]["simulate"]["trace"] == str(trace)
    json_file = tmp_path / "t.json"
    json_file.write_text(json.dumps(first))
    again = _json(run_cli, "simulate", "--config", str(json_file))
    _same_run(first, again)


def test_requests_cutting_a_trace_say_so(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    trace = _trace(tmp_path / "trace.csv", 60)
    result = run_cli(*SIMULATE, "--trace", str(trace), "--requests", "50")
    assert result.code == 0, result.err
    assert "the first 50 of the 60 requests" in result.err
    assert "(the first 50 of its 60)" in result.out


def test_a_bad_simulate_table_value_is_one_line(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    plan = tmp_path / "p.toml"
    run = run_cli(*SIMULATE, "--isl", "100", "--osl", "10", "--requests", "5", "--save-config", str(plan))
    assert run.code == 0, run.err
    plan.write_text(plan.read_text().replace('isl_dist = "fixed"', 'isl_dist = "uniform:9-x"'))
    one_line_error(run_cli("simulate", "--config", str(plan)), "p.toml", "simulate.isl_dist", "--isl-dist")
    plan.write_text(plan.read_text().replace('isl_dist = "uniform:9-x"', "isl_dists = 1"))
    one_line_error(run_cli("simulate", "--config", str(plan)), "unknown key 'isl_dists'", "isl_dist")
    plan.write_text(plan.read_text().replace("isl_dists = 1\n", "").replace("offline = false", "offline = 1"))
    one_line_error(run_cli("simulate", "--config", str(plan)), "simulate.offline = 1", "true or false")


def test_plan_infer_says_it_leaves_the_simulate_table_out(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    plan = tmp_path / "p.toml"
    run = run_cli(*SIMULATE, "--isl", "100", "--osl", "10", "--requests", "5", "--save-config", str(plan))
    assert run.code == 0, run.err
    result = run_cli("plan", "infer", "--config", str(plan))
    assert result.code == 0, result.err
    assert "[simulate] table" in result.err
    assert "plan infer leaves them out" in result.err


def test_the_itl_maximum_of_one_user_is_its_decode_step(run_cli) -> None:  # type: ignore[no-untyped-def]
    """One user at a time: every token gap is one decode step of one sequence, so the largest gap is
    the median one (it was the 17 ms prompt step, which no token waits on)."""
    payload = _json(
        run_cli, *SIMULATE, "--isl", "1000", "--osl", "100", "--concurrency", "1", "--requests", "5"
    )
    assert payload["itl"]["max_s"] == pytest.approx(payload["itl"]["p50_s"], rel=1e-6)
    assert payload["itl"]["max_s"] < payload["ttft"]["p50_s"]


def test_one_goodput_per_run(run_cli) -> None:  # type: ignore[no-untyped-def]
    """At 50 req/s with limits every request meets, the goodput is the rate served, which the
    requests/s line shows beside the completions over the run (that count the drain too)."""
    payload = _json(
        run_cli,
        *SIMULATE,
        "--isl",
        "500",
        "--osl",
        "200",
        "--arrival-rate",
        "50",
        "--slo",
        "ttft=10s,tpot=1s",
    )
    assert payload["slo"]["attainment"] == 1.0
    assert payload["goodput_requests_per_s"] == pytest.approx(payload["served_requests_per_s"])
    assert payload["slo"]["served_requests_per_s"] == payload["served_requests_per_s"]
    text = run_cli(
        *SIMULATE, "--isl", "500", "--osl", "200", "--arrival-rate", "50", "--slo", "ttft=10s,tpot=1s"
    ).out
    served = f"{payload['served_requests_per_s']:,.4g}"
    assert f"{served} served while requests arrived" in re.sub(r"\s*│\s*", " ", text)
    assert f"100.0% of the {served} req/s served" in re.sub(r"\s+", " ", text)


def test_the_highest_rate_run_has_the_capacity_goodput_and_the_report_shows_it(  # type: ignore[no-untyped-def]
    run_cli, tmp_path: Path
) -> None:
    payload = _json(
        run_cli, *SIMULATE, "--isl", "500", "--osl", "200", "--slo", "ttft=300ms,tpot=20ms",
        "--max-rate-at-slo", "--requests", "200",
    )  # fmt: skip
    capacity = payload["capacity"]
    assert payload["slo"]["goodput_requests_per_s"] == capacity["goodput_requests_per_s"]
    assert payload["slo"]["served_requests_per_s"] <= payload["slo"]["offered_requests_per_s"]
    assert capacity["offered_requests_per_s"] == payload["slo"]["offered_requests_per_s"]
    source = tmp_path / "cap.json"
    source.write_text(json.dumps(payload))
    page = tmp_path / "report.html"
    result = run_cli("report", "--from", str(source), "-o", str(page))
    assert result.code == 0, result.err
    html = page.read_text()
    assert f"{capacity['max_rate_per_s']:,.4g} req/s" in html
    assert f"limited by {capacity['limited_by']}" in html
    assert f"saturation {capacity['saturation_rate_per_s']:,.4g} req/s" in html
    assert "probes of the highest rate at the SLO" in html
    assert "Workload: " in html
    assert "ISL 500, OSL 200" in html
    assert "not measured (warm-up)" in html
    assert f"{capacity['probes'][0]['rate_per_s']:,.4g}" in html


def test_a_horizon_counts_the_requests_that_arrived(run_cli) -> None:  # type: ignore[no-untyped-def]
    args = [
        *SIMULATE,
        "--isl",
        "500",
        "--osl",
        "200",
        "--requests",
        "200",
        "--arrival-rate",
        "5",
        "--horizon",
        "2s",
    ]
    payload = _json(run_cli, *args)
    arrived, completed = payload["num_arrived"], payload["num_completed"]
    assert arrived < 200
    assert payload["settling"] is None  # a handful of arrivals is no settling judgement
    text = re.sub(r"\s+", " ", run_cli(*args).out)
    assert (
        f"{completed} of {arrived} arrived requests completed; 200 asked, the horizon stopped arrivals"
        in text
    )
    assert "not settled" not in text


def test_one_output_token_has_no_decode_speed(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(*SIMULATE, "--isl", "500", "--osl", "1", "--arrival-rate", "5", "--requests", "100")
    assert result.code == 0, result.err
    text = re.sub(r"\s+", " ", result.out)
    assert "nan" not in text
    assert "n/a (one output token" in text
    assert "median TPOT n/a (one output token)" in text
    assert "median TPOT - to -" not in text


def test_plan_infer_compares_the_throughput_it_serves(run_cli) -> None:  # type: ignore[no-untyped-def]
    """A settled run at 18 req/s serves 18 x 256 = 4,608 output tokens a second, which the analytic
    headline prices at that rate too: 1.00x but for the Poisson draw of its 2,000 arrivals (their
    rate over their span, the served rate, is within 1 / sqrt(2,000) = 2.2% of 18 a time in three).
    The run's own rate also counted the drain after the last arrival: 0.965x, and the note said to
    read the simulation where the deployment serves the whole rate."""
    payload = _json(
        run_cli, "plan", "infer", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--precision", "fp8",
        "--isl", "2048", "--osl", "256", "--arrival-rate", "18",
    )  # fmt: skip
    simulated = payload["simulated"]
    assert simulated["settling"]["settled"]
    assert payload["output_tokens_per_s"] == pytest.approx(18 * 256, rel=1e-6)
    ratio = simulated["against_analytic"]["output_tokens_per_s_over_analytic"]
    assert ratio == pytest.approx(simulated["served_requests_per_s"] / 18, rel=1e-6)
    assert 0.978 < ratio < 1.022
