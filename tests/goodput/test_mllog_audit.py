"""MLPerf result logs that are malformed or unusual: refused with the line, or read with a note.

Golden values come from the log lines themselves (times in ms, copied by hand or parsed here with
the standard ``json`` module, independently of lightspeed's reader).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lightspeed.errors import DataFileError
from lightspeed.goodput import mllog_ledger, read_mllog
from lightspeed.report.goodput import ledger_notes

V4 = Path("data/mlperf/training_v4.0")
H200_LORA = V4 / "NVIDIA/results/h200_ngc24.04_nemo/llama2_70b_lora/result_0.txt"
INTEL_GPT3 = V4 / "Intel-HabanaLabs/results/HLS-Gaudi2-N128-PT/gpt3/result_0.txt"

# The H200 llama2_70b_lora log by hand: run_start, run_stop and its five eval intervals (ms).
RUN_START_MS = 1714993577687
RUN_STOP_MS = 1714994988899
EVALS_MS = [
    1714994247281 - 1714994217162,
    1714994432714 - 1714994402405,
    1714994617987 - 1714994587741,
    1714994803516 - 1714994773197,
    1714994988899 - 1714994958594,
]


def _edited(shared: Path, tmp_path: Path, edit) -> Path:  # type: ignore[no-untyped-def]
    lines = (shared / H200_LORA).read_text(encoding="utf-8").splitlines()
    path = tmp_path / "result_0.txt"
    path.write_text("\n".join(edit(lines)) + "\n", encoding="utf-8")
    return path


def _line(key: str, time_ms: int, **metadata: object) -> str:
    body = {
        "time_ms": time_ms,
        "event_type": "POINT_IN_TIME",
        "key": key,
        "value": None,
        "metadata": metadata,
    }
    return ":::MLLOG " + json.dumps(body)


def _write(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "result_0.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _run(*middle: str) -> list[str]:
    return [_line("init_start", 0), _line("init_stop", 10), _line("run_start", 10), *middle]


# -- 1: a time that goes backwards ---------------------------------------------------------------


def test_a_block_stop_before_run_start_is_refused_with_its_line(
    shared: Path, tmp_path: Path, run_cli
) -> None:  # type: ignore[no-untyped-def]
    """Line 32 is the second block_stop (1714994402405 ms); set 4.4e6 ms earlier it falls before
    run_start: the old reader took it and reported a 3490 s segment in a 1499 s wall."""
    path = _edited(
        shared,
        tmp_path,
        lambda lines: [
            line.replace('"time_ms": 1714994402405', '"time_ms": 1714990000000') for line in lines
        ],
    )
    with pytest.raises(
        DataFileError, match=r"result_0.txt:32: block_stop at 1714990000000 ms is before run_start"
    ):
        read_mllog(path)
    result = run_cli("goodput", "report", str(path))
    assert result.code == 2
    assert "the clock went backwards" in result.err
    assert len(result.err.strip().splitlines()) == 1


def test_a_block_that_ends_before_it_starts_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, _run(_line("block_start", 50), _line("block_stop", 40), _line("run_stop", 100)))
    with pytest.raises(DataFileError, match=r":5: block_stop at 40 ms is before its block_start at 50 ms"):
        read_mllog(path)


def test_a_block_that_starts_before_the_previous_one_ends_is_refused(tmp_path: Path) -> None:
    blocks = (
        _line("block_start", 10),
        _line("block_stop", 60),
        _line("block_start", 30),
        _line("block_stop", 90),
    )
    path = _write(tmp_path, _run(*blocks, _line("run_stop", 100)))
    with pytest.raises(
        DataFileError, match=r":6: block_start at 30 ms is before the previous block's end at 60"
    ):
        read_mllog(path)


def test_an_evaluation_that_ends_before_it_starts_is_refused(tmp_path: Path) -> None:
    middle = (
        _line("block_start", 10),
        _line("eval_start", 50),
        _line("eval_stop", 20),
        _line("block_stop", 90),
    )
    path = _write(tmp_path, _run(*middle, _line("run_stop", 100)))
    with pytest.raises(DataFileError, match=r":6: eval_stop at 20 ms is before its eval_start at 50 ms"):
        read_mllog(path)


def test_an_evaluation_after_run_stop_is_refused(tmp_path: Path) -> None:
    middle = (_line("block_start", 10), _line("block_stop", 90), _line("run_stop", 100))
    path = _write(tmp_path, _run(*middle, _line("eval_accuracy", 150)))
    with pytest.raises(DataFileError, match=r":7: eval_accuracy at 150 ms is after run_stop at 100 ms"):
        read_mllog(path)


# -- 2: block_start without its block_stop --------------------------------------------------------


def test_missing_block_stops_are_refused_at_the_second_block_start(shared: Path, tmp_path: Path) -> None:
    """Without its block_stop lines (26, 32, ...) the second block_start, line 30 of the original,
    becomes line 29; the first block_start is line 24."""
    path = _edited(shared, tmp_path, lambda lines: [line for line in lines if "block_stop" not in line])
    with pytest.raises(
        DataFileError,
        match=r"result_0.txt:29: a second block_start: the block started at line 24 has no block_stop",
    ):
        read_mllog(path)


def test_a_second_eval_start_without_eval_stop_is_refused(tmp_path: Path) -> None:
    middle = (_line("block_start", 10), _line("eval_start", 20), _line("eval_start", 30))
    path = _write(tmp_path, _run(*middle, _line("block_stop", 90), _line("run_stop", 100)))
    with pytest.raises(DataFileError, match=r":6: a second eval_start: the eval started at line 5"):
        read_mllog(path)


# -- 3: a log with no training blocks ------------------------------------------------------------


def test_a_log_without_blocks_trains_from_run_start_to_run_stop_less_evaluation(
    shared: Path, tmp_path: Path
) -> None:
    path = _edited(
        shared,
        tmp_path,
        lambda lines: [line for line in lines if "block_start" not in line and "block_stop" not in line],
    )
    ledger = mllog_ledger(log=read_mllog(path))
    # run_start .. run_stop less the five evaluations (the old reader gave productive 0 s while
    # tokens_per_s counted every token)
    assert ledger.productive_s == pytest.approx((RUN_STOP_MS - RUN_START_MS - sum(EVALS_MS)) / 1000)
    assert ledger.badput_s["eval"] == pytest.approx(sum(EVALS_MS) / 1000)
    assert ledger.tokens == 3072 * 8192
    assert ledger.productive_tokens_per_s == pytest.approx(ledger.tokens / ledger.productive_s)
    assert any("marks no training blocks" in note for note in ledger.notes)
    assert ledger.steps.count == 1


# -- 4: an aborted run ---------------------------------------------------------------------------


def test_an_aborted_run_says_its_time_to_train_is_not_a_result(shared: Path, tmp_path: Path) -> None:
    path = _edited(
        shared,
        tmp_path,
        lambda lines: [line.replace('"status": "success"', '"status": "aborted"') for line in lines],
    )
    ledger = mllog_ledger(log=read_mllog(path))
    assert ledger.details["status"] == "aborted"
    notes = ledger_notes(ledger)  # what the terminal table and the HTML report's goodput section print
    assert any("'aborted'" in note and "not a valid MLPerf result" in note for note in notes)
    success = mllog_ledger(log=read_mllog(shared / H200_LORA))
    assert not any("valid MLPerf result" in note for note in success.notes)


# -- 5: block statistics without the evaluations inside blocks -----------------------------------


def test_block_statistics_leave_out_evaluations_inside_the_block(shared: Path) -> None:
    """Intel-HabanaLabs logs one block with its evaluations inside: the block's training time is
    block_stop - block_start less every eval_stop - eval_start."""
    times: dict[str, list[int]] = {"block_start": [], "block_stop": [], "eval_start": [], "eval_stop": []}
    for line in (shared / INTEL_GPT3).read_text(encoding="utf-8").splitlines():
        if line.startswith(":::MLLOG "):
            event = json.loads(line[len(":::MLLOG ") :])
            times.setdefault(event["key"], []).append(event["time_ms"])
    assert len(times["block_start"]) == len(times["block_stop"]) == 1
    evals_ms = sum(stop - start for start, stop in zip(times["eval_start"], times["eval_stop"], strict=True))
    training_ms = times["block_stop"][0] - times["block_start"][0] - evals_ms
    ledger = mllog_ledger(log=read_mllog(shared / INTEL_GPT3))
    assert ledger.steps.count == 1
    assert ledger.steps.total_s == pytest.approx(training_ms / 1000)
    assert ledger.steps.total_s == pytest.approx(ledger.productive_s)
