"""``monitor serve --goodput``: a run folder it cannot read is refused at start (one line, exit 2),
not served silently without its goodput series; a later read that fails warns once."""

from __future__ import annotations

import warnings
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from expect import one_line_error
from lightspeed.errors import DataFileError
from lightspeed.monitor import MonitorCollector
from lightspeed.monitor.exporter import GoodputReadWarning

pytest.importorskip("prometheus_client")


def _no_devices() -> Any:
    return SimpleNamespace(latest=lambda: None, devices=(), backends=[])


def _empty(folder: Path) -> Path:
    folder.mkdir()
    return folder


def _not_a_log(folder: Path) -> Path:
    folder.mkdir()
    (folder / "rank-0.jsonl").write_text("this is not a goodput log\n", encoding="utf-8")
    return folder


def _other_files(folder: Path) -> Path:
    folder.mkdir()
    (folder / "notes.txt").write_text("a folder of something else\n", encoding="utf-8")
    return folder


@pytest.mark.parametrize("make", [_empty, _not_a_log, _other_files])
def test_serve_refuses_a_run_folder_it_cannot_read(run_cli, tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    folder = make(tmp_path / "run")
    result = run_cli(
        "monitor", "serve", "--port", "0", "--backend", "host", "--goodput", str(folder), "--duration", "10"
    )
    one_line_error(result, "--goodput cannot be exported", str(folder))
    assert "serving Prometheus metrics" not in result.out  # refused before it listened


def test_the_collector_raises_the_first_read_error(tmp_path: Path) -> None:
    collector = MonitorCollector(_no_devices(), hostname="n", goodput_run=_empty(tmp_path / "run"))
    with pytest.raises(DataFileError, match="no rank-"):
        collector.check_goodput()


def test_a_later_failed_read_warns_once_and_keeps_the_last_values(hand_run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    run_dir = tmp_path / "run"
    log = hand_run(run_dir).start(0.0)
    for step in range(3):
        log.step(step, float(step), step + 1.0, tokens=1000)
    log.end(3.0)
    collector = MonitorCollector(_no_devices(), hostname="n", goodput_run=run_dir, refresh_s=0.0)
    collector.check_goodput()  # the first read succeeds: nothing raised
    assert collector.goodput is not None
    log_file = next(run_dir.glob("rank-*.jsonl"))
    source = collector.goodput

    def break_and_read(times: int) -> None:
        for attempt in range(times):  # each attempt changes the file, so each is read again and fails
            log_file.write_text(f"broken {attempt}\n", encoding="utf-8")
            source.latest()
            source.wait()

    with pytest.warns(GoodputReadWarning, match="can no longer be read") as caught:
        break_and_read(3)
    assert len([w for w in caught if issubclass(w.category, GoodputReadWarning)]) == 1
    latest = collector.goodput.latest()
    assert latest is not None
    assert latest.ledger.steps.count == 3  # the last good read is still exported
    assert str(run_dir) in collector.goodput.error


def test_a_run_that_can_be_read_serves_without_warnings(hand_run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    run_dir = tmp_path / "run"
    hand_run(run_dir).start(0.0).step(0, 0.0, 1.0, tokens=10).end(1.0)
    collector = MonitorCollector(_no_devices(), hostname="n", goodput_run=run_dir, refresh_s=0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        collector.check_goodput()
        assert collector.goodput is not None
        collector.goodput.latest()
        collector.goodput.wait()
