"""Reading event logs: bad input names the file and line; crash leftovers are skipped."""

from __future__ import annotations

import contextlib
import json
import re
import tempfile
import warnings
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lightspeed.errors import DataFileError
from lightspeed.goodput import TruncatedLogWarning, read_run


def test_truncated_last_line_is_skipped_with_a_warning(hand_log) -> None:  # type: ignore[no-untyped-def]
    log = hand_log().start(0.0).step(0, 0.0, 1.0).step(1, 1.0, 2.0)
    log.raw('{"v": 1, "seg": "s1", "type": "step", "step": 2, "sta')
    path = log.write(trailing_newline=False)
    with pytest.warns(TruncatedLogWarning, match=rf"{path.name}:4"):
        run = read_run(path)
    segment = run.ranks[0].segments[0]
    assert [step.step for step in segment.steps] == [0, 1]
    assert segment.status == "crashed"
    assert run.ranks[0].num_skipped_lines == 1


def test_a_quiet_read_skips_the_cut_line_without_a_warning(hand_log) -> None:  # type: ignore[no-untyped-def]
    # the exporter reads a live run on a background thread, whose last line may be half written:
    # it asks for no warning instead of changing the process's warning filters from that thread
    log = hand_log().start(0.0).step(0, 0.0, 1.0).raw('{"v": 1, "seg": "s1", "ty')
    path = log.write(trailing_newline=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", TruncatedLogWarning)
        run = read_run(path, quiet=True)
    assert [step.step for step in run.ranks[0].segments[0].steps] == [0]
    assert run.ranks[0].num_skipped_lines == 1


def test_cut_line_before_a_restart_is_skipped(hand_log) -> None:  # type: ignore[no-untyped-def]
    log = hand_log().start(0.0).step(0, 0.0, 1.0).raw('{"v": 1, "seg": "s1", "ty')
    log.start(5.0, segment="s2").step(1, 5.0, 6.0).end(6.0)
    with pytest.warns(TruncatedLogWarning, match=":3"):
        run = read_run(log.write())
    assert len(run.ranks[0].segments) == 2


def test_corrupt_line_in_the_middle_is_an_error_naming_the_line(hand_log) -> None:  # type: ignore[no-untyped-def]
    log = hand_log().start(0.0).raw("not json at all").step(0, 0.0, 1.0).end(1.0)
    path = log.write()
    with pytest.raises(DataFileError, match=rf"{path.name}:2: not a JSON object"):
        read_run(path)


def test_mixed_run_ids_name_both_files(hand_log) -> None:  # type: ignore[no-untyped-def]
    hand_log(rank=0, world_size=2, run_id="alpha").start(0.0).end(1.0).write()
    path = hand_log(rank=1, world_size=2, run_id="beta").start(0.0).end(1.0).write()
    with pytest.raises(DataFileError, match=r"run id 'beta' differs from 'alpha'.*rank-00000.jsonl:1"):
        read_run(path.parent)


def test_clock_going_backwards_between_segments(hand_log) -> None:  # type: ignore[no-untyped-def]
    log = hand_log().start(100.0).step(0, 100.0, 110.0).start(50.0, segment="s2").end(60.0)
    with pytest.raises(DataFileError, match=r":3: this job segment starts 60.000 s before"):
        read_run(log.write())


def test_event_before_its_job_start(hand_log) -> None:  # type: ignore[no-untyped-def]
    log = hand_log().start(10.0).step(0, 5.0, 11.0)
    with pytest.raises(DataFileError, match=r":2: event starts 5.000 s before its job_start"):
        read_run(log.write())


def test_event_ending_before_it_starts(hand_log) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(DataFileError, match=r":2: event ends before it starts"):
        read_run(hand_log().start(0.0).step(0, 3.0, 2.0).write())


def test_a_time_beyond_int64_is_one_line(hand_log) -> None:  # type: ignore[no-untyped-def]
    path = hand_log().start(0.0).step(0, 1.0, 2.0).write()
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[1] = re.sub(r'"end_ns": ?\d+', f'"end_ns": {2**63}', lines[1])
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(
        DataFileError, match=r":2: expected a whole number from 0 to .* \(int64\); field 'end_ns'"
    ):
        read_run(path)


def test_two_processes_in_one_rank_file(hand_log) -> None:  # type: ignore[no-untyped-def]
    log = hand_log().start(0.0)
    stranger = {"v": 1, "seg": "other", "type": "step", "step": 0, "start_ns": 1, "end_ns": 2}
    log.raw(json.dumps(stranger))
    with pytest.raises(DataFileError, match=r":2: event of another job segment"):
        read_run(log.write())


def test_newer_schema_version(hand_log) -> None:  # type: ignore[no-untyped-def]
    log = hand_log().raw('{"v": 2, "seg": "s", "type": "job_start"}')
    with pytest.raises(DataFileError, match=r":1: event schema version 2 is not 1.*reads version 1"):
        read_run(log.write())


def test_missing_directory_and_empty_directory(tmp_path: Path) -> None:
    with pytest.raises(DataFileError, match="no such file"):
        read_run(tmp_path / "nope.jsonl")
    with pytest.raises(DataFileError, match=r"no rank-\*\.jsonl event logs"):
        read_run(tmp_path)


def test_missing_ranks_are_listed(hand_log) -> None:  # type: ignore[no-untyped-def]
    for rank in (0, 1, 5):
        run_dir = hand_log(rank=rank, world_size=8).start(0.0).end(1.0).write().parent
    run = read_run(run_dir)
    assert run.partial
    assert run.missing_ranks == (2, 3, 4, 6, 7)
    assert "rank(s) 2-4, 6-7" in run.notes[0]


_VALID = (
    "\n".join(
        [
            '{"v":1,"seg":"a","type":"job_start","t_ns":1000000000,"run_id":"r","rank":0,"world_size":1}',
            '{"v":1,"seg":"a","type":"step","step":0,"start_ns":1000000000,"end_ns":2000000000,"tokens":5}',
            '{"v":1,"seg":"a","type":"phase","phase":"eval","step":1,"start_ns":2000000000,"end_ns":2500000000}',
            '{"v":1,"seg":"a","type":"step","step":1,"start_ns":2500000000,"end_ns":3000000000,"tokens":5}',
            '{"v":1,"seg":"a","type":"job_end","t_ns":3000000000,"status":"ok"}',
        ]
    )
    + "\n"
)


def _is_json(line: str) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False


@settings(max_examples=120, deadline=None)
@given(st.integers(0, len(_VALID)))
def test_a_log_cut_anywhere_reads_its_complete_lines(cut: int) -> None:
    text = _VALID[:cut]
    lines = [line for line in text.split("\n") if line]
    whole = [line for line in lines if _is_json(line)]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "rank-00000.jsonl"
        path.write_text(text, encoding="utf-8")
        if not whole:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", TruncatedLogWarning)
                with pytest.raises(DataFileError):
                    read_run(path)
            return
        if len(whole) < len(lines):  # the last line is cut inside its JSON
            with pytest.warns(TruncatedLogWarning):
                run = read_run(path)
        else:
            run = read_run(path)
    segment = run.ranks[0].segments[0]
    events = [line for line in whole if '"step",' in line or '"phase",' in line]
    assert len(segment.steps) + len(segment.phases) == len(events)
    assert (segment.status == "ok") == any('"job_end"' in line for line in whole)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.binary(max_size=80), max_size=6))
def test_garbage_lines_raise_only_data_file_errors(garbage: list[bytes]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "rank-00000.jsonl"
        path.write_bytes(_VALID.encode() + b"\n".join(garbage))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TruncatedLogWarning)
            with contextlib.suppress(DataFileError):
                read_run(path)
