"""Rendering of trace results: the summary JSON contract, the chart, and escaped names."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from lightspeed.report import (
    render_trace_kernels,
    render_trace_summary,
    save_temporal_breakdown,
    trace_section,
    trace_summary_json,
)
from lightspeed.trace import load_trace, summarize, top_kernels

CONTRACT = {
    "rank",
    "idle_pct",
    "compute_pct",
    "non_compute_pct",
    "idle_us",
    "compute_us",
    "non_compute_us",
    "comm_comp_overlap_pct",
}


def _console() -> Console:
    return Console(file=io.StringIO(), width=200, color_system=None)


def test_summary_json_has_the_contract_keys_per_rank(real_trace: Any) -> None:
    summary = summarize(load_trace(real_trace("trace_filter")))
    payload = trace_summary_json(summary)
    assert [row["rank"] for row in payload] == [0, 1]
    for row, rank in zip(payload, summary.ranks, strict=True):
        assert row.keys() >= CONTRACT
        assert row["idle_us"] == round(rank.idle_s * 1e6, 3)
        assert row["idle_pct"] + row["compute_pct"] + row["non_compute_pct"] == pytest.approx(100)


def test_chart_is_written_as_png_and_svg(real_trace: Any, tmp_path: Path) -> None:
    summary = summarize(load_trace(real_trace("trace_filter")))
    written = save_temporal_breakdown(summary, tmp_path / "breakdown")
    assert sorted(p.suffix for p in written) == [".png", ".svg"]
    assert all(p.stat().st_size > 1000 for p in written)
    only_svg = save_temporal_breakdown(summary, tmp_path / "one.svg")
    assert [p.name for p in only_svg] == ["one.svg"]


def test_html_section(real_trace: Any) -> None:
    section = trace_section(summarize(load_trace(real_trace("trace_filter"))), label="two ranks")
    assert section.key == "trace"
    assert section.charts[0].svg.startswith("<svg")
    assert len(section.tables[0].rows) == 2


def test_names_from_traces_are_not_read_as_markup(write_trace: Any, kineto: Any) -> None:
    trace = load_trace(write_trace("rank-0.json", kineto.document([kineto.kernel("evil[bold]kernel", 0, 5)])))
    console = _console()
    render_trace_kernels(top_kernels(trace), full_names=True, console=console)
    assert "evil[bold]kernel" in console.file.getvalue()


def test_summary_table_marks_partial_results(write_trace: Any, kineto: Any) -> None:
    gpu = write_trace("r0.json", kineto.document([kineto.kernel("gemm", 0, 10)], rank=0))
    cpu = write_trace("r1.json", kineto.document([kineto.cpu_op("aten::add", 0, 10)], rank=1))
    console = _console()
    render_trace_summary(summarize(load_trace([gpu, cpu])), console=console)
    text = console.file.getvalue()
    assert "PARTIAL" in text
    assert "rank 1: no GPU events" in text
