"""Validation tables (``lightspeed validate FILE.tsv``) that are corrupt or cut short: one line.

Before: a NUL byte in a cell was read on (``137 (44%)`` with a NUL after ``13`` was measured as
13), and a row with fewer cells than the header (a file cut in its ``measured`` cell) or more was
padded or cut silently, giving a wrong measured value. Every table the repository ships still
reads row for row as before (each row has one cell per header column).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fuzzing import check
from lightspeed.errors import DataFileError
from lightspeed.sol.validation.published import read_table

REPO = Path(__file__).resolve().parents[2]
PUBLISHED = REPO / "tests" / "data" / "shared" / "validation" / "published-dev.tsv"
# every published-results table in the repository (others under benchmarks/data are kernel tables)
SHIPPED = sorted(
    path
    for folder in ("benchmarks/data", "tests/data/validation", "tests/data/shared/validation")
    for path in (REPO / folder).glob("*.tsv")
    if path.read_text(encoding="utf-8").startswith("id\t")
)


def _first_row() -> tuple[str, list[str], int]:
    header, row = PUBLISHED.read_text(encoding="utf-8").split("\n")[:2]
    return header, row.split("\t"), header.split("\t").index("measured")


def _table(folder: Path, text: str) -> Path:
    path = folder / "table.tsv"
    path.write_text(text, encoding="utf-8")
    return path


def _refused(path: Path, message: str) -> None:
    outcome = check(["validate", str(path)])
    assert outcome.code == 2
    assert f"table.tsv:{message}" in outcome.err, outcome.err


def test_a_nul_byte_in_a_cell_is_refused_naming_the_line_and_column(tmp_path: Path) -> None:
    header, cells, measured = _first_row()
    assert cells[measured].startswith("137")
    cells[measured] = cells[measured][:2] + "\x00" + cells[measured][2:]
    _refused(_table(tmp_path, f"{header}\n" + "\t".join(cells) + "\n"), "2: NUL byte in column 'measured'")


def test_a_nul_byte_in_the_header_is_refused(tmp_path: Path) -> None:
    header, cells, _ = _first_row()
    _refused(_table(tmp_path, f"{header}\x00\n" + "\t".join(cells) + "\n"), "1: NUL byte in the header")


def test_a_table_cut_in_its_measured_cell_is_refused(tmp_path: Path) -> None:
    header, cells, measured = _first_row()
    cut = "\t".join([*cells[:measured], cells[measured][:2]])
    _refused(
        _table(tmp_path, f"{header}\n{cut}"), "2: the last row has 26 cells, the header 28, and no line end"
    )
    _refused(_table(tmp_path, f"{header}\n{cut}\n"), "2: row has 26 cells, the header 28")


def test_a_row_with_more_cells_than_the_header_is_refused(tmp_path: Path) -> None:
    header, cells, _ = _first_row()
    _refused(_table(tmp_path, f"{header}\n" + "\t".join([*cells, "extra"]) + "\n"), "2: row has 29 cells")


def test_blank_lines_are_skipped_and_lines_are_the_files(tmp_path: Path) -> None:
    header, cells, _ = _first_row()
    row = "\t".join(cells)
    other = "\t".join(["other", *cells[1:]])  # its own id: an id two rows share refuses the table
    rows = read_table(_table(tmp_path, f"{header}\n\n{row}\n\t\t\n{other}"))  # the last line whole
    assert [row.line for row in rows] == [3, 5]
    with pytest.raises(DataFileError, match=r"table.tsv:4: row has 1 cell, the header 28"):
        read_table(_table(tmp_path, f"{header}\n\n{row}\nstray words\n"))


@pytest.mark.parametrize("path", SHIPPED, ids=lambda path: path.name)
def test_every_shipped_table_has_one_cell_per_column(path: Path) -> None:
    rows = read_table(path)
    assert rows
    assert all(len(row.cells) == len(rows[0].cells) for row in rows)


def test_a_5000_digit_labelled_degree_is_a_row_error_not_a_traceback(tmp_path: Path) -> None:
    header, cells, _ = _first_row()
    cells[header.split("\t").index("TP")] = "TP=" + "9" * 5000  # int() refused it with a traceback
    outcome = check(["validate", str(_table(tmp_path, f"{header}\n" + "\t".join(cells) + "\n"))])
    (row,) = json.loads(outcome.out)["rows"]
    assert row["status"] == "error"
    assert "too large to be a parallel degree" in row["reason"]
    assert "9" * 41 not in row["reason"]
