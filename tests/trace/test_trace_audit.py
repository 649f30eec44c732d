"""Audit fixes of the trace readers and commands, each on a small trace built here by hand:
sub-microsecond events after HTA's rounding, lightspeed's own JSON-lines files given to the wrong
command, Nsight Systems rows that end before they start, unreadable ncu values, the catalog link
named as the SOL, a CSV profiled on another GPU, plot folders, and exact p-values of small diffs."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from expect import one_line_error
from lightspeed.errors import UserInputError
from lightspeed.trace import (
    detect_format,
    diff_traces,
    kernel_report,
    load_trace,
    mann_whitney_u,
    read_ncu,
    top_kernels,
)

# --- 1: an event inside one microsecond ends where it starts (duration 0), never before -------------


def _sub_microsecond(kineto: Any) -> dict[str, Any]:
    """Two kernels: k_long 10.05..15.65 us, k_short 20.05..20.65 us (0.6 us inside one microsecond),
    and a 0.9 us runtime call 1.05..1.95 us; fractional timestamps, so HTA's rounding applies."""
    return kineto.document(
        [
            kineto.step(1, 0.0, 100.0),
            kineto.launch(1.05, 0.9, 1),
            kineto.kernel("k_long", 10.05, 5.6, correlation=1),
            kineto.kernel("k_short", 20.05, 0.6, correlation=2),
        ]
    )


def test_a_kernel_inside_one_microsecond_rounds_to_zero_not_below(write_trace, kineto: Any) -> None:
    path = write_trace("sub.json", _sub_microsecond(kineto))
    events = load_trace(path, cache=False).ranks[0].events
    by_name = {
        events.names[i]: n for i, n in zip(events.name_id.tolist(), range(events.num_events), strict=True)
    }
    # HTA 0.5: start = ceil(ts), end = floor(ts + dur), in us
    # k_long: ceil(10.05) = 11, floor(15.65) = 15 -> 4 us (HTA's figure, unchanged)
    assert int(events.duration_ns[by_name["k_long"]]) == 4_000
    # k_short: ceil(20.05) = 21, floor(20.65) = 20 -> HTA gives -1 us; lightspeed ends it at 21: 0
    assert int(events.start_ns[by_name["k_short"]]) - int(events.start_ns[by_name["k_long"]]) == 10_000
    assert int(events.duration_ns[by_name["k_short"]]) == 0
    # the runtime call: ceil(1.05) = 2, floor(1.95) = 1 -> 0, not -1 us
    assert int(events.duration_ns[by_name["cudaLaunchKernel"]]) == 0
    assert (events.duration_ns >= 0).all()


def test_summary_and_kernels_of_sub_microsecond_kernels(run_cli, write_trace, kineto: Any) -> None:  # type: ignore[no-untyped-def]
    path = write_trace("sub.json", _sub_microsecond(kineto))
    summary = run_cli("trace", "summary", str(path), "--json")
    assert summary.code == 0, summary.err  # was: internal error (np.bincount of a negative length)
    kernels = run_cli("trace", "kernels", str(path), "--json")
    assert kernels.code == 0, kernels.err
    rows = {row["name"]: row for row in json.loads(kernels.out)["kernels"]}
    assert rows["k_long"]["total_s"] == pytest.approx(4e-6)
    assert rows["k_short"]["total_s"] == 0.0
    assert rows["k_long"]["share_of_kind_pct"] == pytest.approx(100.0)  # 4 / (4 + 0), not 103%


# --- 4: lightspeed's own JSON-lines files are named, with the command that reads them --------------


def _capture(path: Path) -> Path:
    header = {"v": 1, "type": "capture_start", "t_ns": 1, "interval_s": 1.0, "devices": []}
    sample = {"type": "sample", "t_ns": 2, "d": {}}
    path.write_text(json.dumps(header) + "\n" + json.dumps(sample) + "\n", encoding="utf-8")
    return path


def _goodput_log(path: Path) -> Path:
    start = {"v": 1, "seg": "s1", "type": "job_start", "t_ns": 1, "run_id": "r", "rank": 0}
    step = {"v": 1, "seg": "s1", "type": "step", "step": 0, "start_ns": 1, "end_ns": 2}
    path.write_text(json.dumps(start) + "\n" + json.dumps(step) + "\n", encoding="utf-8")
    return path


def test_monitor_captures_and_goodput_logs_are_told_apart(tmp_path: Path, write_trace, kineto: Any) -> None:
    assert detect_format(_capture(tmp_path / "capture-node-1.jsonl")) == "monitor-capture"
    assert detect_format(_goodput_log(tmp_path / "rank-00000.jsonl")) == "goodput-log"
    one_line_trace = write_trace("one.json", kineto.document([kineto.kernel("k", 1.0, 2.0)]))
    assert detect_format(one_line_trace) == "kineto"  # one line of JSON: a trace, as before
    text = tmp_path / "notes.txt"
    text.write_text("hello\n")
    assert detect_format(text) == "kineto"  # the default: the Kineto reader says what is wrong
    assert detect_format(text, unknown="") == ""


