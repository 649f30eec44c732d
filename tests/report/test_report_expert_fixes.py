"""Defects an expert check found in ``lightspeed report``: inputs refused at the edge, fields not
made up, the CLI's notes and wording in the HTML, large inputs kept readable, --prices, --plots."""

from __future__ import annotations

import csv
import html
import io
import json
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from expect import one_line_error
from lightspeed.errors import DataFileError
from lightspeed.goodput import BUCKETS
from lightspeed.report.html import render_html
from lightspeed.report.html_inputs import predicted_step
from lightspeed.report.html_sections import goodput_section, step_section
from lightspeed.report.kernels import FLOP_HEADERS, kernel_section, kernel_sol_figure
from lightspeed.report.plots import close_figure
from lightspeed.report.simulation_section import serving_section
from lightspeed.report.sol import PART_NAMES, step_breakdown_figure
from lightspeed.report.trace import temporal_breakdown_figure
from lightspeed.sol.train.step import BREAKDOWN_PARTS
from lightspeed.tour.render import SAMPLE_NCU_CSV
from lightspeed.trace import kernel_report, parse_gemm_shape, read_ncu

PLAN = {
    "model": "llama-3-70b",
    "system": "8 x dgx-h100 over ib-ndr",
    "num_gpus": 64,
    "step_time_s": 10.0,
    "breakdown_s": {"compute": 6.0, "tp_comm": 3.0, "bubble": 1.0},
    "mfu": 0.5,
    "bound": "compute-bound",
    "fits": True,
}
T0 = 1_700_000_000_000_000.0  # us since the epoch, as Kineto writes


def _text(page: str) -> str:
    """The visible text of a report page (tags dropped, entities decoded)."""
    return html.unescape(re.sub(r"<[^>]+>", " ", page))


def _write_json(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


# -- 1, 4, 7: plan JSON checked at the edge, and only what it holds shown ---------------------


def test_the_report_knows_every_part_the_engine_writes() -> None:
    assert set(PART_NAMES) == set(BREAKDOWN_PARTS)


def test_an_unknown_breakdown_part_is_refused_naming_it_and_the_known_ones(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    plan = _write_json(
        tmp_path / "plan.json", {**PLAN, "breakdown_s": {"compute": 6.0, "tp_comm": 3.0, "offload": 1.0}}
    )
    result = run_cli("report", "--from", str(plan), "-o", str(tmp_path / "r.html"))
    one_line_error(result, "plan.json", "'offload'", "known: compute, recompute")
    assert not (tmp_path / "r.html").exists()


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"breakdown_s": {"compute": -1.0, "tp_comm": 11.0}}, "breakdown_s.compute"),  # negative part
        ({"breakdown_s": {"compute": 6.0, "tp_comm": 17.3}}, "breakdown_s"),  # 23.3 s of parts in a 10 s step
        ({"breakdown_s": {"compute": 6.0, "tp_comm": 3.0}}, "breakdown_s"),  # 9 s: 10% short
        ({"num_gpus": 1e300}, "num_gpus"),
        ({"num_gpus": 2.7}, "num_gpus"),
        ({"num_gpus": 0}, "num_gpus"),
        ({"num_gpus": True}, "num_gpus"),
        ({"mfu": 1.5}, "mfu"),
        ({"fits": "yes"}, "fits"),
        ({"model": 7}, "model"),
    ],
)
def test_impossible_plan_fields_are_refused(change: dict[str, object], field: str) -> None:
    with pytest.raises(DataFileError, match=re.escape(f"field '{field}'")):
        predicted_step({**PLAN, **change}, source="plan.json")


def test_parts_within_the_tolerance_of_the_step_are_accepted() -> None:
    # 6 + 3 + 0.995 = 9.995 s in a 10 s step: 0.05% short, within the stated 0.1%
    step = predicted_step(
        {**PLAN, "breakdown_s": {"compute": 6.0, "tp_comm": 3.0, "bubble": 0.995}}, source="p"
    )
    assert step.num_gpus == 64
    whole = predicted_step({**PLAN, "num_gpus": 64.0}, source="p")  # a whole float is a whole number
    assert whole.num_gpus == 64


def test_fields_missing_from_a_plan_are_not_made_up() -> None:
    step = predicted_step(
        {"step_time_s": 2, "breakdown_s": {"compute": 1.5, "dp_comm": 0.5}}, source="d/mini.json"
    )
    section = step_section([step])
    assert section.paragraphs == ("plan 1 (mini.json): step 2 s",)  # no MFU nan%, no "fits", no "-"
    assert section.charts[0].title == "plan 1 (mini.json)"  # no "(0 GPUs)"
    (table,) = section.tables
    assert [row[2] for row in table.rows] == ["75.0%", "25.0%"]  # 1.5 s and 0.5 s of 2 s


