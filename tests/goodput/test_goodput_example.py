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
def test_tiny_gpt_crash_and_resume_buckets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
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
            "--tensorboard",
            str(tmp_path / "tb"),
            "--mlflow",
            str(tmp_path / "mlruns"),
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
    _sinks_read_back(tmp_path, ledger, monkeypatch)


def _sinks_read_back(tmp_path: Path, ledger: dict, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[type-arg]
    """TensorBoard and MLflow read what both segments and the parent logged."""
    from mlflow.tracking import MlflowClient
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    board = EventAccumulator(str(tmp_path / "tb"))
    board.Reload()
    steps = {event.step for event in board.Scalars("lightspeed/step_time_s")}
    assert steps == set(range(24))  # the killed segment's steps up to its last flush, then the rest
    goodput = board.Scalars("lightspeed/ledger/goodput_fraction")[-1].value
    assert goodput == pytest.approx(ledger["goodput_fraction"], rel=1e-6)
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    client = MlflowClient(tracking_uri=(tmp_path / "mlruns").as_uri())
    run_id = (tmp_path / "tiny" / "mlflow_run_id").read_text()
    run = client.get_run(run_id)
    assert run.info.status == "FINISHED"
    history = client.get_metric_history(run_id, "lightspeed/step_time_s")
    assert {metric.step for metric in history} == set(range(24))
    assert len(history) == 26  # steps 12 and 13 ran twice (wasted progress)
    wasted = run.data.metrics["lightspeed/ledger/badput/wasted_progress_s"]
    assert wasted == pytest.approx(ledger["badput_s"]["wasted_progress"], rel=1e-9)
