"""Round 14 fix S2: reading traces and length files.

Defect 6: a column a length file (or trace) lacks is named at the header, line 1, with the columns
the file does have, and the fix names one of them (it said line 2 and "name the column one of zz").
Defect 7: a trace whose rows are out of arrival order is sorted, and the run's assumptions say how
many rows were out of order (--requests N then replays the first N to arrive, not the first N rows).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lightspeed.errors import DataFileError
from lightspeed.sol.serve import load_lengths, load_request_trace

# --- defect 6 ----------------------------------------------------------------------------------


def test_a_length_column_the_csv_lacks_is_named_at_its_header(tmp_path: Path) -> None:
    path = tmp_path / "lens.csv"
    path.write_text("a,b\n650,66\n2431,244\n")
    with pytest.raises(DataFileError) as caught:
        load_lengths(path, "zz")
    message = str(caught.value)
    assert message.startswith(f"{path}:1: no zz column (the header names a, b)"), message
    assert f"fix: pick a column it has, e.g. file:{path}:a" in message
    assert "one of zz" not in message  # the old fix named only the missing column


def test_a_length_key_a_jsonl_object_lacks_is_named_on_its_line(tmp_path: Path) -> None:
    path = tmp_path / "lens.jsonl"
    path.write_text('{"isl": 5}\n{"osl": 7}\n')
    with pytest.raises(DataFileError) as caught:
        load_lengths(path, "isl")
    message = str(caught.value)
    # the first object has the key; the second (line 2) does not, and lists its own keys
    assert message.startswith(f"{path}:2: no isl key (the object holds the keys osl)"), message


def test_a_trace_without_an_arrival_column_lists_its_header(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("a,b\n1,2\n")
    with pytest.raises(DataFileError) as caught:
        load_request_trace(path)
    message = str(caught.value)
    assert message.startswith(f"{path}:1: no arrival_s column (the header names a, b)"), message
    assert "fix: name the column one of arrival_s, arrival_time, timestamp" in message


def test_a_wide_header_is_listed_in_part(tmp_path: Path) -> None:
    path = tmp_path / "wide.csv"
    names = [f"c{index}" for index in range(11)]
    path.write_text(",".join(names) + "\n" + ",".join("1" for _ in names) + "\n")
    with pytest.raises(DataFileError) as caught:
        load_lengths(path, "zz")
    # 8 columns listed, then 11 - 8 = 3 more
    assert "(the header names c0, c1, c2, c3, c4, c5, c6, c7 and 3 more)" in str(caught.value)


# --- defect 7 ----------------------------------------------------------------------------------


def test_an_out_of_order_trace_is_sorted_and_says_how_many_rows_were_out_of_order(tmp_path: Path) -> None:
    path = tmp_path / "unsorted.csv"
    path.write_text("arrival_s,input_tokens,output_tokens\n10,1000,10\n0,2000,20\n5,500,5\n")
    trace = load_request_trace(path)
    # sorted: 0 s (row 2), 5 s (row 3), 10 s (row 1); rows 2 and 3 arrive before row 1's 10 s
    assert trace.arrival_s == (0.0, 5.0, 10.0)
    assert trace.input_tokens == (2000, 500, 1000)
    assert trace.num_out_of_order == 2
    note = trace.describe_arrivals()
    assert note.startswith(f"trace {path}: rows sorted by arrival time: 2 of 3 were out of order"), note
    assert "--requests N replays the first N to arrive" in note


def test_an_ordered_trace_with_ties_has_no_note(tmp_path: Path) -> None:
    path = tmp_path / "sorted.csv"
    path.write_text("arrival_s,input_tokens,output_tokens\n0,5,5\n0,6,6\n1,7,7\n")
    trace = load_request_trace(path)
    assert trace.num_out_of_order == 0
    assert trace.describe_arrivals() == ""
