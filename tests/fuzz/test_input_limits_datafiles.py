"""TOML and JSON files holding a whole number of 5,000 digits: one line naming the file and line.

``tomllib`` and ``json`` build every integer they read with ``int()``, which refuses more than
4,300 digits with a ``ValueError`` that used to escape ``datafile.load_toml`` as a traceback (and
``load_json``'s message told users to call ``sys.set_int_max_str_digits()``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fuzzing import check
from lightspeed.datafile import load_json, load_toml
from lightspeed.errors import DataFileError

DIGITS = "9" * 5000


def _bounded_one_line(err: str, name: str, line: int) -> None:
    assert f"{name}:{line}: not valid" in err, err
    assert "5,000 digits, above the 4,300 that can be read" in err, err
    assert "set_int_max_str_digits" not in err, err
    assert "9" * 41 not in err, err


@pytest.mark.parametrize(
    "command",
    [
        ["cost", "cluster", "--prices", "{}"],
        ["validate", "{}"],
        ["--catalog", "{}", "hw", "list"],
        ["plan", "train", "--config", "{}", "--system", "dgx-h100", "--global-batch", "64"],
    ],
    ids=["prices", "validate", "catalog", "plan-file"],
)
def test_a_5000_digit_integer_in_toml_is_one_line(tmp_path: Path, command: list[str]) -> None:
    path = tmp_path / "big.toml"
    path.write_text(f"x = {DIGITS}\n", encoding="utf-8")
    outcome = check([part.replace("{}", str(path)) for part in command])
    assert outcome.code == 2
    _bounded_one_line(outcome.err, "big.toml", 1)


def test_the_line_named_is_the_number_not_a_string_or_a_comment(tmp_path: Path) -> None:
    path = tmp_path / "late.toml"
    path.write_text(f'a = "{DIGITS}"\n# {DIGITS}\nb = {DIGITS}.5\nc = [1,\n  -{DIGITS}]\n', encoding="utf-8")
    with pytest.raises(DataFileError) as error:
        load_toml(path)
    _bounded_one_line(str(error.value), "late.toml", 5)


def test_a_5000_digit_integer_in_json_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    path.write_text(f'{{"a": "{DIGITS}",\n "b": {DIGITS}}}\n', encoding="utf-8")
    with pytest.raises(DataFileError) as error:
        load_json(path)
    _bounded_one_line(str(error.value), "big.json", 2)


def test_numbers_python_reads_still_load(tmp_path: Path) -> None:
    path = tmp_path / "fine.toml"
    path.write_text(f"a = {'9' * 4000}\nb = 0x{'f' * 5000}\nc = 1_000\n", encoding="utf-8")
    data = load_toml(path)
    assert data["c"] == 1000
    assert data["a"] == int("9" * 4000)