# -- 2: user strings reach matplotlib as plain text ---------------------------------------------


def test_dollar_signs_in_names_are_not_mathtext() -> None:
    step = predicted_step({**PLAN, "model": "m$\\frac{$x", "system": "$x^2$"}, source="p")
    section = step_section([step])  # drawing it raised ParseSyntaxException
    assert section.charts[0].svg.startswith("<svg")
    figure = step_breakdown_figure(step)
    assert figure.axes[0].get_title() == r"m\$\frac{\$x on \$x^2\$: predicted step 10 s"
    close_figure(figure)


# -- 5, 9, 15: the trace section says what 'trace summary' says; distinct ids -------------------


def _kineto(path: Path, *, bad_event: bool = False) -> Path:
    """Three 100-us profiler steps; in each a launch at +1 us and a 40-us kernel at +10 us."""
    events: list[dict[str, Any]] = [
        {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "ts": 0, "args": {}}
    ]
    for step in range(3):
        start = T0 + 100 * step
        events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step}", "pid": 100,
                       "tid": 1, "ts": start, "dur": 100})  # fmt: skip
        events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100, "tid": 1,
                       "ts": start + 1, "dur": 5, "args": {"correlation": step + 1}})  # fmt: skip
        kernel_args = {"device": 0, "stream": 7, "correlation": step + 1}
        events.append({"ph": "X", "cat": "kernel", "name": f"gemm{step}", "pid": 0, "tid": 7,
                       "ts": start + 10, "dur": 40, "args": kernel_args})  # fmt: skip
    if bad_event:
        events.append({"ph": "X", "cat": "kernel", "name": "bad", "pid": 0, "tid": 7, "ts": T0 + 50,
                       "dur": -5, "args": {"device": 0, "stream": 7}})  # fmt: skip
    document = {
        "schemaVersion": 1,
        "distributedInfo": {"rank": 0, "backend": "nccl"},
        "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}],
        "traceEvents": events,
    }
    return _write_json(path, document)


