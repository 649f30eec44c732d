"""``lightspeed tour --out``: a folder the tour cannot write is refused before anything runs, and a
step that fails says why in one line, marked failed, not skipped (review defect 11, docs/tour.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lightspeed.tour import steps as tour


@pytest.fixture
def ran(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The steps that ran (a stand-in step: the real ones are not the point here)."""
    calls: list[str] = []

    def probe(_: object) -> list[str]:
        calls.append("probe")
        return []

    monkeypatch.setattr(tour, "STEPS", (("probe", "Probe", probe),))
    return calls


def test_an_out_folder_under_a_missing_one_is_refused_first(run_cli, tmp_path: Path, ran: list[str]) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "typo" / "tour"
    result = run_cli("tour", "--quick", "--out", str(out), "--json")
    assert result.code == 2
    assert result.err.count("\n") == 1
    assert f"--out {out}: the folder {out.parent} does not exist" in result.err
    assert ran == []
    assert not out.parent.exists()  # a mistyped path makes no folders


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
def test_an_out_folder_that_cannot_be_written_is_refused_first(run_cli, ran: list[str]) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("tour", "--quick", "--out", "/proc/x", "--json")
    assert result.code == 2
    assert result.err.count("\n") == 1
    assert "--out /proc/x: the tour cannot write there" in result.err
    assert result.out == ""
    assert ran == []


def test_a_failing_example_fails_the_step_with_its_last_word(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A stand-in for the example that dies as it did with an unwritable --out: a traceback on stderr.
    example = tmp_path / "example.py"
    example.write_text(
        "import sys\n"
        "sys.stderr.write('Traceback (most recent call last):\\n    os.mkdir(self, mode)\\n'\n"
        "                 \"FileNotFoundError: [Errno 2] No such file or directory: '/proc/x'\\n\")\n"
        "sys.exit(1)\n"
    )
    monkeypatch.setattr(tour, "EXAMPLE", example)
    monkeypatch.setattr(tour, "require_extra", lambda *args: None)  # torch or not: the example is a stand-in
    state = tour.TourState(out_dir=tmp_path, quick=True, catalog=None, models=None)  # type: ignore[arg-type]
    step = tour.run_step("train", "Train", tour.step_train, state)
    assert step.status == "failed"
    assert step.reason == (
        "the tiny-GPT example failed (exit 1): "
        "FileNotFoundError: [Errno 2] No such file or directory: '/proc/x'"
    )


def test_a_file_a_step_cannot_write_fails_it(tmp_path: Path) -> None:
    def writes(_: object) -> list[str]:
        (tmp_path / "missing" / "report.html").write_text("x")
        return []

    state = tour.TourState(out_dir=tmp_path, quick=True, catalog=None, models=None)  # type: ignore[arg-type]
    step = tour.run_step("report", "Report", writes, state)
    assert step.status == "failed"
    assert step.reason == f"No such file or directory: {tmp_path / 'missing' / 'report.html'}"
