"""Shared fixtures: paths to ../shared data, CLI runner, GPU skip (the isolated home is in ../conftest.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("LIGHTSPEED_SHARED", REPO.parent / "shared"))
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if _cuda_available():
        return
    skip_gpu = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip_gpu)


@pytest.fixture
def shared() -> Path:
    """The read-only ../shared folder (data, validation); skips when absent."""
    if not SHARED.is_dir():
        pytest.skip(f"shared data not found at {SHARED}")
    return SHARED


class CliResult:
    """Exit code and captured streams of one ``lightspeed`` invocation."""

    def __init__(self, code: int, out: str, err: str) -> None:
        self.code = code
        self.out = out
        self.err = err


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str]):  # type: ignore[no-untyped-def]
    """Call ``lightspeed.cli.main.main(args)`` in-process and capture its output."""
    from lightspeed.cli.main import main

    def _run(*args: str) -> CliResult:
        capsys.readouterr()
        code = main(list(args))
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return _run


def _write_step_trace(path: Path, step_us: list[int], rank: int | None = None) -> Path:
    """A minimal Kineto trace: one ProfilerStep#N user annotation per step, back to back."""
    events, start = [], 1_000
    for number, duration in enumerate(step_us):
        events.append(
            {
                "ph": "X",
                "cat": "user_annotation",
                "name": f"ProfilerStep#{number}",
                "pid": 1,
                "tid": 1,
                "ts": start,
                "dur": duration,
            }
        )
        start += duration
    document: dict[str, object] = {"schemaVersion": 1, "traceEvents": events}
    if rank is not None:
        document["distributedInfo"] = {"rank": rank, "world_size": 2, "backend": "nccl"}
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


@pytest.fixture
def write_step_trace():  # type: ignore[no-untyped-def]
    """``write_step_trace(path, step_us, rank=None)`` writes a trace of ProfilerStep spans."""
    return _write_step_trace
