"""``lightspeed report``: the HTML file, its sections, --plots, --json and bad input."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from expect import one_line_error
from lightspeed.store import NewRecord, open_store


def _store_history(values: list[float]) -> None:
    rng = np.random.default_rng(0)
    with open_store() as store:  # $LIGHTSPEED_HOME, fresh for each test
        for mean in values:
            samples = [float(v) for v in rng.normal(mean, 0.005, 10)]
            store.add_records(
                kind="benchmark",
                fingerprint={"host_name": "test"},
                records=[
                    NewRecord(
                        name="train step",
                        metric="step_time_s",
                        value=float(np.median(samples)),
                        unit="s",
                        sol=0.5,
                        payload={"samples": samples},
                    ),
                ],
            )


def test_report_draws_the_history_of_the_store(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _store_history([1.0, 1.0, 1.25])
    out = tmp_path / "report.html"
    result = run_cli("report", "-o", str(out), "--plots", str(tmp_path / "plots"), "--json")
    assert result.code == 0, result.err
    payload = json.loads(result.out)
    sections = {s["key"]: s for s in payload["sections"]}
    assert sections["history"]["skipped_reason"] is None
    assert sections["history"]["chart_names"] == ["history"]
    page = out.read_text(encoding="utf-8")
    assert page.count("regression") >= 1  # the third run is 25% slower than the second
    assert (tmp_path / "plots" / "history-history.png").stat().st_size > 1000
    assert payload["num_bytes"] == out.stat().st_size


def test_report_of_an_empty_store_says_what_is_missing(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    open_store().close()  # an empty store that exists
    out = tmp_path / "report.html"
    result = run_cli("report", "-o", str(out))
    assert result.code == 0, result.err
    assert "wrote" in result.out
    assert "holds no record" in out.read_text(encoding="utf-8")


def test_report_without_a_store_or_sources_is_one_line_and_creates_nothing(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # issue 29 point 1: a command that only reads the store opens it, never creates it
    out = tmp_path / "report.html"
    result = run_cli("report", "-o", str(out))
    assert result.code == 2
    assert result.err.count("\n") == 1
    assert "results.sqlite does not exist" in result.err
    assert not out.exists()
    assert not list(Path(os.environ["LIGHTSPEED_HOME"]).glob("results.sqlite*"))


def test_report_bad_input_is_one_line(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _store_history([1.0, 1.0])
    unknown = run_cli("report", "-o", str(tmp_path / "r.html"), "--history", "nope")
    assert unknown.code == 2
    assert unknown.err.count("\n") == 1
    assert "nope" in unknown.err
    blocker = tmp_path / "file"
    blocker.write_text("x")
    unwritable = run_cli("report", "-o", str(blocker / "r.html"))
    assert unwritable.code == 2
    assert "cannot write" in unwritable.err


def test_report_from_sources(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from lightspeed.goodput import Tracker

    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps(
            {
                "model": "m",
                "system": "s",
                "num_gpus": 8,
                "step_time_s": 2.0,
                "breakdown_s": {"compute": 1.5, "dp_comm": 0.5},
            }
        )
    )
    run_dir = tmp_path / "run"
    with Tracker(run_dir, flush_interval_s=0.05) as tracker, tracker.step(tokens=10):
        pass
    out = tmp_path / "r.html"
    result = run_cli("report", "--from", str(plan), "--from", str(run_dir), "-o", str(out), "--json")
    assert result.code == 0, result.err
    drawn = {s["key"] for s in json.loads(result.out)["sections"] if s["skipped_reason"] is None}
    assert drawn == {"step", "goodput"}
    page = out.read_text(encoding="utf-8")
    assert "75.0%" in page  # compute 1.5 s of a 2 s step


def test_report_bad_sources_are_one_line(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    bad_plan = tmp_path / "plan.json"
    bad_plan.write_text(json.dumps({"step_time_s": "slow", "breakdown_s": {"compute": 1.0}}))
    for source, needle in (
        (str(bad_plan), "step_time_s"),
        (str(tmp_path / "missing.json"), "no such file"),
        ("run:nope", "no run"),
    ):
        result = run_cli("report", "--from", source, "-o", str(tmp_path / "r.html"))
        assert result.code == 2, source
        assert result.err.count("\n") == 1, result.err
        assert needle in result.err, result.err


def test_report_from_bench_json(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from lightspeed.bench import make_result

    result = make_result(
        suite="gemm",
        name="square",
        dtype="fp32",
        flop_per_call=2 * 512**3,
        samples=[5e10, 6e10, 7e10],
        unit="FLOP/s",
        best="median",
        sol=1e11,
        sol_note="",
        correct=True,
        details={"m": 512, "n": 512, "k": 512},
    )
    results_file = tmp_path / "bench.json"  # what 'lightspeed bench gemm --json' prints
    results_file.write_text(json.dumps([{**result.to_dict(), "device": "cpu"}]))
    out = tmp_path / "r.html"
    written = run_cli("report", "--from", str(results_file), "-o", str(out), "--json")
    assert written.code == 0, written.err
    roofline = next(s for s in json.loads(written.out)["sections"] if s["key"] == "roofline")
    assert roofline["skipped_reason"] is None
    assert "60.0%" in out.read_text(encoding="utf-8")  # median 6e10 of a 1e11 peak


def _store_runs(run_dir: Path, trace_dir: Path) -> tuple[str, str]:
    """A goodput run and a trace run in the store, as the tour and 'monitor run' store them: the
    records name the folder they came from."""
    with open_store() as store:
        goodput = store.add_records(
            kind="goodput",
            records=[NewRecord(name="job", metric="goodput_fraction", value=0.5, unit="1",
                               payload={"run_dir": str(run_dir)})],
        )  # fmt: skip
        trace = store.add_records(
            kind="trace",
            records=[NewRecord(name="job rank 0", metric="idle_pct", value=50.0, unit="%",
                               payload={"path": str(trace_dir)})],
        )  # fmt: skip
    return goodput, trace


def test_report_draws_every_kind_of_stored_run(run_cli, tmp_path: Path, shared: Path) -> None:  # type: ignore[no-untyped-def]
    """'report' draws the goodput and trace runs of the results store, not only its benchmarks and
    predictions: a user no longer has to find their folders and pass them with --from."""
    from lightspeed.goodput import Tracker

    run_dir = tmp_path / "run"
    with Tracker(run_dir, flush_interval_s=0.05) as tracker, tracker.step(tokens=10):
        pass
    goodput, _ = _store_runs(run_dir, shared / "data" / "traces" / "trace_filter")
    result = run_cli("report", "-o", str(tmp_path / "r.html"), "--json")
    assert result.code == 0, result.err
    drawn = {s["key"] for s in json.loads(result.out)["sections"] if s["skipped_reason"] is None}
    assert {"goodput", "trace-1"} <= drawn
    one = run_cli("report", "--from", f"run:{goodput}", "-o", str(tmp_path / "one.html"), "--json")
    assert one.code == 0, one.err
    drawn_one = {s["key"] for s in json.loads(one.out)["sections"] if s["skipped_reason"] is None}
    assert "goodput" in drawn_one
    assert "trace-1" not in drawn_one  # only the run named


def test_a_stored_run_whose_folder_is_gone_is_said(run_cli, tmp_path: Path, shared: Path) -> None:  # type: ignore[no-untyped-def]
    goodput, _ = _store_runs(tmp_path / "moved-away", shared / "data" / "traces" / "trace_filter")
    result = run_cli("report", "-o", str(tmp_path / "r.html"), "--json")
    assert result.code == 0, result.err
    sections = {s["key"]: s for s in json.loads(result.out)["sections"]}
    assert goodput in sections["goodput"]["skipped_reason"]
    assert "moved-away" in sections["goodput"]["skipped_reason"]
    named = run_cli("report", "--from", f"run:{goodput}", "-o", str(tmp_path / "r.html"))
    assert named.code == 2
    assert named.err.count("\n") == 1
    assert "moved-away" in named.err


def test_an_mlperf_log_names_the_command_that_reads_it(run_cli, shared: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    folder = shared / "data" / "mlperf" / "training_v4.0" / "NVIDIA" / "results" / "h200_ngc24.04_nemo"
    log = folder / "llama2_70b_lora" / "result_0.txt"
    out = tmp_path / "report.html"
    one_line_error(
        run_cli("report", "--from", str(log), "-o", str(out)),
        f"{log}: this is an MLPerf Training result log, not a file 'lightspeed report' draws",
        f"fix: read it with 'lightspeed goodput report {log}'",
    )
    assert not out.exists()


def test_an_ncu_report_names_the_conversion(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    binary = tmp_path / "kernels.ncu-rep"
    binary.write_bytes(b"NVIDIA binary \x00\x01")
    one_line_error(
        run_cli("report", "--from", str(binary), "-o", str(tmp_path / "report.html")),
        "this is an Nsight Compute report",
        f"'ncu --import {binary} --csv --page details > kernels.csv; lightspeed kernels report kernels.csv'",
        "or pass kernels.csv with --from",
    )
