"""``lightspeed trace``: every subcommand, its --json, and bad input as one line with exit 2."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from expect import one_line_error

# real traces (HTA's test suite, MIT) in the repository's copy of ../shared; HTA's own numbers in fixtures
TRACES = Path(__file__).resolve().parents[1] / "data" / "shared" / "data" / "traces"
GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "traces" / "hta_expected"
TWO_RANKS = str(TRACES / "trace_filter")
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
HTA = json.loads((GOLDEN / "trace_filter.json").read_text(encoding="utf-8"))


def test_summary_json_contract_and_hta_numbers(run_cli: Any) -> None:
    result = run_cli("trace", "summary", TWO_RANKS, "--json")
    assert result.code == 0
    payload = json.loads(result.out)
    assert [row["rank"] for row in payload] == [0, 1]
    for row, expected in zip(payload, HTA["temporal_breakdown"], strict=True):
        assert row.keys() >= CONTRACT
        assert row["idle_pct"] == pytest.approx(expected["idle_pct"], abs=0.5)
        assert row["idle_us"] == pytest.approx(expected["idle_us"], abs=0.5)
        assert row["partial"] is False
    overlap = [row["comm_comp_overlap_pct"] for row in HTA["comm_comp_overlap"]]
    assert [row["comm_comp_overlap_pct"] for row in payload] == pytest.approx(overlap, abs=0.5)


def test_summary_table_and_plot(run_cli: Any, tmp_path: Path) -> None:
    result = run_cli("trace", "summary", TWO_RANKS, "--plot", str(tmp_path / "breakdown"))
    assert result.code == 0
    assert "Temporal breakdown per rank" in result.out
    assert "53.56%" in result.out  # rank 0 idle, as HTA
    assert (tmp_path / "breakdown.png").exists()
    assert (tmp_path / "breakdown.svg").exists()


@pytest.mark.parametrize(
    ("subcommand", "extra", "expected"),
    [
        ("kernels", ("--top", "2"), "Top 2 kernels"),
        ("idle", (), "host wait"),
        ("launch", (), "launch delay"),
        ("comms", (), "all_to_all"),
        ("stragglers", (), "straggler"),
    ],
)
def test_subcommands_print_tables(
    run_cli: Any, subcommand: str, extra: tuple[str, ...], expected: str
) -> None:
    result = run_cli("trace", subcommand, TWO_RANKS, *extra)
    assert result.code == 0, result.err
    assert expected in result.out


@pytest.mark.parametrize("subcommand", ["kernels", "idle", "launch", "comms", "stragglers"])
def test_subcommands_json(run_cli: Any, subcommand: str) -> None:
    result = run_cli("trace", subcommand, TWO_RANKS, "--json")
    assert result.code == 0, result.err
    payload = json.loads(result.out)
    assert isinstance(payload, dict)
    assert "notes" in payload


def test_comms_with_a_catalog_link(run_cli: Any) -> None:
    result = run_cli("trace", "comms", TWO_RANKS, "--link", "ib-ndr", "--json")
    assert result.code == 0, result.err
    payload = json.loads(result.out)
    assert payload["sol_source"] == "ib-ndr x 1 (catalog): 50 GB/s per direction"  # NDR: 400 Gb/s
    assert payload["calls"][0]["sol_bytes_per_s"] > 0


def test_comms_link_options_conflict(run_cli: Any) -> None:
    result = run_cli("trace", "comms", TWO_RANKS, "--link", "ib-ndr", "--link-bandwidth", "50GB/s")
    one_line_error(result, "not both")


def test_comms_link_bandwidth_needs_its_unit(run_cli: Any) -> None:
    """A bare 50 is not 50 B/s (a SOL a billion times too slow): the unit is asked for, as hw detect
    asks for its memory bandwidth's; 50GB/s is 5e10 bytes per second."""
    one_line_error(run_cli("trace", "comms", TWO_RANKS, "--link-bandwidth", "50"), "50GB/s", "unit")
    given = run_cli("trace", "comms", TWO_RANKS, "--link-bandwidth", "50GB/s", "--json")
    assert given.code == 0, given.err
    assert json.loads(given.out)["calls"][0]["sol_bytes_per_s"] == 50e9


def test_diff_of_a_trace_with_itself(run_cli: Any) -> None:
    result = run_cli("trace", "diff", TWO_RANKS, TWO_RANKS, "--json", "--top", "2")
    assert result.code == 0, result.err
    rows = json.loads(result.out)["rows"]
    assert len(rows) == 7
    assert {row["verdict"] for row in rows} <= {"too few steps", "no significant change"}
    table = run_cli("trace", "diff", TWO_RANKS, TWO_RANKS)
    assert "Mann-Whitney" in table.out


def test_truncated_gzip_is_one_line(run_cli: Any, tmp_path: Path) -> None:
    source = TRACES / "trace_filter" / "sampled_rank-0.json.gz"
    cut = tmp_path / "rank-0.json.gz"
    cut.write_bytes(source.read_bytes()[:5000])
    one_line_error(run_cli("trace", "summary", str(cut)), "truncated")


