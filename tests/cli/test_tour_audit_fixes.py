"""The tour audit's fixes: a ``--quick`` tiny GPT (a smaller model) is stored and compared apart
from the full one, and an empty ``--out`` is refused rather than taken as the current folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from lightspeed.goodput import Ledger
from lightspeed.store import open_store
from lightspeed.tour import steps as tour

# A stand-in for examples/train_tiny_gpt.py: a real goodput run (two 1 ms steps) in --run-dir and
# the ledger's JSON on stdout; what matters here is how the tour stores it, not the training.
STAND_IN = """
import sys, time
from pathlib import Path
from lightspeed.goodput import Tracker

run_dir = Path(next(arg for arg in sys.argv if arg.startswith("--run-dir=")).partition("=")[2])
with Tracker(run_dir, flush_interval_s=0.05) as tracker:
    for _ in range(2):
        with tracker.step(tokens=10):
            time.sleep(0.001)
print("{}")
"""


@pytest.fixture
def stand_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    example = tmp_path / "example.py"
    example.write_text(STAND_IN)
    monkeypatch.setattr(tour, "EXAMPLE", example)
    monkeypatch.setattr(tour, "require_extra", lambda *args: None)  # torch or not: a stand-in


def _train(out: Path, *, quick: bool) -> tour.TourState:
    out.mkdir()
    state = tour.TourState(out_dir=out, quick=quick, catalog=None, models=None)  # type: ignore[arg-type]
    step = tour.run_step("train", "Train", tour.step_train, state)
    assert step.status == "ok", step.reason
    return state


def test_a_quick_and_a_full_tiny_gpt_are_stored_under_two_names(tmp_path: Path, stand_in: None) -> None:
    _train(tmp_path / "full", quick=False)
    _train(tmp_path / "quick", quick=True)
    with open_store(create=False) as store:
        names = {(record.name, record.metric) for record in store.records(kind="goodput")}
    assert names == {
        ("tiny-gpt", "goodput_fraction"),
        ("tiny-gpt", "step_time_s"),
        ("tiny-gpt-quick", "goodput_fraction"),  # 2 layers x 64 wide: another model, another metric
        ("tiny-gpt-quick", "step_time_s"),
    }


class _AskedError(Exception):
    """Stops step_report once it has asked for its history (the rest writes the report)."""


@pytest.mark.parametrize(("quick", "name"), [(False, "tiny-gpt"), (True, "tiny-gpt-quick")])
def test_the_report_draws_the_history_of_the_same_mode_only(
    tmp_path: Path, stand_in: None, monkeypatch: pytest.MonkeyPatch, quick: bool, name: str
) -> None:
    _train(tmp_path / "full", quick=False)
    state = _train(tmp_path / "quick", quick=True)
    state.quick = quick
    real = tour.metric_history_or_reason
    asked: list[tuple[object, object]] = []

    def history(**kwargs: object) -> object:
        asked.append((kwargs["name"], kwargs["metric"]))
        found, reason = real(**kwargs)  # type: ignore[arg-type]
        assert found is not None, reason
        assert len(found.points) == 1  # one run of this mode, not the other mode's as well
        raise _AskedError

    monkeypatch.setattr(tour, "metric_history_or_reason", history)
    assert isinstance(state.ledgers[0], Ledger)
    with pytest.raises(_AskedError):
        tour.step_report(state)
    assert asked == [(name, "step_time_s")]


@pytest.mark.parametrize("out", ["", "  "])
def test_an_empty_out_is_refused_in_one_line(run_cli, tmp_path: Path, monkeypatch, out: str) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    ran: list[str] = []
    monkeypatch.setattr(tour, "STEPS", (("probe", "Probe", lambda state: ran.append("probe") or []),))
    result = run_cli("tour", "--quick", "--out", out)
    assert result.code == 2
    assert result.err.count("\n") == 1
    assert "--out " in result.err
    assert "is empty: name the folder for the report" in result.err
    assert ran == []
    assert list(tmp_path.iterdir()) == []  # nothing written into the current folder


def test_an_explicit_current_folder_is_still_accepted(run_cli, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(tour, "STEPS", (("probe", "Probe", lambda state: []),))
    result = run_cli("tour", "--quick", "--out", ".", "--json")
    assert result.code == 0, result.err
