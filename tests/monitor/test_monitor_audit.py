"""Audit fixes of the monitor rules and reader: communication_bound judged over the joined goodput
run's samples (idle start-up before the run must not dilute a saturated run), and files other
commands read, given to ``monitor report``, named with their command."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from expect import one_line_error
from lightspeed.catalog import load_catalog
from lightspeed.goodput import build_ledger, read_run
from lightspeed.monitor import diagnose, join_counters, read_capture

from .conftest import NS, T0_NS  # type: ignore[import-not-found]

CATALOG = load_catalog()
SATURATED = 4.0e11  # of the H100 SXM's 450 GB/s NVLink per direction (catalog): 89% >= 80%
QUIET = 1.0e10


def _joined_links(make_capture, hand_run, tmp_path: Path, saturated: range) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """A 40 s capture (sample t = 1..40 covers the second before it) whose NVLink carries 400 GB/s
    at the samples in ``saturated``, beside a goodput run of 10 one-second steps that starts 30 s
    into the capture: the run's window is (30, 40] s, samples t = 31..40."""
    run_dir = tmp_path / "run"
    log = hand_run(run_dir).start(0.0)
    for step in range(10):
        log.step(step, float(step), step + 1.0, tokens=10)
    log.end(10.0)
    samples = [
        {"gpu0": {"gpu_util_ratio": 0.6, "nvlink_tx_bytes_per_s": SATURATED if t in saturated else QUIET}}
        for t in range(1, 41)
    ]
    capture = read_capture(make_capture(tmp_path / "c.jsonl", samples, start_ns=T0_NS - 30 * NS))
    run = read_run(run_dir)
    joined = join_counters(run=run, ledger=build_ledger(run=run), captures=[capture])
    alone = diagnose(captures=[capture], catalog=CATALOG)
    with_run = diagnose(captures=[capture], joined=joined, catalog=CATALOG)
    return {
        "alone": {f.rule: f for f in alone.findings},
        "joined": {f.rule: f for f in with_run.findings},
    }


def test_a_run_saturating_nvlink_after_idle_start_up_is_communication_bound(
    make_capture, hand_run, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    # saturated at t = 31..38: 8 of the run's 10 samples (80% >= 25%), but 8 of 40 overall (20%)
    findings = _joined_links(make_capture, hand_run, tmp_path, range(31, 39))
    assert "communication_bound" not in findings["alone"]  # the whole capture: 20% < 25%
    finding = findings["joined"]["communication_bound"]
    assert "in 80.0% of the samples during the goodput run" in finding.message
    evidence = finding.evidence[0]
    assert (evidence.window_start_s, evidence.window_end_s) == (30.0, 38.0)
    assert evidence.observed == SATURATED / 450e9


def test_saturation_before_the_run_only_is_not_the_runs_bottleneck(
    make_capture, hand_run, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    # saturated at t = 1..15: 15 of 40 overall (37.5%), none of the run's 10
    findings = _joined_links(make_capture, hand_run, tmp_path, range(1, 16))
    assert "communication_bound" in findings["alone"]
    assert "communication_bound" not in findings["joined"]


def _kineto_gz(path: Path) -> Path:
    path.write_bytes(gzip.compress(json.dumps({"traceEvents": []}).encode()))
    return path


def _ncu_csv(path: Path) -> Path:
    path.write_text('"ID","Process ID","Process Name"\n"0","1","app"\n', encoding="utf-8")
    return path


def test_monitor_report_names_the_reader_of_a_trace_an_ncu_csv_or_a_goodput_log(
    run_cli, hand_run, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    trace = _kineto_gz(tmp_path / "rank-0.json.gz")
    one_line_error(
        run_cli("monitor", "report", str(trace)),
        "this is a PyTorch profiler (Kineto) trace, not a lightspeed monitor capture",
        f"'lightspeed trace summary {trace}'",
    )
    csv = _ncu_csv(tmp_path / "k.csv")
    one_line_error(
        run_cli("monitor", "report", str(csv)), "Nsight Compute CSV", f"'lightspeed kernels report {csv}'"
    )
    log_dir = hand_run(tmp_path / "run").start(0.0).step(0, 0.0, 1.0).end(1.0)
    log = log_dir / "rank-00000.jsonl"
    one_line_error(
        run_cli("monitor", "report", str(log)), "goodput event log", f"'lightspeed goodput report {log}'"
    )


def test_a_damaged_text_file_keeps_the_captures_own_error(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    text = tmp_path / "capture-x.jsonl"
    text.write_text("hello\n", encoding="utf-8")
    one_line_error(run_cli("monitor", "report", str(text)), ":1: not a JSON object")
