"""Small Kineto-like traces whose answers can be worked out by hand, and real-trace paths.

Times are microseconds, as in Kineto traces. Real traces live in
``tests/fixtures/traces`` (copies) and ``../shared/data/traces``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

TRACE_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "traces"

H100_NAME = "NVIDIA H100 80GB HBM3"


def real_trace(shared_root: Path | None, relative: str) -> Path:
    """A real trace folder: the fixture copy when there is one, else ../shared/data/traces/<relative>."""
    copy = TRACE_FIXTURES / Path(relative).name
    if copy.is_dir():
        return copy
    if shared_root is None:
        pytest.skip(f"{relative} is only in ../shared")
    path = shared_root / "data" / "traces" / relative
    if not path.exists():
        pytest.skip(f"{path} not found")
    return path


def kernel(
    name: str,
    ts: float,
    dur: float,
    *,
    correlation: int = -1,
    stream: int = 7,
    cat: str = "kernel",
    **args: Any,
) -> dict[str, Any]:
    """A GPU event (kernel by default)."""
    payload: dict[str, Any] = {"device": 0, "stream": stream, **args}
    if correlation >= 0:
        payload["correlation"] = correlation
    return {
        "ph": "X",
        "cat": cat,
        "name": name,
        "pid": 0,
        "tid": stream,
        "ts": ts,
        "dur": dur,
        "args": payload,
    }


def launch(
    ts: float, dur: float, correlation: int, *, name: str = "cudaLaunchKernel", tid: int = 1
) -> dict[str, Any]:
    """The CPU runtime call that launches the GPU event with the same correlation."""
    return {
        "ph": "X",
        "cat": "cuda_runtime",
        "name": name,
        "pid": 100,
        "tid": tid,
        "ts": ts,
        "dur": dur,
        "args": {"correlation": correlation},
    }


def step(number: int, ts: float, dur: float) -> dict[str, Any]:
    """A ProfilerStep annotation."""
    return {
        "ph": "X",
        "cat": "user_annotation",
        "name": f"ProfilerStep#{number}",
        "pid": 100,
        "tid": 1,
        "ts": ts,
        "dur": dur,
    }


def cpu_op(name: str, ts: float, dur: float, *, tid: int = 1, **args: Any) -> dict[str, Any]:
    """A CPU op or annotation."""
    return {
        "ph": "X",
        "cat": "cpu_op",
        "name": name,
        "pid": 100,
        "tid": tid,
        "ts": ts,
        "dur": dur,
        "args": args,
    }


def document(
    events: list[dict[str, Any]],
    *,
    rank: int | None = 0,
    world_size: int | None = None,
    schema_version: int | None = 1,
    device: str | None = H100_NAME,
) -> dict[str, Any]:
    """A trace document around ``events``."""
    result: dict[str, Any] = {}
    if schema_version is not None:
        result["schemaVersion"] = schema_version
    if rank is not None:
        info: dict[str, Any] = {"rank": rank, "backend": "nccl"}
        if world_size is not None:
            info["world_size"] = world_size
        result["distributedInfo"] = info
    if device is not None:
        result["deviceProperties"] = [{"id": 0, "name": device}]
    result["traceEvents"] = [
        {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "ts": 0, "args": {}},
        *events,
    ]
    return result