def test_trace_notes_last_step_and_skipped_events_as_trace_summary(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    trace = _kineto(tmp_path / "rank-0.json", bad_event=True)
    out = tmp_path / "r.html"
    result = run_cli("report", "--from", str(trace), "--skip-bad-events", "-o", str(out))
    assert result.code == 0, result.err
    text = _text(out.read_text(encoding="utf-8"))
    assert "last profiler step left out (as HTA); --include-last-step keeps it" in text
    assert "1 impossible event skipped (--skip-bad-events" in text
    # kernels of steps 0 and 1 only: from T0+10 to T0+100+10+40, a 140-us kernel span
    assert re.search(r"\|?\s*0\s+NVIDIA H100 80GB HBM3\s+140 us", text), text[-1500:]

    kept = run_cli("report", "--from", str(trace), "--skip-bad-events", "--include-last-step", "-o", str(out))
    assert kept.code == 0, kept.err
    text = _text(out.read_text(encoding="utf-8"))
    assert "last profiler step left out" not in text
    assert re.search(r"0\s+NVIDIA H100 80GB HBM3\s+240 us", text)  # T0+10 to T0+200+10+40


def test_two_traces_give_distinct_html_ids(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first, second = _kineto(tmp_path / "a" / "rank-0.json"), _kineto(tmp_path / "b" / "rank-0.json")
    out = tmp_path / "r.html"
    result = run_cli("report", "--from", str(first), "--from", str(second), "-o", str(out))
    assert result.code == 0, result.err
    ids = re.findall(r'id="([^"]+)"', out.read_text(encoding="utf-8"))
    assert len(ids) == len(set(ids)), ids
    assert sum(name.startswith("chart-trace-") for name in ids) == 2


def test_many_ranks_get_thinned_tick_labels() -> None:
    ranks = [SimpleNamespace(rank=i, partial=False, compute_pct=20.0, non_compute_pct=30.0, idle_pct=50.0)
             for i in range(256)]  # fmt: skip
    figure = temporal_breakdown_figure(SimpleNamespace(ranks=ranks))  # type: ignore[arg-type]
    labels = [tick.get_text() for tick in figure.axes[0].get_xticklabels()]
    assert labels[:3] == ["0", "10", "20"]
    assert len(labels) == 26  # every 10th of 256: 0 .. 250
    close_figure(figure)


# -- 8, 10, 11: kernels: --device, a capped chart, distinct names --------------------------------


def _ncu_csv(path: Path, names: list[str]) -> Path:
    """The shipped ncu CSV's one kernel, repeated under each of ``names`` (IDs 0, 1, ...)."""
    rows = list(csv.reader(io.StringIO(SAMPLE_NCU_CSV.read_text(encoding="utf-8"))))
    header, body = rows[0], rows[1:]
    name_at = header.index("Kernel Name")
    out = io.StringIO()
    writer = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    writer.writerow(header)
    for index, name in enumerate(names):
        for row in body:
            writer.writerow([str(index), *row[1:name_at], name, *row[name_at + 1 :]])
    path.write_text(out.getvalue(), encoding="utf-8")
    return path


def test_report_takes_device_for_ncu_kernels(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "r.html"
    result = run_cli("report", "--from", str(SAMPLE_NCU_CSV), "--device", "b200", "-o", str(out))
    assert result.code == 0, result.err
    text = _text(out.read_text(encoding="utf-8"))
    assert "profiled by Nsight Compute on b200" in text
    assert "CSV names no device" not in text


def test_kernel_section_shows_flop_per_s_against_the_peak() -> None:
    report = kernel_report(
        read_ncu(SAMPLE_NCU_CSV), gemm_shapes=[parse_gemm_shape("2208x2048x5608")], device="b200"
    )
    section = kernel_section(report)
    assert FLOP_HEADERS in [table.headers for table in section.tables]


def test_hundreds_of_kernels_chart_the_top_ones_and_table_all(tmp_path: Path) -> None:
    report = kernel_report(read_ncu(_ncu_csv(tmp_path / "many.csv", [f"kernel_{i}" for i in range(100)])))
    section = kernel_section(report, max_kernels=30)
    assert len(section.tables[0].rows) == 100
    assert "The chart shows the top 30 of 100 kernels" in " ".join(section.paragraphs)
    figure = kernel_sol_figure(report, max_kernels=30)
    assert len(figure.axes[0].get_yticklabels()) == 30
    close_figure(figure)


def test_kernels_that_differ_in_template_arguments_are_told_apart(tmp_path: Path) -> None:
    names = [
        "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int)",
        "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<c10::Half>>(int)",
    ]
    report = kernel_report(read_ncu(_ncu_csv(tmp_path / "tmpl.csv", names)))
    section = kernel_section(report)
    shown = [row[0] for row in section.tables[0].rows]
    assert shown == ["vectorized_elementwise_kernel #1", "vectorized_elementwise_kernel #2"]
    full = section.tables[-1]
    assert full.headers == ("kernel", "full name")
    assert {row[1] for row in full.rows} == set(names)


def test_the_kernels_table_numbers_alike_names_as_the_report_does(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    names = [
        "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int)",
        "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<c10::Half>>(int)",
    ]
    result = run_cli("kernels", "report", str(_ncu_csv(tmp_path / "tmpl.csv", names)))
    assert result.code == 0, result.err
    assert "vectorized_elementwise_kernel #1" in result.out
    assert "vectorized_elementwise_kernel #2" in result.out
    # each numbered name is followed by the full name it stands for
    assert f"vectorized_elementwise_kernel #2: {names[1]}" in " ".join(result.out.split())


# -- 12, 13: monitor and goodput say what their commands say --------------------------------------


def test_monitor_section_says_why_no_rule_fired(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    run = tmp_path / "mon"
    made = run_cli("monitor", "run", "--backend", "host", "--out", str(run), "--no-save", "--", "true")
    assert made.code == 0, made.err
    out = tmp_path / "r.html"
    result = run_cli("report", "--from", str(run), "-o", str(out))
    assert result.code == 0, result.err
    text = _text(out.read_text(encoding="utf-8"))
    assert "no findings: no rule fired" in text
    assert "the host rules need the tracker's steps" in text
    assert "finding(s)" not in text  # no empty findings table
    assert "mon: findings" not in text


def test_goodput_section_uses_the_cli_labels_and_formats(tmp_path: Path) -> None:
    badput = dict.fromkeys(BUCKETS, 0.0) | {"data_stall": 10.0, "checkpoint_save": 5.0}
    ledger = SimpleNamespace(
        run_id="r1", path="run", partial=False, total_s=100.0, productive_s=85.0, badput_s=badput,
        custom_badput_s={}, goodput_fraction=0.85, ettr=0.017, tokens_per_s=None, efficiency=None,
        sol_tokens_per_s=None, mfu=None, step_mfu=None, hfu=None, notes=(),
        utilization=SimpleNamespace(reason="", peak_flop_per_s=None), steps=SimpleNamespace(count=3),
    )  # fmt: skip
    section = goodput_section([ledger])  # type: ignore[list-item]
    (table,) = section.tables
    assert [row[0] for row in table.rows] == ["productive steps", "data stall", "checkpoint save", "total"]
    assert [row[2] for row in table.rows] == ["85.0%", "10.0%", "5.0%", "100.0%"]
    assert "ETTR 1.7%" in section.paragraphs[0]


# -- 6, 15: --prices, --plots, -o, help and docs ----------------------------------------------------


def test_a_missing_prices_file_is_refused_even_without_a_plan(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    trace = _kineto(tmp_path / "rank-0.json")
    result = run_cli(
        "report",
        "--from",
        str(trace),
        "--prices",
        str(tmp_path / "none.toml"),
        "-o",
        str(tmp_path / "r.html"),
    )
    one_line_error(result, "none.toml")


def test_prices_without_a_plan_say_there_is_nothing_to_price(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    prices = tmp_path / "prices.toml"
    prices.write_text('kind = "prices"\nelectricity_usd_per_kwh = 0.1\n', encoding="utf-8")
    out = tmp_path / "r.html"
    result = run_cli(
        "report", "--from", str(_kineto(tmp_path / "rank-0.json")), "--prices", str(prices), "-o", str(out)
    )
    assert result.code == 0, result.err
    assert "nothing to price" in _text(out.read_text(encoding="utf-8"))


def test_an_output_under_a_file_names_the_file(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    plan = _write_json(tmp_path / "plan.json", PLAN)
    result = run_cli("report", "--from", str(plan), "-o", str(plan / "x.html"))
    one_line_error(result, "plan.json is a file, not a folder")


def test_bad_plots_target_writes_nothing(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    plan = _write_json(tmp_path / "plan.json", PLAN)
    (tmp_path / "afile").write_text("x", encoding="utf-8")
    out = tmp_path / "r.html"
    result = run_cli(
        "report", "--from", str(plan), "-o", str(out), "--plots", str(tmp_path / "afile" / "sub")
    )
    one_line_error(result, "afile")
    assert not out.exists()


def test_help_and_docs_name_every_input_and_option(run_cli) -> None:  # type: ignore[no-untyped-def]
    text = run_cli("report", "--help").out
    for word in (
        "bench",
        "plan train",
        "simulate",
        "--skip-bad-events",
        "--prices",
        "--device",
        "--include-last-step",
    ):
        assert word in text, word
    docs = (Path(__file__).resolve().parents[2] / "docs" / "report.md").read_text(encoding="utf-8")
    for option in ("--skip-bad-events", "--prices", "--device", "--include-last-step"):
        assert docs.count(option) >= 2, option  # the usage line and the option table
    for section in ("kernels", "serving", "monitor", "cost"):
        assert section in docs.lower(), section


# -- 15: serving: the SLO line as the CLI prints it, and the sweep ----------------------------------


def test_serving_section_states_the_slo_and_draws_the_sweep() -> None:
    stats = {"mean_s": 0.05, "p50_s": 0.05, "p90_s": 0.06, "p99_s": 0.07, "max_s": 0.08}
    point = {"rate_per_s": 2.0, "ttft_p50_s": 0.04, "ttft_p99_s": 0.05, "tpot_p50_s": 0.007,
             "tpot_p99_s": 0.008, "e2e_p50_s": 7.5, "output_tokens_per_s": 700.0, "requests_per_s": 2.0,
             "attainment": 1.0, "meets": True, "settled": True}  # fmt: skip
    data = {
        "model": "m", "system": "s", "ttft": stats, "tpot": stats, "itl": stats, "e2e": stats,
        "series": {}, "workload": {}, "output_tokens_per_s": 1000.0, "requests_per_s": 2.0,
        "num_preemptions": 0, "sweep": [point, {**point, "rate_per_s": 4.0, "settled": False}],
        "slo": {"slo": {"ttft_s": 0.08, "tpot_s": 0.014, "attainment": 0.9, "per_limit": False},
                "ttft_attainment": 0.89, "tpot_attainment": 0.6333, "attainment": 0.5867,
                "goodput_requests_per_s": 2.875, "goodput_requests_per_s_per_gpu": 2.875,
                "meets": False, "p99_meets": False},
    }  # fmt: skip
    section = serving_section(data, source="sim.json")
    assert (
        "SLO TTFT <= 80 ms, TPOT <= 14 ms for 90% of requests: missed; 58.7% of requests within both "
        "(TTFT 89.0%, TPOT 63.3%)" in section.paragraphs[1]
    )
    sweep = section.tables[-1]
    assert sweep.headers[0] == "req/s"
    assert [row[0] for row in sweep.rows] == ["2", "4"]
    assert [row[-1] for row in sweep.rows] == ["yes", "no"]
    assert [chart.name for chart in section.charts] == ["sweep-1"]
    page = render_html(title="t", sections=[section])
    assert page.count('id="chart-serving-1-sweep-1"') == 1
