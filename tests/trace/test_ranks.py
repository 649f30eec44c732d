"""Many-rank analyses in worker processes give exactly what the serial analyses give.

The serial functions (``summarize``, ``collectives``, ``stragglers`` on one
loaded ``Trace``) are the reference: every field of the merged records must
equal theirs, and every error must read the same.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lightspeed.errors import TraceError, UserInputError
from lightspeed.trace import (
    LoadOptions,
    collectives,
    collectives_ranks,
    load_trace,
    stragglers,
    stragglers_ranks,
    summarize,
    summarize_ranks,
)

NCCL = "ncclKernel_AllReduce_RING_LL_Sum_float"
pytestmark = pytest.mark.slow  # each test starts pools of worker processes


def _rank(
    kineto: Any, rank: int, steps: list[int], durations: list[float], **document: Any
) -> dict[str, Any]:
    """Steps of 1000 us; in each, a GEMM and an all-reduce of the given duration (us)."""
    k = kineto
    events: list[dict[str, Any]] = []
    correlation = 1
    for position, number in enumerate(steps):
        start = 1000 * position
        events.append(k.step(number, start, 1000))
        for offset, (name, duration) in enumerate((("sm90_gemm_bf16", 300.0), (NCCL, durations[position]))):
            events += [
                k.launch(start + 10 + offset, 1, correlation),
                k.kernel(name, start + 50 + 400 * offset, duration, correlation=correlation),
            ]
            correlation += 1
    return k.document(events, rank=rank, world_size=4, **document)


def _same(serial: Any, parallel: Any) -> None:
    assert json.dumps(parallel.to_dict(), sort_keys=True) == json.dumps(serial.to_dict(), sort_keys=True)


def _four_ranks(write_trace: Any, kineto: Any) -> list[Path]:
    return [
        write_trace(
            f"rank-{rank}.json", _rank(kineto, rank, [1, 2, 3], [40.0 + 10 * rank, 50.0, 60.0 - rank])
        )
        for rank in range(4)
    ]


@pytest.mark.parametrize("include_last_step", [False, True])
def test_every_analysis_merges_to_the_serial_answer(
    write_trace: Any, kineto: Any, include_last_step: bool
) -> None:
    paths = _four_ranks(write_trace, kineto)
    trace = load_trace(paths)
    _same(summarize(trace, include_last_step=include_last_step),
          summarize_ranks(paths, jobs=2, include_last_step=include_last_step))  # fmt: skip
    _same(stragglers(trace, include_last_step=include_last_step),
          stragglers_ranks(paths, jobs=3, include_last_step=include_last_step))  # fmt: skip
    _same(collectives(trace, include_last_step=include_last_step, link_bandwidth_bytes_per_s=5e10),
          collectives_ranks(paths, jobs=2, include_last_step=include_last_step,
                            link_bandwidth_bytes_per_s=5e10))  # fmt: skip


def test_a_rank_with_one_step_follows_the_whole_collection(write_trace: Any, kineto: Any) -> None:
    """Rank 1 recorded only step 7: alone it has no 'last step' to leave out, but the collection
    holds steps 1, 2 and 7, so the serial analysis leaves out rank 1's last (only) step."""
    paths = [
        write_trace("rank-0.json", _rank(kineto, 0, [1, 2], [40.0, 50.0])),
        write_trace("rank-1.json", _rank(kineto, 1, [7], [45.0])),
    ]
    serial = summarize(load_trace(paths))
    assert serial.ranks[1].partial  # everything of rank 1 was in its last step
    _same(serial, summarize_ranks(paths, jobs=2))


def test_real_two_rank_trace(real_trace: Any) -> None:
    folder = real_trace("trace_filter")
    trace = load_trace(folder)
    _same(summarize(trace), summarize_ranks(folder, jobs=2))
    _same(stragglers(trace), stragglers_ranks(folder, jobs=2))
    _same(collectives(trace), collectives_ranks(folder, jobs=2))


def test_load_options_reach_the_workers(real_trace: Any) -> None:
    folder = real_trace("trace_filter")
    exact = LoadOptions(round_to_us=False)
    _same(summarize(load_trace(folder, round_to_us=False)), summarize_ranks(folder, jobs=2, load=exact))
    with pytest.raises(TraceError, match="expands beyond") as caught:
        summarize_ranks(folder, jobs=2, load=LoadOptions(max_bytes=1000))
    with pytest.raises(TraceError) as serial:
        load_trace(folder, max_bytes=1000)
    assert str(caught.value) == str(serial.value)  # a worker's error comes back whole


def _error(action: Any) -> str:
    with pytest.raises((TraceError, UserInputError)) as caught:
        action()
    return str(caught.value)


def test_errors_read_as_the_serial_ones(write_trace: Any, kineto: Any, tmp_path: Path) -> None:
    same_rank = [
        write_trace("a.json", _rank(kineto, 3, [1, 2], [1.0, 1.0])),
        write_trace("b.json", _rank(kineto, 3, [1, 2], [1.0, 1.0])),
    ]
    unknown = [
        write_trace("x.json", _rank(kineto, None, [1, 2], [1.0, 1.0])),  # type: ignore[arg-type]
        write_trace("y.json", _rank(kineto, 1, [1, 2], [1.0, 1.0])),
    ]
    mixed = [
        write_trace("m0.json", _rank(kineto, 0, [1, 2], [1.0, 1.0], schema_version=1)),
        write_trace("m1.json", _rank(kineto, 1, [1, 2], [1.0, 1.0], schema_version=2)),
    ]
    (tmp_path / "cut.json").write_text(json.dumps(_rank(kineto, 2, [1, 2], [1.0, 1.0]))[:300])
    truncated = [tmp_path / "cut.json", same_rank[0]]
    for paths in (same_rank, unknown, mixed, truncated):
        assert _error(lambda p=paths: summarize_ranks(p, jobs=2)) == _error(lambda p=paths: load_trace(p))
    _same(summarize(load_trace(mixed, allow_mixed_schema=True)),
          summarize_ranks(mixed, jobs=2, load=LoadOptions(allow_mixed_schema=True)))  # fmt: skip
    one = same_rank[:1]
    assert _error(lambda: stragglers_ranks(one, jobs=2)) == _error(lambda: stragglers(load_trace(one)))
    with pytest.raises(UserInputError, match="jobs must be >= 1"):
        summarize_ranks(one, jobs=0)


def test_cli_jobs_gives_the_same_json(run_cli: Any, write_trace: Any, kineto: Any) -> None:
    paths = [str(path) for path in _four_ranks(write_trace, kineto)]
    for command in ("summary", "stragglers", "comms"):
        serial = run_cli("trace", command, *paths, "--json")
        parallel = run_cli("trace", command, *paths, "--json", "--jobs", "2")
        assert serial.code == parallel.code == 0, parallel.err
        assert json.loads(parallel.out) == json.loads(serial.out)
    capped = run_cli("trace", "summary", *paths, "--jobs", "2", "--max-worker-memory", "1MiB")
    assert capped.code == 2
    assert "below the minimum" in capped.err
    zero = run_cli("trace", "summary", *paths, "--jobs", "0")
    assert zero.code == 2
