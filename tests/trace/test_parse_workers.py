"""How many processes read a large Kineto file: what the user asks; ``auto`` (what the CLI sets), the
machine's idle cores (two at least, four at most); unset, none (a Python program); never for a
small file."""

from __future__ import annotations

from pathlib import Path

import pytest

from lightspeed.errors import UserInputError
from lightspeed.trace.io import kineto_parallel


@pytest.fixture
def large(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "rank0.json"
    path.write_bytes(b"x" * 64)
    monkeypatch.setattr(kineto_parallel, "MIN_PARALLEL_BYTES", 32)
    monkeypatch.delenv(kineto_parallel.WORKERS_VARIABLE, raising=False)
    monkeypatch.setattr(kineto_parallel, "compiled_scanner", lambda: None)  # msgspec holds the GIL
    return path


@pytest.mark.parametrize(("asked", "workers"), [("auto", 0), ("2", 2)])
def test_with_the_compiled_scanner_auto_means_none(
    large: Path, monkeypatch: pytest.MonkeyPatch, asked: str, workers: int
) -> None:
    """The scanner releases the GIL: a thread beside this one beat worker processes (benchmarks)."""
    monkeypatch.setattr(kineto_parallel, "compiled_scanner", object)
    monkeypatch.setattr(kineto_parallel, "idle_cores", lambda: 15.0)
    monkeypatch.setenv(kineto_parallel.WORKERS_VARIABLE, asked)
    assert kineto_parallel.num_workers(large) == workers


@pytest.mark.parametrize(("idle", "workers"), [(0.0, 0), (1.4, 0), (1.6, 2), (2.6, 3), (15.0, 4)])
def test_auto_means_the_idle_cores(
    large: Path, monkeypatch: pytest.MonkeyPatch, idle: float, workers: int
) -> None:
    monkeypatch.setattr(kineto_parallel, "idle_cores", lambda: idle)
    monkeypatch.setenv(kineto_parallel.WORKERS_VARIABLE, "auto")
    assert kineto_parallel.num_workers(large) == workers


def test_a_program_that_asks_nothing_reads_serially(large: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kineto_parallel, "idle_cores", lambda: 15.0)
    assert kineto_parallel.num_workers(large) == 0


@pytest.mark.parametrize(("asked", "workers"), [("0", 0), ("3", 3), ("9", 4), (" AUTO ", 4)])
def test_what_the_user_asks_wins(
    large: Path, monkeypatch: pytest.MonkeyPatch, asked: str, workers: int
) -> None:
    monkeypatch.setattr(kineto_parallel, "idle_cores", lambda: 15.0)
    monkeypatch.setenv(kineto_parallel.WORKERS_VARIABLE, asked)
    assert kineto_parallel.num_workers(large) == workers


def test_a_small_file_is_read_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    small = tmp_path / "rank0.json"
    small.write_bytes(b"{}")
    monkeypatch.setattr(kineto_parallel, "idle_cores", lambda: 15.0)
    monkeypatch.setenv(kineto_parallel.WORKERS_VARIABLE, "4")
    assert kineto_parallel.num_workers(small) == 0


def test_idle_cores_is_never_negative() -> None:
    assert kineto_parallel.idle_cores() >= 0.0


def test_only_trace_commands_ask_for_idle_cores(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # the setting would otherwise reach the programs other commands start (`monitor run -- CMD`)
    import os

    from lightspeed.cli.main import main

    monkeypatch.delenv(kineto_parallel.WORKERS_VARIABLE, raising=False)
    assert main(["hw", "show", "h100-sxm", "--json"]) == 0
    assert kineto_parallel.WORKERS_VARIABLE not in os.environ
    assert main(["trace", "cache", "info", "--json"]) == 0
    assert os.environ[kineto_parallel.WORKERS_VARIABLE] == "auto"
    capsys.readouterr()


@pytest.mark.parametrize("asked", ["-2", "many", "nan", "1e400", "2.5"])
def test_a_bad_worker_count_says_what_to_give(
    large: Path, monkeypatch: pytest.MonkeyPatch, asked: str
) -> None:
    monkeypatch.setenv(kineto_parallel.WORKERS_VARIABLE, asked)
    with pytest.raises(UserInputError, match=r"LIGHTSPEED_PARSE_WORKERS=.* give 0 .* or auto"):
        kineto_parallel.num_workers(large)
