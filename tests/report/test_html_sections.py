"""Report sections from real library records, the inputs readers, and the whole page in Chromium."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from lightspeed.bench import make_result
from lightspeed.errors import DataFileError
from lightspeed.gate import benchmark_records
from lightspeed.goodput import Tracker, build_ledger, read_run
from lightspeed.report.html import write_report
from lightspeed.report.html_inputs import (
    bench_results_from_records,
    gather_inputs,
    predicted_step,
    sol_from_results,
)
from lightspeed.report.html_sections import (
    BenchInputs,
    build_sections,
    goodput_section,
    roofline_section,
    step_section,
)
from lightspeed.store import NewRecord, StoreMissingError, open_store
from lightspeed.tour.render import SAMPLE_NCU_CSV

NCU_CSV = SAMPLE_NCU_CSV  # real ncu output shipped with the tour (superbenchmark, MIT)
PEAK_FLOP_PER_S = 1.0e12
BANDWIDTH_BYTES_PER_S = 50e9


def _bench_results() -> list:  # type: ignore[type-arg]
    gemm = make_result(
        suite="gemm",
        name="square",
        dtype="fp32",
        flop_per_call=2 * 1024**3,
        samples=[4.0e11, 5.0e11, 4.5e11],
        unit="FLOP/s",
        best="median",
        sol=PEAK_FLOP_PER_S,
        sol_note="",
        correct=True,
        details={"m": 1024, "n": 1024, "k": 1024, "label": "square"},
    )
    triad = make_result(
        suite="membw",
        name="stream triad",
        dtype="fp64",
        size_bytes=2**27,
        samples=[20e9, 25e9],
        unit="B/s",
        best="max",
        sol=BANDWIDTH_BYTES_PER_S,
        sol_note="",
        correct=True,
        details={"bytes_moved": 3 * 2**27, "num_elements": 2**24},
    )
    return [gemm, triad]


ESTIMATE = {
    "model": "llama-3-70b",
    "system": "8 x dgx-h100 over ib-ndr",
    "num_gpus": 64,
    "step_time_s": 10.0,
    "breakdown_s": {"compute": 6.0, "tp_comm": 3.0, "bubble": 1.0, "dp_comm": 0.0},
    "mfu": 0.5,
    "bound": "compute-bound",
    "bound_part": "compute",
    "fits": True,
}


def _goodput_dir(path: Path) -> Path:
    """A real tracker run: 50 ms of init, then six 20 ms steps."""
    with Tracker(path, flush_interval_s=0.05) as tracker:
        with tracker.init():
            time.sleep(0.05)
        for _ in range(6):
            with tracker.step(tokens=1000):
                time.sleep(0.02)
    return path


def test_roofline_section_lists_every_point_against_its_sol() -> None:
    results = _bench_results()
    sol = sol_from_results(results, "test-cpu")
    assert sol.flop_per_s == {"fp32": PEAK_FLOP_PER_S}
    assert sol.memory_bandwidth_bytes_per_s == BANDWIDTH_BYTES_PER_S
    section = roofline_section(BenchInputs(results=tuple(results), sol=sol, label="bench"))
    (table,) = section.tables
    assert [row[0] for row in table.rows] == ["square", "stream triad"]
    assert table.rows[0][5] == "45.0%"  # median 4.5e11 of a 1e12 peak
    assert table.rows[1][5] == "50.0%"  # best 25e9 of 50e9
    assert section.charts[0].svg.startswith("<svg")


def test_step_section_shares_add_up() -> None:
    step = predicted_step(ESTIMATE, source="test")
    section = step_section([step])
    (table,) = section.tables
    assert [row[0] for row in table.rows] == ["compute", "TP comm", "pipeline bubble"]  # zero parts omitted
    assert [row[2] for row in table.rows] == ["60.0%", "30.0%", "10.0%"]
    assert "MFU 50.0%" in section.paragraphs[0]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"breakdown_s": {}}, "breakdown_s"),
        ({"step_time_s": "fast"}, "step_time_s"),
        ({"step_time_s": 0}, "step"),
    ],
)
def test_bad_estimates_name_the_field(change: dict[str, object], field: str) -> None:
    with pytest.raises(DataFileError, match=field):
        predicted_step({**ESTIMATE, **change}, source="plan.json")


def test_goodput_section_buckets_sum_to_wall_time(tmp_path: Path) -> None:
    ledger = build_ledger(run=read_run(_goodput_dir(tmp_path / "run")))
    section = goodput_section([ledger])
    (table,) = section.tables
    *buckets, total = table.rows  # the last row is the total, as in 'goodput report'
    assert total[0] == "total"
    assert total[2] == "100.0%"
    shares = [float(row[2].rstrip("%")) for row in buckets]
    assert sum(shares) == pytest.approx(100.0, abs=0.5)
    assert table.rows[0][0] == "productive steps"
    assert 40.0 < shares[0] < 90.0  # 120 ms of steps in ~170 ms of wall time
    assert "init" in [row[0] for row in table.rows]


def test_bench_results_round_trip_through_the_store(store_url: str) -> None:
    results = _bench_results()
    with open_store(store_url) as store:
        run_id = store.add_records(kind="benchmark", records=benchmark_records(results), label="gemm")
        back = bench_results_from_records(store.records(run_id=run_id))
    assert [r.to_dict() for r in back] == [r.to_dict() for r in results]


def test_gather_inputs_from_sources_and_store(tmp_path: Path, store_url: str) -> None:
    """The report reads the same from a SQLite file and from PostgreSQL."""
    store_path = store_url
    with open_store(store_path) as store:
        run_id = store.add_records(
            kind="benchmark", records=benchmark_records(_bench_results()), label="gemm"
        )
        store.add_records(
            kind="prediction",
            records=[NewRecord(name="p", metric="step_time_s", value=10.0, unit="s", payload=ESTIMATE)],
        )
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(ESTIMATE))
    run_dir = _goodput_dir(tmp_path / "run")
    inputs = gather_inputs(sources=[str(plan), str(run_dir), f"run:{run_id}"], store_path=store_path)
    assert inputs.bench is not None
    assert len(inputs.bench.results) == 2
    assert len(inputs.estimates) == 1
    assert len(inputs.ledgers) == 1
    from_store = gather_inputs(store_path=store_path)  # no sources: the newest runs of the store
    assert from_store.bench is not None
    assert from_store.estimates[0].step_time_s == 10.0
    assert from_store.ledgers == ()
    with pytest.raises(DataFileError, match="no such file"):
        gather_inputs(sources=[str(tmp_path / "missing.json")], store_path=store_path)


@pytest.mark.slow
def test_whole_report_renders_in_chromium(tmp_path: Path, chromium_page) -> None:  # type: ignore[no-untyped-def]
    """Every kind of section, each with its chart, in a real browser."""
    from lightspeed.tour.render import SAMPLE_TRACE_DIR

    store_path = tmp_path / "s.sqlite"
    with open_store(store_path) as store:
        for _ in range(2):  # two runs: a history with two points
            store.add_records(kind="benchmark", records=benchmark_records(_bench_results()), label="gemm")
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(ESTIMATE))
    run_dir = _goodput_dir(tmp_path / "run")
    inputs = gather_inputs(
        sources=[str(plan), str(run_dir), str(SAMPLE_TRACE_DIR), str(NCU_CSV), "run:latest"],
        store_path=store_path,
        # beside given inputs, a stored history is drawn only when named
        history_metric=gather_inputs(sources=[], store_path=store_path).history.metric,  # type: ignore[union-attr]
    )
    written = write_report(
        path=tmp_path / "report.html", title="all sections", sections=build_sections(inputs)
    )
    assert all(section.skipped_reason is None for section in written.sections)
    page = chromium_page(written.path)
    assert page.console_errors == []
    # roofline, step breakdown, goodput waterfall, per-rank trace breakdown, kernel SOL bars, history
    assert len(page.images) == 6
    for image in page.images:
        assert image["complete"], image
        assert image["width"] > 200, image
        assert image["shown_width"] > 200, image
    (tmp_path / "screenshot.png").write_bytes(page.screenshot_png)
    assert page.screenshot_png.startswith(b"\x89PNG")
    assert len(page.screenshot_png) > 20_000


def test_traces_as_sources_get_one_section_each(tmp_path: Path) -> None:
    from lightspeed.tour.render import SAMPLE_TRACE_DIR
    from lightspeed.trace import load_trace, summarize

    single = SAMPLE_TRACE_DIR / "sampled_rank-0.json.gz"
    inputs = gather_inputs(sources=[str(SAMPLE_TRACE_DIR), str(single)], store_path=tmp_path / "s.sqlite")
    assert [s.key for s in inputs.trace_sections] == ["trace-1", "trace-2"]
    folder_table = inputs.trace_sections[0].tables[0]
    assert [row[0] for row in folder_table.rows] == ["0", "1"]  # both ranks of the folder
    idle_pct = summarize(load_trace(SAMPLE_TRACE_DIR)).ranks[0].idle_pct
    assert folder_table.rows[0][3] == f"{idle_pct:.2f}%"  # the analysis' number reaches the page
    sections = build_sections(inputs)
    assert [section.key for section in sections] == [
        "roofline",
        "step",
        "goodput",
        "trace-1",
        "trace-2",
        "kernels",
        "history",
    ]
    # given inputs make a report of those inputs: the store's metric history is not drawn unless named
    history = next(section for section in sections if section.key == "history")
    assert history.skipped_reason is not None
    assert "--history" in history.skipped_reason


def test_a_report_of_given_inputs_draws_a_named_history_only(tmp_path: Path) -> None:
    store_path = tmp_path / "s.sqlite"
    with open_store(store_path) as store:
        for _ in range(2):
            store.add_records(kind="benchmark", records=benchmark_records(_bench_results()), label="gemm")
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(ESTIMATE))
    from_store = gather_inputs(sources=[], store_path=store_path)  # no inputs given: the store's report
    assert from_store.history is not None
    given = gather_inputs(sources=[str(plan)], store_path=store_path)
    assert given.history is None
    named = gather_inputs(
        sources=[str(plan)], store_path=store_path, history_metric=from_store.history.metric
    )
    assert named.history is not None
    assert named.history.metric == from_store.history.metric


def test_cpu_only_trace_is_a_clear_error(tmp_path: Path) -> None:
    from lightspeed.errors import TraceError

    trace = tmp_path / "cpu.json"
    trace.write_text(
        json.dumps(
            {
                "schemaVersion": 1,
                "traceEvents": [
                    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 5},
                ],
            }
        )
    )
    with pytest.raises(TraceError, match="no GPU events"):
        gather_inputs(sources=[str(trace)], store_path=tmp_path / "s.sqlite")


def test_malformed_stored_benchmark_is_a_store_error(tmp_path: Path) -> None:
    from lightspeed.errors import StoreError

    payload = {**_bench_results()[0].to_dict(), "size": "huge"}
    with open_store(tmp_path / "s.sqlite") as store:
        run_id = store.add_records(
            kind="benchmark",
            records=[NewRecord(name="gemm", metric="flop_per_s", value=1.0, unit="FLOP/s", payload=payload)],
        )
        with pytest.raises(StoreError, match="malformed payload"):
            bench_results_from_records(store.records(run_id=run_id))


def test_a_named_history_without_a_store_says_the_store_is_missing(tmp_path: Path) -> None:
    # beside given inputs a missing store is fine (no history drawn), but naming a history needs it:
    # the error is the missing store, not "the results store :memory: holds no record of nosuch"
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(ESTIMATE))
    missing = tmp_path / "none.sqlite"
    assert gather_inputs(sources=[str(plan)], store_path=missing).history is None
    with pytest.raises(StoreMissingError, match="does not exist"):
        gather_inputs(sources=[str(plan)], store_path=missing, history_name="nosuch")
    assert not missing.exists()
