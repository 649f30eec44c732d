"""Kernel names in terminal tables are whole: they are what people search for (in the code, in
Nsight, in HTA), so a narrow terminal wraps a name or the other columns, never cuts it to 20
characters with an ellipsis."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lightspeed.report.console import render_table
from lightspeed.trace import shorten_name

LONG = "ampere_fp16_s16816gemm_fp16_256x128_ldg8_f2f_stages_64x3_nn"


def _lines(capsys: pytest.CaptureFixture[str]) -> list[str]:
    return capsys.readouterr().out.splitlines()


def test_a_whole_column_keeps_a_kernel_name_on_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    headers = ("rank", "kind", "kernel", "count", "total", "share", "mean", "min", "median", "max")
    row = ("0", "computation", LONG, "8", "5.41 ms", "2.24%", "676 us", "301 us", "307 us", "1.39 ms")
    monkeypatch.setenv("COLUMNS", "150")  # room for the name if the others do not take it
    render_table("kernels", headers, [row], right_align_from=3, whole=(2,))
    out = "\n".join(_lines(capsys))
    assert LONG in out
    assert "5.41 ms" in out  # the other columns keep their short cells whole too
    monkeypatch.setenv("COLUMNS", "100")  # too narrow: the name wraps, whole, and nothing is cut
    render_table("kernels", headers, [row], right_align_from=3, whole=(2,))
    table = "\n".join(_lines(capsys))
    assert "…" not in table
    assert _column(table, 2) == [LONG]


def test_no_table_cuts_a_cell(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A cell too long for its column wraps onto the next line (folded), never ends in '…'."""
    monkeypatch.setenv("COLUMNS", "60")
    render_table(None, ("name", "a", "b", "c"), [(LONG, "1", "2", "3")])
    out = _lines(capsys)
    assert "…" not in "\n".join(out)
    assert "".join(line.split("│")[1].strip() for line in out if line.startswith("│")) == LONG


def _column(table: str, index: int) -> list[str]:
    """The cells of column ``index`` of a rich table, each put back together across the lines it
    wrapped onto (a continuation line has an empty first cell)."""
    cells: list[str] = []
    for line in table.splitlines():
        if not line.startswith("│"):
            continue
        parts = [part.strip() for part in line.split("│")[1:-1]]
        if parts[0] or not cells:
            cells.append(parts[index])
        else:
            cells[-1] += parts[index]
    return cells


def test_trace_kernels_show_every_name_whole(run_cli, shared: Path) -> None:  # type: ignore[no-untyped-def]
    folder = shared / "data" / "traces" / "trace_filter"
    payload = json.loads(run_cli("trace", "kernels", str(folder), "--json").out)
    names = [shorten_name(row["name"]) for row in payload["kernels"]]
    table = run_cli("trace", "kernels", str(folder)).out
    assert "…" not in table
    # HTA's short names (no template arguments): 'split_embedding_backward_codegen_rowwise_adagrad_...'
    # was shown as 'split_embedding_ba…'; a name longer than the terminal allows wraps whole
    assert sorted(_column(table, 2)) == sorted(names)
