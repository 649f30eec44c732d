"""``lightspeed tour --quick``: every step runs or says why it was skipped; the report is written.

The whole quick tour runs here (it is the test CI runs): ~40 s on 2 cores
with PyTorch installed, a few seconds without it (training is then skipped).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from lightspeed.errors import MissingExtraError, UserInputError
from lightspeed.tour import NEXT_COMMANDS
from lightspeed.tour import steps as tour

pytestmark = pytest.mark.slow

STEP_KEYS = ["hardware", "bench", "train", "trace", "predict", "report"]
HAS_TORCH = importlib.util.find_spec("torch") is not None


def test_quick_tour_runs_every_step_and_writes_the_report(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "tour"
    result = run_cli("tour", "--quick", "--out", str(out), "--json")
    assert result.code == 0, result.err
    payload = json.loads(result.out)
    steps = {step["key"]: step for step in payload["steps"]}
    assert list(steps) == STEP_KEYS
    for step in steps.values():
        assert step["status"] in {"ok", "skipped"}, step
        assert step["status"] == "ok" or step["reason"], step  # a skip always says why
    if HAS_TORCH:
        assert [s["status"] for s in payload["steps"]] == ["ok"] * len(STEP_KEYS)
        assert (out / "tiny-gpt" / "trace.json").is_file()
    else:
        assert steps["bench"]["status"] == steps["train"]["status"] == "skipped"
        assert "torch" in steps["train"]["reason"]
    # The predictions quote the engine's numbers for the seed's scenarios.
    predict = "\n".join(steps["predict"]["summary"])
    assert "1.74e+28 FLOP" in predict  # 6 x 1e14 params x 2.9e13 tokens
    assert "200 TB (181.9 TiB)" in predict  # 1e14 params x 2 bytes
    assert "DeepSeek-V3" in predict
    assert "GB200 NVL72 / H100 per GPU" in predict  # GPT-MoE-1.8T serving, seed claim 10
    assert "small-message latency" in predict  # NVL72 vs InfiniBand fabric figures, seed claim 12
    # Both ranks of the shipped GPU trace are analysed.
    assert sum("shipped GPU trace rank" in line for line in steps["trace"]["summary"]) == 2
    report = Path(payload["report_path"])
    assert report == out / "report.html"
    page = report.read_text(encoding="utf-8")
    assert "Trace temporal breakdown per rank" in page
    assert page.count("data:image/svg+xml;base64,") >= 4
    assert (out / "plots").is_dir()
    assert Path(payload["store_path"]).is_file()


def test_tour_prints_where_the_report_is(run_cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    # Only the cheap steps: the point is the rendering, not the work.
    monkeypatch.setattr(tour, "STEPS", (tour.STEPS[0], tour.STEPS[4], tour.STEPS[5]))
    result = run_cli("tour", "--quick", "--out", str(tmp_path / "t"))
    assert result.code == 0, result.err
    assert "Detect the hardware" in result.out
    assert f"report: {tmp_path / 't' / 'report.html'}" in result.out.replace("\n", "")
    # it ends with what to try next on the user's own model, cluster and trace
    tail = result.out[result.out.index("Next, on your own") :]
    assert [line.strip() for line in tail.splitlines() if line.strip().startswith("lightspeed ")] == [
        command.command for command in NEXT_COMMANDS
    ]


def test_missing_extra_skips_and_user_error_fails(tmp_path: Path) -> None:
    state = tour.TourState(out_dir=tmp_path, quick=True, catalog=None, models=None)

    def needs_torch(_: object) -> list[str]:
        raise MissingExtraError("torch", "bench", "training")

    def broken(_: object) -> list[str]:
        raise UserInputError("bad value")

    skipped = tour.run_step("x", "X", needs_torch, state)
    assert skipped.status == "skipped"
    assert "pip install 'lightspeed[bench]'" in skipped.reason
    failed = tour.run_step("y", "Y", broken, state)
    assert failed.status == "failed"
    assert failed.reason == "bad value"


def test_training_without_the_example_is_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tour, "EXAMPLE", tmp_path / "missing.py")
    state = tour.TourState(out_dir=tmp_path, quick=True, catalog=None, models=None)
    step = tour.run_step("train", "train", tour.step_train, state)
    assert step.status == "skipped"
    assert "source repository" in step.reason or "torch" in step.reason