def test_truncated_json_is_one_line(run_cli: Any, tmp_path: Path) -> None:
    text = gzip.decompress((TRACES / "trace_filter" / "sampled_rank-0.json.gz").read_bytes())
    cut = tmp_path / "rank-0.json"
    cut.write_bytes(text[:20000])
    one_line_error(run_cli("trace", "kernels", str(cut)), "JSON is truncated")


def test_invalid_json_is_one_line(run_cli: Any, tmp_path: Path) -> None:
    bad = tmp_path / "rank-0.json"
    bad.write_text("{not json", encoding="utf-8")
    one_line_error(run_cli("trace", "idle", str(bad)), "not valid JSON")


def test_cpu_only_trace_is_one_line(run_cli: Any) -> None:
    one_line_error(run_cli("trace", "summary", str(TRACES / "cpu_only")), "no GPU events", "CPU-only")


def test_missing_distributed_info_is_noted_not_fatal(run_cli: Any) -> None:
    # the real negative case is also CPU-only: the rank note comes with the no-GPU error
    result = run_cli("trace", "summary", str(TRACES / "distributed_info_unavailable"))
    one_line_error(result, "no GPU events")
    triton = run_cli("trace", "summary", str(TRACES / "triton_example"), "--json")
    assert triton.code == 0
    assert any("assumed rank 0" in note for note in json.loads(triton.out)[0]["notes"])


def test_mixed_schema_versions(run_cli: Any, tmp_path: Path) -> None:
    for rank, source in enumerate(sorted((TRACES / "trace_filter").glob("*.json.gz"))):
        data = json.loads(gzip.decompress(source.read_bytes()))
        data["schemaVersion"] = rank + 1
        (tmp_path / source.name).write_bytes(gzip.compress(json.dumps(data).encode()))
    one_line_error(run_cli("trace", "summary", str(tmp_path)), "schema versions", "--allow-mixed-schema")
    allowed = run_cli("trace", "summary", str(tmp_path), "--allow-mixed-schema")
    assert allowed.code == 0
    assert "mixed schema versions" in allowed.out


def test_rank_without_gpu_events_gives_partial_results(run_cli: Any, tmp_path: Path) -> None:
    data = json.loads(gzip.decompress((TRACES / "rank_non_gpu" / "rank_non_gpu.json.gz").read_bytes()))
    data["distributedInfo"] = {"rank": 1}
    (tmp_path / "rank-1.json").write_text(json.dumps(data), encoding="utf-8")
    gpu_rank = TRACES / "trace_filter" / "sampled_rank-0.json.gz"
    result = run_cli("trace", "summary", str(gpu_rank), str(tmp_path / "rank-1.json"), "--json")
    assert result.code == 0
    rows = json.loads(result.out)
    assert [row["partial"] for row in rows] == [False, True]
    assert rows[1]["idle_pct"] is None


def test_max_bytes_bound(run_cli: Any) -> None:
    one_line_error(run_cli("trace", "summary", TWO_RANKS, "--max-bytes", "10kB"), "limit", "--max-bytes")


def test_missing_path_and_bad_unit(run_cli: Any, tmp_path: Path) -> None:
    one_line_error(run_cli("trace", "summary", str(tmp_path / "nope.json")), "no such file")
    one_line_error(run_cli("trace", "summary", TWO_RANKS, "--time-unit", "ms"), "ms")
    one_line_error(run_cli("trace", "idle", TWO_RANKS, "--kernel-wait-threshold", "fast"), "fast")


def test_stragglers_needs_two_ranks(run_cli: Any) -> None:
    one_line_error(run_cli("trace", "stragglers", str(TRACES / "triton_example")), "compares ranks")


def test_exact_ns_keeps_fractions_of_a_microsecond(run_cli: Any, tmp_path: Path) -> None:
    kernel = {
        "ph": "X",
        "cat": "kernel",
        "name": "gemm",
        "pid": 0,
        "tid": 7,
        "ts": 10.25,
        "dur": 2.5,
        "args": {"stream": 7},
    }
    (tmp_path / "rank-0.json").write_text(json.dumps({"traceEvents": [kernel]}), encoding="utf-8")
    # HTA rounds inwards to whole microseconds: [10.25, 12.75) becomes [11, 12), 1 us
    rounded = json.loads(run_cli("trace", "summary", str(tmp_path), "--json").out)[0]
    exact = json.loads(run_cli("trace", "summary", str(tmp_path), "--json", "--exact-ns").out)[0]
    assert rounded["compute_us"] == 1.0
    assert exact["compute_us"] == 2.5


def _with_negative_durations(tmp_path: Path) -> Path:
    path = TRACES / "trace_filter" / "sampled_rank-0.json.gz"
    document = json.loads(gzip.decompress(path.read_bytes()))
    kernels = [event for event in document["traceEvents"] if event.get("cat") == "kernel"]
    for event in kernels[:3]:
        event["dur"] = -abs(event["dur"]) * 50
    bad = tmp_path / "rank-0.json"
    bad.write_text(json.dumps(document), encoding="utf-8")
    return bad


