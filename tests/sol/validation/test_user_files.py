"""``lightspeed validate FILE.tsv`` on a user's own table: what refuses the file (one line, exit 2)
and what is one row's error (the other rows still predicted).

The rule (docs/limits.md, docs/sol.md): only a file that is not a table of rows is refused: not
UTF-8, no row under the header, an id two rows share. A bad value in a row (a measured ``nan``,
``-1``, ``1e400``) is that row's error, as a measured 0 or n/r already was.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from expect import one_line_error

HEADER = "id\tkind\tsource\tmodel\tGPUs\thardware\tmetric\tmeasured\tseq\tglobal_batch\tTP\tDP"
ROW = "{id}\ttrain\tnone\tllama-3-8b\t8\tH100\titeration time (s)\t{measured}\t4096\t64\t1\t8"


def _table(folder: Path, *rows: str) -> Path:
    path = folder / "rows.tsv"
    path.write_text("\n".join([HEADER, *rows]) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("as_json", [False, True])
def test_a_header_without_rows_is_one_line(tmp_path: Path, run_cli, as_json: bool) -> None:  # type: ignore[no-untyped-def]
    # it printed empty tables (or {"rows": []}) and exited 0
    args = ["validate", str(_table(tmp_path)), *(["--json"] if as_json else [])]
    one_line_error(run_cli(*args), "rows.tsv:1: no rows under the header", "fix:")


def test_blank_lines_under_the_header_are_no_rows(tmp_path: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    one_line_error(run_cli("validate", str(_table(tmp_path, "", "\t\t"))), "no rows under the header")


def test_an_id_two_rows_share_is_refused_naming_both_lines(tmp_path: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    # both rows were reported under one id and counted twice in the summary
    table = _table(tmp_path, ROW.format(id="U1", measured="1.0"), "", ROW.format(id="U1", measured="2.0"))
    one_line_error(run_cli("validate", str(table), "--json"), "rows.tsv:4: id U1 repeats line 2", "fix:")


@pytest.mark.parametrize(
    ("measured", "problem"),
    [
        ("nan", "not a finite number"),
        ("NaN%", "not a finite number"),
        ("inf (44%)", "not a finite number"),
        ("Infinity", "not a finite number"),
        ("1e400", "not a finite number"),
        ("-1", "a negative number"),
        ("\u22125", "a negative number"),
    ],
)
def test_an_impossible_measured_value_is_that_rows_error(
    tmp_path: Path,
    run_cli,  # type: ignore[no-untyped-def]
    measured: str,
    problem: str,
) -> None:
    # one such row refused the whole file, while a measured 0 or n/r was a row error
    table = _table(
        tmp_path,
        ROW.format(id="A", measured="1.0"),
        ROW.format(id="B", measured=measured),
        ROW.format(id="C", measured="0"),
    )
    result = run_cli("validate", str(table), "--json")
    assert result.code == 0, result.err
    rows = {row["id"]: row for row in json.loads(result.out)["rows"]}
    assert rows["A"]["status"] == "ok"
    assert rows["A"]["predicted"] > 0
    assert rows["B"]["status"] == rows["C"]["status"] == "error"
    assert rows["B"]["predicted"] is None
    assert f"measured value '{measured}' is {problem}" in rows["B"]["reason"]
    assert "measured value 0 is not a number above 0" in rows["C"]["reason"]


def test_a_table_whose_every_row_is_refused_still_reports_every_reason(tmp_path: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    # as a table of rows measured 0 always did: exit 0, each row with its reason
    table = _table(tmp_path, ROW.format(id="A", measured="nan"), ROW.format(id="B", measured="0"))
    result = run_cli("validate", str(table), "--json")
    assert result.code == 0, result.err
    reasons = {row["id"]: row["reason"] for row in json.loads(result.out)["rows"]}
    assert "'nan' is not a finite number" in reasons["A"]
    assert "not a number above 0" in reasons["B"]
    assert json.loads(result.out)["summary"]["train"]["num_not_predicted"] == 2


def test_text_not_utf8_is_named_by_line_and_column(tmp_path: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    # it said 'rows.tsv:2: not UTF-8 text (byte 227)', 227 counted from the start of the file
    table = tmp_path / "rows.tsv"
    row = ROW.format(id="A", measured="1.0").replace("none", "Herd of Mod\xe9ls")
    table.write_bytes(f"{HEADER}\n{row}\n".encode("latin-1"))
    column = row.index("\xe9") + 1
    one_line_error(
        run_cli("validate", str(table)), f"rows.tsv:2: not UTF-8 text at column {column} (byte 0xe9)"
    )


def test_the_column_counts_characters_not_bytes(tmp_path: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    # 'µ' is two bytes of UTF-8 but one column; a BOM is not a column
    table = tmp_path / "rows.tsv"
    table.write_bytes(b"\xef\xbb\xbf" + HEADER.encode() + b"\nA\xc2\xb5\xff\n")
    one_line_error(run_cli("validate", str(table)), "rows.tsv:2: not UTF-8 text at column 3 (byte 0xff)")
