"""``lightspeed report --from`` a ``plan infer --json`` estimate draws its iteration breakdown,
headline and the run simulated under its load; and ``plan infer`` says why it simulated no run
(a static batch, a decode pool, no load) in a note and in its JSON."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

from expect import one_line_error
from lightspeed.units import format_duration

# The expert check's deployment (llama-3-70b fp8 on one DGX H100 at 32 users), fewer requests
INFER = (
    *("plan", "infer", "--model", "llama-3-70b", "--system", "dgx-h100", "--gpus", "8", "--tp", "8"),
    *("--precision", "fp8", "--isl", "2000", "--osl", "200"),
)
UNDER_LOAD = (*INFER, "--concurrency", "32", "--requests", "200")
STATIC = (
    *("plan", "infer", "--model", "llama-3-8b", "--system", "h100-sxm", "--isl", "2000", "--osl", "256"),
    *("--arrival-rate", "2", "--batching", "static"),
)
# The iteration's parts as the terminal's table names them (report/inference.py PART_NAMES,
# written out here: the page must say what the terminal says)
SHOWN_PARTS = {
    "gemm_compute": "GEMMs (compute-bound)",
    "weight_reads": "weight reads",
    "attention_compute": "attention math",
    "kv_cache": "KV-cache reads/writes",
    "elementwise": "norms/activations",
    "tp_comm": "TP all-reduce",
    "ep_comm": "EP all-to-all",
    "pp_comm": "PP send",
    "attention_dp_pace": "attention-DP slowdown (fitted)",
    "launch": "kernel launch/teardown",
    "host": "host overhead",
    "draft": "draft steps (speculative decoding)",
}
ROW = re.compile(r"<tr>(.*?)</tr>", re.S)
CELL = re.compile(r"<t[dh]>(.*?)</t[dh]>", re.S)


def _section(page: str, key: str) -> str:
    start = page.index(f'<section id="{key}">')
    return page[start : page.index("</section>", start)]


def _rows(section: str) -> dict[str, list[str]]:
    """The first cell of each table row -> the other cells (unescaped)."""
    rows = {}
    for row in ROW.findall(section):
        cells = [html.unescape(cell) for cell in CELL.findall(row)]
        rows[cells[0]] = cells[1:]
    return rows


def _plan_infer_json(run_cli, tmp_path: Path, *args: str) -> tuple[Path, dict]:  # type: ignore[no-untyped-def,type-arg]
    result = run_cli(*args, "--json")
    assert result.code == 0, result.err
    source = tmp_path / "pi.json"
    source.write_text(result.out)
    return source, json.loads(result.out)


def test_report_draws_a_plan_infer_estimate(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    source, estimate = _plan_infer_json(run_cli, tmp_path, *UNDER_LOAD)
    page_path = tmp_path / "r.html"
    result = run_cli("report", "--from", str(source), "-o", str(page_path))
    assert result.code == 0, result.err  # was: "not a training estimate; field 'breakdown_s'"
    page = page_path.read_text()
    rows = _rows(_section(page, "inference-1"))

    # every part that takes time, its time and its share of the iteration, from the JSON's figures
    iteration_s = estimate["iteration_s"]
    parts = {name: value for name, value in estimate["iteration_breakdown_s"].items() if value > 0}
    assert sum(estimate["iteration_breakdown_s"].values()) == pytest.approx(iteration_s, rel=1e-9)
    assert {"gemm_compute", "tp_comm"} <= set(parts)  # TP=8: GEMMs and the TP all-reduce take time
    for name, value in parts.items():
        share = f"{100.0 * value / iteration_s:.1f}%"  # e.g. TP all-reduce 10.7 ms of 22.5 ms: 47.6%
        assert rows[SHOWN_PARTS[name]] == [format_duration(value), share], name
    assert f"iteration: {format_duration(iteration_s)}" in page

    # the headline: TTFT (beside the simulated p50), TPOT, throughput
    simulated = estimate["simulated"]
    assert rows["TTFT"][0].startswith(format_duration(estimate["ttft_s"]) + " (analytic;")
    assert f"p50 {format_duration(simulated['ttft']['p50_s'])}" in rows["TTFT"][0]
    per_user = estimate["output_tokens_per_s_per_user"]
    assert rows["TPOT"] == [
        f"{format_duration(estimate['tpot_s'])} (analytic, {per_user:,.1f} tok/s per user; simulated under "
        f"this load, below: p50 {format_duration(simulated['tpot']['p50_s'])})"
    ]
    assert rows["requests/s"] == [f"{estimate['requests_per_s']:,.3g}"]
    assert rows["batch per replica"][0].startswith("32 in flight of at most")

    # the run simulated under the load: the section of a simulate --json result, with its note
    served = _section(page, "serving-1")
    assert "Simulated serving: llama-3-70b" in served
    latencies = _rows(served)
    assert latencies["TTFT"][1] == format_duration(simulated["ttft"]["p50_s"])
    assert latencies["TPOT"][1] == format_duration(simulated["tpot"]["p50_s"])
    assert "the analytic headline above" in html.unescape(served)


def test_report_draws_the_same_rows_as_the_terminal(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """One output token: no TPOT (null in the JSON), as the table says n/a; no simulated run."""
    args = ("plan", "infer", "--model", "llama-3-8b", "--system", "h100-sxm", "--isl", "2000", "--osl", "1")
    source, estimate = _plan_infer_json(run_cli, tmp_path, *args)
    assert estimate["tpot_s"] is None
    assert estimate["simulated"] is None
    page_path = tmp_path / "r.html"
    assert run_cli("report", "--from", str(source), "-o", str(page_path)).code == 0
    page = page_path.read_text()
    rows = _rows(_section(page, "inference-1"))
    table = run_cli(*args).out
    for name, (time_text, share) in ((k, v) for k, v in rows.items() if k in SHOWN_PARTS.values()):
        assert re.search(rf"{re.escape(name)}\s*│\s*{re.escape(time_text)}\s*│\s*{re.escape(share)}", table)
    assert rows["TPOT"] == ["n/a (1 output token: no time between tokens)"]
    assert 'id="serving-1"' not in page


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"iteration_breakdown_s": {"gemm_compute": -1.0}}, ("cannot be negative", "iteration_breakdown_s")),
        ({"iteration_breakdown_s": {"warp_drive": 0.1}}, ("unknown part of the iteration", "plan infer")),
        ({"iteration_s": 99.0}, ("the parts of the iteration add up to", "iteration_breakdown_s")),
        ({"ttft_s": "fast"}, ("expected a number", "ttft_s")),
        ({"max_batch_limit": "moon"}, ("unknown limit of the batch", "max_batch_limit")),
        ({"simulated": [1, 2]}, ("not a simulated run", "simulated")),
    ],
)
def test_a_bad_plan_infer_file_is_one_line(
    run_cli, tmp_path: Path, change: dict, words: tuple[str, ...]
) -> None:  # type: ignore[no-untyped-def,type-arg]
    source, estimate = _plan_infer_json(run_cli, tmp_path, *INFER)
    source.write_text(json.dumps({**estimate, **change}))
    one_line_error(run_cli("report", "--from", str(source), "-o", str(tmp_path / "r.html")), *words)


def test_other_json_is_one_line_naming_what_the_report_draws(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    source = tmp_path / "other.json"
    source.write_text(json.dumps({"hello": 1}))
    result = run_cli("report", "--from", str(source), "-o", str(tmp_path / "r.html"))
    one_line_error(result, "not a result the report draws", "'plan train', 'plan infer' or 'simulate'")


def test_report_help_names_plan_infer(run_cli) -> None:  # type: ignore[no-untyped-def]
    assert "plan infer --json" in " ".join(run_cli("report", "--help").out.split())


# -- plan infer says why no run was simulated ---------------------------------------------


def test_a_static_batch_under_a_load_says_why_it_is_not_simulated(run_cli) -> None:  # type: ignore[no-untyped-def]
    text = run_cli(*STATIC)
    assert text.code == 0, text.err
    assert "simulated latencies" not in text.out
    note = " ".join(text.err.split())
    assert note.startswith("lightspeed: note: --batching static is predicted analytically only")
    assert "models continuous batching" in note
    payload = json.loads(run_cli(*STATIC, "--json").out)
    assert payload["simulated"] is None
    assert "models continuous batching" in payload["not_simulated"]
    assert payload["not_simulated"] == note.removeprefix("lightspeed: note: ")


def test_a_decode_pool_under_a_load_says_why_it_is_not_simulated(run_cli) -> None:  # type: ignore[no-untyped-def]
    args = [*STATIC[:-1], "decode"]
    result = run_cli(*args, "--json")
    assert result.code == 0, result.err
    payload = json.loads(result.out)
    assert payload["simulated"] is None
    assert payload["not_simulated"].startswith("--batching decode")
    assert "lightspeed: note: --batching decode" in result.err


def test_no_load_says_why_in_json_only(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(*INFER, "--json")
    assert result.code == 0, result.err
    assert result.err == ""  # no load asked for: no note
    payload = json.loads(result.out)
    assert payload["simulated"] is None
    assert payload["not_simulated"].startswith("no load given")


def test_a_simulated_run_has_no_reason(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(*UNDER_LOAD, "--json")
    assert result.code == 0, result.err
    payload = json.loads(result.out)
    assert payload["not_simulated"] is None
    assert payload["simulated"]["num_requests"] == 200
