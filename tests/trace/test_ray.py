"""Rank files on a local Ray (2 CPUs, started once for the module): the serial answers, to the last digit."""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from expect import one_line_error
from lightspeed.errors import MissingExtraError, TraceError, UserInputError
from lightspeed.trace import (
    collectives,
    collectives_ranks,
    load_trace,
    stragglers,
    stragglers_ranks,
    summarize,
    summarize_ranks,
)

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.slow  # a local Ray takes a few seconds to start


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    """One local Ray for the module: 2 CPUs, a small object store, no dashboard. Its folder is a
    short one under the system's temporary folder: Ray's sockets live below it and a Unix socket's
    path may not exceed 107 bytes (pytest's numbered base folders grow past that)."""
    folder = tempfile.mkdtemp(prefix="ray-")
    ray.init(
        num_cpus=2,
        object_store_memory=100 << 20,
        include_dashboard=False,
        log_to_driver=False,
        _temp_dir=folder,
    )
    yield
    ray.shutdown()
    shutil.rmtree(folder, ignore_errors=True)


def _same(serial: Any, on_ray: Any) -> None:
    assert json.dumps(on_ray.to_dict(), sort_keys=True) == json.dumps(serial.to_dict(), sort_keys=True)


def _ranks(write_trace: Any, kineto: Any) -> list[Path]:
    """Four ranks whose all-reduce lasts differently per step (so stragglers and comms have work)."""
    paths = []
    for rank in range(4):
        events: list[dict[str, Any]] = []
        for position, number in enumerate((1, 2, 3)):
            start = 1000.0 * position
            events.append(kineto.step(number, start, 1000))
            correlation = 10 * position + 1
            events += [
                kineto.launch(start + 10, 1, correlation),
                kineto.kernel("sm90_gemm_bf16", start + 50, 300.0, correlation=correlation),
                kineto.launch(start + 11, 1, correlation + 1),
                kineto.kernel(
                    "ncclKernel_AllReduce_RING_LL_Sum_float",
                    start + 450,
                    40.0 + 7.5 * rank + position,
                    correlation=correlation + 1,
                ),
            ]
        paths.append(write_trace(f"rank-{rank}.json", kineto.document(events, rank=rank, world_size=4)))
    return paths


def test_every_analysis_on_ray_equals_the_serial_one(local_ray: None, write_trace: Any, kineto: Any) -> None:
    paths = _ranks(write_trace, kineto)
    trace = load_trace(paths, cache=False)
    _same(summarize(trace), summarize_ranks(paths, engine="ray"))
    _same(stragglers(trace), stragglers_ranks(paths, engine="ray"))
    _same(
        collectives(trace, link_bandwidth_bytes_per_s=5e10),
        collectives_ranks(paths, engine="ray", link_bandwidth_bytes_per_s=5e10),
    )


def test_a_real_two_rank_trace_on_ray(local_ray: None, real_trace: Any) -> None:
    folder = real_trace("trace_filter")
    trace = load_trace(folder, cache=False)
    _same(summarize(trace), summarize_ranks(folder, engine="ray"))


def test_errors_in_a_ray_task_read_as_the_serial_ones(local_ray: None, write_trace: Any, kineto: Any) -> None:
    paths = _ranks(write_trace, kineto)
    broken = write_trace("rank-9.json", '{"traceEvents": [{"ph": "X", "ts": 1, "dur": -5, "cat": "kernel"')
    with pytest.raises(TraceError, match="truncated") as serial:
        summarize(load_trace([*paths, broken], cache=False))
    with pytest.raises(TraceError, match="truncated") as on_ray:
        summarize_ranks([*paths, broken], engine="ray")
    assert type(on_ray.value) is type(serial.value)
    assert str(on_ray.value) == str(serial.value)


def test_cli_engine_ray_prints_the_serial_json(local_ray: None, run_cli: Any, real_trace: Any) -> None:
    folder = str(real_trace("trace_filter"))
    serial = run_cli("trace", "summary", folder, "--json")
    on_ray = run_cli("trace", "summary", folder, "--json", "--engine", "ray")
    assert on_ray.code == serial.code == 0
    assert on_ray.out == serial.out


def test_address_without_ray_engine_is_refused(run_cli: Any, real_trace: Any) -> None:
    one_line_error(
        run_cli("trace", "summary", str(real_trace("trace_filter")), "--address", "auto"), "--engine ray"
    )
    with pytest.raises(UserInputError, match="engine 'ray'"):
        summarize_ranks(real_trace("trace_filter"), address="auto")


def test_a_missing_ray_is_one_line_naming_the_extra(
    run_cli: Any, real_trace: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # what Python does for a module that is not there
    result = run_cli("trace", "summary", str(real_trace("trace_filter")), "--engine", "ray")
    one_line_error(result, "pip install 'lightspeed[ray]'")
    with pytest.raises(MissingExtraError, match=r"lightspeed\[ray\]"):
        summarize_ranks(real_trace("trace_filter"), engine="ray")
