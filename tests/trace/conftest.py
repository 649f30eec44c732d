"""Fixtures of the trace tests: small Kineto-like traces whose answers can be worked out by hand.

Times are microseconds, as in Kineto traces. Real traces live in
``tests/fixtures/traces`` and ``tests/data/shared/data/traces`` (copies of ../shared, MIT). The test
run imports modules by path (``--import-mode=importlib``), so helpers reach
the tests as the ``kineto`` fixture.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

TRACE_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "traces"

H100_NAME = "NVIDIA H100 80GB HBM3"


def _real_trace(shared_root: Path, relative: str) -> Path:
    """A real trace folder: its fixture copy if there is one, else data/traces/<relative> of the copy."""
    copy = TRACE_FIXTURES / Path(relative).name
    if copy.is_dir():
        return copy
    path = shared_root / "data" / "traces" / relative
    if not path.exists():
        raise FileNotFoundError(f"{path} not found (the test data is part of the repository)")
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


WriteTrace = Callable[..., Path]


@pytest.fixture
def kineto() -> SimpleNamespace:
    """Builders of trace events and documents (``kineto.kernel(...)``, ``kineto.document(...)``)."""
    return SimpleNamespace(
        kernel=kernel, launch=launch, step=step, cpu_op=cpu_op, document=document, H100_NAME=H100_NAME
    )


@pytest.fixture
def shared_root(shared: Path) -> Path:
    """The repository's copy of ../shared (tests/data/shared)."""
    return shared


@pytest.fixture
def real_trace(shared_root: Path) -> Callable[[str], Path]:
    """Resolve a real trace folder by its path under ../shared/data/traces (fixture copy first)."""
    return lambda relative: _real_trace(shared_root, relative)


@pytest.fixture
def write_trace(tmp_path: Path) -> WriteTrace:
    """Write a trace document to ``tmp_path/name`` (gzip when the name ends in .gz)."""

    def _write(name: str, content: dict[str, Any] | list[Any] | str | bytes) -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        data = (
            content
            if isinstance(content, bytes)
            else (content if isinstance(content, str) else json.dumps(content)).encode()
        )
        path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
        return path

    return _write


# --- Nsight Systems exports built by hand ------------------------------------------------------
# The tables and columns are those of a real `nsys export --type sqlite` (a subset of the
# columns of ../shared/data/nsight/nsys/con_kernel.sqlite); times are nanoseconds.

# globalPid of processes 101 and 202 (pid in bits 24..47, a thread's globalTid adds its id below)
PID_A = (1 << 48) | (101 << 24)
PID_B = (1 << 48) | (202 << 24)


def write_nsys(
    path: Path,
    *,
    kernels: list[tuple[int, int, str, int, int, int]] = (),  # type: ignore[assignment]
    runtime: list[tuple[int, int, str, int, int]] = (),  # type: ignore[assignment]
    nvtx: list[tuple[int, int, str, int]] = (),  # type: ignore[assignment]
    gpu_name: str | None = H100_NAME,
    kernel_columns: str = "start, end, deviceId, contextId, streamId, correlationId, globalPid, "
    "demangledName, shortName",
    meta_version: str | None = "3.11.0",
) -> Path:
    """An export with kernels (start, end, name, stream, correlation, globalPid), runtime calls
    (start, end, name, globalTid, correlation; eventClass 0), NVTX push/pop ranges
    (start, end, text, globalTid) and one CUDA GPU."""
    import sqlite3

    strings: dict[str, int] = {}

    def sid(text: str) -> int:
        return strings.setdefault(text, len(strings))

    db = sqlite3.connect(path)
    db.execute(f"CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL ({kernel_columns})")
    columns = [c.strip() for c in kernel_columns.split(",")]
    for start, end, name, stream, correlation, pid in kernels:
        row = {
            "start": start,
            "end": end,
            "deviceId": 0,
            "contextId": 1,
            "streamId": stream,
            "correlationId": correlation,
            "globalPid": pid,
            "demangledName": sid(name + "(int)"),
            "shortName": sid(name),
        }
        db.execute(
            f"INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES ({', '.join('?' * len(columns))})",
            [row.get(c) for c in columns],
        )
    db.execute(
        "CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start, end, eventClass, globalTid, correlationId, nameId)"
    )
    for start, end, name, tid, correlation in runtime:
        db.execute(
            "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, 0, ?, ?, ?)",
            (start, end, tid, correlation, sid(name)),
        )
    db.execute("CREATE TABLE NVTX_EVENTS (start, end, eventType, text, globalTid, textId)")
    for start, end, text, tid in nvtx:
        db.execute("INSERT INTO NVTX_EVENTS VALUES (?, ?, 59, ?, ?, NULL)", (start, end, text, tid))
    if gpu_name is not None:
        db.execute("CREATE TABLE TARGET_INFO_GPU (id, name, smCount, cuDevice)")
        db.execute("INSERT INTO TARGET_INFO_GPU VALUES (0, ?, 132, 0)", (gpu_name,))
    if meta_version is not None:
        db.execute("CREATE TABLE EXPORT_META_DATA (name, value)")
        db.execute("INSERT INTO EXPORT_META_DATA VALUES ('EXPORT_SCHEMA_VERSION', ?)", (meta_version,))
    db.execute("CREATE TABLE StringIds (id, value)")
    db.executemany("INSERT INTO StringIds VALUES (?, ?)", [(i, s) for s, i in strings.items()])
    db.commit()
    db.close()
    return path


@pytest.fixture
def nsys() -> SimpleNamespace:
    """``nsys.write(path, kernels=..., runtime=..., nvtx=...)`` and the two process ids."""
    return SimpleNamespace(write=write_nsys, PID_A=PID_A, PID_B=PID_B)


# --- Nsight Compute raw page written by hand ---------------------------------------------------
# One saxpy kernel launched twice: the raw page's layout (a header of metric names, a row of units,
# one row per launch) with the metric names ncu uses; the values are made up for the test.
RAW_PAGE = (
    '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
    '"Device","CC","device__attribute_display_name","gpu__time_duration.sum",'
    '"sm__throughput.avg.pct_of_peak_sustained_elapsed",'
    '"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed","launch__waves_per_multiprocessor",'
    '"smsp__sass_thread_inst_executed_op_ffma_pred_on.sum","smsp__sass_thread_inst_executed_op_fadd_pred_on.sum",'
    '"smsp__sass_thread_inst_executed_op_fmul_pred_on.sum"\n'
    '"","","","","","","","","","","","","usecond","%","%","","inst","inst","inst"\n'
    '"0","42","app","host","saxpy(int, float, float *, float *)","1","7","(256, 1, 1)","(4096, 1, 1)","0",'
    '"9.0","NVIDIA H100 80GB HBM3","12.50","81.20","12.03","3.88","1,048,576","2,048","0"\n'
    '"1","42","app","host","saxpy(int, float, float *, float *)","1","7","(256, 1, 1)","(4096, 1, 1)","0",'
    '"9.0","NVIDIA H100 80GB HBM3","12.70","80.90","12.10","3.88","1,048,576","2,048","0"\n'
)


@pytest.fixture
def raw_ncu_csv(tmp_path: Path) -> Path:
    """``ncu --csv --page raw`` output of two saxpy launches (hand-written, see RAW_PAGE)."""
    path = tmp_path / "raw.csv"
    path.write_text(RAW_PAGE, encoding="utf-8")
    return path
