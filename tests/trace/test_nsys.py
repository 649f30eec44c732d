"""Nsight Systems SQLite exports read into the trace table; expected values come from SQL
queries written here against the same files (../shared/data/nsight/nsys), not from the reader."""

from __future__ import annotations

import shutil
import sqlite3
import stat
from pathlib import Path
from types import SimpleNamespace

import pytest

from lightspeed.errors import TraceError, UserInputError
from lightspeed.trace import (
    collectives,
    detect_format,
    diff_traces,
    idle_breakdown,
    launch_stats,
    load_trace,
    stragglers,
    summarize,
    top_kernels,
)

FILES = ("con_kernel.sqlite", "concurrent.s16.sqlite", "ex-gpu.s10.sqlite")
GPU_TABLES = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET")


def _nsys_file(shared: Path, name: str) -> Path:
    return shared / "data" / "nsight" / "nsys" / name


def _sql(path: Path, query: str) -> list[tuple[int, ...]]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        db.text_factory = lambda data: data.decode("utf-8", "replace")
        return db.execute(query).fetchall()


def _gpu_intervals(path: Path, tables: tuple[str, ...] = GPU_TABLES) -> list[tuple[int, int]]:
    tables_here = {name for (name,) in _sql(path, "SELECT name FROM sqlite_master WHERE type='table'")}
    rows: list[tuple[int, int]] = []
    for table in tables:
        if table in tables_here:
            rows += [(int(s), int(e)) for s, e in _sql(path, f'SELECT start, "end" FROM {table}')]
    return rows


def _union_ns(intervals: list[tuple[int, int]]) -> int:
    """Length of the union of intervals: sort by start and merge (written out here, not the library's)."""
    total, current_start, current_end = 0, None, None
    for start, end in sorted(intervals):
        if current_end is None or start > current_end:
            if current_end is not None:
                total += current_end - current_start
            current_start, current_end = start, end
        else:
            current_end = max(current_end, end)
    return total + (current_end - current_start if current_end is not None else 0)


@pytest.mark.parametrize("name", FILES)
def test_temporal_breakdown_matches_sql(shared: Path, name: str) -> None:
    path = _nsys_file(shared, name)
    rank = summarize(load_trace(path)).ranks[0]
    intervals = _gpu_intervals(path)
    kernels = _gpu_intervals(path, ("CUPTI_ACTIVITY_KIND_KERNEL",))
    span = max(e for _, e in intervals) - min(s for s, _ in intervals)
    # con_kernel.sqlite writes one kernel row twice (correlation ids 124 and 1124: the same name,
    # stream, start and end), which every analysis counts once
    assert rank.num_gpu_events == len(intervals) - {"con_kernel.sqlite": 1}.get(name, 0)
    assert rank.kernel_span_s == pytest.approx(span * 1e-9, abs=1e-12)
    assert rank.idle_pct == pytest.approx(100.0 * (span - _union_ns(intervals)) / span, abs=1e-9)
    assert rank.compute_pct == pytest.approx(100.0 * _union_ns(kernels) / span, abs=1e-9)
    assert rank.idle_pct + rank.compute_pct + rank.non_compute_pct == pytest.approx(100.0)


def test_device_names_come_from_target_info_of_both_schemas(shared: Path) -> None:
    old = _nsys_file(shared, "concurrent.s16.sqlite")
    new = _nsys_file(shared, "ex-gpu.s10.sqlite")
    # the old schema lists display adapters too; the CUDA device is the row with SMs
    [(old_name,)] = _sql(old, "SELECT name FROM TARGET_INFO_GPU WHERE smCount > 0")
    [(new_name,)] = _sql(new, "SELECT name FROM TARGET_INFO_CUDA_GPU WHERE deviceId = 0")
    assert load_trace(old).ranks[0].device_name == old_name == "GeForce GTX 1060 with Max-Q Design"
    summary = summarize(load_trace(new)).ranks[0]
    assert summary.device_name == new_name == "A100-PCIE-40GB"
    assert summary.accelerator == "a100-pcie-40gb"  # matched to the catalog
    assert summarize(load_trace(old)).ranks[0].accelerator is None  # a GTX 1060 is not in the catalog


