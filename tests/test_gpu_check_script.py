"""``benchmarks/gpu_check.sh`` outside a GPU machine: ``--help`` answers without running a check
or writing anything, and an interpreter without torch is one line with a fix and exit code 2."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "gpu_check.sh"


def _run(tmp_path: Path, *args: str, python: str = "python3") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OUT": str(tmp_path / "out"), "PYTHON": python}
    return subprocess.run(
        ["bash", str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=60, check=False
    )


def test_help_prints_usage_and_writes_nothing(tmp_path: Path) -> None:
    done = _run(tmp_path, "--help")
    assert done.returncode == 0
    assert done.stdout.startswith("usage: ")
    assert not (tmp_path / "out").exists()


def test_an_unknown_argument_is_refused_in_one_line(tmp_path: Path) -> None:
    done = _run(tmp_path, "--quick")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert "fix:" in done.stderr
    assert not (tmp_path / "out").exists()


def test_an_interpreter_without_torch_is_one_line_with_a_fix(tmp_path: Path) -> None:
    done = _run(tmp_path, python="false")  # `false -c ...` fails like a Python missing torch
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert "PYTHON" in done.stderr
    assert "fix:" in done.stderr