@pytest.mark.parametrize(
    ("command", "maker", "what", "reader"),
    [
        (
            ("trace", "summary"),
            _capture,
            "a lightspeed monitor capture, not a profiler trace",
            "monitor report",
        ),
        (
            ("trace", "summary"),
            _goodput_log,
            "a lightspeed goodput event log, not a profiler trace",
            "goodput report",
        ),
        (
            ("kernels", "report"),
            _capture,
            "a lightspeed monitor capture, not Nsight Compute CSV",
            "monitor report",
        ),
        (
            ("kernels", "report"),
            _goodput_log,
            "a lightspeed goodput event log, not Nsight Compute",
            "goodput report",
        ),
    ],
)
def test_a_lightspeed_log_given_to_a_trace_command_names_its_reader(  # type: ignore[no-untyped-def]
    run_cli, tmp_path: Path, command: tuple[str, str], maker: Any, *, what: str, reader: str
) -> None:
    path = maker(tmp_path / "log.jsonl")
    one_line_error(run_cli(*command, str(path)), what, f"'lightspeed {reader} {path}'")


# --- 5: Nsight Systems rows left out are counted and noted in every command ------------------------


def _export_with_a_reversed_kernel(nsys: Any, tmp_path: Path) -> Path:
    """Three kernels of one process; the second ends 1,000 ns before it starts."""
    return nsys.write(
        tmp_path / "run.sqlite",
        kernels=[
            (1_000, 2_000, "a", 7, 1, nsys.PID_A),
            (5_000, 4_000, "b", 7, 2, nsys.PID_A),
            (6_000, 8_000, "c", 7, 3, nsys.PID_A),
        ],
    )


def test_a_reversed_nsys_row_is_a_skipped_event_with_its_note(nsys: Any, tmp_path: Path) -> None:
    path = _export_with_a_reversed_kernel(nsys, tmp_path)
    trace = load_trace(path, cache=False)
    assert trace.num_skipped_events == 1
    [bad] = trace.ranks[0].skipped_events
    assert (bad.where, bad.event_index, bad.field, bad.value) == (
        "CUPTI_ACTIVITY_KIND_KERNEL",
        2,
        "dur",
        -1000.0,
    )
    kernels = top_kernels(trace)
    assert any("1 impossible event skipped" in note for note in kernels.notes)
    assert sorted(k.name for k in kernels.kernels) == ["a(int)", "c(int)"]