def test_impossible_events_stop_unless_skipped_then_counted_everywhere(run_cli: Any, tmp_path: Path) -> None:
    bad = str(_with_negative_durations(tmp_path))
    one_line_error(
        run_cli("trace", "summary", bad), "negative duration", "traceEvents[", ".dur", "--skip-bad-events"
    )
    summary = run_cli("trace", "summary", bad, "--skip-bad-events", "--json")
    assert summary.code == 0, summary.err
    row = json.loads(summary.out)[0]
    assert row["num_skipped_events"] == 3
    assert 0 <= row["idle_pct"] <= 100
    table = run_cli("trace", "summary", bad, "--skip-bad-events")
    assert "3 impossible events skipped" in " ".join(table.out.split())
    for command in ("kernels", "idle", "launch", "comms"):
        result = run_cli("trace", command, bad, "--skip-bad-events", "--json")
        assert result.code == 0, result.err
        assert json.loads(result.out)["num_skipped_events"] == 3, command
    report = run_cli("report", "--from", bad, "--skip-bad-events", "-o", str(tmp_path / "r.html"))
    assert report.code == 0, report.err
    assert "3 impossible events skipped" in (tmp_path / "r.html").read_text(encoding="utf-8")


ALEXNET = str(TRACES / "critical_path" / "alexnet")


def test_device_gives_a_sol_to_a_trace_that_names_none(run_cli: Any) -> None:
    # trace_filter's ranks carry no deviceProperties: no SOL without --device
    plain = json.loads(run_cli("trace", "summary", TWO_RANKS, "--json").out)
    assert [row["accelerator"] for row in plain] == [None, None]
    assert all(any("no SOL" in note for note in row["notes"]) for row in plain)
    for jobs in ("1", "2"):  # the worker processes get it too
        result = run_cli("trace", "summary", TWO_RANKS, "--device", "H100 SXM", "--jobs", jobs, "--json")
        assert result.code == 0, result.err
        named = json.loads(result.out)
        assert [row["accelerator"] for row in named] == ["h100-sxm", "h100-sxm"]
        assert not any("no SOL" in note for row in named for note in row["notes"])
        # the figures themselves do not depend on the device
        assert [row["idle_us"] for row in named] == [row["idle_us"] for row in plain]


def test_device_replaces_a_name_the_catalog_does_not_know(run_cli: Any) -> None:
    # HTA's alexnet trace was taken on "NVIDIA A100-PG509-200", a name no datasheet prints
    plain = json.loads(run_cli("trace", "summary", ALEXNET, "--json").out)
    assert plain[0]["accelerator"] is None
    named = json.loads(run_cli("trace", "summary", ALEXNET, "--device", "a100-40gb", "--json").out)
    assert named[0]["accelerator"] == "a100-sxm-40gb"
    assert any("the trace names NVIDIA A100-PG509-200" in note for note in named[0]["notes"])


def test_an_unknown_device_is_one_line(run_cli: Any) -> None:
    one_line_error(
        run_cli("trace", "summary", TWO_RANKS, "--device", "h900"), "unknown device 'h900'", "hw list"
    )


def test_an_mlperf_log_given_to_trace_names_goodput_report(run_cli: Any, tmp_path: Path) -> None:
    log = tmp_path / "result_0.txt"
    log.write_text(':::MLLOG {"key": "run_start", "value": null, "time_ms": 1}\n')
    one_line_error(
        run_cli("trace", "summary", str(log)),
        "this is an MLPerf Training result log, not a profiler trace",
        f"'lightspeed goodput report {log}'",
    )


def test_comms_bandwidths_agree_with_the_size_and_median_time_shown(run_cli: Any) -> None:
    result = run_cli("trace", "comms", str(TRACES / "nccl_parser_config"), "--device", "a100-sxm", "--json")
    assert result.code == 0, result.err
    for group in json.loads(result.out)["groups"]:
        # two ranks, all_reduce factor 2(n-1)/n = 1 and broadcast 1: busbw = algbw = size / median time
        assert group["group_size"] == 2
        assert group["median_algbw_bytes_per_s"] == pytest.approx(
            group["size_bytes"] / group["median_duration_s"]
        )
        assert group["median_busbw_bytes_per_s"] == pytest.approx(group["median_algbw_bytes_per_s"])
    table = run_cli("trace", "comms", str(TRACES / "nccl_parser_config"), "--device", "a100-sxm")
    # 8.196 MB / 2.9125 ms = 2.814 GB/s (the median of the two calls' rates would be 2.866 GB/s)
    assert "8.196 MB │     2 │     2 │ 5.83 ms │     2.91 ms │ 2.814 GB/s" in table.out
    assert "algbw = size / median time" in table.out
