"""Round 14 trace fixes, against hand calculations: overlapping and repeated events on one stream,
the diff's tied p-values and verdicts, null args, and kernels whose short names collide."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lightspeed.errors import TraceError
from lightspeed.trace import diff_traces, idle_breakdown, load_trace, top_kernels
from lightspeed.trace.gpu import duplicate_rows
from lightspeed.trace.kernels import distinct_short_names

DOCS = Path(__file__).resolve().parents[2] / "docs" / "trace.md"


def _overlapping(kineto: Any) -> dict[str, Any]:
    """Stream 7 (us): gemm 0-100; inner 50-70 (inside gemm); gemm 110-120 written twice (two
    correlations, same name, stream, start, end); gemm 200-210. Every launch at t=0, before every
    gap, so no gap is host wait."""
    k = kineto
    events = [k.launch(0, 1, correlation) for correlation in range(1, 6)]
    events += [
        k.kernel("gemm", 0, 100, correlation=1),
        k.kernel("inner", 50, 20, correlation=2),
        k.kernel("gemm", 110, 10, correlation=3),
        k.kernel("gemm", 110, 10, correlation=4),
        k.kernel("gemm", 200, 10, correlation=5),
    ]
    return k.document(events)


def test_overlapping_events_on_one_stream_add_no_gap(write_trace: Any, kineto: Any) -> None:
    trace = load_trace(write_trace("rank-0.json", _overlapping(kineto)), cache=False)
    report = idle_breakdown(trace)
    [stream] = report.streams
    # By hand, from the latest end so far: gemm ends at 100, inner (50-70) ends nothing later and
    # starts inside it (no gap), gemm 110 -> gap 10 us (under 30 us: kernel wait), its repeat is
    # dropped, gemm 200 -> gap 200 - 120 = 80 us (other). Idle 90 us in 2 gaps.
    # (From the previous event's end instead: -50, +40, -10, +80 = 60 us, kernel wait -60 us.)
    assert stream.stream == 7
    assert stream.idle_s == pytest.approx(90e-6)
    assert stream.kernel_wait_s == pytest.approx(10e-6)
    assert stream.other_s == pytest.approx(80e-6)
    assert stream.host_wait_s == 0.0
    assert stream.num_gaps == 2
    # the whole GPU (union [0,100] [110,120] [200,210]) gives the same 10 + 80 us
    assert report.ranks[0].idle_s == pytest.approx(90e-6)
    notes = " | ".join(report.notes)
    assert "1 GPU event(s) repeat another exactly" in notes
    assert "1 GPU event(s) start before an earlier event on the same CUDA stream" in notes
    assert "1 GPU event(s) start before" in json.dumps(report.to_dict())


def test_a_repeated_row_is_counted_once_by_kernels(write_trace: Any, kineto: Any) -> None:
    trace = load_trace(write_trace("rank-0.json", _overlapping(kineto)), cache=False)
    report = top_kernels(trace)
    gemm = next(row for row in report.kernels if row.name == "gemm")
    # gemm 0-100, 110-120 (once), 200-210: 3 launches, 120 us
    assert (gemm.count, gemm.total_s) == pytest.approx((3, 120e-6))
    assert any("repeat another exactly" in note for note in report.notes)


def test_duplicate_rows_keep_the_first_of_each_set() -> None:
    start = np.array([5, 0, 5, 5, 5, 9], dtype=np.int64)
    duration = np.array([2, 1, 2, 2, 3, 1], dtype=np.int64)
    stream = np.array([7, 7, 7, 8, 7, 7], dtype=np.int64)
    name = np.array([1, 1, 1, 1, 1, 1], dtype=np.int32)
    # row 2 repeats row 0; row 3 is on another stream, row 4 lasts longer: both kept
    assert duplicate_rows(start, duration, stream, name).tolist() == [False, False, True, False, False, False]
    assert duplicate_rows(start, duration, stream, np.arange(6, dtype=np.int32)).tolist() == [False] * 6


def _steps(
    kineto: Any, *, step_us: float, parts: list[tuple[str, float, str, int]], num_steps: int
) -> dict[str, Any]:
    """``num_steps`` counted ProfilerSteps (and one more, the last, left out), each running
    ``parts`` (name, duration us, category, stream) one after another from 100 us into the step."""
    k = kineto
    events: list[dict[str, Any]] = []
    correlation = 0
    for index in range(num_steps + 1):
        start = index * 10_000
        events.append(k.step(index + 1, start, step_us))
        for offset, (name, duration, category, stream) in enumerate(parts):
            correlation += 1
            events.append(k.launch(start + 1 + offset, 1, correlation))
            events.append(
                k.kernel(
                    name,
                    start + 100 + 200 * offset,
                    duration,
                    correlation=correlation,
                    cat=category,
                    stream=stream,
                )
            )
    return k.document(events)


def test_three_against_four_tied_steps_can_be_significant(write_trace: Any, kineto: Any) -> None:
    a_parts = [
        ("gemm", 10, "kernel", 7),
        ("ncclKernel_AllReduce_RING_LL", 5, "kernel", 20),
        ("Memcpy HtoD (Pinned -> Device)", 2, "gpu_memcpy", 7),
    ]
    before = load_trace(
        write_trace("a/rank-0.json", _steps(kineto, step_us=1000, parts=a_parts, num_steps=3)), cache=False
    )
    after = load_trace(
        write_trace(
            "b/rank-0.json", _steps(kineto, step_us=2000, parts=[("gemm", 20, "kernel", 7)], num_steps=4)
        ),
        cache=False,
    )
    result = diff_traces(before, after, top=0)
    rows = {row.metric: row for row in result.rows}
    # Every metric is tied within A (3 steps) and within B (4 steps), A all below (step time 1000 vs
    # 2000 us, GPU busy 17 vs 20 us, computation 10 vs 20 us) or all above (communication 5 vs 0 us,
    # memory 2 vs 0 us). A's mid-ranks 2, 2, 2 against B's 5.5 x 4: rank sum 6, 6 from its mean of
    # 12; the other extreme, all of A at 5.5, is only 4.5 from it. So 1 of the C(7, 3) = 35 splits
    # is as extreme: p = 1/35 = 0.029, and Benjamini-Hochberg over five equal p-values keeps it.
    # The untied bound 2/35 = 0.057 would call every row "too few steps".
    for metric, verdict in (
        ("step time (CPU)", "slower"),
        ("GPU busy", "slower"),
        ("computation", "slower"),
        ("communication", "faster"),
        ("memory", "faster"),
    ):
        row = rows[metric]
        assert (row.num_a, row.num_b) == (3, 4)
        assert row.p_value == pytest.approx(1 / 35)
        assert row.q_value == pytest.approx(1 / 35)
        assert row.verdict == verdict, metric
        assert row.p_method == "exact"


def test_the_docs_diff_example_shows_what_the_code_gives(real_trace: Any) -> None:
    result = diff_traces(
        load_trace(real_trace("nccl_parser_config")), load_trace(real_trace("ns_resolution_trace")), top=2
    )
    communication = next(row for row in result.rows if row.metric == "communication")
    # communication is 0 in all four B steps and above 0 in both A steps: 1 of the C(6, 2) = 15
    # splits is that extreme, p = 1/15
    assert communication.p_value == pytest.approx(1 / 15)
    text = DOCS.read_text(encoding="utf-8")
    example = text[text.index("$ lightspeed trace diff ../shared/data/traces/nccl_parser_config") :]
    line = next(line for line in example.splitlines() if line.startswith("│ communication"))
    assert re.search(r"│\s+0\.0667\s+│", line), line
    assert "1/15 = 0.0667" in text


def test_null_args_read_as_absent_with_either_scanner(
    write_trace: Any, kineto: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    k = kineto
    events = [k.launch(0, 1, 1), k.kernel("gemm", 10, 100, correlation=1), k.launch(5, 1, 2)]
    events.append(k.kernel("gemm", 200, 50, correlation=2, flops=None))
    events.append(k.cpu_op("aten::mm", 1, 3, flops=None, **{"Group size": None, "Collective name": None}))
    path = write_trace("rank-0.json", k.document(events))
    for scanner in ("compiled", "python"):
        monkeypatch.setenv("LIGHTSPEED_SCANNER", scanner)
        trace = load_trace(path, cache=False)
        [gemm] = top_kernels(trace).kernels
        assert (gemm.count, gemm.total_s) == pytest.approx((2, 150e-6)), scanner


def test_an_event_field_of_the_wrong_type_says_how_to_fix_it(write_trace: Any, kineto: Any) -> None:
    k = kineto
    events = [k.launch(0, 1, 1), k.kernel("gemm", 10, 100, correlation=1, device="zero")]
    path = write_trace("rank-0.json", k.document(events))
    with pytest.raises(TraceError, match=r"unexpected event .*; fix: ") as caught:
        load_trace(path, cache=False)
    assert "traceEvents[" in str(caught.value)


def test_kernels_whose_short_names_collide_stay_apart(write_trace: Any, kineto: Any) -> None:
    k = kineto
    names = [
        "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x64_16x4_tn_align1>(Params)",
        "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x128_32x3_nt_align1>(Params)",
        "void at::native::fill<float>(int, float)",
        "void at::native::fill<float>(long, float)",
        "ncclKernel_AllReduce_RING_LL(ncclDevComm*)",
    ]
    events = []
    for index, name in enumerate(names):
        events += [
            k.launch(index, 1, index + 1),
            k.kernel(name, 100 * index, 10 + index, correlation=index + 1),
        ]
    report = top_kernels(load_trace(write_trace("rank-0.json", k.document(events)), cache=False))
    shown = {row.name: row.short_name for row in report.kernels}
    assert shown == {
        names[0]: "cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x64_16x4_tn_align1>",
        names[1]: "cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x128_32x3_nt_align1>",
        # the same template arguments: numbered in the report's order (largest total first)
        names[3]: "at::native::fill<float> #1",
        names[2]: "at::native::fill<float> #2",
        names[4]: "ncclKernel_AllReduce_RING_LL",
    }
    assert any("--full-names" in note for note in report.notes)
    assert distinct_short_names(["a(int)", "b(int)"]) == {"a(int)": "a", "b(int)": "b"}