def test_nsys_rows_left_out_are_counted_by_summary_and_kernels_alike(
    run_cli, nsys: Any, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    path = _export_with_a_reversed_kernel(nsys, tmp_path)
    kernels = run_cli("trace", "kernels", str(path), "--json")
    assert kernels.code == 0, kernels.err
    payload = json.loads(kernels.out)
    assert payload["num_skipped_events"] == 1
    assert any("CUPTI_ACTIVITY_KIND_KERNEL[2].dur = -1000" in note for note in payload["notes"])
    summary = run_cli("trace", "summary", str(path), "--json")
    assert summary.code == 0, summary.err
    [rank] = json.loads(summary.out)
    assert rank["num_skipped_events"] == 1
    parallel = run_cli("trace", "summary", str(path), "--json", "--jobs", "2")
    assert json.loads(parallel.out)[0]["num_skipped_events"] == 1


# --- 6: an ncu value that is not a number is noted with its metric and line ------------------------


def _raw_page(tmp_path: Path, old: str, new: str) -> Path:
    """The conftest's raw page (two saxpy launches on an H100, CC 9.0) with ``old`` made ``new``."""
    from .conftest import RAW_PAGE  # type: ignore[import-not-found]

    path = tmp_path / "raw.csv"
    assert old in RAW_PAGE
    path.write_text(RAW_PAGE.replace(old, new), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("old", "new", "metric"),
    [
        ('"12.50"', '"abc"', "gpu__time_duration.sum"),  # launch 0's duration (line 3 of the file)
        ('"81.20"', '"inf"', "sm__throughput.avg.pct_of_peak_sustained_elapsed"),
    ],
)
def test_an_unreadable_ncu_value_is_noted(tmp_path: Path, old: str, new: str, metric: str) -> None:
    report = read_ncu(_raw_page(tmp_path, old, new))
    shown = new.strip('"')
    assert f"line 3: {metric} = {shown!r} is not a finite number; the value is left out" in report.notes


# --- 7: a catalog link is named as the SOL's source -----------------------------------------------


def _nccl_trace(kineto: Any) -> dict[str, Any]:
    return kineto.document(
        [
            kineto.step(1, 0.0, 100.0),
            kineto.kernel(
                "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm *, unsigned long, ncclWork *)",
                10.0,
                20.0,
                **{"In msg nelems": 1024, "Out msg nelems": 1024, "Group size": 2, "dtype": "Float"},
            ),
        ]
    )


def test_trace_comms_names_the_catalog_link(run_cli, write_trace, kineto: Any) -> None:  # type: ignore[no-untyped-def]
    path = write_trace("comm.json", _nccl_trace(kineto))
    result = run_cli("trace", "comms", str(path), "--link", "ib-ndr", "--num-links", "2", "--json")
    assert result.code == 0, result.err
    # NDR InfiniBand: 400 Gb/s = 50 GB/s per direction per link; two links 100 GB/s
    assert json.loads(result.out)["sol_source"] == "ib-ndr x 2 (catalog): 100 GB/s per direction"
    given = run_cli("trace", "comms", str(path), "--link-bandwidth", "50GB/s", "--json")
    assert json.loads(given.out)["sol_source"] == "given: 50 GB/s per direction"


# --- 8: a CSV profiled on another GPU family ------------------------------------------------------


def test_a_device_of_another_family_than_the_csvs_is_refused(tmp_path: Path) -> None:
    ncu = read_ncu(_raw_page(tmp_path, '"9.0","NVIDIA H100 80GB HBM3"', '"10.0","NVIDIA B200"'))
    with pytest.raises(UserInputError, match=r"compute capability 10\.0 \(nvidia-blackwell\).*h100-sxm"):
        kernel_report(ncu, device="h100")
    assert kernel_report(ncu, device="b200").accelerator == "b200"  # Blackwell: accepted


def test_cli_refuses_the_mismatch_in_one_line(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = _raw_page(tmp_path, '"9.0","NVIDIA H100 80GB HBM3"', '"10.0","NVIDIA B200"')
    one_line_error(run_cli("kernels", "report", str(path), "--device", "h100"), "compute capability 10.0")


def test_a_trace_device_of_another_family_gets_a_note(tmp_path: Path, write_trace, kineto: Any) -> None:
    # the CSV names no device (the raw page's name column emptied); the trace says H100
    ncu = read_ncu(_raw_page(tmp_path, '"9.0","NVIDIA H100 80GB HBM3"', '"10.0",""'))
    trace = load_trace(write_trace("t.json", kineto.document([kineto.kernel("k", 1.0, 2.0)])), cache=False)
    report = kernel_report(ncu, trace=trace)
    assert any("compute capability 10.0" in note and "named by the trace" in note for note in report.notes)


# --- 9: a plot into a missing folder; the exact p of a small diff ----------------------------------


def test_a_plot_into_a_missing_folder_is_refused_and_not_created(
    run_cli, write_trace, kineto: Any, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    path = write_trace("t.json", kineto.document([kineto.kernel("k", 1.0, 2.0)]))
    target = tmp_path / "missing" / "x.png"
    one_line_error(
        run_cli("trace", "summary", str(path), "--plot", str(target)), "no folder", "create it first"
    )
    assert not target.parent.exists()


def test_small_samples_with_ties_get_the_exact_p() -> None:
    # A = [1, 2], B = [3, 3, 4, 5]: pooled mid-ranks 1, 2, 3.5, 3.5, 5, 6. A's U = 0, as far from its
    # mean 4 as it can be; of the C(6, 2) = 15 ways to pick A's ranks, only {1, 2} and {5, 6} are that
    # far: p = 2/15 = 0.1333, the smallest p 2 vs 4 steps can give (the normal approximation: 0.055)
    result = mann_whitney_u([1.0, 2.0], [3.0, 3.0, 4.0, 5.0])
    assert result.p_value == pytest.approx(2 / 15)
    assert result.method == "exact"
    assert result.u_b == 8.0
    assert math.isclose(mann_whitney_u([1.0, 2.0, 3.0], [4.0, 5.0, 6.0]).p_value, 0.1)  # no ties: as before


def test_trace_diff_of_two_and_four_steps_is_never_below_two_fifteenths(write_trace, kineto: Any) -> None:
    def steps(lengths: list[float]) -> dict[str, Any]:
        events, start = [], 0.0
        for number, length in enumerate(lengths, start=1):
            events += [kineto.step(number, start, length), kineto.kernel("k", start + 1.0, length - 2.0)]
            start += length + 10.0
        events.append(kineto.step(len(lengths) + 1, start, 5.0))  # the last step, left out
        return kineto.document(events)

    a = load_trace(write_trace("a.json", steps([100.0, 200.0])), cache=False)
    b = load_trace(write_trace("b.json", steps([300.0, 300.0, 400.0, 500.0])), cache=False)
    diff = diff_traces(a, b)
    p_values = [row.p_value for row in diff.rows if not np.isnan(row.p_value)]
    assert p_values
    assert min(p_values) >= 2 / 15 - 1e-12


# --- 2: a NIC's speed in gigabits ----------------------------------------------------------------


def test_link_bandwidth_in_gigabits_is_an_eighth_in_bytes(run_cli, write_trace, kineto: Any) -> None:  # type: ignore[no-untyped-def]
    path = write_trace("comm.json", _nccl_trace(kineto))
    result = run_cli("trace", "comms", str(path), "--link-bandwidth", "400Gb/s", "--json")
    assert result.code == 0, result.err
    assert json.loads(result.out)["sol_source"] == "given: 50 GB/s per direction"  # 400e9 bit/s / 8
