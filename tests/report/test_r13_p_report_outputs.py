"""The HTML report's output and inputs (round 13, helper P): a FIFO or a device as a target is
refused in one line, never opened (opening a FIFO waits for a reader forever); a write that fails
without naming a file (a full disk) names the target; one rank's goodput log and one monitor
capture are drawn as their run folder is (``goodput report FILE`` and ``monitor report FILE`` read
them), not refused as broken JSON."""

from __future__ import annotations

import errno
import json
import os
from dataclasses import replace
from pathlib import Path

import pytest

from lightspeed.errors import UserInputError
from lightspeed.goodput import build_ledger, read_run
from lightspeed.monitor import analyze_run
from lightspeed.report.html import ReportSection, chart_from_figure, write_report
from lightspeed.report.html_inputs import gather_inputs
from lightspeed.report.plots import new_figure

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "h200-train"
RANK_LOG = FIXTURES / "run" / "rank-00000.jsonl"
CAPTURE = FIXTURES / "monitor" / "capture-vm-597.jsonl"
ENOSPC_TEXT = os.strerror(errno.ENOSPC)  # "No space left on device" on Linux


def _sections() -> list[ReportSection]:
    figure, axes = new_figure(4, 3)
    axes.plot([0, 1], [0, 1])
    return [ReportSection(key="a", title="A", charts=[chart_from_figure(figure, name="line", title="line")])]


def test_a_fifo_as_the_report_is_refused_not_opened(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    refused = r"fifo is a FIFO \(named pipe\), not a file to write the report"
    with pytest.raises(UserInputError, match=refused):
        write_report(path=fifo, title="t", sections=_sections())


def test_a_fifo_among_the_plots_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    plots = tmp_path / "plots"
    plots.mkdir()
    os.mkfifo(plots / "a-line.svg")  # the file --plots would write for chart "line" of section "a"
    refused = r"a-line\.svg is a FIFO \(named pipe\), not a file to write the plot"
    with pytest.raises(UserInputError, match=refused):
        write_report(path=tmp_path / "report.html", title="t", sections=_sections(), plots_dir=plots)
    assert not (tmp_path / "report.html").exists()


def test_a_device_as_the_report_is_refused(tmp_path: Path) -> None:
    refused = r"^/dev/full is a character device, not a file to write the report"
    with pytest.raises(UserInputError, match=refused):
        write_report(path=Path("/dev/full"), title="t", sections=_sections())


def _full_disk(*args: object, **kwargs: object) -> None:
    raise OSError(errno.ENOSPC, ENOSPC_TEXT)  # as a full disk's write: filename None


def test_a_full_disk_names_the_report_not_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "report.html"
    monkeypatch.setattr(Path, "write_text", _full_disk)
    with pytest.raises(UserInputError) as raised:
        write_report(path=target, title="t", sections=_sections())
    assert str(raised.value) == f"cannot write the report to {target} ({ENOSPC_TEXT}); choose another path"


def test_a_full_disk_names_the_plot_being_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plots = tmp_path / "plots"
    monkeypatch.setattr(Path, "write_bytes", _full_disk)  # the page and the SVG are text: the PNG fails
    with pytest.raises(UserInputError) as raised:
        write_report(path=tmp_path / "report.html", title="t", sections=_sections(), plots_dir=plots)
    png = plots / "a-line.png"
    assert str(raised.value) == f"cannot write the plot to {png} ({ENOSPC_TEXT}); choose another path"


def test_one_rank_log_is_drawn_as_its_run_folder(tmp_path: Path) -> None:
    inputs = gather_inputs(sources=[str(RANK_LOG)], store_path=tmp_path / "none.sqlite")
    assert len(inputs.ledgers) == 1
    # the folder holds this one rank: its ledger (as 'goodput report RUN_DIR' builds it) is the
    # file's, but for the path it was read from
    folder_ledger = build_ledger(run=read_run(RANK_LOG.parent))
    assert inputs.ledgers[0] == replace(folder_ledger, path=str(RANK_LOG))
    first = json.loads(RANK_LOG.read_text(encoding="utf-8").splitlines()[0])
    assert inputs.ledgers[0].run_id == first["run_id"]


def test_one_monitor_capture_is_drawn_as_monitor_report_reads_it(tmp_path: Path) -> None:
    inputs = gather_inputs(sources=[str(CAPTURE)], store_path=tmp_path / "none.sqlite")
    assert inputs.ledgers == ()
    assert len(inputs.monitors) == 1
    expected = analyze_run(path=CAPTURE)  # what 'monitor report FILE' shows
    assert inputs.monitors[0].summaries == expected.summaries
    assert inputs.monitors[0].diagnosis == expected.diagnosis
    lines = CAPTURE.read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[0])["type"] == "capture_start"  # a JSON-lines file, not one JSON document
