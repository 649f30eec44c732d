"""examples/train_tiny_gpt.py refuses bad options in one line, exit 2, before any training."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "train_tiny_gpt.py"


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        (["--checkpoint-every", "0"], "--checkpoint-every must be 1 or more"),
        (["--eval-every", "0"], "--eval-every must be 1 or more"),
        (["--eval-every", "-3"], "--eval-every must be 1 or more (steps between them), got -3"),
        (["--steps", "0"], "--steps must be 2 or more"),
        (["--steps", "-5"], "got -5"),
        (["--steps", "1"], "--steps must be 2 or more"),
        (["--peak-tflops", "-1"], "--peak-tflops must be a finite number > 0"),
        (["--peak-tflops", "nan"], "--peak-tflops must be a finite number > 0"),
        (["--crash-at", "30"], "--crash-at must be between 1 and --steps - 1 (23, --quick runs 24 steps"),
    ],
)
def test_bad_options_fail_in_one_line(tmp_path: Path, options: list[str], fragment: str) -> None:
    run_dir = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), "--quick", "--run-dir", str(run_dir), *options],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("train_tiny_gpt.py: error: ")
    assert fragment in last
    assert "--crash-at" not in last or "--crash-at" in options  # no word about an option not given
    assert not run_dir.exists()  # refused before the run folder or any training


def test_the_fewest_steps_get_a_crash_step_inside_the_run() -> None:
    """With --steps 2 the default crash step is 1 (before: max(2, 2 * 3 // 5) = 2, refused)."""
    spec = importlib.util.spec_from_file_location("g_train_tiny_gpt", EXAMPLE)
    assert spec is not None
    assert spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    args = example.parse_args(["--steps", "2"])
    assert args.crash_at == 1
