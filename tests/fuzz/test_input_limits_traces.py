"""Request traces (``simulate --trace``) past what can be read or simulated: one line, exit 2.

Before: 1,000 nested brackets on a JSONL line raised ``RecursionError``; a 5,000-digit token count
raised ``int()``'s 4,300-digit ``ValueError`` (JSONL) or was echoed whole as "not finite" (CSV); a
400-digit one raised ``OverflowError``; a cell over 131,072 characters raised ``csv.Error``; an
arrival at 1e17 s ran, every latency 0 and the token rate infinite (a float64 resolves 16 s
there); and ``--warmup`` was checked against ``--requests``, not the trace's own requests.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fuzzing import check
from lightspeed.errors import DataFileError, UserInputError
from lightspeed.sol.serve import ServingWorkload, load_lengths, load_request_trace

SIMULATE = ["simulate", "--model", "llama-3-8b", "--system", "dgx-h100", "--gpus", "1"]
DIGITS = "9" * 5000
HEADER = "arrival_s,input_tokens,output_tokens\n"


def _trace(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def _refused(path: Path, *parts: str) -> str:
    with pytest.raises(DataFileError) as error:
        load_request_trace(path)
    message = str(error.value)
    for part in parts:
        assert part in message, message
    assert "9" * 41 not in message, message
    assert len(message) < 400, message
    return message


@pytest.mark.parametrize("suffix", [".jsonl", ".json"])
def test_deep_nesting_is_refused_by_the_bounded_reader(tmp_path: Path, suffix: str) -> None:
    path = _trace(
        tmp_path,
        f"deep{suffix}",
        '{"arrival_s": 0, "input_tokens": 5, "output_tokens": 5}\n' + "[" * 1000 + "]" * 1000 + "\n",
    )
    _refused(path, f"deep{suffix}:2: nested 1000 levels deep, above the limit of 100")


def test_deep_nesting_through_the_cli(tmp_path: Path) -> None:
    path = _trace(tmp_path, "deep.jsonl", "[" * 1000 + "]" * 1000 + "\n")
    outcome = check([*SIMULATE, "--trace", str(path)])
    assert outcome.code == 2
    assert "levels deep" in outcome.err


@pytest.mark.parametrize("digits", [5000, 400])
def test_a_huge_token_count_in_jsonl_is_too_large(tmp_path: Path, digits: int) -> None:
    line = f'{{"arrival_s": 0, "input_tokens": {"9" * digits}, "output_tokens": 5}}\n'
    path = _trace(tmp_path, "big.jsonl", line)
    _refused(path, "big.jsonl:1: a number too large", "'input_tokens'", f"({digits:,} characters)")


def test_a_huge_token_count_in_csv_is_too_large_and_cut_short(tmp_path: Path) -> None:
    path = _trace(tmp_path, "big.csv", f"{HEADER}0,{DIGITS},5\n")
    _refused(
        path, "big.csv:2: a number too large", "'input_tokens'", "(5,000 characters)", "1 to 134,217,728"
    )


def test_the_cli_refuses_a_5000_digit_token_count(tmp_path: Path) -> None:
    path = _trace(tmp_path, "big.jsonl", f'{{"arrival_s":0,"input_tokens":{DIGITS},"output_tokens":5}}\n')
    outcome = check([*SIMULATE, "--trace", str(path)])
    assert outcome.code == 2
    assert "too large" in outcome.err
    assert "9" * 41 not in outcome.err


def test_a_cell_over_the_csv_limit_names_its_line(tmp_path: Path) -> None:
    path = _trace(tmp_path, "wide.csv", f"{HEADER}0,100,50\n0,{'9' * 140_000},5\n")
    _refused(path, "wide.csv:3: not a readable CSV table")


def test_written_infinity_is_still_not_finite(tmp_path: Path) -> None:
    _refused(_trace(tmp_path, "inf.csv", f"{HEADER}inf,100,50\n"), "must be a finite number >= 0")
    line = '{"arrival_s": Infinity, "input_tokens": 5, "output_tokens": 5}\n'
    _refused(_trace(tmp_path, "inf.jsonl", line), "must be a finite number >= 0")


def test_an_arrival_past_the_bound_is_a_unit_slip(tmp_path: Path) -> None:
    path = _trace(tmp_path, "far.csv", f"{HEADER}0,100,50\n1e17,100,50\n")
    _refused(path, "far.csv:3: 1e+17 s is above the limit of 1e+10 s", "'arrival_s'", "in nanoseconds by 1e9")
    outcome = check([*SIMULATE, "--trace", str(path)])
    assert outcome.code == 2
    assert "seconds" in outcome.err


def test_a_trace_spanning_years_is_a_unit_slip(tmp_path: Path) -> None:
    path = _trace(tmp_path, "span.csv", f"{HEADER}5,100,50\n2e8,100,50\n7,100,50\n")
    _refused(
        path, "span.csv:3: the trace spans 2e+08 s", "above the limit of 1e+08 s", "in microseconds by 1e6"
    )


def test_unix_time_in_seconds_and_ordinary_traces_still_read(tmp_path: Path) -> None:
    epoch = load_request_trace(_trace(tmp_path, "epoch.csv", f"{HEADER}1700000005.5,100,50\n1.7e9,300,40\n"))
    assert epoch.arrival_s == (0.0, 5.5)
    assert epoch.input_tokens == (300, 100)
    jsonl = _trace(tmp_path, "t.jsonl", '{"arrival_s": 0.5, "input_tokens": 7, "output_tokens": 2.0}\n')
    assert load_request_trace(jsonl).output_tokens == (2,)


def test_warmup_is_checked_against_the_requests_the_trace_holds(tmp_path: Path) -> None:
    trace = load_request_trace(
        _trace(tmp_path, "four.csv", HEADER + "".join(f"{i},100,50\n" for i in range(4)))
    )
    with pytest.raises(UserInputError, match=r"--warmup 4 must leave requests to measure.*the 4 requests"):
        ServingWorkload(trace=trace, num_requests=2000, warmup_requests=4)
    assert ServingWorkload(trace=trace, num_requests=2000, warmup_requests=3).num_simulated == 4
    with pytest.raises(UserInputError, match=r"fewer than --requests \(3\)"):
        ServingWorkload(trace=trace, num_requests=3, warmup_requests=3)


def test_warmup_through_the_cli(tmp_path: Path) -> None:
    path = _trace(tmp_path, "four.csv", HEADER + "".join(f"{i},100,50\n" for i in range(4)))
    outcome = check([*SIMULATE, "--trace", str(path), "--warmup", "4"])
    assert outcome.code == 2
    assert "--warmup 4" in outcome.err


def test_a_length_file_with_a_5000_digit_line_is_cut_short(tmp_path: Path) -> None:
    path = _trace(tmp_path, "lengths.txt", f"10\n{DIGITS}\n")
    with pytest.raises(DataFileError) as error:
        load_lengths(path)
    assert "lengths.txt:2: above the limit of 134,217,728" in str(error.value)
    assert "9" * 41 not in str(error.value)