def test_copies_memsets_and_calls_are_named_as_kineto_names_them(shared: Path) -> None:
    path = _nsys_file(shared, "concurrent.s16.sqlite")
    rank = load_trace(path).ranks[0]
    table = rank.events
    counts: dict[str, int] = {}
    for name_id in table.name_id.tolist():
        counts[table.names[name_id]] = counts.get(table.names[name_id], 0) + 1
    # copyKind 1 = HtoD, 2 = DtoH; memory kind 1 = Pinned, 2 = Device (nsys' schema event values)
    [(htod,)] = _sql(
        path, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE copyKind=1 AND srcKind=1 AND dstKind=2"
    )
    [(dtoh,)] = _sql(
        path, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE copyKind=2 AND srcKind=2 AND dstKind=1"
    )
    [(memsets,)] = _sql(path, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMSET WHERE memKind=2")
    [(launches,)] = _sql(
        path,
        "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId "
        "WHERE s.value = 'cudaLaunchKernel_v7000'",
    )
    [(ranges,)] = _sql(
        path, 'SELECT count(*) FROM NVTX_EVENTS WHERE eventType IN (59, 60) AND "end" IS NOT NULL'
    )
    assert counts["Memcpy HtoD (Pinned -> Device)"] == htod == 15
    assert counts["Memcpy DtoH (Device -> Pinned)"] == dtoh == 15
    assert counts["Memset (Device)"] == memsets == 17
    assert counts["cudaLaunchKernel"] == launches == 12  # the _v7000 API version is cut
    annotations = table.category_mask(("user_annotation",)).sum()
    assert annotations == ranges == 76
    assert counts["main->test_max_par->phase"] == 1
    assert rank.steps.num_steps == 0  # no NVTX range is named like a step


def test_top_kernels_and_launch_pairs_match_sql(shared: Path) -> None:
    path = _nsys_file(shared, "concurrent.s16.sqlite")
    trace = load_trace(path)
    [(test2_ns, test2_count)] = _sql(
        path,
        'SELECT sum(k."end" - k.start), count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k '
        "JOIN StringIds s ON s.id = k.shortName WHERE s.value = 'test2'",
    )
    best = top_kernels(trace, top=1, kinds=("computation",)).kernels[0]
    assert best.name.startswith("test2(")
    assert (best.count, best.total_s) == (test2_count, pytest.approx(test2_ns * 1e-9))
    # every GPU event is launched by a cudaLaunchKernel / cudaMemcpyAsync / cudaMemsetAsync call
    [(paired,)] = _sql(
        path,
        "SELECT count(*) FROM (SELECT correlationId FROM CUPTI_ACTIVITY_KIND_KERNEL UNION ALL "
        "SELECT correlationId FROM CUPTI_ACTIVITY_KIND_MEMCPY UNION ALL SELECT correlationId FROM "
        "CUPTI_ACTIVITY_KIND_MEMSET) g "
        "JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = g.correlationId "
        "JOIN StringIds s ON s.id = r.nameId WHERE s.value IN "
        "('cudaLaunchKernel_v7000', 'cudaMemcpyAsync_v3020', 'cudaMemsetAsync_v3020')",
    )
    assert launch_stats(trace).ranks[0].num_launches == paired == 59


def test_backtrace_rows_are_not_runtime_calls(shared: Path) -> None:
    path = _nsys_file(shared, "ex-gpu.s10.sqlite")
    table = load_trace(path).ranks[0].events
    # eventClass 67 (TRACE_PROCESS_EVENT_CUDABACKTRACE) repeats each call with its call stack
    [(calls,)] = _sql(path, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE eventClass = 0")
    assert table.category_mask(("cuda_runtime",)).sum() == calls == 18


def test_every_analysis_runs_on_an_export(shared: Path) -> None:
    trace = load_trace(_nsys_file(shared, "con_kernel.sqlite"))
    assert idle_breakdown(trace).ranks[0].idle_s >= 0
    assert collectives(trace).calls == ()  # no NCCL kernels in this program
    with pytest.raises(TraceError, match="compares ranks"):
        stragglers(trace)
    with pytest.raises(TraceError, match="NVTX range per step"):
        diff_traces(trace, trace)


def test_format_is_told_by_content_not_extension(shared: Path, tmp_path: Path) -> None:
    renamed = tmp_path / "rank-3.json"
    shutil.copyfile(_nsys_file(shared, "con_kernel.sqlite"), renamed)
    assert detect_format(renamed) == "nsys-sqlite"
    trace = load_trace(renamed)
    assert trace.ranks[0].rank == 3  # from the file name
    assert trace.ranks[0].source_format == "nsys"


def test_cli_summary_prints_the_breakdown(shared: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("trace", "summary", str(_nsys_file(shared, "concurrent.s16.sqlite")))
    assert result.code == 0, result.err
    assert "Temporal breakdown per rank" in result.out
    assert "GeForce GTX 1060" in result.out


# --- exports built here ---------------------------------------------------------------------------


def _two_process_export(path: Path, nsys: SimpleNamespace) -> Path:
    """Two processes, each: step 0 and step 1 ranges, a compute kernel and an NCCL kernel per step."""
    kernels, runtime, nvtx = [], [], []
    for pid, late_ns in ((nsys.PID_A, 0), (nsys.PID_B, 300)):
        tid = pid + 7
        for step in (0, 1):
            base = step * 10_000
            correlation = 100 + step * 2
            nvtx.append((base, base + 9_000, f"step {step}", tid))
            runtime.append((base + 10, base + 20, "cudaLaunchKernel_v7000", tid, correlation))
            runtime.append((base + 30, base + 40, "cudaLaunchKernel_v7000", tid, correlation + 1))
            kernels.append((base + 100, base + 2_100, "gemm_bf16", 7, correlation, pid))
            # the NCCL kernel ends together on both ranks; the late rank arrives 300 ns later
            nccl = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL"
            kernels.append((base + 2_200 + late_ns, base + 5_000, nccl, 8, correlation + 1, pid))
    return nsys.write(path, kernels=kernels, runtime=runtime, nvtx=nvtx)


def test_processes_are_ranks_and_nvtx_steps_are_steps(tmp_path: Path, nsys: SimpleNamespace) -> None:
    trace = load_trace(_two_process_export(tmp_path / "job.sqlite", nsys))
    assert trace.rank_ids == (0, 1)
    assert all(rank.world_size == 2 for rank in trace.ranks)
    assert [rank.steps.number.tolist() for rank in trace.ranks] == [[0, 1], [0, 1]]
    assert trace.ranks[0].device_name == "NVIDIA H100 80GB HBM3"
    assert trace.ranks[0].schema_version == "nsys export 3.11.0"
    summary = summarize(trace)
    assert summary.last_step_excluded  # two steps: the last is left out, as for Kineto
    first = summary.ranks[0]
    # step 0 of rank 0: kernel span 100..5000; compute 2000 ns, NCCL 2200..5000 = 2800 ns
    assert first.kernel_span_s == pytest.approx(4_900e-9)
    assert first.compute_s == pytest.approx(2_000e-9)
    assert first.communication_s == pytest.approx(2_800e-9)


def test_nccl_kernels_are_communication_across_ranks(tmp_path: Path, nsys: SimpleNamespace) -> None:
    trace = load_trace(_two_process_export(tmp_path / "job.sqlite", nsys))
    calls = collectives(trace, include_last_step=True).calls
    assert [(c.rank, c.collective) for c in calls] == [(0, "all_reduce")] * 2 + [(1, "all_reduce")] * 2
    assert {c.group_size for c in calls} == {2}  # the world size: the export's GPU processes
    late = stragglers(trace, include_last_step=True)
    # rank 1 arrives 300 ns late at each all-reduce (its kernel is 300 ns shorter): the straggler
    assert late.ranks[0].rank == 1
    assert late.ranks[0].total_lateness_s == pytest.approx(2 * 300e-9)


def test_unknown_schema_names_the_missing_column(tmp_path: Path, nsys: SimpleNamespace, run_cli) -> None:  # type: ignore[no-untyped-def]
    path = nsys.write(
        tmp_path / "odd.sqlite",
        kernels=[],
        kernel_columns="begin, end, deviceId, streamId, correlationId, globalPid, demangledName",
    )
    result = run_cli("trace", "summary", str(path))
    assert result.code == 2
    assert result.err.count("\n") == 1
    assert (
        "unknown Nsight Systems export schema: table CUPTI_ACTIVITY_KIND_KERNEL has no column start"
        in result.err
    )


def test_an_export_without_cuda_activity_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "cpu.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE StringIds (id, value)")
    with pytest.raises(TraceError, match=r"no CUDA activity.*nsys profile --trace=cuda"):
        load_trace(path)


def test_truncated_and_corrupt_exports_are_one_line_errors(shared: Path, tmp_path: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    data = _nsys_file(shared, "concurrent.s16.sqlite").read_bytes()
    truncated = tmp_path / "cut.sqlite"
    truncated.write_bytes(data[: len(data) // 2])
    corrupt = tmp_path / "corrupt.sqlite"
    corrupt.write_bytes(data[:100] + bytes(range(256)) * ((len(data) - 100) // 256 + 1))
    for path, message in ((truncated, "SQLite file is truncated"), (corrupt, "corrupt SQLite file")):
        result = run_cli("trace", "summary", str(path))
        assert result.code == 2, path
        assert message in result.err
        assert result.err.count("\n") == 1
        assert "Traceback" not in result.err


def test_nsys_rep_needs_nsys_and_names_the_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    report = tmp_path / "run.nsys-rep"
    report.write_bytes(b"not an sqlite file")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(TraceError, match=r"nsys export --type sqlite --output run\.sqlite .*run\.nsys-rep"):
        load_trace(report)


def test_nsys_rep_is_exported_with_nsys_when_on_path(
    tmp_path: Path, nsys: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    # nsys itself cannot be installed here: a stand-in takes its place on PATH and writes the
    # export nsys would (the arguments it is given are checked, then a prepared .sqlite copied).
    export = _two_process_export(tmp_path / "prepared.sqlite", nsys)
    tools = tmp_path / "bin"
    tools.mkdir()
    script = tools / "nsys"
    script.write_text(
        "#!/bin/sh\n"
        '[ "$1 $2 $3" = "export --type sqlite" ] || exit 3\n'
        'while [ "$1" != "--output" ]; do shift; done\n'
        f'cp "{export}" "$2"\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tools}:/usr/bin:/bin")
    report = tmp_path / "job.nsys-rep"
    report.write_bytes(b"binary report")
    trace = load_trace(report)
    assert trace.rank_ids == (0, 1)
    assert trace.ranks[0].path == str(report)
    assert any("read via nsys export" in note for note in trace.ranks[0].notes)


def test_diff_compares_nvtx_steps(tmp_path: Path, nsys: SimpleNamespace) -> None:
    trace = load_trace(_two_process_export(tmp_path / "job.sqlite", nsys))
    result = diff_traces(trace, trace, include_last_step=True)
    step_time = next(row for row in result.rows if row.metric == "step time (CPU)")
    # two ranks x two steps of 9000 ns each side
    assert (step_time.num_a, step_time.num_b) == (4, 4)
    assert step_time.median_a_s == pytest.approx(9_000e-9)
    assert step_time.change_pct == pytest.approx(0.0)


def test_the_regression_gate_reads_step_times_from_an_export(tmp_path: Path, nsys: SimpleNamespace) -> None:
    from lightspeed.gate.inputs import is_trace_source, trace_step_samples

    path = _two_process_export(tmp_path / "job.sqlite", nsys)
    assert is_trace_source(path)
    assert is_trace_source(tmp_path)  # a folder of exports
    [series] = trace_step_samples(path, include_last_step=True)
    assert series.metric == "step_time_s"
    assert series.samples == pytest.approx((9_000e-9, 9_000e-9))  # steps 0 and 1, the slower rank each
    assert series.num_warmup == 1
    # the last step is left out by default, as HTA does: only the warm-up step would be left
    with pytest.raises(UserInputError, match="2 profiled step"):
        trace_step_samples(path)


def test_null_ids_and_undecodable_text_are_read(tmp_path: Path, nsys: SimpleNamespace) -> None:
    path = nsys.write(
        tmp_path / "odd.sqlite",
        kernels=[(0, 1_000, "k", 7, None, nsys.PID_A), (2_000, 2_500, "k", 7, 5, nsys.PID_A)],
        nvtx=[(0, 3_000, "step 1", nsys.PID_A + 1)],
    )
    with sqlite3.connect(path) as db:  # NVTX text that is not UTF-8 (a Latin-1 name, as in real exports)
        db.execute("UPDATE NVTX_EVENTS SET text = CAST(? AS TEXT)", (b"Gei\xdf step",))
    table = load_trace(path).ranks[0].events
    kernels = table.category_mask(("kernel",))
    assert kernels.sum() == 2
    assert sorted(table.correlation[kernels].tolist()) == [-1, 5]  # NULL reads as "no id"
    [annotation] = [table.names[i] for i in table.name_id[table.category_mask(("user_annotation",))]]
    assert annotation == "Gei\ufffd step"


def test_rows_that_end_before_they_start_are_counted_not_dropped_silently(
    shared: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "reversed.sqlite"
    shutil.copyfile(_nsys_file(shared, "con_kernel.sqlite"), copy)
    with sqlite3.connect(copy) as db:  # two kernels whose end comes before their start
        db.execute(
            'UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET "end" = start - 1 '
            "WHERE rowid IN (SELECT rowid FROM CUPTI_ACTIVITY_KIND_KERNEL LIMIT 2)"
        )
    [(kernels,)] = _sql(copy, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL")
    rank = load_trace(copy).ranks[0]
    assert int(rank.events.category_mask(("kernel",)).sum()) == kernels - 2
    assert any(
        "2 rows of CUPTI_ACTIVITY_KIND_KERNEL left out: they end before they start" in n for n in rank.notes
    )
