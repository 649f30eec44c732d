"""examples/train_tiny_gpt.py: a real crash (SIGKILL) and resume, then the ledger's buckets."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "train_tiny_gpt.py"


@pytest.mark.torch
def test_tiny_gpt_crash_and_resume_buckets(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    run_dir = tmp_path / "tiny"
    trace = tmp_path / "trace.json"
    done = subprocess.run(
        [
            sys.executable,
            str(EXAMPLE),
            "--quick",
            "--json",
            "--run-dir",
            str(run_dir),
            "--profile-trace",
            str(trace),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    ledger = json.loads(done.stdout)
    # --quick: 24 steps, checkpoint every 6, eval every 12, the first child dies after step 14
    # (crash_at = 24 * 3 // 5 = 14), so steps 12 and 13 are run twice.
    assert [segment["status"] for segment in ledger["segments"]] == ["crashed", "ok"]
    assert ledger["segments"][0]["num_wasted_steps"] == 2
    assert ledger["segments"][1]["first_step"] == 12
    assert ledger["steps"]["count"] == 24
    assert ledger["tokens"] == 24 * 8 * 32  # batch 8 x 32 tokens per useful step
    for bucket in ("init", "checkpoint_save", "checkpoint_restore", "eval", "wasted_progress", "recovery"):
        assert ledger["badput_s"][bucket] > 0, bucket
    parts = ledger["productive_s"] + sum(ledger["badput_s"].values())
    assert math.isclose(parts, ledger["total_s"], rel_tol=1e-9)
    assert ledger["num_restarts"] == 1
    assert ledger["num_failures"] == 1
    assert ledger["utilization"]["model_flop_per_token"] > 0
    # The Kineto trace of three steps of the first child.
    events = json.loads(trace.read_text())["traceEvents"]
    assert any(event.get("name") == "aten::addmm" for event in events)
